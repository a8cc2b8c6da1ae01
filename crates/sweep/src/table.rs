//! Result rows as a table: the columns (`point`, `index`, `config_hash`, one `param.KEY` per parameter,
//! `status`, `error`, `seconds`, then every statistic of `mmulab sim --json` flattened
//! with dots), each typed from its values, written as Parquet or CSV.

use crate::point::Row;
use parquet::basic::{ConvertedType, Repetition, Type as Physical};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use serde_json::Value;
use std::io::Write;
use std::sync::Arc;

/// A TOML value as JSON (dates become strings).
pub fn json_of(v: &toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => Value::from(*f),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.iter().map(json_of).collect()),
        toml::Value::Table(t) => Value::Object(t.iter().map(|(k, v)| (k.clone(), json_of(v))).collect()),
    }
}

/// Flattens a JSON object into (dotted key, scalar) pairs, in order; array elements are
/// keyed by index (`walks.pwc.hits_by_level.0`).
pub fn flatten(v: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    walk(v, String::new(), &mut out);
    out
}

fn walk(v: &Value, key: String, out: &mut Vec<(String, Value)>) {
    let join = |k: &str| {
        if key.is_empty() {
            k.to_string()
        } else {
            format!("{key}.{k}")
        }
    };
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| walk(x, join(k), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| walk(x, join(&i.to_string()), out)),
        x => out.push((key, x.clone())),
    }
}

/// A column's type, the narrowest that holds every value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Integers that fit i64.
    Int,
    /// Numbers.
    Float,
    /// true/false.
    Bool,
    /// Anything else, as text.
    Text,
}

/// The rows as named, typed columns (missing values are null).
pub struct Table {
    /// Column names, in order.
    pub names: Vec<String>,
    /// Column kinds.
    pub kinds: Vec<Kind>,
    /// Cells, row-major.
    pub cells: Vec<Vec<Value>>,
}

impl Table {
    /// Lays `rows` (in the order given) out as columns: the union of every row's keys in
    /// order of first appearance.
    pub fn of(rows: &[&Row]) -> Table {
        let mut names: Vec<String> = vec!["point".into(), "index".into(), "config_hash".into()];
        let mut seen: std::collections::HashMap<String, usize> =
            names.iter().enumerate().map(|(i, n)| (n.clone(), i)).collect();
        let mut records = Vec::new();
        for r in rows {
            let mut rec: Vec<(String, Value)> = vec![
                ("point".into(), Value::String(r.id.clone())),
                ("index".into(), Value::from(r.index)),
                (
                    "config_hash".into(),
                    match r.config_hash.as_str() {
                        "" => Value::Null,
                        h => Value::String(h.into()),
                    },
                ),
            ];
            rec.extend(r.params.iter().map(|(k, v)| (format!("param.{k}"), scalar(v))));
            rec.push((
                "status".into(),
                Value::String(if r.error.is_some() { "error" } else { "ok" }.into()),
            ));
            rec.push(("error".into(), r.error.clone().map_or(Value::Null, Value::String)));
            rec.push(("seconds".into(), Value::from(r.seconds)));
            rec.extend(r.stats.iter().cloned());
            for (k, _) in &rec {
                if !seen.contains_key(k) {
                    seen.insert(k.clone(), names.len());
                    names.push(k.clone());
                }
            }
            records.push(rec);
        }
        let cells: Vec<Vec<Value>> = records
            .into_iter()
            .map(|rec| {
                let mut row = vec![Value::Null; names.len()];
                for (k, v) in rec {
                    row[seen[&k]] = v;
                }
                row
            })
            .collect();
        let kinds = (0..names.len()).map(|c| kind(cells.iter().map(|r| &r[c]))).collect();
        Table { names, kinds, cells }
    }

    /// Writes CSV (RFC 4180 quoting; null is an empty field).
    pub fn write_csv(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let line = |w: &mut dyn Write, fields: Vec<String>| writeln!(w, "{}", fields.join(","));
        line(w, self.names.iter().map(|n| quote(n)).collect())?;
        for r in &self.cells {
            line(w, r.iter().map(|v| quote(&text(v))).collect())?;
        }
        Ok(())
    }

    /// Writes one Parquet file (one row group, uncompressed), each column OPTIONAL.
    pub fn write_parquet<W: Write + Send>(&self, w: W) -> parquet::errors::Result<()> {
        let mut writer = self.parquet_writer(w)?;
        self.write_row_group(&mut writer, &self.cells)?;
        writer.close()?;
        Ok(())
    }

    /// A Parquet writer over `w` with this table's columns as its schema (each OPTIONAL).
    pub fn parquet_writer<W: Write + Send>(&self, w: W) -> parquet::errors::Result<SerializedFileWriter<W>> {
        let fields =
            self.names
                .iter()
                .zip(&self.kinds)
                .map(|(n, k)| {
                    let b = match k {
                        Kind::Int => Type::primitive_type_builder(n, Physical::INT64),
                        Kind::Float => Type::primitive_type_builder(n, Physical::DOUBLE),
                        Kind::Bool => Type::primitive_type_builder(n, Physical::BOOLEAN),
                        Kind::Text => Type::primitive_type_builder(n, Physical::BYTE_ARRAY)
                            .with_converted_type(ConvertedType::UTF8),
                    };
                    b.with_repetition(Repetition::OPTIONAL).build().map(Arc::new)
                })
                .collect::<Result<Vec<_>, _>>()?;
        let schema = Arc::new(Type::group_type_builder("mmulab_sweep").with_fields(fields).build()?);
        let props = Arc::new(
            WriterProperties::builder()
                .set_created_by(format!("mmulab {}", env!("CARGO_PKG_VERSION")))
                .build(),
        );
        SerializedFileWriter::new(w, schema, props)
    }

    /// Writes `cells` (rows laid out as this table's columns) as one row group.
    pub fn write_row_group<W: Write + Send>(
        &self,
        writer: &mut SerializedFileWriter<W>,
        cells: &[Vec<Value>],
    ) -> parquet::errors::Result<()> {
        let mut rg = writer.next_row_group()?;
        let mut c = 0;
        while let Some(mut col) = rg.next_column()? {
            let values = cells.iter().map(|r| &r[c]);
            let defs: Vec<i16> = values.clone().map(|v| i16::from(!v.is_null())).collect();
            let present = values.filter(|v| !v.is_null());
            match self.kinds[c] {
                Kind::Int => {
                    let v: Vec<i64> = present.map(|v| v.as_i64().unwrap_or_default()).collect();
                    col.typed::<Int64Type>().write_batch(&v, Some(&defs), None)?;
                }
                Kind::Float => {
                    let v: Vec<f64> = present.map(|v| v.as_f64().unwrap_or_default()).collect();
                    col.typed::<DoubleType>().write_batch(&v, Some(&defs), None)?;
                }
                Kind::Bool => {
                    let v: Vec<bool> = present.map(|v| v.as_bool().unwrap_or_default()).collect();
                    col.typed::<BoolType>().write_batch(&v, Some(&defs), None)?;
                }
                Kind::Text => {
                    let v: Vec<ByteArray> = present.map(|v| ByteArray::from(text(v).as_str())).collect();
                    col.typed::<ByteArrayType>().write_batch(&v, Some(&defs), None)?;
                }
            }
            col.close()?;
            c += 1;
        }
        rg.close()?;
        Ok(())
    }
}

/// A parameter value as a cell: scalars as they are, lists and tables as TOML-like text.
fn scalar(v: &Value) -> Value {
    match v {
        Value::Array(_) | Value::Object(_) => Value::String(v.to_string()),
        x => x.clone(),
    }
}

/// The narrowest kind holding `values` (all null: text).
fn kind<'a>(values: impl Iterator<Item = &'a Value>) -> Kind {
    let mut k: Option<Kind> = None;
    for v in values {
        let this = match v {
            Value::Null => continue,
            Value::Bool(_) => Kind::Bool,
            Value::Number(n) if n.as_i64().is_some() => Kind::Int,
            Value::Number(_) => Kind::Float,
            _ => Kind::Text,
        };
        k = Some(match (k, this) {
            (None, t) => t,
            (Some(a), b) if a == b => a,
            (Some(Kind::Int | Kind::Float), Kind::Int | Kind::Float) => Kind::Float,
            _ => Kind::Text,
        });
    }
    k.unwrap_or(Kind::Text)
}

/// A cell as text (null: empty).
pub fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        x => x.to_string(),
    }
}

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
