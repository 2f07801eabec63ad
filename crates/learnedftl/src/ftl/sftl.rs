//! SFTL (Jiang et al., MSST'11; SPEC §5.4): demand-based page mapping whose cache unit is a
//! whole translation page, stored compressed.
//!
//! A cached TP keeps one 4 B *head* per run of entries whose physical addresses are consecutive
//! (an entry continues the run of the one before it if both are mapped and its page follows
//! that one's, or if both are unmapped), plus 2 bits of state per entry: it costs
//! `4 · heads + ⌈entries / 4⌉` bytes. A miss reads the TP and caches all of it; a write updates
//! the cached TP (its size changes as runs split or join) and marks it dirty; the LRU TP is
//! evicted while the cache is over budget, and a dirty one is programmed whole (no read: the
//! cache holds every entry). GC updates cached TPs in place and batches the others'
//! ([`super::demand`]).
//!
//! The simulator tracks the run count of every TP, cached or not, as the table changes (each
//! change can start or end a run at two entries only, judged from the mapping before and after),
//! so a miss knows the TP's compressed size without
//! scanning its entries: scanning a whole TP on every miss made SFTL's reads ~20x slower than
//! the other FTLs' (docs/ftls/sftl.md).
//!
//! "Consecutive" is decided in allocation order (VPPN) by default: the striped write pointer
//! hands consecutive VPPNs, not consecutive flat PPAs, to consecutive writes, and SFTL's paper
//! assumes a device where sequential writes get consecutive page numbers. `sftl_runs=ppa` uses
//! flat PPAs instead (then only pages of one block can form a run).
//!
//! Parameters: `cmt_ratio` (default 0.03) or `mapping_dram_bytes`; `sftl_runs` (`vppn`); the GC
//! thresholds. The smallest cache is one uncompressible TP.

use super::demand::{Cmt, Demand, Evict};
use crate::addr::{Lpn, Ppa, SimTime, Tpn};
use crate::config::{AddrMath, DeviceConfig, Geometry};
use crate::error::quote;
use crate::error::ConfigError;
use crate::mapping::dirty_queue::{DirtyQueue, End};
use crate::mapping::lru::{Links, List};
use crate::mapping::{Lookup, TransTable, WriteBack};
use crate::params::Params;
use serde::Serialize;
use std::ops::Range;

/// SFTL: [`Demand`] with [`TpLru`].
pub type Sftl = Demand<TpLru>;

/// Bytes per run head.
const HEAD_BYTES: u64 = 4;

crate::params::keys! {
    /// SFTL's own key ([`new`]).
    pub static SFTL_KEYS = "sftl", "SFTL's run-length compressed translation pages";
    SFTL_RUNS = "sftl_runs" ["vppn|ppa"] "what consecutive means for a run of mappings: allocation (VPPN) order or PPA order";
}

/// Builds SFTL for a device.
pub fn new(dev: &DeviceConfig, params: &mut Params) -> Result<Sftl, ConfigError> {
    let geo = &dev.geometry;
    let by_vppn = match params.take_str_or(&SFTL_RUNS, "vppn").as_str() {
        "vppn" => true,
        "ppa" => false,
        other => {
            return Err(ConfigError::invalid(
                "sftl_runs",
                format!("{}: expected vppn or ppa", quote(other)),
            ))
        }
    };
    let epp = geo.entries_per_tp() as u64;
    let worst_tp = epp * HEAD_BYTES + epp.div_ceil(4);
    Demand::build("sftl", dev, params, worst_tp, |bytes, _| {
        Ok(TpLru::new(geo, bytes, by_vppn))
    })
}

#[derive(Copy, Clone, Debug, Default)]
struct TpState {
    cached: bool,
    dirty: bool,
    /// Runs in the TP's current content (kept whether or not it is cached).
    heads: u32,
    ready: SimTime,
}

#[derive(Clone, Debug, Default, Serialize)]
struct TpLruStats {
    loaded: u64,
    evicted_clean: u64,
    evicted_dirty: u64,
    /// Dirty TPs written back while the device was idle.
    flushed: u64,
}

/// SFTL's cache: an LRU list of compressed TPs.
#[derive(Clone)]
pub struct TpLru {
    math: AddrMath,
    by_vppn: bool,
    epp: u32,
    capacity: u64,
    tps: Vec<TpState>,
    links: Links,
    lru: List,
    bytes: u64,
    dirty: u32,
    /// The dirty TPs by recency (the idle write-back takes the least recent).
    queue: DirtyQueue,
    stats: TpLruStats,
}

impl TpLru {
    /// An empty cache of `capacity` bytes over an unmapped table (every LPN unmapped: each TP
    /// is one run). The driver reports every later change of the table to it.
    pub fn new(geo: &Geometry, capacity: u64, by_vppn: bool) -> TpLru {
        let tps = geo.tps() as usize;
        let epp = geo.entries_per_tp();
        TpLru {
            math: AddrMath::new(geo),
            by_vppn,
            epp,
            capacity,
            tps: vec![
                TpState {
                    heads: 1,
                    ..TpState::default()
                };
                tps
            ],
            links: Links::new(tps),
            lru: List::default(),
            bytes: 0,
            dirty: 0,
            queue: DirtyQueue::new(tps, End::Oldest),
            stats: TpLruStats::default(),
        }
    }

    fn lpns(&self, tpn: Tpn, table: &TransTable) -> Range<u32> {
        let s = tpn.0 * self.epp;
        s..(s + self.epp).min(table.logical_pages())
    }

    fn key(&self, p: Ppa) -> u32 {
        if self.by_vppn {
            self.math.ppa_to_vppn(p).0
        } else {
            p.0
        }
    }

    /// Whether `lpn` starts a run in its TP's current content.
    fn is_head(&self, lpn: u32, table: &TransTable) -> bool {
        self.starts_run(lpn, |l| table.get(Lpn(l)))
    }

    /// Whether `lpn` starts a run in a TP whose entries `get` gives.
    #[inline]
    fn starts_run(&self, lpn: u32, get: impl Fn(u32) -> Option<Ppa>) -> bool {
        if lpn % self.epp == 0 {
            return true;
        }
        match (get(lpn - 1), get(lpn)) {
            (None, None) => false,
            (Some(a), Some(b)) => self.key(b) != self.key(a).wrapping_add(1),
            _ => true,
        }
    }

    /// Bytes a TP with `heads` runs and `entries` entries costs.
    fn cost(heads: u32, entries: u32) -> u64 {
        heads as u64 * HEAD_BYTES + (entries as u64).div_ceil(4)
    }

    /// Runs of TP `tpn` as the table holds it now.
    fn count_heads(&self, tpn: Tpn, table: &TransTable) -> u32 {
        self.lpns(tpn, table)
            .filter(|&l| self.is_head(l, table))
            .count() as u32
    }

    /// `lpn`'s mapping changed from `old` to what `table` holds: recounts the TP's runs at `lpn`
    /// and the entry after it (a change of `lpn` can only split or join runs there); a cached
    /// TP changes size and becomes dirty. Returns whether the TP is cached.
    fn update(&mut self, lpn: Lpn, old: Option<Ppa>, table: &TransTable) -> bool {
        let t = lpn.0 / self.epp;
        let end = self.lpns(Tpn(t), table).end;
        let cached = self.tps[t as usize].cached;
        for l in [lpn.0, lpn.0 + 1] {
            if l >= end {
                break;
            }
            // Whether it started a run before: the table with `lpn`'s old mapping. Derived,
            // not kept: a bit per LPN would be a table as large as the device.
            let was = self.starts_run(l, |x| if x == lpn.0 { old } else { table.get(Lpn(x)) });
            let now = self.is_head(l, table);
            if was != now {
                let st = &mut self.tps[t as usize];
                if now {
                    st.heads += 1;
                } else {
                    st.heads -= 1;
                }
                if cached {
                    if now {
                        self.bytes += HEAD_BYTES;
                    } else {
                        self.bytes -= HEAD_BYTES;
                    }
                }
            }
        }
        if cached && !self.tps[t as usize].dirty {
            self.tps[t as usize].dirty = true;
            self.dirty += 1;
            let tps = &self.tps;
            self.queue.dirtied(t, |t| tps[t as usize].dirty);
        }
        cached
    }

    fn entries(&self, tpn: u32, table: &TransTable) -> u32 {
        self.lpns(Tpn(tpn), table).len() as u32
    }

    fn evict_lru(&mut self, table: &TransTable) -> Evict {
        let t = self.lru.tail();
        self.lru.remove(&mut self.links, t);
        self.queue.forget(t);
        let st = self.tps[t as usize];
        // Its runs stay tracked: a later miss needs them.
        self.tps[t as usize] = TpState {
            heads: st.heads,
            ..TpState::default()
        };
        self.bytes -= Self::cost(st.heads, self.entries(t, table));
        if st.dirty {
            self.dirty -= 1;
            self.stats.evicted_dirty += 1;
            Evict::Dirty(WriteBack {
                tpn: Tpn(t),
                read_first: false,
            })
        } else {
            self.stats.evicted_clean += 1;
            Evict::Clean
        }
    }
}

impl Cmt for TpLru {
    fn restored(&mut self, table: &TransTable) {
        for t in 0..self.tps.len() as u32 {
            self.tps[t as usize].heads = self.count_heads(Tpn(t), table);
        }
    }

    #[inline]
    fn lookup(&mut self, lpn: Lpn) -> Lookup {
        let t = lpn.0 / self.epp;
        let st = self.tps[t as usize];
        if !st.cached {
            return Lookup::Miss;
        }
        self.lru.touch(&mut self.links, t);
        let tps = &self.tps;
        self.queue.touch(t, st.dirty, |t| tps[t as usize].dirty);
        Lookup::Hit { ready: st.ready }
    }

    fn load_range(&self, lpn: Lpn, _: Lpn) -> Range<u32> {
        let s = lpn.0 / self.epp * self.epp;
        s..s + self.epp
    }

    fn evict_for(&mut self, range: &Range<u32>, table: &TransTable) -> Evict {
        let t = range.start / self.epp;
        let need = Self::cost(self.tps[t as usize].heads, self.entries(t, table));
        if self.bytes + need <= self.capacity || self.lru.is_empty() {
            return Evict::Fits;
        }
        self.evict_lru(table)
    }

    fn load(&mut self, lpn: Lpn, _: Range<u32>, ready: SimTime, table: &TransTable) {
        let t = lpn.0 / self.epp;
        let heads = self.tps[t as usize].heads;
        self.tps[t as usize] = TpState {
            cached: true,
            dirty: false,
            heads,
            ready,
        };
        self.bytes += Self::cost(heads, self.entries(t, table));
        self.lru.push_front(&mut self.links, t);
        let tps = &self.tps;
        self.queue.touch(t, false, |t| tps[t as usize].dirty);
        self.stats.loaded += 1;
    }

    fn mark_dirty(&mut self, lpn: Lpn, old: Option<Ppa>, table: &TransTable) {
        self.update(lpn, old, table);
    }

    fn gc_update(&mut self, lpn: Lpn, old: Ppa, table: &TransTable) -> bool {
        self.update(lpn, Some(old), table)
    }

    fn flush_one(&mut self, _: &TransTable) -> Option<WriteBack> {
        // The least recently used dirty TP, as evictions would take it; written whole (the
        // cache holds every entry).
        let tps = &self.tps;
        let t = self.queue.first(|t| tps[t as usize].dirty)?;
        self.tps[t as usize].dirty = false;
        self.dirty -= 1;
        self.stats.flushed += 1;
        Some(WriteBack {
            tpn: Tpn(t),
            read_first: false,
        })
    }

    fn shrink(&mut self, table: &TransTable) -> Evict {
        // The most recent TP stays: the budget holds any single TP.
        if self.bytes <= self.capacity || self.lru.len() <= 1 {
            return Evict::Fits;
        }
        self.evict_lru(table)
    }

    fn dram_parts(&self, parts: &mut Vec<(&'static str, u64)>) {
        parts.push(("cmt", self.bytes));
    }

    #[inline]
    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn check(&self, table: &TransTable) -> Result<(), String> {
        // Every TP's runs, cached or not: a miss trusts them.
        for (t, st) in self.tps.iter().enumerate() {
            let heads = self.count_heads(Tpn(t as u32), table);
            if heads != st.heads {
                return Err(format!(
                    "SFTL: TP {t} has {heads} runs, counted {}",
                    st.heads
                ));
            }
        }
        let order = self.lru.check(&self.links)?;
        let (mut bytes, mut dirty) = (0, 0);
        for &t in &order {
            let st = self.tps[t as usize];
            if !st.cached {
                return Err(format!("SFTL: TP {t} on the LRU but not cached"));
            }
            bytes += Self::cost(st.heads, self.entries(t, table));
            dirty += st.dirty as u32;
        }
        let cached = self.tps.iter().filter(|s| s.cached).count();
        if cached != order.len() || bytes != self.bytes || dirty != self.dirty {
            return Err(format!(
                "SFTL: {cached} cached TPs, {} listed; {bytes} B ({dirty} dirty), counted {} B ({})",
                order.len(),
                self.bytes,
                self.dirty
            ));
        }
        let oldest = self.lru.rfind(&self.links, |t| self.tps[t as usize].dirty);
        self.queue.check(oldest, |t| self.tps[t as usize].dirty)?;
        if self.bytes > self.capacity {
            return Err(format!(
                "SFTL cache holds {} B, over {} B",
                self.bytes, self.capacity
            ));
        }
        Ok(())
    }

    fn params(&self) -> serde_json::Value {
        serde_json::json!({
            "cmt_bytes": self.capacity,
            "runs_by": if self.by_vppn { "vppn" } else { "ppa" },
        })
    }

    fn counters(&self) -> serde_json::Value {
        serde_json::json!({
            "tps": self.lru.len(),
            "dirty_tps": self.dirty,
            "heads": self
                .tps
                .iter()
                .filter(|s| s.cached)
                .map(|s| s.heads as u64)
                .sum::<u64>(),
            "loaded": self.stats.loaded,
            "evicted_clean": self.stats.evicted_clean,
            "evicted_dirty": self.stats.evicted_dirty,
        })
    }

    fn reset_stats(&mut self) {
        self.stats = TpLruStats::default();
    }
}

super::registered!(Sftl, "sftl", demand = new);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Vppn;
    use crate::config::DeviceConfig;

    #[test]
    fn runs_of_consecutive_pages_compress_and_split() {
        let geo = DeviceConfig::preset("tiny").unwrap().geometry;
        // Maps LPNs 0..10 to VPPNs 100..110 (the TP is not cached), telling the cache.
        let fill = |c: &mut TpLru| {
            let mut table = TransTable::new(&geo);
            for i in 0..10 {
                let old = table.set(Lpn(i), Some(geo.vppn_to_ppa(Vppn(100 + i))));
                c.mark_dirty(Lpn(i), old, &table);
            }
            table
        };
        for (by_vppn, heads) in [(true, 2), (false, 11)] {
            let mut c = TpLru::new(&geo, 1 << 20, by_vppn);
            let table = fill(&mut c);
            c.check(&table).unwrap();
            assert_eq!(c.lookup(Lpn(3)), Lookup::Miss);
            c.load(Lpn(3), c.load_range(Lpn(3), Lpn(3)), SimTime(5), &table);
            // One run of ten mapped entries (VPPN order; flat PPAs stripe across channels),
            // one of 502 unmapped ones; 2 bits per entry of state.
            assert_eq!(c.bytes(), heads * 4 + 128, "by_vppn {by_vppn}");
            assert_eq!(c.lookup(Lpn(500)), Lookup::Hit { ready: SimTime(5) });
            c.check(&table).unwrap();
        }
        let mut c = TpLru::new(&geo, 1 << 20, true);
        let mut table = fill(&mut c);
        c.load(Lpn(0), 0..512, SimTime(0), &table);
        // Rewriting LPN 5 elsewhere splits the run in three.
        let old = table.set(Lpn(5), Some(geo.vppn_to_ppa(Vppn(7))));
        c.mark_dirty(Lpn(5), old, &table);
        assert_eq!(c.bytes(), 4 * 4 + 128);
        c.check(&table).unwrap();
        // Putting it back joins them again.
        let old = table.set(Lpn(5), Some(geo.vppn_to_ppa(Vppn(105))));
        assert!(c.gc_update(Lpn(5), old.unwrap(), &table));
        assert_eq!(c.bytes(), 2 * 4 + 128);
        // GC moving a page of a TP that is not cached: the caller batches its TP update.
        let old = table.set(Lpn(600), Some(geo.vppn_to_ppa(Vppn(3))));
        c.mark_dirty(Lpn(600), old, &table);
        let old = table.set(Lpn(600), Some(geo.vppn_to_ppa(Vppn(4))));
        assert!(!c.gc_update(Lpn(600), old.unwrap(), &table));
        c.check(&table).unwrap();
    }

    #[test]
    fn lru_tp_is_evicted_and_written_whole_when_dirty() {
        let geo = DeviceConfig::preset("tiny").unwrap().geometry;
        let table = TransTable::new(&geo);
        // Room for two unmapped TPs (132 B each).
        let mut c = TpLru::new(&geo, 270, true);
        for (i, lpn) in [0u32, 512, 1024].into_iter().enumerate() {
            let r = c.load_range(Lpn(lpn), Lpn(lpn));
            let e = c.evict_for(&r, &table);
            if i < 2 {
                assert_eq!(e, Evict::Fits);
            } else {
                assert_eq!(
                    e,
                    Evict::Dirty(WriteBack {
                        tpn: Tpn(0),
                        read_first: false
                    })
                );
                assert_eq!(c.evict_for(&r, &table), Evict::Fits);
            }
            c.load(Lpn(lpn), r, SimTime(0), &table);
            if i == 0 {
                c.mark_dirty(Lpn(0), None, &table);
            }
        }
        assert_eq!(c.bytes(), 264);
        c.check(&table).unwrap();
    }
}
