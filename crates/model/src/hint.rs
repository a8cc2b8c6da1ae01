//! Host-side performance hints: they change no simulated state and no result.

/// Asks the host CPU to bring the cache line holding `addr` into its first-level data
/// cache. Any address is allowed: a prefetch never faults and reads nothing the program
/// can observe, so a stale or dangling address only wastes the hint (the simulator's
/// walk memo may hold such addresses after a table is freed).
#[inline(always)]
pub fn prefetch(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is part of SSE (in the x86-64 baseline); it does not access
    // memory in the language's sense and never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(addr as *const i8, core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}
