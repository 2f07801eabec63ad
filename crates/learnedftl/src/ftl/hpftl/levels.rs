//! The blocks of each LUN grouped by free pages, so the secondary writer finds a LUN's emptiest
//! (or fullest) open block without scanning the LUN: one bitset of blocks per (LUN, free pages),
//! and a count per set. Simulator bookkeeping, as a controller's block-status table would be.

/// Per LUN and free-page count, which blocks have that many free pages.
#[derive(Clone, Debug)]
pub struct FreeLevels {
    ppb: u32,
    blocks_per_lun: u32,
    /// `u64` words per bitset.
    words: usize,
    /// Bitsets, `[lun][free][word]`; bit `i` = block `lun · blocks_per_lun + i`.
    bits: Vec<u64>,
    /// Blocks per `[lun][free]`.
    count: Vec<u32>,
    /// `u64` words per LUN summary.
    sum_words: usize,
    /// Per LUN, a bitset of the free-page counts some block has, `[lun][word]`.
    summary: Vec<u64>,
}

impl FreeLevels {
    /// `luns` LUNs of `blocks_per_lun` erased blocks of `ppb` pages.
    pub fn new(luns: u32, blocks_per_lun: u32, ppb: u32) -> FreeLevels {
        let words = blocks_per_lun.div_ceil(64) as usize;
        let levels = (luns * (ppb + 1)) as usize;
        let sum_words = (ppb as usize + 1).div_ceil(64);
        let mut f = FreeLevels {
            ppb,
            blocks_per_lun,
            words,
            bits: vec![0; levels * words],
            count: vec![0; levels],
            sum_words,
            summary: vec![0; luns as usize * sum_words],
        };
        for b in 0..luns * blocks_per_lun {
            f.set(b, ppb, true);
        }
        f
    }

    /// Hints into cache the words [`FreeLevels::moved`] changes when `block`, with `free`
    /// free pages, gets one page programmed.
    pub fn prefetch_moved(&self, block: u32, free: u32) {
        let (lun, i) = (block / self.blocks_per_lun, block % self.blocks_per_lun);
        for f in [free, free.saturating_sub(1)] {
            let level = (lun * (self.ppb + 1) + f) as usize;
            if let Some(w) = self.bits.get(level * self.words + i as usize / 64) {
                crate::host::prefetch(w);
            }
        }
    }

    fn set(&mut self, block: u32, free: u32, on: bool) {
        let (lun, i) = (block / self.blocks_per_lun, block % self.blocks_per_lun);
        let level = (lun * (self.ppb + 1) + free) as usize;
        let word = &mut self.bits[level * self.words + i as usize / 64];
        let bit = 1u64 << (i % 64);
        debug_assert_eq!(*word & bit != 0, !on, "block {block} at {free} free pages");
        *word ^= bit;
        let count = &mut self.count[level];
        if on {
            *count += 1;
        } else {
            *count -= 1;
        }
        if *count == on as u32 {
            // The level just became (non-)empty.
            let s = lun as usize * self.sum_words + free as usize / 64;
            self.summary[s] ^= 1 << (free % 64);
        }
    }

    /// `block`'s free pages went from `from` to `to` (a program, or an erase).
    #[inline]
    pub fn moved(&mut self, block: u32, from: u32, to: u32) {
        self.set(block, from, false);
        self.set(block, to, true);
    }

    /// Checks every block is filed under `free_of(block)` free pages, and nowhere else.
    pub fn check(&self, free_of: impl Fn(u32) -> u32) -> Result<(), String> {
        let blocks =
            self.bits.len() / self.words / (self.ppb as usize + 1) * self.blocks_per_lun as usize;
        let filed: u32 = self.count.iter().sum();
        if filed as usize != blocks {
            return Err(format!("free levels: {filed} blocks filed, {blocks} exist"));
        }
        for b in 0..blocks as u32 {
            let (lun, i) = (b / self.blocks_per_lun, b % self.blocks_per_lun);
            let level = (lun * (self.ppb + 1) + free_of(b)) as usize;
            if self.bits[level * self.words + i as usize / 64] & (1 << (i % 64)) == 0 {
                return Err(format!(
                    "free levels: block {b} not filed under {} free pages",
                    free_of(b)
                ));
            }
        }
        Ok(())
    }

    /// The open block of `lun` with the most free pages (`emptiest`) or the fewest, the lowest
    /// id among equals, skipping blocks `skip` refuses.
    pub fn pick(&self, lun: u32, emptiest: bool, skip: impl Fn(u32) -> bool) -> Option<u32> {
        let base = lun * (self.ppb + 1);
        let summary = &self.summary[lun as usize * self.sum_words..][..self.sum_words];
        // Non-empty levels above 0 (full blocks are never picked), in the order wanted; plain
        // loops, as the iterator chain they replace was not inlined (a few % of HP-FTL's time).
        for k in 0..self.sum_words {
            let w = if emptiest { self.sum_words - 1 - k } else { k };
            let mut rest = summary[w] & if w == 0 { !1 } else { !0 };
            while rest != 0 {
                let i = if emptiest {
                    63 - rest.leading_zeros()
                } else {
                    rest.trailing_zeros()
                };
                rest &= !(1 << i);
                let level = (base + w as u32 * 64 + i) as usize;
                let blocks = &self.bits[level * self.words..(level + 1) * self.words];
                for (w, &word) in blocks.iter().enumerate() {
                    let mut rest = word;
                    while rest != 0 {
                        let b = lun * self.blocks_per_lun + w as u32 * 64 + rest.trailing_zeros();
                        if !skip(b) {
                            return Some(b);
                        }
                        rest &= rest - 1;
                    }
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The plain scan the levels replace.
    fn scan(free: &[u32], lun: u32, bpl: u32, emptiest: bool, skip: &[u32]) -> Option<u32> {
        let open =
            (lun * bpl..(lun + 1) * bpl).filter(|b| free[*b as usize] > 0 && !skip.contains(b));
        if emptiest {
            open.max_by_key(|&b| (free[b as usize], std::cmp::Reverse(b)))
        } else {
            open.min_by_key(|&b| (free[b as usize], b))
        }
    }

    #[test]
    fn picks_agree_with_a_scan() {
        let (luns, bpl, ppb) = (3u32, 70u32, 8u32);
        let mut lv = FreeLevels::new(luns, bpl, ppb);
        let mut free = vec![ppb; (luns * bpl) as usize];
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(12345);
        for step in 0..5000 {
            let b = rng.gen_range(0..luns * bpl);
            let to = if free[b as usize] > 0 && rng.gen_range(0..8) != 0 {
                free[b as usize] - 1 // a program
            } else {
                ppb // an erase
            };
            lv.moved(b, free[b as usize], to);
            free[b as usize] = to;
            let skip = [b, (b + 1) % (luns * bpl)];
            lv.check(|b| free[b as usize]).unwrap();
            for lun in 0..luns {
                for emptiest in [true, false] {
                    assert_eq!(
                        lv.pick(lun, emptiest, |c| skip.contains(&c)),
                        scan(&free, lun, bpl, emptiest, &skip),
                        "step {step} lun {lun} emptiest {emptiest}"
                    );
                }
            }
        }
    }

    #[test]
    fn check_finds_a_misfiled_block() {
        let mut lv = FreeLevels::new(2, 3, 4);
        lv.check(|_| 4).unwrap();
        lv.moved(1, 4, 3);
        assert!(lv.check(|_| 4).is_err());
        lv.check(|b| if b == 1 { 3 } else { 4 }).unwrap();
    }
}
