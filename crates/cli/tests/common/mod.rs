//! Helpers shared by the CLI's test files.

/// `n` deterministic pseudo-random bytes (a xorshift stream from `seed`, which must not be 0).
pub fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
