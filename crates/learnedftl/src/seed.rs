//! Seed derivation: every pseudo-random stream of a run (each job clone's, the power-cut
//! plan's, a fault injector's choices, the conformance check's streams) comes from one seed
//! through [`mix`], so a run depends on that seed alone. It sits below every layer that draws.

/// Derives a clone's seed from the run seed and its position (SplitMix64 finaliser), so every
/// clone has its own stream and the whole run depends on one seed.
pub fn mix(seed: u64, a: u64, b: u64) -> u64 {
    let mut z =
        seed ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
