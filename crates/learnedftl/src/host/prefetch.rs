//! A cache prefetch hint for loops whose next iterations' table entries are known ahead: the
//! simulator's large tables (one entry per page) miss the cache on random access, and issuing
//! the loads of later iterations early overlaps those misses instead of paying them one by one.

/// Asks the CPU to bring the cache line holding `x` closer. A hint only: it never faults and
/// changes no result (a no-op off x86-64).
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of the x86-64 baseline, and a prefetch of any address (here a valid
    // reference) neither faults nor writes.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
