//! The integration tests of `mmulab-record` as one test binary: each file beside this one is
//! a module. Run one file's tests with `cargo test --release -p mmulab-record --test it NAME::`.

mod ptrace_sample;
mod valgrind;

/// Held by every test that starts child processes: the ptrace tests check that no child of
/// this process is left (`waitpid(-1)`), which a Valgrind or compiler child of a test
/// running beside them would fail.
pub static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes [`ONE_AT_A_TIME`] (a test that panicked while holding it does not poison the rest).
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}
