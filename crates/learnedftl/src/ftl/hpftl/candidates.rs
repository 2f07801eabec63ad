//! Per block, the secondary-table LPNs that hash to it: the entries GC may move back into the
//! block once it is erased (paper §II-D), found without scanning the whole secondary table every
//! GC round.
//!
//! A record is added for each candidate block when an LPN enters the secondary table, and
//! dropped lazily: a block's records are cleaned when GC visits the block, and the whole index is
//! rebuilt from the table when stale records outnumber live ones twice over (amortised O(1) per
//! insert). Simulator bookkeeping: a controller would scan its table; no DRAM is charged.

use super::Secondary;
use crate::mapping::HashFamily;

/// Most hash functions a family has (`h ≤ 8`).
const MAX_FUNCTIONS: usize = 256;

/// Per-block lists of secondary-table LPNs hashing there.
#[derive(Clone, Debug)]
pub struct CandidateIndex {
    buckets: Vec<Vec<u32>>,
    records: u64,
}

impl CandidateIndex {
    /// An empty index over `blocks` blocks.
    pub fn new(blocks: u32) -> CandidateIndex {
        CandidateIndex {
            buckets: vec![Vec::new(); blocks as usize],
            records: 0,
        }
    }

    /// Records that `lpn`, just entered `sec`, may move into each of its hash candidates.
    pub fn add(&mut self, lpn: u32, hashes: &HashFamily, sec: &Secondary) {
        self.record(lpn, hashes);
        let live = sec.used() as u64 * hashes.count() as u64;
        if self.records > 3 * live + self.buckets.len() as u64 {
            self.buckets.iter_mut().for_each(Vec::clear);
            self.records = 0;
            for (_, lpn, _) in sec.entries() {
                self.record(lpn, hashes);
            }
        }
    }

    /// The LPNs of `sec` hashing to `block`, ascending, each once; cleans the block's records.
    pub fn live(&mut self, block: u32, sec: &Secondary) -> &[u32] {
        let bucket = &mut self.buckets[block as usize];
        let before = bucket.len();
        bucket.retain(|&lpn| sec.slot(lpn).is_some());
        bucket.sort_unstable();
        bucket.dedup();
        self.records -= (before - bucket.len()) as u64;
        bucket
    }

    /// Adds one record of `lpn` per distinct candidate block.
    fn record(&mut self, lpn: u32, hashes: &HashFamily) {
        let mut buf = [0u32; MAX_FUNCTIONS];
        let cands = &mut buf[..hashes.count() as usize];
        hashes.all(lpn, cands);
        for (i, &b) in cands.iter().enumerate() {
            // Two functions may name the same block: one record serves both.
            if !cands[..i].contains(&b) {
                self.buckets[b as usize].push(lpn);
                self.records += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::HashKind;
    use rand::{Rng, SeedableRng};

    #[test]
    fn live_lists_exactly_the_entries_hashing_to_a_block_through_churn() {
        let (blocks, lpns) = (16u32, 400u32);
        let hashes = HashFamily::new(HashKind::Mix, 6, blocks, 7).unwrap();
        let mut sec = Secondary::new(64, 8);
        let mut idx = CandidateIndex::new(blocks);
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(99);
        let mut max_records = 0;
        for step in 0..20_000 {
            let lpn = rng.gen_range(0..lpns);
            match sec.slot(lpn) {
                Some(pos) => sec.remove(pos),
                None if sec.free_slots() > 0 => {
                    sec.insert(lpn, 0);
                    idx.add(lpn, &hashes, &sec);
                }
                None => {}
            }
            max_records = max_records.max(idx.records);
            if step % 97 == 0 {
                let b = rng.gen_range(0..blocks);
                let mut want: Vec<u32> = sec
                    .entries()
                    .map(|(_, l, _)| l)
                    .filter(|&l| (0..6).any(|f| hashes.hash(f, l) == b))
                    .collect();
                want.sort_unstable();
                assert_eq!(idx.live(b, &sec), &want[..], "step {step} block {b}");
            }
        }
        // Stale records are bounded: rebuilt before they outnumber the live ones 3:1.
        assert!(
            max_records <= 3 * 64 * 6 + blocks as u64 + 6,
            "{max_records}"
        );
    }
}
