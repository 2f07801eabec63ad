//! TPFTL's cached mapping table (SPEC §5.3), reusable by any FTL built on it (TPFTL,
//! LearnedFTL): a two-level LRU — an LRU list of *TP nodes*, each holding an LRU list of the
//! cached entries of one translation page — with TPFTL's workload-adaptive loading (request-level
//! and selective prefetch) and its clean-first, batch-write-back eviction.
//!
//! # What the cache holds
//!
//! Which LPNs are cached, which are dirty, and for entries loaded by a TP read, when that read
//! completes (`ready`). It does **not** hold PPAs: the FTL keeps the current LPN → PPA table in
//! simulator memory (the contents of its TPs merged with its dirty cache entries; see
//! [`crate::mapping::TransTable`]); the cache says whether using a mapping is free (hit) or
//! costs a TP read (miss). A dirty entry is one whose value the TP on flash does not have yet.
//!
//! # DRAM accounting
//!
//! [`TpCache::bytes`] = 8 B per cached entry (SPEC §5.0) + `node_bytes` per TP node
//! ([`TpCacheConfig::node_bytes`], default 0: the paper's comparisons count entries only; a
//! researcher can charge a node header, e.g. 16 B for a TPN and list links). The cache never
//! holds more than its capacity: the FTL evicts before loading (see below).
//!
//! # Using it (the FTL's side)
//!
//! ```text
//! // a host page read of `lpn` in request [s, e]:
//! match cache.lookup(lpn) {                          // touches LRU order
//!     Lookup::Hit { ready } => read data at max(t, ready),          // single read
//!     Lookup::Miss => {
//!         let range = cache.load_range(lpn, e);      // request-level + selective prefetch
//!         while let Some(v) = cache.evict_for(lpn, &range) {
//!             if v.written_back > 0 { pay TP read + program of v.tpn }   // batch write-back
//!         }
//!         let done = TP read of lpn's TP at t (free if the TP was never written);
//!         cache.load(lpn, range, done);              // lpn hot, prefetched entries cold
//!         read data at done                          // double read
//!     }
//! }
//! // a host page write (or trim) of `lpn`: same miss path (the TP read tells the old PPA),
//! // then cache.mark_dirty(lpn).
//! // GC moved the data of `lpn`: if !cache.gc_update(lpn) { batch a TP update of lpn's TP }
// the FTL programmed TP `tpn` with all its current values: cache.clean_tp(tpn)
//! ```
//!
//! [`TpCache::evict_for`] evicts one entry at a time until the range fits, so the FTL pays each
//! write-back (and may run GC for the translation page it programs) between evictions; GC only
//! calls [`TpCache::gc_update`], which never changes the cache's structure.
//!
//! # Policies (SPEC §5.3)
//!
//! * **Lookup** moves a hit entry to the hot end of its node and the node to the hot end of the
//!   node list; a miss moves the existing node (if any) to the hot end, so the node whose entries
//!   are about to be loaded is not the one evicted.
//! * **Eviction**: in the coldest node, the least recent clean entry, else the least recent entry.
//!   If that entry is dirty, *every* dirty entry of the node is written back by the same TP
//!   program and becomes clean ([`Evicted::written_back`]). A node left empty is freed.
//! * **Request-level prefetch**: a miss of `lpn` in a request ending at `e` loads
//!   `[lpn, min(e, last LPN of the TP)]` from the one TP read.
//! * **Selective prefetch**: then adds, after that, as many entries as there are consecutive
//!   cached entries just below `lpn` in its node (capped at the TP's end).
//! * **The ±3 counter** ([`TpCacheConfig::switch_threshold`]): +1 per node created, −1 per node
//!   freed, counted once the cache is full (before its first eviction nodes are created into free
//!   space, which says nothing about locality). Selective prefetch switches off when the counter
//!   reaches +3 (nodes multiply: weak spatial locality) and back on at −3; the counter restarts
//!   at 0 on every switch. A threshold of 0 disables the counter: selective prefetch stays on.
//! * Loaded entries carry `ready`, the TP read's completion: the requested entry goes to the hot
//!   end of its node, prefetched ones to the cold end (in LPN order, the farthest coldest), and a
//!   hit on an entry whose TP read is still in flight waits for it.
//! * A load never exceeds what the cache can hold: the range is capped at
//!   `(capacity − node_bytes) / 8` entries.

use super::keyed::SlotIndex;
use super::lru::{Links, List, NIL};
use crate::addr::{Lpn, SimTime, Tpn};
use serde::Serialize;
use std::ops::Range;

/// Bytes charged per cached mapping entry (SPEC §5.0).
pub const ENTRY_BYTES: u64 = 8;

/// The outcome of a lookup.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The entry is cached; its mapping can be used once `ready` (when the TP read that loaded
    /// it completes; earlier than any request for entries loaded long ago).
    Hit {
        /// When the entry's value is available.
        ready: SimTime,
    },
    /// Not cached: the TP must be read.
    Miss,
}

/// An entry evicted to make room.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Evicted {
    /// The evicted entry.
    pub lpn: Lpn,
    /// Its translation page.
    pub tpn: Tpn,
    /// Dirty entries of that node written back with it (0: a clean eviction, nothing to pay;
    /// otherwise the FTL pays one TP read + program for all of them).
    pub written_back: u32,
}

/// Knobs of the cache.
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
pub struct TpCacheConfig {
    /// Bytes charged per TP node on top of 8 B per entry.
    pub node_bytes: u64,
    /// Request-level prefetch on.
    pub request_prefetch: bool,
    /// Selective prefetch allowed (the counter then switches it on and off).
    pub selective_prefetch: bool,
    /// The counter's threshold (3 in TPFTL); 0 disables the counter (selective prefetch stays
    /// on).
    pub switch_threshold: i32,
}

impl Default for TpCacheConfig {
    fn default() -> Self {
        TpCacheConfig {
            node_bytes: 0,
            request_prefetch: true,
            selective_prefetch: true,
            switch_threshold: 3,
        }
    }
}

/// What the cache did since the last [`TpCache::reset_stats`].
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TpCacheStats {
    /// Entries loaded by misses (the requested ones included).
    pub loaded: u64,
    /// Of which prefetched (request-level or selective: every loaded entry but the one asked
    /// for).
    pub prefetched: u64,
    /// Clean entries evicted.
    pub evicted_clean: u64,
    /// Dirty entries evicted (each caused one batch write-back).
    pub evicted_dirty: u64,
    /// Dirty entries cleaned by batch write-backs (the evicted ones included).
    pub written_back: u64,
    /// Dirty entries cleaned because the FTL rewrote their TP ([`TpCache::clean_tp`]).
    pub cleaned: u64,
    /// Dirty entries written back while the device was idle ([`TpCache::flush_one`]).
    pub flushed: u64,
    /// TP nodes created.
    pub nodes_created: u64,
    /// TP nodes freed.
    pub nodes_freed: u64,
    /// Times selective prefetch switched off.
    pub selective_off: u64,
    /// Times selective prefetch switched back on.
    pub selective_on: u64,
}

#[derive(Copy, Clone, Debug, Default)]
struct Slot {
    dirty: bool,
    ready: SimTime,
}

#[derive(Copy, Clone, Debug, Default)]
struct Node {
    entries: List,
    dirty: u32,
}

/// The evictions foreseen by [`TpCache::hint_ahead`]: hints only, a wrong guess costs time,
/// never a result.
#[derive(Clone, Debug)]
struct Ahead {
    /// The slots the next evictions should take, oldest first: `len` of them from `head`.
    ring: [u32; Ahead::RING],
    head: usize,
    len: usize,
    /// Where the walk stands: the node and slot of the newest slot in the ring.
    node: u32,
    slot: u32,
}

impl Ahead {
    const RING: usize = 16;
    /// How many evictions ahead the walk runs.
    const DEPTH: usize = 12;
    /// How many steps after its key a slot's bucket is hinted.
    const KEY_LEAD: usize = 4;

    /// A walk starting after `slot` of node `node`.
    fn from(node: u32, slot: u32) -> Ahead {
        Ahead {
            ring: [NIL; Ahead::RING],
            head: 0,
            len: 0,
            node,
            slot,
        }
    }
}

/// The two-level LRU cache. See the module docs.
#[derive(Clone, Debug)]
pub struct TpCache {
    cfg: TpCacheConfig,
    epp: u32,
    logical: u32,
    capacity: u64,
    index: SlotIndex,
    slots: Vec<Slot>,
    entry_links: Links,
    nodes: Vec<Node>,
    node_links: Links,
    node_lru: List,
    live_nodes: u32,
    dirty: u32,
    full: bool,
    selective_on: bool,
    counter: i32,
    /// The range [`TpCache::evict_for`] was last asked about, how many of its LPNs were not
    /// cached, and the index's [`SlotIndex::changes`] then: the driver asks once per eviction
    /// for the same range, and counting its up to a TP of entries each time made a load
    /// quadratic in its length.
    missing: (Range<u32>, u32, u64),
    /// Where [`TpCache::flush_one`]'s scan for a dirty node starts (`NIL`: the cold end): every
    /// node colder than it is clean. Idle write-backs clean nodes one at a time from the cold
    /// end, and rescanning the clean ones made the settle phase quadratic in the cached TPs
    /// (397 s for TPFTL's 214 k write-backs at 4 TiB). Reset by any LRU move and any entry
    /// that becomes dirty.
    flush_from: u32,
    /// The walk ahead of the evictions.
    ahead: Ahead,
    stats: TpCacheStats,
}

impl TpCache {
    /// An empty cache of `capacity` bytes for `logical_pages` LPNs in TPs of `entries_per_tp`.
    /// `capacity` must hold at least one entry and one node.
    pub fn new(
        logical_pages: u32,
        entries_per_tp: u32,
        capacity: u64,
        cfg: TpCacheConfig,
    ) -> TpCache {
        let max_entries = (capacity.saturating_sub(cfg.node_bytes) / ENTRY_BYTES)
            .clamp(1, logical_pages.max(1) as u64) as usize;
        let tps = logical_pages.div_ceil(entries_per_tp) as usize;
        TpCache {
            cfg,
            epp: entries_per_tp,
            logical: logical_pages,
            capacity,
            index: SlotIndex::new(max_entries),
            slots: vec![Slot::default(); max_entries],
            entry_links: Links::new(max_entries),
            nodes: vec![Node::default(); tps],
            node_links: Links::new(tps),
            node_lru: List::default(),
            live_nodes: 0,
            dirty: 0,
            full: false,
            selective_on: cfg.selective_prefetch,
            counter: 0,
            missing: (0..0, 0, u64::MAX),
            flush_from: NIL,
            ahead: Ahead::from(NIL, NIL),
            stats: TpCacheStats::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &TpCacheConfig {
        &self.cfg
    }
    /// Capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    /// Bytes in use: 8 B per entry + `node_bytes` per node.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.index.used() as u64 * ENTRY_BYTES + self.live_nodes as u64 * self.cfg.node_bytes
    }
    /// Bytes of entries alone.
    pub fn entry_bytes(&self) -> u64 {
        self.index.used() as u64 * ENTRY_BYTES
    }
    /// Bytes of node headers alone.
    pub fn node_bytes(&self) -> u64 {
        self.live_nodes as u64 * self.cfg.node_bytes
    }
    /// Cached entries.
    pub fn entries(&self) -> u32 {
        self.index.used()
    }
    /// Dirty cached entries.
    pub fn dirty_entries(&self) -> u32 {
        self.dirty
    }
    /// TP nodes in the cache.
    pub fn nodes(&self) -> u32 {
        self.live_nodes
    }
    /// Cached entries of TP `tpn`.
    pub fn node_len(&self, tpn: Tpn) -> u32 {
        self.nodes[tpn.idx()].entries.len()
    }
    /// Whether selective prefetch is currently on.
    pub fn selective_prefetch_on(&self) -> bool {
        self.selective_on
    }
    /// Counters.
    pub fn stats(&self) -> &TpCacheStats {
        &self.stats
    }
    /// Zeroes the counters (the cache's contents stay).
    pub fn reset_stats(&mut self) {
        self.stats = TpCacheStats::default();
    }

    #[inline]
    fn tpn(&self, lpn: u32) -> Tpn {
        Tpn(lpn / self.epp)
    }

    /// Hints what [`TpCache::lookup`] and [`TpCache::gc_update`] of `lpn` read first into
    /// cache: its TP's node and its slot's bucket.
    #[inline]
    pub fn prefetch(&self, lpn: Lpn) {
        let t = self.tpn(lpn.0);
        if let Some(node) = self.nodes.get(t.idx()) {
            crate::host::prefetch(node);
            self.node_links.prefetch(t.0);
        }
        self.index.prefetch(lpn.0);
    }

    /// Hints the node links a lookup of `lpn` rewrites besides its node's own (moving the node
    /// to the hot end): its neighbours' (reading the node's links: best once
    /// [`TpCache::prefetch`] hinted them).
    #[inline]
    pub fn prefetch_touch(&self, lpn: Lpn) {
        let t = self.tpn(lpn.0);
        if self
            .nodes
            .get(t.idx())
            .is_some_and(|n| !n.entries.is_empty())
        {
            self.node_links.prefetch_neighbours(t.0);
        }
    }

    /// Whether `lpn` is cached (no LRU change).
    #[inline]
    pub fn contains(&self, lpn: Lpn) -> bool {
        self.index.slot(lpn.0) != NIL
    }
    /// Whether `lpn` is cached and dirty.
    #[inline]
    pub fn is_dirty(&self, lpn: Lpn) -> bool {
        let s = self.index.slot(lpn.0);
        s != NIL && self.slots[s as usize].dirty
    }

    /// Looks `lpn` up for use. A hit moves the entry and its node to their hot ends; a miss
    /// moves `lpn`'s node (if cached) to the hot end of the node list.
    #[inline]
    pub fn lookup(&mut self, lpn: Lpn) -> Lookup {
        let t = self.tpn(lpn.0);
        let node = &mut self.nodes[t.idx()];
        if node.entries.is_empty() {
            return Lookup::Miss;
        }
        self.node_lru.touch(&mut self.node_links, t.0);
        self.flush_from = NIL;
        let s = self.index.slot(lpn.0);
        if s == NIL {
            return Lookup::Miss;
        }
        node.entries.touch(&mut self.entry_links, s);
        Lookup::Hit {
            ready: self.slots[s as usize].ready,
        }
    }

    /// The LPNs a miss of `lpn` in a request whose last page is `req_last` loads from the TP
    /// read: request-level prefetch, then selective prefetch (if on). Always contains `lpn`;
    /// capped at the TP's end and at what the cache can hold. Does not change the cache.
    pub fn load_range(&self, lpn: Lpn, req_last: Lpn) -> Range<u32> {
        let tp_last = ((self.tpn(lpn.0).0 + 1) * self.epp).min(self.logical) - 1;
        let mut last = if self.cfg.request_prefetch {
            req_last.0.clamp(lpn.0, tp_last)
        } else {
            lpn.0
        };
        if self.selective_on && last < tp_last {
            // The run below `lpn` matters only up to the room left in the TP.
            let first = self.tpn(lpn.0).0 * self.epp;
            let run = (first..lpn.0)
                .rev()
                .take((tp_last - last) as usize)
                .take_while(|&l| self.index.slot(l) != NIL)
                .count() as u32;
            last += run;
        }
        let max_entries = self.index.capacity();
        lpn.0..(last + 1).min(lpn.0 + max_entries)
    }

    /// Bytes loading `range` (all in one TP) would add.
    fn load_cost(&mut self, range: &Range<u32>) -> u64 {
        if (&self.missing.0, self.missing.2) != (range, self.index.changes()) {
            let n = self.index.count_missing(range.clone());
            self.missing = (range.clone(), n, self.index.changes());
        }
        let new = self.missing.1 as u64;
        let node = if new > 0 && self.nodes[self.tpn(range.start).idx()].entries.is_empty() {
            self.cfg.node_bytes
        } else {
            0
        };
        new * ENTRY_BYTES + node
    }

    /// If loading `range` (from [`TpCache::load_range`]) would exceed the capacity, evicts one
    /// entry (SPEC §5.3) and returns it; `None` once the range fits. Call until `None`, paying
    /// each returned write-back.
    pub fn evict_for(&mut self, range: &Range<u32>) -> Option<Evicted> {
        if self.bytes() + self.load_cost(range) <= self.capacity {
            return None;
        }
        self.full = true;
        self.evict_one()
    }

    fn evict_one(&mut self) -> Option<Evicted> {
        let t = self.node_lru.tail();
        if t == NIL {
            return None;
        }
        let node = self.nodes[t as usize];
        let mut victim = node.entries.tail();
        // Least recent clean entry, else the least recent entry (no walk when all are dirty).
        if node.dirty > 0 && node.dirty < node.entries.len() {
            let mut s = victim;
            while s != NIL && self.slots[s as usize].dirty {
                s = self.entry_links.prev(s);
            }
            if s != NIL {
                victim = s;
            }
        }
        let lpn = Lpn(self.index.key(victim));
        self.hint_ahead(t, victim);
        let mut written_back = 0;
        if self.slots[victim as usize].dirty {
            // Batch write-back: one TP program cleans every dirty entry of the node.
            written_back = self.clean_node(Tpn(t));
            self.stats.evicted_dirty += 1;
            self.stats.written_back += written_back as u64;
        } else {
            self.stats.evicted_clean += 1;
        }
        let counted = self.missing.2 == self.index.changes();
        self.remove_slot(Tpn(t), victim);
        if counted {
            // The evicted LPN is no longer cached: one more missing if the range holds it.
            self.missing.1 += self.missing.0.contains(&lpn.0) as u32;
            self.missing.2 = self.index.changes();
        }
        Some(Evicted {
            lpn,
            tpn: Tpn(t),
            written_back,
        })
    }

    /// Hints into cache what the next evictions will read, `victim` (in node `t`) being
    /// taken now. Evictions go on from the cold end: the walk ahead follows the entries towards
    /// the head of `t`'s list and on into the next nodes, one step per eviction, so that each
    /// step reads only what the one before hinted (entries and nodes lie anywhere in memory: a
    /// chain of misses otherwise, the next victim being known only from the one before). An
    /// eviction the walk did not foresee (a clean entry taken before dirty ones, an entry
    /// touched since) restarts it.
    #[inline]
    fn hint_ahead(&mut self, t: u32, victim: u32) {
        let a = &mut self.ahead;
        match (0..a.len).find(|&k| a.ring[(a.head + k) % Ahead::RING] == victim) {
            Some(k) => {
                a.head = (a.head + k + 1) % Ahead::RING;
                a.len -= k + 1;
            }
            None => *a = Ahead::from(t, victim),
        }
        while a.len < Ahead::DEPTH {
            let mut s = self.entry_links.prev(a.slot);
            if s == NIL {
                let n = self.node_links.prev(a.node);
                if n == NIL {
                    return;
                }
                s = self.nodes[n as usize].entries.tail();
                if s == NIL {
                    return;
                }
                a.node = n;
                let next = self.node_links.prev(n);
                if next != NIL {
                    self.node_links.prefetch(next);
                    crate::host::prefetch(&self.nodes[next as usize]);
                }
            }
            a.slot = s;
            a.ring[(a.head + a.len) % Ahead::RING] = s;
            a.len += 1;
            self.entry_links.prefetch(s);
            self.index.prefetch_key(s);
            crate::host::prefetch(&self.slots[s as usize]);
            // The key of the slot walked `KEY_LEAD` steps ago was hinted then.
            if a.len > Ahead::KEY_LEAD {
                let k = a.ring[(a.head + a.len - 1 - Ahead::KEY_LEAD) % Ahead::RING];
                self.index.prefetch(self.index.key(k));
            }
        }
    }

    /// Marks every entry of `t`'s node clean; returns how many were dirty.
    fn clean_node(&mut self, t: Tpn) -> u32 {
        let node = self.nodes[t.idx()];
        for s in node.entries.iter(&self.entry_links) {
            self.slots[s as usize].dirty = false;
        }
        self.dirty -= node.dirty;
        self.nodes[t.idx()].dirty = 0;
        node.dirty
    }

    /// The FTL just programmed TP `tpn` with every current mapping of its LPNs (e.g. a GC that
    /// rewrote it): its cached entries hold nothing the TP lacks, so they become clean and will
    /// not be written back again. LRU order is unchanged. Returns how many were dirty (the
    /// write-back the FTL no longer owes).
    pub fn clean_tp(&mut self, tpn: Tpn) -> u32 {
        let n = self.clean_node(tpn);
        self.stats.cleaned += n as u64;
        n
    }

    /// Idle write-back (SPEC §3.5, settled device): marks every dirty entry of one node clean,
    /// keeping them cached, and returns its TP, which the FTL programs once for all of them
    /// (the batch write-back an eviction does); `None` when no entry is dirty. The least
    /// recently used dirty node goes first, as evictions would take it.
    pub fn flush_one(&mut self) -> Option<Tpn> {
        let start = match self.flush_from {
            NIL => self.node_lru.tail(),
            t => t,
        };
        let t = self.node_lru.rfind_from(&self.node_links, start, |t| {
            self.nodes[t as usize].dirty > 0
        })?;
        let n = self.clean_node(Tpn(t));
        self.flush_from = t;
        self.stats.flushed += n as u64;
        Some(Tpn(t))
    }

    fn remove_slot(&mut self, t: Tpn, s: u32) {
        let node = &mut self.nodes[t.idx()];
        node.entries.remove(&mut self.entry_links, s);
        if self.slots[s as usize].dirty {
            node.dirty -= 1;
            self.dirty -= 1;
        }
        self.index.remove(s);
        if node.entries.is_empty() {
            self.node_lru.remove(&mut self.node_links, t.0);
            self.flush_from = NIL;
            self.live_nodes -= 1;
            self.stats.nodes_freed += 1;
            self.count_node(-1);
        }
    }

    /// The ±3 counter: moves only once the cache is full.
    fn count_node(&mut self, delta: i32) {
        if !self.full || !self.cfg.selective_prefetch || self.cfg.switch_threshold == 0 {
            return;
        }
        self.counter += delta;
        let th = self.cfg.switch_threshold;
        if self.selective_on && self.counter >= th {
            self.selective_on = false;
            self.counter = 0;
            self.stats.selective_off += 1;
        } else if !self.selective_on && self.counter <= -th {
            self.selective_on = true;
            self.counter = 0;
            self.stats.selective_on += 1;
        }
    }

    /// Loads the uncached entries of `range` (from [`TpCache::load_range`], after
    /// [`TpCache::evict_for`] returned `None`), clean, carrying `ready`: `lpn` at the hot end of
    /// its node, the others at the cold end. The node moves to the hot end of the node list.
    /// Returns how many entries were loaded.
    pub fn load(&mut self, lpn: Lpn, range: Range<u32>, ready: SimTime) -> u32 {
        debug_assert!(range.contains(&lpn.0));
        let t = self.tpn(lpn.0);
        let mut loaded = 0u32;
        let end = range.end;
        for l in range {
            if l + SlotIndex::AHEAD < end {
                self.index.prefetch(l + SlotIndex::AHEAD);
            }
            if self.index.slot(l) != NIL {
                continue;
            }
            let Some(s) = self.index.insert(l) else {
                break; // cannot happen after evict_for; never overfill
            };
            self.slots[s as usize] = Slot {
                dirty: false,
                ready,
            };
            let node = &mut self.nodes[t.idx()];
            if node.entries.is_empty() {
                self.node_lru.push_front(&mut self.node_links, t.0);
                self.flush_from = NIL;
                self.live_nodes += 1;
                self.stats.nodes_created += 1;
                self.count_node(1);
            }
            let node = &mut self.nodes[t.idx()];
            if l == lpn.0 {
                node.entries.push_front(&mut self.entry_links, s);
            } else {
                node.entries.push_back(&mut self.entry_links, s);
            }
            loaded += 1;
        }
        self.node_lru.touch(&mut self.node_links, t.0);
        self.flush_from = NIL;
        self.stats.loaded += loaded as u64;
        self.stats.prefetched += loaded.saturating_sub(1) as u64;
        loaded
    }

    /// A write (or trim) updated cached `lpn`: marks it dirty and moves it (and its node) to the
    /// hot end. Returns `false` if `lpn` is not cached (load it first).
    pub fn mark_dirty(&mut self, lpn: Lpn) -> bool {
        if !matches!(self.lookup(lpn), Lookup::Hit { .. }) {
            return false;
        }
        self.set_dirty(lpn);
        true
    }

    fn set_dirty(&mut self, lpn: Lpn) {
        let s = self.index.slot(lpn.0) as usize;
        if !self.slots[s].dirty {
            self.slots[s].dirty = true;
            let t = self.tpn(lpn.0);
            self.nodes[t.idx()].dirty += 1;
            self.dirty += 1;
            self.flush_from = NIL;
        }
    }

    /// GC moved `lpn`'s data: if cached, its entry takes the new PPA and becomes dirty (LRU
    /// order unchanged) and this returns `true`; otherwise `false`, and the caller batches an
    /// update of the TP (SPEC §5.2/§5.3).
    pub fn gc_update(&mut self, lpn: Lpn) -> bool {
        if !self.contains(lpn) {
            return false;
        }
        self.set_dirty(lpn);
        true
    }

    /// LPNs cached, node by node from the hottest, each node's entries from the hottest:
    /// `(lpn, dirty)`. For tests and invariant checks.
    pub fn iter(&self) -> impl Iterator<Item = (Lpn, bool)> + '_ {
        self.node_lru.iter(&self.node_links).flat_map(move |t| {
            self.nodes[t as usize]
                .entries
                .iter(&self.entry_links)
                .map(move |s| (Lpn(self.index.key(s)), self.slots[s as usize].dirty))
        })
    }

    /// Checks the cache's invariants: lists consistent, each entry in its own TP's node, dirty
    /// counts right, exactly the non-empty nodes on the node list, bytes within capacity.
    pub fn check(&self) -> Result<(), String> {
        self.index.check()?;
        let order = self.node_lru.check(&self.node_links)?;
        if order.len() != self.live_nodes as usize {
            return Err(format!(
                "{} nodes listed, {} live",
                order.len(),
                self.live_nodes
            ));
        }
        let (mut entries, mut dirty) = (0u32, 0u32);
        for t in order {
            let node = &self.nodes[t as usize];
            let list = node.entries.check(&self.entry_links)?;
            if list.is_empty() {
                return Err(format!("empty node {t} on the node list"));
            }
            let mut d = 0;
            for s in list {
                let lpn = self.index.key(s);
                if lpn == NIL || self.tpn(lpn).0 != t {
                    return Err(format!("slot {s} (LPN {lpn}) in node {t}"));
                }
                d += self.slots[s as usize].dirty as u32;
            }
            if d != node.dirty {
                return Err(format!(
                    "node {t}: {d} dirty entries, counted {}",
                    node.dirty
                ));
            }
            entries += node.entries.len();
            dirty += d;
        }
        if entries != self.index.used() || dirty != self.dirty {
            return Err(format!(
                "{entries} entries in nodes ({dirty} dirty), {} indexed ({} dirty)",
                self.index.used(),
                self.dirty
            ));
        }
        let (range, n, at) = &self.missing;
        let missing = range.clone().filter(|&l| self.index.slot(l) == NIL).count() as u32;
        if *at == self.index.changes() && missing != *n {
            return Err(format!(
                "{range:?}: {missing} LPNs not cached, remembered {n}"
            ));
        }
        if self.bytes() > self.capacity {
            return Err(format!(
                "cache holds {} B, over its {} B",
                self.bytes(),
                self.capacity
            ));
        }
        Ok(())
    }

    /// Heap bytes of simulator memory the cache takes (not the DRAM it models).
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.entry_links.heap_bytes()
            + self.node_links.heap_bytes()
            + self.index.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 64 LPNs in TPs of 8 entries; room for `entries` entries.
    fn cache(entries: u64) -> TpCache {
        TpCache::new(64, 8, entries * ENTRY_BYTES, TpCacheConfig::default())
    }

    /// Like [`cache`], with request-level and selective prefetch off.
    fn plain(entries: u64) -> TpCache {
        let cfg = TpCacheConfig {
            request_prefetch: false,
            selective_prefetch: false,
            ..TpCacheConfig::default()
        };
        TpCache::new(64, 8, entries * ENTRY_BYTES, cfg)
    }

    /// The miss path as an FTL runs it; returns the evictions.
    fn miss(c: &mut TpCache, lpn: u32, req_last: u32, ready: u64) -> Vec<Evicted> {
        assert_eq!(c.lookup(Lpn(lpn)), Lookup::Miss);
        let range = c.load_range(Lpn(lpn), Lpn(req_last));
        let mut ev = Vec::new();
        while let Some(v) = c.evict_for(&range) {
            ev.push(v);
        }
        c.load(Lpn(lpn), range, SimTime(ready));
        c.check().unwrap();
        ev
    }

    fn lpns(c: &TpCache) -> Vec<u32> {
        c.iter().map(|(l, _)| l.0).collect()
    }

    #[test]
    fn two_level_lru_order() {
        let mut c = cache(16);
        miss(&mut c, 3, 3, 0);
        miss(&mut c, 9, 9, 0);
        miss(&mut c, 5, 5, 0);
        // Node of TP 0 is hottest (touched last), its entries 5 then 3; then TP 1.
        assert_eq!(lpns(&c), vec![5, 3, 9]);
        assert_eq!(c.lookup(Lpn(9)), Lookup::Hit { ready: SimTime(0) });
        assert_eq!(lpns(&c), vec![9, 5, 3]);
        assert!(matches!(c.lookup(Lpn(3)), Lookup::Hit { .. }));
        assert_eq!(lpns(&c), vec![3, 5, 9]);
        // A miss touches the existing node.
        assert_eq!(c.lookup(Lpn(12)), Lookup::Miss);
        assert_eq!(lpns(&c), vec![9, 3, 5]);
        assert_eq!((c.entries(), c.nodes(), c.bytes()), (3, 2, 24));
    }

    #[test]
    fn request_level_and_selective_prefetch_ranges() {
        let mut c = cache(32);
        // Request [2, 20]: loads to the end of TP 0 only.
        assert_eq!(c.load_range(Lpn(2), Lpn(20)), 2..8);
        // Selective: 3 consecutive cached entries below 12 (9, 10, 11) → 3 more after the
        // request's last page (12), capped at the TP end (15).
        miss(&mut c, 9, 11, 0);
        assert_eq!(lpns(&c), vec![9, 10, 11]);
        assert_eq!(c.load_range(Lpn(12), Lpn(12)), 12..16);
        assert_eq!(c.load_range(Lpn(12), Lpn(13)), 12..16);
        // A gap breaks the run: 13 has 0 cached right below.
        assert_eq!(c.load_range(Lpn(13), Lpn(13)), 13..14);
        miss(&mut c, 12, 12, 7);
        // Prefetched entries sit at the cold end in LPN order, after the requested one.
        assert_eq!(lpns(&c), vec![12, 9, 10, 11, 13, 14, 15]);
        assert_eq!(c.lookup(Lpn(15)), Lookup::Hit { ready: SimTime(7) });
        assert_eq!((c.stats().loaded, c.stats().prefetched), (7, 5));
        // Capped at what the cache can hold.
        let small = cache(3);
        assert_eq!(small.load_range(Lpn(0), Lpn(7)), 0..3);
        // Prefetch switched off.
        let mut c = plain(32);
        miss(&mut c, 9, 11, 0);
        assert_eq!(c.load_range(Lpn(10), Lpn(12)), 10..11);
    }

    #[test]
    fn eviction_takes_the_coldest_nodes_least_recent_clean_entry() {
        let mut c = plain(4);
        miss(&mut c, 0, 0, 0);
        miss(&mut c, 1, 1, 0);
        miss(&mut c, 2, 2, 0);
        miss(&mut c, 8, 8, 0);
        // TP 0 is the coldest node; its entries from hot to cold: 2, 1, 0. Dirty 0 and 1.
        assert!(c.gc_update(Lpn(0)));
        assert!(c.gc_update(Lpn(1)));
        assert!(!c.gc_update(Lpn(5)));
        assert_eq!(lpns(&c), vec![8, 2, 1, 0]);
        let ev = miss(&mut c, 16, 16, 0);
        assert_eq!(
            ev,
            vec![Evicted {
                lpn: Lpn(2),
                tpn: Tpn(0),
                written_back: 0
            }]
        );
        // Only dirty entries left in TP 0: the least recent (0) goes, with a batch write-back
        // that cleans 1 too.
        let ev = miss(&mut c, 17, 17, 0);
        assert_eq!(
            ev,
            vec![Evicted {
                lpn: Lpn(0),
                tpn: Tpn(0),
                written_back: 2
            }]
        );
        assert_eq!(c.dirty_entries(), 0);
        assert!(c.contains(Lpn(1)) && !c.is_dirty(Lpn(1)));
        // Next: 1 (clean now) empties TP 0's node, which is freed.
        let ev = miss(&mut c, 24, 24, 0);
        assert_eq!(ev[0].lpn, Lpn(1));
        assert_eq!(c.node_len(Tpn(0)), 0);
        assert_eq!(c.nodes(), 3);
        assert_eq!(c.stats().written_back, 2);
        assert_eq!(c.stats().nodes_freed, 1);
    }

    #[test]
    fn clean_tp_cleans_one_node_without_reordering() {
        let mut c = plain(4);
        for l in [0, 1, 8, 9] {
            miss(&mut c, l, l, 0);
        }
        for l in [0, 1, 8] {
            assert!(c.mark_dirty(Lpn(l)));
        }
        let order = lpns(&c);
        assert_eq!(c.clean_tp(Tpn(0)), 2);
        assert_eq!(lpns(&c), order, "LRU order unchanged");
        assert!(!c.is_dirty(Lpn(0)) && !c.is_dirty(Lpn(1)) && c.is_dirty(Lpn(8)));
        assert_eq!((c.dirty_entries(), c.stats().cleaned), (1, 2));
        assert_eq!(c.clean_tp(Tpn(0)), 0);
        assert_eq!(c.clean_tp(Tpn(5)), 0, "an uncached TP");
        c.check().unwrap();
        // TP 0 is the coldest node: its evictions owe no write-back any more.
        let ev = miss(&mut c, 16, 16, 0);
        assert_eq!(ev[0].tpn, Tpn(0));
        assert_eq!(ev[0].written_back, 0);
    }

    #[test]
    fn flush_one_goes_from_the_cold_end_and_sees_nodes_dirtied_behind_it() {
        let mut c = plain(8);
        // Nodes from cold to hot: TP 0, 1, 2, 3, each with one dirty entry.
        for t in 0..4 {
            miss(&mut c, 8 * t, 8 * t, 0);
            assert!(c.mark_dirty(Lpn(8 * t)));
        }
        assert_eq!(c.flush_one(), Some(Tpn(0)));
        assert_eq!(c.flush_one(), Some(Tpn(1)));
        // GC dirties the coldest node again without moving it: the next flush takes it first.
        assert!(c.gc_update(Lpn(0)));
        assert_eq!(c.flush_one(), Some(Tpn(0)));
        assert_eq!(c.flush_one(), Some(Tpn(2)));
        // A write moves TP 1 to the hot end, dirty: it goes after TP 3.
        assert_eq!(c.lookup(Lpn(9)), Lookup::Miss);
        let range = c.load_range(Lpn(9), Lpn(9));
        c.load(Lpn(9), range, SimTime(0));
        assert!(c.mark_dirty(Lpn(9)));
        assert_eq!(c.flush_one(), Some(Tpn(3)));
        assert_eq!(c.flush_one(), Some(Tpn(1)));
        assert_eq!(c.flush_one(), None);
        assert_eq!(c.dirty_entries(), 0);
        c.check().unwrap();
    }

    #[test]
    fn write_marks_dirty_and_moves_hot() {
        let mut c = cache(4);
        miss(&mut c, 0, 0, 0);
        miss(&mut c, 8, 8, 0);
        assert!(!c.mark_dirty(Lpn(3)));
        assert!(c.mark_dirty(Lpn(0)));
        assert!(c.is_dirty(Lpn(0)));
        assert_eq!(lpns(&c), vec![0, 8]);
        assert_eq!(c.dirty_entries(), 1);
        c.check().unwrap();
    }

    #[test]
    fn loading_into_the_only_node_evicts_outside_the_range() {
        let mut c = cache(4);
        miss(&mut c, 0, 3, 0);
        assert_eq!(lpns(&c), vec![0, 1, 2, 3]);
        // Entry 4's miss: selective prefetch would add 4 after it, capped at the cache (4
        // entries): range 4..8 evicts all of 0..4.
        let ev = miss(&mut c, 4, 4, 0);
        assert_eq!(ev.len(), 4);
        assert_eq!(lpns(&c), vec![4, 5, 6, 7]);
    }

    #[test]
    fn selective_prefetch_switches_with_the_node_counter() {
        let mut c = cache(4);
        // Filling: nodes created into free space do not count.
        for l in [0, 8, 16, 24] {
            miss(&mut c, l, l, 0);
        }
        assert!(c.selective_prefetch_on());
        // Full: each new node frees one (one-entry nodes): balanced, stays on.
        for l in [32, 40, 48, 56] {
            miss(&mut c, l, l, 0);
        }
        assert!(c.selective_prefetch_on());
        assert_eq!(c.stats().nodes_created, c.stats().nodes_freed + 4);
        // One node of four entries, then new nodes that each evict one of its entries without
        // freeing it: +1 per miss, off at +3.
        let mut c = cache(8);
        miss(&mut c, 0, 6, 0);
        for (i, l) in [8, 16, 24].into_iter().enumerate() {
            assert!(c.selective_prefetch_on(), "{i}");
            miss(&mut c, l, l, 0);
        }
        // The first of those counted nothing (the cache was not full before it)...
        assert!(c.selective_prefetch_on());
        miss(&mut c, 32, 32, 0);
        assert!(!c.selective_prefetch_on());
        assert_eq!(c.stats().selective_off, 1);
        // Off: a run below 9 no longer extends the range.
        miss(&mut c, 40, 41, 0);
        assert_eq!(c.load_range(Lpn(42), Lpn(42)), 42..43);
        // Nodes vanish faster than they appear: 43..48 loaded into TP 5's node free others.
        for l in 42..48 {
            miss(&mut c, l, l, 0);
        }
        assert!(c.selective_prefetch_on(), "{:?}", c.stats());
        assert_eq!(c.stats().selective_on, 1);
    }
}
