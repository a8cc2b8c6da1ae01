//! `mmulab record -o FILE -- CMD ARGS…`: trace a real program with Valgrind Lackey
//! (`valgrind --tool=lackey --trace-mem=yes`) straight into an `.mlt` file.
//!
//! Streaming: Lackey writes its trace to a pipe (`--log-fd=N`, the write end of a pipe this
//! process creates), which is parsed line by line and encoded block by block; no temporary
//! file ever holds the text trace. The program's own stdout and stderr are untouched (with
//! `--json`, its stdout goes to stderr so that stdout holds only the summary object).
//!
//! VMAs: while the program runs, `/proc/PID/maps` of the traced process is sampled every
//! `--maps-interval-ms` (default 100 ms). Under Valgrind that process is Valgrind itself
//! (the tool replaces itself with the program in the same process), so each sample lists
//! the program's mappings (text, data, heap, stack, libraries, anonymous mmaps, at the
//! addresses the trace uses) *and* Valgrind's own (the tool binary, near 0x58000000 on
//! amd64, and its internal arenas). Samples identical to the previous one are not stored;
//! at most 256 are kept (the first 255 changes and always the latest). Limits: the final
//! state is the last sample taken before exit, so a mapping created and removed within one
//! interval may be missed; the samples are stored verbatim in the `vmas` metadata section,
//! each headed `# sample N t_ms=T pid=P` (format: docs/trace-format.md).

use crate::output::{Counted, OutputFile};
use crate::progress::ProgressLine;
use anyhow::{bail, Context, Result};
use mmulab_trace::format::lackey::parse_line;
use mmulab_trace::format::mlt::MltWriter;
use mmulab_trace::format::LineReader;
use mmulab_trace::AccessKind;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Record a program's memory references (through Valgrind Lackey) into an .mlt trace.
#[derive(clap::Args)]
pub struct Args {
    /// Output trace (.mlt); `-` writes it to stdout.
    #[arg(short, long)]
    pub output: PathBuf,
    /// zstd level of the output (1–22).
    #[arg(long, default_value_t = 3)]
    pub level: i32,
    /// How often to sample /proc/PID/maps while the program runs, in milliseconds.
    #[arg(long, default_value_t = 100)]
    pub maps_interval_ms: u64,
    /// Print the closing summary as one JSON object on stdout (the program's stdout then
    /// goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// The program and its arguments (after `--`).
    #[arg(required = true, last = true)]
    pub command: Vec<String>,
}

const MAX_SAMPLES: usize = 256;

/// A pipe whose write end the child inherits and whose read end it does not.
fn lackey_pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe(2) to fill.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot create a pipe for Valgrind's output");
    }
    // SAFETY: pipe(2) succeeded, so both descriptors are open and owned by nobody else.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: F_SETFD on a descriptor we own; only sets close-on-exec on the read end.
    if unsafe { libc::fcntl(r.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot set close-on-exec on the pipe");
    }
    Ok((r, w))
}

fn check_valgrind() -> Result<String> {
    match Command::new("valgrind").arg("--version").stdin(Stdio::null()).output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        _ => bail!(
            "valgrind is not installed or not on PATH; `mmulab record` traces programs with Valgrind's Lackey tool. \
             Install it (Debian/Ubuntu: `apt-get install valgrind`; Fedora: `dnf install valgrind`) and retry"
        ),
    }
}

/// Samples /proc/PID/maps until `stop`; returns the stored samples as section text.
/// Also passes a stop signal on to the child while `running` (see the loop).
fn sample_maps(
    pid: u32,
    every: Duration,
    stop: Arc<AtomicBool>,
    running: Arc<Mutex<bool>>,
    out: Arc<Mutex<Vec<(u64, String)>>>,
) {
    let t0 = Instant::now();
    let path = format!("/proc/{pid}/maps");
    let mut last = String::new();
    let mut forwarded = false;
    loop {
        // Ctrl-C reaches Valgrind with us; a SIGTERM sent to mmulab alone is passed on,
        // so that the program ends and the trace of what it did is closed.
        if let (Some(sig), false) = (crate::signals::interrupted(), forwarded) {
            let alive = running.lock().expect("child state lock");
            if *alive {
                // SAFETY: kill(2) on the pid of our child: `running` is true, so the main
                // thread has not reaped it (it clears the flag under this lock first).
                unsafe { libc::kill(pid as libc::pid_t, sig) };
            }
            forwarded = true;
        }
        let done = stop.load(Ordering::Relaxed);
        if let Ok(text) = std::fs::read_to_string(&path) {
            if !text.is_empty() && text != last {
                let mut v = out.lock().expect("maps samples lock");
                let t = t0.elapsed().as_millis() as u64;
                if v.len() >= MAX_SAMPLES {
                    v.pop();
                }
                v.push((t, text.clone()));
                last = text;
            }
        }
        if done {
            return;
        }
        std::thread::sleep(every);
    }
}

pub fn run(a: Args) -> Result<()> {
    if a.json && a.output.as_os_str() == "-" {
        bail!("-o - writes the trace to stdout, where --json would print its summary too: give a file or drop --json");
    }
    let version = check_valgrind()?;
    // Ctrl-C reaches Valgrind too (same process group) and ends the program; mmulab then
    // stays to close a valid trace of what was recorded, and exits with 130.
    crate::signals::stop_on_interrupt();
    if a.output.extension().and_then(|e| e.to_str()) != Some("mlt") && a.output.as_os_str() != "-" {
        eprintln!(
            "mmulab record: note: {} does not end in .mlt; writing mmulab's .mlt format anyway",
            a.output.display()
        );
    }
    // Written beside the output and renamed when complete (crate::output).
    let output = OutputFile::new(&a.output)?;
    let mut w = MltWriter::new(BufWriter::with_capacity(1 << 20, Counted::new(output.open()?)), a.level)?;
    let (rd, wr) = lackey_pipe()?;
    let mut cmd = Command::new("valgrind");
    cmd.arg("--tool=lackey")
        .arg("--trace-mem=yes")
        .arg(format!("--log-fd={}", wr.as_raw_fd()))
        .args(&a.command);
    if a.json {
        cmd.stdout(Stdio::from(std::io::stderr().as_fd().try_clone_to_owned()?));
    }
    let t0 = Instant::now();
    let mut child = cmd.spawn().context("cannot start valgrind")?;
    drop(wr); // Only the child writes now: the pipe reaches end-of-file when it exits.
    let pid = child.id();
    let stop = Arc::new(AtomicBool::new(false));
    let samples = Arc::new(Mutex::new(Vec::new()));
    let running = Arc::new(Mutex::new(true));
    let sampler = {
        let (stop, running, samples) = (stop.clone(), running.clone(), samples.clone());
        let every = Duration::from_millis(a.maps_interval_ms.max(1));
        std::thread::spawn(move || sample_maps(pid, every, stop, running, samples))
    };

    let pipe_name = Path::new("(valgrind lackey pipe)");
    let mut lines = LineReader::new(BufReader::with_capacity(1 << 20, File::from(rd)), pipe_name, None);
    let mut buf = Vec::with_capacity(1 << 16);
    let mut kinds = [0u64; 3];
    // Valgrind's own `==PID==` messages share the pipe; the last ones are shown if it fails.
    let mut messages: VecDeque<String> = VecDeque::new();
    let mut p = ProgressLine::new(&format!("record {}", a.command[0]));
    let read_err = loop {
        let line = match lines.next_line(w.refs() + buf.len() as u64) {
            Ok(Some(l)) => l,
            Ok(None) => break None,
            Err(e) => break Some(e),
        };
        match parse_line(line) {
            Ok(Some(r)) => {
                kinds[r.kind as usize] += 1;
                buf.push(r);
                if buf.len() == buf.capacity() {
                    w.push_all(&buf)?;
                    buf.clear();
                    p.update(w.refs(), None);
                }
            }
            Ok(None) => {
                if line.starts_with("==") {
                    if messages.len() == 40 {
                        messages.pop_front();
                    }
                    messages.push_back(line.to_string());
                }
            }
            Err(what) => break Some(lines.corrupt(what, w.refs() + buf.len() as u64)),
        }
    };
    w.push_all(&buf)?;
    p.finish();
    if read_err.is_some() {
        let _ = child.kill();
    }
    *running.lock().expect("child state lock") = false;
    let status = child.wait().context("waiting for valgrind")?;
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let elapsed = t0.elapsed().as_secs_f64();
    if let Some(e) = read_err {
        return Err(anyhow::Error::new(e).context("Lackey's output could not be parsed; recording abandoned"));
    }
    if w.refs() == 0 && !status.success() {
        for m in &messages {
            eprintln!("{m}");
        }
        bail!(
            "valgrind could not run `{}` ({status}); its messages are above",
            a.command.join(" ")
        );
    }

    let samples = std::mem::take(&mut *samples.lock().expect("maps samples lock"));
    let mut vmas = String::new();
    for (i, (t, text)) in samples.iter().enumerate() {
        vmas.push_str(&format!("# sample {i} t_ms={t} pid={pid}\n{text}"));
    }
    let vma_count = mmulab_trace::meta::parse_vma_samples(vmas.as_bytes())
        .pop()
        .map_or(0, |v| v.len());
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    w.section("markers", format!("page_size {page}\n").as_bytes())?;
    let source = format!(
        "mmulab record: valgrind --tool=lackey --trace-mem=yes {}\n{version}\nexit: {status}\n",
        a.command.join(" ")
    );
    w.section("source", source.as_bytes())?;
    if !vmas.is_empty() {
        w.section("vmas", vmas.as_bytes())?;
    }
    let refs = w.refs();
    let bytes = w.finish()?.get_ref().bytes();
    output.commit()?;
    let summary = serde_json::json!({
        "output": a.output.display().to_string(),
        "references": refs,
        "loads": kinds[AccessKind::Load as usize],
        "stores": kinds[AccessKind::Store as usize],
        "ifetches": kinds[AccessKind::IFetch as usize],
        "bytes": bytes,
        "bytes_per_reference": bytes as f64 / refs.max(1) as f64,
        "vma_samples": samples.len(),
        "vmas_last_sample": vma_count,
        "seconds": elapsed,
        "exit_status": status.code(),
    });
    if a.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        eprintln!(
            "mmulab record: {refs} references ({} loads, {} stores, {} ifetches) of `{}` in {elapsed:.1} s → {} ({bytes} bytes, {:.2} bytes/reference); {} VMA samples ({vma_count} VMAs in the last)",
            kinds[0], kinds[1], kinds[2], a.command.join(" "), a.output.display(), bytes as f64 / refs.max(1) as f64, samples.len()
        );
    }
    if !status.success() {
        eprintln!("mmulab record: warning: the program exited with {status}; the trace covers what it did until then");
    }
    Ok(())
}
