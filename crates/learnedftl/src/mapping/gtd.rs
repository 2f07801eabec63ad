//! Translation pages on flash and the global translation directory (SPEC §5.0).
//!
//! A translation page (TP) holds `page_size / 8` mapping entries; TP `t` maps LPNs
//! `[t·E, (t+1)·E)`. The GTD (DRAM, 4 B per TP) records where each TP lives. The entries
//! themselves are kept by the FTL in simulator memory as the TP's contents; the GTD only makes
//! every use of them pay its flash operations. A TP that was never written costs no read.

use crate::addr::{Lpn, Ppa, SimTime, Tpn};
use crate::config::Geometry;
use crate::device::{Cause, Device, Oob, Src};
use crate::error::FtlError;
use std::ops::Range;

const NONE: u32 = u32::MAX;

/// Where every translation page lives.
#[derive(Clone, Debug)]
pub struct Gtd {
    loc: Vec<u32>,
    entries_per_tp: u32,
    logical_pages: u32,
    written: u32,
    /// The newest write stamp its FTL has seen, written into each TP's OOB (docs/power.md).
    stamp: u32,
}

impl Gtd {
    /// A GTD for the device's logical space; no TP written yet.
    pub fn new(geo: &Geometry) -> Gtd {
        Gtd::with_span(geo, geo.entries_per_tp())
    }

    /// A GTD whose TPs each map `lpns_per_tp` LPNs (LeaFTL stores one 256-LPN group per TP).
    pub fn with_span(geo: &Geometry, lpns_per_tp: u32) -> Gtd {
        Gtd {
            loc: vec![NONE; geo.logical_pages.div_ceil(lpns_per_tp as u64) as usize],
            entries_per_tp: lpns_per_tp,
            logical_pages: geo.logical_pages as u32,
            written: 0,
            stamp: 0,
        }
    }

    /// Number of TPs.
    #[inline]
    pub fn tps(&self) -> u32 {
        self.loc.len() as u32
    }
    /// Entries (LPNs mapped) per TP.
    #[inline]
    pub fn entries_per_tp(&self) -> u32 {
        self.entries_per_tp
    }
    /// The TP mapping `lpn`.
    #[inline]
    pub fn tpn_of(&self, lpn: Lpn) -> Tpn {
        Tpn(lpn.0 / self.entries_per_tp)
    }
    /// `lpn`'s offset within its TP.
    #[inline]
    pub fn offset_of(&self, lpn: Lpn) -> u32 {
        lpn.0 % self.entries_per_tp
    }
    /// The LPNs TP `tpn` maps (the last TP may be short).
    #[inline]
    pub fn lpns(&self, tpn: Tpn) -> Range<u32> {
        let s = tpn.0 * self.entries_per_tp;
        s..(s + self.entries_per_tp).min(self.logical_pages)
    }
    /// Where TP `tpn` lives, if it was ever written.
    #[inline]
    pub fn location(&self, tpn: Tpn) -> Option<Ppa> {
        let p = self.loc[tpn.idx()];
        (p != NONE).then_some(Ppa(p))
    }
    /// Hints TP `tpn`'s entry into cache ([`crate::host::prefetch()`]).
    #[inline]
    pub fn prefetch(&self, tpn: Tpn) {
        if let Some(e) = self.loc.get(tpn.idx()) {
            crate::host::prefetch(e);
        }
    }
    /// TPs that exist on flash.
    pub fn written(&self) -> u32 {
        self.written
    }
    /// DRAM the GTD takes: 4 B per TP.
    pub fn dram_bytes(&self) -> u64 {
        self.loc.len() as u64 * 4
    }

    /// The FTL saw write or trim stamp `stamp`: TPs written from now on carry it in their OOB,
    /// so that a recovery can tell a TP older than the data it maps (docs/power.md).
    #[inline]
    pub fn note_stamp(&mut self, stamp: u32) {
        self.stamp = self.stamp.max(stamp);
    }

    /// After a power cut: TP `tpn` lives at `ppa` (recovery found it there), already valid.
    pub fn restore(&mut self, tpn: Tpn, ppa: Ppa) {
        if self.loc[tpn.idx()] == NONE {
            self.written += 1;
        }
        self.loc[tpn.idx()] = ppa.0;
    }

    /// Reads TP `tpn` at `t`; returns when its content is available. A TP never written holds
    /// only unmapped entries and costs nothing.
    #[inline]
    pub fn read(
        &self,
        dev: &mut Device,
        tpn: Tpn,
        cause: Cause,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        match self.location(tpn) {
            None => Ok(t),
            Some(ppa) => Ok(dev.read(ppa, cause, t)?.1),
        }
    }

    /// Programs a new version of TP `tpn` at `new` (a page the caller allocated from the
    /// translation stream) at time `t`, invalidating the old version. Returns completion.
    pub fn program(
        &mut self,
        dev: &mut Device,
        tpn: Tpn,
        new: Ppa,
        cause: Cause,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        let done = dev.program(new, Oob::tp_at(tpn, self.stamp), Src::None, cause, t)?;
        self.relocate(dev, tpn, new)?;
        Ok(done)
    }

    /// Read-modify-write of TP `tpn`: reads the old version (if any) at `t`, then programs the
    /// updated one at `new` when the read completes. Both carry `cause`. Returns completion.
    pub fn rewrite(
        &mut self,
        dev: &mut Device,
        tpn: Tpn,
        new: Ppa,
        cause: Cause,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        let read = self.read(dev, tpn, cause, t)?;
        self.program(dev, tpn, new, cause, read)
    }

    /// Records that TP `tpn` now lives at `new`, invalidating its old page (used by
    /// [`Gtd::program`], and by GC after it moved a TP: the old page is then already invalid).
    pub fn relocate(&mut self, dev: &mut Device, tpn: Tpn, new: Ppa) -> Result<(), FtlError> {
        let old = std::mem::replace(&mut self.loc[tpn.idx()], new.0);
        if old == NONE {
            self.written += 1;
        } else if dev.is_valid(Ppa(old)) {
            dev.invalidate(Ppa(old))?;
        }
        Ok(())
    }

    /// Checks that every written TP is a valid page holding that TP. Returns how many there are
    /// (the valid translation pages an FTL's page-map check must allow for).
    pub fn check(&self, dev: &Device) -> Result<u64, String> {
        let mut n = 0;
        for (t, &p) in self.loc.iter().enumerate() {
            if p == NONE {
                continue;
            }
            n += 1;
            let ppa = Ppa(p);
            if !dev.is_valid(ppa) {
                return Err(format!("GTD: TP {t} at {ppa:?}, which is not valid"));
            }
            if dev.peek_oob(ppa).and_then(|o| o.tpn()) != Some(Tpn(t as u32)) {
                return Err(format!(
                    "GTD: TP {t} at {ppa:?}, whose OOB names another page"
                ));
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DeviceConfig;

    #[test]
    fn unwritten_tps_cost_nothing_and_rewrites_invalidate() {
        let cfg = DeviceConfig::preset("tiny").unwrap();
        let mut dev = Device::new(&cfg);
        let mut gtd = Gtd::new(&cfg.geometry);
        assert_eq!(gtd.tpn_of(Lpn(1000)), Tpn(1));
        assert_eq!(gtd.lpns(Tpn(1)), 512..1024);
        assert_eq!(
            gtd.read(&mut dev, Tpn(1), Cause::TransRead, SimTime(5))
                .unwrap(),
            SimTime(5)
        );
        assert_eq!(dev.counters().total_reads(), 0);
        // First write: nothing to read first.
        let done = gtd
            .rewrite(&mut dev, Tpn(1), Ppa(0), Cause::TransWrite, SimTime(0))
            .unwrap();
        assert_eq!(done, SimTime(200_000));
        assert_eq!(dev.counters().total_reads(), 0);
        // Second: read then program, the old copy invalidated.
        let done = gtd
            .rewrite(&mut dev, Tpn(1), Ppa(1), Cause::TransWrite, SimTime(0))
            .unwrap();
        assert_eq!(done, SimTime(200_000 + 40_000 + 200_000));
        assert!(!dev.is_valid(Ppa(0)) && dev.is_valid(Ppa(1)));
        assert_eq!(gtd.check(&dev), Ok(1));
        assert_eq!(gtd.dram_bytes(), cfg.geometry.tps() as u64 * 4);
    }
}
