//! The μ-tree's contents: a B+-tree of extents, pure data structure (no flash, no cache).
//!
//! A leaf holds extents `(lpn, len, vppn)` (LPNs `lpn .. lpn + len` at VPPNs
//! `vppn .. vppn + len`), sorted and disjoint; an inner node holds `(first key, child)` pairs.
//! Every leaf covers the key range its parent's separators give it and no extent crosses a
//! separator, so the extent covering an LPN is always in the leaf that LPN routes to. Leaves
//! split in half when over capacity; a leaf left empty (trims) is removed, and a root with one
//! child gives way to it. Nodes live in an arena whose ids the FTL uses for its node cache.

/// A run of logical pages at consecutive VPPNs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ext {
    /// First LPN.
    pub lpn: u32,
    /// Pages.
    pub len: u32,
    /// VPPN of `lpn`.
    pub vppn: u32,
}

impl Ext {
    #[inline]
    fn end(&self) -> u32 {
        self.lpn + self.len
    }
}

/// No node.
pub const NIL: u32 = u32::MAX;

/// A tree node.
#[derive(Clone, Debug, Default)]
pub struct Node {
    /// Parent (NIL for the root).
    pub parent: u32,
    /// Whether this is a leaf.
    pub leaf: bool,
    /// Inner: first key of each child (the first is not used for routing).
    keys: Vec<u32>,
    /// Inner: children.
    pub kids: Vec<u32>,
    /// Leaf: extents.
    ext: Vec<Ext>,
}

impl Node {
    /// The child (index into `kids`) an inner node routes `lpn` to.
    #[inline]
    fn route(&self, lpn: u32) -> usize {
        self.keys.partition_point(|&k| k <= lpn).max(1) - 1
    }
}

/// What one update did to the tree's nodes.
#[derive(Clone, Default, Debug)]
pub struct Change {
    /// Nodes modified or created (to be marked dirty), the leaf first.
    pub dirty: Vec<u32>,
    /// Nodes removed (to be dropped from the cache and their pages released).
    pub freed: Vec<u32>,
    /// The VPPN `lpn` had before, if mapped.
    pub old: Option<u32>,
    /// Whether an extent was split in two around `lpn` (a page inside it overwritten or
    /// trimmed).
    pub split: bool,
}

impl Change {
    fn clear(&mut self) {
        self.dirty.clear();
        self.freed.clear();
        self.old = None;
        self.split = false;
    }
}

/// The extent B+-tree.
#[derive(Clone, Debug)]
pub struct Tree {
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
    height: u32,
    leaf_cap: usize,
    inner_cap: usize,
    extents: u64,
    leaves: u32,
    /// Changes whenever nodes are added or removed: a path found before is still the path of
    /// every LPN its leaf's key range holds while this stays the same.
    shape: u64,
}

impl Tree {
    /// An empty tree (one empty leaf) whose leaves hold `leaf_cap` extents and inner nodes
    /// `inner_cap` children (each at least 2).
    pub fn new(leaf_cap: usize, inner_cap: usize) -> Tree {
        Tree {
            nodes: vec![Node {
                parent: NIL,
                leaf: true,
                ..Node::default()
            }],
            free: Vec::new(),
            root: 0,
            height: 1,
            leaf_cap: leaf_cap.max(2),
            inner_cap: inner_cap.max(2),
            extents: 0,
            leaves: 1,
            shape: 0,
        }
    }

    /// Levels, leaves included.
    pub fn height(&self) -> u32 {
        self.height
    }
    /// Extents stored.
    pub fn extents(&self) -> u64 {
        self.extents
    }
    /// Leaves.
    pub fn leaves(&self) -> u32 {
        self.leaves
    }
    /// Nodes in use.
    pub fn nodes(&self) -> u32 {
        (self.nodes.len() - self.free.len()) as u32
    }
    /// Size of the node arena (ids are below it).
    pub fn arena(&self) -> usize {
        self.nodes.len()
    }
    /// The root.
    pub fn root(&self) -> u32 {
        self.root
    }
    /// A number that changes whenever the tree gains or loses nodes (and only then).
    pub fn shape(&self) -> u64 {
        self.shape
    }
    /// A node.
    #[inline]
    pub fn node(&self, id: u32) -> &Node {
        &self.nodes[id as usize]
    }

    /// The nodes from the root to the leaf `lpn` routes to, into `out`; returns the key range
    /// that routes to that leaf, `lo..hi` (`hi` is `u32::MAX` for the last leaf).
    pub fn path(&self, lpn: u32, out: &mut Vec<u32>) -> (u32, u32) {
        out.clear();
        let (_, lo, hi) = self.descend(lpn, |n| out.push(n));
        (lo, hi)
    }

    /// The extent covering `lpn`, if it is mapped (a walk with no path kept).
    pub fn lookup(&self, lpn: u32) -> Option<Ext> {
        let (leaf, ..) = self.descend(lpn, |_| {});
        self.find(leaf, lpn)
    }

    /// Hints into cache the leaf `lpn` routes to, reading only the inner nodes above it (few,
    /// and read by every walk, so cached): what a lookup of `lpn` misses first.
    #[inline]
    pub fn prefetch_leaf(&self, lpn: u32) {
        let mut n = self.root;
        // Every leaf is `height - 1` inner levels down.
        for _ in 1..self.height {
            let node = &self.nodes[n as usize];
            debug_assert!(!node.leaf);
            n = node.kids[node.route(lpn)];
        }
        crate::host::prefetch(&self.nodes[n as usize]);
    }

    /// Walks from the root to the leaf `lpn` routes to, visiting every node on the way;
    /// returns the leaf and the key range routed to it (`lo..hi`).
    fn descend(&self, lpn: u32, mut visit: impl FnMut(u32)) -> (u32, u32, u32) {
        let mut n = self.root;
        let (mut lo, mut hi) = (0, u32::MAX);
        loop {
            visit(n);
            let node = &self.nodes[n as usize];
            if node.leaf {
                return (n, lo, hi);
            }
            let i = node.route(lpn);
            if i > 0 {
                lo = lo.max(node.keys[i]);
            }
            if let Some(&k) = node.keys.get(i + 1) {
                hi = hi.min(k);
            }
            n = node.kids[i];
        }
    }

    /// The extent of `leaf` covering `lpn`.
    #[inline]
    pub fn find(&self, leaf: u32, lpn: u32) -> Option<Ext> {
        let ext = &self.nodes[leaf as usize].ext;
        let i = ext.partition_point(|e| e.lpn <= lpn);
        (i > 0 && ext[i - 1].end() > lpn).then(|| ext[i - 1])
    }

    /// Maps `lpn` to `vppn` (or unmaps it), splitting the extent that covered it and merging
    /// the new page into a neighbouring extent it continues. `leaf` and `hi` are what
    /// [`Tree::path`] returned for `lpn` (the caller has walked the path already, paying for
    /// it). `ch` receives what changed.
    pub fn set(&mut self, lpn: u32, vppn: Option<u32>, leaf: u32, hi: u32, ch: &mut Change) {
        ch.clear();
        let before = self.nodes[leaf as usize].ext.len();
        let ext = &mut self.nodes[leaf as usize].ext;
        let mut i = ext.partition_point(|e| e.lpn <= lpn);
        if i > 0 && ext[i - 1].end() > lpn {
            let e = ext[i - 1];
            ch.old = Some(e.vppn + (lpn - e.lpn));
            ch.split = lpn > e.lpn && lpn + 1 < e.end();
            let right = Ext {
                lpn: lpn + 1,
                len: e.end() - lpn - 1,
                vppn: e.vppn + (lpn + 1 - e.lpn),
            };
            if lpn > e.lpn {
                ext[i - 1].len = lpn - e.lpn;
            } else {
                ext.remove(i - 1);
                i -= 1;
            }
            if right.len > 0 {
                ext.insert(i, right);
            }
        }
        if let Some(v) = vppn {
            let joins_left = i > 0 && {
                let l = ext[i - 1];
                l.end() == lpn && l.vppn + l.len == v
            };
            let joins_right = i < ext.len() && ext[i].lpn == lpn + 1 && ext[i].vppn == v + 1;
            match (joins_left, joins_right) {
                (true, true) => {
                    let r = ext.remove(i);
                    ext[i - 1].len += 1 + r.len;
                }
                (true, false) => ext[i - 1].len += 1,
                (false, true) => {
                    ext[i].lpn -= 1;
                    ext[i].vppn -= 1;
                    ext[i].len += 1;
                }
                (false, false) => ext.insert(
                    i,
                    Ext {
                        lpn,
                        len: 1,
                        vppn: v,
                    },
                ),
            }
        }
        debug_assert!(ext.last().is_none_or(|e| e.end() <= hi));
        let after = ext.len();
        self.extents = self.extents + after as u64 - before as u64;
        ch.dirty.push(leaf);
        if after > self.leaf_cap {
            self.split(leaf, ch);
        } else if after == 0 && leaf != self.root {
            self.remove(leaf, ch);
        }
    }

    fn alloc(&mut self, node: Node) -> u32 {
        self.shape += 1;
        match self.free.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        }
    }

    /// Splits an over-full node in half, and its ancestors as needed.
    fn split(&mut self, mut n: u32, ch: &mut Change) {
        loop {
            let node = &mut self.nodes[n as usize];
            let (leaf, parent) = (node.leaf, node.parent);
            let right = if leaf {
                let ext = node.ext.split_off(node.ext.len() / 2);
                Node {
                    parent,
                    leaf,
                    ext,
                    ..Node::default()
                }
            } else {
                let mid = node.kids.len() / 2;
                Node {
                    parent,
                    leaf,
                    keys: node.keys.split_off(mid),
                    kids: node.kids.split_off(mid),
                    ext: Vec::new(),
                }
            };
            let sep = if leaf {
                right.ext[0].lpn
            } else {
                right.keys[0]
            };
            let r = self.alloc(right);
            self.leaves += leaf as u32;
            for i in 0..self.nodes[r as usize].kids.len() {
                let k = self.nodes[r as usize].kids[i];
                self.nodes[k as usize].parent = r;
            }
            ch.dirty.push(r);
            if parent == NIL {
                let root = self.alloc(Node {
                    parent: NIL,
                    leaf: false,
                    keys: vec![0, sep],
                    kids: vec![n, r],
                    ext: Vec::new(),
                });
                self.nodes[n as usize].parent = root;
                self.nodes[r as usize].parent = root;
                self.root = root;
                self.height += 1;
                ch.dirty.push(root);
                return;
            }
            let p = &mut self.nodes[parent as usize];
            let at = p
                .kids
                .iter()
                .position(|&k| k == n)
                .expect("child of its parent")
                + 1;
            p.keys.insert(at, sep);
            p.kids.insert(at, r);
            ch.dirty.push(parent);
            if p.kids.len() <= self.inner_cap {
                return;
            }
            n = parent;
        }
    }

    /// Removes an empty non-root node, and ancestors left empty; collapses a one-child root.
    fn remove(&mut self, mut n: u32, ch: &mut Change) {
        loop {
            let parent = self.nodes[n as usize].parent;
            self.leaves -= self.nodes[n as usize].leaf as u32;
            self.nodes[n as usize] = Node::default();
            self.free.push(n);
            self.shape += 1;
            ch.freed.push(n);
            let p = &mut self.nodes[parent as usize];
            let at = p
                .kids
                .iter()
                .position(|&k| k == n)
                .expect("child of its parent");
            p.kids.remove(at);
            p.keys.remove(at);
            if !p.kids.is_empty() || parent == self.root {
                ch.dirty.push(parent);
                break;
            }
            n = parent;
        }
        while !self.nodes[self.root as usize].leaf && self.nodes[self.root as usize].kids.len() == 1
        {
            let old = self.root;
            self.root = self.nodes[old as usize].kids[0];
            self.nodes[self.root as usize].parent = NIL;
            self.nodes[old as usize] = Node::default();
            self.free.push(old);
            self.shape += 1;
            ch.freed.push(old);
            self.height -= 1;
        }
        ch.dirty.retain(|d| !ch.freed.contains(d));
    }

    /// Every extent, in LPN order.
    pub fn extents_iter(&self) -> impl Iterator<Item = Ext> + '_ {
        let mut stack = vec![self.root];
        std::iter::from_fn(move || loop {
            let n = stack.pop()?;
            let node = &self.nodes[n as usize];
            if node.leaf {
                return Some(node.ext.clone());
            }
            stack.extend(node.kids.iter().rev());
        })
        .flatten()
    }

    /// Checks ordering, ranges, parent links, capacities and the counters.
    pub fn check(&self) -> Result<(), String> {
        let (mut ext, mut leaves, mut nodes) = (0u64, 0u32, 0u32);
        // (node, lower bound, upper bound, depth)
        let mut stack = vec![(self.root, 0u32, u32::MAX, 1u32)];
        while let Some((n, lo, hi, depth)) = stack.pop() {
            nodes += 1;
            let node = &self.nodes[n as usize];
            if node.leaf {
                leaves += 1;
                if depth != self.height {
                    return Err(format!(
                        "μ-tree leaf {n} at depth {depth} of {}",
                        self.height
                    ));
                }
                if node.ext.len() > self.leaf_cap {
                    return Err(format!("μ-tree leaf {n} holds {} extents", node.ext.len()));
                }
                let mut prev = lo;
                for e in &node.ext {
                    if e.len == 0 || e.lpn < prev || e.end() > hi {
                        return Err(format!("μ-tree leaf {n}: {e:?} outside [{prev}, {hi})"));
                    }
                    prev = e.end();
                }
                ext += node.ext.len() as u64;
                continue;
            }
            if node.kids.is_empty()
                || node.kids.len() > self.inner_cap
                || node.keys.len() != node.kids.len()
            {
                return Err(format!("μ-tree node {n}: {} children", node.kids.len()));
            }
            for (i, &k) in node.kids.iter().enumerate() {
                if self.nodes[k as usize].parent != n {
                    return Err(format!("μ-tree node {k}: parent is not {n}"));
                }
                let clo = if i == 0 { lo } else { node.keys[i] };
                let chi = node.keys.get(i + 1).copied().unwrap_or(hi);
                if clo > chi || (i > 0 && node.keys[i] < lo) {
                    return Err(format!("μ-tree node {n}: keys out of order"));
                }
                stack.push((k, clo, chi, depth + 1));
            }
        }
        if (ext, leaves, nodes) != (self.extents, self.leaves, self.nodes()) {
            return Err(format!(
                "μ-tree counts {ext} extents, {leaves} leaves, {nodes} nodes; kept {}, {}, {}",
                self.extents,
                self.leaves,
                self.nodes()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(t: &mut Tree, lpn: u32, v: Option<u32>) -> Change {
        let (mut path, mut ch) = (Vec::new(), Change::default());
        let (_, hi) = t.path(lpn, &mut path);
        t.set(lpn, v, *path.last().unwrap(), hi, &mut ch);
        t.check().unwrap();
        ch
    }

    fn all(t: &Tree) -> Vec<(u32, u32, u32)> {
        t.extents_iter().map(|e| (e.lpn, e.len, e.vppn)).collect()
    }

    #[test]
    fn consecutive_pages_grow_one_extent_and_an_overwrite_splits_it() {
        let mut t = Tree::new(4, 4);
        for i in 0..8 {
            set(&mut t, 10 + i, Some(100 + i));
        }
        assert_eq!(all(&t), vec![(10, 8, 100)]);
        // Partial overwrite in the middle: three extents.
        let ch = set(&mut t, 13, Some(500));
        assert_eq!(ch.old, Some(103));
        assert_eq!(all(&t), vec![(10, 3, 100), (13, 1, 500), (14, 4, 104)]);
        // The next page continues the new extent.
        set(&mut t, 14, Some(501));
        assert_eq!(all(&t), vec![(10, 3, 100), (13, 2, 500), (15, 3, 105)]);
        // Trimming the first page shortens from the left.
        let ch = set(&mut t, 10, None);
        assert_eq!(ch.old, Some(100));
        assert_eq!(all(&t)[0], (11, 2, 101));
    }

    #[test]
    fn splits_grow_the_tree_and_removals_shrink_it() {
        let mut t = Tree::new(2, 2);
        for i in 0..20 {
            set(&mut t, i * 2, Some(i * 10));
        }
        assert_eq!(t.extents(), 20);
        assert!(t.height() >= 4, "{}", t.height());
        let mut path = Vec::new();
        for i in 0..20 {
            t.path(i * 2, &mut path);
            let leaf = *path.last().unwrap();
            assert_eq!(t.find(leaf, i * 2).map(|e| e.vppn), Some(i * 10));
            assert_eq!(t.find(leaf, i * 2 + 1), None);
        }
        // Every LPN of a leaf's key range has that leaf's path (what callers reuse).
        for lpn in 0..45 {
            let (lo, hi) = t.path(lpn, &mut path);
            assert!((lo..hi).contains(&lpn), "{lpn} outside {lo}..{hi}");
            let mut other = Vec::new();
            for l in lo..hi.min(45) {
                t.path(l, &mut other);
                assert_eq!(other, path, "{l} and {lpn} share {lo}..{hi}");
            }
        }
        let shape = t.shape();
        for i in 0..20 {
            set(&mut t, i * 2, None);
        }
        assert_ne!(t.shape(), shape, "removals change the shape");
        assert_eq!((t.extents(), t.height(), t.nodes()), (0, 1, 1));
    }
}
