//! A fixed-size set of dense indices (blocks, LPNs) as one bit each: per-index flags that hot
//! paths test, in a table 64 times smaller than a `Vec<bool>`.

/// `len` bits, packed 64 to a word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bits {
    words: Vec<u64>,
}

impl Bits {
    /// `len` bits, all `on`.
    pub fn new(len: usize, on: bool) -> Bits {
        let mut words = vec![if on { !0 } else { 0 }; len.div_ceil(64)];
        // Bits past `len` stay clear, so whole-word comparisons see only real ones.
        if on && len % 64 != 0 {
            *words.last_mut().expect("len > 0") = (1 << (len % 64)) - 1;
        }
        Bits { words }
    }

    /// Bit `i`.
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        self.words[i >> 6] >> (i & 63) & 1 == 1
    }

    /// Hints that bit `i` will be read soon ([`crate::host::prefetch()`]).
    #[inline]
    pub fn prefetch(&self, i: usize) {
        if let Some(w) = self.words.get(i >> 6) {
            crate::host::prefetch(w);
        }
    }

    /// The indices of the set bits, in ascending order.
    pub fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    w * 64 + bit
                })
            })
        })
    }

    /// Sets bit `i` to `on`.
    #[inline]
    pub fn set(&mut self, i: usize, on: bool) {
        let (word, bit) = (&mut self.words[i >> 6], 1u64 << (i & 63));
        if on {
            *word |= bit;
        } else {
            *word &= !bit;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_start_as_asked_and_keep_what_is_set() {
        for len in [1, 63, 64, 65, 200] {
            for on in [false, true] {
                let mut b = Bits::new(len, on);
                assert!((0..len).all(|i| b.get(i) == on), "{len} {on}");
                b.set(len - 1, !on);
                b.set(0, !on);
                assert!(b.get(0) != on && b.get(len - 1) != on);
                assert!((1..len - 1).all(|i| b.get(i) == on), "{len} {on}");
                let ones: Vec<usize> = b.ones().collect();
                let want: Vec<usize> = (0..len).filter(|&i| b.get(i)).collect();
                assert_eq!(ones, want, "{len} {on}");
            }
        }
    }
}
