//! The sampler's tracing loop (x86-64 Linux; the design is in the module above).

use std::collections::HashSet;
use std::io::{BufWriter, Write};
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::code::Code;
use super::decode::{Refs, Regs};
use super::{PtraceRecording, WindowSampling};
use crate::{RecordError, RecordOptions, Recording};
use mmulab_trace::format::mlt::MltWriter;
use mmulab_trace::format::Counted;
use mmulab_trace::{AccessKind, MemRef};

/// 64-bit user code segment selector on x86-64 Linux (`__USER_CS`); 0x23 is 32-bit code.
const USER_CS_64: u64 = 0x33;

type Out<W> = MltWriter<BufWriter<Counted<W>>>;

fn null() -> *mut libc::c_void {
    std::ptr::null_mut()
}

/// ptrace(2) with a signal (or option bits) as its data argument; false on failure.
fn pt(req: libc::c_uint, tid: i32, data: usize) -> bool {
    // SAFETY: requests whose data argument is an integer (SINGLESTEP, CONT, SETOPTIONS)
    // on a tracee of ours; the kernel validates the pid.
    unsafe { libc::ptrace(req, tid, null(), data as *mut libc::c_void) == 0 }
}

fn getregs(tid: i32) -> Option<libc::user_regs_struct> {
    // SAFETY: an all-zero user_regs_struct is valid; GETREGS fills it.
    let mut r: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    // SAFETY: the data argument points to a user_regs_struct, as PTRACE_GETREGS needs.
    let rc = unsafe { libc::ptrace(libc::PTRACE_GETREGS, tid, null(), &mut r as *mut _ as *mut libc::c_void) };
    (rc == 0).then_some(r)
}

fn event_msg(tid: i32) -> Option<u64> {
    let mut m: libc::c_ulong = 0;
    // SAFETY: the data argument points to an unsigned long, as PTRACE_GETEVENTMSG needs.
    let rc = unsafe {
        libc::ptrace(
            libc::PTRACE_GETEVENTMSG,
            tid,
            null(),
            &mut m as *mut _ as *mut libc::c_void,
        )
    };
    (rc == 0).then_some(m as u64)
}

fn to_regs(r: &libc::user_regs_struct) -> Regs {
    Regs {
        gpr: [
            r.rax, r.rcx, r.rdx, r.rbx, r.rsp, r.rbp, r.rsi, r.rdi, r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14,
            r.r15,
        ],
        rip: r.rip,
        fs_base: r.fs_base,
        gs_base: r.gs_base,
    }
}

/// Waits for any thread of the program's process group: (tid, status, rusage), or `None`
/// when none is left.
fn wait_any(pgid: i32) -> Option<(i32, i32, libc::rusage)> {
    loop {
        let mut st = 0;
        // SAFETY: an all-zero rusage is valid for wait4 to fill.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 with valid pointers; -pgid waits for the program's threads only (the
        // program is alone in its process group), never for another child of this process.
        let tid = unsafe { libc::wait4(-pgid, &mut st, libc::__WALL, &mut ru) };
        if tid > 0 {
            return Some((tid, st, ru));
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
}

/// Ends the program if the recording stops early (an error, a write failure): SIGKILL and
/// reap every thread, so that nothing is left behind, not even a zombie.
struct Reaper {
    pid: i32,
    done: bool,
}

impl Drop for Reaper {
    fn drop(&mut self) {
        if !self.done {
            // SAFETY: kill(2) of our own, not yet reaped, child.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
            while wait_any(self.pid).is_some() {}
        }
    }
}

/// The window being stepped.
struct Window {
    tid: i32,
    steps: u64,
    refs_at_start: u64,
    t_ms: u64,
    /// The references of the instruction just stepped, committed once it is seen to have run.
    pending: Vec<MemRef>,
    /// An instruction was decoded and stepped (not a signal delivery).
    armed: bool,
    /// The registers it started from.
    last: Regs,
    /// A signal to pass on at the next resume.
    inject: i32,
    /// The window's steps when a timer signal last reached another thread.
    steps_at_signal: Option<u64>,
    /// The system call number if the instruction stepped is `syscall`.
    syscall: Option<u64>,
}

struct Sampler<W: Write> {
    pid: i32,
    sampling: WindowSampling,
    w: Out<W>,
    buf: Vec<MemRef>,
    kinds: [u64; 3],
    dec: Refs,
    code: Code,
    window: Option<Window>,
    max_refs: u64,
    truncated: bool,
    t0: Instant,
    r: PtraceStats,
    windows_text: String,
    vmas: super::vmas::VmaSamples,
    /// The program's CPU clock (`clock_getcpuclockid`: user + system time of every
    /// thread, in ns), and its reading when the last window ended.
    cpu_clock: Option<libc::clockid_t>,
    cpu_after_window: u64,
    /// Pages seen present (sampled runs: the touches between windows, pages.rs).
    pages: super::pages::Pages,
    touches: u64,
    /// The first error writing touches (reported when the recording ends).
    write_error: Option<std::io::Error>,
    /// Threads whose window was abandoned while a single step was under way: their step's
    /// SIGTRAP, when it comes, is swallowed.
    abandoned: HashSet<i32>,
}

#[derive(Default)]
struct PtraceStats {
    windows: u64,
    steps: u64,
    windows_other_threads: u64,
    undecodable: u64,
    /// Timer signals that came before the program had run half a period natively since
    /// the last window (suppressed, no window): see `native_since_window`.
    early_signals: u64,
    /// Windows given up because their thread stopped stepping (`abandon_window`).
    abandoned: u64,
}

/// The CPU clock of process `pid` (any process's can be read: `posix_cpu_clock_get`).
fn cpu_clock_of(pid: i32) -> Option<libc::clockid_t> {
    let mut clk: libc::clockid_t = 0;
    // SAFETY: valid out-pointer; the call only looks the process up.
    (unsafe { libc::clock_getcpuclockid(pid, &mut clk) } == 0).then_some(clk)
}

/// CPU time of `clk` in ns (0 if it cannot be read: the process ended).
fn cpu_ns(clk: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid out-pointer.
    if unsafe { libc::clock_gettime(clk, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl<W: Write> Sampler<W> {
    fn refs(&self) -> u64 {
        self.w.refs() + self.buf.len() as u64
    }

    fn push(&mut self, m: MemRef, progress: &mut dyn FnMut(u64)) -> std::io::Result<()> {
        self.kinds[m.kind as usize] += 1;
        self.buf.push(m);
        if self.buf.len() == self.buf.capacity() {
            self.w.push_all(&self.buf)?;
            self.buf.clear();
            progress(self.w.refs());
        }
        Ok(())
    }

    /// Samples the VMAs (vmas.rs); in a recording of every instruction, writes their
    /// changes as events after the references so far.
    fn sample_maps(&mut self) {
        let t_ms = self.t0.elapsed().as_millis() as u64;
        let events = self.vmas.sample(self.pid as u32, t_ms, self.sampling.whole());
        self.push_events(&events);
    }

    /// Writes `events` after the references so far; false (the error kept for the end)
    /// if the output failed, now or before.
    fn push_events(&mut self, events: &[mmulab_trace::Event]) -> bool {
        if events.is_empty() || self.write_error.is_some() {
            return self.write_error.is_none();
        }
        let r = (|| -> std::io::Result<()> {
            self.w.push_all(&self.buf)?;
            self.buf.clear();
            for e in events {
                self.w.push_event(e)?;
            }
            Ok(())
        })();
        match r {
            Ok(()) => true,
            Err(e) => {
                self.write_error = Some(e);
                false
            }
        }
    }

    /// The pages the program touched since the last window (pages.rs), as touch events
    /// after the references so far.
    fn write_touches(&mut self) {
        let mut t = Vec::new();
        self.pages.scan(self.pid, &mut t);
        let events: Vec<mmulab_trace::Event> = t
            .iter()
            .map(|&(addr, write)| mmulab_trace::Event::Touch { asid: 0, addr, write })
            .collect();
        if !events.is_empty() && self.push_events(&events) {
            self.touches += events.len() as u64;
        }
    }

    /// Stops sampling at `tid` (a thread stopped by the timer, or the first stop of a
    /// whole-run recording) and steps its first instruction.
    fn start_window(&mut self, tid: i32) {
        let Some(r) = getregs(tid) else {
            pt(libc::PTRACE_CONT, tid, 0);
            return;
        };
        self.sample_maps();
        // Its old step (if any) is this window's now.
        self.abandoned.remove(&tid);
        if !self.sampling.whole() {
            self.write_touches();
        }
        self.code.forget();
        self.r.windows += 1;
        if tid != self.pid {
            self.r.windows_other_threads += 1;
        }
        self.window = Some(Window {
            tid,
            steps: 0,
            refs_at_start: self.refs(),
            t_ms: self.t0.elapsed().as_millis() as u64,
            pending: Vec::with_capacity(8),
            armed: false,
            last: to_regs(&r),
            inject: 0,
            steps_at_signal: None,
            syscall: None,
        });
        self.step(tid, to_regs(&r));
    }

    /// Decodes the instruction at `regs.rip` into the pending references and steps it (or
    /// passes a signal on first, which runs no instruction).
    fn step(&mut self, tid: i32, regs: Regs) {
        let w = self.window.as_mut().expect("a window");
        w.pending.clear();
        w.last = regs;
        if w.inject != 0 {
            // Delivering a signal while stepping runs no instruction: Linux's
            // `signal_delivered` (kernel/signal.c; x86 `handle_signal` passes `stepping`)
            // reports a SIGTRAP stop at the handler's entry, which must commit nothing.
            let sig = std::mem::take(&mut w.inject);
            w.armed = false;
            pt(libc::PTRACE_SINGLESTEP, tid, sig as usize);
            return;
        }
        let mut bytes = [0u8; 15];
        let n = self.code.fetch(regs.rip, &mut bytes);
        if self.dec.refs(&bytes[..n], &regs, &mut w.pending).is_err() {
            self.r.undecodable += 1;
        }
        w.syscall = (n >= 2 && bytes[..2] == [0x0f, 0x05]).then_some(regs.gpr[0]);
        w.armed = true;
        pt(libc::PTRACE_SINGLESTEP, tid, 0);
    }

    /// CPU time the program has run since the last window ended, ns (`u64::MAX` when
    /// its clock cannot be read: every timer signal then starts a window).
    ///
    /// Why: the timer (`ITIMER_VIRTUAL`, armed in the child, which only the child can
    /// re-arm) counts the program's user time, and single-stepping adds user time of its
    /// own (in this KVM guest each step's trap is charged partly as user time: a 1.3 s
    /// numpy program had 4.0 s of user time after its windows). Windows of 10,000 steps
    /// then earned more than a 6 ms period each, the next signal was already due when a
    /// window ended, and the sampler stepped most of the program (over 5 minutes for a
    /// 1.3 s run). A signal that comes before the program has run half a period natively
    /// since the last window is suppressed without a window.
    fn native_since_window(&self) -> u64 {
        match self.cpu_clock {
            Some(c) => cpu_ns(c).saturating_sub(self.cpu_after_window),
            None => u64::MAX,
        }
    }

    fn end_window(&mut self) {
        if let Some(c) = self.cpu_clock {
            self.cpu_after_window = cpu_ns(c);
        }
        if let Some(w) = self.window.take() {
            self.close_window(&w, "");
            pt(libc::PTRACE_CONT, w.tid, w.inject as usize);
        }
    }

    /// Counts a finished window's steps and writes its line of the `windows` section
    /// (`suffix`: "" or " abandoned").
    fn close_window(&mut self, w: &Window, suffix: &str) {
        self.r.steps += w.steps;
        self.windows_text.push_str(&format!(
            "window {} t_ms={} tid={} steps={} refs={}{suffix}\n",
            self.r.windows - 1,
            w.t_ms,
            w.tid,
            w.steps,
            self.refs() - w.refs_at_start
        ));
    }

    /// Gives up the window under way without resuming its thread: its single step has not
    /// finished since the last timer signal reached another thread, so the thread is
    /// blocked (a step over a blocking system call: an idle worker thread the kernel woke
    /// to take the process-wide timer signal, numpy's OpenBLAS threads here). Kept, the
    /// window never ended and every later signal was suppressed: a 1.3 s numpy program
    /// was recorded in 2 windows instead of about 50. Its steps so far are kept.
    fn abandon_window(&mut self) {
        if let Some(w) = self.window.take() {
            self.close_window(&w, " abandoned");
            self.r.abandoned += 1;
            self.abandoned.insert(w.tid);
        }
    }

    /// The stepping thread stopped with `sig`.
    fn stepped(&mut self, tid: i32, sig: i32, progress: &mut dyn FnMut(u64)) -> std::io::Result<()> {
        let Some(r) = getregs(tid) else {
            // Gone (killed): its exit is reported next.
            self.window = None;
            return Ok(());
        };
        let regs = to_regs(&r);
        let w = self.window.as_mut().expect("a window");
        // The instruction ran if the registers moved. A step's SIGTRAP is dequeued before
        // any other pending signal (Linux `get_signal` takes `dequeue_synchronous_signal`
        // first, kernel/signal.c), so a stop for another signal with the registers unchanged
        // means the instruction has not run (it runs again after the signal).
        if w.armed && regs != w.last {
            w.steps += 1;
            let pending = std::mem::take(&mut w.pending);
            for m in pending.iter().copied() {
                if self.refs() >= self.max_refs {
                    self.truncated = true;
                    break;
                }
                self.push(m, progress)?;
            }
            let w = self.window.as_mut().expect("a window");
            w.pending = pending;
            let before = w.last;
            if let Some(nr) = w.syscall.take() {
                if super::vmas::VMA_SYSCALLS.contains(&nr) {
                    self.sample_maps();
                }
                if self.sampling.whole() {
                    if let Some(e) = super::vmas::dontneed(nr, &before, regs.gpr[0]) {
                        self.push_events(&[e]);
                    }
                }
            }
        }
        let w = self.window.as_mut().expect("a window");
        w.armed = false;
        if sig != libc::SIGTRAP && sig != libc::SIGVTALRM {
            w.inject = sig;
        }
        if w.steps >= self.sampling.window || self.truncated {
            self.end_window();
            if self.truncated {
                // SAFETY: kill(2) of our child, not yet reaped (it is stopped or running).
                unsafe { libc::kill(self.pid, libc::SIGKILL) };
            }
            return Ok(());
        }
        self.step(tid, regs);
        Ok(())
    }
}

/// The error for a program that could not be started under ptrace.
fn spawn_error(e: std::io::Error, command: &[String]) -> RecordError {
    if e.raw_os_error() == Some(libc::EPERM) {
        let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
            .map(|s| format!("kernel.yama.ptrace_scope is {}", s.trim()))
            .unwrap_or_else(|_| "no Yama ptrace_scope here".into());
        return RecordError::Ptrace(format!(
            "ptrace is not permitted here (PTRACE_TRACEME failed with EPERM; {scope}): \
             kernel.yama.ptrace_scope 3 forbids ptrace (as root: `sysctl kernel.yama.ptrace_scope=1`), \
             and a container's seccomp profile may deny it (docker: --cap-add SYS_PTRACE); \
             or record with --recorder mmtrace"
        ));
    }
    RecordError::Ptrace(format!("cannot start `{}`: {e}", command.join(" ")))
}

pub(super) fn record<W: Write>(
    opts: &RecordOptions,
    sampling: WindowSampling,
    out: W,
    progress: &mut dyn FnMut(u64),
    forward: Box<dyn Fn() -> Option<i32> + Send>,
) -> Result<PtraceRecording, RecordError> {
    let Some(program) = opts.command.first() else {
        return Err(RecordError::Ptrace("no program given to record".into()));
    };
    let w = MltWriter::new(BufWriter::with_capacity(1 << 20, Counted::new(out)), opts.level)?;
    let mut cmd = Command::new(program);
    cmd.args(&opts.command[1..])
        .envs(opts.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .process_group(0);
    if opts.stdout_null {
        cmd.stdout(Stdio::null());
    } else if opts.stdout_to_stderr {
        cmd.stdout(Stdio::from(std::io::stderr().as_fd().try_clone_to_owned()?));
    }
    let period = sampling.period;
    // SAFETY: the closure runs in the child between fork and exec and calls only
    // async-signal-safe functions (ptrace, prctl, setitimer).
    unsafe {
        cmd.pre_exec(move || {
            if libc::ptrace(libc::PTRACE_TRACEME, 0, null(), null()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if !period.is_zero() {
                // The process's user CPU time, all threads (Linux `check_cpu_itimer`,
                // kernel/time/posix-cpu-timers.c, against utime); kept across execve.
                let tv = libc::timeval {
                    tv_sec: period.as_secs() as libc::time_t,
                    tv_usec: period.subsec_micros() as libc::suseconds_t,
                };
                let it = libc::itimerval {
                    it_interval: tv,
                    it_value: tv,
                };
                libc::setitimer(libc::ITIMER_VIRTUAL, &it, std::ptr::null_mut());
            }
            Ok(())
        });
    }
    let t0 = Instant::now();
    let child = cmd.spawn().map_err(|e| spawn_error(e, &opts.command))?;
    let pid = child.id() as i32;
    let mut reaper = Reaper { pid, done: false };

    // The first stop: the SIGTRAP after exec (PTRACE_TRACEME).
    let Some((_, st, _)) = wait_any(pid) else {
        return Err(RecordError::Ptrace(
            "the program vanished before its first instruction".into(),
        ));
    };
    if !libc::WIFSTOPPED(st) {
        reaper.done = true;
        return Err(RecordError::Ptrace(format!(
            "`{}` ended before it could be traced ({})",
            opts.command.join(" "),
            ExitStatus::from_raw(st)
        )));
    }
    let options = libc::PTRACE_O_TRACECLONE | libc::PTRACE_O_TRACEEXEC | libc::PTRACE_O_EXITKILL;
    if !pt(libc::PTRACE_SETOPTIONS, pid, options as usize) {
        return Err(RecordError::Io {
            context: "PTRACE_SETOPTIONS on the program",
            source: std::io::Error::last_os_error(),
        });
    }
    match getregs(pid) {
        Some(r) if r.cs == USER_CS_64 => {}
        Some(_) => {
            let why = "is a 32-bit x86 program: the ptrace sampler decodes 64-bit code only; use --recorder mmtrace";
            return Err(RecordError::Ptrace(format!("`{program}` {why}")));
        }
        None => {
            return Err(RecordError::Io {
                context: "PTRACE_GETREGS on the program",
                source: std::io::Error::last_os_error(),
            })
        }
    }

    // Signals for the program (Ctrl-C, SIGTERM given to mmulab) are passed on by a thread.
    let stop = Arc::new(AtomicBool::new(false));
    let running = Arc::new(Mutex::new(true));
    let forwarder = {
        let (stop, running) = (stop.clone(), running.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Some(sig) = forward() {
                    let alive = running.lock().unwrap_or_else(|p| p.into_inner());
                    if *alive {
                        // SAFETY: kill(2) of our child while its leader is not reaped.
                        unsafe { libc::kill(pid, sig) };
                    }
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };

    let mut s = Sampler {
        pid,
        sampling,
        w,
        buf: Vec::with_capacity(1 << 16),
        kinds: [0; 3],
        dec: Refs::new(),
        code: Code::new(pid),
        window: None,
        max_refs: opts.max_refs.unwrap_or(u64::MAX),
        truncated: false,
        t0,
        r: PtraceStats::default(),
        windows_text: String::new(),
        vmas: Default::default(),
        cpu_clock: cpu_clock_of(pid),
        cpu_after_window: 0,
        pages: Default::default(),
        touches: 0,
        write_error: None,
        abandoned: HashSet::new(),
    };
    s.sample_maps();
    if sampling.whole() {
        s.start_window(pid);
    } else {
        pt(libc::PTRACE_CONT, pid, 0);
    }
    let result = trace_loop(&mut s, progress);
    *running.lock().unwrap_or_else(|p| p.into_inner()) = false;
    stop.store(true, Ordering::Relaxed);
    let _ = forwarder.join();
    let (status, ru, threads) = result?;
    reaper.done = true;
    if let Some(e) = s.write_error.take() {
        return Err(e.into());
    }
    s.end_window();
    s.w.push_all(&s.buf)?;
    let seconds = t0.elapsed().as_secs_f64();
    finish(s, opts, sampling, status, ru, threads, seconds)
}

/// Follows every thread until none is left: (the main thread's exit status, its rusage,
/// threads seen).
fn trace_loop<W: Write>(
    s: &mut Sampler<W>,
    progress: &mut dyn FnMut(u64),
) -> Result<(i32, libc::rusage, u64), RecordError> {
    let pid = s.pid;
    let mut tids: HashSet<i32> = HashSet::from([pid]);
    let mut threads = 1u64;
    // SAFETY: an all-zero rusage is valid.
    let mut main: (i32, libc::rusage) = (0, unsafe { std::mem::zeroed() });
    while let Some((tid, st, ru)) = wait_any(pid) {
        let stepping = s.window.as_ref().is_some_and(|w| w.tid == tid);
        if libc::WIFEXITED(st) || libc::WIFSIGNALED(st) {
            tids.remove(&tid);
            s.abandoned.remove(&tid);
            if stepping {
                s.end_window();
            }
            if tid == pid {
                main = (st, ru);
            }
            continue;
        }
        if !libc::WIFSTOPPED(st) {
            continue;
        }
        let sig = libc::WSTOPSIG(st);
        let event = st >> 16;
        if event != 0 {
            if event == libc::PTRACE_EVENT_CLONE {
                if let Some(new) = event_msg(tid) {
                    if tids.insert(new as i32) {
                        threads += 1;
                    }
                }
            } else if event == libc::PTRACE_EVENT_EXEC {
                s.code.reopen();
            }
            // An event stop is inside a system call: the instruction is still pending.
            let req = if stepping {
                libc::PTRACE_SINGLESTEP
            } else {
                libc::PTRACE_CONT
            };
            pt(req, tid, 0);
            continue;
        }
        if tids.insert(tid) {
            // A new thread's first stop (SIGSTOP), seen before its creator's clone event.
            threads += 1;
            pt(
                libc::PTRACE_CONT,
                tid,
                if sig == libc::SIGSTOP { 0 } else { sig as usize },
            );
            continue;
        }
        if stepping {
            s.stepped(tid, sig, progress)?;
            continue;
        }
        if sig == libc::SIGTRAP && s.abandoned.remove(&tid) {
            // The step of an abandoned window finished: the thread runs on natively.
            pt(libc::PTRACE_CONT, tid, 0);
            continue;
        }
        if sig == libc::SIGVTALRM {
            // Another thread earned the timer while a window is under way: a window that
            // has not stepped since the last such signal is abandoned (its thread blocks).
            if let Some(w) = s.window.as_mut().filter(|w| w.inject == 0) {
                if w.steps_at_signal == Some(w.steps) {
                    s.abandon_window();
                } else {
                    w.steps_at_signal = Some(w.steps);
                }
            }
            // The sampling timer: suppressed; a window unless one is already under way
            // or the program has not yet run half a period natively since the last one.
            let early = s.native_since_window() < s.sampling.period.as_nanos() as u64 / 2;
            if s.window.is_none() && !s.truncated && !early {
                s.start_window(tid);
            } else {
                s.r.early_signals += u64::from(early && s.window.is_none());
                pt(libc::PTRACE_CONT, tid, 0);
            }
            continue;
        }
        pt(libc::PTRACE_CONT, tid, sig as usize);
    }
    Ok((main.0, main.1, threads))
}

fn finish<W: Write>(
    s: Sampler<W>,
    opts: &RecordOptions,
    sampling: WindowSampling,
    status: i32,
    ru: libc::rusage,
    threads: u64,
    seconds: f64,
) -> Result<PtraceRecording, RecordError> {
    let Sampler {
        pid,
        mut w,
        kinds,
        dec,
        truncated,
        r,
        windows_text,
        vmas: vma_samples,
        touches,
        pages,
        ..
    } = s;
    let (vmas, vmas_last_sample) = crate::valgrind::vma_section(&vma_samples.samples, pid as u32);
    let exit_status = ExitStatus::from_raw(status);
    crate::valgrind::write_page_size(&mut w)?;
    if sampling.whole() {
        // The VMA changes are in the stream (vmas.rs): a simulation installs
        // the first sample only (meta::TraceMeta::vmas_at_start).
        w.section(
            "markers",
            format!("{} 1\n", mmulab_trace::meta::marker::VMA_EVENTS).as_bytes(),
        )?;
    }
    let source = format!(
        "mmulab record: ptrace window sampler ({}; data references) {}\nexit: {exit_status}\n",
        sampling.describe(),
        opts.command.join(" ")
    );
    w.section("source", source.as_bytes())?;
    if !vmas.is_empty() {
        w.section("vmas", vmas.as_bytes())?;
    }
    w.section("windows", windows_text.as_bytes())?;
    let references = w.refs();
    let mut inner = w.finish()?;
    inner.flush()?;
    let bytes = inner.get_ref().bytes();
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Ok(PtraceRecording {
        recording: Recording {
            references,
            loads: kinds[AccessKind::Load as usize],
            stores: kinds[AccessKind::Store as usize],
            ifetches: kinds[AccessKind::IFetch as usize],
            bytes,
            vma_samples: vma_samples.samples.len(),
            vmas_last_sample,
            seconds,
            exit_status,
            truncated,
            total_references: None,
            sampling: None,
            forks: None,
        },
        windows: r.windows,
        steps: r.steps,
        user_s: tv(ru.ru_utime),
        sys_s: tv(ru.ru_stime),
        threads,
        windows_other_threads: r.windows_other_threads,
        undecodable: r.undecodable,
        early_signals: r.early_signals,
        vsib_skipped: dec.vsib_skipped,
        abandoned_windows: r.abandoned,
        touches,
        pagemap_bytes: pages.pagemap_bytes,
        pagemap_seconds: pages.seconds,
    })
}
