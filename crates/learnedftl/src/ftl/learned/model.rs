//! The in-place-update linear model of LearnedFTL (paper §III-B, SPEC §5.5): one per
//! translation page, in DRAM.
//!
//! A model is 8 pieces `{off: u16, k: f16, base: u32}` (8 B each) plus a bitmap with one bit per
//! entry of the TP (512 bits for 4 KiB pages): 128 B per TP. Piece `n` covers offsets
//! `[off_n, off_{n+1})` and predicts `vppn = base_n + round(k_n · (x − off_n))`, always from the
//! stored (quantised) values. Unused pieces carry `off = NONE` and sort last.
//!
//! A model may instead be one **rank piece** (`k` = NaN, ours; see `docs/ftls/learnedftl.md`): a
//! base VPPN and a *layout* bitmap of the offsets that were written together, in LPN order, at
//! consecutive VPPNs; offset `x` with its layout bit set is predicted at `base + (layout bits
//! below x)`. It describes a TP whose pages a collection moved together with holes between them,
//! which no handful of linear pieces can. The layout takes the pieces' 64 B; the base 4 B more.
//!
//! **Bitmap invariant**: a set bit means the model's prediction for that offset is the LPN's true
//! VPPN. Writes, trims and moves clear bits ([`Models::clear`]); any change of the pieces clears
//! the set bits whose prediction changed ([`Models::replace_pieces`]) before new bits are set for
//! offsets the caller verified.

use crate::addr::{Tpn, Vppn};
use half::f16;

/// Pieces per model.
pub const PIECES: usize = 8;

/// One linear piece.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Piece {
    /// First TP offset the piece covers ([`Piece::NONE`] if unused).
    pub off: u16,
    /// Slope, quantised to half precision.
    pub k: f16,
    /// VPPN of offset `off`.
    pub base: u32,
}

impl Piece {
    /// `off` of an unused piece.
    pub const NONE: u16 = u16::MAX;
    /// An unused piece.
    pub const UNUSED: Piece = Piece {
        off: Piece::NONE,
        k: f16::ZERO,
        base: 0,
    };

    /// Whether the piece is in use.
    #[inline]
    pub fn used(&self) -> bool {
        self.off != Piece::NONE
    }

    /// A rank piece from offset `off` whose first laid-out offset is at VPPN `base`.
    pub fn rank_at(off: u32, base: u32) -> Piece {
        Piece {
            off: off as u16,
            k: f16::NAN,
            base,
        }
    }

    /// Whether this is a rank piece (its predictions need the TP's layout).
    #[inline]
    pub fn is_rank(&self) -> bool {
        self.k.is_nan()
    }

    /// This linear piece's prediction for offset `x` (`x ≥ off`), from the stored values; `None`
    /// if it falls outside the VPPN range, or for a rank piece.
    #[inline]
    pub fn predict(&self, x: u32) -> Option<Vppn> {
        if self.is_rank() {
            return None;
        }
        // k has an 11-bit significand and x − off < 2^16, so the product is exact in f64 and
        // `round` sees the true value.
        let v = self.base as i64 + (self.k.to_f64() * (x as f64 - self.off as f64)).round() as i64;
        (0..u32::MAX as i64).contains(&v).then_some(Vppn(v as u32))
    }
}

/// A model's pieces, used ones first in ascending `off`.
pub type Pieces = [Piece; PIECES];

/// The piece of `pieces` covering offset `x`: the last used piece with `off ≤ x`.
#[inline]
fn covering(pieces: &Pieces, x: u32) -> Option<&Piece> {
    let mut hit = None;
    for p in pieces.iter().take_while(|p| p.used()) {
        if p.off as u32 > x {
            break;
        }
        hit = Some(p);
    }
    hit
}

/// The prediction of linear `pieces` for offset `x` (a rank piece predicts nothing here: see
/// [`predict_in`]).
#[inline]
pub fn predict(pieces: &Pieces, x: u32) -> Option<Vppn> {
    covering(pieces, x).and_then(|p| p.predict(x))
}

/// The prediction of `pieces` with the TP's `layout` bitmap for offset `x`.
#[inline]
pub fn predict_in(pieces: &Pieces, layout: &[u64], x: u32) -> Option<Vppn> {
    let p = covering(pieces, x)?;
    if !p.is_rank() {
        return p.predict(x);
    }
    if layout[(x >> 6) as usize] >> (x & 63) & 1 == 0 {
        return None;
    }
    let below = count_in(layout, p.off as u32, x);
    p.base.checked_add(below).map(Vppn)
}

/// Every TP's model.
#[derive(Clone, Debug)]
pub struct Models {
    rank: bool,
    pieces: Vec<Pieces>,
    bits: Vec<u64>,
    /// Rank pieces' layouts, `words` per chunk: only the TPs that got a rank piece since their
    /// last training hold one (`layout_of`), so the TPs without keep no bit per LPN for it.
    layouts: Vec<u64>,
    /// Per TP, its chunk of `layouts`, or [`Models::NO_LAYOUT`].
    layout_of: Vec<u32>,
    /// Chunks no TP holds.
    free_layouts: Vec<u32>,
    /// The layout of a TP without a chunk: all clear.
    no_layout: Box<[u64]>,
    words: usize,
    entries: u32,
}

impl Models {
    /// Untrained models (no piece, no bit) for `tps` TPs of `entries` entries each; `rank`:
    /// rank pieces may be installed (their base costs 4 B of DRAM per TP).
    pub fn new(tps: u32, entries: u32, rank: bool) -> Models {
        let words = entries.div_ceil(64) as usize;
        Models {
            rank,
            pieces: vec![[Piece::UNUSED; PIECES]; tps as usize],
            bits: vec![0; tps as usize * words],
            layouts: Vec::new(),
            layout_of: vec![Self::NO_LAYOUT; tps as usize],
            free_layouts: Vec::new(),
            no_layout: vec![0; words].into_boxed_slice(),
            words,
            entries,
        }
    }

    /// Entries per TP.
    pub fn entries(&self) -> u32 {
        self.entries
    }

    /// DRAM the models take: 8 B per piece plus one bit per entry (128 B per TP of 512
    /// entries); with rank pieces, a layout as large as the bitmap in the pieces' place (if
    /// larger) and a 4 B base (132 B per TP of 512 entries).
    pub fn dram_bytes(&self) -> u64 {
        let bitmap = self.entries.div_ceil(8) as u64;
        let pieces = PIECES as u64 * 8;
        let per_tp = if self.rank {
            pieces.max(bitmap) + bitmap + 4
        } else {
            pieces + bitmap
        };
        self.pieces.len() as u64 * per_tp
    }

    /// The prediction of TP `tpn`'s model for offset `x` (whatever its bit says).
    #[inline]
    pub fn predict(&self, tpn: Tpn, x: u32) -> Option<Vppn> {
        predict_in(&self.pieces[tpn.idx()], self.layout(tpn), x)
    }

    const NO_LAYOUT: u32 = u32::MAX;

    #[inline]
    fn layout(&self, tpn: Tpn) -> &[u64] {
        match self.layout_of[tpn.idx()] {
            Self::NO_LAYOUT => &self.no_layout,
            c => &self.layouts[c as usize * self.words..(c as usize + 1) * self.words],
        }
    }

    /// TP `tpn`'s layout, writable: its chunk, taken (all clear) if it has none.
    fn layout_mut(&mut self, tpn: Tpn) -> &mut [u64] {
        let w = self.words;
        let c = match self.layout_of[tpn.idx()] {
            Self::NO_LAYOUT => {
                let c = self.free_layouts.pop().unwrap_or_else(|| {
                    self.layouts.resize(self.layouts.len() + w, 0);
                    (self.layouts.len() / w - 1) as u32
                });
                self.layouts[c as usize * w..(c as usize + 1) * w].fill(0);
                self.layout_of[tpn.idx()] = c;
                c
            }
            c => c,
        } as usize;
        &mut self.layouts[c * w..(c + 1) * w]
    }

    /// The pieces of TP `tpn`.
    #[inline]
    pub fn pieces(&self, tpn: Tpn) -> &Pieces {
        &self.pieces[tpn.idx()]
    }

    /// Whether TP `tpn` has any piece.
    #[inline]
    pub fn has_model(&self, tpn: Tpn) -> bool {
        self.pieces[tpn.idx()][0].used()
    }

    #[inline]
    fn word(&self, tpn: Tpn, x: u32) -> (usize, u64) {
        (tpn.idx() * self.words + (x >> 6) as usize, 1u64 << (x & 63))
    }

    /// Brings the bitmap word, the pieces and the layout's chunk number a lookup of offset `x`
    /// of TP `tpn` reads into the CPU cache; with `layout`, the layout's word too (reading the
    /// chunk number: best once an earlier call hinted it). A hint: see
    /// [`crate::ftl::Ftl::prefetch`].
    #[inline]
    pub fn prefetch(&self, tpn: Tpn, x: u32, layout: bool) {
        crate::host::prefetch(&self.bits[self.word(tpn, x).0]);
        crate::host::prefetch(&self.pieces[tpn.idx()]);
        if !layout {
            crate::host::prefetch(&self.layout_of[tpn.idx()]);
        } else if let Some(w) = self.layout(tpn).get((x >> 6) as usize) {
            crate::host::prefetch(w);
        }
    }

    /// Whether offset `x` of TP `tpn` is covered by a rank piece (a collection's description of
    /// pages where it put them) rather than a linear one.
    #[inline]
    pub fn rank_at(&self, tpn: Tpn, x: u32) -> bool {
        covering(&self.pieces[tpn.idx()], x).is_some_and(Piece::is_rank)
    }

    /// Whether offset `x` of TP `tpn` has its bit set.
    #[inline]
    pub fn bit(&self, tpn: Tpn, x: u32) -> bool {
        let (w, m) = self.word(tpn, x);
        self.bits[w] & m != 0
    }

    /// The model's VPPN for offset `x` of TP `tpn` if its bit is set (a verified prediction).
    #[inline]
    pub fn lookup(&self, tpn: Tpn, x: u32) -> Option<Vppn> {
        if self.bit(tpn, x) {
            self.predict(tpn, x)
        } else {
            None
        }
    }

    /// Clears the bit of offset `x` (its LPN was written, trimmed or moved).
    #[inline]
    pub fn clear(&mut self, tpn: Tpn, x: u32) {
        let (w, m) = self.word(tpn, x);
        self.bits[w] &= !m;
    }

    /// Sets the bit of offset `x` if the model predicts `truth` there; returns whether it did.
    #[inline]
    pub fn verify(&mut self, tpn: Tpn, x: u32, truth: Vppn) -> bool {
        let ok = self.predict(tpn, x) == Some(truth);
        if ok {
            let (w, m) = self.word(tpn, x);
            self.bits[w] |= m;
        }
        ok
    }

    /// Set bits of TP `tpn` at offsets in `[from, to)`.
    pub fn bits_in(&self, tpn: Tpn, from: u32, to: u32) -> u32 {
        let base = tpn.idx() * self.words;
        count_in(
            &self.bits[base..base + self.words],
            from,
            to.min(self.entries),
        )
    }

    /// Offsets of TP `tpn` whose bit is set, ascending.
    pub fn set_offsets(&self, tpn: Tpn) -> impl Iterator<Item = u32> + '_ {
        let base = tpn.idx() * self.words;
        self.bits[base..base + self.words]
            .iter()
            .enumerate()
            .flat_map(|(wi, &w)| {
                let mut w = w;
                std::iter::from_fn(move || {
                    (w != 0).then(|| {
                        let b = w.trailing_zeros();
                        w &= w - 1;
                        wi as u32 * 64 + b
                    })
                })
            })
    }

    /// Set bits over every TP.
    pub fn set_bits_total(&self) -> u64 {
        self.bits.iter().map(|w| w.count_ones() as u64).sum()
    }

    /// TPs that have at least one piece.
    pub fn modelled_tps(&self) -> u32 {
        self.pieces.iter().filter(|p| p[0].used()).count() as u32
    }

    /// Replaces the pieces of TP `tpn` in place, clearing every set bit whose prediction the
    /// change alters (the invariant's "model changes clear bits"). Returns how many it cleared.
    pub fn replace_pieces(&mut self, tpn: Tpn, new: Pieces) -> u32 {
        let old = std::mem::replace(&mut self.pieces[tpn.idx()], new);
        let layout = self.layout(tpn);
        let changed: Vec<u32> = self
            .set_offsets(tpn)
            .filter(|&x| predict_in(&old, layout, x) != predict_in(&new, layout, x))
            .collect();
        for &x in &changed {
            self.clear(tpn, x);
        }
        changed.len() as u32
    }

    /// Installs freshly trained pieces for TP `tpn`: every bit is cleared, then set for each
    /// `(offset, true VPPN)` point the new pieces predict exactly. Returns the bits set.
    pub fn install(
        &mut self,
        tpn: Tpn,
        pieces: &[Piece],
        points: impl Iterator<Item = (u32, Vppn)>,
    ) -> u32 {
        let mut p = [Piece::UNUSED; PIECES];
        p[..pieces.len()].copy_from_slice(pieces);
        self.pieces[tpn.idx()] = p;
        let base = tpn.idx() * self.words;
        self.bits[base..base + self.words].fill(0);
        // Trained pieces are linear: the layout goes back (all clear, as without a chunk).
        let c = std::mem::replace(&mut self.layout_of[tpn.idx()], Self::NO_LAYOUT);
        if c != Self::NO_LAYOUT {
            self.free_layouts.push(c);
        }
        points.filter(|&(x, v)| self.verify(tpn, x, v)).count() as u32
    }

    /// Sequential initialisation (paper §III-E1, SPEC §5.5) after a write gave offsets
    /// `[x, x + len)` of TP `tpn` the consecutive VPPNs from `first` (their bits already
    /// cleared by the write). If the piece covering `x` already predicts the whole run (a run
    /// continuing the one it came from), the run's bits are set and nothing else changes.
    /// Otherwise, if the piece covering `x` has fewer set bits than `len`, it is
    /// replaced in place by `k = 1, base = first` starting at `x` (a new piece if none covers `x`
    /// and a slot is free), following pieces the run overlaps are moved past it or dropped, bits
    /// whose prediction changed are cleared and the run's bits set. Returns whether the model
    /// changed.
    pub fn seq_init(&mut self, tpn: Tpn, x: u32, len: u32, first: Vppn) -> bool {
        let end = x + len;
        if len < 2 || end > self.entries {
            return false;
        }
        let p = &self.pieces[tpn.idx()];
        let n = p.iter().take_while(|q| q.used()).count();
        if let Some(i) = p[..n].iter().rposition(|q| q.off as u32 <= x) {
            let piece_end = p
                .get(i + 1)
                .filter(|q| q.used())
                .map_or(self.entries, |q| q.off as u32);
            if end <= piece_end && (x..end).all(|o| p[i].predict(o) == Some(Vppn(first.0 + o - x)))
            {
                // The piece already predicts the run (it continues the run the piece came
                // from): the offsets are verified, the model stays.
                for o in x..end {
                    let (w, m) = self.word(tpn, o);
                    self.bits[w] |= m;
                }
                return false;
            }
            if self.bits_in(tpn, p[i].off as u32, piece_end) >= len {
                return false;
            }
        }
        let run = Piece {
            off: x as u16,
            k: f16::ONE,
            base: first.0,
        };
        let Some(p) = self.splice(tpn, run, end) else {
            return false;
        };
        self.replace_pieces(tpn, p);
        for o in x..end {
            let (w, m) = self.word(tpn, o);
            self.bits[w] |= m;
        }
        true
    }

    /// Installs a rank piece over `points` `(offset, true VPPN)` of TP `tpn` — ascending in
    /// offset with consecutive VPPNs, a run a collection wrote in LPN order — covering offsets
    /// from the first point's to just past the last's, if that verifies more LPNs than the bits
    /// now set there and a piece slot is free once pieces predicting nothing are dropped: the
    /// piece covering the first offset keeps the offsets before it, the piece covering the end
    /// is moved past it, pieces starting inside are dropped, the layout there becomes the
    /// points' offsets, bits whose prediction changed are cleared and the points' bits set.
    /// Returns the bits it set (0: model unchanged).
    pub fn install_run(&mut self, tpn: Tpn, points: &[(u32, u32)]) -> u32 {
        let (Some(&(lo, first)), Some(&(last, _))) = (points.first(), points.last()) else {
            return 0;
        };
        let run = points.iter().enumerate().all(|(i, &(x, v))| {
            v == first + i as u32 && (i == 0 || points[i - 1].0 < x) && x < self.entries
        });
        let end = last + 1;
        if !run || points.len() as u32 <= self.bits_in(tpn, lo, end) {
            return 0;
        }
        self.drop_dead(tpn);
        let Some(new) = self.split_in(tpn, Piece::rank_at(lo, first), end) else {
            return 0;
        };
        // Predictions change only inside the run (its offsets are now the run's, the others'
        // bits go) and, where a linear piece was moved past it, under that piece (rounding);
        // a moved rank piece predicts what it did.
        let base = tpn.idx() * self.words;
        let layout = self.layout_mut(tpn);
        for x in lo..end {
            layout[(x >> 6) as usize] &= !(1u64 << (x & 63));
        }
        for &(x, _) in points {
            layout[(x >> 6) as usize] |= 1u64 << (x & 63);
        }
        for x in lo..end {
            let (w, m) = ((x >> 6) as usize, 1u64 << (x & 63));
            self.bits[base + w] &= !m;
        }
        let old = std::mem::replace(&mut self.pieces[tpn.idx()], new);
        let moved = new.iter().position(|q| q.used() && q.off as u32 == end);
        if let Some(i) = moved.filter(|&i| !new[i].is_rank()) {
            if !old.iter().any(|q| q.used() && q.off as u32 == end) {
                let to = new
                    .get(i + 1)
                    .filter(|q| q.used())
                    .map_or(self.entries, |q| q.off as u32);
                for x in end..to {
                    if self.bit(tpn, x) && predict(&old, x) != new[i].predict(x) {
                        self.clear(tpn, x);
                    }
                }
            }
        }
        // The run's offsets are exactly its laid-out ones, the i-th at `first + i`: every
        // prediction is exact by construction (check_invariants verifies it in tests).
        for &(x, _) in points {
            self.bits[base + (x >> 6) as usize] |= 1u64 << (x & 63);
        }
        points.len() as u32
    }

    /// TP `tpn`'s pieces with `run` spliced in over `[run.off, end)`: it replaces the piece
    /// covering `run.off` (or is inserted if none does and a slot is free; `None` if none is),
    /// and pieces starting inside the run are moved to `end` (re-anchored so their predictions
    /// past it stay, where rounding allows) or dropped.
    fn splice(&self, tpn: Tpn, run: Piece, end: u32) -> Option<Pieces> {
        let x = run.off as u32;
        let mut p = self.pieces[tpn.idx()];
        let mut n = p.iter().take_while(|q| q.used()).count();
        let i = match p[..n].iter().rposition(|q| q.off as u32 <= x) {
            Some(i) => {
                p[i] = run;
                i
            }
            None if n < PIECES => {
                p.copy_within(0..n, 1);
                p[0] = run;
                n += 1;
                0
            }
            None => return None,
        };
        let j = i + 1;
        while j < n && (p[j].off as u32) < end {
            let next_off = if j + 1 < n {
                p[j + 1].off as u32
            } else {
                self.entries
            };
            match self.reanchor(tpn, &p[j], end) {
                Some(q) if next_off > end => {
                    p[j] = q;
                    break;
                }
                _ => {
                    p.copy_within(j + 1..n, j);
                    n -= 1;
                    p[n] = Piece::UNUSED;
                }
            }
        }
        Some(p)
    }

    /// Drops TP `tpn`'s pieces that verify no offset (their offsets fall to the piece before,
    /// and none of them has a bit to lose).
    fn drop_dead(&mut self, tpn: Tpn) {
        let p = self.pieces[tpn.idx()];
        let n = p.iter().take_while(|q| q.used()).count();
        let mut keep = [Piece::UNUSED; PIECES];
        let mut m = 0;
        for i in 0..n {
            let end = if i + 1 < n {
                p[i + 1].off as u32
            } else {
                self.entries
            };
            if self.bits_in(tpn, p[i].off as u32, end) > 0 {
                keep[m] = p[i];
                m += 1;
            }
        }
        if m < n {
            self.pieces[tpn.idx()] = keep;
        }
    }

    /// TP `tpn`'s pieces with `run` inserted over `[run.off, end)` and everything else kept:
    /// the piece covering `run.off` still covers the offsets before it, the piece covering
    /// `end` is re-anchored there, pieces starting inside the run are dropped. `None` if that
    /// takes more than [`PIECES`] pieces.
    fn split_in(&self, tpn: Tpn, run: Piece, end: u32) -> Option<Pieces> {
        let x = run.off as u32;
        let old = &self.pieces[tpn.idx()];
        let used = old.iter().take_while(|q| q.used());
        let mut p = [Piece::UNUSED; PIECES];
        let mut n = 0;
        let mut push = |q: Piece| -> Option<()> {
            *p.get_mut(n)? = q;
            n += 1;
            Some(())
        };
        for q in used.clone().filter(|q| (q.off as u32) < x) {
            push(*q)?;
        }
        push(run)?;
        if let Some(q) = used.clone().filter(|q| q.off as u32 <= end).last() {
            if (q.off as u32) < end && end < self.entries {
                if let Some(t) = self.reanchor(tpn, q, end) {
                    push(t)?;
                }
            }
        }
        for q in used.filter(|q| q.off as u32 >= end) {
            push(*q)?;
        }
        Some(p)
    }

    /// Piece `q` of TP `tpn` starting at offset `at` (≥ its own) instead, predicting what it
    /// predicted from there on: a linear piece's base becomes its prediction at `at`, a rank
    /// piece's counts the laid-out offsets it skips.
    fn reanchor(&self, tpn: Tpn, q: &Piece, at: u32) -> Option<Piece> {
        let base = if q.is_rank() {
            q.base + count_in(self.layout(tpn), q.off as u32, at)
        } else {
            q.predict(at)?.0
        };
        Some(Piece {
            off: at as u16,
            k: q.k,
            base,
        })
    }
}

/// Set bits of `words` at offsets in `[from, to)`.
fn count_in(words: &[u64], from: u32, to: u32) -> u32 {
    if to <= from {
        return 0;
    }
    let (w0, b0) = ((from >> 6) as usize, from & 63);
    let (w1, b1) = ((to >> 6) as usize, to & 63);
    (w0..=w1.min(words.len() - 1))
        .map(|i| {
            let mut word = words[i];
            if i == w0 {
                word &= !((1u64 << b0) - 1);
            }
            if i == w1 {
                word &= (1u64 << b1) - 1;
            }
            word.count_ones()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(off: u16, k: f32, base: u32) -> Piece {
        Piece {
            off,
            k: f16::from_f32(k),
            base,
        }
    }

    #[test]
    fn a_rank_piece_predicts_laid_out_offsets_and_keeps_them_when_others_change() {
        let mut m = Models::new(1, 512, true);
        let pts: Vec<(u32, u32)> = [3u32, 4, 9, 200, 511]
            .iter()
            .enumerate()
            .map(|(i, &x)| (x, 1000 + i as u32))
            .collect();
        assert_eq!(m.install_run(Tpn(0), &pts), 5);
        for &(x, v) in &pts {
            assert_eq!(m.lookup(Tpn(0), x), Some(Vppn(v)), "offset {x}");
        }
        assert_eq!(m.predict(Tpn(0), 5), None, "not laid out");
        // A write clears its bit; the others keep their predictions.
        m.clear(Tpn(0), 4);
        assert_eq!(m.lookup(Tpn(0), 4), None);
        assert_eq!(m.lookup(Tpn(0), 200), Some(Vppn(1003)));
        assert!(m.bits_in(Tpn(0), 5, 10) > 0 && m.bits_in(Tpn(0), 5, 9) == 0);
        // Not a run (VPPNs not consecutive): refused, the model stays.
        assert_eq!(m.install_run(Tpn(0), &[(1, 7), (2, 9)]), 0);
        // A run over [100, 120) splits the rank piece: the part past it is re-anchored.
        let run: Vec<(u32, u32)> = (100..110).map(|x| (2 * x - 100, x)).collect();
        assert_eq!(m.install_run(Tpn(0), &run), 10);
        assert_eq!(m.lookup(Tpn(0), 102), Some(Vppn(101)));
        assert_eq!(m.lookup(Tpn(0), 9), Some(Vppn(1002)), "before the run");
        assert_eq!(
            m.lookup(Tpn(0), 200),
            Some(Vppn(1003)),
            "re-anchored past it"
        );
        assert_eq!(m.lookup(Tpn(0), 511), Some(Vppn(1004)));
        // Sequential initialisation before the rank piece moves it past the run.
        assert!(m.seq_init(Tpn(0), 0, 8, Vppn(50)));
        assert_eq!(m.lookup(Tpn(0), 3), Some(Vppn(53)));
        assert_eq!(
            m.lookup(Tpn(0), 9),
            Some(Vppn(1002)),
            "the rank piece moved past the run"
        );
        assert_eq!(
            m.lookup(Tpn(0), 511),
            Some(Vppn(1004)),
            "a later rank piece stays"
        );
    }

    #[test]
    fn model_is_128_bytes_per_tp_of_512_entries_132_with_rank_pieces() {
        assert_eq!(std::mem::size_of::<Piece>(), 8);
        assert_eq!(Models::new(10, 512, false).dram_bytes(), 1280);
        assert_eq!(Models::new(10, 512, true).dram_bytes(), 1320);
        // The bitmap scales with entries per TP (8 KiB pages: 1024 entries).
        assert_eq!(Models::new(1, 1024, false).dram_bytes(), 64 + 128);
        assert_eq!(Models::new(1, 1024, true).dram_bytes(), 128 + 128 + 4);
    }

    #[test]
    fn prediction_uses_the_piece_covering_the_offset_and_rounds() {
        let mut p = [Piece::UNUSED; PIECES];
        p[0] = piece(0, 1.0, 100);
        p[1] = piece(10, 0.5, 1000);
        assert_eq!(predict(&p, 3), Some(Vppn(103)));
        assert_eq!(predict(&p, 10), Some(Vppn(1000)));
        // 0.5 · 3 = 1.5 rounds away from zero.
        assert_eq!(predict(&p, 13), Some(Vppn(1002)));
        let mut q = [Piece::UNUSED; PIECES];
        q[0] = piece(5, 1.0, 0);
        assert_eq!(predict(&q, 4), None, "before the first piece");
        q[0] = piece(0, -1.0, 2);
        assert_eq!(predict(&q, 3), None, "negative VPPN");
    }

    #[test]
    fn replacing_pieces_clears_exactly_the_changed_predictions() {
        let mut m = Models::new(1, 512, true);
        let t = Tpn(0);
        let mut p = [Piece::UNUSED; PIECES];
        p[0] = piece(0, 1.0, 100);
        m.install(t, &p[..1], (0..20).map(|x| (x, Vppn(100 + x))));
        assert_eq!(m.bits_in(t, 0, 512), 20);
        // A new piece from 10 on with another base: offsets 10.. change, 0..10 do not.
        p[1] = piece(10, 1.0, 500);
        assert_eq!(m.replace_pieces(t, p), 10);
        assert_eq!(
            m.set_offsets(t).collect::<Vec<_>>(),
            (0..10).collect::<Vec<_>>()
        );
        m.clear(t, 3);
        assert!(!m.bit(t, 3) && m.lookup(t, 3).is_none());
        assert_eq!(m.lookup(t, 4), Some(Vppn(104)));
    }

    #[test]
    fn sequential_init_sets_exactly_the_run_and_clears_changed_bits() {
        let mut m = Models::new(1, 512, true);
        let t = Tpn(0);
        // An empty model gets a piece for the run.
        assert!(m.seq_init(t, 100, 8, Vppn(5000)));
        assert_eq!(
            m.set_offsets(t).collect::<Vec<_>>(),
            (100..108).collect::<Vec<_>>()
        );
        assert_eq!(m.lookup(t, 107), Some(Vppn(5007)));
        // A longer run inside the same piece replaces it: the old run's offsets before the new
        // start are no longer covered, the others changed; all cleared.
        assert!(m.seq_init(t, 104, 16, Vppn(9000)));
        assert_eq!(
            m.set_offsets(t).collect::<Vec<_>>(),
            (104..120).collect::<Vec<_>>()
        );
        // A shorter run does not displace a piece with more verified offsets.
        assert!(!m.seq_init(t, 110, 4, Vppn(1)));
        assert_eq!(m.bits_in(t, 0, 512), 16);
        // A run the piece already predicts (VPPNs continuing the piece's line) only sets bits.
        assert!(!m.seq_init(t, 130, 4, Vppn(9026)));
        assert_eq!(m.bits_in(t, 0, 512), 20);
        m.clear(t, 130);
        m.clear(t, 131);
        m.clear(t, 132);
        m.clear(t, 133);
        // A run before the first piece that overlaps it: the old piece is moved past the run and
        // keeps its remaining offsets verified.
        assert!(m.seq_init(t, 96, 12, Vppn(20_000)));
        let mut want: Vec<u32> = (96..108).collect();
        want.extend(108..120);
        assert_eq!(m.set_offsets(t).collect::<Vec<_>>(), want);
        assert_eq!(m.lookup(t, 108), Some(Vppn(9004)));
        assert_eq!(m.lookup(t, 100), Some(Vppn(20_004)));
        // Too short or past the TP: nothing.
        assert!(!m.seq_init(t, 0, 1, Vppn(0)));
        assert!(!m.seq_init(t, 510, 4, Vppn(0)));
    }

    #[test]
    fn sequential_init_drops_pieces_it_covers_and_respects_the_slot_limit() {
        let mut m = Models::new(1, 512, true);
        let t = Tpn(0);
        let pieces: Vec<Piece> = (0..PIECES as u16)
            .map(|i| piece(10 + 20 * i, 1.0, 1000 * i as u32))
            .collect();
        let points = (0..PIECES as u32).flat_map(|i| {
            [
                (10 + 20 * i, Vppn(1000 * i)),
                (11 + 20 * i, Vppn(1000 * i + 1)),
            ]
        });
        assert_eq!(m.install(t, &pieces, points), 16);
        // A run to the right of a piece with as many verified offsets leaves it alone.
        assert!(!m.seq_init(t, 40, 2, Vppn(77)));
        // No slot left for a run before the first piece.
        assert!(!m.seq_init(t, 0, 5, Vppn(7)));
        // A long run from the first piece swallows the next two pieces and moves the third.
        assert!(m.seq_init(t, 10, 65, Vppn(50_000)));
        let used = m.pieces(t).iter().filter(|p| p.used()).count();
        assert_eq!(used, PIECES - 2);
        assert_eq!(m.pieces(t)[1].off, 75);
        // The moved piece's verified offsets (70, 71) were overrun by the run; 90.. survive.
        assert_eq!(m.lookup(t, 90), Some(Vppn(4000)));
        assert_eq!(m.lookup(t, 74), Some(Vppn(50_064)));
        assert_eq!(m.bits_in(t, 0, 512), 65 + 2 * 4);
    }
}
