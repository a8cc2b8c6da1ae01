//! Progress on stderr, shown only when stderr is a terminal (so logs and pipes stay
//! clean), redrawn at most a few times per second.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// A progress line for one long run.
pub struct ProgressLine {
    label: String,
    start: Instant,
    last: Instant,
    enabled: bool,
    drawn: bool,
}

impl ProgressLine {
    /// A progress line labelled `label`; silent unless stderr is a terminal.
    pub fn new(label: &str) -> ProgressLine {
        let now = Instant::now();
        ProgressLine {
            label: label.to_string(),
            start: now,
            last: now,
            enabled: std::io::stderr().is_terminal(),
            drawn: false,
        }
    }

    /// Reports `refs` simulated and, when known, (done, total) of the input.
    pub fn update(&mut self, refs: u64, frac: Option<(u64, u64)>) {
        if !self.enabled || self.last.elapsed() < Duration::from_millis(250) {
            return;
        }
        self.last = Instant::now();
        let secs = self.start.elapsed().as_secs_f64().max(1e-9);
        let pct = frac
            .filter(|(_, t)| *t > 0)
            .map(|(d, t)| format!(" {:5.1}%", 100.0 * d as f64 / t as f64))
            .unwrap_or_default();
        eprint!(
            "\r\x1b[2K{}:{pct} {:.1} M refs, {:.1} M refs/s",
            self.label,
            refs as f64 / 1e6,
            refs as f64 / 1e6 / secs
        );
        let _ = std::io::stderr().flush();
        self.drawn = true;
    }

    /// Clears the line.
    pub fn finish(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
        }
    }
}
