//! How much advise runs: the rounds of native runs and the ptrace sampler's period, chosen
//! from the warm-up run's time when the user did not choose them, so that a program that
//! runs a minute natively is advised in a few minutes (docs/advise.md § Time). Pure
//! functions: the tests feed them times.

use std::time::Duration;

use serde::Serialize;

use mmulab_record::ptrace_sample::WindowSampling;

/// Rounds of native runs (one run of each way per round) when the program is short.
pub const ROUNDS_MAX: usize = 5;
/// Under `--runs auto`, rounds are added after the planned ones while the median's
/// confidence interval (`verdict::median_interval`) is wider than ±[`RESOLVE`] of it, up to
/// this many rounds and while the native runs stay within [`NATIVE_BUDGET_S`] (issue 47
/// item 5: the C hash table of 1 GiB measured 2.54, 2.06 and 2.33 in three advise runs in
/// a row with 5 rounds each, on the AMD guest of docs/advise.md).
pub const ROUNDS_MORE_MAX: usize = 15;
/// The half-width of the median's interval, relative to it, that stops adding rounds
/// (the ±5 % issue 47 item 5 asks of three measurements in a row).
pub const RESOLVE: f64 = 0.05;
/// Rounds never fewer than this under `--runs auto`: one pair has no spread.
pub const ROUNDS_MIN: usize = 2;
/// Wall time the native rounds may take under `--runs auto`, seconds (assumed: what a
/// person waits for beside the recording; more rounds only narrow the spread, and the
/// output says when that is needed).
pub const NATIVE_BUDGET_S: f64 = 120.0;
/// Windows the ptrace sampler aims for by default: 120, so that a program of 1 s or more
/// gets at least 100 (issue 47; 15–30 windows predicted within 1.2 points of a whole
/// recording, docs/advise.md § The ptrace sampler).
pub const TARGET_WINDOWS: f64 = 120.0;

/// The shortest period the sampler is given, ms: `ITIMER_VIRTUAL` counts user CPU time in
/// scheduler ticks where the kernel accounts CPU time per tick (`CONFIG_TICK_CPU_ACCOUNTING`,
/// HZ = 250 here: 4 ms), so a shorter period would not fire more often.
pub const MIN_PERIOD_MS: u64 = 4;

/// Under `--runs auto`, a warm-up of at least this wall time counts as the first 4 KiB
/// run, seconds (assumed: what a warm-up is for, a cold page cache and dynamic loader, costs
/// milliseconds to a second of system time, under 1 % of such a run and inside the spread;
/// it saves one run of a long program).
pub const WARMUP_TIMED_ABOVE_S: f64 = 30.0;

/// What advise chose, and why (in the JSON as `plan`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    /// Rounds of native runs.
    pub rounds: usize,
    /// `"given"` (`--runs N`) or `"auto"`.
    pub rounds_from: &'static str,
    /// The warm-up run's wall time, seconds (what the plan is based on).
    pub warmup_wall_s: f64,
    /// The warm-up counts as the first round's 4 KiB run ([`WARMUP_TIMED_ABOVE_S`]).
    pub warmup_timed: bool,
    /// Rounds added under auto because the median was not yet resolved ([`another_round`];
    /// included in `rounds`).
    pub rounds_added: usize,
}

/// Under `--runs auto`, whether to run one more round after `done` rounds that took
/// `elapsed_s` of wall time (preparation included): the median is not `resolved`, fewer
/// than [`ROUNDS_MORE_MAX`] rounds ran, and one more round of the mean length so far
/// still ends within [`NATIVE_BUDGET_S`].
pub fn another_round(plan: &Plan, done: usize, elapsed_s: f64, resolved: bool) -> bool {
    if plan.rounds_from != "auto" || resolved || done < plan.rounds || done >= ROUNDS_MORE_MAX || done == 0 {
        return false;
    }
    elapsed_s + elapsed_s / done as f64 <= NATIVE_BUDGET_S
}

/// Rounds of native runs: `given`, or under auto as many as fit [`NATIVE_BUDGET_S`] at the
/// warm-up's wall time per run and `ways` runs per round, between [`ROUNDS_MIN`] and
/// [`ROUNDS_MAX`].
pub fn rounds(given: Option<usize>, warmup_wall_s: f64, ways: usize) -> Plan {
    let (rounds, from) = match given {
        Some(n) => (n, "given"),
        None => {
            let per_round = warmup_wall_s.max(0.0) * ways.max(1) as f64;
            let fit = if per_round > 0.0 {
                (NATIVE_BUDGET_S / per_round).floor()
            } else {
                f64::INFINITY
            };
            (fit.clamp(ROUNDS_MIN as f64, ROUNDS_MAX as f64) as usize, "auto")
        }
    };
    Plan {
        rounds,
        rounds_from: from,
        warmup_wall_s,
        warmup_timed: given.is_none() && warmup_wall_s >= WARMUP_TIMED_ABOVE_S,
        rounds_added: 0,
    }
}

/// The ptrace sampler's windows for a program of `native_user_s` user CPU seconds when
/// `--sample` is not given: the default window (10,000 steps) every `native_user_s /
/// TARGET_WINDOWS`, rounded to the millisecond and at least [`MIN_PERIOD_MS`], so that
/// every program of 0.5 s or more gets about [`TARGET_WINDOWS`] windows. The recording
/// costs about 120 × 10,000 × 25 µs = 30 s beside the native run whatever its length
/// (1.5× for a minute; 31× for a second). Not a time: the default 10k/100ms.
pub fn window_sampling(native_user_s: f64) -> WindowSampling {
    let d = WindowSampling::default();
    if !native_user_s.is_finite() || native_user_s < 0.0 {
        return d;
    }
    let ms = (native_user_s / TARGET_WINDOWS * 1e3).round() as u64;
    WindowSampling {
        window: d.window,
        period: Duration::from_millis(ms.clamp(MIN_PERIOD_MS, 3_600_000)),
    }
}

/// "about 3 min" / "about 40 s": a rough time left, for the progress line.
pub fn eta(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 1.0 {
        return String::new();
    }
    if seconds < 90.0 {
        format!(", about {:.0} s left", seconds)
    } else {
        format!(", about {:.0} min left", seconds / 60.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_rounds_fit_the_budget_between_two_and_five() {
        // A 1 s program, two ways: 120 s / 2 s = 60 rounds, capped at 5.
        assert_eq!(rounds(None, 1.0, 2).rounds, 5);
        // 20 s, two ways: 120 / 40 = 3 rounds.
        assert_eq!(rounds(None, 20.0, 2).rounds, 3);
        // 15 s, three ways: 120 / 45 = 2.67 → 2.
        assert_eq!(rounds(None, 15.0, 3).rounds, 2);
        // A minute, two ways: 120 / 120 = 1, but never fewer than 2 (a spread).
        assert_eq!(rounds(None, 60.0, 2).rounds, 2);
        // 12 s, two ways: exactly 5.
        assert_eq!(rounds(None, 12.0, 2).rounds, 5);
        // A program too short to time: the most rounds.
        assert_eq!(rounds(None, 0.0, 2).rounds, 5);
        // Given: kept whatever the time, and the warm-up is not timed.
        let p = rounds(Some(7), 60.0, 2);
        assert_eq!((p.rounds, p.rounds_from, p.warmup_timed), (7, "given", false));
        // Auto: a warm-up of 30 s or more is the first 4 KiB run; a shorter one is not.
        assert!(rounds(None, 30.0, 2).warmup_timed);
        assert!(!rounds(None, 29.9, 2).warmup_timed);
        assert_eq!(rounds(None, 60.0, 2).rounds_from, "auto");
    }

    #[test]
    fn rounds_are_added_while_unresolved_within_the_budget() {
        let auto = rounds(None, 2.5, 2);
        assert_eq!(auto.rounds, 5);
        // 5 rounds in 30 s, unresolved: a sixth (36 s ≤ 120).
        assert!(another_round(&auto, 5, 30.0, false));
        // Resolved: no more.
        assert!(!another_round(&auto, 5, 30.0, true));
        // 14 rounds in 84 s: the fifteenth ends at 90 s; after it, none (the cap).
        assert!(another_round(&auto, 14, 84.0, false));
        assert!(!another_round(&auto, 15, 90.0, false));
        // The budget: 9 rounds in 112.5 s, a tenth would end at 125 s.
        assert!(!another_round(&auto, 9, 112.5, false));
        // Before the planned rounds are done, the plan decides; --runs N is kept.
        assert!(!another_round(&auto, 3, 18.0, false));
        assert!(!another_round(&rounds(Some(5), 2.5, 2), 5, 30.0, false));
    }

    #[test]
    fn the_sampler_period_gives_every_program_of_a_second_at_least_100_windows() {
        // 1 s of user time: every 8 ms (1000 / 120 = 8.3), 125 windows.
        let s = window_sampling(1.0);
        assert_eq!((s.window, s.period), (10_000, Duration::from_millis(8)));
        assert!(1.0 / s.period.as_secs_f64() >= 100.0);
        // 3 s: 25 ms, 120 windows.
        assert_eq!(window_sampling(3.0).period, Duration::from_millis(25));
        // A minute: every 500 ms, 120 windows.
        assert_eq!(window_sampling(60.0).period, Duration::from_millis(500));
        // 25.0004 s rounds to 208 ms.
        assert_eq!(window_sampling(25.0004).period, Duration::from_millis(208));
        // A short program: one tick at least.
        assert_eq!(window_sampling(0.1).period, Duration::from_millis(MIN_PERIOD_MS));
        // Not a time: the default.
        assert_eq!(window_sampling(f64::NAN), WindowSampling::default());
    }

    #[test]
    fn the_time_left_reads_in_seconds_then_minutes() {
        assert_eq!(eta(0.4), "");
        assert_eq!(eta(40.2), ", about 40 s left");
        assert_eq!(eta(240.0), ", about 4 min left");
        assert_eq!(eta(f64::NAN), "");
    }
}
