//! The translation table of a demand-based FTL: the contents of every translation page (the
//! truth of every mapping, SPEC §5.0), where each TP lives ([`Gtd`]), and the per-victim batch of
//! TP updates GC forces for moved pages whose entries are not cached (SPEC §5.2).
//!
//! The table keeps the *current* LPN → PPA of every page in simulator memory: the TPs' contents
//! with the FTL's dirty cache entries applied. That is sound because an FTL only changes a
//! mapping through its cache (the entry is then dirty and will be written back, at a cost) or
//! through a TP update it pays for (GC batch update); reading a mapping that is not in the
//! FTL's DRAM structures must pay [`TransTable::read_tp`] first.
//!
//! Writing a TP needs a page of the translation stream, which may run foreground GC, which calls
//! back into the FTL's [`GcHooks`]; [`write_tp`] does both for any FTL whose hooks own a table
//! ([`HasTable`]).

use super::alloc::{Allocator, Stream};
use super::gc::{self, GcHooks};
use super::gtd::Gtd;
use super::page_map::{check_page_map, prefetch_page_map};
use super::stats::FtlStats;
use crate::addr::{Lpn, Ppa, SimTime, Tpn};
use crate::config::Geometry;
use crate::device::{Cause, Device, Oob};
use crate::error::FtlError;
use crate::request::{Op, Upcoming};

const UNMAPPED: u32 = u32::MAX;

/// TP contents, the GTD and GC's pending TP updates.
#[derive(Clone, Debug)]
pub struct TransTable {
    l2p: Vec<u32>,
    /// Where each TP lives.
    pub gtd: Gtd,
    batch: Vec<u32>,
    batched: Vec<bool>,
}

impl TransTable {
    /// Every LPN unmapped, no TP written.
    pub fn new(geo: &Geometry) -> TransTable {
        TransTable {
            l2p: vec![UNMAPPED; geo.logical_pages as usize],
            gtd: Gtd::new(geo),
            batch: Vec::with_capacity(geo.pages_per_line() as usize),
            batched: vec![false; geo.tps() as usize],
        }
    }

    /// Logical pages.
    #[inline]
    pub fn logical_pages(&self) -> u32 {
        self.l2p.len() as u32
    }

    /// The current mapping of `lpn` (the caller has paid for knowing it).
    #[inline]
    pub fn get(&self, lpn: Lpn) -> Option<Ppa> {
        let p = self.l2p[lpn.idx()];
        (p != UNMAPPED).then_some(Ppa(p))
    }

    /// [`crate::ftl::Ftl::prefetch`] for the mapping of `lpn`.
    #[inline]
    pub fn prefetch(&self, dev: &Device, op: Op, lpn: Lpn, when: Upcoming) {
        prefetch_page_map(dev, &self.l2p, UNMAPPED, op, lpn, when);
    }

    /// [`crate::ftl::Ftl::prefetch`] for reading the TP mapping `lpn` (a request expected to
    /// miss the cache): its GTD entry, then the device state of the page it names.
    #[inline]
    pub fn prefetch_tp(&self, dev: &Device, lpn: Lpn, when: Upcoming) {
        // A hint for a request beyond the device (refused when served) hints nothing.
        if lpn.0 >= self.logical_pages() {
            return;
        }
        let tpn = self.gtd.tpn_of(lpn);
        match when {
            Upcoming::Later => self.gtd.prefetch(tpn),
            Upcoming::Next => {
                if let Some(ppa) = self.gtd.location(tpn) {
                    dev.prefetch_read(ppa);
                }
            }
        }
    }

    /// Hints `lpn`'s entry into cache ([`crate::host::prefetch()`]).
    #[inline]
    pub fn prefetch_entry(&self, lpn: Lpn) {
        crate::host::prefetch(&self.l2p[lpn.idx()]);
    }

    /// Sets the mapping of `lpn`; returns the old one (for the caller to invalidate).
    #[inline]
    pub fn set(&mut self, lpn: Lpn, ppa: Option<Ppa>) -> Option<Ppa> {
        let new = ppa.map_or(UNMAPPED, |p| p.0);
        let old = std::mem::replace(&mut self.l2p[lpn.idx()], new);
        (old != UNMAPPED).then_some(Ppa(old))
    }

    /// Reads the TP mapping `lpn` at `t` (free if that TP was never written); returns when its
    /// entries are known.
    #[inline]
    pub fn read_tp(
        &self,
        dev: &mut Device,
        lpn: Lpn,
        cause: Cause,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        self.gtd.read(dev, self.gtd.tpn_of(lpn), cause, t)
    }

    /// GC moved a page holding `oob` to `new`: a TP is relocated in the GTD (returns `None`); a
    /// data page's mapping is updated and its LPN returned, for the FTL to update its cache
    /// entry or [`TransTable::batch_update`] its TP.
    pub fn gc_moved(
        &mut self,
        dev: &mut Device,
        oob: Oob,
        new: Ppa,
    ) -> Result<Option<Lpn>, FtlError> {
        if let Some(tpn) = oob.tpn() {
            self.gtd.relocate(dev, tpn, new)?;
            return Ok(None);
        }
        let lpn = oob
            .lpn()
            .ok_or_else(|| FtlError::Invariant(format!("page with neither LPN nor TP: {oob:?}")))?;
        self.l2p[lpn.idx()] = new.0;
        Ok(Some(lpn))
    }

    /// Queues an update of `tpn` for the end of the current victim (once per TP per victim).
    #[inline]
    pub fn batch_update(&mut self, tpn: Tpn) {
        if !self.batched[tpn.idx()] {
            self.batched[tpn.idx()] = true;
            self.batch.push(tpn.0);
        }
    }

    /// TPs queued by [`TransTable::batch_update`].
    pub fn batched(&self) -> usize {
        self.batch.len()
    }

    /// Rewrites every queued TP (read + program, cause GC translation) at `t`, taking pages from
    /// the translation stream directly (GC's reserve lines cover them; no nested GC). Call from
    /// [`GcHooks::victim_moved`].
    pub fn flush_batch(
        &mut self,
        dev: &mut Device,
        alloc: &mut Allocator,
        t: SimTime,
    ) -> Result<(), FtlError> {
        for i in 0..self.batch.len() {
            let tpn = Tpn(self.batch[i]);
            self.batched[tpn.idx()] = false;
            let new = alloc.next_page(Stream::TRANS)?;
            self.gtd.rewrite(dev, tpn, new, Cause::GcTrans, t)?;
        }
        self.batch.clear();
        Ok(())
    }

    /// Every mapping, for invariant checks.
    pub fn iter(&self) -> impl Iterator<Item = (Lpn, Option<Ppa>)> + '_ {
        self.l2p
            .iter()
            .enumerate()
            .map(|(i, &p)| (Lpn(i as u32), (p != UNMAPPED).then_some(Ppa(p))))
    }

    /// Checks every mapping against the device and the GTD against the TPs on flash; no GC batch
    /// may be pending between requests.
    pub fn check(&self, dev: &Device) -> Result<(), String> {
        let tps = self.gtd.check(dev)?;
        if !self.batch.is_empty() {
            return Err(format!("{} GC TP updates pending", self.batch.len()));
        }
        check_page_map(dev, self.iter(), tps + dev.valid_records())
    }

    /// After a power cut (docs/power.md): every mapping from the recovery scan (which
    /// re-validated the data pages), the GTD pointing at each TP's newest copy (re-validated
    /// here), and the newest stamp on flash noted. Returns the **stale** TPs, for the caller to
    /// rewrite: a TP older than the newest write or trim of an LPN it maps (by the stamp in its
    /// OOB), or never written while it maps data.
    pub fn restore(
        &mut self,
        dev: &mut Device,
        scan: &super::recovery::Scan,
    ) -> Result<Vec<Tpn>, FtlError> {
        self.l2p.copy_from_slice(scan.page_map());
        let gtd = &mut self.gtd;
        let mut stale = Vec::new();
        for tpn in (0..gtd.tps()).map(Tpn) {
            let newest = gtd.lpns(tpn).map(|l| scan.stamp(Lpn(l))).max().unwrap_or(0);
            match scan.tp(tpn) {
                Some((ppa, stamp)) => {
                    dev.revalidate(ppa)?;
                    gtd.restore(tpn, ppa);
                    if newest > stamp {
                        stale.push(tpn);
                    }
                }
                None if gtd.lpns(tpn).any(|l| scan.mapped(Lpn(l)).is_some()) => stale.push(tpn),
                None => {}
            }
        }
        gtd.note_stamp(scan.max_stamp());
        Ok(stale)
    }
}

/// A TP to write back.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WriteBack {
    /// The translation page.
    pub tpn: Tpn,
    /// Whether the old TP must be read first (the cache held only some of its entries).
    pub read_first: bool,
}

/// GC hooks that own a [`TransTable`] (so [`write_tp`] can update its GTD).
pub trait HasTable: GcHooks {
    /// The table.
    fn table(&mut self) -> &mut TransTable;
}

/// Writes back TP `wb.tpn` at `t`: a page from the translation stream (running foreground GC
/// if needed), then, if `wb.read_first`, read-modify-write of the TP (the read is skipped if it was
/// never written; a cache that holds only some entries must merge them into the old TP), else a
/// plain program (a cache holding the whole TP). Both operations carry `cause`. Returns the
/// program's completion.
pub fn write_tp<H: HasTable>(
    dev: &mut Device,
    alloc: &mut Allocator,
    hooks: &mut H,
    stats: &mut FtlStats,
    wb: WriteBack,
    cause: Cause,
    t: SimTime,
) -> Result<SimTime, FtlError> {
    let new = gc::alloc_page(dev, alloc, Stream::TRANS, t, hooks, stats)?;
    let gtd = &mut hooks.table().gtd;
    if wb.read_first {
        gtd.rewrite(dev, wb.tpn, new, cause, t)
    } else {
        gtd.program(dev, wb.tpn, new, cause, t)
    }
}
