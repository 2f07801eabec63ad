//! Running a stream batch by batch and checking it: the model's update from the versions the
//! simulator reports, byte-for-byte comparison of reads, the oracle's stamp failures, the
//! FTL's invariants, and what a power cut may legitimately bring back.

use super::driver::{Driver, Ran};
use super::model::{self, Model};
use super::stream::{self, HostOp, Kind, SECTOR};
use super::{Counts, Failure};
use crate::addr::Lpn;
use std::time::Instant;

/// The state of a run: the model and counters.
pub(super) struct Run {
    pub(super) model: Model,
    pub(super) counts: Counts,
    bufs: Vec<Vec<u8>>,
    recoveries: u64,
    oracle_failures: u64,
    /// Batches run.
    batches: u64,
}

/// Batches between two checks of the FTL's invariants.
const INVARIANTS_EVERY: u64 = 1024;

impl Run {
    pub(super) fn new(model: Model) -> Run {
        Run {
            model,
            counts: Counts::default(),
            bufs: Vec::new(),
            recoveries: 0,
            oracle_failures: 0,
            batches: 0,
        }
    }

    /// Runs `ops` (from stream index `base`) on `driver`, checking each batch and the FTL's
    /// invariants every [`INVARIANTS_EVERY`] batches and at the end; returns the first
    /// failure. `deadline` stops early (shrinking's trials), as a pass.
    pub(super) fn ops(
        &mut self,
        driver: &mut dyn Driver,
        ops: &[HostOp],
        base: u64,
        deadline: Option<Instant>,
    ) -> Option<Failure> {
        driver.with_sim(&mut |s| {
            self.recoveries = s.recoveries();
            self.oracle_failures = s.oracle().map_or(0, |o| o.failures());
        });
        let ps = self.model.page_bytes();
        for range in stream::batches(ops, ps) {
            if deadline.is_some_and(|d| Instant::now() > d) {
                return None;
            }
            let first = range.start;
            let mut at = first;
            while at < range.end {
                match self.batch(driver, &ops[at..range.end], base + at as u64) {
                    Ok(ran) => at += ran,
                    Err(f) => return Some(*f),
                }
            }
            self.batches += 1;
            if self.batches % INVARIANTS_EVERY == 0 {
                if let Err(f) = invariants(driver, &ops[first], base + first as u64) {
                    return Some(*f);
                }
            }
        }
        let last = ops.len().saturating_sub(1);
        ops.last()
            .and_then(|op| invariants(driver, op, base + last as u64).err())
            .map(|f| *f)
    }

    /// One batch starting at stream index `first`; returns how many of its operations ran
    /// (all, unless a power cut struck inside one: the rest are a batch of their own).
    fn batch(
        &mut self,
        driver: &mut dyn Driver,
        ops: &[HostOp],
        first: u64,
    ) -> Result<usize, Box<Failure>> {
        let fail = |i: usize, what: String| Box::new(Failure::new(first + i as u64, ops[i], what));
        if let Some(k) = ops[0].cut {
            driver
                .cut(k)
                .map_err(|e| fail(0, format!("power cut: {e}")))?;
            // Through NBD the cut is done: adopt what recovery brought back before going on.
            self.after_cuts(driver, &ops[..1], first)?;
        }
        for op in ops.iter().filter(|o| o.kind.writes()) {
            self.model.remember(op.offset, op.len);
        }
        self.bufs
            .resize_with(self.bufs.len().max(ops.len()), Vec::new);
        for (op, buf) in ops.iter().zip(&mut self.bufs) {
            if matches!(op.kind, Kind::Read | Kind::Write) {
                buf.resize(op.len as usize, 0);
                if op.kind == Kind::Write {
                    model::fill(op.id, op.offset / SECTOR, buf);
                }
            } else {
                buf.clear();
            }
        }
        let mut floor = 0;
        driver.with_sim(&mut |s| floor = s.last_stamp());
        let Ran {
            ops: ran,
            cut_after,
        } = driver
            .run_batch(ops, &mut self.bufs[..ops.len()])
            .map_err(|(i, e)| fail(i, e))?;
        let ops = &ops[..ran];
        self.counts.ops += ran as u64;
        // The new versions' stamps, and whether a cut struck (in or after the last operation
        // that ran).
        let mut stamps = Vec::new();
        let mut recoveries = 0;
        driver.with_sim(&mut |s| {
            recoveries = s.recoveries();
            let o = s.oracle().expect("checks verify");
            for op in ops.iter().filter(|o| o.kind.writes()) {
                for lpn in self.touched(op) {
                    stamps.push(o.expected(Lpn(lpn)));
                }
            }
        });
        let cut = recoveries != self.recoveries;
        let interrupted = cut && !cut_after;
        let mut stamps = stamps.into_iter();
        for (i, op) in ops.iter().enumerate().filter(|(_, o)| o.kind.writes()) {
            for lpn in self.touched(op) {
                let s = stamps.next().expect("one per touched page");
                if !self.apply(op, lpn, s, floor, cut, interrupted) {
                    return Err(Box::new(Failure {
                        lpn: Some(lpn),
                        expected: Some(format!("a stamp above {floor}")),
                        found: Some(format!("stamp {s}")),
                        ..*fail(i, "acknowledged, but the page holds no new version".into())
                    }));
                }
            }
        }
        // Reads before the cut saw the state before it; a read the cut struck in was served
        // again after the recovery.
        let before_cut = if interrupted { ran - 1 } else { ran };
        for i in 0..before_cut {
            self.finish(ops, i, first)?;
        }
        if cut {
            self.after_cuts(driver, ops, first)?;
        }
        if interrupted {
            self.finish(ops, ran - 1, first)?;
        }
        self.oracle(driver, ops, first)?;
        Ok(ran)
    }

    /// Compares read `i` of the batch with the model, or notes what a flush or FUA made
    /// durable.
    fn finish(&mut self, ops: &[HostOp], i: usize, first: u64) -> Result<(), Box<Failure>> {
        let op = &ops[i];
        match op.kind {
            Kind::Read => {
                let (sectors, bad) = self.model.compare(op.offset, &self.bufs[i]);
                self.counts.reads_checked += 1;
                self.counts.bytes_checked += sectors * SECTOR;
                if let Some(m) = bad {
                    let page_sectors = self.model.page_bytes() / SECTOR;
                    let what = format!(
                        "read returned wrong bytes in {} of its {} sectors (first: sector {})",
                        m.sectors,
                        op.len / SECTOR,
                        m.sector
                    );
                    return Err(Box::new(Failure {
                        lpn: Some((m.sector / page_sectors) as u32),
                        expected: Some(expected_text(m.expected, m.sector)),
                        found: Some(m.found),
                        expected_id: (m.expected > 0).then_some(m.expected),
                        found_id: m.found_id,
                        ..Failure::new(first + i as u64, *op, what)
                    }));
                }
            }
            Kind::Flush => self.model.durable(),
            _ if op.fua || self.model.every_ack_durable() => {
                self.model.durable_range(op.offset, op.len)
            }
            _ => {}
        }
        Ok(())
    }

    /// The pages an operation changes: a trim only the whole pages inside its range.
    fn touched(&self, op: &HostOp) -> std::ops::Range<u32> {
        let ps = self.model.page_bytes();
        match op.kind {
            Kind::Trim => match crate::engine::bytes::inner_pages(ps, op.offset, op.len) {
                Some((a, n)) => (a / ps) as u32..((a + n) / ps) as u32,
                None => 0..0,
            },
            _ => self.model.pages(op.offset, op.len),
        }
    }

    /// Page `lpn`, which `op` changes, now holds version `stamp`: the operation's if it is
    /// new (a stamp above `floor`, the last one before the batch, or a discard of the whole
    /// page), else (after a `cut`) an older one a recovery brought back, which
    /// [`Run::after_cuts`] adopts. Returns false when, without a cut, the page holds no new
    /// version. `interrupted`: the cut struck inside the batch's last operation.
    fn apply(
        &mut self,
        op: &HostOp,
        lpn: u32,
        stamp: u32,
        floor: u32,
        cut: bool,
        interrupted: bool,
    ) -> bool {
        let ps = self.model.page_bytes();
        let (p0, p1) = (lpn as u64 * ps, (lpn as u64 + 1) * ps);
        let (a, b) = (op.offset.max(p0), (op.offset + op.len).min(p1));
        let whole = (a, b) == (p0, p1);
        let discarded = stamp == 0 && whole && op.kind != Kind::Write;
        if stamp <= floor && !discarded {
            return cut || stamp == self.model.stamp(lpn);
        }
        self.model
            .set(a, b - a, if op.kind == Kind::Write { op.id } else { 0 });
        // A read-modify-write a cut interrupted may have merged bytes recovery chose.
        if interrupted && !whole {
            self.model.forget_outside(lpn, a, b - a);
        }
        self.model.set_stamp(lpn, stamp);
        true
    }

    /// After a recovery: every page must hold a version the model knows may come back. `ops`
    /// (from stream index `first`) ran; the cut struck in the last.
    fn after_cuts(
        &mut self,
        driver: &mut dyn Driver,
        ops: &[HostOp],
        first: u64,
    ) -> Result<(), Box<Failure>> {
        let mut unknown = None;
        let model = &mut self.model;
        let (mut recoveries, before) = (0, self.recoveries);
        let mut cut_in = None;
        driver.with_sim(&mut |s| {
            recoveries = s.recoveries();
            if recoveries == before {
                // Through the engine a cut is only armed before its operation.
                return;
            }
            cut_in = Some(s.last_cut_in());
            let o = s.oracle().expect("checks verify");
            for lpn in 0..s.device().geo().logical_pages as u32 {
                let stamp = o.expected(Lpn(lpn));
                if !model.adopt(lpn, stamp) && unknown.is_none() {
                    unknown = Some((lpn, stamp, model.stamp(lpn)));
                }
            }
        });
        self.counts.power_cuts += recoveries - self.recoveries;
        if let Some(c) = cut_in {
            let key = c.map_or("between_operations", |c| c.key());
            *self.counts.power_cuts_in.entry(key).or_default() += recoveries - self.recoveries;
        }
        self.recoveries = recoveries;
        match unknown {
            None => Ok(()),
            Some((lpn, got, want)) => Err(Box::new(Failure {
                lpn: Some(lpn),
                expected: Some(format!(
                    "stamp {want} or a version since the last flush"
                )),
                found: Some(format!("stamp {got}")),
                ..Failure::new(
                    first + ops.len() as u64 - 1,
                    ops[ops.len() - 1],
                    "after a power cut a page came back as a version no acknowledged, unflushed write left (a flushed write was lost)".into(),
                )
            })),
        }
    }

    /// Stamp-level failures the engine's oracle counted during the batch `ops` (those that
    /// ran), reported at its last operation (through the engine, the one that failed).
    fn oracle(
        &mut self,
        driver: &mut dyn Driver,
        ops: &[HostOp],
        first: u64,
    ) -> Result<(), Box<Failure>> {
        let mut msg = None;
        let before = self.oracle_failures;
        driver.with_sim(&mut |s| {
            let o = s.oracle().expect("checks verify");
            if o.failures() > before {
                msg = Some(o.messages().last().cloned().unwrap_or_default());
            }
            self.oracle_failures = o.failures();
        });
        match msg {
            None => Ok(()),
            Some(m) => {
                let last = ops.len() - 1;
                let what = if last == 0 {
                    format!("the oracle's stamp check failed: {m}")
                } else {
                    format!("the oracle's stamp check failed in this operation or one of the {last} in flight before it: {m}")
                };
                Err(Box::new(Failure::new(first + last as u64, ops[last], what)))
            }
        }
    }
}

/// Checks the FTL's invariants against the device.
fn invariants(driver: &mut dyn Driver, op: &HostOp, index: u64) -> Result<(), Box<Failure>> {
    let mut r = Ok(());
    driver.with_sim(&mut |s| r = s.ftl().check_invariants(s.device()));
    r.map_err(|e| {
        Box::new(Failure::new(
            index,
            *op,
            format!("FTL invariant broken: {e}"),
        ))
    })
}

fn expected_text(id: u32, sector: u64) -> String {
    match id {
        0 => "zeroes".into(),
        id => format!("write {id}'s data for sector {sector}"),
    }
}
