//! A byte-budgeted LRU over dense ids (translation pages, LeaFTL groups): an intrusive
//! doubly-linked list in flat arrays, with each cached id's size and dirty bit.
//!
//! The cache only keeps order and accounting; what to do with an evicted id (write a dirty one
//! back) is the FTL's.

const NIL: u32 = u32::MAX;

/// LRU order, sizes and dirty bits of cached ids.
#[derive(Clone, Debug)]
pub struct ByteLru {
    prev: Vec<u32>,
    next: Vec<u32>,
    bytes: Vec<u32>,
    flags: Vec<u8>,
    head: u32,
    tail: u32,
    total: u64,
    len: u32,
}

const CACHED: u8 = 1;
const DIRTY: u8 = 2;

impl ByteLru {
    /// An empty cache over ids `0..ids`.
    pub fn new(ids: u32) -> ByteLru {
        let n = ids as usize;
        ByteLru {
            prev: vec![NIL; n],
            next: vec![NIL; n],
            bytes: vec![0; n],
            flags: vec![0; n],
            head: NIL,
            tail: NIL,
            total: 0,
            len: 0,
        }
    }

    /// Whether `id` is cached.
    #[inline]
    pub fn contains(&self, id: u32) -> bool {
        self.flags[id as usize] & CACHED != 0
    }
    /// Whether cached `id` is dirty.
    #[inline]
    pub fn is_dirty(&self, id: u32) -> bool {
        self.flags[id as usize] & DIRTY != 0
    }
    /// Bytes of every cached id.
    #[inline]
    pub fn total(&self) -> u64 {
        self.total
    }
    /// Cached ids.
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }
    /// Whether nothing is cached.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The least recently used id.
    #[inline]
    pub fn lru(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }

    fn unlink(&mut self, id: u32) {
        let (p, n) = (self.prev[id as usize], self.next[id as usize]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
    }

    fn push_front(&mut self, id: u32) {
        self.prev[id as usize] = NIL;
        self.next[id as usize] = self.head;
        if self.head != NIL {
            self.prev[self.head as usize] = id;
        }
        self.head = id;
        if self.tail == NIL {
            self.tail = id;
        }
    }

    /// Caches `id` (clean, `bytes` large) as most recently used, or just touches it if cached.
    pub fn insert(&mut self, id: u32, bytes: u64) {
        if self.contains(id) {
            self.touch(id);
            return;
        }
        self.flags[id as usize] = CACHED;
        self.bytes[id as usize] = bytes as u32;
        self.total += bytes;
        self.len += 1;
        self.push_front(id);
    }

    /// Makes cached `id` the most recently used.
    #[inline]
    pub fn touch(&mut self, id: u32) {
        if self.head != id {
            self.unlink(id);
            self.push_front(id);
        }
    }

    /// Records the new size of cached `id`.
    #[inline]
    pub fn resize(&mut self, id: u32, bytes: u64) {
        let old = std::mem::replace(&mut self.bytes[id as usize], bytes as u32);
        self.total = self.total - old as u64 + bytes;
    }

    /// Marks cached `id` dirty.
    #[inline]
    pub fn mark_dirty(&mut self, id: u32) {
        self.flags[id as usize] |= DIRTY;
    }

    /// Drops `id` from the cache; returns whether it was dirty.
    pub fn remove(&mut self, id: u32) -> bool {
        let dirty = self.is_dirty(id);
        self.unlink(id);
        self.total -= self.bytes[id as usize] as u64;
        self.bytes[id as usize] = 0;
        self.flags[id as usize] = 0;
        self.len -= 1;
        dirty
    }

    /// Cached ids, most recently used first.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors((self.head != NIL).then_some(self.head), |&i| {
            let n = self.next[i as usize];
            (n != NIL).then_some(n)
        })
    }

    /// Checks the list against the flags and the byte total.
    pub fn check(&self) -> Result<(), String> {
        let mut n = 0;
        let mut bytes = 0;
        for id in self.iter() {
            if !self.contains(id) {
                return Err(format!("LRU lists {id}, which is not cached"));
            }
            n += 1;
            bytes += self.bytes[id as usize] as u64;
            if n > self.len {
                return Err("LRU list is longer than its count (a cycle?)".into());
            }
        }
        if n != self.len || bytes != self.total {
            return Err(format!(
                "LRU: {n} listed ids of {bytes} B, counts say {} of {} B",
                self.len, self.total
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_sizes_and_dirt() {
        let mut c = ByteLru::new(8);
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
        assert!(c.remove(5));
        assert!(!c.remove(3));
        assert_eq!((c.len(), c.total(), c.lru()), (1, 30, Some(1)));
        c.check().unwrap();
        assert!(!c.contains(5) && c.contains(1));
    }
}
