//! Sorting GC buffers by a 32-bit key (an LPN or an OOB tag) in linear time: a collection sorts
//! thousands of pages by LPN, and a comparison sort of them shows up in profiles.

/// Sorts `v` by `key` (stable), using `scratch` as the second buffer: least-significant-byte
/// radix passes over the bytes the largest key uses. Allocates only when `scratch` must grow.
pub fn sort_by_u32_key<T: Copy>(v: &mut Vec<T>, scratch: &mut Vec<T>, key: impl Fn(&T) -> u32) {
    // Below this a comparison sort is as fast and needs no second buffer.
    const SMALL: usize = 64;
    if v.len() <= SMALL {
        v.sort_by_key(&key);
        return;
    }
    let max = v.iter().map(&key).max().unwrap_or(0);
    let passes = (32 - max.leading_zeros()).div_ceil(8);
    scratch.clear();
    scratch.extend_from_slice(v);
    for pass in 0..passes {
        let shift = 8 * pass;
        let mut count = [0usize; 257];
        for e in v.iter() {
            count[((key(e) >> shift) & 0xff) as usize + 1] += 1;
        }
        for i in 1..257 {
            count[i] += count[i - 1];
        }
        for e in v.iter() {
            let b = ((key(e) >> shift) & 0xff) as usize;
            scratch[count[b]] = *e;
            count[b] += 1;
        }
        std::mem::swap(v, scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn sorts_like_a_stable_sort() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        for (n, bits) in [(10, 8), (1000, 12), (5000, 24), (3000, 32)] {
            let v: Vec<(u32, u32)> = (0..n)
                .map(|i| (rng.gen::<u32>() >> (32 - bits), i))
                .collect();
            let mut want = v.clone();
            want.sort_by_key(|e| e.0);
            let (mut got, mut scratch) = (v, Vec::new());
            sort_by_u32_key(&mut got, &mut scratch, |e| e.0);
            assert_eq!(got, want, "{n} keys of {bits} bits");
        }
    }
}
