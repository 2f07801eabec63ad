//! The checks of a verifying byte path (`serve --verify`, docs/nbd.md): each page-level
//! request must leave the oracle's failure count unchanged (the stamp check), and each page a
//! read returns must hash to what the host last saw there (the byte check), which catches
//! wrong data under the right stamp: a payload bug, a corrupted buffer or flash page.
//!
//! The shadow keeps, per logical page, the oracle stamp of the version it describes and a
//! 64-bit hash of that version's bytes, updated by every write (the whole page, after any
//! read-modify-write) and trim (a zero page). A read's page is compared when the oracle still
//! expects the shadow's version; otherwise the version changed without a write through this
//! path — a power cut's recovery adopted an older one (a write lost from a volatile buffer),
//! or the simulator held data before the checks began — and its hash is learned from the read,
//! whose version the stamp check has just vouched for.

use super::{EngineError, Oracle, Simulator};
use crate::addr::Lpn;
use crate::request::Op;
use crate::stats::ByteChecks;
use crate::workload::HostIo;

/// The checks and the shadow of every logical page.
#[derive(Clone)]
pub(crate) struct Shadow {
    page_size: usize,
    /// Per LPN: the version the hash describes (0: unmapped, a zero page).
    stamps: Vec<u32>,
    hashes: Vec<u64>,
    /// The hash of a zero page.
    zero: u64,
    counts: ByteChecks,
}

impl std::fmt::Debug for Shadow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shadow")
            .field("logical_pages", &self.stamps.len())
            .field("counts", &self.counts)
            .finish()
    }
}

impl Shadow {
    /// Checks for `sim`, whose reads must be verified: every page known as unmapped at first
    /// (any other version the oracle expects is learned when first read).
    pub(crate) fn new(sim: &Simulator) -> Result<Shadow, String> {
        if sim.oracle().is_none() {
            return Err("the checks need the oracle (reads verified)".into());
        }
        let geo = sim.device().geo();
        let page_size = geo.page_size as usize;
        let zero = page_hash(&vec![0; page_size]);
        let n = geo.logical_pages as usize;
        Ok(Shadow {
            page_size,
            stamps: vec![0; n],
            hashes: vec![zero; n],
            zero,
            counts: ByteChecks::default(),
        })
    }

    /// What the checks counted.
    pub(crate) fn counts(&self) -> ByteChecks {
        self.counts
    }

    /// Counts a command that failed a check.
    pub(crate) fn note_failed_command(&mut self) {
        self.counts.failed_commands += 1;
    }

    /// Checks the served page-level request `io` (`data`: the pages it read or wrote) and
    /// records what it wrote; `failures` is the oracle's failure count before it.
    pub(crate) fn served(
        &mut self,
        sim: &Simulator,
        io: &HostIo,
        data: &[u8],
        failures: u64,
    ) -> Result<(), EngineError> {
        let oracle = sim.oracle().expect("checked when the shadow was made");
        if oracle.failures() > failures {
            let m = oracle.last_message().unwrap_or("a wrong version");
            return Err(EngineError::Verify(m.to_string()));
        }
        let first = (io.offset / self.page_size as u64) as usize;
        match io.op {
            Op::Read => self.compare(first, data, oracle),
            Op::Write => {
                let stamp = sim.last_stamp();
                for (i, page) in data.chunks(self.page_size).enumerate() {
                    self.stamps[first + i] = stamp;
                    self.hashes[first + i] = page_hash(page);
                }
                Ok(())
            }
            Op::Trim => {
                let n = (io.len / self.page_size as u64) as usize;
                self.stamps[first..first + n].fill(0);
                self.hashes[first..first + n].fill(self.zero);
                Ok(())
            }
            Op::Flush => Ok(()),
        }
    }

    /// Compares the pages a read from LPN `first` returned with the shadow.
    fn compare(&mut self, first: usize, data: &[u8], oracle: &Oracle) -> Result<(), EngineError> {
        let mut wrong = None;
        let mut n_wrong = 0;
        for (i, page) in data.chunks(self.page_size).enumerate() {
            let k = first + i;
            let (hash, want) = (page_hash(page), oracle.expected(Lpn(k as u32)));
            if self.stamps[k] != want {
                self.stamps[k] = want;
                self.hashes[k] = hash;
                self.counts.pages_learned += 1;
                continue;
            }
            self.counts.pages_compared += 1;
            if self.hashes[k] != hash {
                n_wrong += 1;
                wrong.get_or_insert((k, want, hash));
            }
        }
        self.counts.mismatches += n_wrong;
        let Some((k, stamp, hash)) = wrong else {
            return Ok(());
        };
        let version = match stamp {
            0 => "an unmapped page (zeroes)".to_string(),
            s => format!("stamp {s}"),
        };
        let more = match n_wrong {
            1 => String::new(),
            n => format!(" ({n} pages of the read differ)"),
        };
        Err(EngineError::Verify(format!(
            "read of LPN {k}: right version ({version}), wrong bytes: page hash {hash:016x}, \
             expected {:016x}{more}",
            self.hashes[k]
        )))
    }
}

/// Odd 64-bit multipliers (XXH64's primes).
const P: [u64; 4] = [
    0x9E37_79B1_85EB_CA87,
    0xC2B2_AE3D_27D4_EB4F,
    0x1656_67B1_9E37_79F9,
    0x85EB_CA77_C2B2_AE63,
];

/// A 64-bit hash of a page: four independent lanes over its 8-byte words (XXH64's round:
/// add, rotate, multiply, so a lane's step is a bijection of its state for a given word and
/// two pages that differ in one word never collide), mixed at the end with the length.
fn page_hash(page: &[u8]) -> u64 {
    let mut lanes = P;
    let mut blocks = page.chunks_exact(32);
    for b in &mut blocks {
        round(&mut lanes, b);
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        let mut tail = [0; 32];
        tail[..rest.len()].copy_from_slice(rest);
        round(&mut lanes, &tail);
    }
    lanes
        .iter()
        .fold(page.len() as u64, |h, &l| fmix(h ^ fmix(l)))
}

#[inline(always)]
fn round(lanes: &mut [u64; 4], block: &[u8]) {
    for (i, lane) in lanes.iter_mut().enumerate() {
        let w = u64::from_le_bytes(block[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        *lane = lane
            .wrapping_add(w.wrapping_mul(P[1]))
            .rotate_left(31)
            .wrapping_mul(P[0]);
    }
}

/// MurmurHash3's 64-bit finalizer (a bijection).
fn fmix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_changed_byte_changes_the_hash() {
        let page: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
        let h = page_hash(&page);
        assert_eq!(h, page_hash(&page.clone()));
        for at in [0, 1, 8, 31, 32, 2048, 4095] {
            let mut other = page.clone();
            other[at] ^= 0x40;
            assert_ne!(page_hash(&other), h, "byte {at}");
        }
        // Zero pages of different lengths, and a short tail, differ.
        assert_ne!(page_hash(&[0; 512]), page_hash(&[0; 4096]));
        assert_ne!(page_hash(&[1; 40]), page_hash(&[1; 41]));
    }
}
