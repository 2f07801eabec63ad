//! Where a TP's pages lie, as **runs** (issue 53): what a description of pages in place — no
//! page moved for it — could predict at most.
//!
//! A run is a maximal chain of a TP's mapped LPNs, in VPPN order, in which each next LPN has a
//! higher offset and lies at most its offset gap further (the VPPNs between can be offsets laid
//! out with them and overwritten since): what one collection's sorted copies of the TP, one
//! sequential host write or one merge leaves, holes and all. Any exact description of pages
//! where they lie (a rank piece, a linear piece of slope at most 1, a LeaFTL accurate segment, a
//! base plus a membership bitmap) predicts a run as a whole or in parts, so the pages in a TP's
//! `k` largest runs bound what a description with `k` parts per TP can predict (a fitted piece
//! of slope above 1 may span runs: the bound is for descriptions of runs). A description also
//! needs, per LPN, which of its parts holds it (or none): with `k` parts at least
//! `log2(k + 1)` bits per LPN whatever the parts are.

use serde::Serialize;

/// Description parts per TP the bound is reported for: one, as many as a model has pieces, and
/// eight times that (whose membership alone takes 7 bits per LPN, twice LearnedFTL's whole
/// mapping DRAM per LPN on `quick`).
pub const PARTS: [usize; 3] = [1, super::model::PIECES, 8 * super::model::PIECES];

/// The runs of every TP ([`Runs::add_tp`] one TP at a time).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Runs {
    /// Mapped LPNs.
    pub mapped: u64,
    /// Runs (a mapped LPN alone in its run is one).
    pub runs: u64,
    /// Per entry of [`PARTS`]: LPNs in each TP's that many largest runs.
    pub in_largest: [u64; PARTS.len()],
}

impl Runs {
    /// Adds one TP's mapped LPNs `points` `(offset, VPPN)` (any order; sorted here by VPPN)
    /// using `sizes` as scratch.
    pub fn add_tp(&mut self, points: &mut [(u32, u32)], sizes: &mut Vec<u32>) {
        points.sort_unstable_by_key(|&(_, v)| v);
        sizes.clear();
        for (i, &(x, v)) in points.iter().enumerate() {
            let continues = i > 0 && {
                let (px, pv) = points[i - 1];
                x > px && v > pv && v - pv <= x - px
            };
            match sizes.last_mut() {
                Some(n) if continues => *n += 1,
                _ => sizes.push(1),
            }
        }
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        self.mapped += points.len() as u64;
        self.runs += sizes.len() as u64;
        for (n, &k) in self.in_largest.iter_mut().zip(PARTS.iter()) {
            *n += sizes.iter().take(k).map(|&s| s as u64).sum::<u64>();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_split_where_vppns_jump_or_offsets_go_back() {
        let mut r = Runs::default();
        let mut sizes = Vec::new();
        // VPPNs 10..14 at offsets 0, 2, 5, 7 (one run with holes), 16 at offset 8 (VPPN gap 3
        // over an offset gap of 1: a new run), 40 alone, 50..52 at offsets 9, 3 (the offset
        // goes back: two runs), 70 and 74 at offsets 12, 16 (a piece with k = 1 whose LPNs
        // between were overwritten: one run; 19 VPPNs past 51 over 9 offsets, not with it).
        let mut pts = vec![
            (7, 13),
            (0, 10),
            (5, 12),
            (2, 11),
            (8, 16),
            (1, 40),
            (3, 51),
            (9, 50),
            (12, 70),
            (16, 74),
        ];
        r.add_tp(&mut pts, &mut sizes);
        assert_eq!(r.mapped, 10);
        assert_eq!(r.runs, 6);
        assert_eq!(r.in_largest, [4, 10, 10]);
        // A second TP adds up.
        let mut seq: Vec<(u32, u32)> = (0..512).map(|x| (x, 1000 + x)).collect();
        r.add_tp(&mut seq, &mut sizes);
        assert_eq!((r.mapped, r.runs, r.in_largest), (522, 7, [516, 522, 522]));
    }
}
