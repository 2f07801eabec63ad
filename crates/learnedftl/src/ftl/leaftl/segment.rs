//! Learned index segments `(S, L, K, I)` and the greedy piecewise-linear regression that learns
//! them (LeaFTL §3.1–3.3, Fig. 1 and Fig. 6).
//!
//! A segment maps LPN offsets `x` of one 256-LPN group to VPPNs. It takes 8 bytes, exactly the
//! paper's encoding: `S` (1 B, first offset), `L` (1 B, last offset − S), `K` (2 B, an IEEE
//! half-precision slope whose least significant bit flags the type: 0 accurate, 1 approximate)
//! and `I` (4 B, a signed intercept).
//!
//! * **Single point** (`L = 0`, `K = 0`): `vppn = I`.
//! * **Accurate** (LSB of K = 0): the segment encodes the LPNs `S, S + s, S + 2s, …` up to
//!   `S + L`, with stride `s = round(1/K)` (K < 1 is the paper's stride segment, Fig. 1 B), and
//!   maps them to consecutive VPPNs: `vppn = I + ⌊x / s⌋`. Integer arithmetic makes the prediction
//!   exact, and it stays exact when a merge moves `S` to a later encoded LPN (K and I never change).
//! * **Approximate** (LSB of K = 1): `vppn = I + round(K·x)` is within ±γ of the truth for every
//!   LPN it encodes; which LPNs those are is kept in the group's CRB.

use half::f16;

/// Offsets per group: a group is 256 consecutive LPNs, so an offset fits in one byte.
pub const GROUP_LPNS: u32 = 256;

/// One learned segment (8 bytes, as the paper encodes it).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Segment {
    /// First LPN offset covered (`S`).
    pub s: u8,
    /// Last offset covered minus `S` (`L`).
    pub l: u8,
    /// Slope as f16 bits; the least significant bit is the approximate flag.
    k: u16,
    /// Intercept (`I`).
    i: i32,
}

/// Bytes one segment takes in DRAM and in a translation page.
pub const SEGMENT_BYTES: u64 = 8;

impl Segment {
    /// A single-point segment mapping offset `x` to `vppn` (`L = 0`, `K = 0`, `I = vppn`).
    pub fn single(x: u8, vppn: u32) -> Segment {
        Segment {
            s: x,
            l: 0,
            k: 0,
            i: vppn as i32,
        }
    }

    /// An accurate segment: offsets `first, first + stride, …, last` map to consecutive VPPNs
    /// starting at `vppn_first`.
    pub fn accurate(first: u8, last: u8, stride: u8, vppn_first: u32) -> Segment {
        debug_assert!(stride >= 1 && (last - first) % stride == 0);
        Segment {
            s: first,
            l: last - first,
            k: stride_k(stride),
            i: vppn_first as i32 - (first / stride) as i32,
        }
    }

    /// An approximate segment over `[first, last]` predicting `I + round(K·x)`; `k_bits` are
    /// the f16 bits of the slope (the approximate flag is set here).
    pub fn approximate(first: u8, last: u8, k_bits: u16, intercept: i32) -> Segment {
        Segment {
            s: first,
            l: last - first,
            k: k_bits | 1,
            i: intercept,
        }
    }

    /// Whether predictions are exact and the encoded LPNs follow from `(S, L, K)` alone.
    #[inline]
    pub fn is_accurate(&self) -> bool {
        self.k & 1 == 0
    }

    /// Last offset covered.
    #[inline]
    pub fn end(&self) -> u8 {
        self.s + self.l
    }

    /// Whether `x` lies in `[S, S + L]`.
    #[inline]
    pub fn in_range(&self, x: u8) -> bool {
        self.s <= x && x <= self.end()
    }

    /// Whether the ranges of two segments overlap.
    #[inline]
    pub fn overlaps(&self, o: &Segment) -> bool {
        self.s <= o.end() && o.s <= self.end()
    }

    /// The slope.
    #[inline]
    pub fn k(&self) -> f32 {
        f16::from_bits(self.k).to_f32()
    }

    /// Stride of an accurate segment (1 for single points).
    #[inline]
    pub fn stride(&self) -> u8 {
        if self.k == 0 {
            return 1;
        }
        // round(1/K) in integers, on every lookup's path: a normal f16 K is
        // 2^(e-15)·(1024 + m)/1024, so 1/K = 2^(25-e)/(1024 + m). An accurate K is
        // 1/stride to f16 precision, far from a rounding tie (the unit test checks all).
        let e = (self.k >> 10) as u32 & 31;
        let m = (self.k & 1023) as u32 + 1024;
        let num = 1u64 << 25u32.saturating_sub(e);
        ((num + m as u64 / 2) / m as u64).min(255) as u8
    }

    /// Whether an accurate segment encodes offset `x` (the paper's `has_lpa` without the CRB).
    #[inline]
    pub fn accurate_has(&self, x: u8) -> bool {
        self.in_range(x) && (x - self.s) % self.stride() == 0
    }

    /// The predicted VPPN of offset `x` (may be negative for a wild extrapolation, which the
    /// caller never asks for: it predicts only offsets the segment encodes).
    #[inline]
    pub fn predict(&self, x: u8) -> i64 {
        let i = self.i as i64;
        if self.k == 0 {
            i
        } else if self.is_accurate() {
            i + (x / self.stride()) as i64
        } else {
            i + (self.k() * x as f32).round() as i64
        }
    }

    /// Moves the range to `[first, last]` (a merge or trim; K and I stay).
    #[inline]
    pub fn set_range(&mut self, first: u8, last: u8) {
        self.s = first;
        self.l = last - first;
    }
}

/// The f16 slope `1/stride` of an accurate segment, with the flag bit clear, chosen so that
/// `round(1/K)` gives the stride back.
fn stride_k(stride: u8) -> u16 {
    let bits = f16::from_f32(1.0 / stride as f32).to_bits();
    let back = |b: u16| (1.0 / f16::from_bits(b).to_f32()).round() as u32 == stride as u32;
    // Clearing the flag bit moves K by one ulp at most; take whichever even neighbour still
    // round-trips (the unit test checks every stride does).
    if bits & 1 == 0 || back(bits & !1) {
        bits & !1
    } else {
        bits + 1
    }
}

/// A learning point: offset in the group and the VPPN it was written to.
pub type Point = (u8, u32);

/// Greedy piecewise-linear regression bounded by `gamma` over points sorted by strictly
/// increasing offset; appends the segments (in offset order) to `out`.
///
/// With γ = 0 a segment is a maximal run of offsets in arithmetic progression written to
/// consecutive VPPNs, i.e. an accurate segment (stride segments included). With γ > 0 each
/// segment is grown greedily while a line through its first point stays within ±γ of every point
/// (the shrinking-cone test); runs that turn out to be arithmetic progressions on consecutive
/// VPPNs are stored accurate, the rest approximate with a slope and intercept chosen and then
/// checked with their stored (f16, integer) values, shortening the segment until every point is
/// within ±γ.
pub fn learn(points: &[Point], gamma: u32, out: &mut Vec<Segment>) {
    let mut i = 0;
    while i < points.len() {
        let run = ap_run(&points[i..]);
        if gamma == 0 {
            out.push(encode_run(&points[i..i + run]));
            i += run;
            continue;
        }
        let mut j = i + cone(&points[i..], gamma as f64).0;
        loop {
            let seg = &points[i..j];
            if ap_run(seg) == seg.len() {
                out.push(encode_run(seg));
                break;
            }
            if let Some(s) = fit_approximate(seg, gamma) {
                out.push(s);
                break;
            }
            j -= 1;
        }
        i = j;
    }
}

/// Length of the longest prefix that is an arithmetic progression of offsets on consecutive
/// VPPNs.
fn ap_run(p: &[Point]) -> usize {
    if p.len() < 2 || p[1].1 != p[0].1.wrapping_add(1) {
        return p.len().min(1);
    }
    let stride = p[1].0 - p[0].0;
    let mut n = 2;
    while n < p.len() && p[n].0 - p[n - 1].0 == stride && p[n].1 == p[n - 1].1.wrapping_add(1) {
        n += 1;
    }
    n
}

/// An accurate segment for points that form an arithmetic progression on consecutive VPPNs.
fn encode_run(p: &[Point]) -> Segment {
    let (x0, y0) = p[0];
    if p.len() == 1 {
        return Segment::single(x0, y0);
    }
    let last = p[p.len() - 1].0;
    Segment::accurate(x0, last, p[1].0 - x0, y0)
}

/// The shrinking cone: how many points from the first a line through the first point can follow
/// within ±γ, and the range of slopes that do so for them.
fn cone(p: &[Point], gamma: f64) -> (usize, f64, f64) {
    let (x0, y0) = (p[0].0 as f64, p[0].1 as f64);
    let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
    for (n, &(x, y)) in p.iter().enumerate().skip(1) {
        let dx = x as f64 - x0;
        let dy = y as f64 - y0;
        let nlo = lo.max((dy - gamma) / dx);
        let nhi = hi.min((dy + gamma) / dx);
        if nlo > nhi {
            return (n, lo, hi);
        }
        (lo, hi) = (nlo, nhi);
    }
    (p.len(), lo, hi)
}

/// An approximate segment for `p` (points a cone accepted) whose stored values keep every point
/// within ±γ, if the cone's middle slope, quantised, achieves that.
fn fit_approximate(p: &[Point], gamma: u32) -> Option<Segment> {
    let (_, lo, hi) = cone(p, gamma as f64);
    let k = if lo.is_finite() && hi.is_finite() {
        (lo + hi) / 2.0
    } else {
        0.0
    };
    let k_bits = f16::from_f64(k).to_bits() | 1;
    let kq = f16::from_bits(k_bits).to_f32();
    // Residuals with the stored slope; the intercept centres them.
    let res = |&(x, y): &Point| y as i64 - (kq * x as f32).round() as i64;
    let (mut emin, mut emax) = (i64::MAX, i64::MIN);
    for pt in p {
        let e = res(pt);
        emin = emin.min(e);
        emax = emax.max(e);
    }
    let i = (emin + emax).div_euclid(2);
    let ok = emax - i <= gamma as i64 && i - emin <= gamma as i64;
    let i32_ok = i32::try_from(i).ok()?;
    ok.then(|| Segment::approximate(p[0].0, p[p.len() - 1].0, k_bits, i32_ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn learn_all(points: &[Point], gamma: u32) -> Vec<Segment> {
        let mut v = Vec::new();
        learn(points, gamma, &mut v);
        v
    }

    /// Every point is covered by exactly one segment, in order, within ±γ; accurate segments
    /// predict exactly and encode exactly their points.
    fn check_bound(points: &[Point], segs: &[Segment], gamma: u32) {
        for s in segs {
            let mine: Vec<Point> = points.iter().filter(|p| s.in_range(p.0)).copied().collect();
            assert!(!mine.is_empty(), "{s:?} covers no point");
            assert_eq!(mine[0].0, s.s);
            assert_eq!(mine[mine.len() - 1].0, s.end());
            for &(x, y) in &mine {
                let e = (s.predict(x) - y as i64).unsigned_abs();
                assert!(
                    e <= gamma as u64,
                    "{s:?} at {x}: predicts {} for {y}",
                    s.predict(x)
                );
                if s.is_accurate() {
                    assert_eq!(e, 0);
                }
            }
            if s.is_accurate() {
                let encoded: Vec<u8> = (s.s..=s.end()).filter(|&x| s.accurate_has(x)).collect();
                let xs: Vec<u8> = mine.iter().map(|p| p.0).collect();
                assert_eq!(encoded, xs, "{s:?}");
            }
        }
        let covered: usize = segs
            .iter()
            .map(|s| points.iter().filter(|p| s.in_range(p.0)).count())
            .sum();
        assert_eq!(covered, points.len(), "segments overlap or miss points");
    }

    #[test]
    fn every_stride_round_trips() {
        for s in 1..=255u8 {
            let seg = Segment::accurate(0, 0, s, 100);
            assert!(seg.is_accurate());
            assert_eq!(seg.stride(), s, "stride {s}");
        }
        assert_eq!(std::mem::size_of::<Segment>(), SEGMENT_BYTES as usize);
    }

    #[test]
    fn sequential_run_is_one_accurate_segment() {
        let pts: Vec<Point> = (0..=255u8).map(|x| (x, 1000 + x as u32)).collect();
        for gamma in [0, 4] {
            let segs = learn_all(&pts, gamma);
            assert_eq!(segs.len(), 1);
            assert!(segs[0].is_accurate());
            assert_eq!((segs[0].s, segs[0].l, segs[0].stride()), (0, 255, 1));
            check_bound(&pts, &segs, gamma);
        }
    }

    #[test]
    fn stride_segments_are_found() {
        // Fig. 1 B: every second LPN, consecutive PPAs (K = 0.5), then every third.
        let mut pts: Vec<Point> = (0..8u8).map(|j| (10 + 2 * j, 500 + j as u32)).collect();
        pts.extend((0..5u8).map(|j| (40 + 3 * j, 508 + j as u32)));
        let segs = learn_all(&pts, 0);
        assert_eq!(segs.len(), 2, "{segs:?}");
        assert!(segs.iter().all(|s| s.is_accurate()));
        assert_eq!((segs[0].stride(), segs[0].s, segs[0].end()), (2, 10, 24));
        assert_eq!((segs[1].stride(), segs[1].s, segs[1].end()), (3, 40, 52));
        assert!((segs[0].k() - 0.5).abs() < 1e-6);
        assert!(!segs[0].accurate_has(11) && segs[0].accurate_has(12));
        check_bound(&pts, &segs, 0);
    }

    #[test]
    fn gamma_zero_gives_only_accurate_segments_and_irregular_needs_gamma() {
        // Fig. 1 C: irregular gaps, consecutive PPAs.
        let xs = [0u8, 1, 3, 4, 7, 9, 10, 12, 15, 16, 18, 21];
        let pts: Vec<Point> = xs
            .iter()
            .enumerate()
            .map(|(j, &x)| (x, 64 + j as u32))
            .collect();
        let exact = learn_all(&pts, 0);
        assert!(exact.iter().all(|s| s.is_accurate()));
        assert!(exact.len() >= 5, "{exact:?}");
        check_bound(&pts, &exact, 0);
        let approx = learn_all(&pts, 2);
        assert!(approx.len() < exact.len(), "{approx:?}");
        assert!(approx.iter().any(|s| !s.is_accurate()));
        check_bound(&pts, &approx, 2);
    }

    #[test]
    fn paper_figure_6_segments() {
        // Accurate: LPAs 0..3 → PPAs 32..35 is (0, 3, 1.00, 32).
        let acc = learn_all(&[(0, 32), (1, 33), (2, 34), (3, 35)], 0);
        assert_eq!(acc, vec![Segment::accurate(0, 3, 1, 32)]);
        assert_eq!(acc[0].predict(2), 34);
        // Approximate: LPAs 0, 1, 4, 5 → PPAs 64..67 needs γ ≥ 1.
        let pts = [(0, 64), (1, 65), (4, 66), (5, 67)];
        let a = learn_all(&pts, 1);
        assert_eq!(a.len(), 1, "{a:?}");
        assert!(!a[0].is_accurate());
        assert_eq!((a[0].s, a[0].l), (0, 5));
        check_bound(&pts, &a, 1);
    }

    #[test]
    fn error_bound_holds_on_random_points() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        for round in 0..300 {
            let gamma = [0u32, 1, 2, 4, 16][round % 5];
            let mut xs: Vec<u8> = (0..=255u8).filter(|_| rng.gen_bool(0.3)).collect();
            xs.dedup();
            let mut y = rng.gen_range(0..1_000_000u32);
            let pts: Vec<Point> = xs
                .iter()
                .map(|&x| {
                    // Mostly consecutive VPPNs, sometimes a jump (a line switch).
                    y += if rng.gen_bool(0.05) {
                        rng.gen_range(2..5000)
                    } else {
                        1
                    };
                    (x, y)
                })
                .collect();
            let segs = learn_all(&pts, gamma);
            check_bound(&pts, &segs, gamma);
            if gamma == 0 {
                assert!(segs.iter().all(|s| s.is_accurate()));
            }
        }
    }
}
