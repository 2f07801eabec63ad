//! Optional page payloads (emulator mode): the data of each physical page lives at its PPA, so
//! garbage collection really moves bytes and a mapping bug shows up as wrong data.
//!
//! FTLs never touch payloads directly: they say where a programmed page's data comes from with
//! [`Src`], and the device moves bytes accordingly. Host data is staged by LPN and write stamp
//! before a write request is submitted, so an FTL that buffers writes in DRAM still finds each
//! version's data when it flushes, even a flush that the next write of the same LPN triggers.

use super::Oob;
use crate::addr::{Lpn, Ppa};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Where the data of a programmed page comes from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Src {
    /// The host's data for the page's LPN (staged by the engine or NBD server).
    Host,
    /// A copy of another physical page (garbage collection, refresh).
    Page(Ppa),
    /// No host payload (translation pages: their content is simulated by the FTL).
    None,
}

/// Page buffers kept for reuse at most (beyond, freed ones go back to the allocator).
const SPARE_PAGES: usize = 4096;

/// Page payloads by PPA, plus host data staged by LPN and write stamp.
///
/// A page's data stays as long as flash holds it: it is dropped when its block is erased (or
/// torn by an erase the power cut interrupted), not when the page is invalidated, because
/// validity is DRAM state a power cut forgets and recovery may pick an invalidated page's
/// version again (the newest version on flash). So memory follows the programmed, not yet
/// erased pages (at most the physical space, over-provisioning included), not everything ever
/// written.
///
/// Staged data is keyed by version, not only by LPN: a write of LPN `x` is staged before the
/// FTL sees it, and serving it may first flush a buffer that still holds an older version of
/// `x` (LeaFTL flushes when its buffer fills, in the middle of a multi-page write). That flush
/// must program the older version's bytes, not the newer ones staged a moment before; keyed
/// by LPN alone it took the newer bytes and left the newer version with none. So each LPN has
/// its newest staged version, and a version superseded while not yet programmed waits in
/// `older` until the request that superseded it is acknowledged ([`PayloadStore::settle`]): by
/// then the FTL has programmed it or replaced it in its buffer. A torn page (a program the cut interrupted) holds no data. Staged host data is
/// controller DRAM: a power cut drops it (at `Device::power_on`). Freed page buffers are
/// reused for the next staged write, so a steady stream of writes allocates nothing. With
/// [`PayloadStore::use_file`] pages live in a sparse file instead (at `PPA × page size`), for
/// devices larger than RAM; only staged data stays in memory.
///
/// Programmed data never changes, so memory-backed pages share buffers: a garbage
/// collection's copy points its PPA at the same slot (a count in a dense array, so a move
/// touches no cold memory), and a clone (a simulator snapshot) shares the slots' buffers
/// instead of copying them. A file-backed store's clone shares the file, so snapshots are for
/// memory-backed or payload-free devices.
#[derive(Debug)]
pub struct PayloadStore {
    page_size: usize,
    pages: Pages,
    /// The newest staged version of each LPN: its stamp and data.
    staged: HashMap<Lpn, (u32, Page)>,
    /// Versions superseded by a newer staged one before they were programmed, by LPN and
    /// stamp; empty between requests.
    older: HashMap<(Lpn, u32), Page>,
    /// Freed buffers, most recent last; a snapshot may still share some.
    spare: Vec<Page>,
    /// Staged versions a controller dumped on capacitor energy at a power cut
    /// ([`super::Device::dump_on_capacitors`]): they survive the power-on that drops the rest
    /// of the staged data, until restored.
    dumped: HashMap<(Lpn, u32), Page>,
}

/// A page's data. Staged data is held only by the store; programmed data never changes and is
/// shared between the PPAs holding that version and with simulator snapshots (clones). One
/// allocation, reused from staging to programming to the spare list: a program allocates
/// nothing.
type Page = std::sync::Arc<[u8]>;

/// How many takes ahead [`PayloadStore::take_buffer`] hints a spare buffer's memory.
const SPARE_HINT_AHEAD: usize = 4;

/// No slot: the page holds no data.
const NO_SLOT: u32 = u32::MAX;

/// Memory-backed pages: each PPA names a slot, and the PPAs holding one version's data (its
/// first program and garbage-collection copies) share it.
#[derive(Clone, Debug)]
struct Slots {
    /// Per PPA, its slot ([`NO_SLOT`]: no data).
    at: Vec<u32>,
    /// Per slot, its data (`None` while free).
    data: Vec<Option<Page>>,
    /// Per slot, the PPAs naming it (0: free).
    refs: Vec<u32>,
    /// Free slots.
    free: Vec<u32>,
}

impl Slots {
    fn new(pages: u64) -> Slots {
        Slots {
            at: vec![NO_SLOT; pages as usize],
            data: Vec::new(),
            refs: Vec::new(),
            free: Vec::new(),
        }
    }

    /// The data page `i` holds.
    #[inline]
    fn get(&self, i: usize) -> Option<&[u8]> {
        match self.at.get(i) {
            Some(&s) if s != NO_SLOT => self.data[s as usize].as_deref(),
            _ => None,
        }
    }

    /// A new slot holding `page`.
    fn insert(&mut self, page: Page) -> u32 {
        let page = Some(page);
        match self.free.pop() {
            Some(s) => {
                self.data[s as usize] = page;
                self.refs[s as usize] = 1;
                s
            }
            None => {
                self.data.push(page);
                self.refs.push(1);
                (self.data.len() - 1) as u32
            }
        }
    }

    /// Points page `i` at `slot` (a reference already counted, or [`NO_SLOT`]); the data it
    /// held before, when nothing else holds it, goes to `spare`.
    fn set(&mut self, i: usize, slot: u32, spare: &mut Vec<Page>) {
        let old = std::mem::replace(&mut self.at[i], slot);
        if old == NO_SLOT {
            return;
        }
        let r = &mut self.refs[old as usize];
        *r -= 1;
        if *r == 0 {
            self.free.push(old);
            let page = self.data[old as usize]
                .take()
                .expect("a used slot holds data");
            recycle(spare, page);
        }
    }
}

#[derive(Clone, Debug)]
enum Pages {
    /// In memory, in shared slots.
    Memory(Slots),
    /// In a file at `PPA × page size`; a bit per PPA says whether the page holds data.
    File {
        file: std::sync::Arc<File>,
        present: Vec<u64>,
    },
}

/// A snapshot shares the programmed pages (they never change) but gets copies of the staged
/// ones and no spare buffers: staged and spare buffers are written in place, so each store
/// must hold its own.
impl Clone for PayloadStore {
    fn clone(&self) -> Self {
        let copy = |p: &Page| Page::from(&p[..]);
        PayloadStore {
            page_size: self.page_size,
            pages: self.pages.clone(),
            staged: self
                .staged
                .iter()
                .map(|(&l, (s, p))| (l, (*s, copy(p))))
                .collect(),
            older: self.older.iter().map(|(&k, p)| (k, copy(p))).collect(),
            spare: Vec::new(),
            dumped: self.dumped.iter().map(|(&k, p)| (k, copy(p))).collect(),
        }
    }
}

impl PayloadStore {
    pub(super) fn new(page_size: usize, physical_pages: u64) -> Self {
        PayloadStore {
            page_size,
            pages: Pages::Memory(Slots::new(physical_pages)),
            staged: HashMap::new(),
            older: HashMap::new(),
            spare: Vec::new(),
            dumped: HashMap::new(),
        }
    }

    /// Keeps pages in `path` from now on (created, or truncated: a fresh device has no data),
    /// a sparse file as large as the physical space. Call before anything is programmed: pages
    /// stored so far are dropped.
    pub fn use_file(&mut self, path: &Path) -> io::Result<()> {
        let pages = match &self.pages {
            Pages::Memory(m) => m.at.len() as u64,
            Pages::File { present, .. } => present.len() as u64 * 64,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        file.set_len(pages * self.page_size as u64)?;
        self.pages = Pages::File {
            file: std::sync::Arc::new(file),
            present: vec![0; pages.div_ceil(64) as usize],
        };
        Ok(())
    }

    /// Opens `path`, which holds the pages of a saved state (`state.rs`), as the store's file:
    /// `present` says which pages hold data. Its length must be the physical space's.
    pub fn reopen_file(&mut self, path: &Path, present: Vec<u64>) -> io::Result<()> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        let want = present.len() as u64 * 64 * self.page_size as u64;
        let len = file.metadata()?.len();
        if len.div_ceil(64 * self.page_size as u64) != present.len() as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{len} B, not the {want} B of this device's pages"),
            ));
        }
        self.pages = Pages::File {
            file: std::sync::Arc::new(file),
            present,
        };
        Ok(())
    }

    /// With pages kept in a file, which hold data (a bit per PPA).
    pub fn file_pages(&self) -> Option<&[u64]> {
        match &self.pages {
            Pages::File { present, .. } => Some(present),
            Pages::Memory(_) => None,
        }
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Stages the host's data for version `stamp` of `lpn` before a write of it is submitted
    /// (shorter data is zero-padded to a page). A newer version does not replace an older one
    /// not yet programmed: the FTL may still program the older one while serving this write.
    pub fn stage(&mut self, lpn: Lpn, stamp: u32, data: &[u8]) {
        let mut page = self.take_buffer();
        let buf = std::sync::Arc::get_mut(&mut page).expect("take_buffer gives unshared buffers");
        let n = data.len().min(self.page_size);
        buf[..n].copy_from_slice(&data[..n]);
        buf[n..].fill(0);
        if let Some((old_stamp, old)) = self.staged.insert(lpn, (stamp, page)) {
            if old_stamp == stamp {
                self.recycle(old);
            } else if let Some(older) = self.older.insert((lpn, old_stamp), old) {
                self.recycle(older);
            }
        }
    }

    /// The write request that staged the newest versions was acknowledged: the versions it
    /// superseded are programmed or gone from the FTL's buffer by now, so their data goes.
    pub fn settle(&mut self) {
        for (_, page) in std::mem::take(&mut self.older) {
            self.recycle(page);
        }
    }

    /// Drops the data of version `stamp` of `lpn` if it was superseded and not programmed: a
    /// write buffer above the FTL says so when a version dies without reaching flash (a newer
    /// one replaced it in the buffer, or reached the FTL, which replaced or programmed it), as
    /// it acknowledges writes before the FTL sees them and so cannot rely on
    /// [`PayloadStore::settle`].
    pub fn discard(&mut self, lpn: Lpn, stamp: u32) {
        if let Some(page) = self.older.remove(&(lpn, stamp)) {
            self.recycle(page);
        }
    }

    /// Drops every staged version of a trimmed LPN.
    pub fn unstage(&mut self, lpn: Lpn) {
        if let Some((_, old)) = self.staged.remove(&lpn) {
            self.recycle(old);
        }
        if !self.older.is_empty() {
            let gone: Vec<_> = self.older.keys().filter(|k| k.0 == lpn).copied().collect();
            for k in gone {
                let page = self.older.remove(&k).expect("listed");
                self.recycle(page);
            }
        }
    }

    /// Host data staged for version `stamp` of `lpn` and not yet programmed (an FTL's DRAM
    /// buffer serves these).
    pub fn staged(&self, lpn: Lpn, stamp: u32) -> Option<&[u8]> {
        match self.staged.get(&lpn) {
            Some((s, page)) if *s == stamp => Some(page),
            _ => self.older.get(&(lpn, stamp)).map(|b| &b[..]),
        }
    }

    /// Takes the staged data of version `stamp` of `lpn` (it is being programmed).
    fn take_staged(&mut self, lpn: Lpn, stamp: u32) -> Option<Page> {
        match self.staged.get(&lpn) {
            Some((s, _)) if *s == stamp => self.staged.remove(&lpn).map(|(_, page)| page),
            _ => self.older.remove(&(lpn, stamp)),
        }
    }

    /// Copies the data stored at `ppa` into `dst` (a page long); false if the page holds none
    /// (never programmed with data, torn, or erased), `dst` then unchanged.
    pub fn read(&self, ppa: Ppa, dst: &mut [u8]) -> io::Result<bool> {
        let i = ppa.idx();
        match &self.pages {
            Pages::Memory(m) => match m.get(i) {
                Some(d) => {
                    dst.copy_from_slice(d);
                    Ok(true)
                }
                None => Ok(false),
            },
            Pages::File { file, present } => {
                if present.get(i >> 6).is_none_or(|w| w >> (i & 63) & 1 == 0) {
                    return Ok(false);
                }
                file.read_exact_at(dst, i as u64 * self.page_size as u64)?;
                Ok(true)
            }
        }
    }

    /// A page buffer held by nothing else, its contents unspecified. Whether a spare is still
    /// shared (with a snapshot) is asked here, where its memory is about to be written anyway,
    /// not when it was freed (an erase frees pages programmed long ago, whose headers are cold);
    /// a spare a few takes ahead is hinted, since a write stages into it soon (a multi-page write
    /// takes several in a row, too soon for the next one's hint).
    fn take_buffer(&mut self) -> Page {
        while let Some(mut page) = self.spare.pop() {
            if let Some(later) = self.spare.len().checked_sub(SPARE_HINT_AHEAD) {
                crate::host::prefetch(&self.spare[later][0]);
            }
            if std::sync::Arc::get_mut(&mut page).is_some() {
                return page;
            }
        }
        Page::from(vec![0u8; self.page_size])
    }

    fn recycle(&mut self, page: Page) {
        recycle(&mut self.spare, page);
    }

    pub(super) fn on_program(&mut self, ppa: Ppa, oob: Oob, src: Src) -> io::Result<()> {
        let i = ppa.idx();
        let host = match src {
            Src::Host => oob.lpn().and_then(|l| self.take_staged(l, oob.stamp)),
            _ => None,
        };
        let Pages::Memory(m) = &mut self.pages else {
            return self.program_file(i, src, host);
        };
        let slot = match (src, host) {
            (Src::Host, Some(page)) => m.insert(page),
            (Src::Page(from), _) => match m.at.get(from.idx()) {
                Some(&s) if s != NO_SLOT => {
                    m.refs[s as usize] += 1;
                    s
                }
                _ => NO_SLOT,
            },
            _ => NO_SLOT,
        };
        m.set(i, slot, &mut self.spare);
        Ok(())
    }

    /// [`PayloadStore::on_program`] of page `i` in a file-backed store.
    fn program_file(&mut self, i: usize, src: Src, host: Option<Page>) -> io::Result<()> {
        let data = match src {
            Src::Page(from) => {
                let mut page = self.take_buffer();
                let buf =
                    std::sync::Arc::get_mut(&mut page).expect("take_buffer gives unshared buffers");
                if self.read(from, buf)? {
                    Some(page)
                } else {
                    self.recycle(page);
                    None
                }
            }
            _ => host,
        };
        let Pages::File { file, present } = &mut self.pages else {
            unreachable!("called for file-backed stores")
        };
        let bit = 1u64 << (i & 63);
        present[i >> 6] &= !bit;
        if let Some(d) = data {
            let r = file.write_all_at(&d, i as u64 * self.page_size as u64);
            if r.is_ok() {
                present[i >> 6] |= bit;
            }
            self.recycle(d);
            r?;
        }
        Ok(())
    }

    /// Drops the data of pages `first..first + n` (a block being erased, or torn by an
    /// interrupted erase).
    pub(super) fn on_erase(&mut self, first: Ppa, n: u32) {
        let range = first.idx()..first.idx() + n as usize;
        match &mut self.pages {
            Pages::Memory(m) => {
                for i in range {
                    m.set(i, NO_SLOT, &mut self.spare);
                }
            }
            Pages::File { present, .. } => {
                for i in range {
                    present[i >> 6] &= !(1 << (i & 63));
                }
            }
        }
    }

    /// Power comes back: host data staged in controller DRAM and not programmed is gone.
    /// Keeps the staged data of version `stamp` of `lpn` across the power-on (dumped on
    /// capacitor energy); false if none is staged (it was programmed).
    pub(super) fn keep(&mut self, lpn: Lpn, stamp: u32) -> bool {
        match self.take_staged(lpn, stamp) {
            Some(page) => {
                self.dumped.insert((lpn, stamp), page);
                true
            }
            None => false,
        }
    }

    /// Stages a kept version again (`stage`: it is restored from the dump) or drops its data
    /// (it is not).
    pub(super) fn restore(&mut self, lpn: Lpn, stamp: u32, stage: bool) {
        let Some(page) = self.dumped.remove(&(lpn, stamp)) else {
            return;
        };
        if !stage {
            self.recycle(page);
        } else if let Some((_, old)) = self.staged.insert(lpn, (stamp, page)) {
            self.recycle(old);
        }
    }

    pub(super) fn on_power_on(&mut self) {
        for (_, (_, page)) in std::mem::take(&mut self.staged) {
            self.recycle(page);
        }
        self.settle();
    }
}

/// Keeps a freed page buffer for reuse, up to [`SPARE_PAGES`]. It may still be shared with a
/// snapshot: [`PayloadStore::take_buffer`] skips those.
fn recycle(spare: &mut Vec<Page>, page: Page) {
    if spare.len() < SPARE_PAGES {
        spare.push(page);
    }
}

#[cfg(test)]
mod tests {
    use crate::addr::{Lpn, Ppa, SimTime};
    use crate::config::DeviceConfig;
    use crate::device::{Cause, Device, DeviceError, Oob, PowerCut, Src};

    /// The data at `ppa`, if any.
    fn page(d: &Device, ppa: Ppa) -> Option<Vec<u8>> {
        let mut buf = vec![0u8; d.geo().page_size as usize];
        d.payloads()
            .unwrap()
            .read(ppa, &mut buf)
            .unwrap()
            .then_some(buf)
    }

    fn host_data_lands_and_moves_with_gc_copies(file: Option<&std::path::Path>) {
        let mut cfg = DeviceConfig::preset("tiny").unwrap();
        cfg.payloads = true;
        let mut d = Device::new(&cfg);
        if let Some(f) = file {
            d.payloads_mut().unwrap().use_file(f).unwrap();
        }
        d.payloads_mut().unwrap().stage(Lpn(5), 1, b"hello");
        d.program(
            Ppa(0),
            Oob::data(Lpn(5), 1),
            Src::Host,
            Cause::User,
            SimTime(0),
        )
        .unwrap();
        assert!(d.payloads().unwrap().staged(Lpn(5), 1).is_none());
        assert_eq!(&page(&d, Ppa(0)).unwrap()[..5], b"hello");
        let dst = Ppa(d.geo().pages_per_block);
        d.program(
            dst,
            Oob::data(Lpn(5), 1),
            Src::Page(Ppa(0)),
            Cause::GcData,
            SimTime(0),
        )
        .unwrap();
        d.invalidate(Ppa(0)).unwrap();
        assert_eq!(
            &page(&d, Ppa(0)).unwrap()[..5],
            b"hello",
            "an invalid page keeps its data until its block is erased"
        );
        d.erase(0, Cause::GcData, SimTime(0)).unwrap();
        assert!(page(&d, Ppa(0)).is_none(), "an erased page's data is gone");
        assert_eq!(&page(&d, dst).unwrap()[..5], b"hello");
        // A page programmed without data (a translation page) holds none.
        d.program(
            Ppa(dst.0 + 1),
            Oob::data(Lpn(6), 1),
            Src::None,
            Cause::User,
            SimTime(0),
        )
        .unwrap();
        assert!(page(&d, Ppa(dst.0 + 1)).is_none());
    }

    #[test]
    fn host_data_lands_and_moves_with_gc_copies_in_memory() {
        host_data_lands_and_moves_with_gc_copies(None);
    }

    #[test]
    fn host_data_lands_and_moves_with_gc_copies_in_a_sparse_file() {
        let path = std::env::temp_dir().join(format!("payload-{}.img", std::process::id()));
        host_data_lands_and_moves_with_gc_copies(Some(&path));
        let m = std::fs::metadata(&path).unwrap();
        assert_eq!(m.len(), 128 << 20, "as large as the physical space");
        use std::os::unix::fs::MetadataExt;
        assert!(m.blocks() * 512 < 1 << 20, "sparse: {} blocks", m.blocks());
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn data_survives_a_power_cut_until_its_block_is_erased() {
        let mut cfg = DeviceConfig::preset("tiny").unwrap();
        cfg.payloads = true;
        let mut d = Device::new(&cfg);
        let (t, ppb) = (SimTime(0), d.geo().pages_per_block);
        let program = |d: &mut Device, ppa: u32, lpn: u32, data: &[u8]| {
            d.payloads_mut().unwrap().stage(Lpn(lpn), ppa + 1, data);
            d.program(
                Ppa(ppa),
                Oob::data(Lpn(lpn), ppa + 1),
                Src::Host,
                Cause::User,
                t,
            )
        };
        program(&mut d, 0, 1, b"old").unwrap();
        program(&mut d, 1, 1, b"new").unwrap();
        d.invalidate(Ppa(0)).unwrap();
        program(&mut d, ppb, 2, b"gone").unwrap();
        d.invalidate(Ppa(ppb)).unwrap();
        // The program in flight is torn: no data, and its staged data is gone at power-on.
        d.arm_power_cut(PowerCut::AfterOps(0));
        assert_eq!(program(&mut d, 2, 3, b"torn"), Err(DeviceError::PowerLost));
        d.power_on();
        assert!(page(&d, Ppa(2)).is_none(), "a torn page holds no data");
        assert!(d.payloads().unwrap().staged(Lpn(3), 3).is_none());
        assert_eq!(
            &page(&d, Ppa(0)).unwrap()[..3],
            b"old",
            "invalid, not erased"
        );
        assert_eq!(&page(&d, Ppa(1)).unwrap()[..3], b"new");
        // An erase in flight tears its block, and its data with it.
        d.arm_power_cut(PowerCut::AfterOps(0));
        assert_eq!(d.erase(1, Cause::GcData, t), Err(DeviceError::PowerLost));
        d.power_on();
        assert!(page(&d, Ppa(ppb)).is_none());
    }

    #[test]
    fn a_snapshot_shares_programmed_pages_but_not_staged_or_spare_buffers() {
        let mut cfg = DeviceConfig::preset("tiny").unwrap();
        cfg.payloads = true;
        let mut d = Device::new(&cfg);
        let t = SimTime(0);
        let stage = |d: &mut Device, lpn: u32, stamp: u32, data: &[u8]| {
            d.payloads_mut().unwrap().stage(Lpn(lpn), stamp, data)
        };
        let program = |d: &mut Device, ppa: u32, lpn: u32, stamp: u32| {
            let oob = Oob::data(Lpn(lpn), stamp);
            d.program(Ppa(ppa), oob, Src::Host, Cause::User, t).unwrap()
        };
        // A spare buffer (a staged version replaced by itself) and a staged version.
        stage(&mut d, 1, 1, b"first");
        stage(&mut d, 1, 1, b"again");
        program(&mut d, 0, 1, 1);
        stage(&mut d, 2, 2, b"staged");
        let mut snap = d.clone();
        // Each stages and programs over its own buffers; neither sees the other's bytes.
        stage(&mut d, 2, 2, b"mine");
        stage(&mut snap, 2, 2, b"theirs");
        stage(&mut snap, 3, 3, b"more");
        program(&mut d, 1, 2, 2);
        program(&mut snap, 1, 2, 2);
        program(&mut snap, 2, 3, 3);
        assert_eq!(&page(&d, Ppa(1)).unwrap()[..4], b"mine");
        assert_eq!(&page(&snap, Ppa(1)).unwrap()[..6], b"theirs");
        assert_eq!(&page(&d, Ppa(0)).unwrap()[..5], b"again");
        // Erasing a shared page in one leaves it in the other.
        d.invalidate(Ppa(0)).unwrap();
        d.invalidate(Ppa(1)).unwrap();
        d.erase(0, Cause::GcData, t).unwrap();
        assert!(page(&d, Ppa(0)).is_none());
        assert_eq!(&page(&snap, Ppa(0)).unwrap()[..5], b"again");
        stage(&mut d, 4, 4, b"reuse");
        assert_eq!(&page(&snap, Ppa(0)).unwrap()[..5], b"again");
    }
}
