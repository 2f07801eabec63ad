//! HP-FTL (Ni et al., "A Hash-based Space-efficient Page-level FTL for Large-capacity SSDs";
//! SPEC §5.7): the whole page-level mapping stays in DRAM, compactly.
//!
//! * **Primary table** ([`Codec`]): one `h + m`-bit entry per LPN, bit-packed. HID `1 ..= 2^h−2`
//!   names the hash function `H_HID` whose block holds the page; the PPID gives the page offset
//!   (with the LPN's low `p − m` bits when `m < p`). HID 0 = unmapped, `2^h − 1` = secondary.
//! * **Secondary table** ([`Secondary`]): 8-byte `(lpn, ppa)` slots for the writes no hash
//!   candidate could take; the primary entry's PPID keeps the slot's segment.
//! * **Write** (paper Algorithm 1): try `H_hid(lpn)` for `hid` from the LPN's current HID
//!   (`probe=current`, the algorithm as printed; `probe=first` restarts at `H_1`) up to
//!   `H_{2^h−2}`, taking the first block whose next free page (sequential programming) is
//!   representable for this LPN; else program the page anywhere through the secondary writer and
//!   record it in the secondary table (reusing the LPN's slot if it has one).
//! * **Secondary writer**: LUNs in turn, so secondary (and GC) pages spread over the LUNs; in a
//!   LUN, the block with the most free pages (`sec_pick=emptiest`, which keeps as many blocks
//!   as possible non-full and so open to hash candidates; `fullest` is the other choice). Every
//!   block stays a hash target.
//! * **Read**: primary entry → PPA, or a scan of one secondary segment; one flash read, never a
//!   translation read.
//! * **GC** (paper §II-D): runs when the secondary's free slots fall below the low watermark or
//!   free pages below `gc_free_low`, until free slots reach the high watermark and free pages
//!   `gc_free_high`. A round takes up to `gc_batch` full blocks with the fewest valid pages,
//!   relocates their valid pages (`gc_relocate=secondary`: into the secondary table, as the
//!   paper does, while it has room; `primary-first`: hash candidates first), erases them, then
//!   moves secondary entries back into primary positions in the erased blocks.
//!
//! Internal work is issued at the arrival time of the request being served; GC reads, programs
//! and erases carry cause `GcData`. See `docs/ftls/hpftl.md` for every choice.

mod candidates;
mod codec;
mod levels;
mod secondary;

use candidates::CandidateIndex;
pub use codec::Codec;
use levels::FreeLevels;
pub use secondary::Secondary;

use super::{read_from_dram_map, DramUsage, Ftl, ReadSink};
use crate::addr::{Lpn, Ppa, SimTime};
use crate::config::DeviceConfig;
use crate::device::{Cause, Device, Oob, Src, TrimRecord};
use crate::error::{ConfigError, FtlError, RecoverError};
use crate::mapping::{
    check_page_map, recovery, Bits, Credit, FtlStats, GcPolicy, GcRule, HashFamily, HashKind,
    PackedVec,
};
use crate::params::{Key, Params};
use crate::request::{Op, Request, Upcoming};
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

const NONE: u32 = u32::MAX;

/// GC runs a host write may wait for before it gives up on finding a place.
const HOST_GC_TRIES: u32 = 8;

/// Why a write or a GC move found no place.
const SEC_FULL: &str = "HP-FTL secondary table full and no hash candidate fits \
                        (raise secondary_ratio, h or m, or let the table grow: secondary_growth > 0)";

/// Where a write starts probing the hash functions.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Probe {
    /// From the LPN's current HID (paper Algorithm 1); an LPN in the secondary table stays there
    /// until GC moves it back.
    Current,
    /// From `H_1` on every write.
    First,
}

/// Which fitting hash candidate a write takes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CandPick {
    /// The first in probing order (paper Algorithm 1).
    First,
    /// The one whose LUN is free soonest (an ablation: how much of hash placement's LUN
    /// collisions a LUN-aware controller would avoid); the first among equals.
    IdleLun,
}

/// Where GC relocates valid pages.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Relocate {
    /// Into the secondary table while it has a free slot, else a hash candidate (paper §II-D).
    Secondary,
    /// A hash candidate if one fits, else the secondary table.
    PrimaryFirst,
}

/// Which block of a LUN the secondary writer opens when its block is full.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SecPick {
    /// The block with the most free pages.
    Emptiest,
    /// The non-full block with the fewest free pages.
    Fullest,
}

/// What the secondary table's free slots drive.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Design {
    /// Ours (default): GC runs by the free-page rule alone, as every FTL's; a mapping with no
    /// slot free makes the table grow (reported as DRAM), and entries move back into erased
    /// blocks while slots are below the high watermark.
    Grow,
    /// The paper's §II-D: the slot watermarks trigger GC, which thrashes on a full device
    /// (docs/ftls/hpftl.md).
    Paper,
}

/// How a GC round chooses its victims.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Victims {
    /// The full blocks with the fewest valid pages anywhere.
    Global,
    /// At most one block per LUN a round, each LUN's best that fits (erases proceed in
    /// parallel).
    PerLun,
}

macro_rules! choice {
    ($t:ty, $($s:literal => $v:path),+) => {
        impl FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($s => Ok($v),)+
                    _ => Err(format!("expected one of: {}", [$($s),+].join(", "))),
                }
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(match self {
                    $($v => $s,)+
                })
            }
        }
    };
}
choice!(Design, "grow" => Design::Grow, "paper" => Design::Paper);
choice!(Probe, "current" => Probe::Current, "first" => Probe::First);
choice!(CandPick, "first" => CandPick::First, "idle-lun" => CandPick::IdleLun);
choice!(Relocate, "secondary" => Relocate::Secondary, "primary-first" => Relocate::PrimaryFirst);
choice!(SecPick, "emptiest" => SecPick::Emptiest, "fullest" => SecPick::Fullest);
choice!(Victims, "global" => Victims::Global, "per-lun" => Victims::PerLun);

crate::params::keys! {
    /// HP-FTL's own keys ([`HpFtl::new`]; docs/ftls/hpftl.md).
    pub static HPFTL_KEYS = "hpftl", "HP-FTL's hash-placed primary table and secondary table";
    H = "h" ["bits"] "HID bits per mapping entry (2^h - 2 hash functions)";
    M = "m" ["bits"] "PPID bits per entry (at most the page-offset bits, log2 pages per block)";
    HASH = "hash" ["mix|md5"] "hash family: independent uniform functions, or the paper's shifted MD5";
    HASH_SEED = "hash_seed" [""] "seed of the hash functions";
    DESIGN = "design" ["grow|paper"] "grow: a full secondary table grows; paper: its free slots trigger GC (§II-D as printed)";
    PROBE = "probe" ["current|first"] "where a write starts probing: the LPN's current function, or the first (first under grow, current under paper)";
    CAND_PICK = "cand_pick" ["first|idle-lun"] "which fitting candidate a write takes: the first, or the one whose LUN is free soonest";
    GC_RELOCATE = "gc_relocate" ["secondary|primary-first"] "where GC moves valid pages first (primary-first under grow, secondary under paper)";
    MOVE_BACK_BUDGET = "move_back_budget" ["pages per host page"] "pages moved back into the primary table per host page written (0 under grow, inf under paper)";
    SEC_PICK = "sec_pick" ["emptiest|fullest"] "which block the secondary writer opens next";
    DRAM_RATIO = "dram_ratio" ["of an 8 B/LPN table"] "the whole mapping DRAM, instead of secondary_ratio: the secondary table gets what the primary leaves";
    SECONDARY_RATIO = "secondary_ratio" ["slots per logical page"] "initial size of the secondary table";
    SECONDARY_GROWTH = "secondary_growth" ["of the initial slots"] "slots added each time the secondary table grows (0: fixed, design=paper only)";
    SEC_LOW = "sec_low" ["of the slots"] "free slots at which GC runs" only with "design=paper";
    SEC_HIGH = "sec_high" ["of the slots"] "free slots GC stops at; also caps moves back under grow";
    GC_FREE_LOW = "gc_free_low" ["of the spare pages"] "free pages at which GC runs" only with "gc=femu";
    GC_FREE_HIGH = "gc_free_high" ["of the spare pages"] "free pages GC stops at" only with "gc=femu";
    GC_BATCH = "gc_batch" ["blocks"] "victims per GC round (the LUN count unless given)";
    GC_VICTIMS = "gc_victims" ["global|per-lun"] "victims with the fewest valid pages anywhere, or at most one per LUN a round";
    MERGE_ANY = "merge_any" ["on/off"] "GC may merge slots into any block with room, not only freshly erased ones";
}

/// Takes `key` as a `FromStr` choice, naming the key in errors.
fn take_choice<T: FromStr<Err = String> + fmt::Display>(
    params: &mut Params,
    key: &'static Key,
    default: T,
) -> Result<T, ConfigError> {
    let v = params.take_str_or(key, &default.to_string());
    v.parse()
        .map_err(|e: String| ConfigError::invalid(key.name(), format!("'{v}': {e}")))
}

/// Takes a fraction in `[0, 1]`.
fn take_fraction(params: &mut Params, key: &'static Key, default: f64) -> Result<f64, ConfigError> {
    let v = params.take_or(key, default)?;
    if !(0.0..=1.0).contains(&v) {
        return Err(ConfigError::invalid(
            key.name(),
            format!("{v} is not a fraction in [0, 1]"),
        ));
    }
    Ok(v)
}

/// HP-FTL's effective parameters.
#[derive(Clone, Debug, Serialize)]
pub struct HpConfig {
    /// What free slots drive: GC (paper) or table growth (ours).
    pub design: Design,
    /// HID bits.
    pub h: u32,
    /// PPID bits.
    pub m: u32,
    /// Bits to index a page in a block.
    pub p: u32,
    /// Hash family.
    pub hash: String,
    /// Seed of the `mix` family.
    pub hash_seed: u64,
    /// Where writes start probing.
    pub probe: Probe,
    /// Which fitting candidate a write takes.
    pub cand_pick: CandPick,
    /// Where GC relocates.
    pub gc_relocate: Relocate,
    /// Which block the secondary writer opens.
    pub sec_pick: SecPick,
    /// Secondary slots.
    pub secondary_slots: u32,
    /// GC starts when free slots fall below this.
    pub sec_low_slots: u32,
    /// ... and runs until free slots reach this.
    pub sec_high_slots: u32,
    /// Host writes leave this many slots to GC relocation (foreground GC first).
    pub slot_reserve: u32,
    /// The shared GC policy (SPEC §3.5) the page thresholds below come from under
    /// `gc=reserve`.
    pub gc: GcPolicy,
    /// GC starts when free pages fall below this.
    pub gc_free_low_pages: u64,
    /// ... and runs until free pages reach this.
    pub gc_free_high_pages: u64,
    /// Host writes run foreground GC first when free pages are at or below this.
    pub page_reserve: u64,
    /// Background rounds take only blocks with at least this many invalid pages.
    pub bg_min_invalid: u32,
    /// Victim blocks per GC round.
    pub gc_batch: u32,
    /// How victims are chosen.
    pub gc_victims: Victims,
    /// After moving entries back into erased blocks, also move entries into any hash candidate
    /// whose next page fits, while free slots are below the high watermark.
    pub merge_any: bool,
    /// Slots the secondary table grows by when a mapping has nowhere else to go (0: the
    /// table is fixed and such a write fails with "table full").
    pub secondary_growth: u32,
    /// Mapping DRAM budget (primary + secondary allocation), bytes; grows with the table.
    pub budget: u64,
}

/// Scheme counters beyond [`FtlStats`].
#[derive(Clone, Debug, Default, Serialize)]
struct Counters {
    host_pages_primary: u64,
    host_pages_secondary: u64,
    reads_primary: u64,
    reads_secondary: u64,
    gc_runs: u64,
    gc_rounds: u64,
    gc_relocated_primary: u64,
    gc_relocated_secondary: u64,
    gc_moved_back: u64,
    secondary_grown: u64,
}

/// Where an LPN's data is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Loc {
    Unmapped,
    Primary { hid: u32, ppa: Ppa },
    Secondary { pos: u32, ppa: Ppa },
}

impl Loc {
    fn ppa(self) -> Option<Ppa> {
        match self {
            Loc::Unmapped => None,
            Loc::Primary { ppa, .. } | Loc::Secondary { ppa, .. } => Some(ppa),
        }
    }
}

/// Where a page is being written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Dest {
    Primary { hid: u32, ppid: u32 },
    Secondary,
}

/// A secondary entry that could move into erased victim `key / r` at a page with low bits
/// `key % r`, through hash function `hid`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct MoveBack {
    key: u32,
    hid: u32,
    pos: u32,
    lpn: u32,
}

/// A page GC has read: from where, its OOB, and when the read completes (its copy is
/// programmed then).
#[derive(Copy, Clone, Debug)]
struct GcCopy {
    from: Ppa,
    oob: Oob,
    read: SimTime,
}

/// The HP-FTL.
#[derive(Clone)]
pub struct HpFtl {
    cfg: HpConfig,
    codec: Codec,
    hashes: HashFamily,
    primary: PackedVec,
    sec: Secondary,
    ppb: u32,
    blocks: u32,
    blocks_per_lun: u32,
    free_pages: u64,
    sec_lun: u32,
    lun_programs: Vec<u64>,
    stats: FtlStats,
    ctr: Counters,
    /// Per block, its valid pages mapped through the primary table (what relocating it may
    /// add to the secondary table).
    blk_primary: Vec<u16>,
    victims: Vec<(u32, u32)>,
    victim_idx: Vec<u32>,
    /// Per block, a bit set iff it has a free page and is not a GC victim: a write probes its
    /// candidates here (2 KiB on `quick`) and reads a write pointer only for open ones.
    open: Bits,
    /// Per block, the secondary entries hashing there (for move-back).
    cands: CandidateIndex,
    /// Blocks by LUN and free pages (for the secondary writer).
    levels: FreeLevels,
    /// Per block, its invalid pages, and per count the blocks with that many: victim choice
    /// reads these (16 KiB on `quick`) instead of the device's per-block counts.
    blk_invalid: Vec<u16>,
    invalid_blocks: Vec<u32>,
    /// Victim candidates of a round, `(rank, block)`.
    victim_cands: Vec<(u32, u32)>,
    /// Move-back candidates of a round, ordered by key, function and slot.
    moves: Vec<MoveBack>,
    /// The same, as generated (bucketed by key into `moves`).
    moves_raw: Vec<MoveBack>,
    move_start: Vec<u32>,
    /// Per secondary slot, whether this round's move-back plan already takes its entry.
    slot_taken: Vec<bool>,
    /// Secondary entries to move into primary positions: `(lpn, page, destination)`.
    plan: Vec<(u32, Ppa, Dest)>,
    /// Pages GC has read, to program when each read completes.
    copies: Vec<GcCopy>,
    /// `(invalidations, free pages, free slots)` after a background run that freed nothing:
    /// until one of them changes, another run would choose the same (no) victims.
    bg_idle_at: Option<(u64, u64, u32)>,
    /// Pages moves back may take per host page written (`move_back_budget`), and what is
    /// unspent.
    move_credit: Credit,
}

impl HpFtl {
    /// Builds the FTL. Parameters (defaults in `docs/ftls/hpftl.md`): `h`, `m`, `hash`
    /// (`mix|md5`), `hash_seed`, `probe` (`current|first`), `cand_pick` (`first|idle-lun`),
    /// `gc_relocate`
    /// (`secondary|primary-first`), `sec_pick` (`emptiest|fullest`), `secondary_ratio` (slots
    /// per logical page) or `dram_ratio` (whole budget as a fraction of an 8 B/LPN table),
    /// `sec_low`, `sec_high` (free-slot watermarks as fractions of the slots), `gc_free_low`,
    /// `gc_free_high` (free-page thresholds as fractions of physical pages), `gc_batch`.
    pub fn new(dev: &DeviceConfig, params: &mut Params) -> Result<Self, ConfigError> {
        let geo = &dev.geometry;
        let ppb = geo.pages_per_block;
        let p = u32::BITS - (ppb - 1).leading_zeros();
        let h = params.take_or(&H, 3u32)?;
        let m = params.take_or(&M, p)?;
        if !(2..=8).contains(&h) {
            return Err(ConfigError::invalid(
                "h",
                format!("{h} HID bits: need 2..=8 (at least one hash function)"),
            ));
        }
        if m > p {
            return Err(ConfigError::invalid(
                "m",
                format!("{m} PPID bits exceed the {p} bits of a page offset"),
            ));
        }
        let codec = Codec::new(h, m, p);
        let kind = take_choice(params, &HASH, HashKind::Mix)?;
        let hash_seed = params.take_or(&HASH_SEED, 0x0048_5046_544c_u64)?;
        let hashes = HashFamily::new(kind, codec.functions(), geo.blocks(), hash_seed)?;
        let design = take_choice(params, &DESIGN, Design::Grow)?;
        // design=grow's defaults cost no flash work: a write or a GC move leaves the secondary
        // table whenever a candidate fits, and moves back (which cost a read and a program
        // each, and which GC mostly undoes on a full device) are off.
        let (probe, gc_relocate, move_back) = match design {
            Design::Grow => (Probe::First, Relocate::PrimaryFirst, 0.0),
            Design::Paper => (Probe::Current, Relocate::Secondary, f64::INFINITY),
        };
        let probe = take_choice(params, &PROBE, probe)?;
        let cand_pick = take_choice(params, &CAND_PICK, CandPick::First)?;
        let gc_relocate = take_choice(params, &GC_RELOCATE, gc_relocate)?;
        let move_credit = Credit::from_params(params, &MOVE_BACK_BUDGET, move_back)?;
        let sec_pick = take_choice(params, &SEC_PICK, SecPick::Emptiest)?;

        let lp = geo.logical_pages;
        let primary = PackedVec::new(lp as usize, codec.bits());
        let dram_ratio = params.take::<f64>(&DRAM_RATIO)?;
        if dram_ratio.is_some() && params.contains(&SECONDARY_RATIO) {
            return Err(ConfigError::invalid(
                "dram_ratio",
                "give secondary_ratio or dram_ratio, not both",
            ));
        }
        let slots = match dram_ratio {
            Some(r) => {
                if !(r > 0.0 && r.is_finite()) {
                    return Err(ConfigError::invalid(
                        "dram_ratio",
                        format!("{r} must be > 0"),
                    ));
                }
                let budget = (r * lp as f64 * 8.0) as u64;
                budget.saturating_sub(primary.bytes()) / 8
            }
            None => {
                let r = params.take_or(&SECONDARY_RATIO, 0.25)?;
                if !(r > 0.0 && r <= 1.0) {
                    return Err(ConfigError::invalid(
                        "secondary_ratio",
                        format!("{r} is not in (0, 1]"),
                    ));
                }
                (r * lp as f64) as u64
            }
        };
        let slot_reserve = ppb;
        if slots < 4 * ppb as u64 || slots > u32::MAX as u64 / 2 {
            let (key, min_bytes) = match dram_ratio {
                Some(_) => ("dram_ratio", primary.bytes() + 4 * ppb as u64 * 8),
                None => ("secondary_ratio", 4 * ppb as u64 * 8),
            };
            // The smallest accepted value, rounded up to four decimals so that it is accepted.
            let min = (min_bytes as f64 / (lp as f64 * 8.0) * 1e4).ceil() / 1e4;
            return Err(ConfigError::invalid(
                key,
                format!(
                    "{slots} secondary slots: need at least 4 blocks' worth ({}) beside the \
                     {} B primary table ({key} ≥ {min})",
                    4 * ppb,
                    primary.bytes()
                ),
            ));
        }
        let slots = slots as u32;
        // The paper's table is as large as it needs to be (its Figs. 4-5 measure that size); a
        // fixed table cannot hold every mapping a nearly full device may have to place there.
        let growth = take_fraction(params, &SECONDARY_GROWTH, 0.125)?;
        let secondary_growth = (growth * slots as f64).ceil() as u32;
        if design == Design::Grow && secondary_growth == 0 {
            return Err(ConfigError::invalid(
                "secondary_growth",
                "design=grow needs a table that can grow (> 0); a fixed table is design=paper's",
            ));
        }
        if design == Design::Grow && params.contains(&SEC_LOW) {
            return Err(ConfigError::invalid(
                "sec_low",
                "free slots trigger GC only under design=paper (design=grow grows the table)",
            ));
        }
        let sec_low = take_fraction(params, &SEC_LOW, 0.05)?;
        let sec_high = take_fraction(params, &SEC_HIGH, 0.15)?;
        let sec_low_slots = ((sec_low * slots as f64).ceil() as u32).max(slot_reserve + 1);
        let sec_high_slots = ((sec_high * slots as f64).ceil() as u32).max(sec_low_slots + 1);
        if sec_high_slots > slots {
            return Err(ConfigError::invalid(
                "sec_high",
                format!("{sec_high_slots} free slots wanted of {slots}"),
            ));
        }
        let spare = geo.pages() - lp;
        // GC relocates into free pages of any block: one line's worth is enough to progress.
        let gc = GcPolicy::from_params(geo, params, 1)?;
        let (page_reserve, gc_free_low_pages, gc_free_high_pages, bg_min_invalid) = match gc.rule {
            // The shared reserve (SPEC §3.5), in pages: foreground GC at the reserve lines'
            // worth of free pages; background GC while free pages are at most the background
            // lines' worth, with victims at least `gc_bg_min_invalid` invalid, as a line FTL's.
            // On a device whose spare pages are fewer, background GC runs whenever a victim
            // qualifies, as it does for the line FTLs there.
            GcRule::Reserve => {
                if let Some(key) = [&GC_FREE_LOW, &GC_FREE_HIGH]
                    .into_iter()
                    .find(|k| params.contains(k))
                {
                    return Err(ConfigError::invalid(
                        key.name(),
                        "only meaningful with gc=femu (gc=reserve takes HP-FTL's page \
                         thresholds from gc_reserve_lines and gc_bg_lines)",
                    ));
                }
                let ppl = geo.pages_per_line() as u64;
                let bg = gc.bg_free_lines as u64 * ppl + 1;
                let per_block = gc.bg_min_invalid.div_ceil(geo.blocks_per_line()).max(1);
                (gc.fg_free_lines as u64 * ppl, bg, bg, per_block)
            }
            // HP-FTL's own thresholds as fractions of the spare pages, as before the shared
            // reserve (the setting that reproduces the paper's setup).
            GcRule::Femu => {
                let free_low = take_fraction(params, &GC_FREE_LOW, 0.3)?;
                let free_high = take_fraction(params, &GC_FREE_HIGH, 0.4)?;
                let page_reserve = ppb as u64;
                let low = ((free_low * spare as f64) as u64).max(page_reserve + 1);
                let high = ((free_high * spare as f64) as u64).max(low + 1);
                if high >= spare {
                    return Err(ConfigError::invalid(
                        "gc_free_high",
                        format!("{high} free pages wanted of {spare} spare"),
                    ));
                }
                (page_reserve, low, high, 1)
            }
        };
        let gc_batch = params.take_or(&GC_BATCH, geo.luns())?;
        if gc_batch == 0 || gc_batch > geo.blocks() / 8 {
            return Err(ConfigError::invalid(
                "gc_batch",
                format!(
                    "{gc_batch} victims per round: need 1..={}",
                    geo.blocks() / 8
                ),
            ));
        }
        let gc_victims = take_choice(params, &GC_VICTIMS, Victims::Global)?;
        let merge_any = params.take_bool_or(&MERGE_ANY, true)?;
        let cfg = HpConfig {
            design,
            gc,
            gc_victims,
            merge_any,
            h,
            m,
            p,
            hash: kind.to_string(),
            hash_seed,
            probe,
            cand_pick,
            gc_relocate,
            sec_pick,
            secondary_slots: slots,
            sec_low_slots,
            sec_high_slots,
            slot_reserve,
            gc_free_low_pages,
            gc_free_high_pages,
            page_reserve,
            bg_min_invalid,
            gc_batch,
            secondary_growth,
            budget: primary.bytes() + slots as u64 * 8,
        };
        Ok(HpFtl {
            sec: Secondary::new(slots, 1 << m, lp as u32),
            codec,
            hashes,
            primary,
            ppb,
            blocks: geo.blocks(),
            blocks_per_lun: geo.planes_per_lun * geo.blocks_per_plane,
            free_pages: geo.pages(),
            sec_lun: 0,
            lun_programs: vec![0; geo.luns() as usize],
            stats: FtlStats::default(),
            ctr: Counters::default(),
            blk_primary: vec![0; geo.blocks() as usize],
            victims: Vec::new(),
            victim_idx: vec![NONE; geo.blocks() as usize],
            open: Bits::new(geo.blocks() as usize, true),
            cands: CandidateIndex::new(geo.blocks()),
            levels: FreeLevels::new(geo.luns(), geo.planes_per_lun * geo.blocks_per_plane, ppb),
            blk_invalid: vec![0; geo.blocks() as usize],
            invalid_blocks: {
                let mut n = vec![0; ppb as usize + 1];
                n[0] = geo.blocks();
                n
            },
            victim_cands: Vec::new(),
            moves: Vec::new(),
            moves_raw: Vec::new(),
            move_start: Vec::new(),
            slot_taken: Vec::new(),
            plan: Vec::new(),
            copies: Vec::new(),
            bg_idle_at: None,
            move_credit,
            cfg,
        })
    }

    /// Rebuilds HP-FTL from flash after a power cut (docs/power.md), recovery issued at `t`.
    /// Both tables were in DRAM and nothing else is persisted: the OOB scan gives every LPN's
    /// newest page; a page in one of its LPN's hash candidates at an offset the LPN's PPID can
    /// express goes back into the primary table (the lowest such HID), any other into the
    /// secondary table (grown as a write would grow it). Free pages come from the write
    /// pointers. Returns the FTL and when the scan completed (the rest is DRAM work).
    pub fn recover(
        cfg: &DeviceConfig,
        params: &mut Params,
        dev: &mut Device,
        t: SimTime,
    ) -> Result<(Self, SimTime), RecoverError> {
        let mut f = HpFtl::new(cfg, params)?;
        let scan = recovery::scan(dev, t)?;
        scan.revalidate(dev)?;
        let ppb = f.ppb;
        for b in 0..f.blocks {
            let w = dev.block_written(b);
            if w > 0 {
                f.set_open(b, w < ppb);
                f.levels.moved(b, ppb, ppb - w);
                f.free_pages -= w as u64;
                f.set_invalid(b, w - dev.block_valid(b));
            }
        }
        let mut buf = [0u32; 256];
        let cand = &mut buf[..f.codec.functions() as usize];
        for lpn in 0..f.primary.len() as u32 {
            let Some(ppa) = scan.mapped(Lpn(lpn)) else {
                continue;
            };
            f.hashes.all(lpn, cand);
            let (block, off) = (ppa.0 / ppb, ppa.0 % ppb);
            let dest = (1..=cand.len() as u32)
                .filter(|&hid| cand[hid as usize - 1] == block)
                .find_map(|hid| {
                    let ppid = f.codec.ppid_for(lpn, off)?;
                    Some(Dest::Primary { hid, ppid })
                })
                .unwrap_or(Dest::Secondary);
            f.remap(dev, lpn, Loc::Unmapped, ppa, dest)?;
        }
        Ok((f, scan.done))
    }

    /// The effective parameters.
    pub fn config(&self) -> &HpConfig {
        &self.cfg
    }

    /// The secondary table.
    pub fn secondary(&self) -> &Secondary {
        &self.sec
    }

    /// Free (erased, unprogrammed) pages on the device.
    pub fn free_pages(&self) -> u64 {
        self.free_pages
    }

    /// Where `lpn`'s data is, from the DRAM tables alone.
    fn locate(&self, lpn: u32) -> Result<Loc, FtlError> {
        let e = self.primary.get(lpn as usize);
        let hid = self.codec.hid(e);
        if hid == 0 {
            Ok(Loc::Unmapped)
        } else if hid == self.codec.sec_hid() {
            let seg = self.codec.ppid(e);
            let pos = self.sec.find(lpn, seg).ok_or_else(|| {
                FtlError::Invariant(format!(
                    "LPN {lpn} marked secondary but not in segment {seg}"
                ))
            })?;
            let (_, ppa) = self.sec.get(pos).unwrap_or((lpn, 0));
            Ok(Loc::Secondary { pos, ppa: Ppa(ppa) })
        } else {
            Ok(Loc::Primary {
                hid,
                ppa: self.primary_page(lpn, hid, e),
            })
        }
    }

    /// The page primary entry `e` of `lpn`, naming hash function `hid`, points at.
    #[inline]
    fn primary_page(&self, lpn: u32, hid: u32, e: u32) -> Ppa {
        let block = self.hashes.hash(hid - 1, lpn);
        Ppa(block * self.ppb + self.codec.offset(lpn, self.codec.ppid(e)))
    }

    /// Hints the table entries [`HpFtl::locate`] will read for the LPNs a loop at step `i`
    /// handles a few steps later (`lpn_at(j)`: step `j`'s LPN). GC looks up every page it moves,
    /// random entries of tables sized by the logical space: overlapping those cache misses
    /// instead of paying them one at a time.
    #[inline]
    fn prefetch_locate(&self, i: usize, lpn_at: impl Fn(usize) -> Option<u32>) {
        /// Steps ahead for the entries indexed by LPN, and for the slot those lead to.
        const FAR: usize = 16;
        const NEAR: usize = 8;
        if let Some(lpn) = lpn_at(i + FAR) {
            self.primary.prefetch(lpn as usize);
            self.sec.prefetch_slot(lpn);
        }
        if let Some(lpn) = lpn_at(i + NEAR) {
            self.sec.prefetch_entry(lpn);
        }
    }

    /// The hash candidate `H_f(lpn)`, `f ≥ first`, whose next free page is representable for
    /// `lpn` (the first such, or with `cand_pick=idle-lun` the one whose LUN is free soonest):
    /// its page and primary destination.
    fn primary_slot(&self, dev: &Device, lpn: u32, first: u32) -> Option<(Ppa, Dest)> {
        // Two walks so that the `mix` one compiles to a plain loop (the general iterator was
        // not inlined and its digest option tested per function).
        match self.hashes.kind() {
            HashKind::Mix => {
                // A half-open range: an inclusive one's iterator was not inlined.
                let n = self.codec.functions();
                let hids = (first..n + 1).map(|hid| (hid, self.hashes.hash(hid - 1, lpn)));
                self.first_fit(dev, lpn, hids)
            }
            HashKind::Md5Shift => {
                let hids = (1..).zip(self.hashes.each(lpn)).skip(first as usize - 1);
                self.first_fit(dev, lpn, hids)
            }
        }
    }

    /// [`Self::primary_slot`] over candidates `(hid, block)` in probing order.
    #[inline(always)]
    fn first_fit(
        &self,
        dev: &Device,
        lpn: u32,
        hids: impl Iterator<Item = (u32, u32)>,
    ) -> Option<(Ppa, Dest)> {
        let mut fits = hids.filter_map(|(hid, block)| {
            // Not open: full, or a GC victim about to be (or just) erased.
            if !self.is_open(block) {
                return None;
            }
            let w = dev.block_written(block);
            let ppid = self.codec.ppid_for(lpn, w)?;
            Some((Ppa(block * self.ppb + w), Dest::Primary { hid, ppid }))
        });
        match self.cfg.cand_pick {
            CandPick::First => fits.next(),
            CandPick::IdleLun => fits.min_by_key(|&(ppa, _)| dev.lun_free_at(ppa)),
        }
    }

    /// Whether block `b` has a free page and is not a GC victim.
    #[inline]
    fn is_open(&self, b: u32) -> bool {
        self.open.get(b as usize)
    }

    #[inline]
    fn set_open(&mut self, b: u32, open: bool) {
        self.open.set(b as usize, open);
    }

    /// The next page of the secondary writer: LUNs in turn; in a LUN, the block chosen by
    /// `sec_pick` among those with a free page.
    fn sec_page(&mut self, dev: &Device) -> Option<Ppa> {
        let luns = self.lun_programs.len() as u32;
        let emptiest = self.cfg.sec_pick == SecPick::Emptiest;
        for _ in 0..luns {
            let lun = self.sec_lun;
            self.sec_lun = if lun + 1 == luns { 0 } else { lun + 1 };
            // Levels list blocks with a free page, which are open unless GC victims: the
            // bitset answers from 2 KiB instead of the victim index's 64 KiB.
            let victim = |b: u32| !self.is_open(b);
            if let Some(b) = self.levels.pick(lun, emptiest, victim) {
                return Some(Ppa(b * self.ppb + dev.block_written(b)));
            }
        }
        None
    }

    /// Programs a page, keeping the free-page and per-LUN counts.
    fn program(
        &mut self,
        dev: &mut Device,
        ppa: Ppa,
        oob: Oob,
        src: Src,
        cause: Cause,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        let done = dev.program(ppa, oob, src, cause, t)?;
        self.programmed(dev, ppa);
        Ok(done)
    }

    /// Keeps the free-page and per-LUN counts after `ppa` was programmed.
    fn programmed(&mut self, dev: &Device, ppa: Ppa) {
        let block = ppa.0 / self.ppb;
        let free = self.ppb - dev.block_written(block) + 1;
        self.levels.moved(block, free, free - 1);
        if free == 1 {
            self.set_open(block, false);
        }
        self.free_pages -= 1;
        self.lun_programs[dev.geo().lun_of(ppa) as usize] += 1;
    }

    /// Persists trim request `req` as a trim record (docs/power.md) through the secondary
    /// writer, after GC if free pages are short; returns when it is programmed.
    fn persist_trim(&mut self, dev: &mut Device, req: &Request) -> Result<SimTime, FtlError> {
        let t = req.arrival;
        if self.free_pages <= self.cfg.page_reserve {
            self.gc_run(dev, t, false)?;
        }
        let ppa = self.sec_page(dev).ok_or(FtlError::NoSpace)?;
        let rec = TrimRecord {
            first: req.lpn,
            pages: req.pages,
        };
        let done = dev.program_record(ppa, req.stamp, rec, Cause::TrimRecord, t)?;
        self.programmed(dev, ppa);
        Ok(done)
    }

    /// A valid trim record in a GC victim, read as `c`: moved through the secondary writer
    /// while some LPN it trimmed is still unmapped (an older copy of it may be on flash),
    /// dropped otherwise.
    fn relocate_record(&mut self, dev: &mut Device, c: GcCopy) -> Result<(), FtlError> {
        let rec = dev.record(c.from).ok_or_else(|| {
            FtlError::Invariant(format!("trim record at {:?} without contents", c.from))
        })?;
        if rec
            .range()
            .any(|l| self.codec.hid(self.primary.get(l as usize)) == 0)
        {
            let new = self.sec_page(dev).ok_or(FtlError::NoSpace)?;
            self.program(dev, new, c.oob, Src::Page(c.from), Cause::GcData, c.read)?;
            self.stats.gc_pages_moved += 1;
        }
        self.invalidate(dev, c.from)
    }

    /// Invalidates `ppa`, keeping the per-block invalid counts.
    fn invalidate(&mut self, dev: &mut Device, ppa: Ppa) -> Result<(), FtlError> {
        dev.invalidate(ppa)?;
        let b = ppa.0 / self.ppb;
        self.set_invalid(b, self.blk_invalid[b as usize] as u32 + 1);
        Ok(())
    }

    /// Block `b` now has `invalid` invalid pages.
    #[inline]
    fn set_invalid(&mut self, b: u32, invalid: u32) {
        let old = std::mem::replace(&mut self.blk_invalid[b as usize], invalid as u16);
        self.invalid_blocks[old as usize] -= 1;
        self.invalid_blocks[invalid as usize] += 1;
    }

    /// Erases block `b` (cause `GcData`), keeping the free-page counts.
    fn erase(&mut self, dev: &mut Device, b: u32, t: SimTime) -> Result<(), FtlError> {
        let written = dev.block_written(b);
        dev.erase(b, Cause::GcData, t)?;
        self.set_invalid(b, 0);
        // GC erases its victims, which reopen when the round ends.
        self.set_open(b, self.victim_idx[b as usize] == NONE);
        self.free_pages += written as u64;
        self.levels.moved(b, self.ppb - written, self.ppb);
        Ok(())
    }

    /// Records that `lpn`, found at `old`, now lives at `new` through `dest`; invalidates the old
    /// page and keeps the secondary table in step.
    fn remap(
        &mut self,
        dev: &mut Device,
        lpn: u32,
        old: Loc,
        new: Ppa,
        dest: Dest,
    ) -> Result<(), FtlError> {
        if let Some(p) = old.ppa() {
            self.invalidate(dev, p)?;
        }
        if let Loc::Primary { ppa, .. } = old {
            self.blk_primary[(ppa.0 / self.ppb) as usize] -= 1;
        }
        if let Dest::Primary { .. } = dest {
            self.blk_primary[(new.0 / self.ppb) as usize] += 1;
        }
        let entry = match (dest, old) {
            (Dest::Primary { hid, ppid }, _) => {
                if let Loc::Secondary { pos, .. } = old {
                    self.sec.remove(pos);
                }
                self.codec.encode(hid, ppid)
            }
            (Dest::Secondary, Loc::Secondary { pos, .. }) => {
                // Algorithm 1: an LPN already in the secondary table keeps its slot.
                self.sec.set_ppa(pos, new.0);
                self.codec
                    .encode(self.codec.sec_hid(), self.sec.segment(pos))
            }
            (Dest::Secondary, _) => {
                self.ensure_slot()?;
                let seg = self
                    .sec
                    .insert(lpn, new.0)
                    .ok_or_else(|| FtlError::TableFull(SEC_FULL.into()))?;
                // Only moves back read the index: without their budget it is not kept.
                if self.move_credit.rate() > 0.0 {
                    self.cands.add(lpn, &self.hashes, &self.sec);
                }
                self.codec.encode(self.codec.sec_hid(), seg)
            }
        };
        self.primary.set(lpn as usize, entry);
        Ok(())
    }

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
    fn background_gc(&mut self, dev: &mut Device, now: SimTime) -> Result<bool, FtlError> {
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
    fn gc_needed(&self) -> bool {
        self.slots_below(self.cfg.sec_low_slots) || self.free_pages < self.cfg.gc_free_low_pages
    }

    /// Whether free slots below `mark` call for GC: only under `design=paper`, where slots, not
    /// pages, are what GC must free; under `design=grow` the table grows instead.
    fn slots_below(&self, mark: u32) -> bool {
        self.cfg.design == Design::Paper && self.sec.free_slots() < mark
    }

    /// Writes one host page at `t` (Algorithm 1); returns its completion.
    fn write_page(
        &mut self,
        dev: &mut Device,
        lpn: u32,
        stamp: u32,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        if self.free_pages <= self.cfg.page_reserve {
            self.gc_run(dev, t, false)?;
        }
        let oob = Oob::data(Lpn(lpn), stamp);
        // Unspent credit is capped at one round's worth of erased blocks.
        self.move_credit.earn((self.cfg.gc_batch * self.ppb) as f64);
        for attempt in 0..HOST_GC_TRIES {
            let old = self.locate(lpn)?;
            let first = match (self.cfg.probe, old) {
                (Probe::First, _) | (Probe::Current, Loc::Unmapped) => Some(1),
                (Probe::Current, Loc::Primary { hid, .. }) => Some(hid),
                (Probe::Current, Loc::Secondary { .. }) => None,
            };
            if let Some((ppa, dest)) = first.and_then(|f| self.primary_slot(dev, lpn, f)) {
                let done = self.program(dev, ppa, oob, Src::Host, Cause::User, t)?;
                self.remap(dev, lpn, old, ppa, dest)?;
                self.ctr.host_pages_primary += 1;
                return Ok(done);
            }
            // Host writes leave `slot_reserve` slots to GC relocation, so a GC round can always
            // relocate at least its best victim; only when GC cannot free slots does the host
            // take them (GC then picks victims whose valid pages fit the slots left).
            let reserve = if attempt + 1 < HOST_GC_TRIES {
                self.cfg.slot_reserve
            } else {
                0
            };
            if matches!(old, Loc::Secondary { .. })
                || self.sec.free_slots() > reserve
                || self.cfg.design == Design::Grow
            {
                let ppa = self.sec_page(dev).ok_or(FtlError::NoSpace)?;
                let done = self.program(dev, ppa, oob, Src::Host, Cause::User, t)?;
                self.remap(dev, lpn, old, ppa, Dest::Secondary)?;
                self.ctr.host_pages_secondary += 1;
                return Ok(done);
            }
            self.gc_run(dev, t, false)?;
        }
        // GC could not free a slot: the table grows (or, fixed, the write fails).
        self.ensure_slot()?;
        let old = self.locate(lpn)?;
        let ppa = self.sec_page(dev).ok_or(FtlError::NoSpace)?;
        let done = self.program(dev, ppa, oob, Src::Host, Cause::User, t)?;
        self.remap(dev, lpn, old, ppa, Dest::Secondary)?;
        self.ctr.host_pages_secondary += 1;
        Ok(done)
    }

    /// GC rounds at `t` until the high watermarks are reached or a round makes no progress on
    /// what is short.
    fn gc_run(&mut self, dev: &mut Device, t: SimTime, background: bool) -> Result<(), FtlError> {
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
    fn ensure_slot(&mut self) -> Result<(), FtlError> {
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

    /// LPNs whose entry is in the primary table (HID `1 ..= 2^h − 2`).
    fn primary_mapped(&self) -> u64 {
        let sec = self.codec.sec_hid();
        self.primary
            .iter()
            .filter(|&e| {
                let hid = self.codec.hid(e);
                hid != 0 && hid != sec
            })
            .count() as u64
    }
}

impl Ftl for HpFtl {
    fn name(&self) -> &'static str {
        "hpftl"
    }

    fn prefetch(&self, dev: &Device, op: Op, lpn: Lpn, when: Upcoming) {
        let lpn = lpn.0;
        if lpn >= self.primary.len() as u32 {
            return;
        }
        match when {
            Upcoming::Later => {
                self.primary.prefetch(lpn as usize);
                self.sec.prefetch_slot(lpn);
            }
            Upcoming::Next => {
                self.sec.prefetch_entry(lpn);
                // A primary entry gives the page by arithmetic; a secondary one only through the
                // slot just hinted, which would stall here.
                let e = self.primary.get(lpn as usize);
                let hid = self.codec.hid(e);
                if op == Op::Read && hid != 0 && hid != self.codec.sec_hid() {
                    dev.prefetch_read(self.primary_page(lpn, hid, e));
                }
            }
        }
    }

    fn submit(
        &mut self,
        dev: &mut Device,
        req: &Request,
        sink: &mut dyn ReadSink,
    ) -> Result<SimTime, FtlError> {
        let t = req.arrival;
        let mut done = t;
        match req.op {
            Op::Read => {
                for lpn in req.lpns() {
                    let loc = self.locate(lpn.0)?;
                    match loc {
                        Loc::Unmapped => {}
                        Loc::Primary { .. } => self.ctr.reads_primary += 1,
                        Loc::Secondary { .. } => self.ctr.reads_secondary += 1,
                    }
                    let d = read_from_dram_map(dev, &mut self.stats, sink, lpn, loc.ppa(), t)?;
                    done = done.max(d);
                }
            }
            Op::Write => {
                for lpn in req.lpns() {
                    done = done.max(self.write_page(dev, lpn.0, req.stamp, t)?);
                }
            }
            Op::Trim => {
                // Durable before the tables change.
                done = self.persist_trim(dev, req)?;
                for lpn in req.lpns() {
                    let old = self.locate(lpn.0)?;
                    match old {
                        Loc::Unmapped => {}
                        Loc::Primary { ppa, .. } => {
                            self.invalidate(dev, ppa)?;
                            self.blk_primary[(ppa.0 / self.ppb) as usize] -= 1;
                        }
                        Loc::Secondary { pos, ppa } => {
                            self.invalidate(dev, ppa)?;
                            self.sec.remove(pos);
                        }
                    }
                    self.primary.set(lpn.idx(), 0);
                }
            }
            Op::Flush => {}
        }
        Ok(done)
    }

    fn background(&mut self, dev: &mut Device, now: SimTime) -> Result<(), FtlError> {
        self.background_gc(dev, now).map(drop)
    }

    fn idle(&mut self, dev: &mut Device, now: SimTime) -> Result<Option<SimTime>, FtlError> {
        // The whole mapping is in DRAM and there is no buffer: an idle HP-FTL owes only the GC
        // its thresholds ask for. A run spreads over every LUN: it completes when the device
        // drains.
        Ok(self
            .background_gc(dev, now)?
            .then(|| dev.drained_at().max(now)))
    }

    fn stats(&self) -> &FtlStats {
        &self.stats
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
        self.ctr = Counters::default();
        self.lun_programs.fill(0);
        self.sec.reset_peak();
    }

    fn dram(&self) -> DramUsage {
        let used = self.sec.used() as u64 * 8;
        DramUsage {
            parts: vec![
                ("primary", self.primary.bytes()),
                ("secondary_used", used),
                ("secondary_free", self.sec.capacity() as u64 * 8 - used),
            ],
            budget: Some(self.cfg.budget),
        }
    }

    fn dram_total(&self) -> u64 {
        self.primary.bytes() + self.sec.capacity() as u64 * 8
    }

    fn params(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(&self.cfg).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert("move_back_budget".into(), self.move_credit.rate_json());
        }
        v
    }

    fn extra_counters(&self) -> serde_json::Value {
        let n = self.lun_programs.len() as f64;
        let mean = self.lun_programs.iter().sum::<u64>() as f64 / n;
        let ratio = |x: u64| if mean > 0.0 { x as f64 / mean } else { 0.0 };
        let max = self.lun_programs.iter().copied().max().unwrap_or(0);
        let min = self.lun_programs.iter().copied().min().unwrap_or(0);
        let mut v = serde_json::to_value(&self.ctr).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            for (k, x) in [
                ("secondary_entries", serde_json::json!(self.sec.used())),
                ("secondary_peak_entries", serde_json::json!(self.sec.peak())),
                (
                    "secondary_used_bytes",
                    serde_json::json!(self.sec.used() as u64 * 8),
                ),
                (
                    "secondary_peak_bytes",
                    serde_json::json!(self.sec.peak() as u64 * 8),
                ),
                (
                    "secondary_allocated_bytes",
                    serde_json::json!(self.sec.capacity() as u64 * 8),
                ),
                ("primary_bytes", serde_json::json!(self.primary.bytes())),
                (
                    "primary_mapped_lpns",
                    serde_json::json!(self.primary_mapped()),
                ),
                ("lun_programs_max_over_mean", serde_json::json!(ratio(max))),
                ("lun_programs_min_over_mean", serde_json::json!(ratio(min))),
            ] {
                o.insert(k.to_string(), x);
            }
        }
        v
    }

    fn check_invariants(&self, dev: &Device) -> Result<(), String> {
        let mut sec_marked = 0u32;
        let mut blk_primary = vec![0u16; self.blocks as usize];
        let mut err = None;
        let map = (0..self.primary.len() as u32).map(|lpn| {
            let loc = self.locate(lpn).unwrap_or_else(|e| {
                err.get_or_insert(e.to_string());
                Loc::Unmapped
            });
            match loc {
                Loc::Secondary { .. } => sec_marked += 1,
                Loc::Primary { ppa, .. } => blk_primary[(ppa.0 / self.ppb) as usize] += 1,
                Loc::Unmapped => {}
            }
            (Lpn(lpn), loc.ppa())
        });
        check_page_map(dev, map, dev.valid_records())?;
        if let Some(e) = err {
            return Err(e);
        }
        self.sec.check()?;
        self.levels.check(|b| self.ppb - dev.block_written(b))?;
        let mut invalid_blocks = vec![0; self.ppb as usize + 1];
        for b in 0..self.blocks {
            let open = self.victim_idx[b as usize] == NONE && dev.block_written(b) < self.ppb;
            if self.is_open(b) != open {
                return Err(format!(
                    "block {b}: open bit {} but open {open}",
                    self.is_open(b)
                ));
            }
            let invalid = dev.block_written(b) - dev.block_valid(b);
            if self.blk_invalid[b as usize] as u32 != invalid {
                return Err(format!(
                    "block {b}: {invalid} invalid pages, {} counted",
                    self.blk_invalid[b as usize]
                ));
            }
            invalid_blocks[invalid as usize] += 1;
        }
        if invalid_blocks != self.invalid_blocks {
            return Err("blocks per invalid-page count disagree with the blocks".into());
        }
        if blk_primary != self.blk_primary {
            return Err("per-block primary-mapped counts disagree with the tables".into());
        }
        if sec_marked != self.sec.used() {
            return Err(format!(
                "{sec_marked} LPNs marked secondary but {} secondary entries",
                self.sec.used()
            ));
        }
        let free: u64 = (0..self.blocks)
            .map(|b| (self.ppb - dev.block_written(b)) as u64)
            .sum();
        if free != self.free_pages {
            return Err(format!(
                "{free} free pages on the device, {} counted",
                self.free_pages
            ));
        }
        if self.dram_total() > self.cfg.budget {
            return Err(format!(
                "DRAM {} B over the budget {} B",
                self.dram_total(),
                self.cfg.budget
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
