//! The hybrid SLC cache (`slc_cache`, `slc_cache_dynamic`; docs/device.md "SLC cache"): host
//! data is programmed first in SLC mode (one bit per cell: a third of a TLC block's pages, at
//! `program_ns`), and folded into its multi-bit location later — when the LUN idles, or, with
//! `slc_when_full=fold`, when the cache is exhausted. A burst that outruns the cache falls off
//! the cliff: its pages are programmed at the multi-bit speed (`direct`), or wait for a fold
//! first (`fold`).
//!
//! The cache is a layer below the FTLs' address space, as the checkpoint area is: the FTL maps
//! each page to its final (multi-bit) PPA when it writes it; while the page's data sits in SLC,
//! reads of it take SLC's `read_ns`; folding reads the SLC copy and programs the final page
//! (cause `slc_fold`, in the WAF), costing its LUN the time. A page invalidated before it is
//! folded (overwritten, trimmed, moved by GC) dies in SLC and is never folded.

use crate::addr::Ppa;
use crate::config::{SlcCache, SlcWhenFull};
use serde::Serialize;
use std::collections::VecDeque;

/// What the SLC cache did since the last reset.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SlcCounters {
    /// Host page programs taken in SLC mode.
    pub cached: u64,
    /// Host page programs that found the cache full and went to the multi-bit cells.
    pub direct: u64,
    /// Pages folded from SLC into their multi-bit location.
    pub folded: u64,
    /// Of which folded to make room for a host program (`slc_when_full=fold`).
    pub folded_when_full: u64,
    /// Pages invalidated while in SLC: never folded.
    pub died_in_slc: u64,
    /// Page reads served from SLC.
    pub reads: u64,
}

/// The SLC cache's state.
#[derive(Clone, Debug)]
pub(super) struct Slc {
    cfg: SlcCache,
    /// Bits per cell of the multi-bit mode: a block in SLC mode holds this share of its pages.
    bits: u64,
    physical: u64,
    /// Per physical page, whether its data is in SLC.
    in_slc: Vec<u64>,
    /// Pages in SLC.
    used: u64,
    /// Valid pages on the device (the dynamic part shrinks as they grow).
    pub(super) valid: u64,
    /// Per LUN, the pages put in SLC, oldest first (stale ones skipped when folding).
    fifo: Vec<VecDeque<u32>>,
    counters: SlcCounters,
}

impl Slc {
    pub(super) fn new(cfg: &SlcCache, bits: u64, pages: u64, luns: usize) -> Slc {
        Slc {
            cfg: cfg.clone(),
            bits: bits.max(1),
            physical: pages,
            in_slc: vec![0; pages.div_ceil(64) as usize],
            used: 0,
            valid: 0,
            fifo: vec![VecDeque::new(); luns],
            counters: SlcCounters::default(),
        }
    }

    pub(super) fn counters(&self) -> SlcCounters {
        self.counters
    }

    pub(super) fn reset_counters(&mut self) {
        self.counters = SlcCounters::default();
    }

    /// Pages the cache holds now: its static part, plus with `slc_cache_dynamic` the pages
    /// holding no valid data beyond the static part's blocks, in SLC mode (a `bits`-th).
    pub(super) fn capacity(&self) -> u64 {
        let dynamic = if self.cfg.dynamic {
            let reserved = self.cfg.pages * self.bits;
            self.physical.saturating_sub(self.valid + reserved) / self.bits
        } else {
            0
        };
        self.cfg.pages + dynamic
    }

    /// Whether no page is in SLC.
    pub(super) fn is_empty(&self) -> bool {
        self.used == 0
    }

    /// Whether `ppa`'s data is in SLC.
    #[inline]
    pub(super) fn holds(&self, ppa: Ppa) -> bool {
        let i = ppa.idx();
        self.in_slc[i >> 6] >> (i & 63) & 1 == 1
    }

    /// A read of `ppa` served from SLC.
    pub(super) fn read(&mut self) {
        self.counters.reads += 1;
    }

    /// What to do with a host program of `ppa` on `lun`: `true` to take it in SLC (after a
    /// fold of the page [`Slc::fold_for_room`] names, with `slc_when_full=fold`), `false` to
    /// program it in its multi-bit cells.
    pub(super) fn admit(&mut self, ppa: Ppa, lun: usize) -> bool {
        if self.used >= self.capacity() {
            self.counters.direct += 1;
            return false;
        }
        let i = ppa.idx();
        self.in_slc[i >> 6] |= 1 << (i & 63);
        self.used += 1;
        self.fifo[lun].push_back(ppa.0);
        self.counters.cached += 1;
        true
    }

    /// Whether a host program must wait for a fold to make room (`slc_when_full=fold` and
    /// the cache full).
    pub(super) fn fold_first(&self) -> bool {
        self.cfg.when_full == SlcWhenFull::Fold && self.used >= self.capacity()
    }

    /// The oldest page of `lun` still in SLC (stale entries dropped), if any.
    pub(super) fn peek(&mut self, lun: usize) -> Option<Ppa> {
        while let Some(&p) = self.fifo[lun].front() {
            if self.holds(Ppa(p)) {
                return Some(Ppa(p));
            }
            self.fifo[lun].pop_front();
        }
        None
    }

    /// The page [`Slc::peek`] gave leaves SLC: folded (`valid`, counted, `for_room` if to make
    /// room for a host program), or dropped because it no longer holds valid data (after a
    /// power cut's recovery left it stale).
    pub(super) fn take(&mut self, lun: usize, ppa: Ppa, valid: bool, for_room: bool) {
        self.fifo[lun].pop_front();
        self.leave(ppa);
        match (valid, for_room) {
            (false, _) => self.counters.died_in_slc += 1,
            (true, true) => {
                self.counters.folded += 1;
                self.counters.folded_when_full += 1;
            }
            (true, false) => self.counters.folded += 1,
        }
    }

    /// `ppa` leaves SLC without a fold (invalidated): its data died there.
    #[inline]
    pub(super) fn invalidated(&mut self, ppa: Ppa) {
        self.valid = self.valid.saturating_sub(1);
        if self.holds(ppa) {
            self.leave(ppa);
            self.counters.died_in_slc += 1;
        }
    }

    fn leave(&mut self, ppa: Ppa) {
        let i = ppa.idx();
        self.in_slc[i >> 6] &= !(1 << (i & 63));
        self.used -= 1;
    }

    /// Heap bytes of this state.
    pub(super) fn state_bytes(&self) -> usize {
        self.in_slc.capacity() * 8 + self.fifo.iter().map(|f| f.capacity() * 4).sum::<usize>()
    }

    /// The power came back: validity is forgotten (recovery counts it again).
    pub(super) fn power_on(&mut self) {
        self.valid = 0;
    }
}

impl Slc {
    /// Saves which pages hold SLC-mode data and the order they are folded in (the device's
    /// state file, `state.rs`).
    pub(super) fn save(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        super::state::put_u64s(w, &self.in_slc)?;
        super::state::put_u64(w, self.used)?;
        self.fifo
            .iter()
            .try_for_each(|lun| super::state::put_u32s(w, lun.iter()))
    }

    /// Loads what [`Slc::save`] saved (on a device of the same geometry).
    pub(super) fn load(
        &mut self,
        r: &mut super::state::Reader<impl std::io::Read>,
    ) -> Result<(), crate::error::StateError> {
        r.fill("slc cache", &mut self.in_slc, super::state::Reader::u64)?;
        self.used = r.u64()?;
        for lun in &mut self.fifo {
            *lun = r.u32s("slc cache", self.physical as usize)?.into();
        }
        Ok(())
    }
}
