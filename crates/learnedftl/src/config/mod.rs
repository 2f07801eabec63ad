//! Device configuration: geometry, timing and energy, with the presets of SPEC §3.1.

mod capacity;
mod cell;
mod fdp;
mod math;

pub use capacity::{default_logical_pages, format_capacity, largest_capacity, Capacity, Largest};
pub use cell::{Cell, SlcCache, SlcWhenFull};
pub use fdp::{FdpConfig, RuhType, FDP_KEYS, MAX_RUHS};
pub use math::{AddrMath, FastDiv, Stripe};

use crate::addr::{Ppa, PpaParts, Vppn};
use crate::error::{quote, ConfigError};
use crate::params::{keys, parse_word, Params};
use serde::Serialize;

/// Largest `page_size` accepted: NAND pages are 4-16 KiB, and a few pages this large already
/// make a logical space no workload covers in reasonable time.
pub const MAX_PAGE_SIZE: u32 = 64 << 10;
/// Largest `channels` accepted (SSDs have 8-32).
pub const MAX_CHANNELS: u32 = 1024;
/// Largest `luns_per_channel` accepted (SSDs have 1-16).
pub const MAX_LUNS_PER_CHANNEL: u32 = 1024;
/// Largest `planes_per_lun` accepted (dies have 1-6).
pub const MAX_PLANES_PER_LUN: u32 = 64;
/// Largest `pages_per_block` accepted (3D NAND blocks hold a few thousand).
pub const MAX_PAGES_PER_BLOCK: u32 = 1 << 16;

/// What the memory estimate ([`DeviceConfig::state_bytes`]) allows an FTL per logical page:
/// its page-level table (4 B) and whatever else it keeps per page or per TP. Every registered
/// FTL keeps at most 4.2 (`tests/state_per_page.rs`, docs/device.md "Memory").
pub const FTL_BYTES_PER_LPN: u64 = 5;
/// Free lines foreground GC keeps in reserve unless `gc_reserve_lines` says otherwise
/// (SPEC §3.5; the same for every FTL).
pub const DEFAULT_GC_RESERVE_LINES: u32 = 2;
/// Spare lines GC needs beside its reserve: one being written and one line's worth of invalid
/// pages for a victim to give back. With fewer (measured on `quick` with 2–3 spare lines and a
/// 2-line reserve), foreground GC finds no victim worth collecting: the demand-paged FTLs stop
/// with "device full" and the rest copy thousands of pages per host write.
pub const GC_WORKING_LINES: u32 = 2;

/// NAND geometry and logical capacity.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Geometry {
    /// Channels.
    pub channels: u32,
    /// LUNs (dies) per channel.
    pub luns_per_channel: u32,
    /// Planes per LUN.
    pub planes_per_lun: u32,
    /// Blocks per plane (= number of lines).
    pub blocks_per_plane: u32,
    /// Pages per block.
    pub pages_per_block: u32,
    /// Page size in bytes.
    pub page_size: u32,
    /// Out-of-band bytes per page.
    pub oob_size: u32,
    /// Logical pages exposed to the host.
    pub logical_pages: u64,
}

impl Geometry {
    /// LUNs in the device.
    #[inline]
    pub fn luns(&self) -> u32 {
        self.channels * self.luns_per_channel
    }
    /// Blocks in the device.
    #[inline]
    pub fn blocks(&self) -> u32 {
        self.luns() * self.planes_per_lun * self.blocks_per_plane
    }
    /// Pages in the device.
    #[inline]
    pub fn pages(&self) -> u64 {
        self.blocks() as u64 * self.pages_per_block as u64
    }
    /// Lines (superblocks): one block index across every LUN and plane.
    #[inline]
    pub fn lines(&self) -> u32 {
        self.blocks_per_plane
    }
    /// Blocks in one line.
    #[inline]
    pub fn blocks_per_line(&self) -> u32 {
        self.luns() * self.planes_per_lun
    }
    /// Pages in one line.
    #[inline]
    pub fn pages_per_line(&self) -> u32 {
        self.blocks_per_line() * self.pages_per_block
    }
    /// Whole lines the over-provisioning (physical minus logical pages) holds.
    pub fn spare_lines(&self) -> u64 {
        self.pages().saturating_sub(self.logical_pages) / self.pages_per_line() as u64
    }
    /// Mapping entries (8 B each) per translation page.
    #[inline]
    pub fn entries_per_tp(&self) -> u32 {
        self.page_size / 8
    }
    /// Translation pages needed to map the logical space.
    pub fn tps(&self) -> u32 {
        self.logical_pages.div_ceil(self.entries_per_tp() as u64) as u32
    }
    /// Physical bytes.
    pub fn physical_bytes(&self) -> u64 {
        self.pages() * self.page_size as u64
    }
    /// Logical bytes.
    pub fn logical_bytes(&self) -> u64 {
        self.logical_pages * self.page_size as u64
    }

    /// Global block index of a page.
    #[inline]
    pub fn block_of(&self, ppa: Ppa) -> u32 {
        ppa.0 / self.pages_per_block
    }
    /// Page index within its block.
    #[inline]
    pub fn page_in_block(&self, ppa: Ppa) -> u32 {
        ppa.0 % self.pages_per_block
    }
    /// Global LUN index (`ch * luns_per_channel + lun`) of a page.
    #[inline]
    pub fn lun_of(&self, ppa: Ppa) -> u32 {
        ppa.0 / (self.planes_per_lun * self.blocks_per_plane * self.pages_per_block)
    }
    /// Channel of a page.
    #[inline]
    pub fn channel_of(&self, ppa: Ppa) -> u32 {
        self.lun_of(ppa) / self.luns_per_channel
    }
    /// Line of a global block index.
    #[inline]
    pub fn line_of_block(&self, block: u32) -> u32 {
        block % self.blocks_per_plane
    }
    /// Line of a page.
    #[inline]
    pub fn line_of(&self, ppa: Ppa) -> u32 {
        self.line_of_block(self.block_of(ppa))
    }
    /// The `i`-th block of line `line` (in LUN/plane order).
    #[inline]
    pub fn block_in_line(&self, line: u32, i: u32) -> u32 {
        i * self.blocks_per_plane + line
    }

    /// Splits a PPA into its parts.
    pub fn ppa_parts(&self, ppa: Ppa) -> PpaParts {
        let mut x = ppa.0;
        let pg = x % self.pages_per_block;
        x /= self.pages_per_block;
        let blk = x % self.blocks_per_plane;
        x /= self.blocks_per_plane;
        let pl = x % self.planes_per_lun;
        x /= self.planes_per_lun;
        let lun = x % self.luns_per_channel;
        let ch = x / self.luns_per_channel;
        PpaParts {
            ch,
            lun,
            pl,
            blk,
            pg,
        }
    }

    /// Joins parts into a PPA.
    pub fn ppa_from_parts(&self, p: PpaParts) -> Ppa {
        Ppa(
            (((p.ch * self.luns_per_channel + p.lun) * self.planes_per_lun + p.pl)
                * self.blocks_per_plane
                + p.blk)
                * self.pages_per_block
                + p.pg,
        )
    }

    /// VPPN of a PPA: `ch + C·(lun + W·(pl + P·(page + N·block)))`.
    pub fn ppa_to_vppn(&self, ppa: Ppa) -> Vppn {
        let p = self.ppa_parts(ppa);
        Vppn(
            p.ch + self.channels
                * (p.lun
                    + self.luns_per_channel
                        * (p.pl + self.planes_per_lun * (p.pg + self.pages_per_block * p.blk))),
        )
    }

    /// PPA of a VPPN (inverse of [`Geometry::ppa_to_vppn`]).
    pub fn vppn_to_ppa(&self, v: Vppn) -> Ppa {
        let mut x = v.0;
        let ch = x % self.channels;
        x /= self.channels;
        let lun = x % self.luns_per_channel;
        x /= self.luns_per_channel;
        let pl = x % self.planes_per_lun;
        x /= self.planes_per_lun;
        let pg = x % self.pages_per_block;
        let blk = x / self.pages_per_block;
        self.ppa_from_parts(PpaParts {
            ch,
            lun,
            pl,
            blk,
            pg,
        })
    }

    /// The first VPPN of a line (a line's VPPNs are contiguous).
    #[inline]
    pub fn line_first_vppn(&self, line: u32) -> Vppn {
        Vppn(line * self.pages_per_line())
    }

    /// Checks the dimensions, page and OOB sizes and the page count: everything but the
    /// logical space, so that [`Geometry::pages`] and the rest cannot overflow.
    fn validate_shape(&self) -> Result<(), ConfigError> {
        for (field, v, max) in [
            ("channels", self.channels, MAX_CHANNELS),
            (
                "luns_per_channel",
                self.luns_per_channel,
                MAX_LUNS_PER_CHANNEL,
            ),
            ("planes_per_lun", self.planes_per_lun, MAX_PLANES_PER_LUN),
            ("blocks_per_plane", self.blocks_per_plane, u32::MAX),
            ("pages_per_block", self.pages_per_block, MAX_PAGES_PER_BLOCK),
        ] {
            if v == 0 {
                return Err(ConfigError::invalid(field, "must be at least 1"));
            }
            if v > max {
                return Err(ConfigError::invalid(
                    field,
                    format!("{v} is above the largest supported, {max}"),
                ));
            }
        }
        if self.page_size == 0 || self.page_size % 512 != 0 || self.page_size > MAX_PAGE_SIZE {
            return Err(ConfigError::invalid(
                "page_size",
                format!(
                    "{} is not a positive multiple of 512 up to {MAX_PAGE_SIZE}",
                    self.page_size
                ),
            ));
        }
        if self.oob_size > self.page_size {
            return Err(ConfigError::invalid(
                "oob_size",
                format!(
                    "{} B is larger than the page ({} B)",
                    self.oob_size, self.page_size
                ),
            ));
        }
        if self.oob_size < 8 {
            return Err(ConfigError::invalid(
                "oob_size",
                format!(
                    "{} B cannot hold an LPN and a write stamp (8 B)",
                    self.oob_size
                ),
            ));
        }
        let pages = (self.channels as u64)
            .checked_mul(self.luns_per_channel as u64)
            .and_then(|x| x.checked_mul(self.planes_per_lun as u64))
            .and_then(|x| x.checked_mul(self.blocks_per_plane as u64))
            .and_then(|x| x.checked_mul(self.pages_per_block as u64));
        match pages {
            Some(p) if p < u32::MAX as u64 => {}
            _ => {
                return Err(ConfigError::invalid(
                    "geometry",
                    "more than 2^32-1 physical pages; page addresses are 32-bit",
                ))
            }
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), ConfigError> {
        self.validate_shape()?;
        if self.logical_pages == 0 {
            return Err(ConfigError::invalid("logical_pages", "must be at least 1"));
        }
        if self.logical_pages >= self.pages() {
            return Err(ConfigError::invalid(
                "logical_pages",
                format!(
                    "{} is not below the {} physical pages: no room for over-provisioning",
                    self.logical_pages,
                    self.pages()
                ),
            ));
        }
        if self.lines() < 8 {
            return Err(ConfigError::invalid(
                "blocks_per_plane",
                format!(
                    "{} lines are too few for garbage collection (need at least 8)",
                    self.lines()
                ),
            ));
        }
        // The default reserve here; a larger `gc_reserve_lines` is checked by the GC policy.
        self.check_gc_room(DEFAULT_GC_RESERVE_LINES, "logical_pages")
    }

    /// Whether the spare (over-provisioned) space holds a GC reserve of `reserve` free lines
    /// and GC's [`GC_WORKING_LINES`]; the error names `field`.
    pub fn check_gc_room(&self, reserve: u32, field: &str) -> Result<(), ConfigError> {
        let need = reserve + GC_WORKING_LINES;
        if self.spare_lines() >= need as u64 {
            return Ok(());
        }
        Err(ConfigError::invalid(
            field,
            format!(
                "over-provisioning of {} pages holds {} whole line(s) of {} pages; garbage \
                 collection needs {need}: its reserve of {reserve} free lines, one line being \
                 written and one line of invalid pages to reclaim",
                self.pages().saturating_sub(self.logical_pages),
                self.spare_lines(),
                self.pages_per_line()
            ),
        ))
    }
}

/// How a LUN's timeline books an operation (`timing=`; docs/device.md "Timing").
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimingMode {
    /// FEMU's rule: start at `max(issue, busy_until)`; idle time before a later start is lost.
    /// Kept for reproducing FEMU-based results.
    Femu,
    /// Gap-filling: an operation may use an idle interval left before `busy_until`, as per-LUN
    /// command queues do (the default since 2026-11-23, SPEC §3.3).
    #[default]
    Backfill,
}

impl TimingMode {
    /// The `timing=` value naming this mode (reports print it).
    pub fn key(self) -> &'static str {
        match self {
            TimingMode::Femu => "femu",
            TimingMode::Backfill => "backfill",
        }
    }
}

/// Default bound on the idle gaps each LUN remembers under `timing=backfill`.
pub const DEFAULT_BACKFILL_GAPS: u32 = 64;

/// Flash operation latencies and the optional channel model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timing {
    /// How LUN timelines book operations (key `timing`).
    pub mode: TimingMode,
    /// Most idle gaps a LUN remembers under `timing=backfill` (the earliest is forgotten first).
    pub backfill_gaps: u32,
    /// Page read (array to register), ns: every page's with `cell=slc`, else a page's in SLC
    /// mode (the checkpoint area).
    pub read_ns: u64,
    /// Page program, ns (as `read_ns`).
    pub program_ns: u64,
    /// Bits per cell (`cell`; SLC, one page type, unless set).
    #[serde(skip_serializing_if = "Cell::is_slc")]
    pub cell: Cell,
    /// With more than one bit per cell: the read latency of each page type, LSB first, ns.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub read_ns_pages: Vec<u64>,
    /// With more than one bit per cell: the program latency of each page type, ns.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub program_ns_pages: Vec<u64>,
    /// Block erase, ns.
    pub erase_ns: u64,
    /// Multi-plane programs and erases (`multi_plane=on`): the same page (block) of a line on
    /// several planes of a LUN in one operation.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub multi_plane: bool,
    /// With `multi_plane`: reads on different planes of a LUN proceed together, at any page
    /// offset (`independent_plane_reads=on`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub independent_plane_reads: bool,
    /// Program and erase suspend (`suspend=on`; off, FEMU's model, unless set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspend: Option<SuspendConfig>,
    /// Model per-channel transfers (off = FEMU's model: LUN time only).
    pub channel_transfer: bool,
    /// Channel bandwidth in MB/s (10^6 B/s) when `channel_transfer` is on.
    pub channel_mb_s: u64,
}

impl Timing {
    /// The shortest operation latency (every page type's included).
    pub fn shortest_ns(&self) -> u64 {
        let typed = self.read_ns_pages.iter().chain(&self.program_ns_pages);
        typed.copied().fold(
            self.read_ns.min(self.program_ns).min(self.erase_ns),
            u64::min,
        )
    }

    /// Transfer time of one page over its channel, ns (0 when the channel model is off).
    pub fn transfer_ns(&self, page_size: u32) -> u64 {
        if self.channel_transfer {
            (page_size as u64 * 1000).div_ceil(self.channel_mb_s)
        } else {
            0
        }
    }
}

/// The host path a closed-loop job's requests take (`host_path`; docs/workloads.md "The
/// host's cost per I/O"): each names default costs, which the cost keys override.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostPath {
    /// No host cost: requests reach the device the instant a job issues them.
    #[default]
    None,
    /// SPDK's user-space, polled NVMe driver: a small CPU cost, no interrupt.
    Spdk,
    /// The kernel's io_uring path with interrupts: a larger CPU cost and an interrupt's
    /// wake-up before the job sees a completion.
    IoUring,
}

impl HostPath {
    /// Every path, by its `host_path=` value.
    pub const ALL: [HostPath; 3] = [HostPath::None, HostPath::Spdk, HostPath::IoUring];

    /// The `host_path=` value naming this path.
    pub fn key(self) -> &'static str {
        match self {
            HostPath::None => "none",
            HostPath::Spdk => "spdk",
            HostPath::IoUring => "io_uring",
        }
    }

    /// The path's default costs (docs/workloads.md gives their sources): io_uring's CPU time
    /// per I/O is what caps one job of the ICPE'24 Samsung 980 PRO measurements at 383 k IOPS
    /// (2.6 µs), its interrupt what its QD1 latency has over SPDK's beyond that; SPDK's is
    /// the order of its fio plugin's rate on one core (2.5 M IOPS: 0.4 µs), polled.
    pub fn costs(self) -> HostCost {
        let (submit_ns, complete_ns, irq_ns) = match self {
            HostPath::None => (0, 0, 0),
            HostPath::Spdk => (200, 200, 0),
            HostPath::IoUring => (1300, 1300, 4000),
        };
        HostCost {
            path: self,
            submit_ns,
            complete_ns,
            irq_ns,
        }
    }
}

/// The host's cost per I/O in closed-loop jobs (`host_path`, `host_submit_ns`,
/// `host_complete_ns`, `host_irq_ns`; docs/workloads.md "The host's cost per I/O"): each job's
/// thread submits its requests and takes their completions on its own core, one at a time.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HostCost {
    /// The path whose defaults the costs started from.
    pub path: HostPath,
    /// CPU time to submit one request, ns.
    pub submit_ns: u64,
    /// CPU time to take one completion, ns.
    pub complete_ns: u64,
    /// Time from the device's completion to the job's thread running (an interrupt and a
    /// wake-up), ns: latency, not CPU time.
    pub irq_ns: u64,
}

impl HostCost {
    /// Whether the host costs anything (off: requests reach the device as jobs issue them).
    pub fn is_on(&self) -> bool {
        self.submit_ns + self.complete_ns + self.irq_ns > 0
    }

    /// Whether it costs nothing (reports then leave it out).
    pub fn is_off(&self) -> bool {
        !self.is_on()
    }

    /// What a completion costs the job after the device's: the wake-up, then the CPU time.
    pub fn completion_ns(&self) -> u64 {
        self.irq_ns + self.complete_ns
    }

    /// One line for people describing the host's cost, when it has one.
    pub fn describe(&self) -> Option<String> {
        self.is_on().then(|| {
            format!(
                "host: path {}, per I/O {} ns to submit, {} ns to complete, {} ns interrupt",
                self.path.key(),
                self.submit_ns,
                self.complete_ns,
                self.irq_ns
            )
        })
    }
}

/// Program and erase suspend (`suspend=on`; docs/device.md "Program and erase suspend").
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SuspendConfig {
    /// Time to suspend a program before a read can start, ns.
    pub program_ns: u64,
    /// Time to suspend an erase, ns.
    pub erase_ns: u64,
    /// Time to resume the suspended operation after the read, ns.
    pub resume_ns: u64,
    /// Times one program or erase may be suspended, at most.
    pub max: u32,
}

impl SuspendConfig {
    /// MQSim's defaults (`Suspend_Program_Time` 100 µs, `Suspend_Erase_Time` 700 µs in its
    /// `Flash_Parameter_Set`); no resume cost; at most 4 suspensions.
    pub fn defaults() -> SuspendConfig {
        SuspendConfig {
            program_ns: 100_000,
            erase_ns: 700_000,
            resume_ns: 0,
            max: 4,
        }
    }
}

/// When the controller's write buffer hands its pages to the FTL (`write_buffer_drain`;
/// docs/device.md "The controller").
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DrainPolicy {
    /// After a write leaves more than `write_buffer_watermark` of the buffer full, the oldest
    /// pages drain until it is back at the mark.
    #[default]
    Watermark,
    /// Whenever a request finds every LUN idle, the whole buffer drains; otherwise only when
    /// a write needs room.
    Idle,
    /// Only when a write needs room (and at a FLUSH, a power cut with protection, or while
    /// the device settles).
    Full,
}

impl DrainPolicy {
    /// The `write_buffer_drain=` value naming this policy.
    pub fn key(self) -> &'static str {
        match self {
            DrainPolicy::Watermark => "watermark",
            DrainPolicy::Idle => "idle",
            DrainPolicy::Full => "full",
        }
    }
}

/// What the controller does with a FLUSH (and the flush a FUA adds): `flush=` (docs/power.md
/// "Misbehaving drives"). Drives that break the contract exist (FAST'13 found most of 15
/// consumer SSDs losing or corrupting data at a power cut); these emulate them on purpose.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlushMode {
    /// A FLUSH completes once every acknowledged write is durable.
    #[default]
    Honor,
    /// A FLUSH completes at once and makes nothing durable; the write buffer drains as it
    /// otherwise would.
    Ignore,
    /// As `ignore`, and the write buffer drains its newest pages first, so a write issued
    /// after a FLUSH may be durable while one before it is lost.
    Reorder,
}

impl FlushMode {
    /// The `flush=` value naming this mode.
    pub fn key(self) -> &'static str {
        match self {
            FlushMode::Honor => "honor",
            FlushMode::Ignore => "ignore",
            FlushMode::Reorder => "reorder",
        }
    }

    /// Whether FLUSHes are honoured (the default).
    pub fn is_honor(&self) -> bool {
        *self == FlushMode::Honor
    }
}

/// The controller between the host and the FTL (docs/device.md "The controller"): a
/// per-command firmware cost and a write buffer in the controller's own DRAM. All off by
/// default (every preset): FEMU's model has neither.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Controller {
    /// Write-buffer bytes (`write_buffer`; 0: none, writes go straight to the FTL).
    pub write_buffer: u64,
    /// When buffered pages drain to the FTL.
    pub drain: DrainPolicy,
    /// Fill fraction above which `drain=watermark` drains.
    pub watermark: f64,
    /// Firmware time per host command, ns, before the FTL sees it (`cmd_overhead_ns`).
    pub cmd_overhead_ns: u64,
    /// The host link's bandwidth, MB/s (`host_mb_s`; 0: not modelled, transfers take no
    /// time): every request's data crosses it, one transfer at a time.
    pub host_mb_s: u64,
    /// What a FLUSH does (`flush`; honoured unless set).
    #[serde(skip_serializing_if = "FlushMode::is_honor")]
    pub flush: FlushMode,
    /// A buffered page is handed to the FTL at the first request arriving this long after its
    /// acknowledgement (`write_buffer_max_age_ns`; 0: no limit): the window in which an
    /// acknowledged write can be lost at a power cut, whatever FLUSH does.
    #[serde(skip_serializing_if = "is_zero")]
    pub max_age_ns: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

impl Controller {
    /// Default `write_buffer_watermark`.
    pub const DEFAULT_WATERMARK: f64 = 0.5;

    /// Whether any part is on (off: the FTL sees host requests as they arrive).
    pub fn is_on(&self) -> bool {
        self.write_buffer > 0
            || self.cmd_overhead_ns > 0
            || self.host_mb_s > 0
            || !self.flush.is_honor()
    }

    /// Whether every part is off (reports then leave the block out).
    pub fn is_off(&self) -> bool {
        !self.is_on()
    }

    /// `base` with the controller keys of `params` applied (and removed from it), checked.
    fn from_params(params: &mut Params, base: Controller) -> Result<Controller, ConfigError> {
        let mut c = base;
        // The drain keys are taken (and checked) with or without a buffer: they describe one.
        c.write_buffer = params.take_size_or(&WRITE_BUFFER, c.write_buffer)?;
        c.drain = parse_word(
            "write_buffer_drain",
            &params.take_str_or(&WRITE_BUFFER_DRAIN, c.drain.key()),
            &[
                ("watermark", DrainPolicy::Watermark),
                ("idle", DrainPolicy::Idle),
                ("full", DrainPolicy::Full),
            ],
        )?;
        c.watermark = params.take_or(&WRITE_BUFFER_WATERMARK, c.watermark)?;
        if !(c.watermark >= 0.0 && c.watermark < 1.0) {
            return Err(ConfigError::invalid(
                "write_buffer_watermark",
                format!("{} is not in [0, 1)", c.watermark),
            ));
        }
        c.cmd_overhead_ns = params.take_or(&CMD_OVERHEAD_NS, c.cmd_overhead_ns)?;
        c.host_mb_s = params.take_or(&HOST_MB_S, c.host_mb_s)?;
        c.flush = parse_word(
            "flush",
            &params.take_str_or(&FLUSH, c.flush.key()),
            &[
                ("honor", FlushMode::Honor),
                ("ignore", FlushMode::Ignore),
                ("reorder", FlushMode::Reorder),
            ],
        )?;
        c.max_age_ns = params.take_or(&WRITE_BUFFER_MAX_AGE_NS, c.max_age_ns)?;
        Ok(c)
    }

    /// One line for people describing the controller, when a part is on (`power_loss_protection`
    /// says which cache contract a write buffer keeps).
    pub fn describe(&self, power_loss_protection: bool) -> Option<String> {
        if self.is_off() {
            return None;
        }
        let mut parts = Vec::new();
        if self.write_buffer > 0 {
            let drain = match self.drain {
                DrainPolicy::Watermark => format!("watermark {}", self.watermark),
                d => d.key().to_string(),
            };
            parts.push(format!(
                "write buffer {} (drain={drain}; {})",
                crate::units::human_bytes(self.write_buffer),
                if power_loss_protection {
                    "power-loss protected: nothing acknowledged is lost"
                } else {
                    "volatile: writes not flushed are lost at a power cut"
                }
            ));
        }
        if self.cmd_overhead_ns > 0 {
            parts.push(format!("{} ns per command", self.cmd_overhead_ns));
        }
        if self.host_mb_s > 0 {
            parts.push(format!("host link {} MB/s", self.host_mb_s));
        }
        if self.max_age_ns > 0 {
            parts.push(format!(
                "buffered pages written within {} ms",
                self.max_age_ns as f64 / 1e6
            ));
        }
        match self.flush {
            FlushMode::Honor => {}
            FlushMode::Ignore => parts.push("FLUSH ignored (misbehaving on purpose)".into()),
            FlushMode::Reorder => parts.push(
                "FLUSH ignored, newest buffered pages written first (misbehaving on purpose)"
                    .into(),
            ),
        }
        Some(format!("controller: {}", parts.join(", ")))
    }

    /// The write buffer's capacity in pages of `page_size` bytes (0: no buffer).
    pub fn buffer_pages(&self, page_size: u32) -> u64 {
        self.write_buffer / page_size as u64
    }
}

/// Energy per operation, µJ (defaults from the LearnedFTL paper's energy counters).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Energy {
    /// Per page read.
    pub read_uj: f64,
    /// Per page program.
    pub program_uj: f64,
    /// Per block erase.
    pub erase_uj: f64,
}

/// Everything the device model needs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceConfig {
    /// Preset the configuration started from.
    pub preset: String,
    /// Geometry.
    pub geometry: Geometry,
    /// Timing.
    pub timing: Timing,
    /// Energy.
    pub energy: Energy,
    /// Keep page payloads (emulator mode).
    pub payloads: bool,
    /// Power-loss protection (`power_loss_protection=on`): at a power cut the capacitors let
    /// the FTL program its volatile buffers, so no acknowledged write is lost (docs/power.md).
    pub power_loss_protection: bool,
    /// Host page writes between two mapping checkpoints (`checkpoint_every=N`; 0, the
    /// default: none, and recovery scans every programmed page). Each checkpoint writes the
    /// FTL's mapping DRAM to a checkpoint area, and recovery then scans only what was
    /// programmed since (docs/power.md "Checkpoints").
    pub checkpoint_every: u64,
    /// The hybrid SLC cache (off unless set).
    #[serde(skip_serializing_if = "SlcCache::is_off")]
    pub slc: SlcCache,
    /// The host's cost per I/O in closed-loop jobs (none unless set).
    #[serde(skip_serializing_if = "HostCost::is_off")]
    pub host: HostCost,
    /// The controller's write buffer and command cost (all off unless set).
    #[serde(skip_serializing_if = "Controller::is_off")]
    pub controller: Controller,
    /// NVMe Flexible Data Placement (off unless `fdp_ruhs` is set; docs/fdp.md).
    #[serde(skip_serializing_if = "FdpConfig::is_off")]
    pub fdp: FdpConfig,
    /// The logical capacity asked for with `--capacity`, bytes, which chose
    /// `geometry.blocks_per_plane` ([`Capacity`]); absent from JSON when none was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<u64>,
}

keys! {
    /// The device's keys ([`DeviceConfig::from_params`]); defaults are the preset's.
    pub static DEVICE_KEYS = "device", "the flash device: geometry, timing, energy, data, power";
    CHANNELS = "channels" [""] "flash channels";
    LUNS_PER_CHANNEL = "luns_per_channel" [""] "LUNs (dies) per channel, the units that work in parallel";
    PLANES_PER_LUN = "planes_per_lun" [""] "planes per LUN";
    BLOCKS_PER_PLANE = "blocks_per_plane" [""] "blocks per plane = lines (a line is one block index across every LUN and plane)";
    PAGES_PER_BLOCK = "pages_per_block" [""] "pages per block";
    PAGE_SIZE = "page_size" ["B"] "page size, a multiple of 512";
    OOB_SIZE = "oob_size" ["B"] "out-of-band bytes per page (LPN and write stamp; LeaFTL's neighbours)";
    LOGICAL_RATIO = "logical_ratio" ["of the physical pages"] "logical space as a fraction of the physical pages, instead of logical_pages";
    LOGICAL_PAGES = "logical_pages" ["pages"] "logical pages the host sees (15/16 of the physical pages unless given)";
    READ_NS = "read_ns" ["ns"] "page read latency (array to register): every page's with cell=slc, else SLC mode's";
    PROGRAM_NS = "program_ns" ["ns"] "page program latency: every page's with cell=slc, else SLC mode's";
    CELL = "cell" ["slc|mlc|tlc|qlc"] "bits per cell: a block's pages cycle through that many page types (LSB, CSB, MSB, ...), each with its own latencies";
    READ_NS_PAGES = "read_ns_pages" ["ns,ns,..."] "with cell=mlc|tlc|qlc: the read latency of each page type, LSB first (default: FEMU's table for the cell; TLC's shown)" only with "cell=tlc";
    PROGRAM_NS_PAGES = "program_ns_pages" ["ns,ns,..."] "with cell=mlc|tlc|qlc: the program latency of each page type, LSB first (default: FEMU's table for the cell; TLC's shown)" only with "cell=tlc";
    ERASE_NS = "erase_ns" ["ns"] "block erase latency";
    SLC_CACHE = "slc_cache" ["B or %"] "static hybrid SLC cache, in bytes or as a share of the logical capacity: host data is programmed in SLC mode first and folded later (needs cell=mlc|tlc|qlc)";
    SLC_CACHE_DYNAMIC = "slc_cache_dynamic" ["on/off"] "add the pages holding no valid data, in SLC mode, to the SLC cache (it shrinks as the drive fills)";
    SLC_WHEN_FULL = "slc_when_full" ["direct|fold"] "a host program that finds the SLC cache full goes to the multi-bit cells, or waits for a fold";
    MULTI_PLANE = "multi_plane" ["on/off"] "programs (erases) of the same page (block) of a line on several planes of a LUN run as one operation";
    INDEPENDENT_PLANE_READS = "independent_plane_reads" ["on/off"] "reads on different planes of a LUN run together at any page offset" only with "multi_plane=on";
    SUSPEND = "suspend" ["on/off"] "host reads go ahead of queued programs and erases, and suspend the one their LUN is executing";
    SUSPEND_PROGRAM_NS = "suspend_program_ns" ["ns"] "time to suspend a program before the read starts (MQSim's default)" only with "suspend=on";
    SUSPEND_ERASE_NS = "suspend_erase_ns" ["ns"] "time to suspend an erase before the read starts (MQSim's default)" only with "suspend=on";
    RESUME_NS = "resume_ns" ["ns"] "time to resume the suspended operation after the read" only with "suspend=on";
    SUSPEND_MAX = "suspend_max" ["suspensions"] "times one program or erase may be suspended, at most" only with "suspend=on";
    CHANNEL_MB_S = "channel_mb_s" ["MB/s"] "channel bandwidth, with channel_transfer=on";
    CHANNEL_TRANSFER = "channel_transfer" ["on/off"] "model each page's transfer over its channel";
    TIMING = "timing" ["backfill|femu"] "how a LUN books operations: backfill fills its idle gaps, femu is FEMU's busy-until rule";
    BACKFILL_GAPS = "backfill_gaps" ["gaps"] "idle gaps each LUN remembers for gap filling" only with "timing=backfill";
    READ_UJ = "read_uj" ["µJ"] "energy per page read";
    PROGRAM_UJ = "program_uj" ["µJ"] "energy per page program";
    ERASE_UJ = "erase_uj" ["µJ"] "energy per block erase";
    PAYLOADS = "payloads" ["on/off"] "keep page data (emulator mode; serve and check turn it on)";
    POWER_LOSS_PROTECTION = "power_loss_protection" ["on/off"] "capacitors let the FTL program its volatile buffers at a power cut";
    CHECKPOINT_EVERY = "checkpoint_every" ["host page writes"] "write a mapping checkpoint every N host page writes (0: never; recovery then scans every page)";
}

keys! {
    /// The controller's keys (docs/device.md "The controller").
    pub static CONTROLLER_KEYS = "controller", "the controller above the FTL: write buffer, FLUSH, command cost";
    WRITE_BUFFER = "write_buffer" ["B"] "write buffer in the controller's DRAM (0: none); a write completes once buffered";
    WRITE_BUFFER_DRAIN = "write_buffer_drain" ["watermark|idle|full"] "with a write_buffer: when buffered pages go to the FTL (above the watermark, when the LUNs idle, or only for room)";
    WRITE_BUFFER_WATERMARK = "write_buffer_watermark" ["of the buffer"] "with a write_buffer and drain=watermark: the fill above which it drains, down to it";
    CMD_OVERHEAD_NS = "cmd_overhead_ns" ["ns"] "firmware time per host command before the FTL sees it";
    HOST_MB_S = "host_mb_s" ["MB/s"] "host link bandwidth (0: transfers take no time); every request's data crosses it, one transfer at a time";
    FLUSH = "flush" ["honor|ignore|reorder"] "what a FLUSH (and FUA) does: honor it, ignore it, or ignore it and write the newest buffered pages first (misbehaving drives, on purpose)";
    WRITE_BUFFER_MAX_AGE_NS = "write_buffer_max_age_ns" ["ns"] "with a write_buffer: a buffered page goes to the FTL at the first request this long after its acknowledgement (0: no limit); bounds what a cut can lose";
}

/// The suspend keys of `params` applied to `base` (and removed): `None` when suspend is off.
fn suspend_from_params(
    params: &mut Params,
    base: Option<SuspendConfig>,
) -> Result<Option<SuspendConfig>, ConfigError> {
    let on = params.take_bool_or(&SUSPEND, base.is_some())?;
    let keys = [
        &SUSPEND_PROGRAM_NS,
        &SUSPEND_ERASE_NS,
        &RESUME_NS,
        &SUSPEND_MAX,
    ];
    if !on {
        if let Some(k) = keys.into_iter().find(|k| params.contains(k)) {
            return Err(ConfigError::invalid(
                k.name(),
                "only applies with suspend=on",
            ));
        }
        return Ok(None);
    }
    let mut s = base.unwrap_or_else(SuspendConfig::defaults);
    s.program_ns = params.take_or(&SUSPEND_PROGRAM_NS, s.program_ns)?;
    s.erase_ns = params.take_or(&SUSPEND_ERASE_NS, s.erase_ns)?;
    s.resume_ns = params.take_or(&RESUME_NS, s.resume_ns)?;
    s.max = params.take_or(&SUSPEND_MAX, s.max)?;
    Ok(Some(s))
}

keys! {
    /// The host's keys (docs/workloads.md "The host's cost per I/O").
    pub static HOST_KEYS = "host", "the host's cost per I/O in closed-loop jobs (a core per job)";
    HOST_PATH = "host_path" ["none|spdk|io_uring"] "the host path's default costs per I/O (spdk: polled; io_uring: with an interrupt); the keys below override them";
    HOST_SUBMIT_NS = "host_submit_ns" ["ns"] "CPU time a job's thread spends submitting one request";
    HOST_COMPLETE_NS = "host_complete_ns" ["ns"] "CPU time a job's thread spends taking one completion";
    HOST_IRQ_NS = "host_irq_ns" ["ns"] "time from the device's completion to the job's thread taking it (interrupt and wake-up; no CPU time)";
}

/// The host keys of `params` applied to `base` (and removed): a `host_path` other than the
/// base's replaces every cost with its own, and each cost key then overrides one.
fn host_from_params(params: &mut Params, base: HostCost) -> Result<HostCost, ConfigError> {
    let path = params.take_str_or(&HOST_PATH, base.path.key());
    let mut h = match HostPath::ALL.into_iter().find(|p| p.key() == path) {
        Some(p) if p == base.path => base,
        Some(p) => p.costs(),
        None => {
            return Err(ConfigError::invalid(
                "host_path",
                format!("{}: expected none, spdk or io_uring", quote(&path)),
            ))
        }
    };
    h.submit_ns = params.take_or(&HOST_SUBMIT_NS, h.submit_ns)?;
    h.complete_ns = params.take_or(&HOST_COMPLETE_NS, h.complete_ns)?;
    h.irq_ns = params.take_or(&HOST_IRQ_NS, h.irq_ns)?;
    Ok(h)
}

/// Names of the built-in presets: SPEC §3.1's three, then the drive presets written as keys
/// ([`DRIVE_PRESETS`]).
pub const PRESETS: &[&str] = &["paper", "quick", "tiny", "980pro"];

/// The drive presets shipped in the binary: `--set` keys on a base preset, one `key=value` a
/// line (`crates/learnedftl/presets/NAME.preset`; docs/device.md "Drive presets"). A user's own
/// is `--preset path/to/file.preset`.
pub const DRIVE_PRESETS: [(&str, &str); 1] =
    [("980pro", include_str!("../../presets/980pro.preset"))];

/// A drive preset's text, by name (a shipped one) or path (a name ending in `.preset` or
/// holding a `/`); `None` for a name that is neither.
fn drive_preset_text(name: &str) -> Result<Option<String>, ConfigError> {
    if let Some((_, text)) = DRIVE_PRESETS.iter().find(|(n, _)| *n == name) {
        return Ok(Some(text.to_string()));
    }
    if name.ends_with(".preset") || name.contains('/') {
        return std::fs::read_to_string(name)
            .map(Some)
            .map_err(|e| ConfigError::invalid("preset", format!("{}: {e}", quote(name))));
    }
    Ok(None)
}

/// A `key=value` of a drive preset, and its origin (the preset and line).
struct PresetKey {
    key: String,
    value: String,
    origin: String,
}

/// A drive preset's base preset and its assignments.
fn parse_drive_preset(name: &str, text: &str) -> Result<(String, Vec<PresetKey>), ConfigError> {
    let mut base = None;
    let mut keys = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let origin = format!("preset {name} line {}", i + 1);
        let Some((k, v)) = line.split_once('=') else {
            return Err(ConfigError::invalid(
                "preset",
                format!("{origin}: {} is not key=value", quote(line)),
            ));
        };
        let (k, v) = (k.trim(), v.trim());
        if k == "base" {
            if !PRESETS.contains(&v) || drive_preset_text(v)?.is_some() {
                return Err(ConfigError::invalid(
                    "preset",
                    format!("{origin}: base={v}: the base is paper, quick or tiny"),
                ));
            }
            base = Some(v.to_string());
        } else if keys.iter().any(|p: &PresetKey| p.key == k) {
            return Err(ConfigError::invalid(
                "preset",
                format!("{origin}: {k} is given twice"),
            ));
        } else {
            keys.push(PresetKey {
                key: k.to_string(),
                value: v.to_string(),
                origin,
            });
        }
    }
    let base = base.ok_or_else(|| {
        ConfigError::invalid(
            "preset",
            format!("preset {name}: no base= line (paper, quick or tiny)"),
        )
    })?;
    Ok((base, keys))
}

impl DeviceConfig {
    /// One of the presets of SPEC §3.1, or a drive preset ([`DRIVE_PRESETS`], or a file).
    pub fn preset(name: &str) -> Result<Self, ConfigError> {
        if drive_preset_text(name)?.is_some() {
            return Self::build(name, None, &mut Params::new());
        }
        let (ch, luns, blocks, pages) = match name {
            "paper" => (8, 8, 256, 512),
            "quick" => (8, 8, 256, 64),
            "tiny" => (4, 2, 64, 64),
            _ => return Err(ConfigError::UnknownPreset(name.to_string())),
        };
        let mut geometry = Geometry {
            channels: ch,
            luns_per_channel: luns,
            planes_per_lun: 1,
            blocks_per_plane: blocks,
            pages_per_block: pages,
            page_size: 4096,
            oob_size: 128,
            logical_pages: 0,
        };
        geometry.logical_pages = default_logical_pages(geometry.pages());
        Ok(DeviceConfig {
            preset: name.to_string(),
            geometry,
            timing: Timing {
                mode: TimingMode::Backfill,
                backfill_gaps: DEFAULT_BACKFILL_GAPS,
                read_ns: 40_000,
                program_ns: 200_000,
                cell: Cell::Slc,
                read_ns_pages: Vec::new(),
                program_ns_pages: Vec::new(),
                erase_ns: 2_000_000,
                multi_plane: false,
                independent_plane_reads: false,
                suspend: None,
                channel_transfer: false,
                channel_mb_s: 800,
            },
            energy: Energy {
                read_uj: 3.5,
                program_uj: 16.7,
                erase_uj: 132.0,
            },
            payloads: false,
            power_loss_protection: false,
            checkpoint_every: 0,
            slc: SlcCache::default(),
            host: HostCost::default(),
            controller: Controller {
                watermark: Controller::DEFAULT_WATERMARK,
                ..Controller::default()
            },
            fdp: FdpConfig::default(),
            capacity: None,
        })
    }

    /// A preset with the device keys of `params` applied (and removed from it), validated.
    ///
    /// Keys: the geometry fields, `logical_ratio` (logical / physical, replaces `logical_pages`),
    /// the timing fields (`timing=femu|backfill` sets `mode`), the energy fields, `payloads`,
    /// `power_loss_protection` and `checkpoint_every`.
    pub fn from_params(preset: &str, params: &mut Params) -> Result<Self, ConfigError> {
        Self::build(preset, None, params)
    }

    /// [`DeviceConfig::from_params`], with the blocks per plane chosen by `capacity` when it
    /// is given (after the other geometry keys; the caller refuses `blocks_per_plane` with it).
    fn build(
        preset: &str,
        capacity: Option<&Capacity>,
        params: &mut Params,
    ) -> Result<Self, ConfigError> {
        if let Some(text) = drive_preset_text(preset)? {
            // The drive preset's keys under the caller's: a key given both ways is the
            // caller's, and `--capacity` sizes the device itself.
            let (base, keys) = parse_drive_preset(preset, &text)?;
            let given: Vec<String> = params.keys().map(str::to_string).collect();
            let has = |k: &str| given.iter().any(|g| g == k);
            let mut applied = Vec::new();
            for PresetKey { key, value, origin } in keys {
                let k = key.as_str();
                let sized = capacity.is_some() && (k == "blocks_per_plane" || k == "logical_pages");
                let ratio_given = k == "logical_ratio" && has("logical_pages");
                if !has(k) && !sized && !ratio_given {
                    params.insert(k, &value, &origin);
                    applied.push((key, value));
                }
            }
            let mut c = Self::build(&base, capacity, params)?;
            // The preset's values are its defaults (`learnedftl params --preset NAME`).
            for (k, v) in applied {
                params.set_default(&k, &v);
            }
            c.preset = preset.to_string();
            return Ok(c);
        }
        let mut c = Self::preset(preset)?;
        let g = &mut c.geometry;
        let mut geometry_changed = false;
        for (key, field) in [
            (&CHANNELS, &mut g.channels),
            (&LUNS_PER_CHANNEL, &mut g.luns_per_channel),
            (&PLANES_PER_LUN, &mut g.planes_per_lun),
            (&BLOCKS_PER_PLANE, &mut g.blocks_per_plane),
            (&PAGES_PER_BLOCK, &mut g.pages_per_block),
            (&PAGE_SIZE, &mut g.page_size),
            (&OOB_SIZE, &mut g.oob_size),
        ] {
            geometry_changed |= params.contains(key);
            *field = params.take_or(key, *field)?;
        }
        if let Some(cap) = capacity {
            // The other dimensions first (with one block per plane), then the size.
            g.blocks_per_plane = 1;
            g.validate_shape()?;
            g.blocks_per_plane = cap.blocks_per_plane(g)?;
            geometry_changed = true;
        }
        // The logical space is derived from the page count: check what it rests on first.
        g.validate_shape()?;
        let ratio = params.take::<f64>(&LOGICAL_RATIO)?;
        if ratio.is_some() && params.contains(&LOGICAL_PAGES) {
            return Err(ConfigError::invalid(
                "logical_ratio",
                "give logical_ratio or logical_pages, not both",
            ));
        }
        g.logical_pages = match ratio {
            Some(r) => {
                if !(r > 0.0 && r < 1.0) {
                    return Err(ConfigError::invalid(
                        "logical_ratio",
                        format!("{r} is not strictly between 0 and 1"),
                    ));
                }
                g.logical_pages = (g.pages() as f64 * r) as u64;
                // Its faults are the ratio's: name the key that was given.
                g.validate().map_err(|e| match e {
                    ConfigError::Invalid { field, reason } if field == "logical_pages" => {
                        ConfigError::invalid(
                            "logical_ratio",
                            format!("{r} makes {} logical pages: {reason}", g.logical_pages),
                        )
                    }
                    e => e,
                })?;
                g.logical_pages
            }
            None => {
                let derived = if geometry_changed {
                    default_logical_pages(g.pages())
                } else {
                    g.logical_pages
                };
                params.take_or(&LOGICAL_PAGES, derived)?
            }
        };
        let t = &mut c.timing;
        for (key, field) in [
            (&READ_NS, &mut t.read_ns),
            (&PROGRAM_NS, &mut t.program_ns),
            (&ERASE_NS, &mut t.erase_ns),
            (&CHANNEL_MB_S, &mut t.channel_mb_s),
        ] {
            *field = params.take_or(key, *field)?;
        }
        t.cell = Cell::parse(&params.take_str_or(&CELL, t.cell.key()))?;
        if t.cell.is_slc() {
            for key in [&READ_NS_PAGES, &PROGRAM_NS_PAGES] {
                if params.contains(key) {
                    return Err(ConfigError::invalid(
                        key.name(),
                        "only applies with cell=mlc, tlc or qlc (with slc, read_ns and \
                         program_ns are every page's)",
                    ));
                }
            }
        } else {
            let (read, program) = t.cell.default_latencies();
            for (key, field, default) in [
                (&READ_NS_PAGES, &mut t.read_ns_pages, read),
                (&PROGRAM_NS_PAGES, &mut t.program_ns_pages, program),
            ] {
                let text = params.take_str_or(key, &cell::format_latencies(&default));
                *field = cell::parse_latencies(key.name(), &text, t.cell)?;
            }
        }
        t.multi_plane = params.take_bool_or(&MULTI_PLANE, t.multi_plane)?;
        if !t.multi_plane && params.contains(&INDEPENDENT_PLANE_READS) {
            return Err(ConfigError::invalid(
                "independent_plane_reads",
                "only applies with multi_plane=on",
            ));
        }
        t.independent_plane_reads =
            params.take_bool_or(&INDEPENDENT_PLANE_READS, t.independent_plane_reads)?;
        t.suspend = suspend_from_params(params, t.suspend.clone())?;
        t.channel_transfer = params.take_bool_or(&CHANNEL_TRANSFER, t.channel_transfer)?;
        t.mode = match params.take_str_or(&TIMING, t.mode.key()).as_str() {
            "femu" => TimingMode::Femu,
            "backfill" => TimingMode::Backfill,
            other => {
                return Err(ConfigError::invalid(
                    "timing",
                    format!("{}: expected femu or backfill", quote(other)),
                ))
            }
        };
        if t.mode != TimingMode::Backfill && params.contains(&BACKFILL_GAPS) {
            return Err(ConfigError::invalid(
                "backfill_gaps",
                "only applies with timing=backfill",
            ));
        }
        t.backfill_gaps = params.take_or(&BACKFILL_GAPS, t.backfill_gaps)?;
        let e = &mut c.energy;
        for (key, field) in [
            (&READ_UJ, &mut e.read_uj),
            (&PROGRAM_UJ, &mut e.program_uj),
            (&ERASE_UJ, &mut e.erase_uj),
        ] {
            *field = params.take_or(key, *field)?;
        }
        c.payloads = params.take_bool_or(&PAYLOADS, c.payloads)?;
        c.power_loss_protection =
            params.take_bool_or(&POWER_LOSS_PROTECTION, c.power_loss_protection)?;
        c.checkpoint_every = params.take_or(&CHECKPOINT_EVERY, c.checkpoint_every)?;
        let ps = c.geometry.page_size as u64;
        // A share of the logical capacity (`0.6%`) sizes the cache with the device, as a drive
        // family's does (a drive preset at another `--capacity`).
        let share = params.get(&SLC_CACHE).and_then(|(v, origin)| {
            v.trim()
                .strip_suffix('%')
                .map(|p| (p.to_string(), origin.to_string()))
        });
        c.slc.pages = match share {
            Some((p, origin)) => {
                params.take_str_or(&SLC_CACHE, &(c.slc.pages * ps).to_string());
                let f = p
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|f| (0.0..=100.0).contains(f));
                let f = f.ok_or_else(|| ConfigError::Value {
                    key: "slc_cache".into(),
                    value: format!("{p}%"),
                    origin,
                    expected: "a size in bytes or a share of the logical capacity (0.6%)".into(),
                })?;
                (c.geometry.logical_pages as f64 * f / 100.0) as u64
            }
            None => params.take_size_or(&SLC_CACHE, c.slc.pages * ps)? / ps,
        };
        c.slc.dynamic = params.take_bool_or(&SLC_CACHE_DYNAMIC, c.slc.dynamic)?;
        c.slc.when_full = match params
            .take_str_or(&SLC_WHEN_FULL, c.slc.when_full.key())
            .as_str()
        {
            "direct" => SlcWhenFull::Direct,
            "fold" => SlcWhenFull::Fold,
            other => {
                return Err(ConfigError::invalid(
                    "slc_when_full",
                    format!("{}: expected direct or fold", quote(other)),
                ))
            }
        };
        c.host = host_from_params(params, c.host)?;
        c.controller = Controller::from_params(params, c.controller.clone())?;
        c.fdp = FdpConfig::from_params(params, &c.geometry)?;
        c.capacity = capacity.map(Capacity::bytes);
        c.validate()?;
        Ok(c)
    }

    /// The bytes of simulator state a run on this device may hold, estimated from the geometry
    /// alone so that an impossible configuration is refused before anything is allocated
    /// (docs/device.md "Memory"): per physical page 8 B and a bit (its OOB tag and write stamp,
    /// its valid bit), per block 48 B (write pointer, valid and erase counts, timing),
    /// per logical page [`FTL_BYTES_PER_LPN`] (a page-level table: the FTL's own or the
    /// flash-resident translation pages, and per-page FTL state), plus 4 B per logical page for
    /// the `verify` oracle (5 under FDP), 8 B per logical page with a controller write buffer
    /// (10 under FDP), a bit per physical page with an SLC cache, under FDP a byte per physical
    /// page and two per line (whose data each page holds, each line's unit), and `page_size` B
    /// per physical page when payloads are kept (each programmed page's data stays until its
    /// block is erased). Saturates rather than overflows.
    pub fn state_bytes(&self, verify: bool) -> u64 {
        self.metadata_bytes(verify)
            .saturating_add(self.payload_bytes())
    }

    /// [`DeviceConfig::state_bytes`] but the page data.
    fn metadata_bytes(&self, verify: bool) -> u64 {
        let g = &self.geometry;
        // A controller write buffer keeps two stamps per logical page (and a placement ID under
        // FDP); an SLC cache a bit per physical page; FDP a handle per physical page and an
        // owner and first handle per line.
        let fdp = self.fdp.is_on();
        // The oracle's stamp per logical page, and under FDP its write's handle.
        let oracle = (4 + fdp as u64) * verify as u64;
        let buffer = (8 + 2 * fdp as u64) * (self.controller.write_buffer > 0) as u64;
        let slc = g.pages().div_ceil(8) as u128 * self.slc.is_on() as u128;
        let placement = (g.pages() as u128 + 2 * g.lines() as u128) * fdp as u128;
        let total = g.pages() as u128 * 8
            + g.pages().div_ceil(8) as u128
            + slc
            + placement
            + g.blocks() as u128 * 48
            + g.logical_pages as u128 * (FTL_BYTES_PER_LPN + oracle + buffer) as u128;
        u64::try_from(total).unwrap_or(u64::MAX)
    }

    /// The page data of [`DeviceConfig::state_bytes`]: `page_size` B per physical page with
    /// payloads kept, else 0.
    fn payload_bytes(&self) -> u64 {
        if self.payloads {
            self.geometry
                .pages()
                .saturating_mul(self.geometry.page_size as u64)
        } else {
            0
        }
    }

    /// [`DeviceConfig::state_bytes`] as the parts of a run's memory estimate that the device
    /// makes: its state, and the page data when payloads are kept (the largest part by far, and
    /// the one a payload file removes).
    pub fn memory_estimate(&self, verify: bool) -> crate::host::MemoryEstimate {
        let estimate = crate::host::MemoryEstimate::default().with(
            "the device (from its geometry)".into(),
            self.metadata_bytes(verify),
            "make the device smaller (blocks_per_plane, pages_per_block, channels, \
             luns_per_channel)",
        );
        match self.payload_bytes() {
            0 => estimate,
            data => estimate.with(
                "the page data (payloads=on: page_size per physical page)".into(),
                data,
                "keep the page data in a sparse file instead (serve --payload-file FILE), or \
                 none (payloads=off: run and compare never need it), or make the device smaller",
            ),
        }
    }

    /// Checks that `runs` simulators on this device at once fit in `available` memory, from
    /// [`DeviceConfig::state_bytes`], before any is built.
    pub fn check_memory(
        &self,
        verify: bool,
        runs: usize,
        available: &crate::host::AvailableMemory,
    ) -> Result<(), ConfigError> {
        self.memory_estimate(verify).check(runs, available)
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.geometry.validate()?;
        if self.timing.channel_transfer && self.timing.channel_mb_s == 0 {
            return Err(ConfigError::invalid("channel_mb_s", "must be positive"));
        }
        if self.slc.is_on() && self.timing.cell.is_slc() {
            return Err(ConfigError::invalid(
                "slc_cache",
                "an SLC cache needs multi-bit cells to fold into: add cell=mlc, tlc or qlc",
            ));
        }
        if self.slc.is_on()
            && self.slc.pages * self.timing.cell.page_types() as u64 > self.geometry.pages()
        {
            return Err(ConfigError::invalid(
                "slc_cache",
                format!(
                    "{} pages in SLC mode take {} of the device's {} pages",
                    self.slc.pages,
                    self.slc.pages * self.timing.cell.page_types() as u64,
                    self.geometry.pages()
                ),
            ));
        }
        if self.timing.multi_plane && self.timing.channel_transfer {
            return Err(ConfigError::invalid(
                "multi_plane",
                "multi_plane=on cannot be combined with channel_transfer=on (a multi-plane \
                 command's transfers are not modelled)",
            ));
        }
        if self.timing.suspend.is_some() && self.timing.channel_transfer {
            return Err(ConfigError::invalid(
                "suspend",
                "suspend=on cannot be combined with channel_transfer=on (a suspending read's \
                 transfer over the channel is not modelled)",
            ));
        }
        let c = &self.controller;
        if c.write_buffer > 0 && c.buffer_pages(self.geometry.page_size) == 0 {
            return Err(ConfigError::invalid(
                "write_buffer",
                format!(
                    "{} B holds no page of {} B",
                    c.write_buffer, self.geometry.page_size
                ),
            ));
        }
        if c.buffer_pages(self.geometry.page_size) > u32::MAX as u64 {
            return Err(ConfigError::invalid(
                "write_buffer",
                format!("{} B is more than 2^32 - 1 pages", c.write_buffer),
            ));
        }
        for (f, v) in [
            ("read_uj", self.energy.read_uj),
            ("program_uj", self.energy.program_uj),
            ("erase_uj", self.energy.erase_uj),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(ConfigError::invalid(
                    f,
                    format!("{v} is not a finite non-negative number"),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paper() -> Geometry {
        DeviceConfig::preset("paper").unwrap().geometry
    }

    #[test]
    fn presets_have_paper_proportions() {
        let g = paper();
        assert_eq!(g.logical_pages, 7_864_320);
        assert_eq!(g.physical_bytes(), 32 << 30);
        assert_eq!(g.pages_per_line(), 32_768);
        assert_eq!(g.pages_per_line() / g.entries_per_tp(), 64);
        let q = DeviceConfig::preset("quick").unwrap().geometry;
        assert_eq!(q.pages_per_line() / q.entries_per_tp(), 8);
        assert_eq!(q.physical_bytes(), 4 << 30);
        let t = DeviceConfig::preset("tiny").unwrap().geometry;
        assert_eq!(t.pages_per_line() / t.entries_per_tp(), 1);
        assert_eq!(t.physical_bytes(), 128 << 20);
        for p in PRESETS {
            DeviceConfig::preset(p).unwrap().validate().unwrap();
        }
    }

    /// A drive preset is its keys on its base: `--set` overrides any of them, `--capacity`
    /// sizes it itself, and a user's own preset file works the same; a bad line is named.
    #[test]
    fn drive_presets_are_keys_on_a_base() {
        let mut p = Params::new();
        let c = DeviceConfig::from_params("980pro", &mut p).unwrap();
        assert_eq!(c.preset, "980pro");
        // Its values are the defaults `learnedftl params --preset 980pro` lists.
        assert_eq!(p.default_of(&CMD_OVERHEAD_NS), Some("18000"));
        assert_eq!(p.default_of(&SLC_CACHE), Some("0.6%"));
        let g = c.geometry;
        assert_eq!(
            (g.channels, g.luns_per_channel, g.pages_per_block),
            (8, 4, 1024)
        );
        assert_eq!(g.physical_bytes(), 1 << 40);
        assert_eq!(c.controller.cmd_overhead_ns, 18_000);
        let mut p = Params::from_assignments(["cmd_overhead_ns=5000"], "--set").unwrap();
        assert_eq!(
            DeviceConfig::from_params("980pro", &mut p)
                .unwrap()
                .controller
                .cmd_overhead_ns,
            5000
        );
        let cap: Capacity = "8GiB".parse().unwrap();
        let sized =
            DeviceConfig::from_params_sized("980pro", Some(&cap), &mut Params::new()).unwrap();
        assert!(
            sized.geometry.blocks_per_plane < 100,
            "{:?}",
            sized.geometry
        );
        // A user's own: a file with a base.
        let dir = std::env::temp_dir().join(format!("preset-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mine = dir.join("mine.preset");
        std::fs::write(&mine, "# my drive\nbase=tiny\nread_ns=20000 # faster\n").unwrap();
        let path = mine.to_str().unwrap();
        let c = DeviceConfig::preset(path).unwrap();
        assert_eq!((c.timing.read_ns, c.preset.as_str()), (20_000, path));
        std::fs::write(&mine, "base=tiny\nread_ns\n").unwrap();
        let e = DeviceConfig::preset(path).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("key=value"), "{e}");
        std::fs::write(&mine, "read_ns=1\n").unwrap();
        let e = DeviceConfig::preset(path).unwrap_err().to_string();
        assert!(e.contains("no base="), "{e}");
        std::fs::write(&mine, "base=tiny\nno_such_key=1\n").unwrap();
        let mut p = Params::new();
        DeviceConfig::from_params(path, &mut p).unwrap();
        let left: Vec<_> = p.left().collect();
        assert_eq!(left, [("no_such_key", &*format!("preset {path} line 2"))]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// `host_path` names a path's costs, each cost key overrides one, and a path not known is
    /// refused naming the key.
    #[test]
    fn a_host_path_sets_its_costs_and_keys_override_them() {
        let host = |sets: &[&str]| {
            let mut p = Params::from_assignments(sets.iter().copied(), "test").unwrap();
            DeviceConfig::from_params("tiny", &mut p).map(|c| c.host)
        };
        assert!(host(&[]).unwrap().is_off());
        assert_eq!(
            host(&["host_path=io_uring"]).unwrap(),
            HostPath::IoUring.costs()
        );
        let h = host(&["host_path=spdk", "host_complete_ns=900"]).unwrap();
        assert_eq!(
            (h.path, h.submit_ns, h.complete_ns),
            (HostPath::Spdk, 200, 900)
        );
        assert!(host(&["host_path=none"]).unwrap().is_off());
        let e = host(&["host_path=aio"]).unwrap_err().to_string();
        assert!(e.contains("host_path") && e.contains("\"aio\""), "{e}");
    }

    #[test]
    fn spec_vppn_test_vector() {
        let g = paper();
        let ppa = g.ppa_from_parts(PpaParts {
            ch: 4,
            lun: 6,
            pl: 0,
            blk: 64,
            pg: 127,
        });
        assert_eq!(g.ppa_to_vppn(ppa), Vppn(2_105_332));
        let next = g.vppn_to_ppa(Vppn(2_105_333));
        assert_eq!(
            g.ppa_parts(next),
            PpaParts {
                ch: 5,
                lun: 6,
                pl: 0,
                blk: 64,
                pg: 127
            }
        );
    }

    /// A geometry with no power-of-two dimension, so conversions cannot work by accident.
    pub(super) fn odd_geometry() -> Geometry {
        let mut p = Params::new();
        for kv in [
            "channels=3",
            "luns_per_channel=2",
            "planes_per_lun=2",
            "blocks_per_plane=9",
            "pages_per_block=5",
            "logical_ratio=0.5",
        ] {
            p.insert_assignment(kv, "test").unwrap();
        }
        DeviceConfig::from_params("tiny", &mut p).unwrap().geometry
    }

    #[test]
    fn conversions_round_trip_exhaustively_on_odd_geometry() {
        let g = odd_geometry();
        let mut seen = vec![false; g.pages() as usize];
        for i in 0..g.pages() as u32 {
            let ppa = Ppa(i);
            assert_eq!(g.ppa_from_parts(g.ppa_parts(ppa)), ppa);
            let v = g.ppa_to_vppn(ppa);
            assert_eq!(g.vppn_to_ppa(v), ppa);
            assert!(!seen[v.idx()]);
            seen[v.idx()] = true;
            // A line's VPPNs are contiguous.
            assert_eq!(v.0 / g.pages_per_line(), g.line_of(ppa));
        }
    }

    #[test]
    fn impossible_geometries_are_refused_by_field() {
        let cases = [
            ("channels=0", "channels"),
            ("page_size=1000", "page_size"),
            ("logical_ratio=1.5", "logical_ratio"),
            (
                "logical_ratio=0.99",
                "invalid logical_ratio: 0.99 makes 32440 logical pages: over-provisioning of \
                 328 pages holds 0 whole line(s)",
            ),
            ("logical_pages=999999999", "logical_pages"),
            ("blocks_per_plane=4", "blocks_per_plane"),
            ("oob_size=4", "oob_size"),
            ("oob_size=8192", "oob_size"),
            ("page_size=4294966784", "page_size"),
            ("page_size=131072", "page_size"),
            ("channels=100000", "channels"),
            ("luns_per_channel=5000", "luns_per_channel"),
            ("planes_per_lun=65", "planes_per_lun"),
            ("pages_per_block=70000", "pages_per_block"),
            // Used to overflow computing the default logical space.
            ("blocks_per_plane=4000000000", "geometry"),
        ];
        for (kv, field) in cases {
            let mut p = Params::new();
            p.insert_assignment(kv, "--set").unwrap();
            let e = DeviceConfig::from_params("tiny", &mut p)
                .unwrap_err()
                .to_string();
            assert!(e.contains(field), "{kv}: {e}");
        }
        assert!(DeviceConfig::preset("huge").is_err());
    }

    #[test]
    fn state_estimate_follows_the_geometry() {
        let mut c = DeviceConfig::preset("quick").unwrap();
        let g = c.geometry.clone();
        let base =
            g.pages() * 8 + g.pages().div_ceil(8) + g.blocks() as u64 * 48 + g.logical_pages * 5;
        assert_eq!(c.state_bytes(false), base);
        assert_eq!(c.state_bytes(true), base + g.logical_pages * 4);
        c.payloads = true;
        assert_eq!(c.state_bytes(false), base + g.pages() * 4096);
    }
}
