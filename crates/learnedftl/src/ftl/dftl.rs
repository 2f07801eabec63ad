//! DFTL (Gupta et al., ASPLOS'09; SPEC §5.2): demand-based page mapping with an entry-granular
//! cached mapping table under one global LRU.
//!
//! * A miss reads the entry's TP and caches that one entry, clean (a read's data read waits for
//!   the TP read: double read).
//! * A write makes the entry dirty (a write miss reads the TP first, to learn the old PPA).
//! * Evicting the LRU entry: if dirty, its TP is read and re-programmed with it — no batching,
//!   other dirty entries of that TP stay dirty.
//! * GC: see [`super::demand`] (cached moved pages update their entry; the rest batch per TP).
//!
//! The request path, TP handling and GC are shared with TPFTL and SFTL in [`super::demand`];
//! this module is DFTL's cache. Parameters: `cmt_ratio` (default 0.03) or
//! `mapping_dram_bytes`, and the GC thresholds.

use super::demand::{Cmt, Demand, Evict};
use crate::addr::{Lpn, Ppa, SimTime, Tpn};
use crate::config::DeviceConfig;
use crate::error::ConfigError;
use crate::mapping::dirty_queue::{DirtyQueue, End};
use crate::mapping::keyed::SlotIndex;
use crate::mapping::lru::{Links, List, NIL};
use crate::mapping::tpcache::ENTRY_BYTES;
use crate::mapping::{Lookup, TransTable, WriteBack};
use crate::params::Params;
use serde::Serialize;
use std::ops::Range;

/// DFTL: [`Demand`] with [`EntryLru`].
pub type Dftl = Demand<EntryLru>;

/// Builds DFTL for a device.
pub fn new(dev: &DeviceConfig, params: &mut Params) -> Result<Dftl, ConfigError> {
    let geo = &dev.geometry;
    let lp = geo.logical_pages as u32;
    let epp = geo.entries_per_tp();
    Demand::build("dftl", dev, params, ENTRY_BYTES, |bytes, _| {
        Ok(EntryLru::new(lp, epp, bytes))
    })
}

#[derive(Copy, Clone, Debug, Default)]
struct Slot {
    dirty: bool,
    ready: SimTime,
}

/// Counters of the entry cache.
#[derive(Clone, Debug, Default, Serialize)]
struct EntryStats {
    loaded: u64,
    evicted_clean: u64,
    evicted_dirty: u64,
    /// Dirty entries written back while the device was idle.
    flushed: u64,
}

/// Simulator bytes per entry of DFTL's cache, the costliest of the mapping caches: its slot,
/// LRU links, place in the slot index (key, free stack, at most four 8 B buckets) and in the
/// dirty queue (its last use and up to two queued entries). The memory estimate charges it for
/// the largest cache a budget allows (docs/device.md "Memory").
pub const STATE_BYTES_PER_ENTRY: u64 =
    std::mem::size_of::<Slot>() as u64 + 8 + (4 + 4 + 32) + (8 + 32);

/// DFTL's cache: one LRU list of mapping entries, 8 B each.
#[derive(Clone)]
pub struct EntryLru {
    epp: u32,
    capacity: u64,
    index: SlotIndex,
    slots: Vec<Slot>,
    links: Links,
    lru: List,
    dirty: u32,
    /// The dirty slots by recency (the idle write-back takes the least recent).
    queue: DirtyQueue,
    stats: EntryStats,
}

impl EntryLru {
    /// An empty cache of `capacity` bytes (at least one entry).
    pub fn new(logical_pages: u32, entries_per_tp: u32, capacity: u64) -> EntryLru {
        let n = (capacity / ENTRY_BYTES).clamp(1, logical_pages.max(1) as u64) as usize;
        EntryLru {
            epp: entries_per_tp,
            capacity,
            index: SlotIndex::new(n),
            slots: vec![Slot::default(); n],
            links: Links::new(n),
            lru: List::default(),
            dirty: 0,
            queue: DirtyQueue::new(n, End::Oldest),
            stats: EntryStats::default(),
        }
    }

    /// Cached LPNs from the most recently used, with their dirty flags.
    pub fn iter(&self) -> impl Iterator<Item = (Lpn, bool)> + '_ {
        self.lru
            .iter(&self.links)
            .map(|s| (Lpn(self.index.key(s)), self.slots[s as usize].dirty))
    }

    fn set_dirty(&mut self, s: u32) {
        let slot = &mut self.slots[s as usize];
        if !slot.dirty {
            slot.dirty = true;
            self.dirty += 1;
            let slots = &self.slots;
            self.queue.dirtied(s, |s| slots[s as usize].dirty);
        }
    }
}

impl Cmt for EntryLru {
    #[inline]
    fn lookup(&mut self, lpn: Lpn) -> Lookup {
        let s = self.index.slot(lpn.0);
        if s == NIL {
            return Lookup::Miss;
        }
        self.lru.touch(&mut self.links, s);
        let slots = &self.slots;
        let dirty = slots[s as usize].dirty;
        self.queue.touch(s, dirty, |s| slots[s as usize].dirty);
        Lookup::Hit {
            ready: self.slots[s as usize].ready,
        }
    }

    fn load_range(&self, lpn: Lpn, _: Lpn) -> Range<u32> {
        lpn.0..lpn.0 + 1
    }

    fn evict_for(&mut self, _: &Range<u32>, _: &TransTable) -> Evict {
        if self.index.used() < self.index.capacity() {
            return Evict::Fits;
        }
        let s = self.lru.tail();
        self.index.prefetch_before(&self.links, s);
        let lpn = self.index.key(s);
        let dirty = self.slots[s as usize].dirty;
        self.lru.remove(&mut self.links, s);
        self.queue.forget(s);
        self.index.remove(s);
        if dirty {
            self.dirty -= 1;
            self.stats.evicted_dirty += 1;
            Evict::Dirty(WriteBack {
                tpn: Tpn(lpn / self.epp),
                read_first: true,
            })
        } else {
            self.stats.evicted_clean += 1;
            Evict::Clean
        }
    }

    fn flush_one(&mut self, table: &TransTable) -> Option<WriteBack> {
        // The least recently used dirty entry's TP. DFTL's eviction rewrites a TP for one entry
        // (no batching); an idle flush that must leave no entry dirty writes each TP once and
        // cleans every cached entry of it, as the rewritten TP holds them all.
        let slots = &self.slots;
        let s = self.queue.first(|s| slots[s as usize].dirty)?;
        let tpn = Tpn(self.index.key(s) / self.epp);
        for s in self.index.slots_in(table.gtd.lpns(tpn)) {
            if s != NIL && self.slots[s as usize].dirty {
                self.slots[s as usize].dirty = false;
                self.dirty -= 1;
                self.stats.flushed += 1;
            }
        }
        Some(WriteBack {
            tpn,
            read_first: true,
        })
    }

    fn load(&mut self, lpn: Lpn, _: Range<u32>, ready: SimTime, _: &TransTable) {
        if let Some(s) = self.index.insert(lpn.0) {
            self.slots[s as usize] = Slot {
                dirty: false,
                ready,
            };
            self.lru.push_front(&mut self.links, s);
            let slots = &self.slots;
            self.queue.touch(s, false, |s| slots[s as usize].dirty);
            self.stats.loaded += 1;
        }
    }

    fn mark_dirty(&mut self, lpn: Lpn, _: Option<Ppa>, _: &TransTable) {
        let s = self.index.slot(lpn.0);
        if s != NIL {
            self.set_dirty(s);
        }
    }

    #[inline]
    fn prefetch(&self, lpn: Lpn) {
        self.index.prefetch(lpn.0);
    }

    fn gc_update(&mut self, lpn: Lpn, _: Ppa, _: &TransTable) -> bool {
        let s = self.index.slot(lpn.0);
        if s == NIL {
            return false;
        }
        self.set_dirty(s);
        true
    }

    fn dram_parts(&self, parts: &mut Vec<(&'static str, u64)>) {
        parts.push(("cmt", self.bytes()));
    }

    #[inline]
    fn bytes(&self) -> u64 {
        self.index.used() as u64 * ENTRY_BYTES
    }

    fn check(&self, _: &TransTable) -> Result<(), String> {
        self.index.check()?;
        let order = self.lru.check(&self.links)?;
        if order.len() != self.index.used() as usize {
            return Err(format!(
                "CMT: {} entries on the LRU, {} indexed",
                order.len(),
                self.index.used()
            ));
        }
        let dirty = order
            .iter()
            .filter(|&&s| self.slots[s as usize].dirty)
            .count();
        if dirty != self.dirty as usize {
            return Err(format!(
                "CMT: {dirty} dirty entries, counted {}",
                self.dirty
            ));
        }
        let oldest = self
            .lru
            .rfind(&self.links, |s| self.slots[s as usize].dirty);
        self.queue.check(oldest, |s| self.slots[s as usize].dirty)?;
        if self.bytes() > self.capacity {
            return Err(format!(
                "CMT holds {} B, over {} B",
                self.bytes(),
                self.capacity
            ));
        }
        Ok(())
    }

    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "cmt_bytes": self.capacity, "cmt_entries": self.index.capacity() })
    }

    fn counters(&self) -> serde_json::Value {
        serde_json::json!({
            "entries": self.index.used(),
            "dirty": self.dirty,
            "loaded": self.stats.loaded,
            "evicted_clean": self.stats.evicted_clean,
            "evicted_dirty": self.stats.evicted_dirty,
        })
    }

    fn reset_stats(&mut self) {
        self.stats = EntryStats::default();
    }
}

super::registered!(Dftl, "dftl", demand = new);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DeviceConfig;

    #[test]
    fn global_lru_evicts_the_least_recent_entry_alone() {
        let geo = DeviceConfig::preset("tiny").unwrap().geometry;
        let table = TransTable::new(&geo);
        let mut c = EntryLru::new(geo.logical_pages as u32, 512, 3 * ENTRY_BYTES);
        for l in [1, 2, 513] {
            let r = c.load_range(Lpn(l), Lpn(l + 5));
            assert_eq!(r, l..l + 1, "no prefetch");
            assert_eq!(c.evict_for(&r, &table), Evict::Fits);
            c.load(Lpn(l), r, SimTime(l as u64), &table);
        }
        c.mark_dirty(Lpn(1), None, &table);
        c.mark_dirty(Lpn(2), None, &table);
        assert_eq!(c.lookup(Lpn(1)), Lookup::Hit { ready: SimTime(1) });
        let order: Vec<_> = c.iter().collect();
        assert_eq!(
            order,
            vec![(Lpn(1), true), (Lpn(513), false), (Lpn(2), true)]
        );
        // LRU is dirty 2: its TP is written back (read first); 1 stays dirty (no batching).
        let e = c.evict_for(&(7..8), &table);
        assert_eq!(
            e,
            Evict::Dirty(WriteBack {
                tpn: Tpn(0),
                read_first: true
            })
        );
        assert!(c.gc_update(Lpn(513), Ppa(0), &table));
        assert!(!c.gc_update(Lpn(2), Ppa(0), &table));
        assert_eq!(c.evict_for(&(7..8), &table), Evict::Fits);
        c.check(&table).unwrap();
        assert_eq!(c.dirty, 2);
    }
}
