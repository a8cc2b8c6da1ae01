//! The files of a sweep run to files, written from its journal in point order
//! ([`Sweep::each`]): the results table (Parquet or CSV) and the manifest. The table
//! is written in two passes over the rows: the first finds the columns and their types
//! ([`Schema`]), the second writes the rows, a row group of [`ROWS_PER_GROUP`] at a
//! time; so the file is the one a table built whole would give, and memory holds one row
//! group, not the results.

use crate::run::Sweep;
use crate::table::{write_csv_row, Schema};
use crate::SweepError;
use serde_json::Value;
use std::io::Write;

/// Rows per Parquet row group (assumed: about 35 MiB of cells at 35 KiB a row).
pub const ROWS_PER_GROUP: usize = 1024;

/// The columns of the sweep's rows (the first pass).
pub fn schema(sweep: &Sweep) -> Result<Schema, SweepError> {
    let mut schema = Schema::new();
    sweep.each_row(|r| {
        schema.add(r);
        Ok(())
    })?;
    Ok(schema)
}

fn io(what: &str, e: impl std::fmt::Display) -> SweepError {
    SweepError::Io(format!("writing {what}: {e}"))
}

/// Writes the rows as CSV to `w` (`what` names it in errors).
pub fn write_csv(sweep: &Sweep, w: &mut dyn Write, what: &str) -> Result<(), SweepError> {
    let schema = schema(sweep)?;
    schema.table().write_csv_header(w).map_err(|e| io(what, e))?;
    sweep.each_row(|r| write_csv_row(w, &schema.cells(r)).map_err(|e| io(what, e)))
}

/// Writes the rows as one Parquet file to `w` (`what` names it in errors).
pub fn write_parquet<W: Write + Send>(sweep: &Sweep, w: W, what: &str) -> Result<(), SweepError> {
    let schema = schema(sweep)?;
    let table = schema.table();
    let mut writer = table.parquet_writer(w).map_err(|e| io(what, e))?;
    let mut cells = Vec::with_capacity(ROWS_PER_GROUP);
    let mut groups = 0;
    sweep.each_row(|r| {
        cells.push(schema.cells(r));
        if cells.len() == ROWS_PER_GROUP {
            table.write_row_group(&mut writer, &cells).map_err(|e| io(what, e))?;
            cells.clear();
            groups += 1;
        }
        Ok(())
    })?;
    // A file without rows still has its (empty) row group, as a table written whole.
    if !cells.is_empty() || groups == 0 {
        table.write_row_group(&mut writer, &cells).map_err(|e| io(what, e))?;
    }
    writer.close().map_err(|e| io(what, e))?;
    Ok(())
}

/// Writes the manifest (docs/sweep.md): `mmulab` (provenance), `configs` (the side
/// file's name) and `points`: every point of the spec, one a line, with its id,
/// configuration hash, index, parameters and status (`ok`, `error`, `pending`). A point
/// not planned yet (a stopped sweep plans lazily) has a null id and hash.
pub fn write_manifest(
    sweep: &Sweep,
    w: &mut dyn Write,
    mmulab: &Value,
    configs: Option<&str>,
    what: &str,
) -> Result<(), SweepError> {
    let e = |x: std::io::Error| io(what, x);
    let json = |v: &Value| serde_json::to_string(v).map_err(|x| io(what, x));
    write!(
        w,
        "{{\n  \"mmulab\": {},\n  \"configs\": {},\n  \"points\": [",
        json(mmulab)?,
        json(&configs.map_or(Value::Null, Value::from))?
    )
    .map_err(e)?;
    let mut first = true;
    let mut line = |v: Value| -> Result<(), SweepError> {
        write!(w, "{}\n    {}", if first { "" } else { "," }, json(&v)?).map_err(e)?;
        first = false;
        Ok(())
    };
    let hash = |h: &str| if h.is_empty() { Value::Null } else { Value::from(h) };
    sweep.each_status(|p, failed| {
        let status = match failed {
            Some(true) => "error",
            Some(false) => "ok",
            None => "pending",
        };
        line(serde_json::json!({
            "id": p.id,
            "config_hash": hash(&p.config_hash),
            "index": p.index,
            "params": p.params.iter().cloned().collect::<serde_json::Map<_, _>>(),
            "status": status,
        }))
    })?;
    sweep.each_unplanned(|p| {
        line(serde_json::json!({
            "id": Value::Null,
            "config_hash": Value::Null,
            "index": p.index,
            "params": p.params.iter().cloned().collect::<serde_json::Map<_, _>>(),
            "status": "pending",
        }))
    })?;
    write!(w, "\n  ]\n}}\n").map_err(e)
}
