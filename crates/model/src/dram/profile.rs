//! DRAM profiles: the built-in ones (`machines/dram/*.toml`, compiled in so that
//! `--profile ddr4-3200` works anywhere) and profile files.

use super::config::{DramConfig, DramSpec};
use crate::error::ModelError;
use std::path::Path;

/// Built-in profiles: (name, TOML text).
pub const BUILTIN: [(&str, &str); 4] = [
    (
        "lpddr4x-4267-pi5",
        include_str!("../../../../machines/dram/lpddr4x-4267-pi5.toml"),
    ),
    (
        "lpddr4x-4267-pi5-4gb",
        include_str!("../../../../machines/dram/lpddr4x-4267-pi5-4gb.toml"),
    ),
    ("ddr4-3200", include_str!("../../../../machines/dram/ddr4-3200.toml")),
    ("ddr5-4800", include_str!("../../../../machines/dram/ddr5-4800.toml")),
];

/// Parses a profile's TOML text; `origin` (a file name or `built-in NAME`) prefixes
/// every error.
pub fn parse(text: &str, origin: &str) -> Result<DramSpec, ModelError> {
    let cfg: DramConfig =
        toml::from_str(text).map_err(|e| ModelError::Config(format!("{origin}: {}", e.to_string().trim_end())))?;
    cfg.validate().map_err(|e| ModelError::Config(format!("{origin}: {e}")))
}

/// A built-in profile by name, or else a profile file by path.
pub fn load(name_or_path: &str) -> Result<DramSpec, ModelError> {
    if let Some((n, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
        return parse(text, &format!("built-in DRAM profile {n}"));
    }
    let p = Path::new(name_or_path);
    match std::fs::read_to_string(p) {
        Ok(text) => parse(&text, &p.display().to_string()),
        Err(e) => Err(ModelError::Config(format!(
            "DRAM profile {name_or_path}: not a built-in profile ({}) and not a readable file ({e})",
            BUILTIN.map(|b| b.0).join(", ")
        ))),
    }
}
