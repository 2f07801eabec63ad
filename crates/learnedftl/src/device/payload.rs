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

/// Page payloads by PPA, plus host data staged by LPN.
#[derive(Clone, Debug)]
pub struct PayloadStore {
    page_size: usize,
    flash: HashMap<Ppa, Box<[u8]>>,
    staged: HashMap<Lpn, Box<[u8]>>,
}

impl PayloadStore {
    pub(super) fn new(page_size: usize) -> Self {
        PayloadStore {
            page_size,
            flash: HashMap::new(),
            staged: HashMap::new(),
        }
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Stages the host's data for `lpn` before a write of it is submitted (shorter data is
    /// zero-padded to a page).
    pub fn stage(&mut self, lpn: Lpn, data: &[u8]) {
        let mut page = vec![0u8; self.page_size].into_boxed_slice();
        let n = data.len().min(self.page_size);
        page[..n].copy_from_slice(&data[..n]);
        self.staged.insert(lpn, page);
    }

    /// Drops staged data of a trimmed LPN.
    pub fn unstage(&mut self, lpn: Lpn) {
        self.staged.remove(&lpn);
    }

    /// Host data staged for `lpn` and not yet programmed (an FTL's DRAM buffer serves these).
    pub fn staged(&self, lpn: Lpn) -> Option<&[u8]> {
        self.staged.get(&lpn).map(|b| &b[..])
    }

    /// The data stored at `ppa`.
    pub fn page(&self, ppa: Ppa) -> Option<&[u8]> {
        self.flash.get(&ppa).map(|b| &b[..])
    }

    pub(super) fn on_program(&mut self, ppa: Ppa, oob: Oob, src: Src) {
        let data = match src {
            Src::Host => oob.lpn().and_then(|l| self.staged.remove(&l)),
            Src::Page(from) => self.flash.get(&from).cloned(),
            Src::None => None,
        };
        match data {
            Some(d) => {
                self.flash.insert(ppa, d);
            }
            None => {
                self.flash.remove(&ppa);
            }
        }
    }

    pub(super) fn on_erase(&mut self, ppa: Ppa) {
        self.flash.remove(&ppa);
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
