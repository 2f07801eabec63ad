//! Finding the few LPNs held at once (a mapping cache, a write buffer) without an entry per LPN
//! of the device. [`KeyedSlots`] is an open-addressing hash table of `u32` slots found by key
//! (linear probing, at most half full, backward-shift removal; 8 B per bucket, two to four
//! buckets per slot); [`SlotIndex`] adds a slab of slots recycled through a free stack.
//!
//! A table per key would cost 4 B for every LPN of the device — 4 GiB at 4 TiB for a cache of
//! a few percent of them — and miss the CPU caches on every lookup; these grow with what they
//! hold.

use super::lru::Links;
pub use super::lru::NIL;

/// Slots by the hash of their key.
#[derive(Clone, Debug)]
pub struct KeyedSlots {
    /// `(key, slot)` per bucket, slot [`NIL`] when empty. The key sits beside its slot so that
    /// a probe and a removal's shift read the table alone: asking the owner for each probed
    /// slot's key cost a cache miss per step, a third of a sequential fill's time at 128 GiB.
    table: Vec<(u32, u32)>,
    /// `64 - log2(table.len())`: the shift that turns a product into a bucket.
    shift: u32,
    /// Slots filed.
    filed: usize,
}

impl KeyedSlots {
    /// Empty, with room for `slots` slots before it first grows.
    pub fn new(slots: usize) -> KeyedSlots {
        let buckets = (2 * slots).next_power_of_two().max(2);
        KeyedSlots {
            table: vec![(NIL, NIL); buckets],
            shift: 64 - buckets.trailing_zeros(),
            filed: 0,
        }
    }

    /// Twice the buckets, every slot filed again (an insert that would leave the table more
    /// than half full).
    #[cold]
    fn grow(&mut self) {
        let old = std::mem::replace(self, KeyedSlots::new(self.table.len()));
        for (key, slot) in old.table.into_iter().filter(|e| e.1 != NIL) {
            let b = self.bucket(key);
            self.table[b] = (key, slot);
        }
        self.filed = old.filed;
    }

    /// `key`'s home bucket (Fibonacci hashing). Consecutive LPNs land far apart: homes by runs
    /// of consecutive keys (one cache line of buckets for a range scan) were tried and doubled
    /// the time of a sequential fill, their runs of full buckets colliding.
    #[inline]
    fn home(&self, key: u32) -> usize {
        ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    #[inline]
    fn next(&self, b: usize) -> usize {
        (b + 1) & (self.table.len() - 1)
    }

    /// The bucket holding `key`, or the empty bucket that ends its probe.
    #[inline]
    fn bucket(&self, key: u32) -> usize {
        let mut b = self.home(key);
        loop {
            let (k, s) = self.table[b];
            if s == NIL || k == key {
                return b;
            }
            b = self.next(b);
        }
    }

    /// `key`'s slot, or [`NIL`].
    #[inline]
    pub fn find(&self, key: u32) -> u32 {
        self.table[self.bucket(key)].1
    }

    /// Hints `key`'s home bucket into cache ([`crate::host::prefetch()`]).
    #[inline]
    pub fn prefetch(&self, key: u32) {
        crate::host::prefetch(&self.table[self.home(key)]);
    }

    /// Files `slot` under `key`, which has no slot yet.
    #[inline]
    pub fn insert(&mut self, key: u32, slot: u32) {
        if 2 * (self.filed + 1) > self.table.len() {
            self.grow();
        }
        let b = self.bucket(key);
        debug_assert_eq!(self.table[b].1, NIL, "key {key} already has a slot");
        self.table[b] = (key, slot);
        self.filed += 1;
    }

    /// `key` (which has a slot) moves to `slot`.
    #[inline]
    pub fn relocate(&mut self, key: u32, slot: u32) {
        let b = self.bucket(key);
        debug_assert_ne!(self.table[b].1, NIL, "key {key} has no slot");
        self.table[b].1 = slot;
    }

    /// Unfiles `key` (which has a slot).
    pub fn remove(&mut self, key: u32) {
        let mut hole = self.bucket(key);
        debug_assert_ne!(self.table[hole].1, NIL, "key {key} has no slot");
        // Backward shift: move up each later entry of the run whose home is not between the
        // hole and it, so every probe still meets its key before an empty bucket.
        let mask = self.table.len() - 1;
        let mut b = self.next(hole);
        loop {
            let e = self.table[b];
            if e.1 == NIL {
                break;
            }
            let home = self.home(e.0);
            if (b.wrapping_sub(home) & mask) >= (b.wrapping_sub(hole) & mask) {
                self.table[hole] = e;
                hole = b;
            }
            b = self.next(b);
        }
        self.table[hole] = (NIL, NIL);
        self.filed -= 1;
    }

    /// Unfiles every key.
    pub fn clear(&mut self) {
        self.table.fill((NIL, NIL));
        self.filed = 0;
    }

    /// Slots filed.
    #[inline]
    pub fn len(&self) -> usize {
        self.filed
    }

    /// Whether no slot is filed.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.filed == 0
    }

    /// Checks the count against the buckets.
    pub fn check(&self) -> Result<(), String> {
        let filed = self.table.iter().filter(|e| e.1 != NIL).count();
        match filed == self.filed {
            true => Ok(()),
            false => Err(format!("{filed} slots filed, {} counted", self.filed)),
        }
    }

    /// Heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.table.capacity() * 8
    }
}

/// A slab of `capacity` cache slots and the slot of each cached key (LPN). Nothing allocates
/// after construction; the caller keeps per-slot data in its own arrays indexed by slot.
#[derive(Clone, Debug)]
pub struct SlotIndex {
    slots: KeyedSlots,
    key_of: Vec<u32>,
    free: Vec<u32>,
    /// Inserts and removals so far.
    changes: u64,
}

impl SlotIndex {
    /// How far ahead a walk over consecutive keys hints their buckets into cache.
    pub const AHEAD: u32 = 8;

    /// `capacity` slots, all free (keys are any `u32` but [`NIL`]).
    pub fn new(capacity: usize) -> SlotIndex {
        SlotIndex {
            slots: KeyedSlots::new(capacity),
            key_of: vec![NIL; capacity],
            free: (0..capacity as u32).rev().collect(),
            changes: 0,
        }
    }
    /// Inserts and removals so far: while it is unchanged, so is which keys have slots.
    #[inline]
    pub fn changes(&self) -> u64 {
        self.changes
    }
    /// The slot holding `key`, or [`NIL`].
    #[inline]
    pub fn slot(&self, key: u32) -> u32 {
        self.slots.find(key)
    }
    /// Hints `key`'s entry into cache ([`crate::host::prefetch()`]).
    #[inline]
    pub fn prefetch(&self, key: u32) {
        self.slots.prefetch(key);
    }
    /// Hints into cache the bucket of the slot [`SlotIndex::AHEAD`] links before `slot` in an
    /// LRU list: evictions go on from the cold end, and the LPNs they will take hash far apart
    /// (each bucket a miss of its own). The walk is pipelined: each eviction goes one link
    /// further than the last, so the links and key of the slot one further are hinted too, and
    /// the next call's walk waits on no miss (old slots of a long list lie anywhere).
    #[inline]
    pub fn prefetch_before(&self, links: &Links, slot: u32) {
        let mut s = slot;
        for _ in 0..Self::AHEAD {
            s = links.prev(s);
            if s == NIL {
                return;
            }
        }
        self.prefetch(self.key(s));
        let far = links.prev(s);
        if far != NIL {
            links.prefetch(far);
            self.prefetch_key(far);
        }
    }
    /// The slot of each key of `range` in order ([`NIL`] for none). Consecutive keys land in
    /// scattered buckets, so the buckets [`SlotIndex::AHEAD`] keys on are hinted into cache
    /// while these are read.
    pub fn slots_in(&self, range: std::ops::Range<u32>) -> impl Iterator<Item = u32> + '_ {
        for k in range.clone().take(Self::AHEAD as usize) {
            self.prefetch(k);
        }
        let end = range.end;
        range.map(move |k| {
            if k + Self::AHEAD < end {
                self.prefetch(k + Self::AHEAD);
            }
            self.slot(k)
        })
    }
    /// How many keys of `range` have no slot.
    pub fn count_missing(&self, range: std::ops::Range<u32>) -> u32 {
        self.slots_in(range).filter(|&s| s == NIL).count() as u32
    }
    /// Hints the key in `slot` into cache.
    #[inline]
    pub fn prefetch_key(&self, slot: u32) {
        crate::host::prefetch(&self.key_of[slot as usize]);
    }
    /// The key in `slot`, or [`NIL`] if the slot is free.
    #[inline]
    pub fn key(&self, slot: u32) -> u32 {
        self.key_of[slot as usize]
    }
    /// Slots in use.
    #[inline]
    pub fn used(&self) -> u32 {
        (self.key_of.len() - self.free.len()) as u32
    }
    /// Total slots.
    #[inline]
    pub fn capacity(&self) -> u32 {
        self.key_of.len() as u32
    }
    /// Heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.slots.heap_bytes() + (self.key_of.capacity() + self.free.capacity()) * 4
    }
    /// Gives `key` (which has no slot) a free slot; `None` when every slot is in use.
    #[inline]
    pub fn insert(&mut self, key: u32) -> Option<u32> {
        let s = self.free.pop()?;
        self.changes += 1;
        self.key_of[s as usize] = key;
        self.slots.insert(key, s);
        Some(s)
    }
    /// Frees `slot` and unmaps its key.
    #[inline]
    pub fn remove(&mut self, slot: u32) {
        self.slots.remove(self.key_of[slot as usize]);
        self.key_of[slot as usize] = NIL;
        self.changes += 1;
        self.free.push(slot);
    }
    /// Checks that keys and slots point at each other and the free stack holds the rest.
    pub fn check(&self) -> Result<(), String> {
        let mut used = 0;
        for (s, &k) in self.key_of.iter().enumerate() {
            if k != NIL {
                used += 1;
                if self.slot(k) != s as u32 {
                    return Err(format!(
                        "slot {s} holds key {k}, whose slot is {}",
                        self.slot(k)
                    ));
                }
            }
        }
        self.slots.check()?;
        let mapped = self.slots.len();
        if mapped != used || used + self.free.len() != self.key_of.len() {
            return Err(format!(
                "{mapped} keys with slots, {used} slots in use, {} free of {}",
                self.free.len(),
                self.key_of.len()
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
        /// Inserts, moves and removals in any order (keys crowded into few buckets, so runs
        /// wrap and removals shift) find what a map would.
        #[test]
        fn keyed_slots_find_what_a_map_would(
            ops in proptest::collection::vec((0u32..48, 0u8..3), 1..400),
        ) {
            const SLOTS: usize = 20;
            // Keys far apart and close together alike.
            let key = |k: u32| k.wrapping_mul(if k % 2 == 0 { 1 } else { 0x0100_0001 });
            // Room for a few: it grows.
            let mut t = KeyedSlots::new(3);
            let mut key_of = [NIL; SLOTS];
            let mut model = std::collections::BTreeMap::new();
            for (k, op) in ops {
                let k = key(k);
                match (model.get(&k).copied(), op) {
                    (None, _) => {
                        if let Some(s) = (0..SLOTS as u32).find(|&s| key_of[s as usize] == NIL) {
                            key_of[s as usize] = k;
                            t.insert(k, s);
                            model.insert(k, s);
                        }
                    }
                    (Some(s), 0) => {
                        t.remove(k);
                        key_of[s as usize] = NIL;
                        model.remove(&k);
                    }
                    (Some(s), 1) => {
                        if let Some(to) = (0..SLOTS as u32).find(|&s| key_of[s as usize] == NIL) {
                            t.relocate(k, to);
                            key_of[s as usize] = NIL;
                            key_of[to as usize] = k;
                            model.insert(k, to);
                        }
                    }
                    _ => {}
                }
                for k in (0..48).map(key) {
                    let want = model.get(&k).copied().unwrap_or(NIL);
                    prop_assert_eq!(t.find(k), want);
                }
                prop_assert_eq!(t.len(), model.len());
                prop_assert!(t.check().is_ok());
            }
        }
    }

    #[test]
    fn slot_index_recycles_slots() {
        let mut s = SlotIndex::new(2);
        let a = s.insert(7).unwrap();
        let b = s.insert(3).unwrap();
        assert_ne!(a, b);
        assert_eq!(s.insert(4), None);
        assert_eq!((s.slot(7), s.key(b), s.used()), (a, 3, 2));
        s.remove(a);
        assert_eq!(s.slot(7), NIL);
        assert_eq!(s.insert(4), Some(a));
        s.check().unwrap();
    }
}
