//! Per-block allocation, for the FTLs whose blocks fill independently (block-mapped and hybrid
//! schemes: FAST, blockmap) rather than a line at a time through the shared write pointers
//! ([`super::Allocator`]).
//!
//! * [`BlockPool`]: the erased blocks, in a FIFO free list per *unit* (one plane of one LUN, the
//!   blocks `u·B .. (u+1)·B` of unit `u`, B blocks per plane), and the units' stripe order:
//!   the device's VPPN order (channel fastest, then LUN, then plane), the order in which the
//!   page-level FTLs' write pointers spread consecutive pages, so that consecutive positions
//!   land on different channels and LUNs.
//! * [`copy`] and [`pad`]: the two programs that build a block page by page besides host data.
//!   NAND programs a block's pages in order (`DeviceError::OutOfOrderProgram`), so a block
//!   rebuilt at fixed offsets gets a padding page at every offset below its last one that has
//!   no data.

use crate::addr::{Lpn, Ppa, SimTime};
use crate::config::Geometry;
use crate::device::{Cause, Device, Oob, Src};
use crate::error::DeviceError;
use std::collections::VecDeque;
use std::ops::Range;

/// Erased blocks per unit (LUN plane), and the units' stripe order.
#[derive(Clone, Debug)]
pub struct BlockPool {
    /// Blocks per unit (the geometry's blocks per plane).
    per_unit: u32,
    /// Each unit's erased blocks (global numbers), taken from the front.
    free: Vec<VecDeque<u32>>,
    /// Erased blocks in all units.
    total: usize,
    /// Stripe position → unit, and back.
    unit_at: Vec<u32>,
    pos_of: Vec<u32>,
    /// The stripe position [`BlockPool::take_next`] tries first.
    next: u32,
}

impl BlockPool {
    /// Every block of the device erased, each unit's in block order.
    pub fn new(geo: &Geometry) -> BlockPool {
        let mut pool = BlockPool::empty(geo);
        for b in 0..geo.blocks() {
            pool.release(b);
        }
        pool
    }

    /// The pool after a power cut: the blocks holding no page (neither programmed nor torn),
    /// each unit's in block order (the FIFO order before the cut was DRAM).
    pub fn recovered(geo: &Geometry, dev: &Device) -> BlockPool {
        let mut pool = BlockPool::empty(geo);
        for b in (0..geo.blocks()).filter(|&b| dev.block_written(b) == 0) {
            pool.release(b);
        }
        pool
    }

    /// No block free.
    fn empty(geo: &Geometry) -> BlockPool {
        let units = geo.blocks_per_line();
        let (c, w) = (geo.channels, geo.luns_per_channel);
        // Stripe position s: channel fastest, then LUN, then plane; the unit index is the
        // block's position in its line (LUN-major, then plane).
        let unit_at: Vec<u32> = (0..units)
            .map(|s| {
                let (ch, lun, pl) = (s % c, s / c % w, s / (c * w));
                (ch * w + lun) * geo.planes_per_lun + pl
            })
            .collect();
        let mut pos_of = vec![0; units as usize];
        for (s, &u) in unit_at.iter().enumerate() {
            pos_of[u as usize] = s as u32;
        }
        BlockPool {
            per_unit: geo.blocks_per_plane,
            free: vec![VecDeque::new(); units as usize],
            total: 0,
            unit_at,
            pos_of,
            next: 0,
        }
    }

    /// Units (LUN planes) in the device.
    #[inline]
    pub fn units(&self) -> u32 {
        self.unit_at.len() as u32
    }

    /// The unit at stripe position `pos` (`pos < units`).
    #[inline]
    pub fn unit_at(&self, pos: u32) -> u32 {
        self.unit_at[pos as usize]
    }

    /// The stripe position of unit `u`.
    #[inline]
    pub fn pos_of(&self, u: u32) -> u32 {
        self.pos_of[u as usize]
    }

    /// The unit holding global block `block`.
    #[inline]
    pub fn unit_of(&self, block: u32) -> u32 {
        block / self.per_unit
    }

    /// The global blocks of unit `u`.
    pub fn blocks_of(&self, u: u32) -> Range<u32> {
        u * self.per_unit..(u + 1) * self.per_unit
    }

    /// Erased blocks in unit `u`.
    #[inline]
    pub fn free_in(&self, u: u32) -> usize {
        self.free[u as usize].len()
    }

    /// Erased blocks in every unit.
    #[inline]
    pub fn free(&self) -> usize {
        self.total
    }

    /// Every erased block, unit by unit, each unit's in the order they will be taken.
    pub fn free_blocks(&self) -> impl Iterator<Item = u32> + '_ {
        self.free.iter().flatten().copied()
    }

    /// Takes unit `u`'s oldest erased block.
    #[inline]
    pub fn take(&mut self, u: u32) -> Option<u32> {
        let b = self.free[u as usize].pop_front()?;
        self.total -= 1;
        Some(b)
    }

    /// Takes an erased block from the next unit in stripe order that has one, round robin:
    /// blocks taken one after another land on different channels and LUNs.
    pub fn take_next(&mut self) -> Option<u32> {
        if self.total == 0 {
            return None;
        }
        let n = self.units();
        for i in 0..n {
            let pos = (self.next + i) % n;
            if let Some(b) = self.take(self.unit_at(pos)) {
                self.next = (pos + 1) % n;
                return Some(b);
            }
        }
        None
    }

    /// Puts an erased block at the back of its unit's list.
    #[inline]
    pub fn release(&mut self, block: u32) {
        let u = self.unit_of(block);
        self.free[u as usize].push_back(block);
        self.total += 1;
    }

    /// Erases `block` (cause `cause`, issued at `t`) and puts it in the pool; returns the
    /// erase's completion.
    pub fn erase(
        &mut self,
        dev: &mut Device,
        block: u32,
        cause: Cause,
        t: SimTime,
    ) -> Result<SimTime, DeviceError> {
        let done = dev.erase(block, cause, t)?;
        self.release(block);
        Ok(done)
    }

    /// Checks that every listed block is erased, in its unit's list, and listed once.
    pub fn check(&self, dev: &Device) -> Result<(), String> {
        let mut seen = vec![false; (self.units() * self.per_unit) as usize];
        for (u, list) in self.free.iter().enumerate() {
            for &b in list {
                if self.unit_of(b) != u as u32 {
                    return Err(format!("free block {b} is listed in unit {u}"));
                }
                if std::mem::replace(&mut seen[b as usize], true) {
                    return Err(format!("free block {b} is listed twice"));
                }
                if dev.block_written(b) != 0 {
                    return Err(format!("free block {b} is not erased"));
                }
            }
        }
        let listed: usize = self.free.iter().map(|l| l.len()).sum();
        if listed != self.total {
            return Err(format!(
                "{listed} free blocks listed, {} counted",
                self.total
            ));
        }
        Ok(())
    }
}

/// Copies the page at `src` to `dst`, the next page of its block (read at `t`, programmed when
/// the read completes), keeping its OOB: a copy is the same version, with the same LPN and
/// write stamp. `src` is left as it was (the caller invalidates it if it was valid). Returns
/// when the program completes.
#[inline]
pub fn copy(
    dev: &mut Device,
    src: Ppa,
    dst: Ppa,
    cause: Cause,
    t: SimTime,
) -> Result<SimTime, DeviceError> {
    let (oob, read) = dev.read(src, cause, t)?;
    dev.program(dst, oob, Src::Page(src), cause, read)
}

/// Programs a padding page for `lpn` at `dst`, the next page of its block, issued at `t`: the
/// LPN whose offset it fills, stamp 0 (never a version: recovery's newest stamp passes it
/// over), invalid at once. Returns when the program completes.
#[inline]
pub fn pad(
    dev: &mut Device,
    lpn: Lpn,
    dst: Ppa,
    cause: Cause,
    t: SimTime,
) -> Result<SimTime, DeviceError> {
    let done = dev.program(dst, Oob::data(lpn, 0), Src::None, cause, t)?;
    dev.invalidate(dst)?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DeviceConfig;

    #[test]
    fn blocks_are_taken_round_robin_over_the_stripe_order_and_come_back_erased() {
        let mut cfg = DeviceConfig::preset("tiny").unwrap();
        cfg.geometry.planes_per_lun = 2;
        let geo = cfg.geometry.clone();
        let mut dev = Device::new(&cfg);
        let mut pool = BlockPool::new(&geo);
        let bpp = geo.blocks_per_plane;
        assert_eq!((pool.units(), pool.free()), (16, 1024));
        // Channel fastest (4 channels of 2 LUNs), then LUN, then plane: unit = (ch·2 + lun)·2
        // + plane.
        let units: Vec<u32> = (0..16).map(|s| pool.unit_at(s)).collect();
        assert_eq!(
            units,
            [0, 4, 8, 12, 2, 6, 10, 14, 1, 5, 9, 13, 3, 7, 11, 15]
        );
        assert!((0..16).all(|u| pool.unit_at(pool.pos_of(u)) == u));
        let taken: Vec<u32> = (0..17).map(|_| pool.take_next().unwrap()).collect();
        assert_eq!(&taken[..3], &[0, 4 * bpp, 8 * bpp]);
        // The 17th block is unit 0's second.
        assert_eq!(taken[16], 1);
        assert_eq!(pool.free(), 1024 - 17);
        // A unit emptied is passed over.
        while pool.take(4).is_some() {}
        assert_eq!(pool.free_in(4), 0);
        let b = taken[0];
        let t = SimTime(0);
        dev.program(
            Ppa(b * geo.pages_per_block),
            Oob::data(Lpn(0), 1),
            Src::None,
            Cause::User,
            t,
        )
        .unwrap();
        pad(
            &mut dev,
            Lpn(1),
            Ppa(b * geo.pages_per_block + 1),
            Cause::GcData,
            t,
        )
        .unwrap();
        let dst = Ppa(taken[1] * geo.pages_per_block);
        copy(
            &mut dev,
            Ppa(b * geo.pages_per_block),
            dst,
            Cause::GcData,
            t,
        )
        .unwrap();
        assert_eq!(dev.peek_oob(dst), Some(Oob::data(Lpn(0), 1)));
        assert_eq!((dev.block_valid(b), dev.block_written(b)), (1, 2));
        assert!(pool.check(&dev).is_ok());
        dev.invalidate(Ppa(b * geo.pages_per_block)).unwrap();
        pool.erase(&mut dev, b, Cause::GcData, t).unwrap();
        assert_eq!(pool.free_blocks().next(), Some(taken[16] + 1));
        assert!(pool.free_blocks().any(|x| x == b));
        pool.check(&dev).unwrap();
        let rec = BlockPool::recovered(&geo, &dev);
        assert_eq!(rec.free(), 1024 - 1);
    }
}
