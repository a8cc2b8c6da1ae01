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

/// The columns of a results table, built row by row: the union of every row's keys in
/// order of first appearance, each typed from every value it has held (the narrowest
/// kind that holds them). The sweep's results writer adds every row (in point order)
/// before it writes the first, so a file written in parts has the columns of one written
/// whole.
#[derive(Default)]
pub struct Schema {
    names: Vec<String>,
    seen: std::collections::HashMap<String, usize>,
    kinds: Vec<Option<Kind>>,
}

impl Schema {
    /// No column yet but the first three (`point`, `index`, `config_hash`).
    pub fn new() -> Schema {
        let mut s = Schema::default();
        for n in ["point", "index", "config_hash"] {
            s.column(n);
        }
        s
    }

    /// The position of column `name`, added at the end if new.
    fn column(&mut self, name: &str) -> usize {
        if let Some(&c) = self.seen.get(name) {
            return c;
        }
        self.seen.insert(name.to_string(), self.names.len());
        self.names.push(name.to_string());
        self.kinds.push(None);
        self.names.len() - 1
    }

    /// Adds `row`'s keys and values.
    pub fn add(&mut self, row: &Row) {
        for (k, v) in record(row) {
            let c = self.column(&k);
            self.kinds[c] = merge(self.kinds[c], &v);
        }
    }

    /// `row` laid out as these columns (a key the schema lacks is dropped: add the row
    /// first).
    pub fn cells(&self, row: &Row) -> Vec<Value> {
        let mut cells = vec![Value::Null; self.names.len()];
        for (k, v) in record(row) {
            if let Some(&c) = self.seen.get(&k) {
                cells[c] = v;
            }
        }
        cells
    }

    /// An empty table with these columns (a column that held only nulls is text).
    pub fn table(&self) -> Table {
        Table {
            names: self.names.clone(),
            kinds: self.kinds.iter().map(|k| k.unwrap_or(Kind::Text)).collect(),
            cells: Vec::new(),
        }
    }
}

/// A row as (column, value) pairs: the point, its index and config hash, its parameters,
/// status, error and seconds, then its statistics.
fn record(r: &Row) -> Vec<(String, Value)> {
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
    rec
}

impl Table {
    /// Lays `rows` (in the order given) out as columns ([`Schema`]).
    pub fn of(rows: &[&Row]) -> Table {
        let mut schema = Schema::new();
        rows.iter().for_each(|r| schema.add(r));
        let mut t = schema.table();
        t.cells = rows.iter().map(|r| schema.cells(r)).collect();
        t
    }

    /// Writes CSV (RFC 4180 quoting; null is an empty field).
    pub fn write_csv(&self, w: &mut dyn Write) -> std::io::Result<()> {
        self.write_csv_header(w)?;
        self.cells.iter().try_for_each(|r| write_csv_row(w, r))
    }

    /// Writes the CSV header line (the column names).
    pub fn write_csv_header(&self, w: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            w,
            "{}",
            self.names.iter().map(|n| quote(n)).collect::<Vec<_>>().join(",")
        )
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

/// The narrowest kind holding what `k` held and `v` (a null changes nothing).
fn merge(k: Option<Kind>, v: &Value) -> Option<Kind> {
    let this = match v {
        Value::Null => return k,
        Value::Bool(_) => Kind::Bool,
        Value::Number(n) if n.as_i64().is_some() => Kind::Int,
        Value::Number(_) => Kind::Float,
        _ => Kind::Text,
    };
    Some(match (k, this) {
        (None, t) => t,
        (Some(a), b) if a == b => a,
        (Some(Kind::Int | Kind::Float), Kind::Int | Kind::Float) => Kind::Float,
        _ => Kind::Text,
    })
}

/// Writes one CSV line of cells (RFC 4180 quoting; null is an empty field).
pub fn write_csv_row(w: &mut dyn Write, cells: &[Value]) -> std::io::Result<()> {
    writeln!(
        w,
        "{}",
        cells.iter().map(|v| quote(&text(v))).collect::<Vec<_>>().join(",")
    )
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
