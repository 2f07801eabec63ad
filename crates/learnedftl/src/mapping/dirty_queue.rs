//! The least (or most) recently used *dirty* element of an LRU cache, without walking it.
//!
//! Caches write back their dirty mapping units while the device is idle, in recency order
//! (DFTL and SFTL the least recently used dirty entry or TP, LeaFTL the most recently used
//! group). Scanning the LRU list for it costs every clean unit on the way, on every idle step:
//! on a large device, with most of the cache clean, that walk was most of a run's time (paper
//! geometry at 128 GiB, sequential fill and 128 k random reads: LeaFTL 73 % of its time,
//! SFTL 55 %, DFTL 22 %). TPFTL's two-level cache (also LearnedFTL's) walks its node list
//! instead, one node per cached TP, and never showed in a profile; the queue's bookkeeping on
//! every lookup cost it 8 %, so it keeps the walk.
//!
//! A [`DirtyQueue`] stamps each element with a clock when it is used and keeps
//! `(stamp, id)` entries of dirty elements. Entries go stale when their element is used again
//! (a newer entry replaces it), cleaned or evicted; stale ones are dropped when they reach the
//! end the queue answers from, or all at once when they outnumber the live ones (amortised:
//! at least as many pushes as live entries between two clean-ups). An element used again is
//! the newest, so its entry is appended to a sorted deque at no cost; only an element made
//! dirty while not the most recent (GC updating an entry in place) goes into a heap.
//!
//! The cache keeps its own dirty flags and tells the queue about uses, evictions and elements
//! turning dirty; every query takes the flags as `is_dirty`. The answer is exactly the list's:
//! the first dirty element from the chosen end (checked by [`DirtyQueue::check`]).

use std::collections::{BinaryHeap, VecDeque};

/// Which dirty element a [`DirtyQueue`] answers with.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// The least recently used.
    Oldest,
    /// The most recently used.
    Newest,
}

/// Dirty elements by recency; see the module doc.
#[derive(Clone, Debug)]
pub struct DirtyQueue {
    end: End,
    /// Per id, the clock of its last use (or eviction).
    used: Vec<u64>,
    clock: u64,
    /// Entries in ascending stamps.
    fresh: VecDeque<(u64, u32)>,
    /// Entries queued out of order, keyed so that the heap's top is the answer.
    late: BinaryHeap<(u64, u32)>,
    /// Entries after the last clean-up.
    kept: usize,
}

impl DirtyQueue {
    /// A queue over ids `0..n` answering with `end`.
    pub fn new(n: usize, end: End) -> DirtyQueue {
        DirtyQueue {
            end,
            used: vec![0; n],
            clock: 0,
            fresh: VecDeque::new(),
            late: BinaryHeap::new(),
            kept: 0,
        }
    }

    /// `id` was inserted or used (it is now the most recent); `dirty` says whether it is.
    #[inline]
    pub fn touch(&mut self, id: u32, dirty: bool, is_dirty: impl Fn(u32) -> bool) {
        self.clock += 1;
        self.used[id as usize] = self.clock;
        if dirty {
            // Used again right after its last use (a run of pages of one unit): its entry is
            // still the newest, so it takes the new stamp in place.
            match self.fresh.back_mut() {
                Some(last) if last.1 == id => last.0 = self.clock,
                _ => self.queue(id, is_dirty),
            }
        }
    }

    /// Hints `id`'s stamp, which [`DirtyQueue::touch`] rewrites, into cache.
    #[inline]
    pub fn prefetch(&self, id: u32) {
        crate::host::prefetch(&self.used[id as usize]);
    }

    /// `id` left the cache: its entries are stale from now on.
    #[inline]
    pub fn forget(&mut self, id: u32) {
        self.clock += 1;
        self.used[id as usize] = self.clock;
    }

    /// Cached `id` turned dirty where it stands in the recency order.
    #[inline]
    pub fn dirtied(&mut self, id: u32, is_dirty: impl Fn(u32) -> bool) {
        self.queue(id, is_dirty);
    }

    /// The least or most recently used dirty element (as built), if any.
    pub fn first(&mut self, is_dirty: impl Fn(u32) -> bool) -> Option<u32> {
        while let Some(e) = self.fresh_end() {
            if self.live(e, &is_dirty) {
                break;
            }
            match self.end {
                End::Oldest => self.fresh.pop_front(),
                End::Newest => self.fresh.pop_back(),
            };
        }
        while let Some(e) = self.late_top() {
            if self.live(e, &is_dirty) {
                break;
            }
            self.late.pop();
        }
        match (self.fresh_end(), self.late_top()) {
            (Some(a), Some(b)) => Some(self.better(a, b).1),
            (a, b) => a.or(b).map(|e| e.1),
        }
    }

    /// Checks the queue answers `want` (the list's first dirty element from the end).
    pub fn check(&self, want: Option<u32>, is_dirty: impl Fn(u32) -> bool) -> Result<(), String> {
        let late = self.late.iter().map(|&(k, id)| (self.stamp_of(k), id));
        let got = (self.fresh.iter().copied().chain(late))
            .filter(|&e| self.live(e, &is_dirty))
            .reduce(|a, b| self.better(a, b));
        if got.map(|e| e.1) != want {
            return Err(format!(
                "dirty queue: the first dirty element is {want:?}, the queue says {got:?}"
            ));
        }
        Ok(())
    }

    /// Entries held (live and stale).
    pub fn len(&self) -> usize {
        self.fresh.len() + self.late.len()
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn queue(&mut self, id: u32, is_dirty: impl Fn(u32) -> bool) {
        let e = (self.used[id as usize], id);
        if self.fresh.back().is_none_or(|&top| top < e) {
            self.fresh.push_back(e);
        } else {
            self.late.push((self.key_of(e.0), id));
        }
        if self.len() > 2 * self.kept + 64 {
            // In place: sorted, so copies of one entry are neighbours.
            let mut prev = None;
            let mut fresh = std::mem::take(&mut self.fresh);
            fresh.retain(|&e| {
                let keep = prev != Some(e) && self.live(e, &is_dirty);
                prev = Some(e);
                keep
            });
            let mut late = std::mem::take(&mut self.late).into_vec();
            late.retain(|&(k, id)| self.live((self.stamp_of(k), id), &is_dirty));
            late.sort_unstable();
            late.dedup();
            self.kept = fresh.len() + late.len();
            (self.fresh, self.late) = (fresh, late.into());
        }
    }

    /// Whether entry `e` names a dirty element at its latest use.
    #[inline]
    fn live(&self, (stamp, id): (u64, u32), is_dirty: impl Fn(u32) -> bool) -> bool {
        is_dirty(id) && self.used[id as usize] == stamp
    }

    /// The deque's entry at the end the queue answers from.
    #[inline]
    fn fresh_end(&self) -> Option<(u64, u32)> {
        match self.end {
            End::Oldest => self.fresh.front().copied(),
            End::Newest => self.fresh.back().copied(),
        }
    }

    /// The heap's top, as a `(stamp, id)` entry.
    #[inline]
    fn late_top(&self) -> Option<(u64, u32)> {
        self.late.peek().map(|&(k, id)| (self.stamp_of(k), id))
    }

    /// The heap key of a stamp: the heap's top is the oldest or newest.
    #[inline]
    fn key_of(&self, stamp: u64) -> u64 {
        match self.end {
            End::Oldest => !stamp,
            End::Newest => stamp,
        }
    }

    #[inline]
    fn stamp_of(&self, key: u64) -> u64 {
        self.key_of(key)
    }

    /// Of two entries, the one the queue answers with first.
    #[inline]
    fn better(&self, a: (u64, u32), b: (u64, u32)) -> (u64, u32) {
        match self.end {
            End::Oldest => a.min(b),
            End::Newest => a.max(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::lru::{Links, List};
    use proptest::prelude::*;

    proptest! {
        /// Any mix of uses, evictions, dirtying and cleaning on an LRU list: the queue's answer
        /// is the list's first dirty element from either end, and it stays bounded however
        /// many operations ran.
        #[test]
        fn the_queue_answers_what_walking_the_list_finds(
            ops in prop::collection::vec((0u8..5, 0u32..16), 1..2000),
            newest in any::<bool>(),
        ) {
            let end = if newest { End::Newest } else { End::Oldest };
            let (mut links, mut lru, mut q) = (Links::new(16), List::default(), DirtyQueue::new(16, end));
            let (mut cached, mut dirty) = ([false; 16], [false; 16]);
            for (op, id) in ops {
                let i = id as usize;
                match (op, cached[i]) {
                    (_, false) => {
                        lru.push_front(&mut links, id);
                        (cached[i], dirty[i]) = (true, false);
                        q.touch(id, false, |d| dirty[d as usize]);
                    }
                    (0 | 1, true) => {
                        lru.touch(&mut links, id);
                        q.touch(id, dirty[i], |d| dirty[d as usize]);
                    }
                    (2, true) => {
                        if !dirty[i] {
                            dirty[i] = true;
                            q.dirtied(id, |d| dirty[d as usize]);
                        }
                    }
                    (3, true) => dirty[i] = false,
                    (_, true) => {
                        lru.remove(&mut links, id);
                        cached[i] = false;
                        q.forget(id);
                    }
                }
                let want = match end {
                    End::Oldest => lru.rfind(&links, |d| dirty[d as usize]),
                    End::Newest => lru.iter(&links).find(|&d| dirty[d as usize]),
                };
                prop_assert_eq!(q.check(want, |d| dirty[d as usize]), Ok(()));
                prop_assert_eq!(q.first(|d| dirty[d as usize]), want);
                prop_assert!(q.len() <= 2 * 16 + 65, "{} entries", q.len());
            }
        }
    }
}
