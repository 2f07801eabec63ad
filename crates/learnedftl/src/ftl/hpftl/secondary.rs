//! HP-FTL's secondary table (paper §II-B): `n` fully associative 8-byte slots `(lpn, ppa)`
//! divided into `2^m` segments. Slot `pos` belongs to segment `pos mod 2^m` (interleaved, so the
//! table can grow without moving an entry to another segment); the LPN's primary entry keeps
//! that segment in its PPID, so a lookup scans one segment (about `n / 2^m` slots) instead of
//! the table.
//!
//! Simulator bookkeeping beside the table, charged nothing (the DRAM charge is 8 B per slot): a
//! stack of free slots (a controller would scan for the empty marker) and a hash table of the
//! slots in use by LPN ([`KeyedSlots`]: it grows with the entries, where an array per LPN would
//! cost 4 B per logical page). The paper's controller scans the segment the PPID names; the
//! index finds the same slot without the scan (no FTL's DRAM lookup time is modelled) and
//! [`Secondary::find`] still answers only through the right segment.

use crate::mapping::keyed::{KeyedSlots, NIL};

/// Marks an empty slot.
const EMPTY: u32 = u32::MAX;

/// The secondary mapping table.
#[derive(Clone, Debug)]
pub struct Secondary {
    /// `(lpn, ppa)` per slot, side by side so that a lookup touches one cache line.
    slots: Vec<(u32, u32)>,
    free: Vec<u32>,
    /// The slot of each LPN in the table.
    index: KeyedSlots,
    segments: u64,
    peak: u32,
}

impl Secondary {
    /// An empty table of `n` slots in `segments` (a power of two: `2^m`) segments.
    pub fn new(n: u32, segments: u32) -> Secondary {
        debug_assert!(segments.is_power_of_two());
        Secondary {
            slots: vec![(EMPTY, 0); n as usize],
            // Popped from the end: slot 0 first.
            free: (0..n).rev().collect(),
            index: KeyedSlots::new(64),
            segments: segments as u64,
            peak: 0,
        }
    }

    /// Slots.
    #[inline]
    pub fn capacity(&self) -> u32 {
        self.slots.len() as u32
    }

    /// Free slots.
    #[inline]
    pub fn free_slots(&self) -> u32 {
        self.free.len() as u32
    }

    /// Slots in use.
    #[inline]
    pub fn used(&self) -> u32 {
        self.capacity() - self.free_slots()
    }

    /// Most slots in use at once since the last [`Secondary::reset_peak`].
    pub fn peak(&self) -> u32 {
        self.peak
    }

    /// Restarts the peak from the current use.
    pub fn reset_peak(&mut self) {
        self.peak = self.used();
    }

    /// Segment of slot `pos`.
    #[inline]
    pub fn segment(&self, pos: u32) -> u32 {
        pos & (self.segments - 1) as u32
    }

    /// Adds `extra` empty slots (rounded up to whole rows of segments).
    pub fn grow(&mut self, extra: u32) {
        let old = self.capacity();
        let new = (old as u64 + extra.max(1) as u64).next_multiple_of(self.segments) as u32;
        self.slots.resize(new as usize, (EMPTY, 0));
        self.free.extend((old..new).rev());
    }

    /// Records `lpn → ppa` in a free slot; returns its segment (`None` when full). `lpn` must
    /// not be in the table already.
    pub fn insert(&mut self, lpn: u32, ppa: u32) -> Option<u32> {
        debug_assert_eq!(self.slot(lpn), None);
        let pos = self.free.pop()?;
        self.slots[pos as usize] = (lpn, ppa);
        self.index.insert(lpn, pos);
        self.peak = self.peak.max(self.used());
        Some(self.segment(pos))
    }

    /// Slot of `lpn`, searching segment `seg`: `None` if `lpn` is not in the table or not in
    /// that segment.
    #[inline]
    pub fn find(&self, lpn: u32, seg: u32) -> Option<u32> {
        self.slot(lpn).filter(|&pos| self.segment(pos) == seg)
    }

    /// Hints that `lpn`'s slot index will be looked up soon.
    #[inline]
    pub fn prefetch_slot(&self, lpn: u32) {
        self.index.prefetch(lpn);
    }

    /// Hints that the slot holding `lpn` will be read soon (cheap only once
    /// [`Secondary::prefetch_slot`] brought its slot index in).
    #[inline]
    pub fn prefetch_entry(&self, lpn: u32) {
        if let Some(pos) = self.slot(lpn) {
            crate::host::prefetch(&self.slots[pos as usize]);
        }
    }

    /// Slot of `lpn`, whatever its segment (`None` if it is not in the table).
    #[inline]
    pub fn slot(&self, lpn: u32) -> Option<u32> {
        let pos = self.index.find(lpn);
        (pos != NIL).then_some(pos)
    }

    /// The mapping in slot `pos`: `(lpn, ppa)`, `None` if the slot is free.
    #[inline]
    pub fn get(&self, pos: u32) -> Option<(u32, u32)> {
        let slot = self.slots[pos as usize];
        (slot.0 != EMPTY).then_some(slot)
    }

    /// Points slot `pos` at a new page (an overwrite or a GC move keeps its slot).
    #[inline]
    pub fn set_ppa(&mut self, pos: u32, ppa: u32) {
        debug_assert!(self.slots[pos as usize].0 != EMPTY);
        self.slots[pos as usize].1 = ppa;
    }

    /// Frees slot `pos`.
    pub fn remove(&mut self, pos: u32) {
        let lpn = self.slots[pos as usize].0;
        debug_assert!(lpn != EMPTY);
        self.index.remove(lpn);
        self.slots[pos as usize].0 = EMPTY;
        self.free.push(pos);
    }

    /// Every used slot: `(pos, lpn, ppa)`.
    pub fn entries(&self) -> impl Iterator<Item = (u32, u32, u32)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, &(l, _))| l != EMPTY)
            .map(|(i, &(l, p))| (i as u32, l, p))
    }

    /// Checks that the free stack and the slots agree.
    pub fn check(&self) -> Result<(), String> {
        let used = self.slots.iter().filter(|&&(l, _)| l != EMPTY).count() as u32;
        if used != self.used() {
            return Err(format!(
                "secondary: {used} slots hold entries but {} are counted used",
                self.used()
            ));
        }
        if self.free.iter().any(|&p| self.slots[p as usize].0 != EMPTY) {
            return Err("secondary: a slot on the free stack holds an entry".into());
        }
        if let Some((pos, lpn, _)) = self
            .entries()
            .find(|&(pos, lpn, _)| self.slot(lpn) != Some(pos))
        {
            return Err(format!(
                "secondary: LPN {lpn} in slot {pos} is not indexed there"
            ));
        }
        self.index.check()?;
        let indexed = self.index.len() as u32;
        if indexed != used {
            return Err(format!(
                "secondary: {indexed} LPNs indexed, {used} slots used"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_lookup_update_remove() {
        let mut s = Secondary::new(100, 8);
        let mut segs = Vec::new();
        for lpn in 0..100u32 {
            let seg = s.insert(lpn * 7, lpn).unwrap();
            assert!(seg < 8);
            segs.push(seg);
        }
        assert_eq!(s.insert(1, 1), None, "full");
        assert_eq!(s.peak(), 100);
        for (lpn, &seg) in segs.iter().enumerate() {
            let pos = s.find(lpn as u32 * 7, seg).unwrap();
            assert_eq!(s.get(pos), Some((lpn as u32 * 7, lpn as u32)));
            assert_eq!(s.segment(pos), seg);
            // Not found through another segment.
            assert_eq!(s.find(lpn as u32 * 7, (seg + 1) % 8), None);
        }
        let pos = s.find(21, segs[3]).unwrap();
        s.set_ppa(pos, 999);
        assert_eq!(s.get(pos), Some((21, 999)));
        s.remove(pos);
        assert_eq!(s.get(pos), None);
        assert_eq!(s.find(21, segs[3]), None);
        assert_eq!(s.free_slots(), 1);
        s.check().unwrap();
        // The freed slot is reused, in the same segment.
        assert_eq!(s.insert(5000, 1), Some(segs[3]));
        assert_eq!(s.entries().count(), 100);
        s.check().unwrap();
        // Growing keeps every entry in its segment and adds free slots.
        s.grow(5);
        assert_eq!(s.capacity(), 112);
        assert_eq!(s.free_slots(), 12);
        for (lpn, &seg) in segs.iter().enumerate().filter(|&(l, _)| l != 3) {
            assert!(s.find(lpn as u32 * 7, seg).is_some());
        }
        assert!(s.insert(6000, 2).is_some());
        s.check().unwrap();
        assert_eq!(s.slot(21), None);
        assert_eq!(s.slot(7000), None);
        let pos = s.slot(6000).unwrap();
        assert_eq!(s.get(pos), Some((6000, 2)));
        assert_eq!(s.find(7000, 0), None, "beyond the LPN range");
    }

    #[test]
    fn segments_stay_balanced_as_the_table_grows() {
        for (n, segs) in [(100u32, 8u32), (7, 16), (64, 64), (1000, 1)] {
            let mut s = Secondary::new(n, segs);
            for grown in [false, true] {
                let mut per = vec![0u32; segs as usize];
                for pos in 0..s.capacity() {
                    per[s.segment(pos) as usize] += 1;
                }
                let (lo, hi) = (per.iter().min().unwrap(), per.iter().max().unwrap());
                assert!(hi - lo <= 1, "n {n} segs {segs} grown {grown}: {per:?}");
                s.grow(3);
            }
        }
    }
}
