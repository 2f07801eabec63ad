//! Intrusive doubly-linked LRU lists over dense `u32` indices.
//!
//! The links of every element live in one flat [`Links`] array (indexed by the element's id: a
//! cache slot, a TP number); a [`List`] is only a head, a tail and a length, so one `Links`
//! array can carry many disjoint lists (TPFTL keeps one list of entries per TP node in the same
//! array). The head is the most recently used end, the tail the least. Nothing allocates after
//! construction.
//!
//! [`SlotIndex`] maps dense keys (LPNs) to the slots of a fixed-size cache slab.

/// "No element".
pub const NIL: u32 = u32::MAX;

/// `prev`/`next` links of every element, by id.
#[derive(Clone, Debug, Default)]
pub struct Links {
    prev: Vec<u32>,
    next: Vec<u32>,
}

impl Links {
    /// Links for ids `0..n`, none linked.
    pub fn new(n: usize) -> Links {
        Links {
            prev: vec![NIL; n],
            next: vec![NIL; n],
        }
    }
    /// Makes room for ids `0..n` (for lists over a growing arena, e.g. tree nodes).
    pub fn grow(&mut self, n: usize) {
        if self.prev.len() < n {
            self.prev.resize(n, NIL);
            self.next.resize(n, NIL);
        }
    }
    /// The element after `i` (towards the tail, i.e. less recent), or [`NIL`].
    #[inline]
    pub fn next(&self, i: u32) -> u32 {
        self.next[i as usize]
    }
    /// The element before `i` (towards the head, i.e. more recent), or [`NIL`].
    #[inline]
    pub fn prev(&self, i: u32) -> u32 {
        self.prev[i as usize]
    }
    /// Heap bytes of the links.
    pub fn heap_bytes(&self) -> usize {
        (self.prev.capacity() + self.next.capacity()) * 4
    }
}

/// One list threaded through a [`Links`] array.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct List {
    head: u32,
    tail: u32,
    len: u32,
}

impl Default for List {
    fn default() -> Self {
        List {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

impl List {
    /// Most recently used element, or [`NIL`].
    #[inline]
    pub fn head(&self) -> u32 {
        self.head
    }
    /// Least recently used element, or [`NIL`].
    #[inline]
    pub fn tail(&self) -> u32 {
        self.tail
    }
    /// Number of elements.
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }
    /// Whether the list is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Links unlinked element `i` at the head (most recent end).
    #[inline]
    pub fn push_front(&mut self, l: &mut Links, i: u32) {
        l.prev[i as usize] = NIL;
        l.next[i as usize] = self.head;
        if self.head == NIL {
            self.tail = i;
        } else {
            l.prev[self.head as usize] = i;
        }
        self.head = i;
        self.len += 1;
    }

    /// Links unlinked element `i` at the tail (least recent end).
    #[inline]
    pub fn push_back(&mut self, l: &mut Links, i: u32) {
        l.next[i as usize] = NIL;
        l.prev[i as usize] = self.tail;
        if self.tail == NIL {
            self.head = i;
        } else {
            l.next[self.tail as usize] = i;
        }
        self.tail = i;
        self.len += 1;
    }

    /// Unlinks element `i`, which must be on this list.
    #[inline]
    pub fn remove(&mut self, l: &mut Links, i: u32) {
        let (p, n) = (l.prev[i as usize], l.next[i as usize]);
        if p == NIL {
            self.head = n;
        } else {
            l.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            l.prev[n as usize] = p;
        }
        l.prev[i as usize] = NIL;
        l.next[i as usize] = NIL;
        self.len -= 1;
    }

    /// Moves element `i` (on this list) to the head.
    #[inline]
    pub fn touch(&mut self, l: &mut Links, i: u32) {
        if self.head != i {
            self.remove(l, i);
            self.push_front(l, i);
        }
    }

    /// Iterates from the head (most recent) to the tail.
    pub fn iter<'a>(&self, l: &'a Links) -> impl Iterator<Item = u32> + 'a {
        let mut cur = self.head;
        std::iter::from_fn(move || {
            (cur != NIL).then(|| {
                let i = cur;
                cur = l.next(i);
                i
            })
        })
    }

    /// The least recently used element for which `pred` holds (a scan from the tail).
    pub fn rfind(&self, l: &Links, mut pred: impl FnMut(u32) -> bool) -> Option<u32> {
        let mut cur = self.tail;
        while cur != NIL {
            if pred(cur) {
                return Some(cur);
            }
            cur = l.prev(cur);
        }
        None
    }

    /// Checks the list's links are consistent (both directions, length); returns its elements
    /// from head to tail.
    pub fn check(&self, l: &Links) -> Result<Vec<u32>, String> {
        let mut out = Vec::with_capacity(self.len as usize);
        let mut prev = NIL;
        let mut cur = self.head;
        while cur != NIL {
            if out.len() > self.len as usize {
                return Err(format!("list longer than its length {}", self.len));
            }
            if l.prev(cur) != prev {
                return Err(format!("element {cur}: prev {} != {prev}", l.prev(cur)));
            }
            out.push(cur);
            prev = cur;
            cur = l.next(cur);
        }
        if prev != self.tail || out.len() != self.len as usize {
            return Err(format!(
                "list of {} elements ending at {prev}, but length {} and tail {}",
                out.len(),
                self.len,
                self.tail
            ));
        }
        Ok(out)
    }
}

/// A slab of `capacity` cache slots and the slot of each cached key (LPN), in an
/// open-addressing hash table of slots (linear probing, at most half full, backward-shift
/// removal). A table per key would cost 4 B for every LPN of the device, which at 4 TiB is
/// 4 GiB for a cache of a few percent of them; this one grows with the cache (8–16 B per slot)
/// and is small enough to stay in the CPU caches. Slots are recycled through a free stack, so
/// nothing allocates after construction; the caller keeps per-slot data in its own arrays
/// indexed by slot.
#[derive(Clone, Debug)]
pub struct SlotIndex {
    /// Slots by the hash of their key; [`NIL`] for an empty bucket.
    table: Vec<u32>,
    /// `64 - log2(table.len())`: the shift that turns a product into a bucket.
    shift: u32,
    key_of: Vec<u32>,
    free: Vec<u32>,
    /// Inserts and removals so far.
    changes: u64,
}

impl SlotIndex {
    /// `capacity` slots, all free (keys are any `u32` but [`NIL`]).
    pub fn new(capacity: usize) -> SlotIndex {
        let buckets = (2 * capacity).next_power_of_two().max(2);
        SlotIndex {
            table: vec![NIL; buckets],
            shift: 64 - buckets.trailing_zeros(),
            key_of: vec![NIL; capacity],
            free: (0..capacity as u32).rev().collect(),
            changes: 0,
        }
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
    /// The bucket holding `key`'s slot, or the empty bucket that ends its probe.
    #[inline]
    fn bucket(&self, key: u32) -> usize {
        let mut b = self.home(key);
        loop {
            let s = self.table[b];
            if s == NIL || self.key_of[s as usize] == key {
                return b;
            }
            b = self.next(b);
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
        self.table[self.bucket(key)]
    }
    /// Hints `key`'s home bucket into cache ([`crate::host::prefetch()`]).
    #[inline]
    pub fn prefetch(&self, key: u32) {
        crate::host::prefetch(&self.table[self.home(key)]);
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
        (self.table.capacity() + self.key_of.capacity() + self.free.capacity()) * 4
    }
    /// Gives `key` (which has no slot) a free slot; `None` when every slot is in use.
    #[inline]
    pub fn insert(&mut self, key: u32) -> Option<u32> {
        let s = self.free.pop()?;
        self.changes += 1;
        let b = self.bucket(key);
        debug_assert_eq!(self.table[b], NIL, "key {key} already has a slot");
        self.table[b] = s;
        self.key_of[s as usize] = key;
        Some(s)
    }
    /// Frees `slot` and unmaps its key.
    #[inline]
    pub fn remove(&mut self, slot: u32) {
        let mut hole = self.bucket(self.key_of[slot as usize]);
        self.key_of[slot as usize] = NIL;
        self.changes += 1;
        self.free.push(slot);
        // Backward shift: move up each later entry of the run whose home is not between the
        // hole and it, so every probe still meets its key before an empty bucket.
        let mask = self.table.len() - 1;
        let mut b = self.next(hole);
        loop {
            let s = self.table[b];
            if s == NIL {
                break;
            }
            let home = self.home(self.key_of[s as usize]);
            if (b.wrapping_sub(home) & mask) >= (b.wrapping_sub(hole) & mask) {
                self.table[hole] = s;
                hole = b;
            }
            b = self.next(b);
        }
        self.table[hole] = NIL;
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
        let mapped = self.table.iter().filter(|&&s| s != NIL).count();
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

    #[test]
    fn lists_keep_recency_order() {
        let mut l = Links::new(8);
        let mut a = List::default();
        let mut b = List::default();
        for i in 0..4 {
            a.push_front(&mut l, i);
        }
        b.push_back(&mut l, 5);
        b.push_back(&mut l, 6);
        assert_eq!(a.check(&l).unwrap(), vec![3, 2, 1, 0]);
        a.touch(&mut l, 1);
        assert_eq!(a.check(&l).unwrap(), vec![1, 3, 2, 0]);
        a.remove(&mut l, 0);
        a.remove(&mut l, 1);
        assert_eq!(a.check(&l).unwrap(), vec![3, 2]);
        assert_eq!((a.head(), a.tail(), a.len()), (3, 2, 2));
        a.push_back(&mut l, 7);
        assert_eq!(a.iter(&l).collect::<Vec<_>>(), vec![3, 2, 7]);
        assert_eq!(b.check(&l).unwrap(), vec![5, 6]);
        b.remove(&mut l, 5);
        b.remove(&mut l, 6);
        assert!(b.is_empty() && b.head() == NIL && b.tail() == NIL);
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

    proptest::proptest! {
        /// Inserts and removals in any order (keys crowded into few buckets, so runs wrap and
        /// removals shift) find what a map would.
        #[test]
        fn slot_index_finds_what_a_map_would(
            ops in proptest::collection::vec((0u32..48, proptest::bool::ANY), 1..400),
        ) {
            let mut s = SlotIndex::new(20);
            let mut model = std::collections::BTreeMap::new();
            for (k, insert) in ops {
                // Keys far apart and close together alike.
                let key = k.wrapping_mul(if k % 2 == 0 { 1 } else { 0x0100_0001 });
                match (model.get(&key).copied(), insert) {
                    (None, true) => {
                        if let Some(slot) = s.insert(key) {
                            model.insert(key, slot);
                        } else {
                            proptest::prop_assert_eq!(model.len(), 20);
                        }
                    }
                    (Some(slot), false) => {
                        s.remove(slot);
                        model.remove(&key);
                    }
                    _ => {}
                }
                for k in 0..48u32 {
                    let key = k.wrapping_mul(if k % 2 == 0 { 1 } else { 0x0100_0001 });
                    proptest::prop_assert_eq!(s.slot(key), model.get(&key).copied().unwrap_or(NIL));
                }
                proptest::prop_assert!(s.check().is_ok());
            }
        }
    }
}
