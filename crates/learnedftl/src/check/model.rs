//! What every sector should hold: the byte-level model `check` compares each read with.
//!
//! A write's data is derived from its identity and each sector's number, so the model keeps
//! 4 bytes per sector (the identity of the write whose data it holds, 0 for zeroes) and the
//! expected bytes are regenerated when a read is compared; a wrong sector is named by what it
//! holds instead (zeroes, another write's data, another sector's data). Per page, the model
//! also keeps the engine's write stamp of the version it describes, and with power cuts the
//! versions a recovery may legitimately bring back: every version a page had since the last
//! flush (an unflushed write may be lost from a volatile buffer) and the version before the
//! operation a cut interrupted.

use super::stream::SECTOR;
use std::collections::HashMap;

/// A sector whose content is not known (a read-modify-write a power cut interrupted merged
/// bytes recovery chose): not compared until written again.
pub const UNKNOWN: u32 = u32::MAX;

/// Tag of the first word of every written sector.
const MAGIC: u64 = 0x4C46_544C; // "LFTL"

/// Word `w` of sector `sector` written by write `id` (words 0 and 1 name both).
#[inline]
fn word(id: u32, sector: u64, w: usize, h: u64) -> u64 {
    match w {
        0 => MAGIC << 32 | id as u64,
        1 => sector,
        _ => body(w, h),
    }
}

/// Word `w` ≥ 2 of a sector whose seed is `h` (a branch-free function of `w`, so filling and
/// comparing whole sectors vectorise).
#[inline]
fn body(w: usize, h: u64) -> u64 {
    h ^ (w as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[inline]
fn seed_of(id: u32, sector: u64) -> u64 {
    crate::seed::mix(0x5EC7_0B17, id as u64, sector)
}

/// Fills `out` (whole sectors from `first_sector`) with the data write `id` puts there (0:
/// zeroes).
pub fn fill(id: u32, first_sector: u64, out: &mut [u8]) {
    for (i, s) in out.chunks_exact_mut(SECTOR as usize).enumerate() {
        let sector = first_sector + i as u64;
        if id == 0 {
            s.fill(0);
            continue;
        }
        let h = seed_of(id, sector);
        let (head, rest) = s.split_at_mut(16);
        head[..8].copy_from_slice(&word(id, sector, 0, h).to_le_bytes());
        head[8..].copy_from_slice(&word(id, sector, 1, h).to_le_bytes());
        for (w, b) in rest.chunks_exact_mut(8).enumerate() {
            b.copy_from_slice(&body(w + 2, h).to_le_bytes());
        }
    }
}

/// Whether `data` (one sector) is exactly what write `id` puts at `sector`.
#[inline]
fn holds(data: &[u8], id: u32, sector: u64) -> bool {
    if id == 0 {
        return data.iter().fold(0, |d, &b| d | b) == 0;
    }
    let h = seed_of(id, sector);
    let at = |w: usize| u64::from_le_bytes(data[8 * w..8 * w + 8].try_into().expect("8 bytes"));
    if at(0) != word(id, sector, 0, h) || at(1) != word(id, sector, 1, h) {
        return false;
    }
    // Differences OR-ed together, no early exit: the loop vectorises.
    let diff = data[16..].chunks_exact(8).enumerate().fold(0, |d, (w, b)| {
        d | (u64::from_le_bytes(b.try_into().expect("8 bytes")) ^ body(w + 2, h))
    });
    diff == 0
}

/// The write whose data `data` (a sector) holds, if it holds one's, damaged or not.
pub fn written_by(data: &[u8]) -> Option<u32> {
    let w0 = u64::from_le_bytes(data[..8].try_into().expect("8 bytes"));
    (w0 >> 32 == MAGIC).then_some(w0 as u32)
}

/// What one sector holds, in words: zeroes, some write's data for some sector, or neither.
pub fn describe(data: &[u8]) -> String {
    let w = |i: usize| u64::from_le_bytes(data[8 * i..8 * i + 8].try_into().expect("8 bytes"));
    if data.iter().all(|&b| b == 0) {
        return "zeroes".into();
    }
    if w(0) >> 32 == MAGIC {
        let (id, sector) = (w(0) as u32, w(1));
        if holds(data, id, sector) {
            return format!("write {id}'s data for sector {sector}");
        }
        return format!("write {id}'s data for sector {sector}, damaged");
    }
    "bytes no write wrote".into()
}

/// The expected content of the logical space.
#[derive(Clone, Debug)]
pub struct Model {
    page_sectors: usize,
    /// Per sector, the identity of the write whose data it holds (0: zeroes).
    sectors: Vec<u32>,
    /// Per page, the engine's stamp of the version modelled.
    stamps: Vec<u32>,
    /// With power cuts, the versions a recovery may bring back, per page: `(stamp, sectors)`.
    history: Option<Versions>,
    /// Every acknowledged write is durable (power-loss protection).
    every_ack_durable: bool,
}

/// Versions of pages by LPN: `(stamp, sectors)`.
type Versions = HashMap<u32, Vec<(u32, Box<[u32]>)>>;

/// A read that returned something else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The first wrong sector.
    pub sector: u64,
    /// The write whose data it should hold (0: zeroes).
    pub expected: u32,
    /// What it holds.
    pub found: String,
    /// The write whose data it holds, if any's.
    pub found_id: Option<u32>,
    /// Wrong sectors in the read.
    pub sectors: u64,
}

impl Model {
    /// A model of `logical_bytes` in pages of `page_size`, all zeroes (stamp 0); `cuts` keeps
    /// the versions recoveries may bring back.
    pub fn new(logical_bytes: u64, page_size: u64, cuts: bool) -> Model {
        Model {
            page_sectors: (page_size / SECTOR) as usize,
            sectors: vec![0; (logical_bytes / SECTOR) as usize],
            stamps: vec![0; (logical_bytes / page_size) as usize],
            history: cuts.then(HashMap::new),
            every_ack_durable: false,
        }
    }

    /// Whether every acknowledged write is durable at once (a device with power-loss
    /// protection), not only those a FLUSH or FUA covered.
    pub fn set_every_ack_durable(&mut self, on: bool) {
        self.every_ack_durable = on;
    }

    /// See [`Model::set_every_ack_durable`].
    pub fn every_ack_durable(&self) -> bool {
        self.every_ack_durable
    }

    /// Bytes per page.
    pub fn page_bytes(&self) -> u64 {
        self.page_sectors as u64 * SECTOR
    }

    /// Pages covering the byte range.
    pub fn pages(&self, offset: u64, len: u64) -> std::ops::Range<u32> {
        let ps = self.page_sectors as u64 * SECTOR;
        (offset / ps) as u32..(offset + len).div_ceil(ps) as u32
    }

    /// The stamp of the version of `lpn` modelled.
    pub fn stamp(&self, lpn: u32) -> u32 {
        self.stamps[lpn as usize]
    }

    fn page(&self, lpn: u32) -> &[u32] {
        let s = lpn as usize * self.page_sectors;
        &self.sectors[s..s + self.page_sectors]
    }

    /// Keeps the current version of every page covering the range for a recovery that may
    /// bring it back (with power cuts; before an operation changes them).
    pub fn remember(&mut self, offset: u64, len: u64) {
        if self.history.is_none() {
            return;
        }
        for lpn in self.pages(offset, len) {
            let stamp = self.stamps[lpn as usize];
            let content: Box<[u32]> = self.page(lpn).into();
            let versions = self
                .history
                .as_mut()
                .expect("checked")
                .entry(lpn)
                .or_default();
            if !versions.iter().any(|v| v.0 == stamp) {
                versions.push((stamp, content));
            }
        }
    }

    /// Everything acknowledged so far is durable (a flush completed): recoveries may bring
    /// back no older version.
    pub fn durable(&mut self) {
        if let Some(h) = self.history.as_mut() {
            h.clear();
        }
    }

    /// The pages covering the range are durable (a FUA write completed).
    pub fn durable_range(&mut self, offset: u64, len: u64) {
        let pages = self.pages(offset, len);
        if let Some(h) = self.history.as_mut() {
            for lpn in pages {
                h.remove(&lpn);
            }
        }
    }

    /// Sets sectors of the byte range to write `id`'s data (0: zeroes).
    pub fn set(&mut self, offset: u64, len: u64, id: u32) {
        let a = (offset / SECTOR) as usize;
        self.sectors[a..a + (len / SECTOR) as usize].fill(id);
    }

    /// Sets the stamp of the version of `lpn` modelled.
    pub fn set_stamp(&mut self, lpn: u32, stamp: u32) {
        self.stamps[lpn as usize] = stamp;
    }

    /// Marks the sectors of `lpn` outside `[offset, offset + len)` unknown.
    pub fn forget_outside(&mut self, lpn: u32, offset: u64, len: u64) {
        let first = lpn as u64 * self.page_sectors as u64;
        let (a, b) = (offset / SECTOR, (offset + len) / SECTOR);
        for s in first..first + self.page_sectors as u64 {
            if s < a || s >= b {
                self.sectors[s as usize] = UNKNOWN;
            }
        }
    }

    /// A version of `lpn` a recovery brought back: the current one, or one remembered;
    /// `false` if the model knows no such version.
    pub fn adopt(&mut self, lpn: u32, stamp: u32) -> bool {
        if self.stamps[lpn as usize] == stamp {
            return true;
        }
        let Some(content) = self
            .history
            .as_ref()
            .and_then(|h| h.get(&lpn))
            .and_then(|v| v.iter().find(|v| v.0 == stamp))
            .map(|v| v.1.clone())
        else {
            return false;
        };
        let s = lpn as usize * self.page_sectors;
        self.sectors[s..s + self.page_sectors].copy_from_slice(&content);
        self.stamps[lpn as usize] = stamp;
        true
    }

    /// Compares `data`, read from `offset`, with the model; returns the sectors compared and
    /// the first mismatch.
    pub fn compare(&self, offset: u64, data: &[u8]) -> (u64, Option<Mismatch>) {
        let first = offset / SECTOR;
        let mut compared = 0;
        let mut bad: Option<Mismatch> = None;
        for (i, got) in data.chunks_exact(SECTOR as usize).enumerate() {
            let sector = first + i as u64;
            let id = self.sectors[sector as usize];
            if id == UNKNOWN {
                continue;
            }
            compared += 1;
            if !holds(got, id, sector) {
                match bad.as_mut() {
                    Some(m) => m.sectors += 1,
                    None => {
                        bad = Some(Mismatch {
                            sector,
                            expected: id,
                            found: describe(got),
                            found_id: written_by(got),
                            sectors: 1,
                        })
                    }
                }
            }
        }
        (compared, bad)
    }

    /// Versions remembered for recoveries.
    pub fn remembered(&self) -> usize {
        self.history
            .as_ref()
            .map_or(0, |h| h.values().map(Vec::len).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_names_its_write_and_sector() {
        let mut buf = vec![0u8; 2 * SECTOR as usize];
        fill(7, 100, &mut buf);
        let (a, b) = buf.split_at(SECTOR as usize);
        assert!(holds(a, 7, 100) && holds(b, 7, 101));
        assert!(!holds(a, 8, 100) && !holds(a, 7, 101) && !holds(a, 0, 100));
        assert_eq!(describe(b), "write 7's data for sector 101");
        let mut c = b.to_vec();
        c[300] ^= 1;
        assert_eq!(describe(&c), "write 7's data for sector 101, damaged");
        assert_eq!(describe(&[0; 512]), "zeroes");
        assert_eq!(describe(&[1; 512]), "bytes no write wrote");
    }

    #[test]
    fn compare_finds_the_first_wrong_sector_and_counts_them() {
        let mut m = Model::new(64 << 10, 4096, true);
        m.set(4096, 8192, 5);
        let mut buf = vec![0u8; 16384];
        fill(5, 8, &mut buf[4096..12288]);
        assert_eq!(m.compare(0, &buf), (32, None));
        fill(4, 9, &mut buf[4608..5120]);
        buf[12288] = 1;
        let (_, bad) = m.compare(0, &buf);
        let bad = bad.unwrap();
        assert_eq!((bad.sector, bad.expected, bad.sectors), (9, 5, 2));
        assert_eq!(bad.found, "write 4's data for sector 9");
    }

    #[test]
    fn recoveries_may_bring_back_only_versions_since_the_last_flush() {
        let mut m = Model::new(64 << 10, 4096, true);
        m.set_stamp(1, 3);
        m.remember(4096, 4096);
        m.set(4096, 4096, 9);
        m.set_stamp(1, 4);
        assert!(m.adopt(1, 4));
        assert!(m.adopt(1, 3), "the version before an unflushed write");
        assert_eq!(m.compare(4096, &[0; 4096]), (8, None));
        assert!(!m.adopt(1, 2), "a version never written");
        m.remember(4096, 4096);
        m.durable();
        assert!(!m.adopt(1, 4) || m.stamp(1) == 4);
        m.set_stamp(1, 5);
        assert!(!m.adopt(1, 3), "flushed: no way back");
    }
}
