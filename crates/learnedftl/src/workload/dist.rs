//! Random block choice for random jobs, following fio's generators (`lib/zipf.c`, `lib/gauss.c`).
//!
//! * `uniform` with fio's default random map: every block of the region is visited exactly once
//!   per pass, in a seeded pseudo-random order (a Feistel permutation). `norandommap` draws
//!   independent uniform blocks instead.
//! * `zipf:θ`: Gray et al.'s generator as fio implements it (ζ(n) summed over at most 10^7 terms);
//!   rank r is then scattered over the region.
//! * `pareto:h`: fio's power law, `n = (N−1)·u^(log h / log(1−h))`, then scattered.
//! * `normal:dev`: Gaussian around the region's middle with σ = ⌈N·dev/100⌉ (at most N/2),
//!   clamped to the region, then scattered.
//!
//! fio scatters ranks with a hash that can collide; we scatter with a seeded bijection, so the
//! hot set keeps exactly the size the distribution gives it.

use crate::error::quote;
use rand::Rng;
use rand_distr::{Distribution, Normal};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;

/// A random distribution over the blocks of a region.
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Dist {
    /// Uniform.
    Uniform,
    /// Zipf with exponent θ (θ > 0, θ ≠ 1).
    Zipf {
        /// θ.
        theta: f64,
    },
    /// Pareto with parameter h (0 < h < 1).
    Pareto {
        /// h.
        h: f64,
    },
    /// Normal with σ as a percentage of the region.
    Normal {
        /// σ in percent of the region.
        dev_percent: f64,
    },
}

impl FromStr for Dist {
    type Err = String;
    fn from_str(s: &str) -> Result<Dist, String> {
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n.trim(), Some(a.trim())),
            None => (s.trim(), None),
        };
        let num = |what: &str| -> Result<f64, String> {
            let a = arg.ok_or_else(|| format!("{name} needs a parameter ({name}:{what})"))?;
            a.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("{} is not a number", quote(a)))
        };
        match name {
            "random" | "uniform" => Ok(Dist::Uniform),
            "zipf" => {
                let theta = num("theta")?;
                if theta <= 0.0 || theta == 1.0 {
                    return Err(format!("zipf theta {theta} must be positive and not 1"));
                }
                Ok(Dist::Zipf { theta })
            }
            "pareto" => {
                let h = num("h")?;
                if !(h > 0.0 && h < 1.0) {
                    return Err(format!("pareto h {h} must be strictly between 0 and 1"));
                }
                Ok(Dist::Pareto { h })
            }
            "normal" | "gauss" => {
                let dev_percent = if arg.is_some() { num("dev")? } else { 0.0 };
                if !(0.0..=100.0).contains(&dev_percent) {
                    return Err(format!(
                        "normal deviation {dev_percent}% must be in [0, 100]"
                    ));
                }
                Ok(Dist::Normal { dev_percent })
            }
            _ => Err(format!(
                "unknown distribution {} (expected random, zipf:θ, pareto:h, normal:dev)",
                quote(name)
            )),
        }
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dist::Uniform => write!(f, "random"),
            Dist::Zipf { theta } => write!(f, "zipf:{theta}"),
            Dist::Pareto { h } => write!(f, "pareto:{h}"),
            Dist::Normal { dev_percent } => write!(f, "normal:{dev_percent}"),
        }
    }
}

/// A seeded bijection on `[0, n)`: a 4-round Feistel network on the next even power of two,
/// cycle-walking values that fall outside.
#[derive(Clone, Debug)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    /// A permutation of `[0, n)` chosen by `rng`.
    pub fn new(n: u64, rng: &mut impl Rng) -> Permutation {
        let bits = 64 - n.max(2).saturating_sub(1).leading_zeros();
        Permutation {
            n,
            half_bits: bits.div_ceil(2).max(1),
            keys: rng.gen(),
        }
    }

    #[inline]
    fn round(x: u64, key: u64, mask: u64) -> u64 {
        let mut h = (x ^ key).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^= h >> 29;
        h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        (h ^ (h >> 32)) & mask
    }

    /// One pass of the network over the even power of two (may land at or past `n`).
    #[inline]
    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.keys {
            let nl = r;
            r = l ^ Self::round(r, k, mask);
            l = nl;
        }
        (l << self.half_bits) | r
    }

    /// The image of `x` (< n).
    #[inline]
    pub fn apply(&self, x: u64) -> u64 {
        let mut y = self.feistel(x);
        while y >= self.n {
            y = self.feistel(y);
        }
        y
    }

    /// The images of `start, start + 1, …` into `out` (at most [`MAPPED_RUN`] of them, each
    /// `< n`), as [`Permutation::apply`] gives them, a pass of the network over every value
    /// still outside `[0, n)` at a time: the values' chains of multiplies overlap rather than
    /// run one after another, and the values left outside are listed without a branch on each
    /// (which way it goes is a coin toss). Where `n` is just past a power of four the
    /// network's domain is 4n and a value takes 4 passes on average: 1 TiB of paper geometry
    /// has 2^28 + 26,624 logical pages.
    #[inline]
    fn apply_run(&self, start: u64, out: &mut [u64]) {
        let mut outside = [0u8; MAPPED_RUN];
        let mut m = 0;
        for (i, (o, x)) in out.iter_mut().zip(start..).enumerate() {
            *o = self.feistel(x);
            outside[m] = i as u8;
            m += (*o >= self.n) as usize;
        }
        while m > 0 {
            let mut left = 0;
            for j in 0..m {
                let i = outside[j] as usize;
                out[i] = self.feistel(out[i]);
                outside[left] = i as u8;
                left += (out[i] >= self.n) as usize;
            }
            m = left;
        }
    }
}

const ZIPF_MAX_TERMS: u64 = 10_000_000;

/// Values of a random map computed at once ([`Permutation::apply_run`]).
const MAPPED_RUN: usize = 16;

/// `ζ(terms) = Σ_{i=1}^{terms} i^−θ`, summed in fio's order, remembered for the last few
/// `(terms, θ)` asked: every clone of a job builds its own picker, and a sweep's runs draw from
/// the same distribution, while the sum costs one `powf` per block (64 clones of a 2 GiB
/// region: ~1 s). A pure function, so remembering it changes no result.
fn zeta(terms: u64, theta: f64) -> f64 {
    /// `(terms, θ's bits, ζ)`, oldest first.
    static RECENT: Mutex<Vec<(u64, u64, f64)>> = Mutex::new(Vec::new());
    const KEEP: usize = 8;
    let key = (terms, theta.to_bits());
    // A poisoned lock only means another thread panicked mid-push: the entries are whole.
    let known = |r: &[(u64, u64, f64)]| r.iter().find(|e| (e.0, e.1) == key).map(|e| e.2);
    if let Some(z) = known(&RECENT.lock().unwrap_or_else(|e| e.into_inner())) {
        return z;
    }
    let z = (1..=terms).map(|i| (i as f64).powf(-theta)).sum();
    let mut recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    if known(&recent).is_none() {
        if recent.len() == KEEP {
            recent.remove(0);
        }
        recent.push((key.0, key.1, z));
    }
    z
}

/// Draws block indices in `[0, n)` from a [`Dist`].
#[derive(Clone, Debug)]
pub struct BlockPicker {
    n: u64,
    kind: Kind,
    scatter: Permutation,
}

#[derive(Clone, Debug)]
enum Kind {
    /// Random map: position within the current pass's permutation (of the values computed),
    /// and the next values, computed [`MAPPED_RUN`] at a time.
    Mapped {
        perm: Permutation,
        pos: u64,
        run: [u64; MAPPED_RUN],
        /// The next value of `run` to hand out, and how many it holds.
        at: usize,
        len: usize,
    },
    Uniform,
    Zipf {
        theta: f64,
        zetan: f64,
        alpha: f64,
        eta: f64,
    },
    Pareto {
        pow: f64,
    },
    Normal {
        normal: Option<Normal<f64>>,
    },
}

impl BlockPicker {
    /// A picker over `n ≥ 1` blocks; `random_map` applies to the uniform distribution only.
    pub fn new(n: u64, dist: Dist, random_map: bool, rng: &mut Pcg64Mcg) -> BlockPicker {
        let scatter = Permutation::new(n, rng);
        let kind = match dist {
            Dist::Uniform if random_map => Kind::Mapped {
                perm: Permutation::new(n, rng),
                pos: 0,
                run: [0; MAPPED_RUN],
                at: 0,
                len: 0,
            },
            Dist::Uniform => Kind::Uniform,
            Dist::Zipf { theta } => {
                let zetan = zeta(n.min(ZIPF_MAX_TERMS), theta);
                let zeta2 = 1.0 + 0.5f64.powf(theta);
                let nf = n as f64;
                Kind::Zipf {
                    theta,
                    zetan,
                    alpha: 1.0 / (1.0 - theta),
                    eta: (1.0 - (2.0 / nf).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
                }
            }
            Dist::Pareto { h } => Kind::Pareto {
                pow: h.ln() / (1.0 - h).ln(),
            },
            Dist::Normal { dev_percent } => {
                let sd = ((n as f64 * dev_percent) / 100.0)
                    .ceil()
                    .min((n / 2) as f64);
                Kind::Normal {
                    normal: (sd > 0.0).then(|| Normal::new(n as f64 / 2.0, sd).expect("finite σ")),
                }
            }
        };
        BlockPicker { n, kind, scatter }
    }

    /// The next block.
    #[inline]
    pub fn next(&mut self, rng: &mut Pcg64Mcg) -> u64 {
        let n = self.n;
        match &mut self.kind {
            Kind::Mapped {
                perm,
                pos,
                run,
                at,
                len,
            } => {
                if *at == *len {
                    // A run never crosses into the next pass, so the next permutation is
                    // drawn from `rng` at the same draw as one value at a time would.
                    if *pos == n {
                        *perm = Permutation::new(n, rng);
                        *pos = 0;
                    }
                    let k = (MAPPED_RUN as u64).min(n - *pos) as usize;
                    perm.apply_run(*pos, &mut run[..k]);
                    *pos += k as u64;
                    (*at, *len) = (0, k);
                }
                *at += 1;
                run[*at - 1]
            }
            Kind::Uniform => rng.gen_range(0..n),
            Kind::Zipf {
                theta,
                zetan,
                alpha,
                eta,
            } => {
                let u: f64 = rng.gen();
                let z = u * *zetan;
                let rank = if z < 1.0 {
                    0
                } else if z < 1.0 + 0.5f64.powf(*theta) {
                    1
                } else {
                    ((n as f64 * (*eta * u - *eta + 1.0).powf(*alpha)) as u64).min(n - 1)
                };
                self.scatter.apply(rank.min(n - 1))
            }
            Kind::Pareto { pow } => {
                let u: f64 = rng.gen();
                let rank = (((n - 1) as f64) * u.powf(*pow)) as u64;
                self.scatter.apply(rank.min(n - 1))
            }
            Kind::Normal { normal } => match normal {
                None => rng.gen_range(0..n),
                Some(d) => {
                    let x = d.sample(rng).clamp(0.0, (n - 1) as f64) as u64;
                    self.scatter.apply(x)
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn a_remembered_zeta_is_the_sum_itself() {
        let sum = |n: u64, theta: f64| -> f64 { (1..=n).map(|i| (i as f64).powf(-theta)).sum() };
        // More (terms, θ) than are kept, twice over: forgotten ones are summed again.
        for round in 0..2 {
            for n in 1..=12u64 {
                for theta in [0.5, 0.99, 1.2] {
                    let z = zeta(n * 100, theta);
                    assert_eq!(
                        z.to_bits(),
                        sum(n * 100, theta).to_bits(),
                        "{round} {n} {theta}"
                    );
                }
            }
        }
    }

    #[test]
    fn permutation_is_a_bijection() {
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        for n in [1u64, 2, 3, 7, 64, 1000, 4097] {
            let p = Permutation::new(n, &mut rng);
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = p.apply(x);
                assert!(y < n && !seen[y as usize], "n={n}");
                seen[y as usize] = true;
            }
        }
    }

    #[test]
    fn random_map_visits_each_block_once_per_pass() {
        let mut rng = Pcg64Mcg::seed_from_u64(2);
        let mut p = BlockPicker::new(100, Dist::Uniform, true, &mut rng);
        for _ in 0..3 {
            let mut seen = [0u8; 100];
            for _ in 0..100 {
                seen[p.next(&mut rng) as usize] += 1;
            }
            assert!(seen.iter().all(|&c| c == 1));
        }
    }

    #[test]
    fn random_map_runs_are_the_values_one_at_a_time() {
        // Runs of MAPPED_RUN values, a pass not a multiple of it, the next pass's permutation
        // drawn from the shared generator between other draws: the same sequence as applying
        // each position in turn.
        for n in [1u64, 5, 8, 13, 100] {
            let (mut a, mut b) = (Pcg64Mcg::seed_from_u64(4), Pcg64Mcg::seed_from_u64(4));
            let mut p = BlockPicker::new(n, Dist::Uniform, true, &mut a);
            let _ = Permutation::new(n, &mut b);
            let mut perm = Permutation::new(n, &mut b);
            for i in 0..3 * n + 5 {
                let pos = i % n;
                if i > 0 && pos == 0 {
                    perm = Permutation::new(n, &mut b);
                }
                assert_eq!(p.next(&mut a), perm.apply(pos), "n={n} draw {i}");
                assert_eq!(a.gen::<u32>(), b.gen::<u32>());
            }
        }
    }

    fn top_share(dist: Dist, n: u64, draws: usize, top: usize) -> f64 {
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        let mut p = BlockPicker::new(n, dist, false, &mut rng);
        let mut c = vec![0u64; n as usize];
        for _ in 0..draws {
            c[p.next(&mut rng) as usize] += 1;
        }
        c.sort_unstable_by(|a, b| b.cmp(a));
        c[..top].iter().sum::<u64>() as f64 / draws as f64
    }

    #[test]
    fn skewed_distributions_are_skewed() {
        let uni = top_share(Dist::Uniform, 10_000, 200_000, 1000);
        let zipf = top_share(Dist::Zipf { theta: 1.2 }, 10_000, 200_000, 1000);
        let zipf99 = top_share(Dist::Zipf { theta: 0.99 }, 10_000, 200_000, 1000);
        let pareto = top_share(Dist::Pareto { h: 0.2 }, 10_000, 200_000, 1000);
        let normal = top_share(Dist::Normal { dev_percent: 5.0 }, 10_000, 200_000, 1000);
        assert!(uni < 0.15, "uniform top-10% share {uni}");
        assert!(zipf > 0.8, "zipf:1.2 top-10% share {zipf}");
        assert!(zipf99 > 0.6, "zipf:0.99 top-10% share {zipf99}");
        assert!(pareto > 0.6, "pareto:0.2 top-10% share {pareto}");
        assert!(normal > 0.5, "normal:5 top-10% share {normal}");
    }

    #[test]
    fn parse_names() {
        assert_eq!("zipf:1.2".parse::<Dist>(), Ok(Dist::Zipf { theta: 1.2 }));
        assert_eq!("random".parse::<Dist>(), Ok(Dist::Uniform));
        assert!("zipf:1".parse::<Dist>().is_err());
        assert!("pareto:2".parse::<Dist>().is_err());
        assert!("weird".parse::<Dist>().is_err());
        assert!("zipf".parse::<Dist>().is_err());
    }
}
