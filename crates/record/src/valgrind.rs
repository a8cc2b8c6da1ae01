//! Recording a real program's memory references with Valgrind Lackey
//! (`valgrind --tool=lackey --trace-mem=yes`) straight into an `.mlt` trace
//! ([`Recorder::record`]; `mmulab record` is this plus its arguments and messages).
//!
//! Streaming: Lackey writes its trace to a pipe (`--log-fd=N`, the write end of a pipe this
//! process creates), which is parsed line by line and encoded block by block; no temporary
//! file ever holds the text trace. The program's own stdout and stderr are untouched
//! (optionally its stdout goes to stderr, [`RecordOptions::stdout_to_stderr`]).
//!
//! VMAs: while the program runs, `/proc/PID/maps` of the traced process is sampled every
//! [`RecordOptions::maps_interval`]. Under Valgrind that process is Valgrind itself (the
//! tool replaces itself with the program in the same process), so each sample lists the
//! program's mappings (text, data, heap, stack, libraries, anonymous mmaps, at the
//! addresses the trace uses) *and* Valgrind's own (the tool binary, near 0x58000000 on
//! amd64, and its internal arenas). Samples identical to the previous one are not stored;
//! at most 256 are kept (the first 255 changes and always the latest). Limits: the final
//! state is the last sample taken before exit, so a mapping created and removed within one
//! interval may be missed; the samples are stored verbatim in the `vmas` metadata section,
//! each headed `# sample N t_ms=T pid=P` (format: docs/trace-format.md).
//!
//! Contract: nothing is printed and the process is never ended; errors are
//! [`RecordError`]s, progress goes to a callback.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mmulab_trace::format::lackey::parse_line;
use mmulab_trace::format::mlt::MltWriter;
use mmulab_trace::format::LineReader;
use mmulab_trace::{AccessKind, TraceError};

/// What can go wrong while recording.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// `valgrind --version` did not run.
    #[error(
        "valgrind is not installed or not on PATH; `mmulab record` traces programs with Valgrind's Lackey tool. \
         Install it (Debian/Ubuntu: `apt-get install valgrind`; Fedora: `dnf install valgrind`) and retry"
    )]
    NoValgrind,
    /// A system call around the child failed (the context says which).
    #[error("{context}")]
    Io {
        /// What was being done.
        context: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Writing the trace failed.
    #[error(transparent)]
    Write(#[from] std::io::Error),
    /// Lackey's output could not be parsed (the recording is abandoned).
    #[error("Lackey's output could not be parsed; recording abandoned")]
    Parse(#[source] TraceError),
    /// Valgrind ran but produced no reference: it could not run the program. Its last
    /// messages (`==PID==` lines) are in `messages`; callers show them before this error.
    #[error("valgrind could not run `{command}` ({status}); its messages are above")]
    ValgrindFailed {
        /// The program and its arguments, joined.
        command: String,
        /// Valgrind's exit status.
        status: ExitStatus,
        /// Valgrind's last messages (up to 40).
        messages: Vec<String>,
    },
    /// The ptrace sampler (`crate::ptrace_sample`) could not trace the program (the text
    /// says why and what to do).
    #[error("{0}")]
    Ptrace(String),
}

/// What to record and how.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// The program and its arguments (not empty).
    pub command: Vec<String>,
    /// zstd level of the trace (1–22).
    pub level: i32,
    /// How often to sample `/proc/PID/maps` while the program runs.
    pub maps_interval: Duration,
    /// Send the program's stdout to this process's stderr (so that stdout can hold
    /// something else).
    pub stdout_to_stderr: bool,
    /// Send the program's stdout to /dev/null (over `stdout_to_stderr`): check-kernel's
    /// program check, whose native run discards it too.
    pub stdout_null: bool,
    /// Stop after this many references (a prefix of the run): the program is ended
    /// (SIGKILL) and the trace holds exactly this many. `None`: the whole run.
    pub max_refs: Option<u64>,
    /// Environment variables set for the program (e.g. `GLIBC_TUNABLES` to record the
    /// run that a THP way makes, with malloc's `MADV_HUGEPAGE` in its VMA samples).
    pub env: Vec<(String, String)>,
}

/// What a recording produced.
#[derive(Clone, Debug)]
pub struct Recording {
    /// References written.
    pub references: u64,
    /// Loads among them.
    pub loads: u64,
    /// Stores among them.
    pub stores: u64,
    /// Instruction fetches among them.
    pub ifetches: u64,
    /// Bytes of the trace written.
    pub bytes: u64,
    /// VMA samples stored.
    pub vma_samples: usize,
    /// VMAs in the last sample.
    pub vmas_last_sample: usize,
    /// Wall time from the start of Valgrind to its end.
    pub seconds: f64,
    /// How Valgrind (the program) ended: a failure still leaves a valid trace of what the
    /// program did until then.
    pub exit_status: ExitStatus,
    /// The recording stopped at [`RecordOptions::max_refs`] (the program was ended).
    pub truncated: bool,
    /// References the program made, recorded or not (mmtrace counts them; Lackey does
    /// not: `None`). Absent too when the program was ended early.
    pub total_references: Option<u64>,
    /// The sampling, when only windows were recorded.
    pub sampling: Option<crate::mmtrace::Sampling>,
    /// Times the program forked (mmtrace counts them: `Some`, 0 included). A forked
    /// child's references are never merged into the trace (mmtrace's child writes
    /// nothing; Lackey runs with `--child-silent-after-fork=yes`; the ptrace sampler does
    /// not follow children), so the trace is the first process's alone. `None`: not known.
    pub forks: Option<u64>,
}

/// Which Valgrind tool records.
#[derive(Clone, Debug, PartialEq)]
pub enum Backend {
    /// Lackey's text trace (`--trace-mem=yes`): data and instruction references.
    Lackey,
    /// mmtrace (`crate::mmtrace`): data references in binary, optionally sampled.
    Mmtrace {
        /// The directory to give Valgrind as `VALGRIND_LIB` ([`crate::mmtrace::build`]).
        lib_dir: std::path::PathBuf,
        /// Windows to record; `None`: every reference.
        sampling: Option<crate::mmtrace::Sampling>,
    },
}

const MAX_SAMPLES: usize = 256;

/// A checked Valgrind installation, ready to record.
pub struct Recorder {
    version: String,
}

/// A pipe whose write end the child inherits and whose read end it does not.
fn lackey_pipe() -> Result<(OwnedFd, OwnedFd), RecordError> {
    let io = |context| RecordError::Io {
        context,
        source: std::io::Error::last_os_error(),
    };
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe(2) to fill.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(io("cannot create a pipe for Valgrind's output"));
    }
    // SAFETY: pipe(2) succeeded, so both descriptors are open and owned by nobody else.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: F_SETFD on a descriptor we own; only sets close-on-exec on the read end.
    if unsafe { libc::fcntl(r.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
        return Err(io("cannot set close-on-exec on the pipe"));
    }
    Ok((r, w))
}

/// One VMA sample of process `pid`: `/proc/PID/smaps` condensed to its maps lines and
/// their `VmFlags:` lines (so that a sample says which VMAs were madvised), or
/// `/proc/PID/maps` where smaps cannot be read.
pub fn vma_sample(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/smaps"))
        .map(|t| mmulab_trace::meta::condense_smaps(&t))
        .or_else(|_| std::fs::read_to_string(format!("/proc/{pid}/maps")))
        .ok()
}

/// Samples the VMAs of `pid` ([`vma_sample`]) until `stop`, into `out`. Also passes a signal that `forward`
/// reports on to the child while `running` (see the loop).
fn sample_maps(
    pid: u32,
    every: Duration,
    stop: Arc<AtomicBool>,
    running: Arc<Mutex<bool>>,
    out: Arc<Mutex<Vec<(u64, String)>>>,
    forward: Box<dyn Fn() -> Option<i32> + Send>,
) {
    let t0 = Instant::now();
    let mut last = String::new();
    let mut forwarded = false;
    loop {
        // Ctrl-C reaches Valgrind with the caller; a SIGTERM sent to the caller alone is
        // passed on, so that the program ends and the trace of what it did is closed.
        if let (Some(sig), false) = (forward(), forwarded) {
            let alive = running.lock().unwrap_or_else(|p| p.into_inner());
            if *alive {
                // SAFETY: kill(2) on the pid of our child: `running` is true, so the main
                // thread has not reaped it (it clears the flag under this lock first).
                unsafe { libc::kill(pid as libc::pid_t, sig) };
            }
            forwarded = true;
        }
        let done = stop.load(Ordering::Relaxed);
        if let Some(text) = vma_sample(pid) {
            if !text.is_empty() && text != last {
                let mut v = out.lock().unwrap_or_else(|p| p.into_inner());
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

impl Recorder {
    /// Checks that Valgrind runs ([`RecordError::NoValgrind`] if not).
    pub fn new() -> Result<Recorder, RecordError> {
        match Command::new("valgrind").arg("--version").stdin(Stdio::null()).output() {
            Ok(o) if o.status.success() => Ok(Recorder {
                version: String::from_utf8_lossy(&o.stdout).trim().to_string(),
            }),
            _ => Err(RecordError::NoValgrind),
        }
    }

    /// Valgrind's version line.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Runs `opts.command` under Lackey and writes its references, with the page size,
    /// the command line and the VMA samples as metadata, as an `.mlt` trace to `out`.
    /// `progress` gets the references written so far, every 65,536; `forward` is polled
    /// every maps interval for a signal to pass on to the program (once).
    pub fn record<W: Write>(
        &self,
        opts: &RecordOptions,
        out: W,
        progress: &mut dyn FnMut(u64),
        forward: Box<dyn Fn() -> Option<i32> + Send>,
    ) -> Result<Recording, RecordError> {
        self.record_with(&Backend::Lackey, opts, out, progress, forward)
    }

    /// [`Recorder::record`] with the tool chosen.
    pub fn record_with<W: Write>(
        &self,
        backend: &Backend,
        opts: &RecordOptions,
        out: W,
        progress: &mut dyn FnMut(u64),
        forward: Box<dyn Fn() -> Option<i32> + Send>,
    ) -> Result<Recording, RecordError> {
        let mut w = MltWriter::new(
            BufWriter::with_capacity(1 << 20, mmulab_trace::format::Counted::new(out)),
            opts.level,
        )?;
        let (rd, wr) = lackey_pipe()?;
        let mut cmd = Command::new("valgrind");
        match backend {
            Backend::Lackey => {
                // A forked child would write its references into the same pipe, merged
                // into the parent's address space: it is kept silent.
                cmd.arg("--tool=lackey")
                    .arg("--trace-mem=yes")
                    .arg("--child-silent-after-fork=yes")
                    .arg(format!("--log-fd={}", wr.as_raw_fd()));
            }
            Backend::Mmtrace { lib_dir, sampling } => {
                // -q: Valgrind's messages go to stderr here (the pipe is binary); only
                // errors are shown.
                cmd.env("VALGRIND_LIB", lib_dir)
                    .arg("-q")
                    .arg("--tool=mmtrace")
                    .arg(format!("--out-fd={}", wr.as_raw_fd()));
                if let Some(s) = sampling {
                    cmd.arg(format!("--sample-on={}", s.on))
                        .arg(format!("--sample-period={}", s.period));
                }
            }
        }
        cmd.args(&opts.command).envs(opts.env.iter().map(|(k, v)| (k, v)));
        // The trace goes through --log-fd, so stdout is the program's alone.
        if opts.stdout_null {
            cmd.stdout(Stdio::null());
        } else if opts.stdout_to_stderr {
            cmd.stdout(Stdio::from(std::io::stderr().as_fd().try_clone_to_owned()?));
        }
        let t0 = Instant::now();
        let mut child = cmd.spawn().map_err(|source| RecordError::Io {
            context: "cannot start valgrind",
            source,
        })?;
        drop(wr); // Only the child writes now: the pipe reaches end-of-file when it exits.
        let pid = child.id();
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let running = Arc::new(Mutex::new(true));
        let sampler = {
            let (stop, running, samples) = (stop.clone(), running.clone(), samples.clone());
            let every = opts.maps_interval.max(Duration::from_millis(1));
            std::thread::spawn(move || sample_maps(pid, every, stop, running, samples, forward))
        };

        let pipe_name = Path::new("(valgrind lackey pipe)");
        let binary = matches!(backend, Backend::Mmtrace { .. });
        let mut total_references = None;
        let mut forks = 0;
        let mut allocations: Vec<(u64, u64)> = Vec::new();
        let (mut lines, mut records) = if binary {
            (None, Some(BufReader::with_capacity(1 << 20, File::from(rd))))
        } else {
            let r = BufReader::with_capacity(1 << 20, File::from(rd));
            (Some(LineReader::new(r, pipe_name, None)), None)
        };
        let mut buf = Vec::with_capacity(1 << 16);
        let mut kinds = [0u64; 3];
        // Valgrind's own `==PID==` messages share the pipe; the last ones are kept for an error.
        let mut messages: VecDeque<String> = VecDeque::new();
        let max_refs = opts.max_refs.unwrap_or(u64::MAX);
        let mut truncated = false;
        let read = (|| -> Result<Option<TraceError>, RecordError> {
            loop {
                if w.refs() + buf.len() as u64 >= max_refs {
                    truncated = true;
                    return Ok(None);
                }
                if let Some(r) = records.as_mut() {
                    let done = w.refs() + buf.len() as u64;
                    let mut rec = [0u8; crate::mmtrace::RECORD_BYTES];
                    match std::io::Read::read_exact(r, &mut rec) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
                        Err(error) => {
                            return Ok(Some(TraceError::Io {
                                path: "(valgrind mmtrace pipe)".into(),
                                error,
                            }))
                        }
                    }
                    match crate::mmtrace::decode(&rec) {
                        Some(crate::mmtrace::Record::Ref(m)) => {
                            kinds[m.kind as usize] += 1;
                            buf.push(m);
                            if buf.len() == buf.capacity() {
                                w.push_all(&buf)?;
                                buf.clear();
                                progress(w.refs());
                            }
                        }
                        Some(crate::mmtrace::Record::Touch { addr, write }) => {
                            // In place: after the references before it.
                            w.push_all(&buf)?;
                            buf.clear();
                            w.push_event(&mmulab_trace::Event::Touch { asid: 0, addr, write })?;
                        }
                        Some(crate::mmtrace::Record::Mmap { addr, len }) => {
                            if allocations.len() < MAX_ALLOCATIONS {
                                allocations.push((addr, addr + len));
                            }
                        }
                        Some(crate::mmtrace::Record::End(n)) => total_references = Some(n),
                        Some(crate::mmtrace::Record::Forks(n)) => forks = n,
                        None => {
                            return Ok(Some(TraceError::Corrupt {
                                path: "(valgrind mmtrace pipe)".into(),
                                offset: done * crate::mmtrace::RECORD_BYTES as u64,
                                line: None,
                                what: "an mmtrace record of unknown kind".into(),
                                refs_before: done,
                            }))
                        }
                    }
                    continue;
                }
                let lines = lines.as_mut().expect("text or binary");
                let line = match lines.next_line(w.refs() + buf.len() as u64) {
                    Ok(Some(l)) => l,
                    Ok(None) => return Ok(None),
                    Err(e) => return Ok(Some(e)),
                };
                match parse_line(line) {
                    Ok(Some(r)) => {
                        kinds[r.kind as usize] += 1;
                        buf.push(r);
                        if buf.len() == buf.capacity() {
                            w.push_all(&buf)?;
                            buf.clear();
                            progress(w.refs());
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
                    Err(what) => return Ok(Some(lines.corrupt(what, w.refs() + buf.len() as u64))),
                }
            }
        })();
        let read = read.and_then(|e| {
            w.push_all(&buf)?;
            Ok(e)
        });
        // The trace cannot be written (or Lackey's output parsed): end the program.
        if truncated || !matches!(read, Ok(None)) {
            let _ = child.kill();
        }
        *running.lock().unwrap_or_else(|p| p.into_inner()) = false;
        let read_err = match read {
            Ok(e) => e,
            Err(e) => {
                let _ = child.wait();
                stop.store(true, Ordering::Relaxed);
                let _ = sampler.join();
                return Err(e);
            }
        };
        let status = child.wait().map_err(|source| RecordError::Io {
            context: "waiting for valgrind",
            source,
        })?;
        stop.store(true, Ordering::Relaxed);
        let _ = sampler.join();
        let seconds = t0.elapsed().as_secs_f64();
        if let Some(e) = read_err {
            return Err(RecordError::Parse(e));
        }
        if w.refs() == 0 && !status.success() {
            return Err(RecordError::ValgrindFailed {
                command: opts.command.join(" "),
                status,
                messages: messages.into(),
            });
        }

        let samples = std::mem::take(&mut *samples.lock().unwrap_or_else(|p| p.into_inner()));
        let (vmas, vmas_last_sample) = vma_section(&samples, pid);
        write_page_size(&mut w)?;
        let tool = match backend {
            Backend::Lackey => "--tool=lackey --trace-mem=yes".to_string(),
            Backend::Mmtrace { sampling: None, .. } => "--tool=mmtrace (data references)".to_string(),
            Backend::Mmtrace { sampling: Some(s), .. } => format!(
                "--tool=mmtrace (data references; sampled: the first {} of every {})",
                s.on, s.period
            ),
        };
        let source = format!(
            "mmulab record: valgrind {tool} {}\n{}\nexit: {status}\n",
            opts.command.join(" "),
            self.version
        );
        w.section("source", source.as_bytes())?;
        if !vmas.is_empty() {
            w.section("vmas", vmas.as_bytes())?;
        }
        if !allocations.is_empty() {
            w.section("allocations", &mmulab_trace::meta::allocation_section(&allocations))?;
        }
        let references = w.refs();
        let mut inner = w.finish()?;
        inner.flush()?;
        let bytes = inner.get_ref().bytes();
        Ok(Recording {
            references,
            loads: kinds[AccessKind::Load as usize],
            stores: kinds[AccessKind::Store as usize],
            ifetches: kinds[AccessKind::IFetch as usize],
            bytes,
            vma_samples: samples.len(),
            vmas_last_sample,
            seconds,
            exit_status: status,
            truncated,
            total_references,
            sampling: match backend {
                Backend::Mmtrace { sampling, .. } => *sampling,
                Backend::Lackey => None,
            },
            // The count comes only in mmtrace's trailer; a truncated run has none.
            forks: (binary && total_references.is_some()).then_some(forks),
        })
    }
}

/// Allocation records kept (mmtrace's mappings, in the `allocations` section); a program
/// that maps more in a loop keeps its first ones (assumed enough to name its regions).
const MAX_ALLOCATIONS: usize = 1 << 16;

/// The `vmas` section's text from `(t_ms, /proc/PID/maps text)` samples, and how many
/// VMAs its last sample lists (shared by every recorder).
pub(crate) fn vma_section(samples: &[(u64, String)], pid: u32) -> (String, usize) {
    let mut vmas = String::new();
    for (i, (t, text)) in samples.iter().enumerate() {
        vmas.push_str(&format!("# sample {i} t_ms={t} pid={pid}\n{text}"));
    }
    let last = mmulab_trace::meta::parse_vma_samples(vmas.as_bytes())
        .pop()
        .map_or(0, |v| v.len());
    (vmas, last)
}

/// Writes the `markers` section with this machine's page size.
pub(crate) fn write_page_size<W: std::io::Write>(w: &mut MltWriter<W>) -> std::io::Result<()> {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    w.section("markers", format!("page_size {page}\n").as_bytes())
}
