//! Progress on stderr for long commands. Nothing is shown for the first seconds, so short
//! commands stay silent. On a terminal one line is redrawn a few times per second; when
//! stderr is a file or a pipe (logs, CI), a plain line is printed every few seconds, with no
//! carriage return or escape sequence. `MMULAB_PROGRESS=off` turns it off
//! (docs/output.md).
//!
//! Each line says what runs, how far it got (references, or the phase), the rate, and —
//! when the total is known — the percentage and the time left.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How progress is shown.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Off,
    /// Redrawn in place on a terminal.
    Tty,
    /// One plain line at a time (stderr is not a terminal).
    Plain,
}

impl Mode {
    /// (silence at the start, time between lines).
    fn timing(self) -> (Duration, Duration) {
        match self {
            Mode::Tty => (Duration::from_millis(1000), Duration::from_millis(250)),
            _ => (Duration::from_secs(2), Duration::from_secs(5)),
        }
    }

    fn of_stderr() -> Mode {
        match std::env::var("MMULAB_PROGRESS").as_deref() {
            Ok("off" | "0" | "no") => Mode::Off,
            _ if std::io::stderr().is_terminal() => Mode::Tty,
            _ => Mode::Plain,
        }
    }
}

/// A progress line for one long run.
pub struct ProgressLine {
    label: String,
    start: Instant,
    /// When the next line may be shown.
    next: Instant,
    mode: Mode,
    drawn: bool,
}

impl ProgressLine {
    /// A progress line labelled `label` (e.g. the workload or trace being run).
    pub fn new(label: &str) -> ProgressLine {
        let mode = Mode::of_stderr();
        let now = Instant::now();
        ProgressLine {
            label: label.to_string(),
            start: now,
            next: now + mode.timing().0,
            mode,
            drawn: false,
        }
    }

    /// Reports `refs` references done and, when known, (done, total) of the input in any
    /// unit (bytes read, references): the percentage and the time left come from it.
    pub fn update(&mut self, refs: u64, frac: Option<(u64, u64)>) {
        if !self.due() {
            return;
        }
        let secs = self.start.elapsed().as_secs_f64().max(1e-9);
        let mut body = format!("{} refs, {} refs/s", human(refs as f64), human(refs as f64 / secs));
        if let Some((done, total)) = frac.filter(|&(d, t)| t > 0 && d <= t) {
            body += &percent_eta(done as f64 / total as f64, secs);
        }
        self.show(&body);
    }

    /// Reports a phase of work (`phase`) and, when known, the share done (0 to 1).
    pub fn phase(&mut self, phase: &str, done: Option<f64>) {
        if !self.due() {
            return;
        }
        let secs = self.start.elapsed().as_secs_f64();
        let mut body = phase.to_string();
        if let Some(f) = done.filter(|f| (0.0..=1.0).contains(f)) {
            body += &percent_eta(f, secs);
        }
        self.show(&body);
    }

    /// True when a line is due now.
    fn due(&mut self) -> bool {
        if self.mode == Mode::Off {
            return false;
        }
        let now = Instant::now();
        if now < self.next {
            return false;
        }
        self.next = now + self.mode.timing().1;
        true
    }

    fn show(&mut self, body: &str) {
        let elapsed = self.start.elapsed().as_secs();
        let line = format!("mmulab: {}: {body} [{}]", self.label, clock(elapsed));
        let mut err = std::io::stderr().lock();
        // Progress is best effort: a stderr that cannot be written is no reason to stop.
        let _ = match self.mode {
            Mode::Tty => write!(err, "\r\x1b[2K{line}"),
            _ => writeln!(err, "{line}"),
        };
        let _ = err.flush();
        self.drawn = true;
    }

    /// Clears the line (on a terminal); call when the run ends.
    pub fn finish(&mut self) {
        if self.drawn && self.mode == Mode::Tty {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
        self.drawn = false;
    }
}

impl Drop for ProgressLine {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A progress line kept by a background thread, for work that has no callback of its
/// own (several simulations on threads, native benchmarks): every 100 ms the thread asks
/// `poll` for (references, (done, total)) — or `None` to show only the time elapsed —
/// and shows a line when one is due. Dropping it stops the thread and clears the line.
pub struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What a [`Ticker`] asks for: references done and (done, total) if known.
pub type Poll = Box<dyn Fn() -> Option<(u64, Option<(u64, u64)>)> + Send>;

impl Ticker {
    /// Starts a ticker labelled `label`.
    pub fn start(label: &str, poll: Poll) -> Ticker {
        Ticker::spawn(label, move |line| match poll() {
            Some((refs, frac)) => line.update(refs, frac),
            None => line.phase("running", None),
        })
    }

    fn spawn(label: &str, mut tick: impl FnMut(&mut ProgressLine) + Send + 'static) -> Ticker {
        let stop = Arc::new(AtomicBool::new(false));
        let mut line = ProgressLine::new(label);
        if line.mode == Mode::Off {
            return Ticker { stop, thread: None };
        }
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    tick(&mut line);
                }
                line.finish();
            })
            .ok();
        Ticker { stop, thread }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// " 45.2%, 0:12 left" for a share `f` done after `secs` seconds.
fn percent_eta(f: f64, secs: f64) -> String {
    let mut s = format!(", {:.1}%", 100.0 * f);
    if f > 0.001 && f < 1.0 {
        let left = secs * (1.0 - f) / f;
        s += &format!(", {} left", clock(left.round() as u64));
    }
    s
}

/// A count with a k/M/G suffix: "12.3 M".
fn human(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.2} G", v / 1e9),
        v if v >= 1e6 => format!("{:.1} M", v / 1e6),
        v if v >= 1e3 => format!("{:.1} k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

/// Seconds as "m:ss" or "h:mm:ss".
fn clock(secs: u64) -> String {
    if secs >= 3600 {
        format!("{}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
    } else {
        format!("{}:{:02}", secs / 60, secs % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_as_text() {
        assert_eq!(human(12_345_678.0), "12.3 M");
        assert_eq!(human(950.0), "950");
        assert_eq!(clock(75), "1:15");
        assert_eq!(clock(3725), "1:02:05");
        assert_eq!(percent_eta(0.25, 10.0), ", 25.0%, 0:30 left");
        assert_eq!(percent_eta(1.0, 10.0), ", 100.0%");
    }
}
