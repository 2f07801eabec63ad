//! A vector of fixed-width unsigned integers packed back to back into 64-bit words: the storage
//! of compact mapping tables whose entries are narrower than a byte or straddle bytes (HP-FTL's
//! `h + m`-bit primary entries).

/// `len` entries of `bits` bits each (1 ..= 32), all zero initially.
#[derive(Clone, Debug)]
pub struct PackedVec {
    bits: u32,
    mask: u64,
    len: usize,
    words: Vec<u64>,
}

impl PackedVec {
    /// `len` zero entries of `bits` bits. `bits` must be in 1 ..= 32.
    pub fn new(len: usize, bits: u32) -> PackedVec {
        assert!((1..=32).contains(&bits), "entry width {bits} not in 1..=32");
        PackedVec {
            bits,
            mask: (1u64 << bits) - 1,
            len,
            words: vec![0; (len * bits as usize).div_ceil(64)],
        }
    }

    /// Entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no entries.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Width of one entry in bits.
    #[inline]
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// Entry `i`.
    #[inline]
    pub fn get(&self, i: usize) -> u32 {
        debug_assert!(i < self.len);
        let bit = i * self.bits as usize;
        let (w, o) = (bit >> 6, bit & 63);
        let mut v = self.words[w] >> o;
        if o + self.bits as usize > 64 {
            v |= self.words[w + 1] << (64 - o);
        }
        (v & self.mask) as u32
    }

    /// Hints that entry `i` will be read soon ([`crate::host::prefetch()`]).
    #[inline]
    pub fn prefetch(&self, i: usize) {
        if let Some(w) = self.words.get((i * self.bits as usize) >> 6) {
            crate::host::prefetch(w);
        }
    }

    /// Sets entry `i` to `v` (which must fit in `bits`).
    #[inline]
    pub fn set(&mut self, i: usize, v: u32) {
        debug_assert!(i < self.len);
        debug_assert!(
            v as u64 <= self.mask,
            "{v} does not fit in {} bits",
            self.bits
        );
        let v = v as u64 & self.mask;
        let bit = i * self.bits as usize;
        let (w, o) = (bit >> 6, bit & 63);
        self.words[w] = (self.words[w] & !(self.mask << o)) | (v << o);
        if o + self.bits as usize > 64 {
            let hi = 64 - o;
            self.words[w + 1] = (self.words[w + 1] & !(self.mask >> hi)) | (v >> hi);
        }
    }

    /// Bytes the packed entries occupy (`⌈len · bits / 8⌉`): what a controller storing this table
    /// would spend on it.
    pub fn bytes(&self) -> u64 {
        (self.len as u64 * self.bits as u64).div_ceil(8)
    }

    /// Every entry in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.len).map(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_width_round_trips_without_disturbing_neighbours() {
        for bits in 1..=32u32 {
            let n = 200;
            let mut v = PackedVec::new(n, bits);
            let mask = ((1u64 << bits) - 1) as u32;
            let val = |i: usize| ((i as u32).wrapping_mul(0x9E37_79B9) ^ 0x5555_5555) & mask;
            for i in 0..n {
                v.set(i, val(i));
            }
            for i in 0..n {
                assert_eq!(v.get(i), val(i), "bits {bits} entry {i}");
            }
            // Overwrite every third with all ones, then zero: neighbours unchanged.
            for i in (0..n).step_by(3) {
                v.set(i, mask);
                assert_eq!(v.get(i), mask);
                v.set(i, 0);
            }
            for i in 0..n {
                let want = if i % 3 == 0 { 0 } else { val(i) };
                assert_eq!(v.get(i), want, "bits {bits} entry {i}");
            }
            assert_eq!(v.bytes(), (n as u64 * bits as u64).div_ceil(8));
            assert_eq!(v.iter().count(), n);
        }
    }
}
