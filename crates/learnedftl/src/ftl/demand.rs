//! The request path shared by the demand-based page-level FTLs (DFTL, TPFTL, SFTL; SPEC
//! §5.0, §5.2–5.4): translation pages on flash, a mapping cache in DRAM, and what a miss, a
//! write, an eviction and GC cost. Each scheme supplies only its cache, through [`Cmt`]; this
//! module is the one place where flash operations are issued for all three, so their costs are
//! charged identically.
//!
//! Per host page:
//! * **Lookup** in the cache. A hit costs nothing (but waits for the entry's TP read if that is
//!   still in flight). A miss makes room first (each dirty eviction pays its TP write-back:
//!   read + program, or a program alone when the cache held the whole TP), then reads the TP
//!   (cause `translation_read`; free if the TP was never written) and loads what the scheme
//!   loads from it.
//! * **Read**: the data read starts when the mapping is known: single read on a hit, double on a
//!   miss. An unmapped LPN reads nothing more.
//! * **Write / trim**: the same lookup (a miss reads the TP to learn the old PPA, but the data
//!   program does not wait for it); the page is programmed, the old one invalidated, and the
//!   cached entry marked dirty.
//! * **GC**: a moved data page whose mapping is cached updates the cache (dirty); the others'
//!   TPs are read and re-programmed once per victim (cause `gc_translation`). Translation lines
//!   are collected like data lines; moved TPs update the GTD.
//!
//! Internal work (write-back, GC) is issued at the request's arrival and delays later requests
//! through the LUN timelines; a request completes when its own reads or programs do.

use super::{DramUsage, Ftl, ReadSink, Served};
use crate::addr::{Lpn, Ppa, SimTime};
use crate::config::DeviceConfig;
use crate::device::{Cause, Device, Oob, Src, Unit};
use crate::error::{ConfigError, FtlError};
use crate::mapping::keyed::SlotIndex;
use crate::mapping::{
    gc, persist_trim, recovery, write_tp, Allocator, Budget, FtlStats, GcHooks, GcPolicy, HasTable,
    Lookup, Stream, TransTable, WriteBack,
};
use crate::params::Params;
use crate::request::{Op, Request, Upcoming};
use std::ops::Range;

/// A demand-based FTL's mapping cache. The cache tracks what is cached and dirty; the current
/// mappings live in the [`TransTable`] the methods receive.
pub trait Cmt: Send + Clone + 'static {
    /// Looks `lpn` up for use (updating recency).
    fn lookup(&mut self, lpn: Lpn) -> Lookup;
    /// The LPNs (all in `lpn`'s TP) a miss of `lpn` in a request ending at `req_last` loads.
    fn load_range(&self, lpn: Lpn, req_last: Lpn) -> Range<u32>;
    /// Evicts one unit if loading `range` would not fit and says what it evicted; the driver
    /// pays each write-back and calls again until [`Evict::Fits`].
    fn evict_for(&mut self, range: &Range<u32>, table: &TransTable) -> Evict;
    /// Loads `range` after a TP read completing at `ready`; `lpn` is the one asked for.
    fn load(&mut self, lpn: Lpn, range: Range<u32>, ready: SimTime, table: &TransTable);
    /// Hints the state a lookup or [`Cmt::gc_update`] of `lpn` will read into cache. Default:
    /// nothing.
    fn prefetch(&self, lpn: Lpn) {
        let _ = lpn;
    }
    /// Hints what a lookup of `lpn` rewrites (its neighbours in recency order), for a request
    /// served next whose [`Cmt::prefetch`] came a while ago. Default: nothing.
    fn prefetch_touch(&self, lpn: Lpn) {
        let _ = lpn;
    }
    /// `lpn` (cached) was written or trimmed; its new mapping is already in `table`, `old` is
    /// the one it replaced.
    fn mark_dirty(&mut self, lpn: Lpn, old: Option<Ppa>, table: &TransTable);
    /// GC moved `lpn`'s data from `old` (new mapping in `table`): update the cache if it holds
    /// the mapping and return `true`; `false` makes the caller batch a TP update.
    fn gc_update(&mut self, lpn: Lpn, old: Ppa, table: &TransTable) -> bool;
    /// Idle write-back (SPEC §3.5, settled device): marks every dirty entry of one TP clean,
    /// keeping it cached, and returns that TP's write-back (one program cleans all of them:
    /// the TP is written with every current mapping); `None` when nothing is dirty.
    fn flush_one(&mut self, table: &TransTable) -> Option<WriteBack>;
    /// Evicts one unit if the cache is over its capacity (a cache whose units grow, like SFTL's
    /// compressed TPs, after a write or GC); the others never are.
    fn shrink(&mut self, _table: &TransTable) -> Evict {
        Evict::Fits
    }
    /// The table was rebuilt wholesale after a power cut (the cache is empty, as built):
    /// recompute whatever the cache derives from every mapping. The default: nothing.
    fn restored(&mut self, _table: &TransTable) {}
    /// Appends DRAM in use by part (the driver adds the GTD).
    fn dram_parts(&self, parts: &mut Vec<(&'static str, u64)>);
    /// Bytes in use.
    fn bytes(&self) -> u64;
    /// The cache's invariants against the table.
    fn check(&self, table: &TransTable) -> Result<(), String>;
    /// Parameters for the report.
    fn params(&self) -> serde_json::Value;
    /// Counters for the report.
    fn counters(&self) -> serde_json::Value;
    /// Zeroes the counters.
    fn reset_stats(&mut self);
}

/// What one eviction step did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Evict {
    /// Nothing to evict: the load fits (or the cache is within capacity).
    Fits,
    /// A clean unit was dropped.
    Clean,
    /// A dirty unit was dropped; its TP must be written back.
    Dirty(WriteBack),
}

/// Counters of the shared path (SPEC §6), on top of [`FtlStats`] and the device's counters.
#[derive(Clone, Debug, Default, serde::Serialize)]
struct DemandStats {
    /// TP reads on cache misses (reads + writes; unwritten TPs excluded).
    miss_tp_reads: u64,
    /// Misses whose TP was never written (no read needed).
    miss_unwritten_tp: u64,
    /// Host page reads that hit an entry whose TP read was still in flight.
    hits_waiting: u64,
    /// Host page writes and trims whose mapping was cached.
    write_hits: u64,
    /// Host page writes and trims that missed.
    write_misses: u64,
    /// Evictions that needed a TP write-back.
    write_backs: u64,
    /// Clean evictions.
    clean_evictions: u64,
    /// TP write-backs while the device was idle (settle), each cleaning a TP's dirty entries.
    idle_write_backs: u64,
    /// TPs re-programmed by GC for moved pages whose mapping was not cached.
    gc_tp_updates: u64,
    /// Moved data pages whose cached entry GC updated.
    gc_cached_updates: u64,
}

/// The table and the cache: what GC's hooks update.
#[derive(Clone)]
struct Core<C> {
    table: TransTable,
    cache: C,
    stats: DemandStats,
}

impl<C: Cmt> GcHooks for Core<C> {
    #[inline]
    fn prefetch_moved(&self, oob: Oob) {
        if let Some(lpn) = oob.lpn() {
            self.table.prefetch_entry(lpn);
            self.cache.prefetch(lpn);
        }
    }

    #[inline]
    fn moved(
        &mut self,
        dev: &mut Device,
        _: &mut Allocator,
        oob: Oob,
        old: Ppa,
        new: Ppa,
        _: SimTime,
    ) -> Result<(), FtlError> {
        if let Some(lpn) = self.table.gc_moved(dev, oob, new)? {
            if self.cache.gc_update(lpn, old, &self.table) {
                self.stats.gc_cached_updates += 1;
            } else {
                self.table.batch_update(self.table.gtd.tpn_of(lpn));
            }
        }
        Ok(())
    }

    fn pending_tp_pages(&self) -> u32 {
        self.table.batched() as u32
    }

    /// One TP per moved page at most, and no more than there are TPs.
    fn tp_pages_bound(&self, valid: u32) -> u32 {
        valid.min(self.table.gtd.tps())
    }

    fn victim_moved(
        &mut self,
        dev: &mut Device,
        alloc: &mut Allocator,
        t: SimTime,
    ) -> Result<(), FtlError> {
        self.stats.gc_tp_updates += self.table.batched() as u64;
        self.table.flush_batch(dev, alloc, t)
    }

    fn unmapped(&self, lpn: u32) -> bool {
        self.table.get(Lpn(lpn)).is_none()
    }
}

impl<C: Cmt> HasTable for Core<C> {
    fn table(&mut self) -> &mut TransTable {
        &mut self.table
    }
}

/// A demand-based page-level FTL with cache `C`.
#[derive(Clone)]
pub struct Demand<C> {
    name: &'static str,
    core: Core<C>,
    alloc: Allocator,
    budget: Budget,
    stats: FtlStats,
}

/// How a page's mapping became known.
struct Translated {
    /// When the mapping is known.
    ready: SimTime,
    /// Whether it came from the cache.
    hit: bool,
    /// Translation flash reads it cost (0 or 1).
    tp_reads: usize,
}

impl<C: Cmt> Demand<C> {
    /// The GC policy and the DRAM budget (`cmt_ratio`, default 3 %, or `mapping_dram_bytes`;
    /// the GTD counts inside) from `params`; `make` builds the cache from its byte budget.
    pub fn build(
        name: &'static str,
        dev: &DeviceConfig,
        params: &mut Params,
        min_cache: u64,
        make: impl FnOnce(u64, &mut Params) -> Result<C, ConfigError>,
    ) -> Result<Self, ConfigError> {
        let geo = &dev.geometry;
        // A victim may hold data and translation pages: its moves may open a line on each stream.
        let policy = GcPolicy::from_params(geo, params, 2)?;
        let table = TransTable::new(geo);
        let budget = Budget::from_params(geo, params, 0.03, table.gtd.dram_bytes(), min_cache)?;
        let cache = make(budget.cache, params)?;
        Ok(Demand {
            name,
            core: Core {
                table,
                cache,
                stats: DemandStats::default(),
            },
            alloc: Allocator::new(geo, 2, policy).with_fdp(&dev.fdp),
            budget,
            stats: FtlStats::default(),
        })
    }

    /// Rebuilds this freshly built FTL's state from flash after a power cut (docs/power.md),
    /// recovery issued at `t`: the scan's newest page of every LPN is its mapping (valid
    /// again), the newest copy of every TP is where the GTD points, the cache starts empty; a
    /// TP older than the newest write or trim of an LPN it maps (by the stamp in its OOB), or
    /// missing while it maps data, is rewritten in full (cause `recovery`), so that the
    /// persisted mapping matches flash again. Returns the FTL and when recovery completes.
    pub fn recover(mut self, dev: &mut Device, t: SimTime) -> Result<(Self, SimTime), FtlError> {
        let scan = recovery::scan(dev, t)?;
        scan.revalidate(dev)?;
        let stale = self.core.table.restore(dev, &scan)?;
        self.core.cache.restored(&self.core.table);
        let policy = self.alloc.policy.clone();
        self.alloc = Allocator::recovered(dev.geo(), 2, policy, dev, |oob| {
            if oob.tpn().is_some() {
                Stream::TRANS
            } else {
                Stream::DATA
            }
        });
        let mut done = scan.done;
        done = done.max(gc::finish_interrupted(
            dev,
            &mut self.alloc,
            t,
            &mut self.core,
            &mut self.stats,
        )?);
        for tpn in stale {
            // The scan gave every entry: a plain program, no read-modify-write.
            let wb = WriteBack {
                tpn,
                read_first: false,
            };
            done = done.max(self.program_tp_as(dev, wb, Cause::Recovery, t)?);
        }
        Ok((self, done))
    }

    fn write_back(&mut self, dev: &mut Device, e: Evict, t: SimTime) -> Result<(), FtlError> {
        match e {
            Evict::Fits => {}
            Evict::Clean => self.core.stats.clean_evictions += 1,
            Evict::Dirty(wb) => {
                self.core.stats.write_backs += 1;
                self.program_tp(dev, wb, t)?;
            }
        }
        Ok(())
    }

    /// Pays a TP write-back issued at `t` (an eviction's or an idle one); returns when its
    /// program completes.
    fn program_tp(
        &mut self,
        dev: &mut Device,
        wb: WriteBack,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        self.program_tp_as(dev, wb, Cause::TransWrite, t)
    }

    /// [`Demand::program_tp`] with operations of `cause`.
    fn program_tp_as(
        &mut self,
        dev: &mut Device,
        wb: WriteBack,
        cause: Cause,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        write_tp(
            dev,
            &mut self.alloc,
            &mut self.core,
            &mut self.stats,
            wb,
            cause,
            t,
        )
    }

    /// Makes `lpn`'s mapping usable: a cache hit, or a miss that evicts, reads the TP and loads.
    #[inline]
    fn translate(
        &mut self,
        dev: &mut Device,
        lpn: Lpn,
        req_last: Lpn,
        t: SimTime,
    ) -> Result<Translated, FtlError> {
        // The request's later pages: their cache state is a miss of its own each (a hashed
        // index scatters consecutive LPNs).
        if lpn.0 + SlotIndex::AHEAD <= req_last.0 {
            self.core.cache.prefetch(Lpn(lpn.0 + SlotIndex::AHEAD));
        }
        if let Lookup::Hit { ready } = self.core.cache.lookup(lpn) {
            return Ok(Translated {
                ready: ready.max(t),
                hit: true,
                tp_reads: 0,
            });
        }
        let range = self.core.cache.load_range(lpn, req_last);
        loop {
            let e = self.core.cache.evict_for(&range, &self.core.table);
            if e == Evict::Fits {
                break;
            }
            self.write_back(dev, e, t)?;
        }
        let tp_reads = self
            .core
            .table
            .gtd
            .location(self.core.table.gtd.tpn_of(lpn))
            .is_some() as usize;
        if tp_reads == 1 {
            self.core.stats.miss_tp_reads += 1;
        } else {
            self.core.stats.miss_unwritten_tp += 1;
        }
        let ready = self.core.table.read_tp(dev, lpn, Cause::TransRead, t)?;
        self.core.cache.load(lpn, range, ready, &self.core.table);
        Ok(Translated {
            ready,
            hit: false,
            tp_reads,
        })
    }

    /// Evicts while a growing cache is over capacity.
    fn shrink(&mut self, dev: &mut Device, t: SimTime) -> Result<(), FtlError> {
        loop {
            let e = self.core.cache.shrink(&self.core.table);
            if e == Evict::Fits {
                return Ok(());
            }
            self.write_back(dev, e, t)?;
        }
    }

    fn read(
        &mut self,
        dev: &mut Device,
        req: &Request,
        sink: &mut dyn ReadSink,
    ) -> Result<SimTime, FtlError> {
        let (t, last) = (req.arrival, req.last_lpn());
        let mut done = t;
        for lpn in req.lpns() {
            let tr = self.translate(dev, lpn, last, t)?;
            if tr.hit {
                self.stats.cmt_hits += 1;
                self.core.stats.hits_waiting += (tr.ready > t) as u64;
            }
            let Some(ppa) = self.core.table.get(lpn) else {
                self.stats.lookup(tr.tp_reads);
                sink.deliver(dev, lpn, Served::Unmapped);
                done = done.max(tr.ready);
                continue;
            };
            let (oob, d) = dev.read(ppa, Cause::User, tr.ready)?;
            self.stats.lookup(tr.tp_reads + 1);
            sink.deliver(dev, lpn, Served::Flash { ppa, oob });
            done = done.max(d);
        }
        Ok(done)
    }

    fn update(&mut self, dev: &mut Device, req: &Request) -> Result<SimTime, FtlError> {
        let (t, last) = (req.arrival, req.last_lpn());
        let mut done = t;
        self.core.table.gtd.note_stamp(req.stamp);
        if req.op == Op::Trim {
            done = persist_trim(
                dev,
                &mut self.alloc,
                Stream::DATA,
                &mut self.core,
                &mut self.stats,
                req,
            )?;
        }
        let (stream, handle) = self.alloc.host_stream(dev, req.placement);
        for lpn in req.lpns() {
            let tr = self.translate(dev, lpn, last, t)?;
            if tr.hit {
                self.core.stats.write_hits += 1;
            } else {
                self.core.stats.write_misses += 1;
            }
            let new = if req.op == Op::Write {
                let ppa = gc::alloc_page(
                    dev,
                    &mut self.alloc,
                    stream,
                    t,
                    &mut self.core,
                    &mut self.stats,
                )?;
                let oob = Oob::data(lpn, req.stamp);
                done = done.max(dev.program(ppa, oob, Src::Host, Cause::User, t)?);
                dev.place(ppa, Unit::Host, handle);
                Some(ppa)
            } else {
                None
            };
            let old = self.core.table.set(lpn, new);
            if let Some(old) = old {
                dev.invalidate(old)?;
            }
            self.core.cache.mark_dirty(lpn, old, &self.core.table);
        }
        Ok(done)
    }
}

impl<C: Cmt> Ftl for Demand<C> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn submit(
        &mut self,
        dev: &mut Device,
        req: &Request,
        sink: &mut dyn ReadSink,
    ) -> Result<SimTime, FtlError> {
        let done = match req.op {
            Op::Read => self.read(dev, req, sink)?,
            Op::Write | Op::Trim => self.update(dev, req)?,
            Op::Flush => req.arrival,
        };
        self.shrink(dev, req.arrival)?;
        Ok(done)
    }

    fn prefetch(&self, dev: &Device, op: Op, lpn: Lpn, when: Upcoming) {
        // The cache lookup comes first: its state is a miss of its own (hashed by LPN). Hinted
        // again when next: a hint a round of jobs ahead is still cached then, but its page
        // translation may not be.
        self.core.cache.prefetch(lpn);
        if when == Upcoming::Next {
            self.core.cache.prefetch_touch(lpn);
        }
        self.core.table.prefetch(dev, op, lpn, when);
        self.core.table.prefetch_tp(dev, lpn, when);
    }

    fn background(&mut self, dev: &mut Device, now: SimTime) -> Result<(), FtlError> {
        gc::background(dev, &mut self.alloc, now, &mut self.core, &mut self.stats)?;
        self.shrink(dev, now)
    }

    fn idle(&mut self, dev: &mut Device, now: SimTime) -> Result<Option<SimTime>, FtlError> {
        // Background GC first: its moves dirty cached entries, which the write-backs then
        // clean.
        if let Some(done) =
            gc::background_one(dev, &mut self.alloc, now, &mut self.core, &mut self.stats)?
        {
            self.shrink(dev, now)?;
            return Ok(Some(done));
        }
        let Some(wb) = self.core.cache.flush_one(&self.core.table) else {
            return Ok(None);
        };
        self.core.stats.idle_write_backs += 1;
        self.program_tp(dev, wb, now).map(Some)
    }

    fn stats(&self) -> &FtlStats {
        &self.stats
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
        self.core.stats = DemandStats::default();
        self.core.cache.reset_stats();
    }

    fn dram(&self) -> DramUsage {
        let mut parts = Vec::with_capacity(3);
        self.core.cache.dram_parts(&mut parts);
        parts.push(("gtd", self.core.table.gtd.dram_bytes()));
        DramUsage {
            parts,
            budget: Some(self.budget.total),
        }
    }

    fn dram_total(&self) -> u64 {
        self.core.cache.bytes() + self.core.table.gtd.dram_bytes()
    }

    fn params(&self) -> serde_json::Value {
        serde_json::json!({
            "gc": self.alloc.policy,
            "budget": self.budget,
            "cache": self.core.cache.params(),
        })
    }

    fn extra_counters(&self) -> serde_json::Value {
        serde_json::json!({
            "translation": self.core.stats,
            "cache": self.core.cache.counters(),
        })
    }

    fn check_invariants(&self, dev: &Device) -> Result<(), String> {
        self.core.table.check(dev)?;
        self.core.cache.check(&self.core.table)?;
        let total = self.dram_total();
        if total > self.budget.total {
            return Err(format!(
                "mapping DRAM {total} B over the budget of {} B",
                self.budget.total
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! Exact flash-operation counts of scripted scenarios on `tiny` (TPs of 512 entries; the
    //! GTD takes 240 B, so `mapping_dram_bytes=256` leaves a 2-entry cache, `272` four).
    use super::*;
    use crate::device::FlashCounters;
    use crate::ftl::{dftl, tpftl, NullSink};
    use crate::DeviceConfig;

    const R: usize = 0;
    const W: usize = 1;

    /// `(reads or programs, cause, count)` expected since `before`; everything else zero.
    fn expect(dev: &Device, before: &FlashCounters, want: &[(usize, Cause, u64)]) {
        let c = dev.counters();
        for cause in Cause::ALL {
            for (kind, now, was) in [
                (R, c.reads[cause as usize], before.reads[cause as usize]),
                (
                    W,
                    c.programs[cause as usize],
                    before.programs[cause as usize],
                ),
            ] {
                let n = want
                    .iter()
                    .filter(|w| w.0 == kind && w.1 == cause)
                    .map(|w| w.2)
                    .sum::<u64>();
                let what = if kind == R { "reads" } else { "programs" };
                assert_eq!(now - was, n, "{what} of cause {}", cause.key());
            }
        }
    }

    struct Script<C> {
        dev: Device,
        ftl: Demand<C>,
        t: u64,
        stamp: u32,
    }

    impl<C: Cmt> Script<C> {
        fn new(
            build: fn(&DeviceConfig, &mut Params) -> Result<Demand<C>, ConfigError>,
            kv: &str,
        ) -> Self {
            let cfg = DeviceConfig::preset("tiny").unwrap();
            let mut p = Params::new();
            p.insert_assignment(kv, "test").unwrap();
            let ftl = build(&cfg, &mut p).unwrap();
            p.finish().unwrap();
            Script {
                dev: Device::new(&cfg),
                ftl,
                t: 0,
                stamp: 0,
            }
        }

        /// Runs one request (10 ms after the last, so timelines are idle) and checks the flash
        /// operations it caused.
        fn run(&mut self, op: Op, lpn: u32, pages: u32, want: &[(usize, Cause, u64)]) {
            let before = self.dev.counters().clone();
            self.run_unchecked(op, lpn, pages);
            expect(&self.dev, &before, want);
            self.ftl.check_invariants(&self.dev).unwrap();
        }

        /// Runs one request 10 ms after the last.
        fn run_unchecked(&mut self, op: Op, lpn: u32, pages: u32) {
            self.t += 10_000_000;
            self.stamp += 1;
            let req = Request {
                op,
                lpn: Lpn(lpn),
                pages,
                arrival: SimTime(self.t),
                stamp: self.stamp,
                placement: 0,
            };
            self.ftl.submit(&mut self.dev, &req, &mut NullSink).unwrap();
        }

        /// Garbage-collects data line 0 (full of 512 pages) and checks its operations beyond
        /// the 512 moves.
        fn collect_line0(&mut self, want_tp: &[(usize, Cause, u64)]) {
            self.ftl.alloc.close_full(Stream::DATA);
            let before = self.dev.counters().clone();
            let out = gc::collect_line(
                &mut self.dev,
                &mut self.ftl.alloc,
                0,
                SimTime(self.t),
                &mut self.ftl.core,
            )
            .unwrap();
            assert_eq!(out.data_moved, 512);
            let mut want = vec![(R, Cause::GcData, 512), (W, Cause::GcData, 512)];
            want.extend_from_slice(want_tp);
            expect(&self.dev, &before, &want);
            self.ftl.check_invariants(&self.dev).unwrap();
        }
    }

    #[test]
    fn dftl_miss_hit_dirty_eviction_and_gc_cost_exactly() {
        let mut s = Script::new(dftl::new, "mapping_dram_bytes=256");
        use Cause::*;
        // Write misses on never-written TPs: no TP read, one data program each.
        s.run(Op::Write, 0, 1, &[(W, User, 1)]);
        s.run(Op::Write, 512, 1, &[(W, User, 1)]);
        // Third entry evicts dirty LPN 0: TP 0 programmed (never written: no read).
        s.run(Op::Write, 1024, 1, &[(W, User, 1), (W, TransWrite, 1)]);
        // Read miss of 0: evicts dirty 512 (TP 1 programmed), reads TP 0, then the data.
        s.run(
            Op::Read,
            0,
            1,
            &[(W, TransWrite, 1), (R, TransRead, 1), (R, User, 1)],
        );
        // Hit: single read.
        s.run(Op::Read, 0, 1, &[(R, User, 1)]);
        // Write miss of 513 evicts dirty 1024 (TP 2 programmed); TP 1 read for the old PPA.
        s.run(
            Op::Write,
            513,
            1,
            &[(W, TransWrite, 1), (R, TransRead, 1), (W, User, 1)],
        );
        // Write miss of 514 evicts clean 0 for free; TP 1 read.
        s.run(Op::Write, 514, 1, &[(R, TransRead, 1), (W, User, 1)]);
        // No batching: evicting dirty 513 rewrites TP 1 (read + program) though 514 stays dirty.
        s.run(
            Op::Read,
            1,
            1,
            &[(R, TransWrite, 1), (W, TransWrite, 1), (R, TransRead, 1)],
        );
        let st = s.ftl.stats().clone();
        // Double, single, and an unmapped LPN found by a TP read (one flash read).
        assert_eq!(st.lookups, [0, 2, 1, 0]);
        assert_eq!(st.cmt_hits, 1);
        // Fill data line 0 (LPNs 2048.. of TP 4); the cache ends with 2553 and 2554, dirty.
        s.run_unchecked(Op::Write, 2048, 512 - 5);
        // GC of line 0: the two cached pages update their entries; the TPs of the rest
        // (0, 1, 2, 4) are each read and programmed once.
        s.collect_line0(&[(R, GcTrans, 4), (W, GcTrans, 4)]);
        assert!(s
            .ftl
            .core
            .cache
            .iter()
            .all(|(l, d)| d && (l == Lpn(2553) || l == Lpn(2554))));
    }

    #[test]
    fn tpftl_miss_hit_prefetch_batch_write_back_and_gc_cost_exactly() {
        let mut s = Script::new(tpftl::new, "mapping_dram_bytes=272");
        use Cause::*;
        // One miss loads the request's four entries (TP 0 never written: no read).
        s.run(Op::Write, 0, 4, &[(W, User, 4)]);
        // Room for 512: TP 0's node has no clean entry, so its least recent (dirty) goes and
        // all four are written back with one TP program (no read: TP 0 was never written).
        s.run(Op::Write, 512, 1, &[(W, TransWrite, 1), (W, User, 1)]);
        assert_eq!(s.ftl.core.cache.dirty_entries(), 1);
        // A hit on an entry cleaned by the batch: single read.
        s.run(Op::Read, 1, 1, &[(R, User, 1)]);
        // Cold read of a never-written LPN in a never-written TP: no flash operation at all
        // (the clean eviction of 2 is free).
        s.run(Op::Read, 520, 1, &[]);
        // Miss on a written TP: TP read, then the data (double read). The miss moves TP 0's
        // node to the hot end, so the room comes from TP 1's node: clean 520.
        s.run(Op::Read, 0, 1, &[(R, TransRead, 1), (R, User, 1)]);
        assert!(!s.ftl.core.cache.contains(Lpn(520)));
        // Selective prefetch: 512 cached just below 513 loads 514 too (evicting clean 3, 1).
        s.run(Op::Write, 513, 1, &[(W, User, 1)]);
        assert!(s.ftl.core.cache.contains(Lpn(514)) && !s.ftl.core.cache.contains(Lpn(1)));
        s.run(Op::Read, 600, 1, &[]);
        s.run(Op::Read, 1024, 1, &[]);
        // Loading 1025..1026 evicts clean 600, then (no clean entry left in TP 1's node)
        // dirty 512 with 513: one TP program for both.
        s.run(Op::Read, 1025, 1, &[(W, TransWrite, 1)]);
        assert!(s.ftl.core.cache.contains(Lpn(1026)));
        assert_eq!(s.ftl.core.cache.dirty_entries(), 0);
        let st = s.ftl.stats().clone();
        assert_eq!(st.lookups, [4, 1, 1, 0]);
        assert_eq!(st.cmt_hits, 1);
        // Fill data line 0 (6 pages so far) with LPNs 2048.. of TP 4; the last miss leaves
        // 2552, 2553 (written) and 2554, 2555 (prefetched) cached.
        s.run_unchecked(Op::Write, 2048, 512 - 6);
        // GC of line 0: 2552 and 2553 update their entries; TPs 0, 1 and 4 are each read and
        // programmed once for the rest.
        s.collect_line0(&[(R, GcTrans, 3), (W, GcTrans, 3)]);
        let cached: Vec<_> = s.ftl.core.cache.iter().collect();
        assert_eq!(cached.len(), 4);
        assert!(s.ftl.core.cache.is_dirty(Lpn(2552)) && s.ftl.core.cache.is_dirty(Lpn(2553)));
    }

    #[test]
    fn cold_reads_of_never_written_lpns_cost_no_flash_read() {
        let cfg = DeviceConfig::preset("tiny").unwrap();
        for name in ["dftl", "tpftl", "sftl"] {
            let mut ftl = crate::ftl::build(name, &cfg, &mut Params::new()).unwrap();
            let mut dev = Device::new(&cfg);
            for lpn in [0, 5000, 30_000] {
                let req = Request {
                    op: Op::Read,
                    lpn: Lpn(lpn),
                    pages: 8,
                    arrival: SimTime(0),
                    stamp: 0,
                    placement: 0,
                };
                assert_eq!(ftl.submit(&mut dev, &req, &mut NullSink), Ok(SimTime(0)));
            }
            assert_eq!(dev.counters().total_reads(), 0, "{name}");
            assert_eq!(ftl.stats().lookups, [24, 0, 0, 0], "{name}");
            ftl.check_invariants(&dev).unwrap();
        }
    }
}
