//! LeaFTL's cache of groups: an LRU list (the shared intrusive [`List`]) of whole group tables,
//! each with a dirty bit, and their total size in bytes. Each group's size is the mapping's
//! (it keeps one per group, cached or not), passed in on every change: a second copy here was a
//! second random miss per group changed. What an evicted group costs (a TP program if dirty) is
//! the FTL's business.
//!
//! The idle device writes back the most recently used dirty group, found through a
//! [`DirtyQueue`] rather than a walk of the list.

use crate::mapping::dirty_queue::{DirtyQueue, End};
use crate::mapping::lru::{Links, List, NIL};

/// LRU order, total size and dirty bits of the cached groups.
#[derive(Clone, Debug)]
pub struct GroupCache {
    links: Links,
    lru: List,
    state: Vec<u8>,
    total: u64,
    /// The dirty groups by recency.
    queue: DirtyQueue,
}

const CACHED: u8 = 1;
const DIRTY: u8 = 2;

impl GroupCache {
    /// An empty cache over groups `0..groups`.
    pub fn new(groups: u32) -> GroupCache {
        GroupCache {
            links: Links::new(groups as usize),
            lru: List::default(),
            state: vec![0; groups as usize],
            total: 0,
            queue: DirtyQueue::new(groups as usize, End::Newest),
        }
    }

    /// Whether group `g` is cached.
    #[inline]
    pub fn contains(&self, g: u32) -> bool {
        self.state[g as usize] & CACHED != 0
    }
    /// Hints what asking for group `g` reads into cache: its state, and what a use of it
    /// rewrites (its links and recency stamp).
    #[inline]
    pub fn prefetch(&self, g: u32) {
        crate::host::prefetch(&self.state[g as usize]);
        self.links.prefetch(g);
        self.queue.prefetch(g);
    }
    /// Hints the links of `g`'s neighbours, which a use of `g` rewrites (best once
    /// [`GroupCache::prefetch`] hinted `g`'s own).
    #[inline]
    pub fn prefetch_neighbours(&self, g: u32) {
        self.links.prefetch_neighbours(g);
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
        self.total += bytes;
        self.lru.push_front(&mut self.links, g);
        let state = &self.state;
        self.queue
            .touch(g, false, |g| state[g as usize] & DIRTY != 0);
    }

    /// Makes cached group `g` the most recently used.
    #[inline]
    pub fn touch(&mut self, g: u32) {
        self.lru.touch(&mut self.links, g);
        let state = &self.state;
        let dirty = state[g as usize] & DIRTY != 0;
        self.queue
            .touch(g, dirty, |g| state[g as usize] & DIRTY != 0);
    }

    /// Records that cached group `g` went from `old` to `new` bytes.
    #[inline]
    pub fn resize(&mut self, g: u32, old: u64, new: u64) {
        debug_assert!(self.contains(g));
        self.total = self.total - old + new;
    }

    /// Marks cached group `g` dirty.
    #[inline]
    pub fn mark_dirty(&mut self, g: u32) {
        if !self.is_dirty(g) {
            self.state[g as usize] |= DIRTY;
            let state = &self.state;
            self.queue.dirtied(g, |g| state[g as usize] & DIRTY != 0);
        }
    }

    /// Marks cached group `g` clean (its TP was just written back).
    #[inline]
    pub fn clean(&mut self, g: u32) {
        self.state[g as usize] &= !DIRTY;
    }

    /// The most recently used dirty group, if any.
    pub fn first_dirty(&mut self) -> Option<u32> {
        let state = &self.state;
        self.queue.first(|g| state[g as usize] & DIRTY != 0)
    }
    /// Drops group `g` (`bytes` large) from the cache; returns whether it was dirty.
    pub fn remove(&mut self, g: u32, bytes: u64) -> bool {
        let dirty = self.is_dirty(g);
        self.lru.remove(&mut self.links, g);
        self.queue.forget(g);
        self.total -= bytes;
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
            if !self.contains(g) {
                return Err(format!(
                    "listed group {g} has flags {}",
                    self.state[g as usize]
                ));
            }
            total += size(g);
        }
        let flagged = self.state.iter().filter(|&&s| s & CACHED != 0).count();
        if flagged != listed.len() || total != self.total {
            return Err(format!(
                "group cache: {} listed, {flagged} flagged, {total} B vs {} B counted",
                listed.len(),
                self.total
            ));
        }
        let first = listed.iter().copied().find(|&g| self.is_dirty(g));
        self.queue.check(first, |g| self.is_dirty(g))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        c.resize(1, 10, 30);
        assert_eq!(c.total(), 180);
        c.mark_dirty(5);
        c.mark_dirty(5);
        c.mark_dirty(1);
        assert_eq!(c.first_dirty(), Some(1));
        c.clean(1);
        c.clean(1);
        assert_eq!(c.first_dirty(), Some(5));
        assert!(c.remove(5, 50));
        assert_eq!(c.first_dirty(), None);
        assert!(!c.remove(3, 100));
        assert_eq!((c.len(), c.total(), c.lru()), (1, 30, Some(1)));
        c.check(|g| if g == 1 { 30 } else { 0 }).unwrap();
        assert!(c.check(|_| 31).is_err());
        assert!(!c.contains(5) && c.contains(1));
    }
}
