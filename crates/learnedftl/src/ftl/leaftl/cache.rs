//! LeaFTL's cache of groups: an LRU list (the shared intrusive [`List`]) of whole group tables,
//! each with its size in bytes and a dirty bit. What an evicted group costs (a TP program if
//! dirty) is the FTL's business.
//!
//! The idle device writes back the most recently used dirty group. Walking the list for it
//! costs every clean group more recent than it (on a large device, most of the cache on every
//! idle step), so the dirty groups are also queued by recency: each use stamps a group with a
//! clock, and `(stamp, group)` entries are kept, stale ones (the group used again, cleaned or
//! evicted since) dropped when they reach the top or when they outnumber the dirty groups. A
//! dirty group used again is the newest entry, appended to a sorted stack at no cost; only a
//! group dirtied while not the most recent (GC learning into it) goes into a max-heap.

use crate::mapping::lru::{Links, List, NIL};
use std::collections::BinaryHeap;

/// LRU order, sizes and dirty bits of the cached groups.
#[derive(Clone, Debug)]
pub struct GroupCache {
    links: Links,
    lru: List,
    bytes: Vec<u32>,
    state: Vec<u8>,
    total: u64,
    /// Dirty groups.
    dirty: u32,
    /// Per group, the clock of its last insertion or use (larger: more recently used).
    used: Vec<u64>,
    clock: u64,
    /// Dirty groups by recency, with stale entries (see the module doc): ascending stamps...
    fresh: Vec<(u64, u32)>,
    /// ...and the entries older than the stack's top when they were queued.
    late: BinaryHeap<(u64, u32)>,
}

const CACHED: u8 = 1;
const DIRTY: u8 = 2;

impl GroupCache {
    /// An empty cache over groups `0..groups`.
    pub fn new(groups: u32) -> GroupCache {
        GroupCache {
            links: Links::new(groups as usize),
            lru: List::default(),
            bytes: vec![0; groups as usize],
            state: vec![0; groups as usize],
            total: 0,
            dirty: 0,
            used: vec![0; groups as usize],
            clock: 0,
            fresh: Vec::new(),
            late: BinaryHeap::new(),
        }
    }

    /// Whether group `g` is cached.
    #[inline]
    pub fn contains(&self, g: u32) -> bool {
        self.state[g as usize] & CACHED != 0
    }
    /// Whether cached group `g` is dirty.
    #[inline]
    pub fn is_dirty(&self, g: u32) -> bool {
        self.state[g as usize] & DIRTY != 0
    }
    /// Bytes of every cached group.
    #[inline]
    pub fn total(&self) -> u64 {
        self.total
    }
    /// Cached groups.
    #[inline]
    pub fn len(&self) -> u32 {
        self.lru.len()
    }
    /// Whether no group is cached.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.lru.is_empty()
    }
    /// The least recently used group.
    #[inline]
    pub fn lru(&self) -> Option<u32> {
        let t = self.lru.tail();
        (t != NIL).then_some(t)
    }

    /// Caches group `g` (clean, `bytes` large) as most recently used.
    pub fn insert(&mut self, g: u32, bytes: u64) {
        debug_assert!(!self.contains(g));
        self.state[g as usize] = CACHED;
        self.bytes[g as usize] = bytes as u32;
        self.total += bytes;
        self.lru.push_front(&mut self.links, g);
        self.stamp(g);
    }

    /// Makes cached group `g` the most recently used.
    #[inline]
    pub fn touch(&mut self, g: u32) {
        self.lru.touch(&mut self.links, g);
        self.stamp(g);
        if self.is_dirty(g) {
            self.queue(g);
        }
    }

    /// Records that `g` was just used.
    #[inline]
    fn stamp(&mut self, g: u32) {
        self.clock += 1;
        self.used[g as usize] = self.clock;
    }

    /// Queues dirty `g` at its recency; drops the stale entries once they outnumber the dirty
    /// groups (amortised: at least as many pushes as live entries between two clean-ups).
    fn queue(&mut self, g: u32) {
        let e = (self.used[g as usize], g);
        if self.fresh.last().is_none_or(|&top| top < e) {
            self.fresh.push(e);
        } else {
            self.late.push(e);
        }
        if self.fresh.len() + self.late.len() > 2 * self.dirty as usize + 64 {
            let mut fresh = std::mem::take(&mut self.fresh);
            fresh.retain(|&e| self.live(e));
            fresh.dedup();
            let mut late = std::mem::take(&mut self.late).into_vec();
            late.retain(|&e| self.live(e));
            late.sort_unstable();
            late.dedup();
            (self.fresh, self.late) = (fresh, BinaryHeap::from(late));
        }
    }

    /// Queued entries.
    #[cfg(test)]
    fn queued(&self) -> usize {
        self.fresh.len() + self.late.len()
    }

    /// Whether a heap entry still names a dirty group at its latest use.
    #[inline]
    fn live(&self, (used, g): (u64, u32)) -> bool {
        self.is_dirty(g) && self.used[g as usize] == used
    }

    /// Records the new size of cached group `g`.
    #[inline]
    pub fn resize(&mut self, g: u32, bytes: u64) {
        let old = std::mem::replace(&mut self.bytes[g as usize], bytes as u32);
        self.total = self.total - old as u64 + bytes;
    }

    /// Marks cached group `g` dirty.
    #[inline]
    pub fn mark_dirty(&mut self, g: u32) {
        if !self.is_dirty(g) {
            self.dirty += 1;
            self.state[g as usize] |= DIRTY;
            self.queue(g);
        }
    }

    /// Marks cached group `g` clean (its TP was just written back).
    #[inline]
    pub fn clean(&mut self, g: u32) {
        self.dirty -= self.is_dirty(g) as u32;
        self.state[g as usize] &= !DIRTY;
    }

    /// The most recently used dirty group, if any.
    pub fn first_dirty(&mut self) -> Option<u32> {
        while self.fresh.last().is_some_and(|&e| !self.live(e)) {
            self.fresh.pop();
        }
        while self.late.peek().is_some_and(|&e| !self.live(e)) {
            self.late.pop();
        }
        self.fresh.last().max(self.late.peek()).map(|e| e.1)
    }
    /// Drops group `g` from the cache; returns whether it was dirty.
    pub fn remove(&mut self, g: u32) -> bool {
        let dirty = self.is_dirty(g);
        self.dirty -= dirty as u32;
        self.lru.remove(&mut self.links, g);
        self.total -= std::mem::take(&mut self.bytes[g as usize]) as u64;
        self.state[g as usize] = 0;
        dirty
    }

    /// Cached groups, most recently used first.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.lru.iter(&self.links)
    }

    /// Checks the list, the flags and the byte total agree; `size` gives each group's true size.
    pub fn check(&self, size: impl Fn(u32) -> u64) -> Result<(), String> {
        let listed = self.lru.check(&self.links)?;
        let mut total = 0;
        for &g in &listed {
            if !self.contains(g) || self.bytes[g as usize] as u64 != size(g) {
                return Err(format!(
                    "cached group {g}: flags {}, {} B recorded, {} B true",
                    self.state[g as usize],
                    self.bytes[g as usize],
                    size(g)
                ));
            }
            total += size(g);
        }
        let flagged = self.state.iter().filter(|&&s| s & CACHED != 0).count();
        let dirty = self.state.iter().filter(|&&s| s & DIRTY != 0).count();
        if flagged != listed.len() || total != self.total || dirty != self.dirty as usize {
            return Err(format!(
                "group cache: {} listed, {flagged} flagged, {total} B vs {} B counted, \
                 {dirty} dirty vs {} counted",
                listed.len(),
                self.total,
                self.dirty
            ));
        }
        let first = listed.iter().copied().find(|&g| self.is_dirty(g));
        let queued = (self.fresh.iter().chain(self.late.iter()).copied())
            .filter(|&e| self.live(e))
            .max();
        if queued.map(|e| e.1) != first {
            return Err(format!(
                "group cache: most recent dirty group {first:?}, the heap says {queued:?}"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any mix of inserts, uses, dirtying, cleaning and evictions: the heap's answer is the
        /// first dirty group of the LRU list, and the heap stays bounded.
        #[test]
        fn the_most_recent_dirty_group_is_the_lists_first_dirty_one(
            ops in prop::collection::vec((0u8..5, 0u32..16), 1..2000),
        ) {
            let mut c = GroupCache::new(16);
            for (op, g) in ops {
                match (op, c.contains(g)) {
                    (_, false) => c.insert(g, 1),
                    (0 | 1, true) => c.touch(g),
                    (2, true) => c.mark_dirty(g),
                    (3, true) => c.clean(g),
                    (_, true) => {
                        c.remove(g);
                    }
                }
                let first = c.iter().find(|&g| c.is_dirty(g));
                prop_assert_eq!(c.first_dirty(), first);
                // Bounded by the groups, however many operations ran.
                prop_assert!(c.queued() <= 2 * 16 + 65);
                prop_assert_eq!(c.check(|_| 1), Ok(()));
            }
        }
    }

    #[test]
    fn order_sizes_and_dirt() {
        let mut c = GroupCache::new(8);
        c.insert(3, 100);
        c.insert(5, 50);
        c.insert(1, 10);
        assert_eq!(c.lru(), Some(3));
        c.touch(3);
        assert_eq!(c.lru(), Some(5));
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![3, 1, 5]);
        c.resize(1, 30);
        assert_eq!(c.total(), 180);
        c.mark_dirty(5);
        c.mark_dirty(5);
        c.mark_dirty(1);
        assert_eq!(c.first_dirty(), Some(1));
        c.clean(1);
        c.clean(1);
        assert_eq!(c.first_dirty(), Some(5));
        assert!(c.remove(5));
        assert_eq!(c.first_dirty(), None);
        assert!(!c.remove(3));
        assert_eq!((c.len(), c.total(), c.lru()), (1, 30, Some(1)));
        c.check(|g| if g == 1 { 30 } else { 0 }).unwrap();
        assert!(c.check(|_| 31).is_err());
        assert!(!c.contains(5) && c.contains(1));
    }
}
