//! Address arithmetic without hardware divisions: a divisor precomputed for one multiplication
//! ([`FastDiv`]), the conversions of a [`Geometry`] built on it ([`AddrMath`]) and a walk of a
//! line's pages by strides ([`Stripe`]), for the per-page paths of the device and the allocators.

use super::Geometry;
use crate::addr::{Ppa, Vppn};

/// Division of 32-bit numbers by a fixed divisor with one multiplication (Lemire's fastmod):
/// address arithmetic on hot paths divides by geometry sizes that are only known at run time.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FastDiv {
    d: u32,
    m: u64,
}

impl FastDiv {
    /// A divisor (must be at least 1).
    pub fn new(d: u32) -> FastDiv {
        assert!(d > 0, "division by zero");
        FastDiv {
            d,
            // For d = 1 the magic number would be 2^64; `div` special-cases it.
            m: if d == 1 { 0 } else { u64::MAX / d as u64 + 1 },
        }
    }
    /// `n / d`.
    #[inline]
    pub fn quot(self, n: u32) -> u32 {
        if self.d == 1 {
            n
        } else {
            ((self.m as u128 * n as u128) >> 64) as u32
        }
    }
    /// `n % d`.
    #[inline]
    pub fn modulo(self, n: u32) -> u32 {
        let low = self.m.wrapping_mul(n as u64);
        ((low as u128 * self.d as u128) >> 64) as u32
    }
    /// `(n / d, n % d)`.
    #[inline]
    pub fn divrem(self, n: u32) -> (u32, u32) {
        let q = self.quot(n);
        (q, n - q * self.d)
    }
}

/// Precomputed address arithmetic for a geometry: the conversions of [`Geometry`] without
/// hardware divisions, for the device's and allocators' per-page paths.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AddrMath {
    ch: FastDiv,
    lun: FastDiv,
    pl: FastDiv,
    blk: FastDiv,
    pg: FastDiv,
    pages_per_lun: FastDiv,
}

impl AddrMath {
    /// For `geo`.
    pub fn new(geo: &Geometry) -> AddrMath {
        AddrMath {
            ch: FastDiv::new(geo.channels),
            lun: FastDiv::new(geo.luns_per_channel),
            pl: FastDiv::new(geo.planes_per_lun),
            blk: FastDiv::new(geo.blocks_per_plane),
            pg: FastDiv::new(geo.pages_per_block),
            pages_per_lun: FastDiv::new(
                geo.planes_per_lun * geo.blocks_per_plane * geo.pages_per_block,
            ),
        }
    }
    /// Global block of a page.
    #[inline]
    pub fn block_of(&self, ppa: Ppa) -> u32 {
        self.pg.quot(ppa.0)
    }
    /// Page within its block.
    #[inline]
    pub fn page_in_block(&self, ppa: Ppa) -> u32 {
        self.pg.modulo(ppa.0)
    }
    /// `(global block, page in block)`.
    #[inline]
    pub fn block_page(&self, ppa: Ppa) -> (u32, u32) {
        self.pg.divrem(ppa.0)
    }
    /// Global LUN of a page.
    #[inline]
    pub fn lun_of(&self, ppa: Ppa) -> u32 {
        self.pages_per_lun.quot(ppa.0)
    }
    /// Channel of a global LUN.
    #[inline]
    pub fn channel_of_lun(&self, lun: u32) -> u32 {
        self.lun.quot(lun)
    }
    /// Plane (within its LUN) of a global block.
    #[inline]
    pub fn plane_of_block(&self, block: u32) -> u32 {
        self.pl.modulo(self.blk.quot(block))
    }
    /// Line of a global block.
    #[inline]
    pub fn line_of_block(&self, block: u32) -> u32 {
        self.blk.modulo(block)
    }
    /// VPPN of a PPA (as [`Geometry::ppa_to_vppn`]).
    #[inline]
    pub fn ppa_to_vppn(&self, ppa: Ppa) -> Vppn {
        let (x, pg) = self.pg.divrem(ppa.0);
        let (x, blk) = self.blk.divrem(x);
        let (x, pl) = self.pl.divrem(x);
        let (ch, lun) = self.lun.divrem(x);
        let (c, w, p, n) = (self.ch.d, self.lun.d, self.pl.d, self.pg.d);
        Vppn(ch + c * (lun + w * (pl + p * (pg + n * blk))))
    }
    /// PPA of a VPPN (as [`Geometry::vppn_to_ppa`]).
    #[inline]
    pub fn vppn_to_ppa(&self, v: Vppn) -> Ppa {
        let (x, ch) = self.ch.divrem(v.0);
        let (x, lun) = self.lun.divrem(x);
        let (x, pl) = self.pl.divrem(x);
        let (blk, pg) = self.pg.divrem(x);
        let (w, p, b, n) = (self.lun.d, self.pl.d, self.blk.d, self.pg.d);
        Ppa((((ch * w + lun) * p + pl) * b + blk) * n + pg)
    }
}

/// Walks a line's pages in VPPN order (channel fastest, then LUN, plane, page) by adding
/// strides, so a write pointer hands out each page without converting addresses.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Stripe {
    ppa: u32,
    ch: u32,
    lun: u32,
    pl: u32,
    dims: [u32; 3],
    strides: [u32; 3],
}

impl Stripe {
    /// The first page of `line`.
    pub fn new(geo: &Geometry, line: u32) -> Stripe {
        let n = geo.pages_per_block;
        let d_pl = geo.blocks_per_plane * n;
        let d_lun = geo.planes_per_lun * d_pl;
        let d_ch = geo.luns_per_channel * d_lun;
        Stripe {
            ppa: line * n,
            ch: 0,
            lun: 0,
            pl: 0,
            dims: [geo.channels, geo.luns_per_channel, geo.planes_per_lun],
            strides: [d_ch, d_lun, d_pl],
        }
    }

    /// The current page; then moves to the next. Past the line's last page the result is
    /// meaningless: callers count pages.
    #[inline]
    pub fn next_ppa(&mut self) -> Ppa {
        let cur = Ppa(self.ppa);
        let [c, w, p] = self.dims;
        let [d_ch, d_lun, d_pl] = self.strides;
        self.ch += 1;
        self.ppa += d_ch;
        if self.ch == c {
            self.ch = 0;
            self.ppa -= c * d_ch;
            self.lun += 1;
            self.ppa += d_lun;
            if self.lun == w {
                self.lun = 0;
                self.ppa -= w * d_lun;
                self.pl += 1;
                self.ppa += d_pl;
                if self.pl == p {
                    self.pl = 0;
                    self.ppa -= p * d_pl;
                    self.ppa += 1;
                }
            }
        }
        cur
    }
}

#[cfg(test)]
mod fast_tests {
    use super::super::tests::odd_geometry;
    use super::super::DeviceConfig;
    use super::*;

    #[test]
    fn fastdiv_matches_hardware_division() {
        let ds = [
            1u32,
            2,
            3,
            5,
            7,
            8,
            64,
            100,
            255,
            256,
            512,
            1000,
            32768,
            65535,
            1 << 20,
            u32::MAX,
        ];
        let ns = [
            0u32,
            1,
            2,
            63,
            64,
            65,
            1000,
            123_456_789,
            u32::MAX - 1,
            u32::MAX,
        ];
        for d in ds {
            let f = FastDiv::new(d);
            for n in ns {
                assert_eq!(f.quot(n), n / d, "{n}/{d}");
                assert_eq!(f.modulo(n), n % d, "{n}%{d}");
                assert_eq!(f.divrem(n), (n / d, n % d));
            }
        }
    }

    #[test]
    fn stripes_follow_vppn_order() {
        for g in [
            odd_geometry(),
            DeviceConfig::preset("tiny").unwrap().geometry,
        ] {
            for line in [0, 3, g.lines() - 1] {
                let mut s = Stripe::new(&g, line);
                let first = g.line_first_vppn(line).0;
                for i in 0..g.pages_per_line() {
                    assert_eq!(
                        s.next_ppa(),
                        g.vppn_to_ppa(Vppn(first + i)),
                        "line {line} page {i}"
                    );
                }
            }
        }
    }

    #[test]
    fn addr_math_matches_geometry() {
        let g = odd_geometry();
        let m = AddrMath::new(&g);
        for i in 0..g.pages() as u32 {
            let ppa = Ppa(i);
            assert_eq!(m.vppn_to_ppa(Vppn(i)), g.vppn_to_ppa(Vppn(i)));
            assert_eq!(m.ppa_to_vppn(ppa), g.ppa_to_vppn(ppa));
            assert_eq!(m.block_page(ppa), (g.block_of(ppa), g.page_in_block(ppa)));
            assert_eq!(m.lun_of(ppa), g.lun_of(ppa));
            assert_eq!(m.line_of_block(g.block_of(ppa)), g.line_of(ppa));
            assert_eq!(m.channel_of_lun(m.lun_of(ppa)), g.channel_of(ppa));
        }
    }
}
