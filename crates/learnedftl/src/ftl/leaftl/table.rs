//! The log-structured mapping table of one 256-LPN group, with its conflict resolution buffer
//! (LeaFTL §3.4 and §3.7, Algorithms 1 and 2, Fig. 9 and Fig. 13).
//!
//! Level 0 holds the newest segments. Within a level segments are sorted by `S` and their ranges
//! `[S, S + L]` do not overlap; across levels they may, and a lookup takes the first segment,
//! top-down, that encodes the LPN. The invariant that makes this right: for every LPN, the first
//! segment top-down that encodes it holds its latest mapping.
//!
//! The CRB records which approximate segment encodes each offset (1 B per offset, no duplicates,
//! runs separated by a null byte). We keep it as an owner array indexed by offset, whose values
//! are the owning segment's `S` (an approximate segment's `S` is unique: it is the first offset of
//! its run). The bytes charged are the paper's list form: one per offset plus one separator per
//! run.

use super::segment::{Segment, GROUP_LPNS, SEGMENT_BYTES};
use std::cell::RefCell;

/// Segments [`GroupTable::seg_update`] and [`GroupTable::compact`] hold while they rebuild
/// levels, reused so that neither allocates per call (a flush updates a group per page under
/// random writes; a periodic compaction compacts every changed cached group).
#[derive(Default)]
struct Scratch {
    /// The segments being re-placed.
    segs: Vec<Segment>,
    /// The table's levels before a compaction, flattened, and their lengths.
    before: Vec<Segment>,
    before_lens: Vec<usize>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// A set of offsets of one group.
#[derive(Copy, Clone, Default, PartialEq, Eq, Debug)]
pub struct Offsets([u64; 4]);

impl Offsets {
    /// The offsets `a..=b`.
    pub fn range(a: u8, b: u8) -> Offsets {
        let (a, b) = (a as u32, b as u32);
        Offsets(std::array::from_fn(|i| {
            let (lo, hi) = (a.max(64 * i as u32), b.min(64 * i as u32 + 63));
            if lo > hi {
                0
            } else {
                (u64::MAX >> (63 - (hi - lo))) << (lo - 64 * i as u32)
            }
        }))
    }
    /// Adds `x`.
    #[inline]
    pub fn insert(&mut self, x: u8) {
        self.0[x as usize >> 6] |= 1 << (x & 63);
    }
    /// Whether `x` is in the set.
    #[inline]
    pub fn contains(&self, x: u8) -> bool {
        self.0[x as usize >> 6] >> (x & 63) & 1 == 1
    }
    /// `self \ o`.
    #[inline]
    pub fn minus(&self, o: &Offsets) -> Offsets {
        Offsets(std::array::from_fn(|i| self.0[i] & !o.0[i]))
    }
    /// `self ∩ o`.
    #[inline]
    pub fn and(&self, o: &Offsets) -> Offsets {
        Offsets(std::array::from_fn(|i| self.0[i] & o.0[i]))
    }
    /// `self ∪ o`.
    #[inline]
    pub fn or(&self, o: &Offsets) -> Offsets {
        Offsets(std::array::from_fn(|i| self.0[i] | o.0[i]))
    }
    /// Whether the set is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
    /// Number of offsets.
    pub fn len(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }
    /// Smallest offset.
    pub fn first(&self) -> Option<u8> {
        (0..4)
            .find(|&i| self.0[i] != 0)
            .map(|i| (i * 64 + self.0[i].trailing_zeros() as usize) as u8)
    }
    /// Largest offset.
    pub fn last(&self) -> Option<u8> {
        (0..4)
            .rev()
            .find(|&i| self.0[i] != 0)
            .map(|i| (i * 64 + 63 - self.0[i].leading_zeros() as usize) as u8)
    }
    /// The offsets in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = u8> + '_ {
        (0..=255u8).filter(|&x| self.contains(x))
    }
}

impl FromIterator<u8> for Offsets {
    fn from_iter<T: IntoIterator<Item = u8>>(it: T) -> Self {
        let mut o = Offsets::default();
        it.into_iter().for_each(|x| o.insert(x));
        o
    }
}

const NO_OWNER: u16 = u16::MAX;

/// Levels whose segments [`GroupTable::prefetch`] hints: most groups have one to three, and a
/// fragmented group's deep levels are rarely reached.
const HINTED_LEVELS: usize = 3;

/// One level of a group's table: its segments, sorted and not overlapping, and the offsets
/// they encode (its cover): a lookup tests the covers top-down and searches only the level
/// that has its offset (a fragmented group has tens of levels). Kept together, a new level is
/// one allocation and a level's cover and segment list share a cache line or two.
#[derive(Clone, Debug, Default)]
pub struct Level {
    segs: Vec<Segment>,
    cover: Offsets,
}

impl Level {
    /// The level's segments, sorted by `S`.
    pub fn segs(&self) -> &[Segment] {
        &self.segs
    }
}

/// A group's mapping table: levels of segments plus the CRB.
#[derive(Clone, Debug, Default)]
pub struct GroupTable {
    levels: Vec<Level>,
    /// CRB: `S` of the approximate segment encoding each offset; allocated on first use.
    crb: Option<Box<[u16; GROUP_LPNS as usize]>>,
    crb_offsets: u32,
}

impl GroupTable {
    /// The levels, top (newest) first.
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// Segments in the table.
    pub fn segments(&self) -> usize {
        self.levels.iter().map(|l| l.segs.len()).sum()
    }

    /// Approximate segments (each has one CRB run).
    pub fn approximate_segments(&self) -> usize {
        self.levels
            .iter()
            .flat_map(|l| &l.segs)
            .filter(|s| !s.is_accurate())
            .count()
    }

    /// CRB bytes: one per offset plus one null separator per run.
    pub fn crb_bytes(&self) -> u64 {
        if self.crb_offsets == 0 {
            0
        } else {
            self.crb_offsets as u64 + self.approximate_segments() as u64
        }
    }

    /// Bytes of the table: 8 per segment plus the CRB.
    pub fn bytes(&self) -> u64 {
        self.segments() as u64 * SEGMENT_BYTES + self.crb_bytes()
    }

    /// Hints into cache what inserting a segment or compacting reads after this table's
    /// header: its top level (segment list and cover), or with `top`, the segments of its
    /// first levels (reading the level list, best once an earlier call hinted it). A segment
    /// an insert demotes goes to the next level, and a compaction reads every level: after
    /// random writes a group has a level of single points over the level its fill left.
    #[inline]
    pub fn prefetch(&self, top: bool) {
        if top {
            for seg in self
                .levels
                .iter()
                .take(HINTED_LEVELS)
                .filter_map(|l| l.segs.first())
            {
                crate::host::prefetch(seg);
            }
        } else if let Some(l) = self.levels.first() {
            crate::host::prefetch(&l.segs);
            crate::host::prefetch(&l.cover);
        }
    }

    #[inline]
    fn owner(&self, x: u8) -> u16 {
        self.crb.as_ref().map_or(NO_OWNER, |c| c[x as usize])
    }

    /// Whether `seg` encodes offset `x` (Algorithm 2, `has_lpa`).
    #[inline]
    pub fn has(&self, seg: &Segment, x: u8) -> bool {
        if seg.is_accurate() {
            seg.accurate_has(x)
        } else {
            seg.in_range(x) && self.owner(x) == seg.s as u16
        }
    }

    /// The offsets `seg` encodes (Algorithm 2, `get_bitmap`).
    pub fn members(&self, seg: &Segment) -> Offsets {
        if seg.is_accurate() {
            match seg.stride() {
                1 => Offsets::range(seg.s, seg.end()),
                stride => (seg.s..=seg.end()).step_by(stride as usize).collect(),
            }
        } else {
            let Some(crb) = self.crb.as_deref() else {
                return Offsets::default();
            };
            (seg.s..=seg.end())
                .filter(|&x| crb[x as usize] == seg.s as u16)
                .collect()
        }
    }

    /// Top-down lookup of offset `x` (Algorithm 1, `lookup`): the segment encoding it and the
    /// number of levels visited (all of them when none does).
    pub fn lookup(&self, x: u8) -> (Option<Segment>, usize) {
        match self.levels.iter().position(|l| l.cover.contains(x)) {
            Some(i) => {
                let level = &self.levels[i].segs;
                let g = level[level.partition_point(|g| g.s <= x) - 1];
                debug_assert!(g.in_range(x) && self.has(&g, x));
                (Some(g), i + 1)
            }
            None => (None, self.levels.len()),
        }
    }

    /// Recomputes every level's cover.
    fn recover_all(&mut self) {
        for lv in 0..self.levels.len() {
            self.levels[lv].cover = self.level_cover(&self.levels[lv].segs);
        }
    }

    /// The offsets the segments of `level` encode.
    fn level_cover(&self, level: &[Segment]) -> Offsets {
        level
            .iter()
            .fold(Offsets::default(), |c, g| c.or(&self.members(g)))
    }

    /// Inserts level `lv` holding `segs`.
    fn insert_level(&mut self, lv: usize, segs: Vec<Segment>) {
        self.room_for_a_level();
        let cover = self.level_cover(&segs);
        self.levels.insert(lv, Level { segs, cover });
    }

    /// Room for one more level, growing by half rather than doubling from four: most of a
    /// device's groups keep one or two levels, and a group table per 256 LPNs is state that
    /// grows with the device (docs/device.md "Memory").
    fn room_for_a_level(&mut self) {
        if self.levels.len() == self.levels.capacity() {
            self.levels.reserve_exact(self.levels.len() / 2 + 1);
        }
    }

    /// Inserts a freshly learned segment encoding `members` on top (Algorithm 1, `seg_update`
    /// at level 0). Approximate segments first claim their offsets in the CRB, taking them from
    /// older runs (and moving an older run's `S` when they take its first offset, Fig. 9 b).
    pub fn insert(&mut self, seg: Segment, members: Offsets) {
        if !seg.is_accurate() {
            let crb = self
                .crb
                .get_or_insert_with(|| Box::new([NO_OWNER; GROUP_LPNS as usize]));
            // The runs robbed, in the order met (at most one per offset).
            let mut robbed = [0u8; GROUP_LPNS as usize];
            let mut n = 0;
            for x in members.iter() {
                let o = crb[x as usize];
                if o == NO_OWNER {
                    self.crb_offsets += 1;
                } else if !robbed[..n].contains(&(o as u8)) {
                    robbed[n] = o as u8;
                    n += 1;
                }
                crb[x as usize] = NO_OWNER;
            }
            // The older runs lost offsets: shrink their segments (they are found by their S,
            // which is still unique as the new run is not written yet).
            for &key in &robbed[..n] {
                self.refit_run(key);
            }
            let crb = self.crb.as_mut().expect("allocated above");
            members.iter().for_each(|x| crb[x as usize] = seg.s as u16);
        }
        self.seg_update(0, seg);
    }

    /// Finds the approximate segment whose run is keyed `key` and fits it to what is left of its
    /// run (new `S` and `L`, re-keying the run), or removes it when nothing is left.
    fn refit_run(&mut self, key: u8) {
        let Some((lv, idx)) = self.find_approximate(key) else {
            return;
        };
        let mut seg = self.levels[lv].segs[idx];
        let left = self.members(&seg);
        // Nothing else in the level lies in the segment's range.
        let c = self.levels[lv]
            .cover
            .minus(&Offsets::range(seg.s, seg.end()));
        self.levels[lv].cover = c.or(&left);
        match (left.first(), left.last()) {
            (Some(first), Some(last)) => {
                self.rekey(key, first, &left);
                seg.set_range(first, last);
                self.levels[lv].segs[idx] = seg;
            }
            _ => {
                self.levels[lv].segs.remove(idx);
                if self.levels[lv].segs.is_empty() {
                    self.levels.remove(lv);
                }
            }
        }
    }

    fn find_approximate(&self, key: u8) -> Option<(usize, usize)> {
        self.levels.iter().enumerate().find_map(|(lv, level)| {
            let level = &level.segs;
            let idx = level.partition_point(|g| g.s < key);
            (idx < level.len() && level[idx].s == key && !level[idx].is_accurate())
                .then_some((lv, idx))
        })
    }

    fn rekey(&mut self, from: u8, to: u8, members: &Offsets) {
        if from == to {
            return;
        }
        if let Some(crb) = self.crb.as_mut() {
            members.iter().for_each(|x| crb[x as usize] = to as u16);
        }
    }

    /// Removes `gone` from what `seg` encodes (Algorithm 2, `seg_merge` lines 15–25): `S` and `L`
    /// move to the first and last offsets left, and an approximate segment's offsets leave the
    /// CRB. Returns false when nothing is left (the paper's `L = −1`).
    fn shrink(&mut self, seg: &mut Segment, gone: &Offsets) -> bool {
        let mine = self.members(seg);
        let lost = mine.and(gone);
        if lost.is_empty() {
            return true;
        }
        let left = mine.minus(gone);
        if !seg.is_accurate() {
            if let Some(crb) = self.crb.as_mut() {
                lost.iter().for_each(|x| crb[x as usize] = NO_OWNER);
                self.crb_offsets -= lost.len();
            }
        }
        let (Some(first), Some(last)) = (left.first(), left.last()) else {
            return false;
        };
        if !seg.is_accurate() {
            self.rekey(seg.s, first, &left);
        }
        seg.set_range(first, last);
        true
    }

    /// Places `new` in level `lv` and merges the segments of that level it overlaps
    /// (Algorithm 1, `seg_update`): emptied ones are removed, ones still overlapping move to the
    /// next level (a new level is created there if they would overlap its segments), the rest
    /// stay with their trimmed range.
    fn seg_update(&mut self, lv: usize, new: Segment) {
        while self.levels.len() <= lv {
            self.room_for_a_level();
            self.levels.push(Level::default());
        }
        let nm = self.members(&new);
        let level = &mut self.levels[lv];
        let start = level.segs.partition_point(|g| g.end() < new.s);
        let stop = start + level.segs[start..].partition_point(|g| g.s <= new.end());
        if start == stop {
            level.segs.insert(start, new);
            level.cover = level.cover.or(&nm);
            return;
        }
        SCRATCH.with_borrow_mut(|scratch| {
            let victims = &mut scratch.segs;
            victims.clear();
            victims.extend(self.levels[lv].segs.splice(start..stop, [new]));
            // Nothing else in the level lies in a victim's range.
            let mut cover = victims.iter().fold(self.levels[lv].cover, |c, v| {
                c.minus(&Offsets::range(v.s, v.end()))
            });
            cover = cover.or(&nm);
            for mut v in victims.iter().copied() {
                if !self.shrink(&mut v, &nm) {
                    continue;
                }
                if v.overlaps(&new) {
                    self.push_down(lv + 1, v);
                } else {
                    cover = cover.or(&self.members(&v));
                    place(&mut self.levels[lv].segs, v);
                }
            }
            self.levels[lv].cover = cover;
        });
    }

    /// Puts `v` into level `lv`, or into a new level there if it overlaps a segment of `lv`.
    fn push_down(&mut self, lv: usize, v: Segment) {
        if lv < self.levels.len() && !self.levels[lv].segs.iter().any(|g| g.overlaps(&v)) {
            let m = self.members(&v);
            let level = &mut self.levels[lv];
            level.cover = level.cover.or(&m);
            place(&mut level.segs, v);
        } else {
            self.insert_level(lv, vec![v]);
        }
    }

    /// Compaction (Algorithm 1, `seg_compact`; Fig. 13 T8): every segment loses the offsets that
    /// segments above it encode, emptied segments go, and the rest are re-levelled so that each
    /// sits just below the lowest newer segment it overlaps (fewest levels; lookups stay right
    /// because overlapping segments keep their order). Returns whether the levels or the CRB's
    /// bytes changed. The levels' vectors are reused (cleared and refilled) rather than rebuilt.
    pub fn compact(&mut self) -> bool {
        let crb_before = self.crb_bytes();
        SCRATCH.with_borrow_mut(|scratch| {
            let Scratch {
                segs: kept,
                before,
                before_lens,
            } = scratch;
            kept.clear();
            before.clear();
            before_lens.clear();
            let mut claimed = Offsets::default();
            for lv in 0..self.levels.len() {
                let mut here = Offsets::default();
                before_lens.push(self.levels[lv].segs.len());
                for i in 0..self.levels[lv].segs.len() {
                    let mut seg = self.levels[lv].segs[i];
                    before.push(seg);
                    if self.shrink(&mut seg, &claimed) {
                        here = here.or(&self.members(&seg));
                        kept.push(seg);
                    }
                }
                claimed = claimed.or(&here);
                self.levels[lv].segs.clear();
            }
            let mut used = 0;
            for &seg in kept.iter() {
                let lv = self.levels[..used]
                    .iter()
                    .rposition(|l| l.segs.iter().any(|g| g.overlaps(&seg)))
                    .map_or(0, |i| i + 1);
                if lv == used {
                    if used == self.levels.len() {
                        self.room_for_a_level();
                        self.levels.push(Level::default());
                    }
                    used += 1;
                }
                place(&mut self.levels[lv].segs, seg);
            }
            self.levels.truncate(used);
            self.recover_all();
            let same = self.levels.len() == before_lens.len()
                && self
                    .levels
                    .iter()
                    .zip(before_lens.iter())
                    .all(|(l, &n)| l.segs.len() == n)
                && self.levels.iter().flat_map(|l| &l.segs).eq(before.iter());
            !same || self.crb_bytes() != crb_before
        })
    }

    /// Unmaps `gone` (a trim): every segment encoding one of them loses it; an accurate segment
    /// losing an interior offset splits into the runs left (same K and I, so predictions stay).
    pub fn remove(&mut self, gone: &Offsets) {
        for lv in 0..self.levels.len() {
            if self.levels[lv].cover.and(gone).is_empty() {
                continue;
            }
            // Every segment loses exactly the offsets of `gone` it encoded.
            self.levels[lv].cover = self.levels[lv].cover.minus(gone);
            let level = std::mem::take(&mut self.levels[lv].segs);
            let mut out = Vec::with_capacity(level.len());
            for mut seg in level {
                let mine = self.members(&seg);
                if mine.and(gone).is_empty() {
                    out.push(seg);
                } else if seg.is_accurate() {
                    split_runs(&seg, &mine.minus(gone), &mut out);
                } else if self.shrink(&mut seg, gone) {
                    out.push(seg);
                }
            }
            self.levels[lv].segs = out;
        }
        self.levels.retain(|l| !l.segs.is_empty());
    }

    /// Checks the table's own invariants: levels sorted and non-overlapping, every approximate
    /// segment keys a CRB run lying in its range, the CRB count right, each level's cover what
    /// it encodes.
    pub fn check(&self) -> Result<(), String> {
        let mut owned = 0;
        for (
            lv,
            Level {
                segs: level,
                cover: recorded,
            },
        ) in self.levels.iter().enumerate()
        {
            if level.is_empty() {
                return Err(format!("level {lv} is empty"));
            }
            for w in level.windows(2) {
                if w[0].end() >= w[1].s {
                    return Err(format!("level {lv}: {:?} and {:?} overlap", w[0], w[1]));
                }
            }
            let mut cover = Offsets::default();
            for seg in level {
                let m = self.members(seg);
                cover = cover.or(&m);
                if seg.is_accurate() {
                    continue;
                }
                if m.first() != Some(seg.s) || m.last() != Some(seg.end()) {
                    return Err(format!(
                        "level {lv}: {seg:?} does not fit its CRB run {m:?}"
                    ));
                }
                owned += m.len();
            }
            if *recorded != cover {
                return Err(format!("level {lv}: its cover is not what it encodes"));
            }
        }
        let in_crb = (0..=255u8).filter(|&x| self.owner(x) != NO_OWNER).count() as u32;
        if in_crb != self.crb_offsets || owned != in_crb {
            return Err(format!(
                "CRB holds {in_crb} offsets, counts {}, segments own {owned}",
                self.crb_offsets
            ));
        }
        Ok(())
    }
}

/// Inserts `seg` into a level at its sorted position.
fn place(level: &mut Vec<Segment>, seg: Segment) {
    let at = level.partition_point(|g| g.s < seg.s);
    level.insert(at, seg);
}

/// The maximal runs of consecutive stride positions of accurate `seg` present in `left`, each as
/// a segment with `seg`'s K and I.
fn split_runs(seg: &Segment, left: &Offsets, out: &mut Vec<Segment>) {
    let stride = seg.stride() as usize;
    let mut run: Option<(u8, u8)> = None;
    for x in (seg.s..=seg.end()).step_by(stride) {
        run = match (left.contains(x), run) {
            (true, None) => Some((x, x)),
            (true, Some((a, _))) => Some((a, x)),
            (false, Some((a, b))) => {
                let mut s = *seg;
                s.set_range(a, b);
                out.push(s);
                None
            }
            (false, None) => None,
        };
    }
    if let Some((a, b)) = run {
        let mut s = *seg;
        s.set_range(a, b);
        out.push(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn acc(first: u8, last: u8, vppn: u32) -> Segment {
        Segment::accurate(first, last, 1, vppn)
    }

    fn range(t: &GroupTable) -> Vec<Vec<(u8, u8)>> {
        t.levels()
            .iter()
            .map(|l| l.segs().iter().map(|s| (s.s, s.end())).collect())
            .collect()
    }

    fn insert_acc(t: &mut GroupTable, seg: Segment) {
        let m = t.members(&seg);
        t.insert(seg, m);
    }

    /// An approximate segment over `xs` mapped to consecutive VPPNs from `vppn` (slope chosen
    /// so that predictions stay within a few pages; only membership matters here).
    fn approx(xs: &[u8], vppn: u32) -> (Segment, Offsets) {
        let first = xs[0];
        let last = xs[xs.len() - 1];
        let k = (xs.len() as f32 - 1.0) / (last - first).max(1) as f32;
        let bits = half::f16::from_f32(k).to_bits();
        let i = vppn as i32 - (k * first as f32).round() as i32;
        (
            Segment::approximate(first, last, bits, i),
            xs.iter().copied().collect(),
        )
    }

    /// The paper's Fig. 13, step by step.
    #[test]
    fn figure_13_scenario() {
        let mut t = GroupTable::default();
        // Initial: one segment [0, 63].
        insert_acc(&mut t, acc(0, 63, 1000));
        // T1: [200, 255] does not overlap: same level.
        insert_acc(&mut t, acc(200, 255, 2000));
        assert_eq!(range(&t), vec![vec![(0, 63), (200, 255)]]);
        // T2: [16, 31] overlaps [0, 63], which keeps valid LPNs on both sides: demoted.
        insert_acc(&mut t, acc(16, 31, 3000));
        assert_eq!(range(&t), vec![vec![(16, 31), (200, 255)], vec![(0, 63)]]);
        // T3, T4: approximate [75, 82] then [72, 80]; the older one is demoted.
        let (a1, m1) = approx(&[75, 77, 78, 80, 82], 4000);
        t.insert(a1, m1);
        let (a2, m2) = approx(&[72, 74, 76, 79, 80], 5000);
        t.insert(a2, m2);
        assert_eq!(
            range(&t),
            vec![
                vec![(16, 31), (72, 80), (200, 255)],
                vec![(0, 63), (75, 82)]
            ]
        );
        t.check().unwrap();
        // The CRB dropped 80 from the older run (no duplicates).
        assert_eq!(t.crb_bytes(), (4 + 5) + 2);
        // T5: LPA 50 is found at level 1 in [0, 63].
        let (s, levels) = t.lookup(50);
        assert_eq!((s.map(|s| s.s), levels), (Some(0), 2));
        assert_eq!(s.unwrap().predict(50), 1050);
        // T6: LPA 78 lies in [72, 80]'s range but the CRB says [75, 82] encodes it.
        let (s, levels) = t.lookup(78);
        assert_eq!((s.map(|s| s.s), levels), (Some(75), 2));
        assert_eq!(t.lookup(80).0.map(|s| s.s), Some(72));
        assert_eq!(t.lookup(20).0.unwrap().predict(20), 3004);
        // T7: [32, 90] covers [72, 80] entirely: removed, and its CRB offsets with it.
        insert_acc(&mut t, acc(32, 90, 6000));
        assert_eq!(
            range(&t),
            vec![
                vec![(16, 31), (32, 90), (200, 255)],
                vec![(0, 63), (75, 82)]
            ]
        );
        assert_eq!(t.crb_bytes(), 4 + 1);
        t.check().unwrap();
        // T8: compaction removes outdated LPAs: [0, 63] keeps [0, 15], [75, 82] keeps only
        // what [32, 90] does not encode (nothing: removed), one level left.
        t.compact();
        assert_eq!(
            range(&t),
            vec![vec![(0, 15), (16, 31), (32, 90), (200, 255)]]
        );
        assert_eq!(t.crb_bytes(), 0);
        t.check().unwrap();
        for x in 0..=255u8 {
            let want = match x {
                0..=15 => Some(1000 + x as i64),
                16..=31 => Some(3000 + x as i64 - 16),
                32..=90 => Some(6000 + x as i64 - 32),
                200..=255 => Some(2000 + x as i64 - 200),
                _ => None,
            };
            assert_eq!(t.lookup(x).0.map(|s| s.predict(x)), want, "offset {x}");
        }
    }

    #[test]
    fn merge_trims_an_end_and_keeps_the_level() {
        let mut t = GroupTable::default();
        insert_acc(&mut t, acc(10, 40, 100));
        insert_acc(&mut t, acc(30, 50, 500));
        // [10, 40] loses 30..=40: now [10, 29], no overlap, same level.
        assert_eq!(range(&t), vec![vec![(10, 29), (30, 50)]]);
    }

    #[test]
    fn interleaved_stride_segments_are_demoted_not_trimmed() {
        // Old: even offsets 0..=20; new: odd offsets 1..=19. Bitmaps disjoint, ranges overlap.
        let mut t = GroupTable::default();
        insert_acc(&mut t, Segment::accurate(0, 20, 2, 100));
        insert_acc(&mut t, Segment::accurate(1, 19, 2, 200));
        assert_eq!(range(&t), vec![vec![(1, 19)], vec![(0, 20)]]);
        assert_eq!(t.lookup(4).0.unwrap().predict(4), 102);
        assert_eq!(t.lookup(5).0.unwrap().predict(5), 202);
        // A segment splitting the old one's bitmap: [8, 12] stride 1 takes 8, 10, 12 from the
        // old (still both sides left) and 9, 11 from the newer: the newer is demoted too, into
        // a new level between (it overlaps the old one there).
        insert_acc(&mut t, acc(8, 12, 300));
        assert_eq!(range(&t), vec![vec![(8, 12)], vec![(1, 19)], vec![(0, 20)]]);
        for (x, want) in [(8, 300), (9, 301), (7, 203), (14, 107), (20, 110)] {
            assert_eq!(t.lookup(x).0.unwrap().predict(x), want, "offset {x}");
        }
        t.compact();
        t.check().unwrap();
        for (x, want) in [(8, 300), (9, 301), (7, 203), (14, 107), (20, 110)] {
            assert_eq!(t.lookup(x).0.unwrap().predict(x), want, "offset {x}");
        }
    }

    #[test]
    fn demotion_creates_a_level_when_the_next_overlaps() {
        let mut t = GroupTable::default();
        insert_acc(&mut t, acc(0, 100, 100)); // will end at level 2
        insert_acc(&mut t, acc(40, 60, 300)); // demotes [0, 100]
        insert_acc(&mut t, acc(50, 52, 500)); // demotes [40, 60] into a new level 1
        assert_eq!(
            range(&t),
            vec![vec![(50, 52)], vec![(40, 60)], vec![(0, 100)]]
        );
        assert_eq!(t.lookup(45), (Some(acc(40, 60, 300)), 2));
        assert_eq!(t.lookup(90).1, 3);
        assert_eq!(t.lookup(90).0.unwrap().predict(90), 190);
    }

    #[test]
    fn crb_start_collision_moves_the_older_start() {
        // Fig. 9 (b): a new approximate segment starting at 100 % 256 = the old one's start.
        let mut t = GroupTable::default();
        let (old, m) = approx(&[100, 103, 105, 106], 10);
        t.insert(old, m);
        let (new, m) = approx(&[100, 102, 104], 20);
        t.insert(new, m);
        t.check().unwrap();
        // The older segment now starts at 103 (its first offset left) and is still found.
        assert_eq!(t.lookup(103).0.map(|s| s.s), Some(103));
        assert_eq!(t.lookup(100).0.map(|s| (s.s, s.end())), Some((100, 104)));
        assert_eq!(t.lookup(101).0, None);
        assert_eq!(t.crb_bytes(), 6 + 2);
    }

    #[test]
    fn a_run_robbed_of_everything_removes_its_segment_and_level() {
        let mut t = GroupTable::default();
        let (a, m) = approx(&[10, 13, 16], 100);
        t.insert(a, m);
        // Stride-3 offsets 11, 14 take nothing from it but overlap: it is demoted, alone.
        insert_acc(&mut t, Segment::accurate(11, 14, 3, 200));
        assert_eq!(range(&t), vec![vec![(11, 14)], vec![(10, 16)]]);
        let (c, m) = approx(&[10, 13, 16], 300);
        t.insert(c, m);
        t.check().unwrap();
        assert_eq!(t.segments(), 2);
        assert_eq!(t.lookup(13).0.map(|s| s.s), Some(10));
        assert_eq!(t.crb_bytes(), 3 + 1);
    }

    #[test]
    fn trim_splits_accurate_and_removes_from_every_level() {
        let mut t = GroupTable::default();
        insert_acc(&mut t, acc(0, 63, 1000));
        insert_acc(&mut t, acc(16, 31, 3000));
        let (a, m) = approx(&[40, 42, 45], 9000);
        t.insert(a, m);
        let gone: Offsets = [20u8, 42, 5].into_iter().collect();
        t.remove(&gone);
        t.check().unwrap();
        for x in [20u8, 42, 5] {
            assert_eq!(t.lookup(x).0, None, "offset {x} still mapped");
        }
        assert_eq!(t.lookup(21).0.unwrap().predict(21), 3005);
        assert_eq!(t.lookup(6).0.unwrap().predict(6), 1006);
        assert_eq!(t.lookup(45).0.map(|s| s.s), Some(40));
        assert_eq!(t.crb_bytes(), 2 + 1);
    }

    #[test]
    fn offset_ranges_are_their_offsets() {
        for a in 0..=255u8 {
            for b in a..=255u8 {
                assert_eq!(Offsets::range(a, b), (a..=b).collect(), "{a}..={b}");
            }
        }
    }

    /// The lookup of the paper's Algorithm 1: every level top-down, a binary search in each.
    fn lookup_by_search(t: &GroupTable, x: u8) -> Option<Segment> {
        t.levels().iter().find_map(|level| {
            let level = level.segs();
            let idx = level.partition_point(|g| g.s <= x);
            (idx > 0 && t.has(&level[idx - 1], x)).then(|| level[idx - 1])
        })
    }

    proptest! {
        /// Inserts (accurate with strides, approximate), trims and compactions in any order:
        /// the invariants (level covers included) hold, a lookup through the covers finds
        /// what searching every level finds, and a compaction says whether it changed the
        /// levels or the CRB's bytes.
        #[test]
        fn covers_find_what_searching_every_level_finds(
            ops in prop::collection::vec((0u8..8, any::<u8>(), 1u8..40, 1u8..4), 1..120),
        ) {
            let mut t = GroupTable::default();
            for (i, (kind, first, span, stride)) in ops.into_iter().enumerate() {
                let last = first.saturating_add(span);
                let vppn = 1000 * i as u32;
                match kind {
                    0..=3 => {
                        let last = last - (last - first) % stride;
                        insert_acc(&mut t, Segment::accurate(first, last, stride, vppn))
                    }
                    4 | 5 => {
                        let xs: Vec<u8> = (first..=last).step_by(stride as usize + 1).collect();
                        if xs.len() >= 2 {
                            let (a, m) = approx(&xs, vppn);
                            t.insert(a, m);
                        }
                    }
                    6 => t.remove(&(first..=last).step_by(stride as usize).collect()),
                    _ => {
                        let segs = |t: &GroupTable| -> Vec<Vec<Segment>> {
                            t.levels().iter().map(|l| l.segs().to_vec()).collect()
                        };
                        let before = (segs(&t), t.crb_bytes());
                        let changed = t.compact();
                        prop_assert_eq!(changed, (segs(&t), t.crb_bytes()) != before);
                    }
                }
                prop_assert_eq!(t.check(), Ok(()));
                for x in 0..=255u8 {
                    prop_assert_eq!(t.lookup(x).0, lookup_by_search(&t, x), "offset {}", x);
                }
            }
        }
    }
}
