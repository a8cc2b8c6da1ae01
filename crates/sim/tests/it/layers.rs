//! The folders of `crates/sim/src` are its layers (#46 item 1): each file uses (`crate::X`
//! in code, not in comments) only its own folder and the folders before it in `ORDER`,
//! so the dependencies inside the crate point one way. The test prints the drawing it
//! checked (`cargo test --release -p mmulab-sim --test it layers:: -- --nocapture`) and
//! fails naming the file and line of a use that points the other way; it also fails on a
//! `#[path]` attribute or a file name with a layer suffix (`config_os.rs`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Bottom to top. `error`, `stop` and `pool` are leaves every layer may use; the crate root
/// (`lib.rs`) only declares and re-exports.
const ORDER: &[&str] = &[
    "error",
    "stop",
    "pool",
    "config",
    "stats",
    "system",
    "translator",
    "machine",
    "run",
    "session",
];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The layer of a file: its top folder under src/, or its stem for a top-level file.
fn layer(src: &Path, f: &Path) -> String {
    let rel = f.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy()
        .to_string();
    first.trim_end_matches(".rs").to_string()
}

#[test]
fn folders_use_only_the_folders_below_them() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let rank = |l: &str| ORDER.iter().position(|x| *x == l);
    let mut edges = BTreeSet::new();
    let mut wrong = Vec::new();
    for f in &all {
        let from = layer(&src, f);
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        for suffix in ["config_", "machine_", "stats_"] {
            if name.starts_with(suffix) {
                wrong.push(format!("{}: a layer suffix in a file name", f.display()));
            }
        }
        let Some(r_from) = rank(&from) else { continue };
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap();
            if code.trim_start().starts_with("#[path") {
                wrong.push(format!("{}:{}: #[path]", f.display(), i + 1));
            }
            let mut rest = code;
            while let Some(at) = rest.find("crate::") {
                rest = &rest[at + 7..];
                let to: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                let Some(r_to) = rank(&to) else { continue };
                if to != from {
                    edges.insert((from.clone(), to.clone()));
                }
                if r_to > r_from {
                    wrong.push(format!("{}:{}: {from} uses {to}, a layer above it", f.display(), i + 1));
                }
            }
        }
    }
    println!("mmulab-sim, who uses whom (top to bottom):");
    for l in ORDER.iter().rev() {
        let uses: Vec<&str> = edges.iter().filter(|(a, _)| a == l).map(|(_, b)| b.as_str()).collect();
        println!("  {l:<10} -> {}", uses.join(", "));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(edges.len() >= 10, "the scan found only {} edges", edges.len());
}
