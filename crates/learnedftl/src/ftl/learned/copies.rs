//! Which trim records LearnedFTL still needs (docs/power.md, "Trim records"). A record is
//! needed while a trimmed LPN is unmapped *and* an older copy of its data is still on flash,
//! which a recovery scan would otherwise bring back. The shared rule ("until every LPN it
//! trimmed is mapped again") alone lets records pile up under random trims: LearnedFTL keeps
//! them on its translation lines, whose few lines they would fill. So the FTL counts, per LPN,
//! the data pages on flash (valid or not) until their line is erased — simulator bookkeeping
//! standing for what a controller knows from block sequence numbers (a record older than every
//! block still holding data is dead), exact where that rule is conservative. Only trim records
//! need the counts, so they are taken from flash at the first trim (a scan of every OOB) and
//! kept from then on: a run without trims keeps no 2 B per LPN.

use crate::addr::{Lpn, Ppa};
use crate::device::{Device, TrimRecord};
use crate::mapping::TransTable;

/// Data pages of each LPN on flash, saturating (a saturated count never drops: the records of
/// that LPN are then kept, which is safe); empty until [`Copies::start`].
#[derive(Clone, Debug, Default)]
pub struct Copies {
    n: Vec<u16>,
}

impl Copies {
    /// Counts from what `dev` holds, unless already counting (a trim is coming: its record
    /// will need them).
    pub fn start(&mut self, dev: &Device) {
        if self.n.is_empty() {
            *self = Copies::recount(dev);
        }
    }

    /// A data page of `lpn` was programmed.
    #[inline]
    pub fn programmed(&mut self, lpn: Lpn) {
        if let Some(c) = self.n.get_mut(lpn.idx()) {
            *c = c.saturating_add(1);
        }
    }

    /// The data pages of `line` are about to be erased.
    pub fn erasing(&mut self, dev: &Device, line: u32) {
        if self.n.is_empty() {
            return;
        }
        for lpn in line_lpns(dev, line) {
            let c = &mut self.n[lpn.idx()];
            if *c != u16::MAX {
                *c -= 1;
            }
        }
    }

    /// After a power cut: the counts from every programmed page.
    pub fn recount(dev: &Device) -> Copies {
        let mut c = Copies {
            n: vec![0; dev.geo().logical_pages as usize],
        };
        for line in 0..dev.geo().lines() {
            for lpn in line_lpns(dev, line) {
                c.programmed(lpn);
            }
        }
        c
    }

    /// Whether the trim record `rec` is still needed (see the module docs); always before
    /// [`Copies::start`] (no record can be on flash then, but keeping one is safe).
    pub fn needs_record(&self, table: &TransTable, rec: TrimRecord) -> bool {
        self.n.is_empty()
            || rec
                .range()
                .any(|l| self.n[l as usize] > 0 && table.get(Lpn(l)).is_none())
    }

    /// The counts against the device (none kept: nothing to check).
    pub fn check(&self, dev: &Device) -> Result<(), String> {
        if self.n.is_empty() {
            return Ok(());
        }
        let truth = Copies::recount(dev);
        match (0..self.n.len()).find(|&i| self.n[i] != truth.n[i]) {
            None => Ok(()),
            Some(i) => Err(format!(
                "LPN {i}: {} data pages counted on flash, {} there",
                self.n[i], truth.n[i]
            )),
        }
    }
}

/// The LPN of every data page programmed in `line` (torn pages, TPs and records excluded).
fn line_lpns(dev: &Device, line: u32) -> impl Iterator<Item = Lpn> + '_ {
    let geo = dev.geo();
    (0..geo.blocks_per_line()).flat_map(move |i| {
        let block = geo.block_in_line(line, i);
        (0..dev.block_written(block))
            .filter_map(move |pg| dev.peek_oob(Ppa(block * geo.pages_per_block + pg)))
            .filter_map(|o| o.lpn())
    })
}
