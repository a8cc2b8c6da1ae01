//! Signals. A closed pipe ends the process quietly, as it ends `cat` or `grep`; Ctrl-C
//! (SIGINT) and SIGTERM ask long commands to stop at their next batch and report what they
//! did, and another one a second or more later ends the process at once.
//!
//! Why libc and not a crate such as `ctrlc`: libc is already a dependency, the handler
//! needs only async-signal-safe calls (atomics, clock_gettime, signal, raise), and
//! `sigaction` lets a signal that the parent ignored (`nohup`, a shell's background job)
//! stay ignored. Signals within a second of the first count as the same request:
//! `timeout` sends its signal to the command and then to the command's process group,
//! so the command receives it twice.

use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};

/// The signal that asked to stop, 0 if none.
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// When it came (CLOCK_MONOTONIC, milliseconds).
static FIRST_MS: AtomicI64 = AtomicI64::new(0);

/// Gives SIGPIPE its default action back (the Rust runtime ignores it, so a write to a
/// closed pipe fails with EPIPE and `println!` panics): the process then ends silently,
/// killed by SIGPIPE (status 141 in a shell), when its reader goes away —
/// `mmulab machines | head -1`. Also unblocks SIGPIPE in case the parent blocked it.
pub fn default_sigpipe() {
    // SAFETY: signal(2) and pthread_sigmask(3) with valid arguments; the set is
    // initialised by sigemptyset before use. Called at the start of main, before any
    // other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}

/// Milliseconds of CLOCK_MONOTONIC (async-signal-safe).
#[allow(clippy::unnecessary_cast)] // time_t and c_long are 32 bits on some targets
fn now_ms() -> i64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime(2) fills the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as i64 * 1000 + t.tv_nsec as i64 / 1_000_000
}

extern "C" fn on_stop_signal(sig: libc::c_int) {
    // Only async-signal-safe calls.
    if SIGNAL.load(Ordering::Relaxed) == 0 {
        FIRST_MS.store(now_ms(), Ordering::Relaxed);
        SIGNAL.store(sig, Ordering::Relaxed);
        mmulab_sim::request_stop();
    } else if now_ms() - FIRST_MS.load(Ordering::Relaxed) >= 1000 {
        // Asked again: the default action (the process ends, killed by the signal).
        // SAFETY: signal(2) and raise(3) are async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}

/// From now on SIGINT and SIGTERM stop the simulation loops at their next batch
/// ([`mmulab_sim::request_stop`]) instead of killing the process; the command checks
/// [`mmulab_sim::stop_requested`], reports what it did and `main` exits with 128 + the
/// signal number. Another signal a second or more later kills the process as usual. Only
/// commands that check the flag call this, so that Ctrl-C keeps working everywhere else.
pub fn stop_on_interrupt() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: sigaction(2) with zero-initialised structs whose mask is set by
        // sigemptyset; the handler only performs atomic stores.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN {
                continue; // Ignored by whoever started us: leave it ignored.
            }
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// What [`end_on_interrupt`]'s handler writes before the process ends.
static END_NOTE: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

extern "C" fn on_end_signal(sig: libc::c_int) {
    // Only async-signal-safe calls: write(2) of static bytes, signal(2), raise(3).
    let name: &[u8] = match sig {
        libc::SIGINT => b"\nmmulab: interrupted by SIGINT: ",
        _ => b"\nmmulab: interrupted by SIGTERM: ",
    };
    let note = END_NOTE.get().map_or(&b"nothing to report"[..], |n| n.as_bytes());
    // SAFETY: write(2) of valid buffers, then the default action of the signal.
    unsafe {
        libc::write(2, name.as_ptr().cast(), name.len());
        libc::write(2, note.as_ptr().cast(), note.len());
        libc::write(2, b"\n".as_ptr().cast(), 1);
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// For commands that measure this machine natively and report only at the end (`bench`,
/// `probe`): SIGINT or SIGTERM ends the process at once, as by default (status 130 or
/// 143), after saying on stderr `note` (why nothing is printed). Nothing is left to
/// restore: these commands change no system setting.
pub fn end_on_interrupt(note: &'static str) {
    let _ = END_NOTE.set(note);
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: as in stop_on_interrupt.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN {
                continue;
            }
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_end_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The signal that asked the command to stop (SIGINT or SIGTERM), if one did.
pub fn interrupted() -> Option<i32> {
    match SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}

/// "SIGINT" / "SIGTERM".
pub fn name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// The line a command prints below partial results: "incomplete: interrupted by SIGINT
/// after N references".
pub fn incomplete_line(references: u64) -> String {
    format!(
        "incomplete: interrupted by {} after {} references; the figures above cover those only",
        interrupted().map_or("a stop request", name),
        references
    )
}
