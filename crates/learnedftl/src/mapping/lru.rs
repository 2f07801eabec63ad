//! Intrusive doubly-linked LRU lists over dense `u32` indices.
//!
//! The links of every element live in one flat [`Links`] array (indexed by the element's id: a
//! cache slot, a TP number); a [`List`] is only a head, a tail and a length, so one `Links`
//! array can carry many disjoint lists (TPFTL keeps one list of entries per TP node in the same
//! array). The head is the most recently used end, the tail the least. Nothing allocates after
//! construction.

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
    /// Hints `i`'s links into cache ([`crate::host::prefetch()`]).
    #[inline]
    pub fn prefetch(&self, i: u32) {
        crate::host::prefetch(&self.prev[i as usize]);
        crate::host::prefetch(&self.next[i as usize]);
    }
    /// Hints the links [`List::touch`] of `i` rewrites besides `i`'s own: its neighbours'
    /// (reading `i`'s links: best once [`Links::prefetch`] hinted them).
    #[inline]
    pub fn prefetch_neighbours(&self, i: u32) {
        let (p, n) = (self.prev(i), self.next(i));
        if p != NIL {
            crate::host::prefetch(&self.next[p as usize]);
        }
        if n != NIL {
            crate::host::prefetch(&self.prev[n as usize]);
        }
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
    pub fn rfind(&self, l: &Links, pred: impl FnMut(u32) -> bool) -> Option<u32> {
        self.rfind_from(l, self.tail, pred)
    }

    /// [`List::rfind`] starting at element `start` (`NIL`: nothing) instead of the tail, for a
    /// caller that knows every element past it fails `pred`.
    pub fn rfind_from(
        &self,
        l: &Links,
        start: u32,
        mut pred: impl FnMut(u32) -> bool,
    ) -> Option<u32> {
        let mut cur = start;
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
}
