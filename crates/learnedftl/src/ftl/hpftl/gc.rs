//! HP-FTL's garbage collection (paper §II-D): when it runs, victim choice, relocating valid
//! pages, and moving secondary entries back into primary positions in the erased blocks.

use super::{Design, Dest, GcCopy, HpFtl, Loc, MoveBack, Relocate, Victims, NONE, SEC_FULL};
use crate::addr::{Ppa, SimTime};
use crate::device::{Cause, Device, Src};
use crate::error::FtlError;
use crate::ftl::Ftl;

impl HpFtl {
    /// Whether GC should move secondary entries back into primary positions: free slots are
    /// below the high watermark, and free pages (each move takes one) above the page reserve
    /// plus a block, so moving back never eats the pages GC needs to relocate its next victim.
    fn may_move_back(&self) -> bool {
        self.move_credit.covers(1) && self.may_move_back_at(self.sec.free_slots(), self.free_pages)
    }

    /// [`Self::may_move_back`] with `slots` free slots and `pages` free pages.
    fn may_move_back_at(&self, slots: u32, pages: u64) -> bool {
        slots < self.cfg.sec_high_slots && pages > self.cfg.page_reserve + self.ppb as u64
    }

    /// Background GC at `now` if the thresholds call for it; whether it freed slots or pages.
    /// A run that frees nothing is not repeated until a page is invalidated or the free pages
    /// or slots change, so that requests pay no victim scan while GC has nothing it may do.
    pub(super) fn background_gc(
        &mut self,
        dev: &mut Device,
        now: SimTime,
    ) -> Result<bool, FtlError> {
        let state =
            |f: &Self, dev: &Device| (dev.invalidations(), f.free_pages, f.sec.free_slots());
        if !self.gc_needed() || self.bg_idle_at == Some(state(self, dev)) {
            return Ok(false);
        }
        let (pages, slots) = (self.free_pages, self.sec.free_slots());
        let slots_short = self.slots_below(self.cfg.sec_low_slots);
        self.gc_run(dev, now, true)?;
        // Progress is more of what was short. Under design=paper a run on a full device could
        // merely trade pages for slots (relocating into the table, moving entries back) and
        // run again after every request of a read-only phase (issue 13: 128,000 runs for
        // 128,000 reads); strict gains are bounded by the device.
        let progress = self.free_pages > pages || (slots_short && self.sec.free_slots() > slots);
        self.bg_idle_at = (!progress).then(|| state(self, dev));
        Ok(progress)
    }

    /// Whether the watermarks call for GC.
    pub(super) fn gc_needed(&self) -> bool {
        self.slots_below(self.cfg.sec_low_slots) || self.free_pages < self.cfg.gc_free_low_pages
    }

    /// Whether free slots below `mark` call for GC: only under `design=paper`, where slots, not
    /// pages, are what GC must free; under `design=grow` the table grows instead.
    fn slots_below(&self, mark: u32) -> bool {
        self.cfg.design == Design::Paper && self.sec.free_slots() < mark
    }

    /// GC rounds at `t` until the high watermarks are reached or a round makes no progress on
    /// what is short.
    pub(super) fn gc_run(
        &mut self,
        dev: &mut Device,
        t: SimTime,
        background: bool,
    ) -> Result<(), FtlError> {
        self.ctr.gc_runs += 1;
        for _ in 0..self.blocks {
            let slots_short = self.slots_below(self.cfg.sec_high_slots);
            let pages_short = self.free_pages < self.cfg.gc_free_high_pages;
            if !slots_short && !pages_short {
                break;
            }
            let before = (self.sec.free_slots(), self.free_pages);
            // The background rule's victim filter is for free pages; the secondary table's
            // watermarks are HP-FTL's own and take any victim.
            let min_invalid = if background && !slots_short {
                self.cfg.bg_min_invalid
            } else {
                1
            };
            if !self.gc_round(dev, t, background, min_invalid)? {
                // Nothing to erase (a young device): entries can still move into candidates.
                if slots_short && self.cfg.merge_any {
                    self.merge_any(dev, t)?;
                }
                break;
            }
            // Free pages are progress even when slots are short: they let later rounds move
            // entries back.
            let progress =
                (slots_short && self.sec.free_slots() > before.0) || self.free_pages > before.1;
            if !progress {
                break;
            }
        }
        Ok(())
    }

    /// Chooses this round's victims into `self.victims`: full blocks with the fewest valid
    /// pages, at most `gc_batch`, as many as the free pages (and, relocating into the secondary
    /// table, its free slots) can absorb — always at least the best one. Only blocks with at
    /// least `min_invalid` invalid pages qualify.
    fn choose_victims(&mut self, dev: &Device, min_invalid: u32) {
        let v = &mut self.victims;
        v.clear();
        let per_lun = self.cfg.gc_victims == Victims::PerLun;
        // Every moved page needs a free page outside the victims, and every primary-mapped one
        // may need a slot (even primary-first, when no candidate fits; secondary-mapped pages
        // keep theirs): take the best victims that fit. Host writes leave `slot_reserve` = a
        // block's pages of slots, so the best victim normally fits.
        let mut pages = self.free_pages;
        // Under design=grow a relocation that finds no slot grows the table.
        let mut slots = match self.cfg.design {
            Design::Paper => self.sec.free_slots() as u64,
            Design::Grow => u64::MAX,
        };
        let mut room = self.cfg.gc_batch;
        // Ranked by invalid pages (what erasing gains), then valid pages (what it costs), then
        // block: for full blocks, the paper's "fewest valid pages". Usually only the best few
        // are looked at: gather the blocks of the top invalid-page counts that hold about
        // `4 · room` of them (the counts per level say where to stop), order those, and gather
        // the next levels only if needed. A block's valid plus free pages are `ppb − invalid`,
        // so levels whose blocks cannot fit the free pages are never gathered.
        let lowest = min_invalid.max(self.ppb - pages.min(self.ppb as u64) as u32);
        // Levels below `end` are not gathered yet.
        let mut end = self.ppb + 1;
        let want = 4 * room;
        'bands: while room > 0 && end > lowest {
            let mut start = end;
            let mut n = 0;
            while start > lowest && n < want {
                start -= 1;
                n += self.invalid_blocks[start as usize];
            }
            let cands = &mut self.victim_cands;
            cands.clear();
            if n > 0 {
                let levels = end - start;
                for (b, &invalid) in self.blk_invalid.iter().enumerate() {
                    let invalid = invalid as u32;
                    if invalid.wrapping_sub(start) < levels {
                        let key = (self.ppb - invalid) * (self.ppb + 1) + dev.block_valid(b as u32);
                        cands.push((key, b as u32));
                    }
                }
                cands.sort_unstable();
            }
            end = start;
            for &(key, b) in cands.iter() {
                let unusable = (self.ppb - self.blk_invalid[b as usize] as u32) as u64;
                // No later block fits either: its invalid pages are no more.
                if room == 0 || unusable > pages {
                    break 'bands;
                }
                let lun = b / self.blocks_per_lun;
                if per_lun && v.iter().any(|&(_, t)| t / self.blocks_per_lun == lun) {
                    continue;
                }
                let need = self.blk_primary[b as usize] as u64;
                if need <= slots {
                    pages -= unusable;
                    slots -= need;
                    room -= 1;
                    v.push((key, b));
                }
            }
        }
        for i in 0..self.victims.len() {
            let b = self.victims[i].1;
            self.victim_idx[b as usize] = i as u32;
            self.set_open(b, false);
        }
    }

    /// One GC round at `t` over victims with at least `min_invalid` invalid pages; `false` if
    /// there was none.
    fn gc_round(
        &mut self,
        dev: &mut Device,
        t: SimTime,
        background: bool,
        min_invalid: u32,
    ) -> Result<bool, FtlError> {
        self.choose_victims(dev, min_invalid);
        if self.victims.is_empty() {
            return Ok(false);
        }
        let victims: Vec<u32> = self.victims.iter().map(|&(_, b)| b).collect();
        // Every read first, then each copy when its read completes: interleaving read and
        // program would queue later reads behind programs on busy-until LUN timelines and chain
        // the LUNs (docs/device.md).
        let mut copies = std::mem::take(&mut self.copies);
        copies.clear();
        for &b in &victims {
            for pg in 0..self.ppb {
                let from = Ppa(b * self.ppb + pg);
                if dev.is_valid(from) {
                    let (oob, read) = dev.read(from, Cause::GcData, t)?;
                    copies.push(GcCopy { from, oob, read });
                }
            }
        }
        let relocated = (0..copies.len()).try_for_each(|i| {
            self.prefetch_locate(i, |j| copies.get(j).and_then(|c| c.oob.lpn()).map(|l| l.0));
            self.relocate(dev, copies[i])
        });
        self.copies = copies;
        relocated?;
        for &b in &victims {
            self.erase(dev, b, t)?;
        }
        self.stats.gc_events += victims.len() as u64;
        if background {
            self.stats.gc_background += victims.len() as u64;
        }
        self.ctr.gc_rounds += 1;
        let moved = self.move_back(dev, &victims, t);
        for &b in &victims {
            self.victim_idx[b as usize] = NONE;
            self.set_open(b, dev.block_written(b) < self.ppb);
        }
        moved.map(|_| true)
    }

    /// Makes sure the secondary table has a free slot, growing it (and the DRAM it is charged)
    /// by `secondary_growth` slots if it is full; a fixed table that is full is an error.
    pub(super) fn ensure_slot(&mut self) -> Result<(), FtlError> {
        if self.sec.free_slots() == 0 {
            if self.cfg.secondary_growth == 0 {
                return Err(FtlError::TableFull(SEC_FULL.into()));
            }
            self.sec.grow(self.cfg.secondary_growth);
            self.cfg.budget = self.cfg.budget.max(self.dram_total());
            self.ctr.secondary_grown += 1;
        }
        Ok(())
    }

    /// Moves a victim's valid page, read as `c`, programming it when the read is done.
    fn relocate(&mut self, dev: &mut Device, c: GcCopy) -> Result<(), FtlError> {
        if c.oob.is_record() {
            return self.relocate_record(dev, c);
        }
        let GcCopy {
            from: old_ppa,
            oob,
            read,
        } = c;
        let lpn = oob
            .lpn()
            .ok_or_else(|| FtlError::Invariant(format!("{old_ppa:?}: not a data page")))?;
        let old = self.locate(lpn.0)?;
        if old.ppa() != Some(old_ppa) {
            return Err(FtlError::Invariant(format!(
                "valid {old_ppa:?} holds {lpn:?}, which maps to {old:?}"
            )));
        }
        // Paper §II-D: relocated mappings go to the secondary table "until the table is almost
        // full" (down to the slot reserve); then to a hash candidate; the reserve is the last
        // resort. `primary-first` tries the candidates first.
        let in_sec = matches!(old, Loc::Secondary { .. });
        let free = self.sec.free_slots();
        let roomy = in_sec || free > self.cfg.slot_reserve || self.cfg.design == Design::Grow;
        let (new, dest) = match (self.cfg.gc_relocate, roomy) {
            (Relocate::Secondary, true) => (None, Dest::Secondary),
            _ => match self.primary_slot(dev, lpn.0, 1) {
                Some((p, d)) => (Some(p), d),
                // A secondary-mapped page keeps its slot.
                None if in_sec || free > 0 || self.cfg.secondary_growth > 0 => {
                    (None, Dest::Secondary)
                }
                None => return Err(FtlError::TableFull(SEC_FULL.into())),
            },
        };
        let new = match new {
            Some(p) => p,
            None => self.sec_page(dev).ok_or(FtlError::NoSpace)?,
        };
        self.program(dev, new, oob, Src::Page(old_ppa), Cause::GcData, read)?;
        self.remap(dev, lpn.0, old, new, dest)?;
        match dest {
            Dest::Primary { .. } => self.ctr.gc_relocated_primary += 1,
            Dest::Secondary => self.ctr.gc_relocated_secondary += 1,
        }
        self.stats.gc_pages_moved += 1;
        Ok(())
    }

    /// After erasing `victims`, moves secondary entries whose hash candidates include an erased
    /// block back into primary positions there, filling each block in page order, until the
    /// free slots reach the high watermark.
    fn move_back(&mut self, dev: &mut Device, victims: &[u32], t: SimTime) -> Result<(), FtlError> {
        if !self.may_move_back() {
            return Ok(());
        }
        let r = 1u32 << (self.cfg.p - self.cfg.m);
        // Candidates keyed by (erased block, low LPN bits): a block at page w takes an LPN whose
        // low p − m bits equal w's.
        self.moves_raw.clear();
        let n = self.codec.functions() as usize;
        let mut buf = [0u32; 256];
        for (i, &b) in victims.iter().enumerate() {
            for &lpn in self.cands.live(b, &self.sec) {
                let pos = self.sec.slot(lpn).ok_or_else(|| {
                    FtlError::Invariant(format!("LPN {lpn} indexed but not in the table"))
                })?;
                self.hashes.all(lpn, &mut buf[..n]);
                for (f, _) in buf[..n].iter().enumerate().filter(|&(_, &c)| c == b) {
                    self.moves_raw.push(MoveBack {
                        key: i as u32 * r + (lpn & (r - 1)),
                        hid: f as u32 + 1,
                        pos,
                        lpn,
                    });
                }
            }
        }
        // move_start[key] = first candidate of key; consumed candidates advance it.
        let keys = victims.len() * r as usize;
        self.move_start.clear();
        self.move_start.resize(keys + 1, 0);
        for mv in &self.moves_raw {
            self.move_start[mv.key as usize + 1] += 1;
        }
        for k in 0..keys {
            self.move_start[k + 1] += self.move_start[k];
        }
        // Ordered by (key, hid, pos): bucketed by key (the counts are at hand), then each small
        // bucket sorted by (hid, pos), unique within a key. The same order as sorting the whole
        // list, at a fraction of the cost (the full sort was a quarter of HP-FTL's GC time).
        self.moves.clear();
        self.moves.resize(self.moves_raw.len(), MoveBack::default());
        let mut fill: Vec<u32> = self.move_start[..keys].to_vec();
        for &mv in &self.moves_raw {
            let k = mv.key as usize;
            self.moves[fill[k] as usize] = mv;
            fill[k] += 1;
        }
        for k in 0..keys {
            let bucket = self.move_start[k] as usize..self.move_start[k + 1] as usize;
            self.moves[bucket].sort_unstable_by_key(|m| (m.hid as u64) << 32 | m.pos as u64);
        }
        let mut cursor: Vec<u32> = self.move_start[..keys].to_vec();
        // Plan every move (the next page of each erased block, in order) before reading any
        // page, so all reads are issued before any program (see gc_round). A move frees a slot
        // and takes a page.
        self.plan.clear();
        self.slot_taken.resize(self.sec.capacity() as usize, false);
        let (mut slots, mut pages) = (self.sec.free_slots(), self.free_pages);
        'blocks: for (i, &b) in victims.iter().enumerate() {
            for w in dev.block_written(b)..self.ppb {
                if !self.may_move_back_at(slots, pages)
                    || !self.move_credit.covers(self.plan.len() as u64 + 1)
                {
                    break 'blocks;
                }
                let key = i * r as usize + (w & (r - 1)) as usize;
                let end = self.move_start[key + 1];
                // Skip entries already planned through another candidate.
                while cursor[key] < end
                    && self.slot_taken[self.moves[cursor[key] as usize].pos as usize]
                {
                    cursor[key] += 1;
                }
                if cursor[key] == end {
                    break; // no entry can take this page: the block waits for host writes
                }
                let mv = self.moves[cursor[key] as usize];
                cursor[key] += 1;
                self.slot_taken[mv.pos as usize] = true;
                let ppid = self.codec.ppid_for(mv.lpn, w).ok_or_else(|| {
                    FtlError::Invariant(format!("page {w} not representable for {}", mv.lpn))
                })?;
                let dest = Dest::Primary { hid: mv.hid, ppid };
                self.plan.push((mv.lpn, Ppa(b * self.ppb + w), dest));
                slots += 1;
                pages -= 1;
            }
        }
        for &(lpn, ..) in &self.plan {
            if let Some(pos) = self.sec.slot(lpn) {
                self.slot_taken[pos as usize] = false;
            }
        }
        self.execute_plan(dev, t)?;
        if self.cfg.merge_any && self.may_move_back() {
            self.merge_any(dev, t)?;
        }
        Ok(())
    }

    /// Moves secondary entries into any hash candidate whose next page is representable for
    /// them, in slot order, until the free slots reach the high watermark. One at a time: where
    /// an entry goes depends on the pages the moves before it took.
    fn merge_any(&mut self, dev: &mut Device, t: SimTime) -> Result<(), FtlError> {
        let lpns: Vec<u32> = self.sec.entries().map(|(_, lpn, _)| lpn).collect();
        for lpn in lpns {
            if !self.may_move_back() {
                break;
            }
            if let Some((new, dest)) = self.primary_slot(dev, lpn, 1) {
                self.plan.clear();
                self.plan.push((lpn, new, dest));
                self.execute_plan(dev, t)?;
            }
        }
        Ok(())
    }

    /// Moves the planned secondary-mapped LPNs into their primary pages: every read at `t`
    /// first, then each program when its read is done, in plan order.
    fn execute_plan(&mut self, dev: &mut Device, t: SimTime) -> Result<(), FtlError> {
        let mut copies = std::mem::take(&mut self.copies);
        copies.clear();
        for (i, &(lpn, ..)) in self.plan.iter().enumerate() {
            self.prefetch_locate(i, |j| self.plan.get(j).map(|p| p.0));
            let Loc::Secondary { ppa: from, .. } = self.locate(lpn)? else {
                return Err(FtlError::Invariant(format!(
                    "LPN {lpn} is not in the secondary table"
                )));
            };
            let (oob, read) = dev.read(from, Cause::GcData, t)?;
            copies.push(GcCopy { from, oob, read });
        }
        let plan = std::mem::take(&mut self.plan);
        let moved = plan
            .iter()
            .zip(&copies)
            .try_for_each(|(&(lpn, new, dest), c)| {
                let old = self.locate(lpn)?;
                self.program(dev, new, c.oob, Src::Page(c.from), Cause::GcData, c.read)?;
                self.remap(dev, lpn, old, new, dest)?;
                self.ctr.gc_moved_back += 1;
                self.move_credit.spend(1);
                self.stats.gc_pages_moved += 1;
                Ok(())
            });
        self.plan = plan;
        self.copies = copies;
        moved
    }
}
