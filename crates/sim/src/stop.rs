//! Stopping: one process-wide flag every run loop checks once per batch (a signal
//! handler sets it), and the count of references every run has simulated (progress for
//! callers running several simulations at once).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Set by [`request_stop`]: every run loop of the process stops at its next batch.
static STOP: AtomicBool = AtomicBool::new(false);
/// References simulated by every run of the process, added once per batch.
pub(crate) static SIMULATED: AtomicU64 = AtomicU64::new(0);

/// Asks every run (`run`) in this process to stop before its next batch and return the
/// statistics of what it simulated, marked incomplete (`Stats::complete`). One atomic
/// store: a signal handler (Ctrl-C) may call it.
pub fn request_stop() {
    STOP.store(true, Ordering::Relaxed);
}

/// Withdraws a stop request, so that later runs go to their ends: for an embedder whose
/// process outlives an interrupted run (the Python package after a `KeyboardInterrupt`).
/// The CLI never calls it: a stopped command ends.
pub fn clear_stop() {
    STOP.store(false, Ordering::Relaxed);
}

/// True once [`request_stop`] was called.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// References simulated so far by every run (`run`) in this process (updated once per
/// batch): progress for callers that run several simulations at once.
pub fn references_simulated() -> u64 {
    SIMULATED.load(Ordering::Relaxed)
}
