//! Model training (paper §III-E2 step ③, SPEC §5.5): fitting a TP's `(offset, VPPN)` points with
//! at most [`PIECES`] linear pieces.
//!
//! * [`Training::GreedyPlr`] (the paper's design): greedy piecewise-linear regression anchored at
//!   each piece's first point, with maximum error strictly below 0.5 so that rounding the
//!   prediction gives the exact VPPN, the slope chosen among half-precision values so that the
//!   stored (quantised) piece keeps that bound. If more than 8 pieces are needed, the 8 that
//!   cover the most points are kept.
//! * [`Training::EqualCountLs`] (the authors' released code): 8 pieces of equal point count,
//!   each a float32 least-squares line; no error bound.
//!
//! Which points end up predicted exactly is decided afterwards, by evaluating the stored pieces
//! ([`super::model::Models::install`]).

use super::model::{Piece, PIECES};
use crate::error::quote;
use crate::error::ConfigError;
use half::f16;
use std::str::FromStr;

/// How models are trained.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Training {
    /// Greedy piecewise-linear regression, error < 0.5, at most 8 pieces (paper).
    GreedyPlr,
    /// Eight equal-count float32 least-squares pieces (authors' code).
    EqualCountLs,
}

impl Training {
    /// The name used by `--set training=…`.
    pub fn key(self) -> &'static str {
        match self {
            Training::GreedyPlr => "greedy-plr",
            Training::EqualCountLs => "equal-count-ls",
        }
    }

    /// Fits `points` (`(offset, vppn)`, offsets strictly ascending) into `out` (cleared first):
    /// at most [`PIECES`] pieces in ascending `off`.
    pub fn fit(self, points: &[(u32, u32)], out: &mut Vec<Piece>) {
        out.clear();
        match self {
            Training::GreedyPlr => {
                let mut segs = Vec::new();
                greedy_segments(points, &mut segs);
                keep_largest(&mut segs);
                out.extend(segs.iter().map(|s| s.0));
            }
            Training::EqualCountLs => equal_count_ls(points, out),
        }
    }
}

impl std::fmt::Display for Training {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

impl FromStr for Training {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        match s {
            "greedy-plr" => Ok(Training::GreedyPlr),
            "equal-count-ls" => Ok(Training::EqualCountLs),
            _ => Err(ConfigError::invalid(
                "training",
                format!("{} is not greedy-plr or equal-count-ls", quote(s)),
            )),
        }
    }
}

/// Orders half-precision values as integers (`-0` and `+0` share a key).
fn f16_key(v: f16) -> i32 {
    let b = v.to_bits();
    if b & 0x8000 == 0 {
        b as i32
    } else {
        -((b & 0x7fff) as i32)
    }
}

fn f16_from_key(k: i32) -> f16 {
    if k >= 0 {
        f16::from_bits(k as u16)
    } else {
        f16::from_bits(0x8000 | (-k) as u16)
    }
}

/// A finite half-precision value strictly inside `(lo, hi)`, preferring 1.0 (the slope of
/// sequential runs), then the midpoint, then the smallest representable value above `lo`.
pub fn f16_between(lo: f64, hi: f64) -> Option<f16> {
    let inside = |v: f16| v.is_finite() && lo < v.to_f64() && v.to_f64() < hi;
    if inside(f16::ONE) {
        return Some(f16::ONE);
    }
    let mid = match (lo.is_finite(), hi.is_finite()) {
        (true, true) => (lo + hi) / 2.0,
        (true, false) => lo + 1.0,
        (false, true) => hi - 1.0,
        (false, false) => 1.0,
    };
    let m = f16::from_f64(mid);
    if inside(m) {
        return Some(m);
    }
    let mut c = f16::from_f64(lo);
    if c.to_f64() <= lo || c.is_nan() {
        c = f16_from_key(f16_key(c) + 1);
    }
    inside(c).then_some(c)
}

/// Greedy error-bounded segmentation: each segment starts at a point (its `off` and `base`) and
/// grows while some half-precision slope keeps every point's error strictly below 0.5.
/// Pushes `(piece, points covered)` to `segs` (cleared first).
pub fn greedy_segments(points: &[(u32, u32)], segs: &mut Vec<(Piece, u32)>) {
    segs.clear();
    let mut i = 0;
    while i < points.len() {
        let (x0, y0) = points[i];
        let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
        let mut j = i + 1;
        while j < points.len() {
            let dx = (points[j].0 - x0) as f64;
            let dy = points[j].1 as f64 - y0 as f64;
            let nlo = lo.max((dy - 0.5) / dx);
            let nhi = hi.min((dy + 0.5) / dx);
            if nlo >= nhi || f16_between(nlo, nhi).is_none() {
                break;
            }
            lo = nlo;
            hi = nhi;
            j += 1;
        }
        let k = f16_between(lo, hi).unwrap_or(f16::ONE);
        segs.push((
            Piece {
                off: x0 as u16,
                k,
                base: y0,
            },
            (j - i) as u32,
        ));
        i = j;
    }
}

/// Keeps the [`PIECES`] segments covering the most points (earlier ones on ties), in `off` order.
fn keep_largest(segs: &mut Vec<(Piece, u32)>) {
    if segs.len() <= PIECES {
        return;
    }
    let mut order: Vec<usize> = (0..segs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(segs[i].1));
    order.truncate(PIECES);
    order.sort_unstable();
    let kept: Vec<(Piece, u32)> = order.iter().map(|&i| segs[i]).collect();
    *segs = kept;
}

/// The authors' trainer: up to 8 pieces of equal point count, each fitted by float32 least
/// squares (relative to its first point) and anchored at its first offset.
fn equal_count_ls(points: &[(u32, u32)], out: &mut Vec<Piece>) {
    if points.is_empty() {
        return;
    }
    let chunk = points.len().div_ceil(PIECES);
    for c in points.chunks(chunk) {
        let (x0, y0) = c[0];
        let n = c.len() as f32;
        let rel = |&(x, y): &(u32, u32)| ((x - x0) as f32, (y as i64 - y0 as i64) as f32);
        let (sx, sy) = c
            .iter()
            .map(rel)
            .fold((0f32, 0f32), |(a, b), (x, y)| (a + x, b + y));
        let (mx, my) = (sx / n, sy / n);
        let (sxx, sxy) = c.iter().map(rel).fold((0f32, 0f32), |(a, b), (x, y)| {
            (a + (x - mx) * (x - mx), b + (x - mx) * (y - my))
        });
        let k = if sxx > 0.0 { sxy / sxx } else { 1.0 };
        let b = (y0 as f64 + (my - k * mx) as f64).round();
        out.push(Piece {
            off: x0 as u16,
            k: f16::from_f32(k),
            base: b.clamp(0.0, (u32::MAX - 1) as f64) as u32,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::model::{predict, Pieces};
    use super::*;
    use proptest::prelude::*;

    fn model(pieces: &[Piece]) -> Pieces {
        let mut p = [Piece::UNUSED; PIECES];
        p[..pieces.len()].copy_from_slice(pieces);
        p
    }

    fn exact(pieces: &[Piece], points: &[(u32, u32)]) -> usize {
        let m = model(pieces);
        points
            .iter()
            .filter(|&&(x, y)| predict(&m, x).map(|v| v.0) == Some(y))
            .count()
    }

    #[test]
    fn linear_and_strided_data_fit_exactly_with_one_piece() {
        let mut out = Vec::new();
        let linear: Vec<(u32, u32)> = (0..512).map(|x| (x, 70_000 + x)).collect();
        Training::GreedyPlr.fit(&linear, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(exact(&out, &linear), 512);
        // Every third offset valid, written back contiguously by GC: slope 1/3.
        let strided: Vec<(u32, u32)> = (0..170).map(|i| (3 * i, 9_000 + i)).collect();
        Training::GreedyPlr.fit(&strided, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(exact(&out, &strided), 170);
        // Decreasing runs fit too.
        let down: Vec<(u32, u32)> = (0..100).map(|x| (x, 5_000 - 2 * x)).collect();
        Training::GreedyPlr.fit(&down, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(exact(&out, &down), 100);
    }

    #[test]
    fn more_than_eight_segments_keep_the_eight_largest() {
        // Ten runs of different lengths with unrelated bases.
        let mut pts = Vec::new();
        let mut x = 0;
        for r in 0..10u32 {
            for i in 0..(r + 2) {
                pts.push((x, 1_000_000 * (r + 1) + i));
                x += 1;
            }
        }
        let mut segs = Vec::new();
        greedy_segments(&pts, &mut segs);
        assert_eq!(segs.len(), 10);
        let mut out = Vec::new();
        Training::GreedyPlr.fit(&pts, &mut out);
        assert_eq!(out.len(), PIECES);
        // The two shortest runs (2 and 3 points) were dropped.
        assert_eq!(out[0].off, 5);
        assert!(out.windows(2).all(|w| w[0].off < w[1].off));
        assert_eq!(exact(&out, &pts), pts.len() - 5);
    }

    #[test]
    fn equal_count_least_squares_makes_eight_pieces() {
        let pts: Vec<(u32, u32)> = (0..512).map(|x| (x, 100 + x)).collect();
        let mut out = Vec::new();
        Training::EqualCountLs.fit(&pts, &mut out);
        assert_eq!(out.len(), PIECES);
        assert_eq!(out[1].off, 64);
        assert_eq!(exact(&out, &pts), 512);
        Training::EqualCountLs.fit(&pts[..3], &mut out);
        assert_eq!(out.len(), 3);
        assert_eq!(
            "equal-count-ls".parse::<Training>(),
            Ok(Training::EqualCountLs)
        );
        assert!("sgd".parse::<Training>().is_err());
    }

    #[test]
    fn f16_quantisation_round_trips_and_stays_inside_the_cone() {
        for k in [1.0f32, 0.5, 0.25, 2.0, -1.0, 0.125, 1024.0] {
            let h = f16::from_f32(k);
            assert_eq!(h.to_f32(), k);
            assert_eq!(f16_from_key(f16_key(h)), h);
        }
        let third = f16::from_f64(1.0 / 3.0);
        assert!((third.to_f64() - 1.0 / 3.0).abs() < 1e-3);
        assert_eq!(f16_from_key(f16_key(third)), third);
        assert_eq!(f16_between(0.9, 1.1), Some(f16::ONE));
        let v = f16_between(0.3332, 0.3334).unwrap().to_f64();
        assert!(v > 0.3332 && v < 0.3334);
        // Narrower than the spacing of half-precision values: none.
        assert_eq!(f16_between(0.333_300, 0.333_301), None);
        assert_eq!(f16_between(70_000.0, 80_000.0), None);
        let neg = f16_between(-2.01, -1.99).unwrap();
        assert_eq!(neg.to_f64(), -2.0);
    }

    proptest! {
        #[test]
        fn greedy_pieces_are_error_bounded_and_at_most_eight(
            steps in prop::collection::vec((1u32..4, 0u32..3, any::<bool>()), 1..300),
            start in 0u32..1_000_000,
        ) {
            // Mostly-linear data with jumps: offsets advance by 1..3, VPPNs by a small step or a
            // jump.
            let mut pts = Vec::new();
            let (mut x, mut y) = (0u32, start);
            for (dx, dy, jump) in steps {
                if x >= 512 { break; }
                pts.push((x, y));
                x += dx;
                y = if jump { y + 1000 + dy } else { y + dy };
            }
            let mut segs = Vec::new();
            greedy_segments(&pts, &mut segs);
            // Every point is predicted exactly by its own segment (error < 0.5 after rounding).
            let mut i = 0;
            for (p, n) in &segs {
                for &(x, y) in &pts[i..i + *n as usize] {
                    prop_assert_eq!(p.predict(x).map(|v| v.0), Some(y));
                }
                i += *n as usize;
            }
            prop_assert_eq!(i, pts.len());
            let mut out = Vec::new();
            Training::GreedyPlr.fit(&pts, &mut out);
            prop_assert!(out.len() <= PIECES);
            if segs.len() <= PIECES {
                prop_assert_eq!(exact(&out, &pts), pts.len());
            }
        }
    }
}
