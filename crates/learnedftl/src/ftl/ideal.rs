//! The ideal page-level FTL (SPEC §5.1): the whole LPN → PPA table in DRAM (8 B per logical
//! page, as a real FTL would store it), baseline allocation and greedy GC. The upper bound every
//! other scheme is measured against: every read is a single read.
//!
//! Persistence (docs/power.md): nothing but the pages themselves — each data page's OOB names
//! its LPN and write stamp, and each trim is a trim record. After a power cut the whole table is
//! rebuilt from a scan of every page's OOB (newest stamp wins).

use super::{read_from_dram_map, DramUsage, Ftl, ReadSink};
use crate::addr::{Lpn, Ppa, SimTime};
use crate::config::DeviceConfig;
use crate::device::{Cause, Device, Oob, Src, Unit};
use crate::error::{ConfigError, FtlError, RecoverError};
use crate::mapping::{
    check_page_map, gc, persist_trim, prefetch_page_map, recovery, Allocator, FtlStats, GcHooks,
    GcPolicy, Stream,
};
use crate::params::Params;
use crate::request::{Op, Request, Upcoming};

const UNMAPPED: u32 = u32::MAX;

/// The mapping table; the GC hooks update it.
#[derive(Clone)]
struct Table {
    l2p: Vec<u32>,
}

impl GcHooks for Table {
    #[inline]
    fn prefetch_moved(&self, oob: Oob) {
        if let Some(lpn) = oob.lpn() {
            crate::host::prefetch(&self.l2p[lpn.idx()]);
        }
    }

    #[inline]
    fn moved(
        &mut self,
        _: &mut Device,
        _: &mut Allocator,
        oob: Oob,
        _: Ppa,
        new: Ppa,
        _: SimTime,
    ) -> Result<(), FtlError> {
        let lpn = oob
            .lpn()
            .ok_or_else(|| FtlError::Invariant("ideal FTL found a translation page".into()))?;
        self.l2p[lpn.idx()] = new.0;
        Ok(())
    }

    fn unmapped(&self, lpn: u32) -> bool {
        self.l2p[lpn as usize] == UNMAPPED
    }
}

/// Ideal page-map FTL.
#[derive(Clone)]
pub struct Ideal {
    table: Table,
    alloc: Allocator,
    stats: FtlStats,
}

impl Ideal {
    /// Builds the FTL; parameters: the GC thresholds of [`GcPolicy`].
    pub fn new(dev: &DeviceConfig, params: &mut Params) -> Result<Self, ConfigError> {
        let geo = &dev.geometry;
        let policy = GcPolicy::from_params(geo, params, 1)?;
        Ok(Ideal {
            table: Table {
                l2p: vec![UNMAPPED; geo.logical_pages as usize],
            },
            alloc: Allocator::new(geo, 1, policy).with_fdp(&dev.fdp),
            stats: FtlStats::default(),
        })
    }

    /// Rebuilds the FTL from flash after a power cut (docs/power.md), recovery issued at `t`:
    /// the scan's newest page of every LPN is its mapping and valid again, the allocator comes
    /// from the write pointers. Returns the FTL and when its last operation completes.
    pub fn recover(
        cfg: &DeviceConfig,
        params: &mut Params,
        dev: &mut Device,
        t: SimTime,
    ) -> Result<(Self, SimTime), RecoverError> {
        let mut ftl = Ideal::new(cfg, params)?;
        let scan = recovery::scan(dev, t)?;
        scan.revalidate(dev)?;
        ftl.table.l2p.copy_from_slice(scan.page_map());
        let policy = ftl.alloc.policy.clone();
        ftl.alloc = Allocator::recovered(&cfg.geometry, 1, policy, dev, |_| Stream::DATA);
        let done = gc::finish_interrupted(dev, &mut ftl.alloc, t, &mut ftl.table, &mut ftl.stats)?;
        Ok((ftl, done.max(scan.done)))
    }

    fn unmap(&mut self, dev: &mut Device, lpn: Lpn) -> Result<(), FtlError> {
        let old = std::mem::replace(&mut self.table.l2p[lpn.idx()], UNMAPPED);
        if old != UNMAPPED {
            dev.invalidate(Ppa(old))?;
        }
        Ok(())
    }
}

impl Ftl for Ideal {
    fn name(&self) -> &'static str {
        "ideal"
    }

    fn prefetch(&self, dev: &Device, op: Op, lpn: Lpn, when: Upcoming) {
        prefetch_page_map(dev, &self.table.l2p, UNMAPPED, op, lpn, when);
    }

    fn submit(
        &mut self,
        dev: &mut Device,
        req: &Request,
        sink: &mut dyn ReadSink,
    ) -> Result<SimTime, FtlError> {
        let t = req.arrival;
        let mut done = t;
        match req.op {
            Op::Read => {
                for lpn in req.lpns() {
                    let ppa = self.table.l2p[lpn.idx()];
                    let ppa = (ppa != UNMAPPED).then_some(Ppa(ppa));
                    let d = read_from_dram_map(dev, &mut self.stats, sink, lpn, ppa, t)?;
                    done = done.max(d);
                }
            }
            Op::Write => {
                let (stream, handle) = self.alloc.host_stream(dev, req.placement);
                for lpn in req.lpns() {
                    let ppa = gc::alloc_page(
                        dev,
                        &mut self.alloc,
                        stream,
                        t,
                        &mut self.table,
                        &mut self.stats,
                    )?;
                    let d =
                        dev.program(ppa, Oob::data(lpn, req.stamp), Src::Host, Cause::User, t)?;
                    dev.place(ppa, Unit::Host, handle);
                    self.unmap(dev, lpn)?;
                    self.table.l2p[lpn.idx()] = ppa.0;
                    done = done.max(d);
                }
            }
            Op::Trim => {
                done = persist_trim(
                    dev,
                    &mut self.alloc,
                    Stream::DATA,
                    &mut self.table,
                    &mut self.stats,
                    req,
                )?;
                for lpn in req.lpns() {
                    self.unmap(dev, lpn)?;
                }
            }
            Op::Flush => {}
        }
        Ok(done)
    }

    fn background(&mut self, dev: &mut Device, now: SimTime) -> Result<(), FtlError> {
        gc::background(dev, &mut self.alloc, now, &mut self.table, &mut self.stats)
    }

    fn idle(&mut self, dev: &mut Device, now: SimTime) -> Result<Option<SimTime>, FtlError> {
        // No mapping to write back, no buffer: background GC is all an idle ideal FTL owes.
        gc::background_one(dev, &mut self.alloc, now, &mut self.table, &mut self.stats)
    }

    fn stats(&self) -> &FtlStats {
        &self.stats
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
    }

    fn dram(&self) -> DramUsage {
        // Charged at 8 B per entry, as SPEC §5.0 counts mapping entries (the simulator stores 4).
        DramUsage {
            parts: vec![("page_map", self.dram_total())],
            budget: None,
        }
    }

    fn dram_total(&self) -> u64 {
        self.table.l2p.len() as u64 * 8
    }

    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "gc": self.alloc.policy })
    }

    fn check_invariants(&self, dev: &Device) -> Result<(), String> {
        let map = self
            .table
            .l2p
            .iter()
            .enumerate()
            .map(|(i, &p)| (Lpn(i as u32), (p != UNMAPPED).then_some(Ppa(p))));
        check_page_map(dev, map, dev.valid_records())
    }
}

super::registered!(Ideal, "ideal");
