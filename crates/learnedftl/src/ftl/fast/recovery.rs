//! FAST's recovery after a power cut (docs/power.md, `docs/ftls/fast.md`).
//!
//! Both maps were in DRAM; flash keeps the pages, each with its LPN and write stamp, and the
//! trim records. Recovery scans every page's OOB (newest stamp wins), then tells the blocks
//! apart by their first page: offset 0 of a logical block starts a data or sequential log
//! block (random writes never take offset 0), anything else — a random write or a trim record —
//! a random log block; a block whose first page is torn holds nothing and is erased. For each
//! logical block it keeps, of the blocks holding it, a data block and if needed the unit's
//! sequential log block, so that every newest version not in a log block is found at its
//! offset in one of them; the others hold nothing current (a merge's copies the cut left
//! behind) and are erased. A trim cut while its records were programmed, one per unit it
//! touches, is completed: the units it left without one get theirs.

use super::{Fast, Role, SeqLog, NONE};
use crate::addr::{Lpn, Ppa, SimTime};
use crate::config::DeviceConfig;
use crate::device::{Cause, Device, Oob};
use crate::error::{FtlError, RecoverError};
use crate::mapping::{blocks, recovery, BlockPool};
use crate::params::Params;

fn lost(what: String) -> RecoverError {
    RecoverError::Ftl(FtlError::Invariant(format!("FAST recovery: {what}")))
}

/// The OOB of every page written in block `b` (`ppb` pages a block).
fn oobs(dev: &Device, ppb: u32, b: u32) -> impl Iterator<Item = Oob> + '_ {
    (0..dev.block_written(b)).filter_map(move |pg| dev.peek_oob(Ppa(b * ppb + pg)))
}

/// The LPN and stamp of the data page at `p` if it holds its LPN's newest version.
fn current(dev: &Device, newest: &[u32], p: Ppa) -> Option<(Lpn, u32)> {
    dev.peek_oob(p)
        .and_then(|o| o.lpn().map(|l| (l, o.stamp)))
        .filter(|&(l, s)| s != 0 && newest[l.idx()] == s)
}

impl Fast {
    /// Rebuilds FAST from flash after a power cut (module docs), recovery issued at `t`.
    /// Returns the FTL and when its last operation (an erase of a leftover block, a trim
    /// record) completes.
    pub fn recover(
        cfg: &DeviceConfig,
        params: &mut Params,
        dev: &mut Device,
        t: SimTime,
    ) -> Result<(Fast, SimTime), RecoverError> {
        let mut f = Fast::new(cfg, params)?;
        let scan = recovery::scan(dev, t)?;
        let t = scan.done;
        let lp = f.loc.len();
        // Each LPN's newest version's stamp; 0: none (never written, trimmed, padding only).
        let newest: Vec<u32> = (0..lp as u32)
            .map(|l| scan.mapped(Lpn(l)).map_or(0, |_| scan.stamp(Lpn(l))))
            .collect();
        // Per LPN, a log page holding its newest version.
        let mut in_log = vec![NONE; lp];
        let mut erase = Vec::new();
        f.free = BlockPool::recovered(&cfg.geometry, dev);
        for u in 0..f.units {
            let mut lb_blocks: Vec<(u32, u32)> = Vec::new();
            let mut logs: Vec<u32> = Vec::new();
            for b in f.free.blocks_of(u) {
                if dev.block_written(b) == 0 {
                    continue;
                }
                let first = dev.peek_oob(f.ppa(b, 0)).unwrap_or_default();
                match first.lpn().map(|l| f.place(l)) {
                    _ if first.is_torn() => erase.push(b),
                    Some((_, lb, 0)) => lb_blocks.push((lb, b)),
                    _ => logs.push(b),
                }
            }
            for &b in &logs {
                for pg in 0..dev.block_written(b) {
                    if let Some((l, _)) = current(dev, &newest, f.ppa(b, pg)) {
                        in_log[l.idx()] = f.ppa(b, pg).0;
                    }
                }
            }
            f.recover_lbs(dev, u, &mut lb_blocks, &newest, &in_log, &mut erase, t)?;
            f.recover_logs(dev, u, logs, &scan)?;
        }
        // Each LPN's newest version: below the sequential log block's next page, there or in
        // the random log; else in its data block, else the random log. Never in the data block
        // below that page, even when it holds the same version (a partial merge cut mid-copy
        // leaves both, or tears the sequential log's copy of a version the random log still
        // holds): completing the sequential log erases the data block.
        for l in 0..lp {
            if newest[l] == 0 {
                continue;
            }
            let lpn = Lpn(l as u32);
            let (u, lb, off) = f.place(lpn);
            let want = Some((lpn, newest[l]));
            let seq = f.unit[u as usize]
                .seq
                .filter(|s| s.lb == lb && off < s.next);
            let at = Some(seq.map_or(f.data[lb as usize], |s| s.block))
                .filter(|&b| b != NONE && off < dev.block_written(b))
                .map(|b| f.ppa(b, off))
                .filter(|&p| current(dev, &newest, p) == want)
                .or_else(|| (in_log[l] != NONE).then_some(Ppa(in_log[l])))
                .ok_or_else(|| lost(format!("no block kept holds {lpn:?} stamp {}", newest[l])))?;
            f.loc[l] = at.0;
        }
        // (Rebuilt blocks' copies are valid already.)
        for &p in f.loc.iter().filter(|&&p| p != NONE) {
            if !dev.is_valid(Ppa(p)) {
                dev.revalidate(Ppa(p))?;
            }
        }
        let mut done = t;
        for b in erase {
            done = done.max(f.free.erase(dev, b, Cause::Recovery, t)?);
            f.role[b as usize] = Role::Free;
        }
        done = done.max(f.complete_trim(dev, &scan, t)?);
        Ok((f, done))
    }

    /// The trim in flight at the cut, if the newest stamp on flash is its record: the copies
    /// it programmed already unmap its every LPN (each holds the whole range), so the units it
    /// touches that have none get theirs now, as each unit's merges answer for its own LPNs.
    /// Returns when they are programmed.
    fn complete_trim(
        &mut self,
        dev: &mut Device,
        scan: &recovery::Scan,
        t: SimTime,
    ) -> Result<SimTime, RecoverError> {
        let stamp = scan.max_stamp();
        let newest = scan.records().iter().find_map(|&p| {
            let oob = dev.peek_oob(p)?;
            (oob.stamp == stamp).then(|| dev.record(p)).flatten()
        });
        let Some(rec) = newest else {
            return Ok(t);
        };
        let mut done = t;
        for l in rec.range().take(self.units as usize) {
            let u = self.place(Lpn(l)).0;
            if !self.log_holds_record(dev, u, stamp) {
                let (ppa, start) = self.next_log_page(dev, u, t)?;
                done = done.max(dev.program_record(ppa, stamp, rec, Cause::Recovery, start)?);
            }
        }
        Ok(done)
    }

    /// Whether unit `u`'s random log holds a trim record of stamp `stamp`.
    pub(super) fn log_holds_record(&self, dev: &Device, u: u32, stamp: u32) -> bool {
        let unit = &self.unit[u as usize];
        let mut logs = unit.pool.iter().copied().chain(unit.active.map(|a| a.0));
        logs.any(|b| oobs(dev, self.ppb, b).any(|o| o.is_record() && o.stamp == stamp))
    }

    /// Chooses the data and sequential log blocks of unit `u`'s logical blocks from the blocks
    /// starting with their offset 0 (`lb_blocks`: `(logical block, block)`), or rebuilds one
    /// at `t` when no choice holds it (a partial merge cut mid-copy); the others go to `erase`.
    #[allow(clippy::too_many_arguments)]
    fn recover_lbs(
        &mut self,
        dev: &mut Device,
        u: u32,
        lb_blocks: &mut [(u32, u32)],
        newest: &[u32],
        in_log: &[u32],
        erase: &mut Vec<u32>,
        t: SimTime,
    ) -> Result<(), RecoverError> {
        lb_blocks.sort_unstable();
        for group in lb_blocks.chunk_by(|a, b| a.0 == b.0) {
            let lb = group[0].0;
            let cands: Vec<u32> = group.iter().map(|g| g.1).collect();
            // Offsets whose newest version is not in the random log: one kept block must hold it.
            let needs: Vec<(u32, Oob)> = (0..self.ppb)
                .filter_map(|off| {
                    let l = self.lpn_at(lb, off)?;
                    let s = newest[l.idx()];
                    (s != 0 && in_log[l.idx()] == NONE).then_some((off, Oob::data(l, s)))
                })
                .collect();
            let holds = |b: u32, off: u32, oob: Oob| {
                off < dev.block_written(b) && dev.peek_oob(self.ppa(b, off)) == Some(oob)
            };
            // A sequential log block must hold every such offset below its next one: a partial
            // merge completes it from there and erases the data block.
            let covers = |data: Option<u32>, seq: Option<u32>| {
                needs.iter().all(|&(off, oob)| match seq {
                    Some(s) if off < dev.block_written(s) => holds(s, off, oob),
                    _ => [data, seq]
                        .into_iter()
                        .flatten()
                        .any(|b| holds(b, off, oob)),
                })
            };
            // One block if one covers (the fullest, as data), else a data block and the unit's
            // sequential log block (the emptier of a pair that works).
            let mut by_fill = cands.clone();
            by_fill.sort_by_key(|&b| std::cmp::Reverse(dev.block_written(b)));
            let single = by_fill.iter().copied().find(|&b| covers(Some(b), None));
            let (data, seq) = match single {
                Some(b) => (Some(b), None),
                None if needs.is_empty() => (None, None),
                None => {
                    let pair = by_fill.iter().find_map(|&d| {
                        let s = by_fill
                            .iter()
                            .rev()
                            .copied()
                            .find(|&s| s != d && covers(Some(d), Some(s)))?;
                        Some((d, s))
                    });
                    match pair.filter(|_| self.unit[u as usize].seq.is_none()) {
                        Some((d, s)) => (Some(d), Some(s)),
                        // A merge cut mid-copy (its destination's torn page hides an offset
                        // whose version is older): rebuild the block now.
                        None => (Some(self.rebuild(dev, u, lb, &cands, &needs, t)?), None),
                    }
                }
            };
            if let Some(b) = data {
                self.data[lb as usize] = b;
                self.role[b as usize] = Role::Data(lb);
            }
            if let Some(b) = seq {
                let next = dev.block_written(b);
                self.unit[u as usize].seq = Some(SeqLog { lb, block: b, next });
                self.role[b as usize] = Role::Seq;
            }
            erase.extend(cands.iter().filter(|&&b| Some(b) != data && Some(b) != seq));
        }
        Ok(())
    }

    /// Rebuilds logical block `lb` of unit `u` into a free block at `t`: each offset of
    /// `needs` copied from the candidate holding it (read, then programmed when read), the
    /// offsets between them padded. Returns the block.
    fn rebuild(
        &mut self,
        dev: &mut Device,
        u: u32,
        lb: u32,
        cands: &[u32],
        needs: &[(u32, Oob)],
        t: SimTime,
    ) -> Result<u32, RecoverError> {
        let block = self
            .free
            .take(u)
            .ok_or_else(|| lost(format!("unit {u}: no free block to rebuild {lb} into")))?;
        let mut next = needs.iter();
        for off in 0..=needs.last().map_or(0, |n| n.0) {
            let dst = self.ppa(block, off);
            match next.clone().next() {
                Some(&(o, oob)) if o == off => {
                    next.next();
                    let src = cands
                        .iter()
                        .map(|&b| self.ppa(b, off))
                        .find(|&p| {
                            off < dev.block_written(p.0 / self.ppb) && dev.peek_oob(p) == Some(oob)
                        })
                        .ok_or_else(|| lost(format!("logical block {lb} offset {off} lost")))?;
                    blocks::copy(dev, src, dst, Cause::Recovery, t)?;
                }
                _ => {
                    let lpn = self.lpn_at(lb, off).unwrap_or(Lpn(0));
                    blocks::pad(dev, lpn, dst, Cause::Recovery, t)?;
                    self.merges.pad_pages += 1;
                }
            }
        }
        Ok(block)
    }

    /// Rebuilds unit `u`'s random log from its log blocks: the one partly written is active,
    /// the rest the pool, oldest (by newest stamp) first. (A full merge erases its victim
    /// before the next log block is opened, so a cut never leaves more than the pool holds.)
    /// Re-validates the unit's copy of each live trim record.
    fn recover_logs(
        &mut self,
        dev: &mut Device,
        u: u32,
        mut logs: Vec<u32>,
        scan: &recovery::Scan,
    ) -> Result<(), RecoverError> {
        let ppb = self.ppb;
        if logs.len() as u32 > self.log_blocks {
            return Err(lost(format!(
                "unit {u}: {} log blocks for a pool of {}",
                logs.len(),
                self.log_blocks
            )));
        }
        let live: Vec<u32> = scan
            .records()
            .iter()
            .filter_map(|&p| dev.peek_oob(p).map(|o| o.stamp))
            .collect();
        logs.sort_by_key(|&b| oobs(dev, ppb, b).map(|o| o.stamp).max().unwrap_or(0));
        for &stamp in &live {
            let copy = logs.iter().find_map(|&b| {
                (0..dev.block_written(b))
                    .map(|pg| Ppa(b * ppb + pg))
                    .find(|&p| {
                        dev.peek_oob(p)
                            .is_some_and(|o| o.is_record() && o.stamp == stamp)
                    })
            });
            if let Some(p) = copy {
                dev.revalidate(p)?;
            }
        }
        let unit = &mut self.unit[u as usize];
        let active = logs.iter().rposition(|&b| dev.block_written(b) < ppb);
        if let Some(i) = active {
            let b = logs.remove(i);
            unit.active = Some((b, dev.block_written(b)));
            self.role[b as usize] = Role::Log;
        }
        for b in logs {
            unit.pool.push_back(b);
            self.role[b as usize] = Role::Log;
        }
        Ok(())
    }
}
