//! Pipes, output files and interrupts (issue 18, items 1–3 and 8): every printing command
//! exits quietly when its reader is gone; no command removes a path it did not create
//! or leaves a truncated file under the name asked for; Ctrl-C and SIGTERM stop a
//! simulation with its partial statistics; progress reaches a stderr that is not a
//! terminal.

use serde_json::Value;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn mmulab() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mmulab"));
    c.current_dir(root());
    c
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mmulab-robust-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", p.display());
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// Runs mmulab with a stdout whose reader is already closed (every write fails with
/// EPIPE or raises SIGPIPE); returns the status and stderr.
fn with_closed_stdout(args: &[&str]) -> (ExitStatus, String) {
    let mut fds = [0i32; 2];
    // SAFETY: pipe(2) fills two descriptors that we then own.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors are open and owned by nobody else.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(r);
    let out = mmulab()
        .args(args)
        .stdout(Stdio::from(w))
        .stderr(Stdio::piped())
        .output()
        .expect("run mmulab");
    (out.status, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Exit 0, or killed by SIGPIPE (a shell's 141); never a panic.
fn assert_quiet(args: &[&str]) {
    let (status, err) = with_closed_stdout(args);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{args:?}: {err}"
    );
    assert!(
        status.success() || status.signal() == Some(libc::SIGPIPE),
        "{args:?}: {status:?}, stderr: {err}"
    );
}

#[test]
fn pipe_closed_machines_exits_quietly() {
    assert_quiet(&["machines"]);
    assert_quiet(&["machines", "--json"]);
}

#[test]
fn pipe_closed_sim_json_exits_quietly() {
    assert_quiet(&["sim", "--workload", "chase:pages=100,refs=1000", "--json"]);
    assert_quiet(&["sim", "--workload", "chase:pages=100,refs=1000"]);
}

#[test]
fn pipe_closed_every_printing_command_exits_quietly() {
    let dir = scratch("pipes");
    let trace = dir.join("t.din");
    std::fs::write(&trace, "0 1000\n1 2000\n0 3000\n").unwrap();
    let t = trace.to_str().unwrap();
    for args in [
        &["trace-info", t][..],
        &["trace-info", t, "--json"],
        &["probe", "--machine", "cortex-a9"],
        &["probe", "--machine", "cortex-a9", "--json"],
        &["demo", "-w", "chase:pages=100,refs=1000"],
        &["demo", "-w", "chase:pages=100,refs=1000", "--json"],
        &["reproduce", "experiments/cortex-a15-tlb-test.toml"],
        &["convert", t, "-", "--to", "din"],
        &["bench", "latency", "--size", "256K", "--loads", "10000"],
    ] {
        assert_quiet(args);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn convert_never_removes_a_fifo_it_writes_to() {
    // The /dev/stdout case of the issue with a FIFO: the reader goes away mid-output;
    // the FIFO (not a file mmulab made) must still be there afterwards.
    let dir = scratch("fifo");
    let out = dir.join("out.fifo");
    mkfifo(&out);
    let mut child = mmulab()
        .arg("convert")
        .arg(root().join("tests/data/drmemtrace/x86_64-threadsig"))
        .arg(&out)
        .args(["--to", "din"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = std::fs::File::open(&out).unwrap();
    let mut head = [0u8; 64];
    reader.read_exact(&mut head).unwrap();
    drop(reader);
    let status = child.wait().unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert!(!status.success(), "the conversion cannot have finished: {status:?}");
    let kind = std::fs::symlink_metadata(&out).map(|m| m.file_type());
    assert!(
        kind.as_ref().is_ok_and(std::os::unix::fs::FileTypeExt::is_fifo),
        "the FIFO was removed or replaced: {kind:?}; stderr: {err}"
    );
    // A damaged input (an error mmulab reports, not a SIGPIPE): the FIFO stays too.
    let bad = dir.join("bad.din");
    std::fs::write(&bad, "0 1000\n0 zz\n").unwrap();
    let child = mmulab()
        .arg("convert")
        .arg(&bad)
        .arg(&out)
        .args(["--to", "din"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut text = String::new();
    std::fs::File::open(&out).unwrap().read_to_string(&mut text).unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("incomplete"), "{err}");
    let kind = std::fs::symlink_metadata(&out).map(|m| m.file_type());
    assert!(
        kind.as_ref().is_ok_and(std::os::unix::fs::FileTypeExt::is_fifo),
        "the FIFO was removed after the input error: {kind:?}; stderr: {err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn convert_keeps_an_existing_file_when_the_input_is_damaged() {
    let dir = scratch("damaged");
    let bad = dir.join("bad.din");
    std::fs::write(&bad, "0 1000\n0 zz\n").unwrap();
    let out = dir.join("keep.din");
    std::fs::write(&out, "0 beef\n").unwrap();
    let o = mmulab().arg("convert").arg(&bad).arg(&out).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("was not written"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "0 beef\n",
        "the existing file was changed"
    );
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "a temporary file was left: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn convert_interrupted_leaves_no_output() {
    // The input is a FIFO this test feeds, so the conversion is surely running (blocked
    // on its input) when SIGINT arrives.
    let dir = scratch("convert-int");
    let input = dir.join("in.din");
    mkfifo(&input);
    let out = dir.join("out.mlt");
    let mut child = mmulab()
        .arg("convert")
        .arg(&input)
        .arg(&out)
        .args(["--from", "din"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut feed = std::fs::OpenOptions::new().write(true).open(&input).unwrap();
    let lines: String = (0..100_000u64).map(|i| format!("0 {:x}\n", 0x1000 + i * 64)).collect();
    feed.write_all(lines.as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(100));
    let _ = feed.write_all(lines.as_bytes());
    drop(feed);
    let status = child.wait().unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}: {err}");
    assert!(err.contains("interrupted"), "{err}");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        vec![std::ffi::OsString::from("in.din")],
        "output or temporary file left"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigint_during_trace_info_reports_what_was_read() {
    let dir = scratch("info-int");
    let input = dir.join("in.din");
    mkfifo(&input);
    let mut child = mmulab()
        .arg("trace-info")
        .arg(&input)
        .args(["--from", "din", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut feed = std::fs::OpenOptions::new().write(true).open(&input).unwrap();
    let lines: String = (0..100_000u64).map(|i| format!("0 {:x}\n", 0x1000 + i * 64)).collect();
    feed.write_all(lines.as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(100));
    let _ = feed.write_all(lines.as_bytes());
    drop(feed);
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not one JSON object ({e}): {out}"));
    assert_eq!(v["complete"], Value::Bool(false), "{out}");
    assert!(v["error"]["message"].as_str().unwrap().contains("SIGINT"), "{out}");
    assert!(v["references"].as_u64().unwrap() >= 65536, "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Spawns a long simulation, sends `sig` after `after`, and returns (status, stdout,
/// stderr).
fn interrupt(args: &[&str], after: Duration, sig: i32) -> (ExitStatus, String, String) {
    let child = mmulab()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    signal(&child, sig);
    let t0 = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(10), "slow to stop after the signal");
    (
        o.status,
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const LONG: &str = "gups:table=64MiB,refs=2000M";

#[test]
fn sigint_during_sim_prints_partial_json() {
    let (status, out, err) = interrupt(
        &["sim", "--workload", LONG, "--json"],
        Duration::from_millis(1200),
        libc::SIGINT,
    );
    assert_eq!(status.code(), Some(130), "{status:?}: {err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not one JSON object ({e}): {out}"));
    assert_eq!(v["complete"], Value::Bool(false), "{out}");
    let refs = v["references"].as_u64().unwrap();
    assert!(refs > 0 && refs < 2_000_000_000, "references {refs}");
    assert_eq!(v["loads"].as_u64().unwrap() + v["stores"].as_u64().unwrap(), refs);
    assert!(err.contains("interrupted by SIGINT"), "{err}");
}

#[test]
fn sigint_twice_at_once_still_prints_partial_json() {
    // `timeout` signals the command and then its process group: two signals at once are
    // one request, not "stop now".
    let child = mmulab()
        .args(["sim", "--workload", LONG, "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    signal(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(50));
    signal(&child, libc::SIGINT);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{:?}", o.status);
    let out = String::from_utf8_lossy(&o.stdout);
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not one JSON object ({e}): {out}"));
    assert_eq!(v["complete"], Value::Bool(false));
}

#[test]
fn sigterm_during_sim_table_says_incomplete() {
    let (status, out, err) = interrupt(&["sim", "--workload", LONG], Duration::from_millis(1200), libc::SIGTERM);
    assert_eq!(status.code(), Some(143), "{status:?}: {err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("incomplete: interrupted by SIGTERM after "));
    assert!(line.is_some(), "no incomplete line in: {out}");
    assert!(out.contains("translation cycles"), "no statistics: {out}");
}

#[test]
fn an_interrupted_reproduction_that_cannot_mark_its_rows_prints_none() {
    // numa-emu, nested and freebsd --sensitivity keep no per-row completeness: cut short,
    // they printed the runs never made as zeros (numa-emu's "4 GB board … 0.000 ms",
    // speed-ups of 148024x, NaN% in the sensitivity table) with exit 130. Now stdout is
    // empty and stderr says why.
    for (args, sig, code) in [
        (&["reproduce", "numa-emu"][..], libc::SIGINT, 130),
        (&["reproduce", "nested", "--json"][..], libc::SIGTERM, 143),
        (&["reproduce", "freebsd", "--sensitivity"][..], libc::SIGINT, 130),
    ] {
        let (status, out, err) = interrupt(args, Duration::from_millis(1500), sig);
        assert_eq!(status.code(), Some(code), "{args:?} {status:?}: {err}");
        assert_eq!(out, "", "{args:?}");
        assert!(
            err.contains("none is printed (run it again to the end)") && err.contains("incomplete: interrupted by SIG"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn sigint_during_demo_reports_the_runs_so_far() {
    let (status, out, err) = interrupt(
        &["demo", "-w", "chase:pages=100,refs=1000", "-w", LONG, "--json"],
        Duration::from_millis(1500),
        libc::SIGINT,
    );
    assert_eq!(status.code(), Some(130), "{status:?}: {err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not one JSON object ({e}): {out}"));
    assert_eq!(v["complete"], Value::Bool(false));
    let runs = v["runs"].as_array().unwrap();
    // Both pages of the short workload, then the interrupted long one.
    assert_eq!(runs.len(), 3, "{out}");
    assert_eq!(runs[0]["stats"]["references"], 1000);
    assert_eq!(runs[0]["stats"].get("complete"), None);
    assert_eq!(runs[2]["stats"]["complete"], Value::Bool(false));
}

#[test]
fn sim_json_error_prints_one_object() {
    // Simulated memory runs out part-way: partial statistics plus the error.
    let o = mmulab()
        .args([
            "sim",
            "--workload",
            "gups:table=64MiB,refs=1M",
            "--set",
            "memory.size=16MiB",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let out = String::from_utf8_lossy(&o.stdout);
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not one JSON object ({e}): {out}"));
    assert_eq!(v["complete"], Value::Bool(false));
    assert!(v["references"].as_u64().unwrap() > 0, "{out}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("physical memory"),
        "{out}"
    );
    // An error before the run (a bad workload): still one object, with the error.
    let o = mmulab()
        .args(["sim", "--workload", "nope:x=1", "--json"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not one JSON object ({e}): {out}"));
    assert_eq!(v["complete"], Value::Bool(false));
    assert!(v["error"]["message"].as_str().unwrap().contains("nope"), "{out}");
}

#[test]
fn progress_lines_when_stderr_not_a_tty() {
    let (_, _, err) = interrupt(&["sim", "--workload", LONG], Duration::from_millis(3000), libc::SIGINT);
    assert!(
        !err.contains('\r') && !err.contains('\x1b'),
        "terminal codes on a pipe: {err:?}"
    );
    let line = err.lines().find(|l| l.starts_with("mmulab: gups:table=64MiB"));
    let line = line.unwrap_or_else(|| panic!("no progress line in: {err}"));
    assert!(
        line.contains(" refs, ") && line.contains(" refs/s") && line.contains('%') && line.contains(" left"),
        "{line}"
    );
    // Off on request.
    let child = mmulab()
        .args(["sim", "--workload", LONG])
        .env("MMULAB_PROGRESS", "off")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2600));
    signal(&child, libc::SIGINT);
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("refs/s"), "{err}");
}

#[test]
fn sim_timeseries_of_an_interrupted_run_is_kept_and_never_half_written() {
    let dir = scratch("series");
    let series = dir.join("series.jsonl");
    std::fs::write(&series, "old\n").unwrap();
    let s = series.to_str().unwrap();
    let (status, _, err) = interrupt(
        &["sim", "--workload", LONG, "--timeseries", s, "--interval", "10000000"],
        Duration::from_millis(1500),
        libc::SIGINT,
    );
    assert_eq!(status.code(), Some(130), "{err}");
    let text = std::fs::read_to_string(&series).unwrap();
    assert_ne!(text, "old\n");
    for l in text.lines() {
        serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("bad line ({e}): {l}"));
    }
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "temporary file left");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs mmulab with stdout (or stderr) on /dev/full: every write fails with ENOSPC, as
/// behind a redirect to a full disk.
fn with_full(args: &[&str], stream: &str) -> (Option<i32>, String) {
    let full = || Stdio::from(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap());
    let mut c = mmulab();
    c.args(args).env("MMULAB_PROGRESS", "off");
    let out = if stream == "stdout" {
        c.stdout(full()).stderr(Stdio::piped()).output().unwrap()
    } else {
        c.stdout(Stdio::null()).stderr(full()).output().unwrap()
    };
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_full_stdout_or_stderr_is_an_error_never_a_panic() {
    if !Path::new("/dev/full").exists() {
        eprintln!("skipping: no /dev/full");
        return;
    }
    // Before, each of these panicked ("failed printing to stdout", status 101).
    for args in [
        &["machines"][..],
        &["sim", "--workload", "gups:table=1MiB,refs=1000", "--json"],
        &["sim", "--workload", "gups:table=1MiB,refs=1000"],
        &["reproduce", "--list"],
        &["check-kernel", "--print-os"],
    ] {
        let (code, err) = with_full(args, "stdout");
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains("cannot write to stdout"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // stderr full: an error message that cannot be shown still ends with status 2.
    let (code, _) = with_full(&["sim", "--workload", "no-such-workload"], "stderr");
    assert_eq!(code, Some(2));
}

/// `mmulab dram` on an endless request stream (a pipe the test keeps writing to): SIGINT
/// ends the replay at its next check (every 65,536 requests) with the statistics of what
/// ran, marked incomplete, and exit status 130 (issue 51, item 4). Before, the signal
/// killed it with nothing printed.
#[test]
fn sigint_during_dram_reports_the_requests_so_far() {
    use std::io::Write;
    let mut child = mmulab()
        .args(["dram", "/dev/stdin", "--profile", "ddr4-3200", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let mut i = 0u64;
        loop {
            let mut chunk = String::new();
            for _ in 0..4096 {
                chunk.push_str(&format!("0x{:x} READ {i}\n", ((i * 0x9e37_79b9) % (1 << 30)) & !63));
                i += 1;
            }
            if stdin.write_all(chunk.as_bytes()).is_err() {
                return i;
            }
        }
    });
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, libc::SIGINT);
    let t0 = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(10), "slow to stop after the signal");
    let written = writer.join().unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(130), "{:?}: {err}", o.status);
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not one JSON object ({e}): {out}"));
    assert_eq!(v["complete"], Value::Bool(false), "{out}");
    let n = v["requests"].as_u64().unwrap();
    assert!(
        n > 0 && n % 65_536 == 0 && n <= written,
        "requests {n} of {written} written"
    );
    assert_eq!(v["reads"].as_u64().unwrap(), n);
    assert!(err.contains("interrupted by SIGINT"), "{err}");
}

/// `mmulab bench` measures natively and reports when its runs are done: SIGTERM ends it
/// at once with status 143, saying on stderr that nothing was measured to report (issue
/// 51, item 4; before, the signal ended it without a word).
#[test]
fn sigterm_during_bench_says_nothing_was_reported() {
    let (status, out, err) = interrupt(
        &[
            "bench",
            "gups",
            "--size",
            "64M",
            "--compare",
            "4k,thp",
            "--repeats",
            "50",
        ],
        Duration::from_millis(1000),
        libc::SIGTERM,
    );
    assert_eq!(status.code(), None, "{status:?}: {err}");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("interrupted by SIGTERM: a benchmark reports only when its runs are done"),
        "{err}"
    );
}

/// Output files that cannot be written (issue 51 item 9): a missing directory, a path
/// where a directory stands, a directory nobody may create files in (/proc, refused even
/// to root), and a full device (/dev/full, written in place as a special file). Every
/// command that writes a file refuses each with a message naming the path and status 2,
/// never a panic, and leaves nothing behind (no temporary file beside the name).
#[test]
fn output_paths_that_cannot_be_written_are_named_never_a_panic() {
    let dir = scratch("outputs");
    let spec = dir.join("spec.toml");
    std::fs::write(
        &spec,
        "[sweep]\nworkload = \"gups:table=1MiB,refs=1000\"\n[params]\n\"tlb.l1d.entries\" = [32, 64]\n",
    )
    .unwrap();
    let w = "gups:table=1MiB,refs=1000";
    let spec_s = spec.to_str().unwrap().to_string();
    // (command with OUT in place of the path, extension)
    let commands: [(&[&str], &str); 5] = [
        (&["convert", "--workload", w, "--to", "mlt", "OUT"], "mlt"),
        (&["sim", "--workload", w, "--timeseries", "OUT"], "jsonl"),
        (&["mrc", "--workload", w, "--csv", "OUT"], "csv"),
        (&["mrc", "--workload", w, "--plot", "OUT"], "svg"),
        (&["sweep", &spec_s, "--output", "OUT"], "parquet"),
    ];
    for (args, ext) in commands {
        std::fs::create_dir_all(dir.join(format!("taken.{ext}"))).unwrap();
        let mut paths = vec![
            format!("{}/missing/out.{ext}", dir.display()),
            format!("{}/taken.{ext}", dir.display()),
            format!("/proc/mmulab-robust-{}.{ext}", std::process::id()),
        ];
        // A special file is written in place: a full one fails at the first flush.
        if ext != "svg" && ext != "parquet" && Path::new("/dev/full").exists() {
            paths.push("/dev/full".into());
        }
        for p in paths {
            let argv: Vec<&str> = args.iter().map(|&a| if a == "OUT" { p.as_str() } else { a }).collect();
            let out = mmulab().args(&argv).env("MMULAB_PROGRESS", "off").output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{argv:?}: {err}");
            assert!(!err.contains("panicked"), "{argv:?}: {err}");
            assert!(err.contains(&p), "{argv:?}: the message does not name {p}: {err}");
        }
        assert!(!Path::new(&format!("/proc/mmulab-robust-{}.{ext}", std::process::id())).exists());
    }
    // Nothing left beside the names asked for: only the spec and the directories made here.
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "spec.toml",
            "taken.csv",
            "taken.jsonl",
            "taken.mlt",
            "taken.parquet",
            "taken.svg"
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
