//! The flash device: per-block and per-page state, per-LUN (and optionally per-channel) timing,
//! operation and energy counters by cause, and an optional payload store (SPEC §3).
//!
//! The device knows nothing of mappings. Misuse (programming out of order, reading an erased page,
//! erasing a block with valid data, invalidating a page that is not valid) is a [`DeviceError`]:
//! each means an FTL bug.

mod backfill;
mod copies;
mod fdp;
mod payload;
mod planes;
mod power;
mod records;
mod slc;
mod state;
mod suspend;

pub use backfill::BackfillCounters;
pub use fdp::{Fdp, FdpCounters, FdpEvents, HandleCounters, RuOwner, Unit};
pub use payload::{PayloadStore, Src};
pub use planes::PlaneCounters;
pub use power::PowerCut;
pub use records::TrimRecord;
pub use slc::SlcCounters;
pub use state::{StateFiles, StateOwner, STATE_FORMAT};
pub use suspend::SuspendCounters;

use crate::addr::{Lpn, Ppa, SimTime, Tpn};
use crate::config::{AddrMath, DeviceConfig, Geometry, TimingMode};
use crate::error::DeviceError;
use backfill::{Access, Backfill};
use power::Power;
use serde::Serialize;
use std::collections::BTreeMap;

/// Why a flash operation happened (SPEC §6).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[repr(u8)]
pub enum Cause {
    /// Host data.
    #[serde(rename = "user")]
    User = 0,
    /// Translation-page read on a mapping miss.
    #[serde(rename = "translation_read")]
    TransRead = 1,
    /// Translation-page program (dirty write-back) and its read-modify-write read.
    #[serde(rename = "translation_writeback")]
    TransWrite = 2,
    /// Extra translation reads made only to prefetch.
    #[serde(rename = "prefetch")]
    Prefetch = 3,
    /// Garbage collection of data pages.
    #[serde(rename = "gc_data")]
    GcData = 4,
    /// Garbage collection of translation pages (and translation updates GC forces).
    #[serde(rename = "gc_translation")]
    GcTrans = 5,
    /// A read of a wrongly predicted page (learned FTLs).
    #[serde(rename = "misprediction")]
    Mispredict = 6,
    /// A trim record's program (docs/power.md: what makes an acknowledged trim durable).
    #[serde(rename = "trim_record")]
    TrimRecord = 7,
    /// Reads and programs of a recovery after a power cut (docs/power.md).
    #[serde(rename = "recovery")]
    Recovery = 8,
    /// Programs of a mapping checkpoint (`checkpoint_every`, docs/power.md).
    #[serde(rename = "checkpoint")]
    Checkpoint = 9,
    /// Reads and programs folding host data from the SLC cache into its multi-bit location
    /// (`slc_cache`, docs/device.md); reported only when the device has an SLC cache.
    #[serde(rename = "slc_fold")]
    SlcFold = 10,
}

impl Cause {
    /// Number of causes.
    pub const COUNT: usize = 11;
    /// Every cause, in report order.
    pub const ALL: [Cause; Cause::COUNT] = [
        Cause::User,
        Cause::TransRead,
        Cause::TransWrite,
        Cause::Prefetch,
        Cause::GcData,
        Cause::GcTrans,
        Cause::Mispredict,
        Cause::TrimRecord,
        Cause::Recovery,
        Cause::Checkpoint,
        Cause::SlcFold,
    ];
    /// The key used in reports (and its serde name).
    pub fn key(self) -> &'static str {
        match self {
            Cause::User => "user",
            Cause::TransRead => "translation_read",
            Cause::TransWrite => "translation_writeback",
            Cause::Prefetch => "prefetch",
            Cause::GcData => "gc_data",
            Cause::GcTrans => "gc_translation",
            Cause::Mispredict => "misprediction",
            Cause::TrimRecord => "trim_record",
            Cause::Recovery => "recovery",
            Cause::Checkpoint => "checkpoint",
            Cause::SlcFold => "slc_fold",
        }
    }
}

/// Out-of-band area of a page: what it holds and the write stamp of that version.
///
/// `tag` is an LPN, a translation-page number with [`Oob::TP_FLAG`] set, or one of the two
/// special tags [`Oob::RECORD`] (a trim record) and [`Oob::TORN`] (a program cut by power loss).
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
#[repr(C)]
pub struct Oob {
    /// LPN, `TP_FLAG | tpn`, [`Oob::RECORD`] or [`Oob::TORN`].
    pub tag: u32,
    /// Write stamp of this version (data pages, trim records); translation pages carry the
    /// newest stamp their FTL had seen when writing them (0 if it does not say).
    pub stamp: u32,
}

impl Oob {
    /// Marks a translation page.
    pub const TP_FLAG: u32 = 1 << 31;
    /// The tag of a page whose program a power cut interrupted: never valid, unreadable data.
    pub const TORN: u32 = u32::MAX;
    /// The tag of a trim record page (its contents: [`Device::record`]).
    pub const RECORD: u32 = u32::MAX - 1;

    /// OOB of a data page.
    #[inline]
    pub fn data(lpn: Lpn, stamp: u32) -> Oob {
        Oob { tag: lpn.0, stamp }
    }
    /// OOB of a translation page that records no stamp.
    #[inline]
    pub fn tp(tpn: Tpn) -> Oob {
        Oob::tp_at(tpn, 0)
    }
    /// OOB of a translation page written when `stamp` was the newest write stamp its FTL had
    /// seen (what lets recovery tell a stale TP, docs/power.md).
    #[inline]
    pub fn tp_at(tpn: Tpn, stamp: u32) -> Oob {
        Oob {
            tag: Self::TP_FLAG | tpn.0,
            stamp,
        }
    }
    /// OOB of a trim record acknowledged with `stamp`.
    #[inline]
    pub fn record(stamp: u32) -> Oob {
        Oob {
            tag: Self::RECORD,
            stamp,
        }
    }
    /// The LPN, if this is a data page.
    #[inline]
    pub fn lpn(self) -> Option<Lpn> {
        (self.tag & Self::TP_FLAG == 0).then_some(Lpn(self.tag))
    }
    /// The TP number, if this is a translation page.
    #[inline]
    pub fn tpn(self) -> Option<Tpn> {
        (self.tag & Self::TP_FLAG != 0 && self.tag < Self::RECORD)
            .then_some(Tpn(self.tag & !Self::TP_FLAG))
    }
    /// Whether this is a trim record.
    #[inline]
    pub fn is_record(self) -> bool {
        self.tag == Self::RECORD
    }
    /// Whether a power cut interrupted this page's program.
    #[inline]
    pub fn is_torn(self) -> bool {
        self.tag == Self::TORN
    }
}

/// Flash operation counts by cause.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlashCounters {
    /// Page reads by cause.
    pub reads: [u64; Cause::COUNT],
    /// Page programs by cause.
    pub programs: [u64; Cause::COUNT],
    /// Block erases by cause.
    pub erases: [u64; Cause::COUNT],
}

impl FlashCounters {
    /// All page reads.
    pub fn total_reads(&self) -> u64 {
        self.reads.iter().sum()
    }
    /// All page programs.
    pub fn total_programs(&self) -> u64 {
        self.programs.iter().sum()
    }
    /// All erases.
    pub fn total_erases(&self) -> u64 {
        self.erases.iter().sum()
    }
    /// Page operations (reads + programs), the unit of simulator speed.
    pub fn page_ops(&self) -> u64 {
        self.total_reads() + self.total_programs()
    }
}

/// Erase-count summary.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Wear {
    /// Fewest erases of any block.
    pub min: u32,
    /// Mean erases per block.
    pub mean: f64,
    /// Most erases of any block.
    pub max: u32,
}

/// The simulated SSD's flash.
#[derive(Clone)]
pub struct Device {
    cfg: DeviceConfig,
    geo: Geometry,
    math: AddrMath,
    oob: Vec<Oob>,
    valid: Vec<u64>,
    blk_next: Vec<u32>,
    blk_valid: Vec<u32>,
    blk_erases: Vec<u32>,
    /// When each block got its first page since its last erase, counted in blocks opened (a
    /// block sequence number in its first page's metadata, as controllers keep: recovery
    /// orders copies of equal stamp by it).
    blk_seq: Vec<u32>,
    opened: u32,
    line_valid: Vec<u32>,
    /// Per line, the valid count below which an invalidation raises `line_alarm` (0: never);
    /// see [`Device::arm_line_alarms`].
    line_alarm_below: Vec<u32>,
    line_alarm: bool,
    lun_busy: Vec<u64>,
    ch_busy: Vec<u64>,
    xfer_ns: u64,
    /// Page types per block (`cell`: 1 for SLC), and the read and program latency of each.
    page_types: u32,
    read_ns: [u64; 4],
    program_ns: [u64; 4],
    /// Gap-filling timelines (`timing=backfill`); `None` under FEMU's rule.
    backfill: Option<Box<Backfill>>,
    /// Program and erase suspend (`suspend=on`).
    suspend: Option<Box<suspend::Suspend>>,
    /// Multi-plane operations (`multi_plane=on`).
    planes: Option<Box<planes::Planes>>,
    /// The hybrid SLC cache (`slc_cache`, `slc_cache_dynamic`).
    slc: Option<Box<slc::Slc>>,
    /// Flexible Data Placement (`fdp_ruhs`).
    fdp: Option<Box<Fdp>>,
    /// The host link's timeline (`host_mb_s`): its busy-until time, and under
    /// `timing=backfill` its idle gaps (transfers complete out of order).
    link_busy: u64,
    link: Option<Box<Backfill>>,
    /// With `channel_transfer=on` under `timing=backfill`: each channel's idle gaps (one
    /// timeline per channel, its busy-until time in `ch_busy`).
    channels: Option<Box<Backfill>>,
    counters: FlashCounters,
    /// Whether the controller's DRAM holds each page's data until its program completes (it
    /// has a write buffer, `write_buffer`): reads of a page still being programmed are served
    /// from there.
    buffered: bool,
    /// Reads served that way since the last reset.
    in_flight_reads: u64,
    invalidations: u64,
    payload: Option<PayloadStore>,
    /// Contents of the trim record pages programmed and not yet erased, by PPA (few: a sparse
    /// side table keeps [`Oob`] at 8 bytes a page).
    records: BTreeMap<u32, TrimRecord>,
    /// Data pages of each LPN on flash, counted from the first trim on (`copies.rs`).
    copies: copies::Copies,
    power: Power,
    /// The cause of the operation the latest cut struck in (`None`: between operations).
    cut_in: Option<Cause>,
    /// The last committed mapping checkpoint: per block, how many of its pages it covers (its
    /// write pointer when the checkpoint was taken; 0 once the block is erased), so that
    /// recovery scans only what was programmed since (docs/power.md "Checkpoints"). Empty
    /// until the first checkpoint: runs without checkpoints keep no 4 B per block for it.
    ckpt_written: Vec<u32>,
    /// Pages of the last committed checkpoint (0: none yet).
    ckpt_pages: u64,
    /// The controller's buffered pages (`(lpn, stamp, placement ID)`) dumped on capacitor
    /// energy at the last power cut, not restored yet ([`Device::dump_on_capacitors`]).
    dump: Vec<(Lpn, u32, u16)>,
}

impl Device {
    /// An erased device. `cfg` should have passed [`DeviceConfig::validate`].
    pub fn new(cfg: &DeviceConfig) -> Device {
        let geo = cfg.geometry.clone();
        let pages = geo.pages() as usize;
        let blocks = geo.blocks() as usize;
        let t = &cfg.timing;
        Device {
            backfill: (t.mode == TimingMode::Backfill).then(|| {
                let shortest = t.shortest_ns();
                // Boxed: FEMU's hot fields stay as compact as without it.
                Box::new(Backfill::new(
                    geo.luns() as usize,
                    blocks,
                    geo.pages_per_block,
                    t.backfill_gaps as usize,
                    shortest,
                ))
            }),
            suspend: t
                .suspend
                .as_ref()
                .map(|s| Box::new(suspend::Suspend::new(s, geo.luns() as usize))),
            planes: t.multi_plane.then(|| {
                Box::new(planes::Planes::new(
                    geo.luns() as usize,
                    t.independent_plane_reads,
                ))
            }),
            slc: cfg.slc.is_on().then(|| {
                Box::new(slc::Slc::new(
                    &cfg.slc,
                    t.cell.page_types() as u64,
                    geo.pages(),
                    geo.luns() as usize,
                ))
            }),
            fdp: cfg.fdp.is_on().then(|| Box::new(Fdp::new(&cfg.fdp, &geo))),
            channels: (t.channel_transfer && t.mode == TimingMode::Backfill).then(|| {
                let page_ns = t.transfer_ns(geo.page_size).max(1);
                Box::new(Backfill::new(
                    geo.channels as usize,
                    1,
                    1,
                    t.backfill_gaps as usize,
                    page_ns,
                ))
            }),
            link_busy: 0,
            link: (cfg.controller.host_mb_s > 0 && t.mode == TimingMode::Backfill).then(|| {
                // A timeline of one "LUN" whose shortest operation is a page's transfer.
                let page_ns = (geo.page_size as u64 * 1000).div_ceil(cfg.controller.host_mb_s);
                Box::new(Backfill::new(1, 1, 1, t.backfill_gaps as usize, page_ns))
            }),
            xfer_ns: cfg.timing.transfer_ns(geo.page_size),
            page_types: t.cell.page_types() as u32,
            read_ns: per_page_type(&t.read_ns_pages, t.read_ns),
            program_ns: per_page_type(&t.program_ns_pages, t.program_ns),
            oob: vec![Oob::default(); pages],
            valid: vec![0; pages.div_ceil(64)],
            blk_next: vec![0; blocks],
            blk_valid: vec![0; blocks],
            blk_erases: vec![0; blocks],
            blk_seq: vec![0; blocks],
            opened: 0,
            line_valid: vec![0; geo.lines() as usize],
            line_alarm_below: vec![0; geo.lines() as usize],
            line_alarm: false,
            lun_busy: vec![0; geo.luns() as usize],
            ch_busy: vec![0; geo.channels as usize],
            counters: FlashCounters::default(),
            buffered: cfg.controller.write_buffer > 0,
            in_flight_reads: 0,
            invalidations: 0,
            payload: cfg
                .payloads
                .then(|| PayloadStore::new(geo.page_size as usize, geo.pages())),
            records: BTreeMap::new(),
            copies: Default::default(),
            power: Power::On,
            cut_in: None,
            ckpt_written: Vec::new(),
            ckpt_pages: 0,
            dump: Vec::new(),
            math: AddrMath::new(&geo),
            geo,
            cfg: cfg.clone(),
        }
    }

    /// The configuration.
    #[inline]
    pub fn config(&self) -> &DeviceConfig {
        &self.cfg
    }
    /// The geometry.
    #[inline]
    pub fn geo(&self) -> &Geometry {
        &self.geo
    }
    /// Division-free address arithmetic for this geometry.
    #[inline]
    pub fn math(&self) -> &AddrMath {
        &self.math
    }
    /// Operation counters since the last reset.
    pub fn counters(&self) -> &FlashCounters {
        &self.counters
    }
    /// Zeroes the operation counters (flash state and timing stay).
    pub fn reset_counters(&mut self) {
        self.counters = FlashCounters::default();
        if let Some(b) = self.backfill.as_mut() {
            b.reset_counters();
        }
        if let Some(s) = self.suspend.as_mut() {
            s.reset_counters();
        }
        self.in_flight_reads = 0;
        if let Some(p) = self.planes.as_mut() {
            p.reset_counters();
        }
        if let Some(s) = self.slc.as_mut() {
            s.reset_counters();
        }
        if let Some(f) = self.fdp.as_mut() {
            f.reset_counters();
        }
    }

    /// Flexible Data Placement's state and counters (`None` with FDP off).
    #[inline]
    pub fn fdp(&self) -> Option<&Fdp> {
        self.fdp.as_deref()
    }

    /// With FDP on, records that `ppa`, just programmed, holds handle `h`'s data placed in a
    /// `unit` (docs/fdp.md); nothing with FDP off.
    #[inline]
    pub fn place(&mut self, ppa: Ppa, unit: Unit, h: u8) {
        if let Some(f) = self.fdp.as_mut() {
            let line = self.math.line_of_block(self.math.block_of(ppa));
            f.place(ppa, line, unit, h);
        }
    }

    /// The handle whose data `ppa` holds (0 with FDP off).
    #[inline]
    pub fn page_handle(&self, ppa: Ppa) -> u8 {
        self.fdp.as_ref().map_or(0, |f| f.handle(ppa))
    }

    /// Counts a write whose placement ID named no handle (FDP's "Invalid Placement
    /// Identifier" event).
    pub fn invalid_placement(&mut self) {
        if let Some(f) = self.fdp.as_mut() {
            f.invalid_pid();
        }
    }

    /// What the SLC cache did since the last reset (`None` without one).
    pub fn slc_counters(&self) -> Option<SlcCounters> {
        self.slc.as_ref().map(|s| s.counters())
    }

    /// Whether the device has an SLC cache (its fold cause is then reported).
    pub fn has_slc_cache(&self) -> bool {
        self.slc.is_some()
    }

    /// The operations that ran together with another plane's since the last reset (`None`
    /// without `multi_plane=on`).
    pub fn plane_counters(&self) -> Option<PlaneCounters> {
        self.planes.as_ref().map(|p| p.counters())
    }

    /// Reads of a page whose program had not completed, served from the controller's write
    /// buffer without a flash read, since the last reset (with `write_buffer` under
    /// `timing=backfill`; 0 otherwise).
    pub fn in_flight_reads(&self) -> u64 {
        self.in_flight_reads
    }

    /// The suspensions since the last reset (`None` without `suspend=on`).
    pub fn suspend_counters(&self) -> Option<SuspendCounters> {
        self.suspend.as_ref().map(|s| s.counters())
    }
    /// The gap-filling counters since the last reset (zero under `timing=femu`).
    pub fn backfill_counters(&self) -> BackfillCounters {
        self.backfill
            .as_ref()
            .map_or_else(BackfillCounters::default, |b| b.counters())
    }
    /// Tells the device that no operation will be issued before `t` from now on (the engine
    /// calls it with each host request's arrival, the idle phase with each unit's time), so
    /// gap-filling timelines forget the idle time before it and the program times of blocks
    /// finished by then. Issuing earlier breaks that promise: debug builds assert it.
    #[inline]
    pub fn advance_floor(&mut self, t: SimTime) {
        if self.slc.is_some() {
            self.fold_idle(t);
        }
        if let Some(l) = self.link.as_mut() {
            l.advance_floor(t.0);
        }
        if let Some(c) = self.channels.as_mut() {
            c.advance_floor(t.0);
        }
        if let Some(b) = self.backfill.as_mut() {
            b.advance_floor(t.0);
        }
    }
    /// A copy of the device without its payloads (a copy whose reads need OOBs only: cloning
    /// the payload store touches every stored page).
    pub fn clone_without_payloads(&mut self) -> Device {
        let payload = self.payload.take();
        let copy = self.clone();
        self.payload = payload;
        copy
    }

    /// The payload store, if payloads are kept.
    pub fn payloads(&self) -> Option<&PayloadStore> {
        self.payload.as_ref()
    }
    /// The payload store, mutably (the engine stages host data here).
    pub fn payloads_mut(&mut self) -> Option<&mut PayloadStore> {
        self.payload.as_mut()
    }

    /// Energy of the counted operations, µJ, by cause.
    pub fn energy_uj(&self) -> [f64; Cause::COUNT] {
        let e = &self.cfg.energy;
        let c = &self.counters;
        std::array::from_fn(|i| {
            c.reads[i] as f64 * e.read_uj
                + c.programs[i] as f64 * e.program_uj
                + c.erases[i] as f64 * e.erase_uj
        })
    }

    #[inline]
    fn check(&self, ppa: Ppa) -> Result<(), DeviceError> {
        if ppa.idx() < self.oob.len() {
            Ok(())
        } else {
            Err(DeviceError::OutOfRange(ppa))
        }
    }

    /// Whether `ppa` holds programmed data (valid or stale).
    #[inline]
    pub fn is_programmed(&self, ppa: Ppa) -> bool {
        if ppa.idx() >= self.oob.len() {
            return false;
        }
        let (blk, pg) = self.math.block_page(ppa);
        pg < self.blk_next[blk as usize]
    }
    /// Hints the state a read of `ppa` will touch (its OOB, its block's write point and LUN
    /// ordering) into cache: see [`crate::ftl::Ftl::prefetch`]. Changes nothing.
    #[inline]
    pub fn prefetch_read(&self, ppa: Ppa) {
        let Some(oob) = self.oob.get(ppa.idx()) else {
            return;
        };
        crate::host::prefetch(oob);
        let blk = self.math.block_of(ppa) as usize;
        crate::host::prefetch(&self.blk_next[blk]);
        if let Some(b) = &self.backfill {
            b.prefetch(blk);
        }
    }

    /// Hints into cache what [`Device::invalidate`] of `ppa` updates: its valid bit and its
    /// block's valid count.
    #[inline]
    pub fn prefetch_invalidate(&self, ppa: Ppa) {
        let Some(word) = self.valid.get(ppa.idx() >> 6) else {
            return;
        };
        crate::host::prefetch(word);
        crate::host::prefetch(&self.blk_valid[self.math.block_of(ppa) as usize]);
    }

    /// Hints into cache what a program into `block` updates besides its page: the block's
    /// write pointer and valid count, its line's valid count and its program times. With
    /// `page`, the next page's OOB and valid bit too (reading the write pointer: best once an
    /// earlier call hinted it).
    #[inline]
    pub fn prefetch_program(&self, block: u32, page: bool) {
        let blk = block as usize;
        let Some(next) = self.blk_next.get(blk) else {
            return;
        };
        if page {
            if *next >= self.geo.pages_per_block {
                return;
            }
            let i = (block * self.geo.pages_per_block + *next) as usize;
            if let Some(oob) = self.oob.get(i) {
                crate::host::prefetch(oob);
                crate::host::prefetch(&self.valid[i >> 6]);
                if let Some(b) = &self.backfill {
                    b.prefetch_program(blk, i as u32);
                }
            }
            return;
        }
        crate::host::prefetch(next);
        crate::host::prefetch(&self.blk_valid[blk]);
        crate::host::prefetch(&self.line_valid[self.math.line_of_block(block) as usize]);
        if let Some(b) = &self.backfill {
            b.prefetch(blk);
        }
    }

    /// Whether `ppa` holds valid data.
    #[inline]
    pub fn is_valid(&self, ppa: Ppa) -> bool {
        let i = ppa.idx();
        i < self.oob.len() && self.valid[i >> 6] >> (i & 63) & 1 == 1
    }
    /// The OOB of a programmed page, without a timed read (for invariant checks and recovery
    /// scans in tests; FTLs must use [`Device::read`]).
    pub fn peek_oob(&self, ppa: Ppa) -> Option<Oob> {
        self.is_programmed(ppa).then(|| self.oob[ppa.idx()])
    }
    /// Pages invalidated since the device was made: lets GC policies skip re-scanning lines when
    /// nothing became invalid.
    #[inline]
    pub fn invalidations(&self) -> u64 {
        self.invalidations
    }
    /// Valid pages in a global block.
    #[inline]
    pub fn block_valid(&self, block: u32) -> u32 {
        self.blk_valid[block as usize]
    }
    /// Programmed pages in a global block (its write pointer).
    #[inline]
    pub fn block_written(&self, block: u32) -> u32 {
        self.blk_next[block as usize]
    }
    /// The block sequence number of a global block: how many blocks had been opened (first
    /// page programmed since an erase) when it was, itself included. Meaningful while it
    /// holds a page.
    #[inline]
    pub fn block_seq(&self, block: u32) -> u32 {
        self.blk_seq[block as usize]
    }
    /// Blocks opened so far (the last [`Device::block_seq`] handed out): with it, a block's
    /// age in blocks opened since.
    #[inline]
    pub fn blocks_opened(&self) -> u32 {
        self.opened
    }
    /// Erase count of a global block.
    #[inline]
    pub fn block_erases(&self, block: u32) -> u32 {
        self.blk_erases[block as usize]
    }
    /// Valid pages in a line.
    #[inline]
    pub fn line_valid(&self, line: u32) -> u32 {
        self.line_valid[line as usize]
    }
    /// Valid pages of every line.
    #[inline]
    pub fn lines_valid(&self) -> &[u32] {
        &self.line_valid
    }
    /// Arms the line alarms and lowers the alarm: from now on an invalidation that leaves line
    /// `l` with fewer than `below[l]` valid pages raises it (0: never). A GC that found no
    /// victim learns this way when a line it waits on has lost the pages it needed, rather than
    /// scanning every line again after every request.
    pub fn arm_line_alarms(&mut self, below: &[u32]) {
        self.line_alarm_below.copy_from_slice(below);
        self.line_alarm = false;
    }
    /// Whether an invalidation raised the alarm since [`Device::arm_line_alarms`].
    #[inline]
    pub fn line_alarm(&self) -> bool {
        self.line_alarm
    }
    /// When the LUN holding `ppa` is next idle (after its last booked operation; under
    /// `timing=backfill` it may have idle gaps before that).
    #[inline]
    pub fn lun_free_at(&self, ppa: Ppa) -> SimTime {
        SimTime(self.lun_busy[self.math.lun_of(ppa) as usize])
    }

    /// Reserves the LUN (and channel) for an operation issued at `t`; returns its completion.
    // Always inlined: every page operation passes here, and the extra mode test must not cost
    // FEMU's path a call.
    #[inline(always)]
    fn occupy(&mut self, ppa: Ppa, t: SimTime, array_ns: u64, access: Access) -> SimTime {
        let lun = self.math.lun_of(ppa) as usize;
        if self.xfer_ns == 0 {
            if let Some(b) = self.backfill.as_mut() {
                let blk = self.math.block_of(ppa) as usize;
                return SimTime(b.book(lun, &mut self.lun_busy[lun], blk, t.0, array_ns, access));
            }
            let start = t.0.max(self.lun_busy[lun]);
            let end = start + array_ns;
            self.lun_busy[lun] = end;
            return SimTime(end);
        }
        let ch = self.math.channel_of_lun(lun as u32) as usize;
        if self.channels.is_some() {
            return self.occupy_channel(lun, ch, ppa, t, array_ns, access);
        }
        let end = if matches!(access, Access::Read(_)) {
            // Read: array to register, then the register over the channel; the LUN is held
            // until its register is drained.
            let array_end = t.0.max(self.lun_busy[lun]) + array_ns;
            let xfer_end = array_end.max(self.ch_busy[ch]) + self.xfer_ns;
            self.ch_busy[ch] = xfer_end;
            xfer_end
        } else {
            // Program: data over the channel into the LUN's register, then the array program.
            let xfer_end = t.0.max(self.lun_busy[lun]).max(self.ch_busy[ch]) + self.xfer_ns;
            self.ch_busy[ch] = xfer_end;
            xfer_end + array_ns
        };
        self.lun_busy[lun] = end;
        SimTime(end)
    }

    /// `timing=backfill` with `channel_transfer=on`: the LUN's and the channel's timelines both
    /// fill their gaps. A read takes its LUN for the array read and the register's transfer
    /// (as if its channel were free then), and its transfer takes the channel's earliest gap
    /// from the array read's end; a program's data takes the channel's earliest gap from its
    /// issue, then the LUN programs; an erase moves no data. When the channel is busier than
    /// that, the LUN is taken to be free again at its booked end (an approximation; FEMU's rule
    /// holds the LUN until the register drains).
    #[inline(never)]
    fn occupy_channel(
        &mut self,
        lun: usize,
        ch: usize,
        ppa: Ppa,
        t: SimTime,
        array_ns: u64,
        access: Access,
    ) -> SimTime {
        let blk = self.math.block_of(ppa) as usize;
        let xfer = self.xfer_ns;
        let b = self.backfill.as_mut().expect("timing=backfill");
        let c = self.channels.as_mut().expect("channel timelines");
        let end = match access {
            Access::Read(_) => {
                let held = b.book(
                    lun,
                    &mut self.lun_busy[lun],
                    blk,
                    t.0,
                    array_ns + xfer,
                    access,
                );
                c.book_unordered(ch, &mut self.ch_busy[ch], held - xfer, xfer)
            }
            Access::Program(_) => {
                let landed = c.book_unordered(ch, &mut self.ch_busy[ch], t.0, xfer);
                b.book(lun, &mut self.lun_busy[lun], blk, landed, array_ns, access)
            }
            Access::Erase => b.book(lun, &mut self.lun_busy[lun], blk, t.0, array_ns, access),
        };
        SimTime(end)
    }

    /// Where an operation on `ppa` runs: its LUN, and the plane, line and page it joins other
    /// planes' operations by.
    #[inline]
    fn plane_at(&self, ppa: Ppa) -> planes::At {
        let (blk, page) = self.math.block_page(ppa);
        planes::At {
            lun: self.math.lun_of(ppa) as usize,
            plane: self.math.plane_of_block(blk),
            line: self.math.line_of_block(blk),
            page,
        }
    }

    /// Under `multi_plane=on`: the completion of the queued operation on another plane of
    /// `ppa`'s LUN that an operation of `kind` and `ns` issued at `t` joins, if it can join
    /// one (docs/device.md "Multi-plane operations"); it then takes no LUN time of its own.
    #[inline]
    fn join_planes(
        &mut self,
        kind: planes::Kind,
        ppa: Ppa,
        t: SimTime,
        ns: u64,
        access: Access,
    ) -> Option<SimTime> {
        self.planes.as_ref()?;
        let at = self.plane_at(ppa);
        let blk = self.math.block_of(ppa) as usize;
        let earliest = self
            .backfill
            .as_deref()
            .map_or(t.0, |b| b.issue(blk, access, t.0));
        let end = self.planes.as_mut()?.join(kind, at, earliest, ns)?;
        if let Some(b) = self.backfill.as_mut() {
            b.note(blk, access, end);
        }
        Some(SimTime(end))
    }

    /// Under `multi_plane=on`: an operation of `kind` and `ns` on `ppa` was booked on its own,
    /// completing at `done`; operations on other planes may join it.
    #[inline]
    fn note_planes(&mut self, kind: planes::Kind, ppa: Ppa, done: SimTime, ns: u64) {
        if self.planes.is_some() {
            let at = self.plane_at(ppa);
            if let Some(p) = self.planes.as_mut() {
                p.booked(kind, at, done.0 - ns, done.0);
            }
        }
    }

    /// Under an SLC cache: counts a valid page programmed, and whether a program of `ppa` for
    /// `cause` at `t` is taken in SLC mode — host data while the cache has room, after folding
    /// a page of the LUN first when it is full and `slc_when_full=fold`.
    #[inline(never)]
    fn admit_to_slc(&mut self, ppa: Ppa, cause: Cause, t: SimTime) -> bool {
        let lun = self.math.lun_of(ppa) as usize;
        let s = self.slc.as_mut().expect("an SLC cache");
        s.valid += 1;
        if cause != Cause::User {
            return false;
        }
        if s.fold_first() {
            if let Some(old) = s.peek(lun) {
                self.fold(lun, old, t, true);
            }
        }
        self.slc.as_mut().expect("an SLC cache").admit(ppa, lun)
    }

    /// Folds `ppa`'s data from SLC into its multi-bit location, issued at `t` on its LUN: an
    /// SLC read and the page's program (cause `slc_fold`). A page no longer valid (a recovery
    /// left it stale) just leaves SLC.
    fn fold(&mut self, lun: usize, ppa: Ppa, t: SimTime, for_room: bool) -> SimTime {
        let valid = self.is_valid(ppa);
        self.slc
            .as_mut()
            .expect("an SLC cache")
            .take(lun, ppa, valid, for_room);
        if !valid {
            return t;
        }
        let pg = self.math.page_in_block(ppa);
        let ns = self.cfg.timing.read_ns + self.program_ns[(pg % self.page_types) as usize];
        self.counters.reads[Cause::SlcFold as usize] += 1;
        self.counters.programs[Cause::SlcFold as usize] += 1;
        self.occupy_lun(lun, t, ns)
    }

    /// Folds SLC pages on every LUN idle before `t`, oldest first, as long as each fold ends by
    /// `t` (issued at the LUN's busy-until time: its idle time).
    fn fold_idle(&mut self, t: SimTime) {
        if self.power == Power::Lost || self.slc.as_ref().is_some_and(|s| s.is_empty()) {
            return;
        }
        // The shortest fold: a LUN busy until later than `t` less it has no time to fold.
        let types = self.page_types as usize;
        let shortest =
            self.cfg.timing.read_ns + self.program_ns[..types].iter().min().copied().unwrap_or(0);
        for lun in 0..self.lun_busy.len() {
            if self.lun_busy[lun] + shortest > t.0 {
                continue;
            }
            while let Some(ppa) = self.slc.as_mut().and_then(|s| s.peek(lun)) {
                let pg = self.math.page_in_block(ppa);
                let ns = self.cfg.timing.read_ns + self.program_ns[(pg % self.page_types) as usize];
                let at = self.lun_busy[lun];
                if at + ns > t.0 {
                    break;
                }
                self.fold(lun, ppa, SimTime(at), false);
            }
        }
    }

    /// `bytes` of a request's data cross the host link from `t` (`host_mb_s`; the controller
    /// calls it): returns when the transfer ends (`t` without a link). One transfer at a time;
    /// under `timing=backfill` a transfer may use the link's idle gaps, as reads complete out
    /// of order.
    pub fn host_transfer(&mut self, t: SimTime, bytes: u64) -> SimTime {
        let mb_s = self.cfg.controller.host_mb_s;
        if mb_s == 0 || bytes == 0 {
            return t;
        }
        let dur = (bytes * 1000).div_ceil(mb_s);
        match self.link.as_mut() {
            Some(l) => SimTime(l.book_unordered(0, &mut self.link_busy, t.0, dur)),
            None => {
                self.link_busy = t.0.max(self.link_busy) + dur;
                SimTime(self.link_busy)
            }
        }
    }

    /// Whether `ppa`'s program completes after `t` (known under `timing=backfill`, which
    /// orders a read after its page's program).
    #[inline(never)]
    fn in_flight(&self, ppa: Ppa, t: SimTime) -> bool {
        self.backfill.as_deref().is_some_and(|b| {
            b.issue(self.math.block_of(ppa) as usize, Access::Read(ppa.0), t.0) > t.0
        })
    }

    /// A host-path read of `ns` issued at `t` under `suspend=on`: ahead of the programs and
    /// erases queued on its LUN, suspending the one executing, when that is sooner than its
    /// normal booking (docs/device.md "Program and erase suspend").
    #[inline(never)]
    fn read_suspending(&mut self, ppa: Ppa, t: SimTime, ns: u64) -> SimTime {
        let lun = self.math.lun_of(ppa) as usize;
        let blk = self.math.block_of(ppa) as usize;
        let busy = self.lun_busy[lun];
        let (issue, normal) = match self.backfill.as_deref() {
            Some(b) => {
                let issue = b.issue(blk, Access::Read(ppa.0), t.0);
                (
                    issue,
                    b.gap_start(lun, issue, ns).unwrap_or(issue.max(busy)),
                )
            }
            None => (t.0, t.0.max(busy)),
        };
        let s = self.suspend.as_mut().expect("suspend=on");
        let Some(x) = s.read(lun, issue, ns, normal) else {
            let done = self.occupy(ppa, t, ns, Access::Read(ppa.0));
            let s = self.suspend.as_mut().expect("suspend=on");
            s.booked(lun, done.0 - ns, done.0, suspend::Kind::Read);
            return done;
        };
        self.lun_busy[lun] = (busy + x.charge).max(x.end);
        if let Some(b) = self.backfill.as_mut() {
            b.note(blk, Access::Read(ppa.0), x.end);
        }
        SimTime(x.end)
    }

    /// Reads a programmed page at `t`; returns its OOB and completion time.
    #[inline]
    pub fn read(
        &mut self,
        ppa: Ppa,
        cause: Cause,
        t: SimTime,
    ) -> Result<(Oob, SimTime), DeviceError> {
        self.check(ppa)?;
        if self.power == Power::Lost {
            return Err(DeviceError::PowerLost);
        }
        if !self.is_programmed(ppa) {
            return Err(DeviceError::ReadErased(ppa));
        }
        if self.buffered && self.in_flight(ppa, t) {
            self.in_flight_reads += 1;
            return Ok((self.oob[ppa.idx()], t));
        }
        self.counters.reads[cause as usize] += 1;
        let ns = match self.page_types {
            1 => self.read_ns[0],
            _ if self.slc.as_ref().is_some_and(|s| s.holds(ppa)) => {
                self.slc.as_mut().expect("checked").read();
                self.cfg.timing.read_ns
            }
            n => self.read_ns[(self.math.block_page(ppa).1 % n) as usize],
        };
        let access = Access::Read(ppa.0);
        if let Some(done) = self.join_planes(planes::Kind::Read, ppa, t, ns, access) {
            return Ok((self.oob[ppa.idx()], done));
        }
        let done = match self.suspend {
            Some(_) if matches!(cause, Cause::User | Cause::TransRead | Cause::Mispredict) => {
                self.read_suspending(ppa, t, ns)
            }
            _ => {
                let done = self.occupy(ppa, t, ns, access);
                if let Some(s) = self.suspend.as_mut() {
                    let lun = self.math.lun_of(ppa) as usize;
                    s.booked(lun, done.0 - ns, done.0, suspend::Kind::Read);
                }
                done
            }
        };
        self.note_planes(planes::Kind::Read, ppa, done, ns);
        Ok((self.oob[ppa.idx()], done))
    }

    /// Programs the next free page of its block at `t`, marking it valid; returns completion.
    ///
    /// `src` says where the payload comes from when payloads are kept (ignored otherwise).
    #[inline]
    pub fn program(
        &mut self,
        ppa: Ppa,
        oob: Oob,
        src: Src,
        cause: Cause,
        t: SimTime,
    ) -> Result<SimTime, DeviceError> {
        self.check(ppa)?;
        let (blk, pg) = self.math.block_page(ppa);
        let blk = blk as usize;
        if pg != self.blk_next[blk] {
            return Err(DeviceError::OutOfOrderProgram {
                ppa,
                expected: self.blk_next[blk],
                got: pg,
            });
        }
        if pg == 0 {
            self.opened += 1;
            self.blk_seq[blk] = self.opened;
        }
        if self.power != Power::On && self.power_check(cause)? {
            // In flight at the cut: the page is consumed but holds nothing readable.
            self.blk_next[blk] = pg + 1;
            self.oob[ppa.idx()] = Oob {
                tag: Oob::TORN,
                stamp: 0,
            };
            self.counters.programs[cause as usize] += 1;
            return Err(DeviceError::PowerLost);
        }
        self.blk_next[blk] = pg + 1;
        self.blk_valid[blk] += 1;
        self.line_valid[self.math.line_of_block(blk as u32) as usize] += 1;
        let i = ppa.idx();
        self.valid[i >> 6] |= 1 << (i & 63);
        self.oob[i] = oob;
        if oob.is_record() {
            self.copy_record(ppa, src)?;
        } else if let Some(lpn) = oob.lpn() {
            self.copies.programmed(lpn);
        }
        if let Some(p) = self.payload.as_mut() {
            p.on_program(ppa, oob, src)
                .map_err(|e| DeviceError::Payload(format!("program of {ppa:?}: {e}")))?;
        }
        self.counters.programs[cause as usize] += 1;
        let mut ns = match self.page_types {
            1 => self.program_ns[0],
            n => self.program_ns[(pg % n) as usize],
        };
        if self.slc.is_some() && self.admit_to_slc(ppa, cause, t) {
            ns = self.cfg.timing.program_ns;
        }
        let access = Access::Program(ppa.0);
        if let Some(done) = self.join_planes(planes::Kind::Program, ppa, t, ns, access) {
            return Ok(done);
        }
        let done = self.occupy(ppa, t, ns, access);
        self.note_planes(planes::Kind::Program, ppa, done, ns);
        let lun_of = self.math.lun_of(ppa) as usize;
        if let Some(s) = self.suspend.as_mut() {
            s.booked(lun_of, done.0 - ns, done.0, suspend::Kind::Program);
        }
        Ok(done)
    }

    /// Marks a valid page invalid (its data is superseded or trimmed). Costs no time.
    #[inline]
    pub fn invalidate(&mut self, ppa: Ppa) -> Result<(), DeviceError> {
        self.check(ppa)?;
        if self.power == Power::Lost {
            return Err(DeviceError::PowerLost);
        }
        let i = ppa.idx();
        let bit = 1u64 << (i & 63);
        if self.valid[i >> 6] & bit == 0 {
            return Err(DeviceError::InvalidateInvalid(ppa));
        }
        self.valid[i >> 6] &= !bit;
        self.invalidations += 1;
        if let Some(s) = self.slc.as_mut() {
            s.invalidated(ppa);
        }
        let blk = self.math.block_of(ppa);
        self.blk_valid[blk as usize] -= 1;
        let line = self.math.line_of_block(blk) as usize;
        self.line_valid[line] -= 1;
        self.line_alarm |= self.line_valid[line] < self.line_alarm_below[line];
        Ok(())
    }

    /// Erases a global block at `t`; returns completion. The block must hold no valid page.
    pub fn erase(&mut self, block: u32, cause: Cause, t: SimTime) -> Result<SimTime, DeviceError> {
        let b = block as usize;
        if b >= self.blk_next.len() {
            return Err(DeviceError::OutOfRange(Ppa(
                block.saturating_mul(self.geo.pages_per_block)
            )));
        }
        if self.blk_valid[b] != 0 {
            return Err(DeviceError::EraseValid {
                block,
                valid: self.blk_valid[b],
            });
        }
        if self.power != Power::On && self.power_check(cause)? {
            // In flight at the cut: every page of the block is left torn, and the block
            // unusable until it is erased again.
            if let Some(f) = self.fdp.as_mut() {
                f.erasing(&self.geo, block, &self.blk_next);
            }
            self.drop_records(block);
            self.erasing_copies(block);
            let ppb = self.geo.pages_per_block;
            let torn = Oob {
                tag: Oob::TORN,
                stamp: 0,
            };
            self.oob[(block * ppb) as usize..((block + 1) * ppb) as usize].fill(torn);
            if let Some(p) = self.payload.as_mut() {
                p.on_erase(Ppa(block * ppb), ppb);
            }
            self.blk_next[b] = ppb;
            self.forget_checkpointed(b);
            self.blk_erases[b] += 1;
            self.counters.erases[cause as usize] += 1;
            return Err(DeviceError::PowerLost);
        }
        let first = Ppa(block * self.geo.pages_per_block);
        if let Some(f) = self.fdp.as_mut() {
            f.erasing(&self.geo, block, &self.blk_next);
        }
        self.drop_records(block);
        self.erasing_copies(block);
        if let Some(p) = self.payload.as_mut() {
            p.on_erase(first, self.geo.pages_per_block);
        }
        self.blk_next[b] = 0;
        self.forget_checkpointed(b);
        self.blk_erases[b] += 1;
        self.counters.erases[cause as usize] += 1;
        let ns = self.cfg.timing.erase_ns;
        if let Some(done) = self.join_planes(planes::Kind::Erase, first, t, ns, Access::Erase) {
            return Ok(done);
        }
        let done = self.occupy(first, t, ns, Access::Erase);
        self.note_planes(planes::Kind::Erase, first, done, ns);
        let lun_of = self.math.lun_of(first) as usize;
        if let Some(s) = self.suspend.as_mut() {
            s.booked(lun_of, done.0 - ns, done.0, suspend::Kind::Erase);
        }
        Ok(done)
    }

    /// Erase counts over all blocks.
    pub fn wear(&self) -> Wear {
        let n = self.blk_erases.len().max(1);
        Wear {
            min: self.blk_erases.iter().copied().min().unwrap_or(0),
            mean: self.blk_erases.iter().map(|&e| e as f64).sum::<f64>() / n as f64,
            max: self.blk_erases.iter().copied().max().unwrap_or(0),
        }
    }

    /// The latest time any LUN is busy until (when all issued work is done).
    pub fn drained_at(&self) -> SimTime {
        SimTime(self.lun_busy.iter().copied().max().unwrap_or(0))
    }

    /// Heap bytes of simulator state (the per-page cost the benchmarks report).
    pub fn state_bytes(&self) -> usize {
        self.oob.capacity() * std::mem::size_of::<Oob>()
            + self.valid.capacity() * 8
            + (self.blk_next.capacity()
                + self.blk_valid.capacity()
                + self.blk_erases.capacity()
                + self.blk_seq.capacity()
                + self.ckpt_written.capacity())
                * 4
            + (self.line_valid.capacity() + self.line_alarm_below.capacity()) * 4
            + (self.lun_busy.capacity() + self.ch_busy.capacity()) * 8
            + self.backfill.as_ref().map_or(0, |b| b.state_bytes())
            + self.slc.as_ref().map_or(0, |s| s.state_bytes())
            + self.link.as_ref().map_or(0, |l| l.state_bytes())
            + self.fdp.as_ref().map_or(0, |f| f.state_bytes())
    }

    /// Checks that every block's and line's valid count matches the valid bitmap, and that no
    /// page beyond a block's write pointer is valid; with FDP, that placement kept its rules
    /// (docs/fdp.md).
    pub fn check_consistency(&self) -> Result<(), String> {
        let ppb = self.geo.pages_per_block;
        let mut lines = vec![0u32; self.line_valid.len()];
        for b in 0..self.blk_next.len() as u32 {
            let mut n = 0;
            for pg in 0..ppb {
                let ppa = Ppa(b * ppb + pg);
                if self.is_valid(ppa) {
                    if pg >= self.blk_next[b as usize] {
                        return Err(format!("{ppa:?} valid beyond its block's write pointer"));
                    }
                    n += 1;
                }
            }
            if n != self.blk_valid[b as usize] {
                return Err(format!(
                    "block {b}: valid count {} but bitmap has {n}",
                    self.blk_valid[b as usize]
                ));
            }
            lines[self.geo.line_of_block(b) as usize] += n;
        }
        if lines != self.line_valid {
            return Err("line valid counts differ from the bitmap".to_string());
        }
        match &self.fdp {
            Some(f) => f.check(&self.geo, &self.oob, &self.blk_next),
            None => Ok(()),
        }
    }
}

/// Latencies by page type, LSB first, from a cell's list (`uniform` for SLC's empty one).
fn per_page_type(list: &[u64], uniform: u64) -> [u64; 4] {
    std::array::from_fn(|i| list.get(i).copied().unwrap_or(uniform))
}

#[cfg(test)]
mod tests;
