//! Helpers for an FTL whose mapping is a page-level LPN → PPA table (the ideal FTL, FAST's log
//! pool, the translation table of demand-based FTLs, …): checking it against the device and
//! prefetching what a coming request will touch.

use crate::addr::{Lpn, Ppa};
use crate::device::Device;
use crate::request::{Op, Upcoming};

/// [`crate::ftl::Ftl::prefetch`] for a page-level map from LPN to PPA (`unmapped` for none): the entry
/// when the request comes later; when it comes next, the page a read will fetch or the state a
/// write's or trim's invalidation of the old page updates.
#[inline]
pub fn prefetch_page_map(
    dev: &Device,
    l2p: &[u32],
    unmapped: u32,
    op: Op,
    lpn: Lpn,
    when: Upcoming,
) {
    let Some(e) = l2p.get(lpn.idx()) else {
        return;
    };
    match when {
        Upcoming::Later => crate::host::prefetch(e),
        Upcoming::Next if *e == unmapped => {}
        Upcoming::Next if op == Op::Read => dev.prefetch_read(Ppa(*e)),
        // A write or trim invalidates the page it replaces.
        Upcoming::Next if matches!(op, Op::Write | Op::Trim) => dev.prefetch_invalidate(Ppa(*e)),
        Upcoming::Next => {}
    }
}

/// Checks a full LPN → PPA table against the device: each mapped LPN points at a valid page
/// whose OOB names it, and the device holds exactly as many valid data pages as there are mapped
/// LPNs (so no valid page is orphaned or mapped twice). `extra_valid` counts valid pages that are
/// not data (translation pages).
pub fn check_page_map(
    dev: &Device,
    map: impl Iterator<Item = (Lpn, Option<Ppa>)>,
    extra_valid: u64,
) -> Result<(), String> {
    let mut mapped = 0u64;
    for (lpn, ppa) in map {
        let Some(ppa) = ppa else { continue };
        mapped += 1;
        if !dev.is_valid(ppa) {
            return Err(format!("{lpn:?} maps to {ppa:?}, which is not valid"));
        }
        match dev.peek_oob(ppa).and_then(|o| o.lpn()) {
            Some(l) if l == lpn => {}
            other => return Err(format!("{lpn:?} maps to {ppa:?} whose OOB holds {other:?}")),
        }
    }
    let valid: u64 = dev.lines_valid().iter().map(|&v| v as u64).sum();
    if valid != mapped + extra_valid {
        return Err(format!(
            "{valid} valid pages on flash but {mapped} mapped LPNs and {extra_valid} other valid pages"
        ));
    }
    dev.check_consistency()
}
