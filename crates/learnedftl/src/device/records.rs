//! What the device keeps besides data pages: the contents of trim record pages (until their
//! block is erased) and the mapping checkpoint area that bounds recovery's scan.

use super::{Cause, Device, Oob, Power, Src};
use crate::addr::{Lpn, Ppa, SimTime};
use crate::error::DeviceError;

/// The contents of a trim record page: the LPNs one acknowledged trim request unmapped (its
/// stamp is in the page's OOB).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TrimRecord {
    /// First LPN.
    pub first: Lpn,
    /// LPNs trimmed.
    pub pages: u32,
}

impl TrimRecord {
    /// The LPNs as indices.
    pub fn range(&self) -> std::ops::Range<u32> {
        self.first.0..self.first.0 + self.pages
    }
}

impl Device {
    /// Programs a trim record page at `ppa` (the next free page of its block) holding `rec`,
    /// acknowledged with `stamp`: a page like any other, whose contents the device keeps in a
    /// side table until its block is erased. Returns completion.
    pub fn program_record(
        &mut self,
        ppa: Ppa,
        stamp: u32,
        rec: TrimRecord,
        cause: Cause,
        t: SimTime,
    ) -> Result<SimTime, DeviceError> {
        self.check(ppa)?;
        self.count_copies_from_now();
        // Inserted first so that program finds it; removed again if the program fails.
        let before = self.records.insert(ppa.0, rec);
        let done = self.program(ppa, Oob::record(stamp), Src::None, cause, t);
        if done.is_err() {
            match before {
                Some(r) => self.records.insert(ppa.0, r),
                None => self.records.remove(&ppa.0),
            };
        }
        done
    }

    /// Writes a mapping checkpoint of `pages` pages at `t` and, once every page is programmed,
    /// commits it: from then on recovery reads it and scans only pages programmed after it
    /// ([`Device::checkpoint_covers`]). The checkpoint area is outside the data blocks (as
    /// controllers keep metadata in reserved blocks): its programs take LUN time (one page per
    /// LUN in turn) and count under [`Cause::Checkpoint`], and its wear is not modelled. A cut
    /// during the writing leaves the previous checkpoint the committed one. Returns completion.
    pub fn checkpoint(&mut self, pages: u64, t: SimTime) -> Result<SimTime, DeviceError> {
        let mut done = t;
        for i in 0..pages {
            if self.power != Power::On && self.power_check(Cause::Checkpoint)? {
                self.counters.programs[Cause::Checkpoint as usize] += 1;
                return Err(DeviceError::PowerLost);
            }
            self.counters.programs[Cause::Checkpoint as usize] += 1;
            done = done.max(self.occupy_unordered(i, t, self.cfg.timing.program_ns));
        }
        self.ckpt_written.clear();
        self.ckpt_written.extend_from_slice(&self.blk_next);
        self.ckpt_pages = pages;
        Ok(done)
    }

    /// Reads the committed checkpoint at `t` (recovery; cause [`Cause::Recovery`]); returns
    /// the pages read and completion (none and `t` if no checkpoint was ever committed).
    pub fn read_checkpoint(&mut self, t: SimTime) -> Result<(u64, SimTime), DeviceError> {
        if self.power == Power::Lost {
            return Err(DeviceError::PowerLost);
        }
        let mut done = t;
        for i in 0..self.ckpt_pages {
            self.counters.reads[Cause::Recovery as usize] += 1;
            done = done.max(self.occupy_unordered(i, t, self.cfg.timing.read_ns));
        }
        Ok((self.ckpt_pages, done))
    }

    /// How many of `block`'s first pages the committed checkpoint covers: their mapping is in
    /// the checkpoint (and the translation pages it points at), so recovery need not read them.
    #[inline]
    pub fn checkpoint_covers(&self, block: u32) -> u32 {
        self.ckpt_written.get(block as usize).copied().unwrap_or(0)
    }

    /// Block `b` was erased: the committed checkpoint covers none of its pages.
    pub(super) fn forget_checkpointed(&mut self, b: usize) {
        if let Some(w) = self.ckpt_written.get_mut(b) {
            *w = 0;
        }
    }

    /// Pages of the committed checkpoint (0: none).
    pub fn checkpoint_pages(&self) -> u64 {
        self.ckpt_pages
    }

    /// Books the `i`th operation of a checkpoint-area access at `t` on LUN `i mod LUNs`;
    /// returns its completion. The channel model adds its transfer to the LUN's time.
    fn occupy_unordered(&mut self, i: u64, t: SimTime, array_ns: u64) -> SimTime {
        let lun = (i % self.lun_busy.len() as u64) as usize;
        self.occupy_lun(lun, t, array_ns + self.xfer_ns)
    }

    /// Books `dur` ns on `lun` from `t`, with no page or block order to follow (the
    /// checkpoint area, SLC folds); returns its completion.
    pub(super) fn occupy_lun(&mut self, lun: usize, t: SimTime, dur: u64) -> SimTime {
        let busy = &mut self.lun_busy[lun];
        if let Some(b) = self.backfill.as_mut() {
            return SimTime(b.book_unordered(lun, busy, t.0, dur));
        }
        *busy = t.0.max(*busy) + dur;
        SimTime(*busy)
    }

    /// Valid trim record pages (the valid pages that are neither data nor translation).
    pub fn valid_records(&self) -> u64 {
        self.records
            .keys()
            .filter(|&&p| self.is_valid(Ppa(p)))
            .count() as u64
    }

    /// The contents of the trim record at `ppa`, if a record page is programmed there.
    pub fn record(&self, ppa: Ppa) -> Option<TrimRecord> {
        self.records.get(&ppa.0).copied()
    }

    /// Programmed record pages must have contents: a new one's were inserted by
    /// [`Device::program_record`], a copy's come from its source page.
    pub(super) fn copy_record(&mut self, ppa: Ppa, src: Src) -> Result<(), DeviceError> {
        let rec = match src {
            Src::Page(from) => self.records.get(&from.0).copied(),
            _ => self.records.get(&ppa.0).copied(),
        };
        match rec {
            Some(r) => {
                self.records.insert(ppa.0, r);
                Ok(())
            }
            None => Err(DeviceError::RecordWithoutContents(ppa)),
        }
    }

    /// Forgets the record contents of a block being erased.
    pub(super) fn drop_records(&mut self, block: u32) {
        if self.records.is_empty() {
            return;
        }
        let ppb = self.geo.pages_per_block;
        let first = block * ppb;
        let gone: Vec<u32> = self
            .records
            .range(first..first + ppb)
            .map(|(&p, _)| p)
            .collect();
        for p in gone {
            self.records.remove(&p);
        }
    }
}
