//! Families of hash functions from a 32-bit key (an LPN) to `[0, range)` (a block), as hash-based
//! mappings need (HP-FTL's `H_1 … H_k`).
//!
//! * [`HashKind::Mix`] (default): function `i` is the SplitMix64 output for the key in the stream
//!   seeded with the `i`-th seed, `H_i(x) = ⌊splitmix64(s_i + (x + 1)·γ) · range / 2^64⌋`. The
//!   seeds come from one SplitMix64 stream, so the functions behave as independent uniform
//!   functions (SplitMix64's finaliser has full avalanche; different seeds give streams with no
//!   usable correlation), and the multiply-shift reduction maps 64 bits onto any range with a bias
//!   below `range / 2^64`. The tests check uniformity (chi-square per function) and pairwise
//!   independence (chi-square of joint values, same-block rate). One 8-byte seed per function.
//! * [`HashKind::Md5Shift`] (the HP-FTL paper's Table I): one MD5 digest of the key (4 bytes,
//!   little-endian) as a 128-bit little-endian integer `d`; `H_i(x) = (d >> i) mod 2^b` where
//!   `2^b = range` ("shifting MD5(LPN) 1 bit each time and keeping the least significant 21
//!   bits"). For a range that is not a power of two, a 32-bit window `(d >> i) mod 2^32` is
//!   reduced by multiply-shift instead. Each function is uniform, but neighbouring functions share
//!   `b − 1` bits, so they are far from independent; the tests show it.

use crate::error::quote;
use crate::error::ConfigError;
use md5::{Digest, Md5};
use std::fmt;
use std::str::FromStr;

/// Which family.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HashKind {
    /// Independent SplitMix64 streams with multiply-shift reduction.
    Mix,
    /// The HP-FTL paper's shifted MD5 windows.
    Md5Shift,
}

impl FromStr for HashKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "mix" => Ok(HashKind::Mix),
            "md5" | "md5-shift" => Ok(HashKind::Md5Shift),
            _ => Err(format!(
                "unknown hash family {} (expected mix or md5)",
                quote(s)
            )),
        }
    }
}

impl fmt::Display for HashKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HashKind::Mix => "mix",
            HashKind::Md5Shift => "md5",
        })
    }
}

const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function.
#[inline]
fn splitmix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `count` hash functions onto `[0, range)`.
#[derive(Clone, Debug)]
pub struct HashFamily {
    kind: HashKind,
    range: u32,
    seeds: Vec<u64>,
    pow2_bits: Option<u32>,
}

impl HashFamily {
    /// `count` functions of family `kind` onto `[0, range)`; `seed` picks the `Mix` functions.
    pub fn new(kind: HashKind, count: u32, range: u32, seed: u64) -> Result<Self, ConfigError> {
        if count == 0 || range == 0 {
            return Err(ConfigError::invalid(
                "hash",
                "a hash family needs at least one function and a non-empty range",
            ));
        }
        let pow2_bits = range.is_power_of_two().then(|| range.trailing_zeros());
        if kind == HashKind::Md5Shift && count - 1 + pow2_bits.unwrap_or(32) > 128 {
            return Err(ConfigError::invalid(
                "hash",
                format!("md5: {count} shifted windows do not fit in a 128-bit digest"),
            ));
        }
        let seeds = (1..=count as u64)
            .map(|i| splitmix64(seed.wrapping_add(i.wrapping_mul(GAMMA))))
            .collect();
        Ok(HashFamily {
            kind,
            range,
            seeds,
            pow2_bits,
        })
    }

    /// The family.
    pub fn kind(&self) -> HashKind {
        self.kind
    }

    /// Number of functions.
    #[inline]
    pub fn count(&self) -> u32 {
        self.seeds.len() as u32
    }

    /// Size of the output range.
    #[inline]
    pub fn range(&self) -> u32 {
        self.range
    }

    #[inline]
    fn reduce64(&self, x: u64) -> u32 {
        ((x as u128 * self.range as u128) >> 64) as u32
    }

    #[inline]
    fn md5_window(&self, d: u128, i: u32) -> u32 {
        match self.pow2_bits {
            Some(b) => ((d >> i) as u64 & ((1u64 << b) - 1)) as u32,
            None => (((d >> i) as u32 as u64 * self.range as u64) >> 32) as u32,
        }
    }

    fn md5(key: u32) -> u128 {
        u128::from_le_bytes(Md5::digest(key.to_le_bytes()).into())
    }

    /// Function `i` (0-based) of `key`.
    #[inline]
    pub fn hash(&self, i: u32, key: u32) -> u32 {
        match self.kind {
            HashKind::Mix => self.reduce64(splitmix64(
                self.seeds[i as usize].wrapping_add((key as u64 + 1).wrapping_mul(GAMMA)),
            )),
            HashKind::Md5Shift => self.md5_window(Self::md5(key), i),
        }
    }

    /// Every function of `key` in order, `hash(0, key)` first, computed as they are taken (one
    /// digest for `Md5Shift`).
    #[inline]
    pub fn each(&self, key: u32) -> impl Iterator<Item = u32> + '_ {
        let digest = (self.kind == HashKind::Md5Shift).then(|| Self::md5(key));
        (0..self.count()).map(move |i| match digest {
            Some(d) => self.md5_window(d, i),
            None => self.hash(i, key),
        })
    }

    /// Every function of `key`: `out[i] = hash(i, key)` (one digest for `Md5Shift`).
    #[inline]
    pub fn all(&self, key: u32, out: &mut [u32]) {
        match self.kind {
            HashKind::Mix => {
                for (i, o) in out.iter_mut().enumerate() {
                    *o = self.hash(i as u32, key);
                }
            }
            HashKind::Md5Shift => {
                let d = Self::md5(key);
                for (i, o) in out.iter_mut().enumerate() {
                    *o = self.md5_window(d, i as u32);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pearson chi-square statistic of `counts` against a uniform expectation.
    fn chi2(counts: &[u64]) -> f64 {
        let n: u64 = counts.iter().sum();
        let e = n as f64 / counts.len() as f64;
        counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum()
    }

    /// Upper bound for a chi-square with `df` degrees of freedom that a uniform sample exceeds
    /// with probability about 1e-6 (normal approximation, z ≈ 4.9).
    fn chi2_limit(df: usize) -> f64 {
        let df = df as f64;
        df + 4.9 * (2.0 * df).sqrt()
    }

    fn uniform(kind: HashKind, range: u32) {
        let f = HashFamily::new(kind, 6, range, 42).unwrap();
        let mut out = [0u32; 6];
        let mut counts = vec![vec![0u64; range as usize]; 6];
        for key in 0..200_000u32 {
            f.all(key, &mut out);
            for (i, &b) in out.iter().enumerate() {
                assert!(b < range);
                assert_eq!(b, f.hash(i as u32, key));
                counts[i][b as usize] += 1;
            }
        }
        for (i, c) in counts.iter().enumerate() {
            let x = chi2(c);
            assert!(
                x < chi2_limit(range as usize - 1),
                "{kind} H{i} over {range}: chi2 {x}"
            );
        }
    }

    #[test]
    fn mix_is_uniform_on_power_of_two_and_odd_ranges() {
        uniform(HashKind::Mix, 512);
        uniform(HashKind::Mix, 300);
    }

    #[test]
    fn md5_shift_is_uniform_per_function() {
        uniform(HashKind::Md5Shift, 512);
        uniform(HashKind::Md5Shift, 300);
    }

    /// Chi-square of the joint low 4 bits of two functions (256 cells): independent functions
    /// give a uniform joint distribution.
    fn joint_chi2(f: &HashFamily, i: u32, j: u32) -> f64 {
        let mut c = vec![0u64; 256];
        for key in 0..100_000u32 {
            let a = f.hash(i, key) & 15;
            let b = f.hash(j, key) & 15;
            c[(a * 16 + b) as usize] += 1;
        }
        chi2(&c)
    }

    #[test]
    fn mix_functions_are_pairwise_independent() {
        let f = HashFamily::new(HashKind::Mix, 6, 512, 7).unwrap();
        for i in 0..6 {
            for j in i + 1..6 {
                let x = joint_chi2(&f, i, j);
                assert!(x < chi2_limit(255), "H{i},H{j}: joint chi2 {x}");
                // Same block for two functions: about 1/range of keys.
                let same = (0..100_000u32)
                    .filter(|&k| f.hash(i, k) == f.hash(j, k))
                    .count();
                assert!((100..=300).contains(&same), "H{i},H{j}: {same} collisions");
            }
        }
        // Another seed gives other functions.
        let g = HashFamily::new(HashKind::Mix, 6, 512, 8).unwrap();
        assert!((0..100u32).any(|k| f.hash(0, k) != g.hash(0, k)));
    }

    #[test]
    fn md5_shift_neighbours_are_dependent_as_documented() {
        let f = HashFamily::new(HashKind::Md5Shift, 6, 512, 0).unwrap();
        assert!(joint_chi2(&f, 0, 1) > 10.0 * chi2_limit(255));
        // H_{i+1} is H_i shifted by one bit with one new top bit.
        for k in 0..1000 {
            assert_eq!(f.hash(1, k) & 255, f.hash(0, k) >> 1);
        }
    }

    #[test]
    fn bad_families_are_refused() {
        assert!(HashFamily::new(HashKind::Mix, 0, 10, 0).is_err());
        assert!(HashFamily::new(HashKind::Mix, 3, 0, 0).is_err());
        assert!(HashFamily::new(HashKind::Md5Shift, 100, 1000, 0).is_err());
        assert!("md5".parse::<HashKind>().is_ok());
        assert!("sha".parse::<HashKind>().is_err());
    }
}
