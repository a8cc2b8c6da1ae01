//! Printing that never panics. The standard `println!` panics when stdout cannot be
//! written (a full disk behind a redirect, `> /dev/full`): exit status 101 and a panic
//! message. Every line the CLI prints goes through `outln!`, `out!` or `errln!`
//! instead: a failed write is remembered (the first one, with its stream), later
//! writes to that stream are skipped, and `main` ends with a clear error naming the stream
//! and exit status 2 ([`failure`]). A closed pipe is not an error here: SIGPIPE keeps its
//! default action (signals.rs), so `mmulab … | head` ends quietly as before.

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// The first write that failed: the stream and the error.
static FAILED: OnceLock<(&'static str, String)> = OnceLock::new();
static STDOUT_DEAD: AtomicBool = AtomicBool::new(false);
static STDERR_DEAD: AtomicBool = AtomicBool::new(false);

fn write_to(stream: &'static str, dead: &AtomicBool, args: fmt::Arguments, w: &mut dyn Write) {
    if dead.load(Ordering::Relaxed) {
        return;
    }
    if let Err(e) = w.write_fmt(args).and_then(|_| w.flush()) {
        dead.store(true, Ordering::Relaxed);
        let _ = FAILED.set((stream, e.to_string()));
    }
}

/// Writes `args` to stdout (see the module comment).
pub fn out(args: fmt::Arguments) {
    write_to("stdout", &STDOUT_DEAD, args, &mut std::io::stdout().lock());
}

/// Writes to stdout through `f`, buffered (a large output, a 16 M-point curve as JSON,
/// streamed rather than formatted whole first); a failure is remembered as `out`'s are.
pub fn out_with(f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) {
    if STDOUT_DEAD.load(Ordering::Relaxed) {
        return;
    }
    let mut w = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    if let Err(e) = f(&mut w).and_then(|_| w.flush()) {
        STDOUT_DEAD.store(true, Ordering::Relaxed);
        let _ = FAILED.set(("stdout", e.to_string()));
    }
}

/// Writes `args` to stderr (see the module comment).
pub fn err(args: fmt::Arguments) {
    write_to("stderr", &STDERR_DEAD, args, &mut std::io::stderr().lock());
}

/// The error to end with if a write failed: flushes stdout first (what the standard
/// library would otherwise flush, and ignore the error of, at exit).
pub fn failure() -> Option<String> {
    if !STDOUT_DEAD.load(Ordering::Relaxed) {
        if let Err(e) = std::io::stdout().lock().flush() {
            let _ = FAILED.set(("stdout", e.to_string()));
        }
    }
    FAILED.get().map(|(stream, e)| {
        format!("cannot write to {stream}: {e} (a full disk or /dev/full behind a redirect?); the output is incomplete")
    })
}

/// `println!` that never panics.
macro_rules! outln {
    () => { $crate::console::out(format_args!("\n")) };
    ($($t:tt)*) => { $crate::console::out(format_args!("{}\n", format_args!($($t)*))) };
}

/// `print!` that never panics.
macro_rules! out {
    ($($t:tt)*) => { $crate::console::out(format_args!($($t)*)) };
}

/// `eprintln!` that never panics.
macro_rules! errln {
    () => { $crate::console::err(format_args!("\n")) };
    ($($t:tt)*) => { $crate::console::err(format_args!("{}\n", format_args!($($t)*))) };
}
