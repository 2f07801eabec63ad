//! Optional page payloads (emulator mode): the data of each physical page lives at its PPA, so
//! garbage collection really moves bytes and a mapping bug shows up as wrong data.
//!
//! FTLs never touch payloads directly: they say where a programmed page's data comes from with
//! [`Src`], and the device moves bytes accordingly. Host data is staged by LPN before a write
//! request is submitted, so an FTL that buffers writes in DRAM still finds it when it flushes.

use super::Oob;
use crate::addr::{Lpn, Ppa};
use std::collections::HashMap;

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

/// Page payloads by PPA, plus host data staged by LPN.
///
/// A page's data is dropped when the page is invalidated: no FTL reads a page it has
/// invalidated (garbage collection copies a page before invalidating it), so memory follows
/// the valid pages, not everything ever written. Freed page buffers are reused for the next
/// staged write, so a steady stream of writes allocates nothing.
#[derive(Debug)]
pub struct PayloadStore {
    page_size: usize,
    /// By PPA.
    flash: Vec<Option<Box<[u8]>>>,
    staged: HashMap<Lpn, Box<[u8]>>,
    spare: Vec<Box<[u8]>>,
}

impl PayloadStore {
    pub(super) fn new(page_size: usize, physical_pages: u64) -> Self {
        PayloadStore {
            page_size,
            flash: (0..physical_pages).map(|_| None).collect(),
            staged: HashMap::new(),
            spare: Vec::new(),
        }
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Stages the host's data for `lpn` before a write of it is submitted (shorter data is
    /// zero-padded to a page).
    pub fn stage(&mut self, lpn: Lpn, data: &[u8]) {
        let mut page = self
            .spare
            .pop()
            .unwrap_or_else(|| vec![0u8; self.page_size].into_boxed_slice());
        let n = data.len().min(self.page_size);
        page[..n].copy_from_slice(&data[..n]);
        page[n..].fill(0);
        if let Some(old) = self.staged.insert(lpn, page) {
            self.recycle(old);
        }
    }

    /// Drops staged data of a trimmed LPN.
    pub fn unstage(&mut self, lpn: Lpn) {
        if let Some(old) = self.staged.remove(&lpn) {
            self.recycle(old);
        }
    }

    /// Host data staged for `lpn` and not yet programmed (an FTL's DRAM buffer serves these).
    pub fn staged(&self, lpn: Lpn) -> Option<&[u8]> {
        self.staged.get(&lpn).map(|b| &b[..])
    }

    /// The data stored at `ppa` (`None` if the page holds none, or is invalid).
    pub fn page(&self, ppa: Ppa) -> Option<&[u8]> {
        self.flash.get(ppa.idx())?.as_deref()
    }

    fn recycle(&mut self, page: Box<[u8]>) {
        if self.spare.len() < SPARE_PAGES {
            self.spare.push(page);
        }
    }

    pub(super) fn on_program(&mut self, ppa: Ppa, oob: Oob, src: Src) {
        let data = match src {
            Src::Host => oob.lpn().and_then(|l| self.staged.remove(&l)),
            Src::Page(from) => match self.flash.get(from.idx()).and_then(Option::as_deref) {
                Some(d) => {
                    let mut page = self.spare.pop().unwrap_or_else(|| d.into());
                    page.copy_from_slice(d);
                    Some(page)
                }
                None => None,
            },
            Src::None => None,
        };
        if let Some(old) = std::mem::replace(&mut self.flash[ppa.idx()], data) {
            self.recycle(old);
        }
    }

    pub(super) fn on_invalidate(&mut self, ppa: Ppa) {
        if let Some(old) = self.flash[ppa.idx()].take() {
            self.recycle(old);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::addr::{Lpn, Ppa, SimTime};
    use crate::config::DeviceConfig;
    use crate::device::{Cause, Device, Oob, Src};

    #[test]
    fn host_data_lands_and_moves_with_gc_copies() {
        let mut cfg = DeviceConfig::preset("tiny").unwrap();
        cfg.payloads = true;
        let mut d = Device::new(&cfg);
        d.payloads_mut().unwrap().stage(Lpn(5), b"hello");
        d.program(
            Ppa(0),
            Oob::data(Lpn(5), 1),
            Src::Host,
            Cause::User,
            SimTime(0),
        )
        .unwrap();
        assert!(d.payloads().unwrap().staged(Lpn(5)).is_none());
        assert_eq!(&d.payloads().unwrap().page(Ppa(0)).unwrap()[..5], b"hello");
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
        d.erase(0, Cause::GcData, SimTime(0)).unwrap();
        assert!(d.payloads().unwrap().page(Ppa(0)).is_none());
        assert_eq!(&d.payloads().unwrap().page(dst).unwrap()[..5], b"hello");
    }
}
