//! HP-FTL's parameters: the design choices, its `--set` keys, the effective configuration
//! ([`HpConfig`]) and the constructor that takes them and sizes the tables to the budget.

use super::{CandidateIndex, Codec, Counters, FreeLevels, HpFtl, Secondary, NONE};
use crate::config::DeviceConfig;
use crate::error::ConfigError;
use crate::mapping::{Bits, Credit, FtlStats, GcPolicy, GcRule, HashFamily, HashKind, PackedVec};
use crate::params::{Key, Params};
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

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

impl HpFtl {
    /// Builds the FTL. Parameters (defaults in `docs/ftls/hpftl.md`): `h`, `m`, `hash`
    /// (`mix|md5`), `hash_seed`, `probe` (`current|first`), `cand_pick` (`first|idle-lun`),
    /// `gc_relocate`
    /// (`secondary|primary-first`), `sec_pick` (`emptiest|fullest`), `secondary_ratio` (slots
    /// per logical page) or `dram_ratio` (whole budget as a fraction of an 8 B/LPN table),
    /// `sec_low`, `sec_high` (free-slot watermarks as fractions of the slots), `gc_free_low`,
    /// `gc_free_high` (free-page thresholds as fractions of physical pages), `gc_batch`.
    pub fn new(dev: &DeviceConfig, params: &mut Params) -> Result<Self, ConfigError> {
        crate::ftl::refuse_fdp(
            dev,
            "hpftl",
            "a page goes to a block its LPN hashes to (the table keeps only the hash choice and \
             the page offset), so the handle cannot choose its block",
        )?;
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
        gc.greedy_only("HP-FTL (blocks by invalid pages)")?;
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
            sec: Secondary::new(slots, 1 << m),
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
}
