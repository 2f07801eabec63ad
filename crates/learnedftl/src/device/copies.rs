//! Which trim records are still needed (docs/power.md, "Trim records"). A record matters only
//! while an LPN it trimmed is unmapped *and* an older copy of its data is still on flash, which
//! a recovery scan would otherwise bring back. The rule "until every LPN it trimmed is mapped
//! again" alone let records pile up under random trims until no line could be reclaimed (a
//! trim of an unmapped LPN added a record and freed nothing). So the device counts, per LPN,
//! the data pages on flash (valid or not) until their block is erased — simulator bookkeeping
//! standing for what a controller knows from block sequence numbers (a record older than every
//! block still holding data is dead), exact where that rule is conservative — and GC keeps a
//! record only while one of its LPNs is unmapped and has a page on flash
//! ([`Device::record_needed`]).
//!
//! Only trim records need the counts, so they are taken from flash at the first record (a scan
//! of every OOB) and kept from then on: a run without trims keeps no 2 B per LPN.

use super::{Device, Oob, TrimRecord};
use crate::addr::Lpn;

/// Data pages of each LPN on flash, saturating (a saturated count never drops: the records of
/// that LPN are then kept, which is safe); empty until the first trim.
#[derive(Clone, Debug, Default)]
pub(super) struct Copies {
    n: Vec<u16>,
}

impl Copies {
    /// Whether counts are kept (a trim came).
    pub(super) fn is_counting(&self) -> bool {
        !self.n.is_empty()
    }

    /// A data page of `lpn` was programmed.
    #[inline]
    pub(super) fn programmed(&mut self, lpn: Lpn) {
        if let Some(c) = self.n.get_mut(lpn.idx()) {
            *c = c.saturating_add(1);
        }
    }

    fn erased(&mut self, lpn: Lpn) {
        let c = &mut self.n[lpn.idx()];
        if *c != u16::MAX {
            *c -= 1;
        }
    }

    fn any(&self, mut lpns: std::ops::Range<u32>, also: impl Fn(u32) -> bool) -> bool {
        lpns.any(|l| self.n.get(l as usize).is_none_or(|&c| c > 0) && also(l))
    }
}

impl Device {
    /// Starts counting (from flash) unless already counting: a trim record is coming.
    pub(super) fn count_copies_from_now(&mut self) {
        if self.copies.n.is_empty() {
            self.copies = self.count_copies();
        }
    }

    /// Whether GC must keep the valid trim record `rec`: whether some LPN it trimmed is
    /// `unmapped` (as the FTL's mapping says) and still has a data page on flash.
    pub fn record_needed(&self, rec: TrimRecord, unmapped: impl Fn(u32) -> bool) -> bool {
        self.copies.any(rec.range(), unmapped)
    }

    /// Forgets the data pages of `block`, being erased.
    pub(super) fn erasing_copies(&mut self, block: u32) {
        if self.copies.n.is_empty() {
            return;
        }
        // Field by field: the counts change while the OOB is read.
        let oob = &self.oob[self.written(block)];
        for lpn in data_lpns(oob) {
            self.copies.erased(lpn);
        }
    }

    /// The counts against flash (none kept: nothing to check).
    pub fn check_copies(&self) -> Result<(), String> {
        if self.copies.n.is_empty() {
            return Ok(());
        }
        let truth = self.count_copies();
        match (0..self.copies.n.len()).find(|&i| self.copies.n[i] != truth.n[i]) {
            None => Ok(()),
            Some(i) => Err(format!(
                "LPN {i}: {} data pages counted on flash, {} there",
                self.copies.n[i], truth.n[i]
            )),
        }
    }

    fn count_copies(&self) -> Copies {
        let mut c = Copies {
            n: vec![0; self.geo.logical_pages as usize],
        };
        for block in 0..self.geo.blocks() {
            for lpn in data_lpns(&self.oob[self.written(block)]) {
                c.programmed(lpn);
            }
        }
        c
    }

    /// The indices of the pages programmed in `block`.
    fn written(&self, block: u32) -> std::ops::Range<usize> {
        let first = (block * self.geo.pages_per_block) as usize;
        first..first + self.blk_next[block as usize] as usize
    }
}

/// The LPN of every data page among `oob` (torn pages, TPs and records have none).
fn data_lpns(oob: &[Oob]) -> impl Iterator<Item = Lpn> + '_ {
    oob.iter().filter_map(|o| o.lpn())
}
