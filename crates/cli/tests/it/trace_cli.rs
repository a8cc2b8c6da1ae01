//! The trace commands through the real `mmulab` binary: `trace-info`, `convert` and
//! `record`, and `sim` giving identical statistics on a trace read directly and after
//! conversion to `.mlt` (on the shared drmemtrace samples, which must be present).

use crate::common;

use common::shared_drmemtrace;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn mmulab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mmulab"))
        .args(args)
        .output()
        .expect("run mmulab")
}

/// stdout must be exactly one JSON object.
fn json_of(o: &Output) -> Value {
    let s = String::from_utf8(o.stdout.clone()).unwrap();
    let mut it = serde_json::Deserializer::from_str(&s).into_iter::<Value>();
    let v = it
        .next()
        .unwrap_or_else(|| panic!("no JSON on stdout; stderr: {}", String::from_utf8_lossy(&o.stderr)))
        .unwrap();
    assert!(it.next().is_none(), "more than one JSON value on stdout");
    assert!(v.is_object());
    v
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mmulab-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The machine config of issue 2, verbatim (the committed copy the sim tests use too).
fn issue2_config() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/issue2-example.toml")
}

fn info(path: &Path) -> Value {
    let o = mmulab(&["trace-info", "--json", path.to_str().unwrap()]);
    assert!(
        o.status.success(),
        "trace-info {}: {}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    json_of(&o)
}

fn sim(cfg: &Path, trace: &Path) -> Value {
    let o = mmulab(&[
        "sim",
        "--config",
        cfg.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        "--json",
    ]);
    assert!(
        o.status.success(),
        "sim {}: {}",
        trace.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let mut v = json_of(&o);
    v.as_object_mut().unwrap().remove("source");
    v
}

#[test]
fn sim_statistics_are_identical_directly_and_through_mlt() {
    let d = tempdir("equiv");
    let cfg = issue2_config();
    let dr = shared_drmemtrace();
    let single = std::fs::read_dir(dr.join("x86_64-threadsig"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".trace.zip"))
        .unwrap();
    for (i, input) in [dr.join("x86_64-threadsig"), dr.join("aarch64-threadsig"), single]
        .iter()
        .enumerate()
    {
        let mlt = d.join(format!("t{i}.mlt"));
        let o = mmulab(&["convert", input.to_str().unwrap(), mlt.to_str().unwrap()]);
        assert!(o.status.success(), "convert: {}", String::from_utf8_lossy(&o.stderr));
        let (a, b) = (info(input), info(&mlt));
        for k in [
            "references",
            "loads",
            "stores",
            "ifetches",
            "threads",
            "cores",
            "address_spaces",
            "address_range",
            "footprint",
            "sizes",
        ] {
            assert_eq!(a[k], b[k], "{k} differs for {}", input.display());
        }
        assert_eq!(b["markers"]["page_size"], 4096);
        assert_eq!(
            a["references"],
            a["loads"].as_u64().unwrap() + a["stores"].as_u64().unwrap() + a["ifetches"].as_u64().unwrap()
        );
        let (direct, via) = (sim(&cfg, input), sim(&cfg, &mlt));
        assert!(direct["references"].as_u64().unwrap() > 1000);
        assert_eq!(direct["references"], a["references"]);
        assert_eq!(direct, via, "sim statistics differ for {}", input.display());
    }
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn damaged_trace_reports_the_references_before_the_damage() {
    let d = tempdir("damaged");
    // Pseudo-random addresses, so that every block takes a similar share of the file.
    let din: String = (0..200_000u64)
        .map(|i| format!("{} {:x}\n", i % 3, (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20) & !7))
        .collect();
    let src = d.join("a.din");
    std::fs::write(&src, &din).unwrap();
    let mlt = d.join("a.mlt");
    assert!(mmulab(&["convert", src.to_str().unwrap(), mlt.to_str().unwrap()])
        .status
        .success());
    let bytes = std::fs::read(&mlt).unwrap();
    let cut = d.join("cut.mlt");
    std::fs::write(&cut, &bytes[..bytes.len() * 3 / 4]).unwrap();
    let o = mmulab(&["trace-info", "--json", cut.to_str().unwrap()]);
    assert!(!o.status.success());
    let v = json_of(&o);
    assert_eq!(v["complete"], false);
    let before = v["error"]["refs_before"].as_u64().unwrap();
    assert!((65536..200_000).contains(&before), "{before}");
    assert_eq!(v["references"].as_u64().unwrap(), before);
    assert!(v["error"]["message"].as_str().unwrap().contains("cut.mlt"));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cut.mlt"));
    // convert refuses a damaged input (and leaves no output) unless asked to salvage.
    let out = d.join("out.mlt");
    assert!(!mmulab(&["convert", cut.to_str().unwrap(), out.to_str().unwrap()])
        .status
        .success());
    assert!(!out.exists());
    assert!(
        mmulab(&["convert", "--salvage", cut.to_str().unwrap(), out.to_str().unwrap()])
            .status
            .success()
    );
    assert_eq!(info(&out)["references"].as_u64().unwrap(), before);
    // Lossless round trip back to din text.
    let back = d.join("back.din");
    assert!(mmulab(&["convert", mlt.to_str().unwrap(), back.to_str().unwrap()])
        .status
        .success());
    assert_eq!(std::fs::read_to_string(&back).unwrap(), din);
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn garbage_input_is_a_clear_error() {
    let d = tempdir("garbage");
    let p = d.join("junk.bin");
    std::fs::write(&p, [0u8, 0xff, 0x13, 0x37].repeat(100)).unwrap();
    let o = mmulab(&["trace-info", "--json", p.to_str().unwrap()]);
    assert!(!o.status.success());
    assert_eq!(json_of(&o)["complete"], false);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("junk.bin") && e.contains("--format"), "{e}");
    let o = mmulab(&["trace-info", "--format", "drmemtrace", p.to_str().unwrap()]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("junk.bin") && e.contains("offset"),
        "{e}"
    );
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn record_traces_a_program_with_its_vmas() {
    if Command::new("valgrind")
        .arg("--version")
        .output()
        .map(|o| !o.status.success())
        .unwrap_or(true)
    {
        // Not a silent pass: say loudly why nothing was checked.
        eprintln!(
            "SKIPPED: valgrind is not installed (apt-get install valgrind); `mmulab record` cannot be tested here"
        );
        return;
    }
    let d = tempdir("record");
    let out = d.join("echo.mlt");
    let o = mmulab(&[
        "record",
        "--json",
        "-o",
        out.to_str().unwrap(),
        "--",
        "/bin/echo",
        "hello",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = json_of(&o);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("hello"),
        "the program's stdout goes to stderr with --json"
    );
    let refs = s["references"].as_u64().unwrap();
    assert!(refs > 10_000, "{refs}");
    let v = info(&out);
    assert_eq!(v["references"].as_u64().unwrap(), refs);
    assert_eq!(v["loads"], s["loads"]);
    assert!(v["ifetches"].as_u64().unwrap() > 0 && v["stores"].as_u64().unwrap() > 0);
    assert!(v["vmas"].as_u64().unwrap() > 5, "VMAs captured: {}", v["vmas"]);
    assert_eq!(v["markers"]["page_size"], 4096);
    // A program that cannot be started is an error that shows Valgrind's message.
    let bad = d.join("bad.mlt");
    let o = mmulab(&["record", "-o", bad.to_str().unwrap(), "--", "/nonexistent/program"]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("/nonexistent/program") && e.contains("could not run"), "{e}");
    assert!(!bad.exists());
    std::fs::remove_dir_all(&d).ok();
}
