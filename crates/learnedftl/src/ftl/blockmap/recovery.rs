//! blockmap's recovery after a power cut (docs/power.md "Recovery for a new FTL",
//! `docs/ftls/blockmap.md`).
//!
//! The block map and the valid bits were DRAM; flash keeps each page's LPN and write stamp. At
//! rest every mapped logical block has exactly one block (a merge erases the block it replaces
//! at once), so every LPN has at most one data page on flash. A cut leaves at most one logical
//! block with two: the old block of the merge it interrupted (whole, or every page torn when
//! the cut struck its erase) and the merge's destination (copies with the originals' stamps,
//! the request's new data, padding, and the torn page the cut left).
//!
//! Recovery scans every page's OOB with per-block allocation's order of copies
//! ([`CopyOrder::Blocks`]: equal stamps by block sequence number, then offset), which gives
//! each LPN's newest version. Each written block belongs to the logical block its pages name;
//! a block with only torn pages (an interrupted erase) to none. Of a logical block's blocks,
//! recovery keeps one that holds the newest version of every offset below its write pointer —
//! the one needing the fewest copies, the later on a tie — and completes it with the newest
//! versions of the offsets above (what the interrupted merge had not copied yet); when none
//! does (the cut tore a page whose version only the old block holds), the logical block is
//! rebuilt into a free block. Copies and padding carry cause `recovery`. Every other written
//! block is erased, and the pool is the erased blocks.

use super::{Blockmap, NONE};
use crate::addr::{Lpn, Ppa, SimTime};
use crate::config::DeviceConfig;
use crate::device::{Cause, Device};
use crate::error::{FtlError, RecoverError};
use crate::mapping::recovery::{self, CopyOrder};
use crate::mapping::{blocks, BlockPool};
use crate::params::Params;
use std::cmp::Reverse;

fn lost(what: String) -> RecoverError {
    RecoverError::Ftl(FtlError::Invariant(format!("blockmap recovery: {what}")))
}

impl Blockmap {
    /// Rebuilds the FTL from flash after a power cut (module docs), recovery issued at `t`.
    /// Returns the FTL and when its last operation (a copy, a padding page, an erase)
    /// completes.
    pub fn recover(
        cfg: &DeviceConfig,
        params: &mut Params,
        dev: &mut Device,
        t: SimTime,
    ) -> Result<(Blockmap, SimTime), RecoverError> {
        let mut f = Blockmap::new(cfg, params)?;
        let scan = recovery::scan_in(dev, t, CopyOrder::Blocks)?;
        let t = scan.done;
        f.pool = BlockPool::recovered(&cfg.geometry, dev);
        // Every written block, by the logical block its pages name.
        let (mut held, mut erase) = (Vec::new(), Vec::new());
        for b in 0..cfg.geometry.blocks() {
            let named = (0..dev.block_written(b)).find_map(|off| {
                let oob = dev.peek_oob(f.ppa(b, off))?;
                (!oob.is_torn()).then_some((off, oob.lpn()))
            });
            match named {
                None if dev.block_written(b) == 0 => {}
                None => erase.push(b),
                Some((off, Some(l))) if l.0 % f.ppb == off && l.0 < f.lp => {
                    held.push((l.0 / f.ppb, b));
                }
                Some((off, other)) => {
                    return Err(lost(format!("block {b} holds {other:?} at offset {off}")))
                }
            }
        }
        held.sort_unstable();
        let mut done = t;
        for group in held.chunk_by(|a, b| a.0 == b.0) {
            let lbn = group[0].0;
            let cands: Vec<u32> = group.iter().map(|g| g.1).collect();
            let (keep, d) = f.recover_lbn(dev, lbn, &cands, scan.page_map(), t)?;
            done = done.max(d);
            f.map[lbn as usize] = keep.unwrap_or(NONE);
            erase.extend(cands.into_iter().filter(|&b| Some(b) != keep));
        }
        for b in erase {
            done = done.max(f.pool.erase(dev, b, Cause::Recovery, t)?);
        }
        Ok((f, done))
    }

    /// Chooses, completes or rebuilds the block of logical block `lbn` from the blocks holding
    /// its pages (`cands`), `newest` being the scan's page map, at `t`. Returns the block
    /// (`None`: no page of it has a version) and when its last program completes.
    fn recover_lbn(
        &mut self,
        dev: &mut Device,
        lbn: u32,
        cands: &[u32],
        newest: &[u32],
        t: SimTime,
    ) -> Result<(Option<u32>, SimTime), RecoverError> {
        let base = lbn * self.ppb;
        // Offsets whose LPN has a version, and where its newest is.
        let needs: Vec<(u32, Ppa)> = (base..(base + self.ppb).min(self.lp))
            .filter(|&l| newest[l as usize] != NONE)
            .map(|l| (l - base, Ppa(newest[l as usize])))
            .collect();
        let Some(&(last, _)) = needs.last() else {
            return Ok((None, t));
        };
        // Whether block `b` holds version `p` at offset `off` (a copy of equal stamp will do).
        let holds = |b: u32, off: u32, p: Ppa| dev.peek_oob(self.ppa(b, off)) == dev.peek_oob(p);
        let keep = cands
            .iter()
            .copied()
            .filter(|&b| {
                let w = dev.block_written(b);
                needs.iter().all(|&(off, p)| off >= w || holds(b, off, p))
            })
            .min_by_key(|&b| {
                let w = dev.block_written(b);
                let copies = needs.iter().filter(|n| n.0 >= w).count();
                (copies, Reverse(dev.block_seq(b)))
            });
        let (block, from) = match keep {
            Some(b) => {
                let w = dev.block_written(b);
                for &(off, _) in needs.iter().filter(|n| n.0 < w) {
                    dev.revalidate(self.ppa(b, off))?;
                }
                (b, w)
            }
            None => {
                let b = self.pool.take_next().ok_or_else(|| {
                    lost(format!("no free block to rebuild logical block {lbn} into"))
                })?;
                (b, 0)
            }
        };
        let mut done = t;
        let mut next = needs.iter().filter(|n| n.0 >= from).peekable();
        for off in from..=last {
            let dst = self.ppa(block, off);
            let d = match next.next_if(|n| n.0 == off) {
                Some(&(_, src)) => blocks::copy(dev, src, dst, Cause::Recovery, t)?,
                None => {
                    self.counters.pad_pages += 1;
                    blocks::pad(dev, Lpn(base + off), dst, Cause::Recovery, t)?
                }
            };
            done = done.max(d);
        }
        Ok((Some(block), done))
    }
}
