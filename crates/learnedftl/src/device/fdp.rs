//! NVMe Flexible Data Placement in the device (`fdp_ruhs`; docs/fdp.md): which reclaim unit
//! each line is and whose data each page holds, the statistics per handle, and the events the
//! specification defines. The device records placement; the shared allocator decides it
//! (`mapping/alloc.rs`), so every FTL that writes through it places the same way.
//!
//! A reclaim unit is a line. Its owner is set by the first page placed in it after an erase
//! and cleared by its erase; like the controller's own reclaim unit table it survives a power
//! cut, which lets recovery give each line back to its handle.

use super::Oob;
use crate::addr::Ppa;
use crate::config::{FdpConfig, Geometry, RuhType};
use serde::Serialize;

/// Which unit a placed page went to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A reclaim unit of the handle the host wrote with.
    Host,
    /// A GC unit: the handle's own when persistently isolated, the shared one otherwise.
    Gc,
}

/// What a line is, as a reclaim unit.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RuOwner {
    /// Not placed since its erase (free, or written by the FTL for itself: translation pages).
    None,
    /// Handle `h`'s reclaim unit for host writes.
    Host(u8),
    /// Handle `h`'s own GC unit (persistently isolated handles).
    Gc(u8),
    /// The GC unit shared by every handle (initially isolated handles).
    SharedGc,
}

impl RuOwner {
    const NONE: u8 = u8::MAX;
    const SHARED: u8 = u8::MAX - 1;
    const GC: u8 = 0x80;

    fn encode(self) -> u8 {
        match self {
            RuOwner::None => Self::NONE,
            RuOwner::SharedGc => Self::SHARED,
            RuOwner::Host(h) => h,
            RuOwner::Gc(h) => Self::GC | h,
        }
    }

    fn decode(b: u8) -> RuOwner {
        match b {
            Self::NONE => RuOwner::None,
            Self::SHARED => RuOwner::SharedGc,
            b if b & Self::GC != 0 => RuOwner::Gc(b & !Self::GC),
            h => RuOwner::Host(h),
        }
    }

    /// The handle whose data alone it holds, if it is one handle's unit.
    pub fn handle(self) -> Option<u8> {
        match self {
            RuOwner::Host(h) | RuOwner::Gc(h) => Some(h),
            RuOwner::None | RuOwner::SharedGc => None,
        }
    }
}

/// One handle's counters (docs/metrics.md "fdp").
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HandleCounters {
    /// Host pages written with this handle.
    pub host_pages: u64,
    /// GC copies of this handle's data (wherever they went).
    pub gc_pages: u64,
    /// Reclaim units opened for this handle: its host units and, persistently isolated, its
    /// own GC units.
    pub rus: u64,
}

/// Device-wide FDP events (NVMe TP4146's FDP events log; docs/fdp.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FdpEvents {
    /// Reclaim units erased before they were fully written ("Reclaim Unit Not Fully
    /// Written"): the writer left them, or a power cut closed them.
    pub ru_not_fully_written: u64,
    /// Shared GC units that received the data of more than one handle (initially isolated:
    /// what isolation gives up; "Implicitly Modified Reclaim Unit").
    pub implicitly_modified: u64,
    /// Writes whose placement ID named no handle; they went to handle 0 ("Invalid Placement
    /// Identifier").
    pub invalid_pid: u64,
}

/// Counters since the last reset.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FdpCounters {
    /// By handle.
    pub handles: Vec<HandleCounters>,
    /// Events.
    pub events: FdpEvents,
}

/// The device's placement state.
#[derive(Clone, Debug)]
pub struct Fdp {
    cfg: FdpConfig,
    /// Per line, its [`RuOwner`], encoded.
    owner: Vec<u8>,
    /// Per line of the shared GC pool, the handle of its first page, or [`Fdp::MIXED`] once
    /// it holds data of several handles.
    first: Vec<u8>,
    /// Per physical page, the handle whose data it holds (meaningful for placed pages).
    handle: Vec<u8>,
    counters: FdpCounters,
}

impl Fdp {
    /// [`Fdp::first`]'s mark of a shared GC unit holding several handles' data.
    const MIXED: u8 = u8::MAX;

    /// No line placed yet.
    pub(super) fn new(cfg: &FdpConfig, geo: &Geometry) -> Fdp {
        Fdp {
            cfg: cfg.clone(),
            owner: vec![RuOwner::NONE; geo.lines() as usize],
            first: vec![0; geo.lines() as usize],
            handle: vec![0; geo.pages() as usize],
            counters: FdpCounters {
                handles: vec![HandleCounters::default(); cfg.ruhs as usize],
                events: FdpEvents::default(),
            },
        }
    }

    /// Counters since the last reset.
    pub fn counters(&self) -> &FdpCounters {
        &self.counters
    }

    pub(super) fn reset_counters(&mut self) {
        for h in &mut self.counters.handles {
            *h = HandleCounters::default();
        }
        self.counters.events = FdpEvents::default();
    }

    /// What line `line` is.
    #[inline]
    pub fn owner(&self, line: u32) -> RuOwner {
        RuOwner::decode(self.owner[line as usize])
    }

    /// The handle whose data page `ppa` holds (0 for a page never placed).
    #[inline]
    pub fn handle(&self, ppa: Ppa) -> u8 {
        self.handle[ppa.idx()]
    }

    /// Records that `ppa`, just programmed in line `line`, holds handle `h`'s data, placed in
    /// a `unit`.
    #[inline]
    pub(super) fn place(&mut self, ppa: Ppa, line: u32, unit: Unit, h: u8) {
        let l = line as usize;
        if self.owner[l] == RuOwner::NONE {
            let owner = match (unit, self.cfg.ruh_type(h)) {
                (Unit::Host, _) => RuOwner::Host(h),
                (Unit::Gc, RuhType::Persistently) => RuOwner::Gc(h),
                (Unit::Gc, RuhType::Initially) => RuOwner::SharedGc,
            };
            self.owner[l] = owner.encode();
            self.first[l] = h;
            if let Some(o) = owner.handle() {
                self.counters.handles[o as usize].rus += 1;
            }
        } else if self.owner[l] == RuOwner::SHARED
            && self.first[l] != h
            && self.first[l] != Self::MIXED
        {
            self.first[l] = Self::MIXED;
            self.counters.events.implicitly_modified += 1;
        }
        self.handle[ppa.idx()] = h;
        let c = &mut self.counters.handles[h as usize];
        match unit {
            Unit::Host => c.host_pages += 1,
            Unit::Gc => c.gc_pages += 1,
        }
    }

    /// Counts a write whose placement ID named no handle.
    pub(super) fn invalid_pid(&mut self) {
        self.counters.events.invalid_pid += 1;
    }

    /// Block `block` is being erased (`blk_next`: every block's write pointer): its line is no
    /// reclaim unit any more (counted as not fully written if any of its blocks is not).
    pub(super) fn erasing(&mut self, geo: &Geometry, block: u32, blk_next: &[u32]) {
        let line = geo.line_of_block(block);
        let l = line as usize;
        if self.owner[l] == RuOwner::NONE {
            return;
        }
        let ppb = geo.pages_per_block;
        let full = (0..geo.blocks_per_line())
            .all(|i| blk_next[geo.block_in_line(line, i) as usize] == ppb);
        self.counters.events.ru_not_fully_written += !full as u64;
        self.owner[l] = RuOwner::NONE;
    }

    /// Checks placement (docs/fdp.md): every data page on flash was placed, in a line that is
    /// a reclaim unit; a handle's unit (host, or its own GC unit) holds only that handle's
    /// data; and no shared GC unit holds a persistently isolated handle's data. `oob` and
    /// `blk_next` are the device's OOB and write pointers.
    pub(super) fn check(
        &self,
        geo: &Geometry,
        oob: &[Oob],
        blk_next: &[u32],
    ) -> Result<(), String> {
        let ppb = geo.pages_per_block;
        for line in 0..geo.lines() {
            let owner = self.owner(line);
            for i in 0..geo.blocks_per_line() {
                let b = geo.block_in_line(line, i);
                for pg in 0..blk_next[b as usize] {
                    let ppa = Ppa(b * ppb + pg);
                    let Some(lpn) = oob[ppa.idx()].lpn() else {
                        continue;
                    };
                    let h = self.handle(ppa);
                    match owner {
                        RuOwner::None => {
                            return Err(format!(
                                "{ppa:?} holds data ({lpn:?}) in line {line}, which no write \
                                 placed as a reclaim unit"
                            ))
                        }
                        RuOwner::Host(o) | RuOwner::Gc(o) if o != h => {
                            return Err(format!(
                                "{ppa:?} holds handle {h}'s data ({lpn:?}) in line {line}, \
                                 a reclaim unit of handle {o} ({owner:?})"
                            ))
                        }
                        RuOwner::SharedGc if self.cfg.persistent(h) => {
                            return Err(format!(
                                "{ppa:?} holds persistently isolated handle {h}'s data \
                                 ({lpn:?}) in line {line}, a shared GC unit"
                            ))
                        }
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }

    /// Heap bytes.
    pub(super) fn state_bytes(&self) -> usize {
        self.owner.capacity() + self.first.capacity() + self.handle.capacity()
    }
}

impl Fdp {
    /// Saves which handle owns each line and placed each page (the device's state file,
    /// `state.rs`): recovery gives units back to their handles from it.
    pub(super) fn save(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        super::state::put_u8s(w, &self.owner)?;
        super::state::put_u8s(w, &self.first)?;
        super::state::put_u8s(w, &self.handle)
    }

    /// Loads what [`Fdp::save`] saved (on a device of the same geometry and handles).
    pub(super) fn load(
        &mut self,
        r: &mut super::state::Reader<impl std::io::Read>,
    ) -> Result<(), crate::error::StateError> {
        type R<T> = super::state::Reader<T>;
        r.fill("fdp line owners", &mut self.owner, R::u8)?;
        r.fill("fdp first handles", &mut self.first, R::u8)?;
        r.fill("fdp page handles", &mut self.handle, R::u8)
    }
}
