//! Traces from pipes and FIFOs (issue 51, item 1): a trace read from `/dev/stdin` or a
//! `mkfifo` node is opened once, its format detected from the bytes it delivers, and every
//! reference of it is simulated (before, the format sniff read the first 16 KiB and a second
//! open read on from there: 99,204 of 100,000 references; a FIFO then hung waiting for a
//! second writer). A drmemtrace from a pipe is refused up front with what to do.

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn mmulab() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mmulab"));
    c.current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."));
    c
}

/// `n` Dinero references (`0 ADDR` reads) to distinct 64-byte lines: n × 20 bytes, well
/// over the 16 KiB a format sniff reads.
fn din(n: u64) -> Vec<u8> {
    (0..n)
        .flat_map(|i| format!("0 {:x}\n", 0x7f00_0000_0000u64 + i * 64).into_bytes())
        .collect()
}

/// Runs mmulab with `input` written to its stdin by a second thread; stdout, stderr, status.
fn with_stdin(args: &[&str], input: Vec<u8>) -> (String, String, bool) {
    let mut child = mmulab()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

#[test]
fn sim_reads_every_reference_of_a_piped_trace() {
    let (out, err, ok) = with_stdin(&["sim", "--trace", "/dev/stdin", "--json"], din(100_000));
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["references"], 100_000, "{err}");
}

#[test]
fn trace_info_and_mrc_read_a_piped_trace_whole() {
    let (out, err, ok) = with_stdin(&["trace-info", "/dev/stdin", "--json"], din(50_000));
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["references"], 50_000, "{out}");
    let (out, err, ok) = with_stdin(&["mrc", "--trace", "/dev/stdin", "--json"], din(50_000));
    assert!(ok, "{err}");
    // 50,000 distinct lines in 782 distinct 4 KiB pages: the curve's references count
    // every one of them.
    assert!(out.contains("50000"), "{out}");
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", p.display());
}

#[test]
fn sim_reads_a_fifo_once_and_whole() {
    let dir = std::env::temp_dir().join(format!("mmulab-fifo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("refs.din");
    mkfifo(&fifo);
    let f2 = fifo.clone();
    // The writer opens the FIFO once, as a producer would; a reader that opened it a
    // second time would wait for a writer forever.
    let writer = std::thread::spawn(move || {
        let mut w = std::fs::OpenOptions::new().write(true).open(&f2).unwrap();
        let _ = w.write_all(&din(30_000));
    });
    let mut child = mmulab()
        .args(["sim", "--json", "--trace"])
        .arg(&fifo)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("sim on a FIFO did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["references"], 30_000, "{}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_drmemtrace_from_a_pipe_is_refused_with_what_to_do() {
    let (_, err, ok) = with_stdin(
        &["sim", "--trace", "/dev/stdin", "--format", "drmemtrace"],
        vec![0u8; 64],
    );
    assert!(!ok);
    assert!(
        err.contains("pipe or FIFO") && err.contains("write it to a file"),
        "{err}"
    );
}
