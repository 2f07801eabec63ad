//! LearnedFTL (Wang et al., HPCA'24; SPEC §5.5): TPFTL's cached mapping table plus, for every
//! translation page, an in-DRAM learned model that predicts VPPNs, guarded by a bitmap so that
//! only exact predictions are used.
//!
//! Per host page read: a CMT hit is a single read; else, if the LPN's bit is set, the model's
//! prediction is read directly (a model hit: single read, no CMT insertion); else TPFTL's miss
//! path (TP read with prefetch, then the data: a double read). Writes and trims follow TPFTL's
//! path and clear the LPN's bit; writes whose pages in one TP got consecutive VPPNs initialise
//! the model in place (sequential initialisation). Data is placed by group-based allocation.
//! Under `design=log` (the default, ours) a group's overflow goes to a shared write log and GC
//! collects lines greedily, training rank pieces on what it moves and merging groups within a
//! budget ([`log`]); under `design=paper` groups borrow cold groups' lines and are collected
//! group by group, which rewrites each TP's pages in LPN order and trains its model
//! ([`groups`]). The pieces are in [`model`], the fitting in [`plr`].

pub mod groups;
pub mod layout;
pub mod log;
pub mod model;
pub mod plr;
mod recover;

super::registered!(LearnedFtl, "learnedftl");

#[cfg(test)]
mod tests;

use super::{DramUsage, Ftl, ReadSink, Served};
use crate::addr::{Lpn, Ppa, SimTime, Tpn, Vppn};
use crate::config::{AddrMath, DeviceConfig, Geometry};
use crate::device::{Cause, Device, Oob, Src, Unit};
use crate::error::{quote, ConfigError, FtlError};
use crate::mapping::budget::{CMT_RATIO, MAPPING_DRAM_BYTES};
use crate::mapping::tpcache::ENTRY_BYTES;
use crate::mapping::{
    trims, Allocator, Budget, Credit, FtlStats, GcPolicy, GcRule, LineState, Lookup, Stream,
    TpCache, TransTable,
};
use crate::params::{parse_duration_ns, Key, Params};
use crate::request::{Op, Request, Upcoming};
use groups::{Groups, FIRST_GROUP_STREAM};
use model::{Models, Piece};
use plr::Training;
use serde::Serialize;
use std::ops::Range;

/// Which LearnedFTL (`design`; `docs/ftls/learnedftl.md`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Design {
    /// Ours, the default: group lines plus a shared write log, collected line by line
    /// (greedy) with rank pieces, merging groups within a budget ([`log`]).
    Log,
    /// The paper's: groups own whole lines, borrow cold groups' lines and are collected whole
    /// when no line can be had ([`groups`]).
    Paper,
}

impl Design {
    /// The `--set design=` value.
    pub fn key(self) -> &'static str {
        match self {
            Design::Log => "log",
            Design::Paper => "paper",
        }
    }
}

crate::params::keys! {
    /// LearnedFTL's own keys ([`LearnedFtl::new`]; docs/ftls/learnedftl.md).
    pub static LEARNED_KEYS = "learnedftl", "LearnedFTL's groups, models, allocation and DRAM";
    GROUP_TPS = "group_tps" ["TPs"] "TPs per group; a group's LPNs must fit one line (one line's worth unless given)";
    DESIGN = "design" ["log|paper"] "log: group lines and a shared write log (ours); paper: the paper's allocation and whole-group GC";
    MERGE_BUDGET = "merge_budget" ["pages per host page"] "design=log: pages a group merge may move per host page written (0: never, inf: whenever GC picks a group line)";
    IDLE_MERGE_BUDGET = "idle_merge_budget" ["pages per host page"] "pages idling may move per host page written (merges while idle, on the groups whose merge removes the most double reads per page moved, and every collection while idle; 0: no idle merges, issue 11's default; inf: no bound)" only with "design=log";
    IDLE_GC_UPDATES = "idle_gc_updates" ["cache|rewrite"] "while idle, collections keep the moved pages' new mappings as dirty CMT entries, each TP written back once for many (cache), or rewrite every TP they touch at once (rewrite, issue 29's)" only with "design=log";
    IDLE_MERGE_READS = "idle_merge_reads" ["on/off"] "rank idle merges by the reads they would serve and the misses they would remove (on), or by misses alone (off, an ablation)" only with "design=log";
    CROSS_GROUP = "cross_group" ["on/off"] "opportunistic cross-group allocation: a group out of lines may borrow another group's" only with "design=paper";
    GROUP_LINE_QUOTA = "group_line_quota" ["lines"] "lines a group may own before it borrows or GC runs" only with "design=paper";
    ENCROACH_THRESHOLD = "encroach_threshold" ["pages"] "pages a borrower may place in its lender's lines before both are collected (a quarter of a line unless given)" only with "design=paper";
    LENDER = "lender" ["untrained|any"] "which groups lend room: those with untrained models, or any" only with "design=paper";
    GROUP_GC = "group_gc" ["group|line"] "GC collects a whole group, or single lines of any group" only with "design=paper";
    SEQUENTIAL_INIT = "sequential_init" ["on/off"] "sequential initialisation of the models (paper §III-E1)";
    RANK_PIECES = "rank_pieces" ["on/off"] "line collections may install rank pieces (on under design=log, off under design=paper)";
    TRAINING = "training" ["greedy-plr|equal-count-ls"] "how models are trained: the paper's greedy PLR, or the authors' code";
    TRAIN_MIN_PAGES = "train_min_pages" ["pages"] "fewest valid LPNs a TP needs to be trained";
    TP_WRITE_COST = "tp_write_cost" ["charged|free"] "whether translation page programs cost flash time (free: the authors' code)";
    REFRESH_PERIOD = "refresh_period" ["duration (10ms) or off"] "rewrite a group to refresh its models this often in simulated time (e.g. 10ms; needs group_gc=group)";
    DRAM = "dram" ["paper|equal-dram"] "paper: CMT 1.5 % of the mappings + models + GTD; equal-dram: DFTL's total";
}

/// Keys that configure the paper design's allocation only.
static PAPER_ONLY_KEYS: [&Key; 5] = [
    &GROUP_GC,
    &LENDER,
    &CROSS_GROUP,
    &ENCROACH_THRESHOLD,
    &GROUP_LINE_QUOTA,
];

/// Keys that configure the log design's idle merges only.
static LOG_ONLY_KEYS: [&Key; 3] = [&IDLE_MERGE_BUDGET, &IDLE_MERGE_READS, &IDLE_GC_UPDATES];

/// LearnedFTL's parameters (all `--set` keys; see `docs/ftls/learnedftl.md`).
#[derive(Clone, Debug)]
pub struct Config {
    /// Which design (`design=log|paper`, default `log`).
    pub design: Design,

    /// TPs per group (`group_tps`; default: one line's worth of LPNs).
    pub group_tps: u32,
    /// Lines a group may own before it borrows or GC runs (`group_line_quota`, default 5).
    pub group_line_quota: u32,
    /// Free lines only GC may take: the shared policy's reserve (`gc_reserve_lines`, default 2:
    /// a paired GC's destinations).
    pub gc_reserve_lines: u32,
    /// Opportunistic cross-group allocation (`cross_group`, default on).
    pub cross_group: bool,
    /// Pages a borrower may place in its lender's lines before both are collected
    /// (`encroach_threshold`, default a quarter of a line).
    pub encroach_threshold: u32,
    /// Lenders may have trained models (`lender=any`); the paper's `untrained` is the default.
    pub lend_trained: bool,
    /// `group_gc=line`: collect single lines (greedy, any group) instead of whole groups
    /// (`group`, the paper's design, default).
    pub line_gc: bool,
    /// Line collections may install rank pieces (`rank_pieces`; default on under
    /// `design=log`, off under `design=paper`).
    pub rank_pieces: bool,
    /// Sequential initialisation (`sequential_init`, default on).
    pub sequential_init: bool,
    /// Idle merges rank groups by their reads too (`idle_merge_reads`, default on), not by
    /// their misses alone.
    pub idle_merge_reads: bool,
    /// While idle, collections leave the moved pages' new mappings in the CMT as dirty entries
    /// instead of rewriting their TPs (`idle_gc_updates=cache`).
    pub idle_gc_cached: bool,
    /// How models are trained (`training`, default greedy PLR).
    pub training: Training,
    /// Fewest valid LPNs a TP needs to be trained (`train_min_pages`, default 2).
    pub train_min_pages: u32,
    /// Translation-page programs cost flash operations (`tp_write_cost=charged`, default) or
    /// are free (`free`, the authors' code).
    pub tp_write_charged: bool,
    /// Refresh rewrite period in simulated ns (`refresh_period`, default off).
    pub refresh_period_ns: Option<u64>,
    /// DRAM preset (`dram=paper|equal-dram`).
    pub dram: &'static str,
    /// The mapping DRAM budget.
    pub budget: Budget,
    /// FDP is on: only the default handle's pages go to a group's lines (docs/fdp.md,
    /// "LearnedFTL").
    pub fdp: bool,
    /// FDP: bit `h` says handle `h` is persistently isolated. A merge sorts a group's pages
    /// into its lines and must not mix such a handle's data with another's, so a group is
    /// merged only if its pages all carry the default handle or none carries a persistently
    /// isolated one (docs/fdp.md, "LearnedFTL").
    pub fdp_persistent: u128,
}

/// LearnedFTL's own counters (reported by [`Ftl::extra_counters`]).
#[derive(Clone, Debug, Default, Serialize)]
struct Counters {
    /// Page reads whose bitmap bit was set (whether or not the CMT hit first).
    bitmap_positive: u64,
    /// Pages written into another group's line.
    borrowed_pages: u64,
    /// Borrower/lender pairings made.
    borrow_pairings: u64,
    /// Group collections (GC events of data).
    group_gcs: u64,
    /// Of which collected a borrower with its lender.
    paired_gcs: u64,
    /// Translation-line collections.
    trans_gcs: u64,
    /// Single-line collections (`group_gc=line`; log lines under `design=log`).
    line_gcs: u64,
    /// Group merges by GC within `merge_budget` (`design=log`; also counted in `group_gcs`).
    merges: u64,
    /// Group merges in idle time (`idle_merge_budget`; also counted in `group_gcs`).
    idle_merges: u64,
    /// Of which merged a group with heat (host reads since the heats last faded to 0); the
    /// others were chosen by their misses alone.
    idle_merges_read: u64,
    /// Pages moved by merges, GC's and idle ones: the flash work spent on training.
    merge_pages: u64,
    /// Of which by idle merges.
    idle_merge_pages: u64,
    /// Pages moved by collections while idle (background GC, and reclaims that made room for
    /// idle merges), charged to the idle credit.
    idle_room_pages: u64,
    /// LPNs idle merges made predictable (their bits were clear before the merge).
    idle_merge_gained: u64,
    /// Pages moved by collections while idle whose new mappings waited in the CMT as dirty
    /// entries instead of in TPs rewritten at once (`idle_gc_updates=cache`).
    idle_cached_moves: u64,
    /// Model hits in groups whose models an idle merge trained and that no collection has
    /// moved since: the reads that paid for idle merges.
    idle_paid_reads: u64,
    /// Model hits served by a rank piece: pages a line collection described where it put
    /// them. The other model hits were served by a linear piece: pages a merge or training
    /// sorted, or a sequential host write laid out.
    model_hits_rank: u64,
    /// Lines erased without moving anything (`design=log`: every page invalid).
    empty_erases: u64,
    /// Rank pieces installed by line collections.
    rank_installs: u64,
    /// Dirty cached entries made clean because a collection rewrote their TP (write-backs
    /// saved).
    gc_cleaned_entries: u64,
    /// Refresh rewrites.
    refresh_rewrites: u64,
    /// TPs trained.
    trained_tps: u64,
    /// Models changed by sequential initialisation.
    seq_init_updates: u64,
    /// CPU time gathering and sorting valid translations in collections, ns.
    sort_ns: u64,
    /// CPU time training in collections, ns.
    train_ns: u64,
}

/// The LearnedFTL.
#[derive(Clone)]
pub struct LearnedFtl {
    cfg: Config,
    geo: Geometry,
    math: AddrMath,
    table: TransTable,
    cache: TpCache,
    models: Models,
    alloc: Allocator,
    groups: Groups,
    stats: FtlStats,
    extra: Counters,
    fixed_dram: u64,
    gc_epoch: u64,
    next_refresh: SimTime,
    moves: Vec<(Lpn, Ppa)>,
    line_moves: Vec<(Lpn, Ppa, Oob)>,
    sort_scratch: Vec<(Lpn, Ppa, Oob)>,
    touched: Vec<(Tpn, u32)>,
    offsets: Vec<u32>,
    dest_lines: Vec<u32>,
    points: Vec<(u32, u32)>,
    fit: Vec<Piece>,
    /// `design=log`: pages a merge may move per host page written (`merge_budget`; `inf`: a
    /// group line chosen by GC always merges its group, `0`: never), and what is unspent.
    merge_credit: Credit,
    /// `design=log`: pages idling may move per host page written (`idle_merge_budget`), and
    /// what is unspent.
    idle_credit: Credit,
    /// Host pages written or trimmed so far (with the invalidations, whether anything that
    /// decides an idle merge may have changed).
    host_pages: u64,
    /// `design=log`: (invalidations, host pages) when the idle-merge search last found nothing.
    idle_merge_none_at: Option<(u64, u64)>,
    /// Whether it found no candidate (rather than no room for one and no reclaim).
    idle_merge_no_candidate: bool,
    /// A collection runs while the device idles ([`LearnedFtl::idle_charged`]).
    idle_collecting: bool,
}

/// A two-way switch `key=default|other`: whether `other` was chosen.
fn take_choice(
    params: &mut Params,
    key: &'static Key,
    default: &str,
    other: &str,
) -> Result<bool, ConfigError> {
    match params.take_str_or(key, default) {
        v if v == default => Ok(false),
        v if v == other => Ok(true),
        v => Err(ConfigError::invalid(
            key.name(),
            format!("{} is not {default} or {other}", quote(v)),
        )),
    }
}

/// Pages idling may move per host page written, by default: eight, a merge's cost per LPN it
/// retrains at the one-eighth miss threshold, which is enough to sort every group after the
/// logical space was rewritten once in random pages (`docs/ftls/learnedftl.md`, "When
/// training pays").
const DEFAULT_IDLE_MERGE_BUDGET: f64 = 8.0;

/// DFTL's cache share under `paper` (SPEC §5.0), the total `equal-dram` matches.
const DFTL_CMT_RATIO: f64 = 0.03;
/// LearnedFTL's CMT share under `paper`.
const PAPER_CMT_RATIO: f64 = 0.015;

impl LearnedFtl {
    /// Builds the FTL, taking its keys from `params`.
    pub fn new(dev: &DeviceConfig, params: &mut Params) -> Result<LearnedFtl, ConfigError> {
        let geo = dev.geometry.clone();
        let entries = geo.entries_per_tp();
        if entries > 1 << 15 {
            return Err(ConfigError::invalid(
                "page_size",
                "LearnedFTL's u16 piece offsets need at most 32,768 entries per TP",
            ));
        }
        let ppl = geo.pages_per_line();
        let max_g = (ppl / entries).max(1);
        let group_tps = params.take_or(&GROUP_TPS, max_g)?;
        if group_tps == 0 || group_tps > max_g {
            return Err(ConfigError::invalid(
                "group_tps",
                format!("{group_tps}: a group's LPNs must fit one line (1 to {max_g} TPs)"),
            ));
        }
        let groups = Groups::new(&geo, group_tps);
        let streams = FIRST_GROUP_STREAM as u64 + groups.count() as u64;
        if streams + Allocator::fdp_slots(&dev.fdp) as u64 > u16::MAX as u64 {
            return Err(ConfigError::invalid(
                "group_tps",
                format!(
                    "{} groups are more than the allocator's streams",
                    groups.count()
                ),
            ));
        }
        let design = if take_choice(params, &DESIGN, "log", "paper")? {
            Design::Paper
        } else {
            Design::Log
        };
        if design == Design::Log {
            if let Some(k) = PAPER_ONLY_KEYS.iter().find(|k| params.contains(k)) {
                return Err(ConfigError::invalid(
                    k.name(),
                    "configures the paper design's allocation: add design=paper",
                ));
            }
        }
        if design == Design::Paper {
            crate::ftl::refuse_fdp(
                dev,
                "learnedftl with design=paper",
                "a group writes into its own lines and borrows other groups' lines, and is \
                 collected whole, so a line holds whichever groups' pages, whatever their \
                 handles (design=log takes FDP)",
            )?;
        }
        let merge_credit = Credit::from_params(params, &MERGE_BUDGET, 0.0)?;
        if design == Design::Paper {
            if let Some(k) = LOG_ONLY_KEYS.iter().find(|k| params.contains(k)) {
                return Err(ConfigError::invalid(
                    k.name(),
                    "the paper design does no idle work: only with design=log",
                ));
            }
        }
        let idle_credit = Credit::from_params(
            params,
            &IDLE_MERGE_BUDGET,
            if design == Design::Log {
                DEFAULT_IDLE_MERGE_BUDGET
            } else {
                0.0
            },
        )?;
        let cross_group = params.take_bool_or(&CROSS_GROUP, true)?;
        // The reserve is the shared policy's (SPEC §3.5: one reserve for every FTL). A paired
        // collection writes into two fresh lines, so the paper design needs 2 with cross-group
        // allocation; a merge or a log-line collection writes into one.
        let min_reserve = if cross_group && design == Design::Paper {
            2
        } else {
            1
        };
        let policy = GcPolicy::from_params(&geo, params, min_reserve)?;
        if design == Design::Paper {
            policy.greedy_only("LearnedFTL's design=paper (whole groups)")?;
        }
        let gc_reserve_lines = match policy.rule {
            GcRule::Reserve => policy.fg_free_lines,
            // `gc=femu` reproduces the setup before the shared reserve: FEMU's thresholds for
            // the baselines, LearnedFTL's own 2-line reserve.
            GcRule::Femu => 2,
        };
        let group_line_quota = params.take_or(&GROUP_LINE_QUOTA, 5u32)?.max(1);
        let encroach_threshold = params.take_or(&ENCROACH_THRESHOLD, ppl / 4)?.max(1);
        let lend_trained = take_choice(params, &LENDER, "untrained", "any")?;
        let line_gc = take_choice(params, &GROUP_GC, "group", "line")?;
        let idle_merge_reads = params.take_bool_or(&IDLE_MERGE_READS, true)?;
        let idle_gc_cached =
            design == Design::Log && !take_choice(params, &IDLE_GC_UPDATES, "cache", "rewrite")?;
        let sequential_init = params.take_bool_or(&SEQUENTIAL_INIT, true)?;
        let rank_pieces = params.take_bool_or(&RANK_PIECES, design == Design::Log)?;
        let training = params.take_or(&TRAINING, Training::GreedyPlr)?;
        let train_min_pages = params.take_or(&TRAIN_MIN_PAGES, 2u32)?.max(1);
        let tp_write_charged = !take_choice(params, &TP_WRITE_COST, "charged", "free")?;
        let refresh_period_ns = match params.take_str_or(&REFRESH_PERIOD, "off") {
            t if t == "off" || t == "0" => None,
            t => Some(parse_duration_ns(&t).filter(|&ns| ns > 0).ok_or_else(|| {
                ConfigError::invalid(
                    "refresh_period",
                    format!("{} is not a duration (e.g. 50ms, 2s) or off", quote(t)),
                )
            })?),
        };
        if line_gc && refresh_period_ns.is_some() {
            // A refresh rewrites a whole group, whose lines may hold other groups' pages once
            // line collections have spread them.
            return Err(ConfigError::invalid(
                "refresh_period",
                "the refresh rewrite needs group_gc=group",
            ));
        }
        // TPFTL's cache knobs, parsed as TPFTL parses them.
        let cache_cfg = super::tpftl::cache_config(params)?;
        let models = Models::new(geo.tps(), entries, rank_pieces);
        let table = TransTable::new(&geo);
        let fixed = models.dram_bytes() + table.gtd.dram_bytes() + groups.dram_bytes();
        let (dram, budget) = match params.take_str_or(&DRAM, "paper").as_str() {
            "paper" => (
                "paper",
                Budget::from_params(
                    &geo,
                    params,
                    PAPER_CMT_RATIO,
                    fixed,
                    ENTRY_BYTES + cache_cfg.node_bytes,
                )?,
            ),
            "equal-dram" => {
                if params.contains(&CMT_RATIO) || params.contains(&MAPPING_DRAM_BYTES) {
                    return Err(ConfigError::invalid(
                        "dram",
                        "equal-dram sizes the CMT itself; drop cmt_ratio / mapping_dram_bytes",
                    ));
                }
                // DFTL's total (3 % CMT + GTD); the models take most of it, the CMT the rest,
                // but never less than one TP's entries (then the total is over DFTL's).
                let dftl = (DFTL_CMT_RATIO * geo.logical_pages as f64 * 8.0) as u64
                    + table.gtd.dram_bytes();
                let cache = dftl.saturating_sub(fixed).max(entries as u64 * ENTRY_BYTES);
                (
                    "equal-dram",
                    Budget {
                        total: cache + fixed,
                        fixed,
                        cache,
                    },
                )
            }
            o => {
                return Err(ConfigError::invalid(
                    "dram",
                    format!("{} is not paper or equal-dram", quote(o)),
                ))
            }
        };
        let cache = TpCache::new(geo.logical_pages as u32, entries, budget.cache, cache_cfg);
        let streams = FIRST_GROUP_STREAM + groups.count() as u16;
        Ok(LearnedFtl {
            cfg: Config {
                design,
                group_tps,
                group_line_quota,
                gc_reserve_lines,
                cross_group,
                encroach_threshold,
                lend_trained,
                line_gc,
                sequential_init,
                idle_merge_reads,
                idle_gc_cached,
                rank_pieces,
                training,
                train_min_pages,
                tp_write_charged,
                refresh_period_ns,
                dram,
                budget,
                fdp: dev.fdp.is_on(),
                fdp_persistent: dev.fdp.persistent_mask(),
            },
            alloc: Allocator::new(&geo, streams, policy).with_fdp(&dev.fdp),
            next_refresh: SimTime(refresh_period_ns.unwrap_or(0)),
            math: AddrMath::new(&geo),
            geo,
            table,
            cache,
            models,
            groups,
            stats: FtlStats::default(),
            extra: Counters::default(),
            fixed_dram: fixed,
            gc_epoch: 0,
            moves: Vec::new(),
            line_moves: Vec::new(),
            sort_scratch: Vec::new(),
            touched: Vec::new(),
            offsets: Vec::new(),
            dest_lines: Vec::new(),
            points: Vec::new(),
            fit: Vec::new(),
            merge_credit,
            idle_credit,
            host_pages: 0,
            idle_merge_none_at: None,
            idle_merge_no_candidate: false,
            idle_collecting: false,
        })
    }

    /// The TP and offset of `lpn`.
    #[inline]
    fn locate(&self, lpn: Lpn) -> (Tpn, u32) {
        (self.table.gtd.tpn_of(lpn), self.table.gtd.offset_of(lpn))
    }

    /// TPFTL's miss path for `lpn` in a request ending at `req_last`: make room (paying dirty
    /// write-backs), read the TP at `t`, load the prefetch range. Returns when the TP read
    /// completes.
    fn cache_miss(
        &mut self,
        dev: &mut Device,
        lpn: Lpn,
        req_last: Lpn,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        let range = self.cache.load_range(lpn, req_last);
        self.cache_room(dev, &range, t)?;
        let done = self.table.read_tp(dev, lpn, Cause::TransRead, t)?;
        self.cache.load(lpn, range, done);
        Ok(done)
    }

    /// Evicts from the CMT until `range` fits, paying each dirty eviction's write-back at `t`.
    fn cache_room(
        &mut self,
        dev: &mut Device,
        range: &Range<u32>,
        t: SimTime,
    ) -> Result<(), FtlError> {
        while let Some(v) = self.cache.evict_for(range) {
            if v.written_back > 0 {
                self.write_back_tp(dev, v.tpn, t)?;
            }
        }
        Ok(())
    }

    /// A collection while idle moved `lpn`'s page (its copy done at `t`): its new mapping
    /// waits in the CMT as a dirty entry instead of in a TP rewritten now. Nothing else uses
    /// the CMT while the device idles, a TP whose pages several collections move is then
    /// written once (when its node is evicted, when the idle time ends, or never if its group's
    /// merge programs it first), and a power cut finds the page by its OOB, as any dirty entry.
    pub(super) fn cache_moved(
        &mut self,
        dev: &mut Device,
        lpn: Lpn,
        t: SimTime,
    ) -> Result<(), FtlError> {
        let range = lpn.0..lpn.0 + 1;
        self.cache_room(dev, &range, t)?;
        self.cache.load(lpn, range, t);
        self.cache.gc_update(lpn);
        Ok(())
    }

    /// Pays the batch write-back of TP `tpn`'s dirty entries at `t` (an eviction's, or an idle
    /// one): a TP read and program, free under `tp_write_cost=free`. Returns when it completes.
    fn write_back_tp(
        &mut self,
        dev: &mut Device,
        tpn: Tpn,
        t: SimTime,
    ) -> Result<SimTime, FtlError> {
        if !self.cfg.tp_write_charged {
            return Ok(t);
        }
        let new = self.trans_page(dev, t)?;
        self.table.gtd.rewrite(dev, tpn, new, Cause::TransWrite, t)
    }

    /// Background work while the device is idle (SPEC §3.5): under `design=log` one reclaim
    /// by the shared background rule, else one idle merge ([`LearnedFtl::idle_merge`]), issued
    /// at `now`, and its completion; `None` when neither is due. The paper design has no
    /// background GC (groups are collected when no line can be had).
    fn idle_gc(&mut self, dev: &mut Device, now: SimTime) -> Result<Option<SimTime>, FtlError> {
        match self.cfg.design {
            Design::Log => match self.idle_charged(|ftl| ftl.background_one(dev, now))? {
                Some(done) => Ok(Some(done)),
                None => self.idle_merge(dev, now),
            },
            Design::Paper => Ok(None),
        }
    }

    /// The cache side of a write or trim of `lpn`: a miss loads it (the TP read tells the old
    /// PPA; the data program does not wait for it), then the entry becomes dirty.
    fn cache_dirty(
        &mut self,
        dev: &mut Device,
        lpn: Lpn,
        req_last: Lpn,
        t: SimTime,
    ) -> Result<(), FtlError> {
        if self.cache.lookup(lpn) == Lookup::Miss {
            self.cache_miss(dev, lpn, req_last, t)?;
        }
        self.cache.mark_dirty(lpn);
        Ok(())
    }

    fn read(
        &mut self,
        dev: &mut Device,
        req: &Request,
        sink: &mut dyn ReadSink,
    ) -> Result<SimTime, FtlError> {
        let t = req.arrival;
        let mut done = t;
        for lpn in req.lpns() {
            let (tpn, x) = self.locate(lpn);
            self.extra.bitmap_positive += self.models.bit(tpn, x) as u64;
            let (at, reads) = match self.cache.lookup(lpn) {
                Lookup::Hit { ready } => {
                    self.stats.cmt_hits += 1;
                    (t.max(ready), 1)
                }
                Lookup::Miss => {
                    let g = self.groups.of(lpn);
                    self.groups.note_read(g);
                    match self.models.lookup(tpn, x) {
                        Some(v) => {
                            let want = self.table.get(lpn).map(|p| self.math.ppa_to_vppn(p));
                            if want != Some(v) {
                                return Err(FtlError::Invariant(format!(
                                    "bit set for {lpn:?} but the model predicts {v:?}, truth \
                                     {want:?}"
                                )));
                            }
                            self.stats.model_hits += 1;
                            self.extra.model_hits_rank += self.models.rank_at(tpn, x) as u64;
                            self.extra.idle_paid_reads +=
                                self.groups.idle_trained[g as usize] as u64;
                            (t, 1)
                        }
                        None => (self.cache_miss(dev, lpn, req.last_lpn(), t)?, 2),
                    }
                }
            };
            done = done.max(at);
            match self.table.get(lpn) {
                None => {
                    self.stats.lookup(0);
                    sink.deliver(dev, lpn, Served::Unmapped);
                }
                Some(ppa) => {
                    let (oob, d) = dev.read(ppa, Cause::User, at)?;
                    self.stats.lookup(reads);
                    sink.deliver(dev, lpn, Served::Flash { ppa, oob });
                    done = done.max(d);
                }
            }
        }
        Ok(done)
    }

    fn write(&mut self, dev: &mut Device, req: &Request) -> Result<SimTime, FtlError> {
        let t = req.arrival;
        let mut done = t;
        // TPs written from now on carry this stamp: recovery tells a stale one by it.
        self.table.gtd.note_stamp(req.stamp);
        // The current run of pages of one TP with consecutive offsets and VPPNs:
        // (tpn, first offset, length, first VPPN).
        let mut run: Option<(Tpn, u32, u32, Vppn)> = None;
        self.host_pages += req.pages as u64;
        let (log, handle) = self.alloc.host_stream(dev, req.placement);
        for lpn in req.lpns() {
            let g = self.groups.of(lpn);
            let epoch = self.gc_epoch;
            let ppa = self.data_page(dev, g, log, t)?;
            if self.gc_epoch != epoch {
                // A collection moved (and retrained) what the run wrote so far.
                run = None;
            }
            done =
                done.max(dev.program(ppa, Oob::data(lpn, req.stamp), Src::Host, Cause::User, t)?);
            dev.place(ppa, Unit::Host, handle);
            match self.table.set(lpn, Some(ppa)) {
                Some(old) => self.unmap(dev, g, old)?,
                None => self.groups.mapped[g as usize] += 1,
            }
            self.count_handle(g, handle, 1);
            let (tpn, x) = self.locate(lpn);
            self.models.clear(tpn, x);
            self.cache_dirty(dev, lpn, req.last_lpn(), t)?;
            let v = self.math.ppa_to_vppn(ppa);
            run = match run {
                Some((rt, x0, len, v0)) if rt == tpn && x0 + len == x && v0.0 + len == v.0 => {
                    Some((rt, x0, len + 1, v0))
                }
                prev => {
                    if let Some(r) = prev {
                        self.seq_init(r);
                    }
                    Some((tpn, x, 1, v))
                }
            };
        }
        if let Some(r) = run {
            self.seq_init(r);
        }
        Ok(done)
    }

    /// Invalidates `old`, a page of group `g` the host overwrote or trimmed.
    fn unmap(&mut self, dev: &mut Device, g: u32, old: Ppa) -> Result<(), FtlError> {
        self.count_handle(g, dev.page_handle(old), -1);
        dev.invalidate(old)?;
        Ok(())
    }

    /// Counts (`by` 1) or uncounts (-1) a mapped page of group `g` with FDP handle `h` in the
    /// group's handle counters ([`Groups::other_handles`], [`Groups::isolated`]).
    pub(super) fn count_handle(&mut self, g: u32, h: u8, by: i32) {
        let g = g as usize;
        let isolated = (self.cfg.fdp_persistent >> h & 1) as i32;
        self.groups.other_handles[g] =
            self.groups.other_handles[g].wrapping_add_signed(by * (h != 0) as i32);
        self.groups.isolated[g] = self.groups.isolated[g].wrapping_add_signed(by * isolated);
    }

    /// Whether a merge may take group `g` (see [`Config::fdp_persistent`]).
    fn mergeable(&self, g: u32) -> bool {
        let g = g as usize;
        self.groups.other_handles[g] == 0 || self.groups.isolated[g] == 0
    }

    fn seq_init(&mut self, (tpn, x, len, v): (Tpn, u32, u32, Vppn)) {
        if self.cfg.sequential_init && self.models.seq_init(tpn, x, len, v) {
            self.extra.seq_init_updates += 1;
        }
    }

    /// A trim is durable (and acknowledged) once its record is programmed, on the translation
    /// stream ([`trims::program_record`]), before the mappings change. Under
    /// `tp_write_cost=free` (no translation page is ever on flash, so the translation stream
    /// owns no line to put records in) trims are not persisted, and recovery is refused.
    fn trim(&mut self, dev: &mut Device, req: &Request) -> Result<SimTime, FtlError> {
        self.table.gtd.note_stamp(req.stamp);
        self.host_pages += req.pages as u64;
        let mut done = req.arrival;
        if self.cfg.tp_write_charged {
            let ppa = match self.cfg.design {
                Design::Log => self.data_page_log(dev, None, Stream::DATA, req.arrival)?,
                Design::Paper => self.trans_page(dev, req.arrival)?,
            };
            let table = &self.table;
            done = trims::program_record(dev, ppa, req, |l| table.get(Lpn(l)).is_none())?;
        }
        for lpn in req.lpns() {
            if let Some(old) = self.table.set(lpn, None) {
                let g = self.groups.of(lpn);
                self.unmap(dev, g, old)?;
                self.groups.mapped[g as usize] -= 1;
            }
            let (tpn, x) = self.locate(lpn);
            self.models.clear(tpn, x);
            self.cache_dirty(dev, lpn, req.last_lpn(), req.arrival)?;
        }
        Ok(done)
    }

    /// The runs every TP's mapped LPNs form where they lie ([`layout`]): what describing
    /// pages in place could predict at most. A pass over the table: for reports, not requests.
    fn layout_runs(&self) -> layout::Runs {
        let mut runs = layout::Runs::default();
        let (mut points, mut sizes) = (Vec::new(), Vec::new());
        for t in 0..self.geo.tps() {
            let lpns = self.table.gtd.lpns(Tpn(t));
            let first = lpns.start;
            points.clear();
            points.extend(lpns.filter_map(|l| {
                let p = self.table.get(Lpn(l))?;
                Some((l - first, self.math.ppa_to_vppn(p).0))
            }));
            runs.add_tp(&mut points, &mut sizes);
        }
        runs
    }

    /// Checks the bitmap invariant: every set bit's prediction is the LPN's true VPPN.
    fn check_bitmap(&self) -> Result<(), String> {
        for t in 0..self.geo.tps() {
            let tpn = Tpn(t);
            let first = self.table.gtd.lpns(tpn).start;
            for x in self.models.set_offsets(tpn) {
                let lpn = Lpn(first + x);
                let truth = self.table.get(lpn).map(|p| self.math.ppa_to_vppn(p));
                let pred = self.models.predict(tpn, x);
                if truth.is_none() || pred != truth {
                    return Err(format!(
                        "bitmap: {lpn:?} has its bit set but predicts {pred:?}, truth {truth:?}"
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Ftl for LearnedFtl {
    fn name(&self) -> &'static str {
        "learnedftl"
    }

    fn submit(
        &mut self,
        dev: &mut Device,
        req: &Request,
        sink: &mut dyn ReadSink,
    ) -> Result<SimTime, FtlError> {
        match req.op {
            Op::Read => self.read(dev, req, sink),
            Op::Write => self.write(dev, req),
            Op::Trim => self.trim(dev, req),
            Op::Flush => Ok(req.arrival),
        }
    }

    fn prefetch(&self, dev: &Device, op: Op, lpn: Lpn, when: Upcoming) {
        // Reads and writes ask the CMT first (hinted again when next: a hint a round of jobs
        // ahead is still cached then, but its page translation may not be); a write that
        // misses reads its TP (a read, the model first).
        self.cache.prefetch(lpn);
        if when == Upcoming::Next {
            self.cache.prefetch_touch(lpn);
        }
        self.table.prefetch(dev, op, lpn, when);
        if op == Op::Write {
            self.table.prefetch_tp(dev, lpn, when);
        }
        // A read asks the model; a write or trim clears the LPN's bit in it.
        if op != Op::Flush && lpn.0 < self.geo.logical_pages as u32 {
            let (tpn, x) = self.locate(lpn);
            self.models.prefetch(tpn, x, when == Upcoming::Next);
        }
    }

    fn background(&mut self, dev: &mut Device, now: SimTime) -> Result<(), FtlError> {
        self.refresh(dev, now)?;
        if self.cfg.design == Design::Log {
            self.background_log(dev, now)?;
        }
        Ok(())
    }

    fn idle(&mut self, dev: &mut Device, now: SimTime) -> Result<Option<SimTime>, FtlError> {
        // GC first: collections rewrite TPs and so clean cached entries the write-backs would
        // otherwise pay for.
        if let Some(done) = self.idle_gc(dev, now)? {
            return Ok(Some(done));
        }
        match self.cache.flush_one() {
            Some(tpn) => {
                let before = (dev.invalidations(), self.alloc.free_lines());
                let done = self.write_back_tp(dev, tpn, now)?;
                self.keep_idle_merge_memo(dev, before);
                Ok(Some(done))
            }
            None => Ok(None),
        }
    }

    fn stats(&self) -> &FtlStats {
        &self.stats
    }

    fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
        self.extra = Counters::default();
        self.cache.reset_stats();
        self.groups.collections.fill(0);
    }

    fn dram(&self) -> DramUsage {
        DramUsage {
            parts: vec![
                ("cmt", self.cache.bytes()),
                ("models", self.models.dram_bytes()),
                ("gtd", self.table.gtd.dram_bytes()),
                ("groups", self.groups.dram_bytes()),
            ],
            budget: Some(self.cfg.budget.total),
        }
    }

    fn dram_total(&self) -> u64 {
        self.cache.bytes() + self.fixed_dram
    }

    fn power_cut_refusal(&self) -> Option<String> {
        (!self.cfg.tp_write_charged).then(|| {
            "learnedftl with tp_write_cost=free persists no trim: it cannot recover from a power \
             cut"
            .to_string()
        })
    }

    fn params(&self) -> serde_json::Value {
        let c = &self.cfg;
        serde_json::json!({
            "design": c.design.key(),
            "group_tps": c.group_tps,
            "groups": self.groups.count(),
            "group_line_quota": c.group_line_quota,
            "gc_reserve_lines": c.gc_reserve_lines,
            "gc": self.alloc.policy,
            "cross_group": c.cross_group,
            "encroach_threshold": c.encroach_threshold,
            "lender": if c.lend_trained { "any" } else { "untrained" },
            "group_gc": if c.line_gc { "line" } else { "group" },
            "sequential_init": c.sequential_init,
            "rank_pieces": c.rank_pieces,
            "merge_budget": self.merge_credit.rate_json(),
            "idle_merge_budget": self.idle_credit.rate_json(),
            "idle_merge_reads": c.idle_merge_reads,
            "idle_gc_updates": if c.idle_gc_cached { "cache" } else { "rewrite" },
            "training": c.training.key(),
            "train_min_pages": c.train_min_pages,
            "tp_write_cost": if c.tp_write_charged { "charged" } else { "free" },
            "refresh_period_ns": c.refresh_period_ns,
            "dram": c.dram,
            "budget": c.budget,
            "cmt_entries_max": c.budget.cache / ENTRY_BYTES,
            "cache": self.cache.config(),
        })
    }

    fn extra_counters(&self) -> serde_json::Value {
        let mapped: u64 = self.groups.mapped.iter().map(|&m| m as u64).sum();
        let bits = self.models.set_bits_total();
        let per_group = &self.groups.collections;
        let collected = per_group.iter().filter(|&&c| c > 0).count();
        let n = per_group.len().max(1) as f64;
        // Per data collection: group collections (merges) and line collections alike.
        let events = (self.extra.group_gcs + self.extra.line_gcs).max(1) as f64;
        let mut v = serde_json::to_value(&self.extra).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert("model_hits".into(), self.stats.model_hits.into());
            o.insert("mapped_lpns".into(), mapped.into());
            o.insert("bits_set".into(), bits.into());
            o.insert(
                "model_coverage".into(),
                (bits as f64 / mapped.max(1) as f64).into(),
            );
            o.insert("modelled_tps".into(), self.models.modelled_tps().into());
            let (mut group_lines, mut log_lines) = (0u32, 0u32);
            for line in 0..self.geo.lines() {
                match self.alloc.state(line) {
                    LineState::Free => {}
                    LineState::Open(s) | LineState::Closed(s) => {
                        if self.groups.of_stream(s).is_some() {
                            group_lines += 1
                        } else if s != Stream::TRANS {
                            // The write log, and under FDP the handles' own units.
                            log_lines += 1
                        }
                    }
                }
            }
            o.insert("group_lines".into(), group_lines.into());
            o.insert(
                "layout".into(),
                serde_json::to_value(self.layout_runs()).unwrap_or_default(),
            );
            o.insert("log_lines".into(), log_lines.into());
            o.insert(
                "gc_per_group".into(),
                serde_json::json!({
                    "groups_collected": collected,
                    "min": per_group.iter().min().copied().unwrap_or(0),
                    "mean": per_group.iter().map(|&c| c as f64).sum::<f64>() / n,
                    "max": per_group.iter().max().copied().unwrap_or(0),
                }),
            );
            o.insert(
                "sort_us_per_gc".into(),
                (self.extra.sort_ns as f64 / 1e3 / events).into(),
            );
            o.insert(
                "train_us_per_gc".into(),
                (self.extra.train_ns as f64 / 1e3 / events).into(),
            );
            o.insert(
                "cache".into(),
                serde_json::to_value(self.cache.stats()).unwrap_or_default(),
            );
        }
        v
    }

    fn check_invariants(&self, dev: &Device) -> Result<(), String> {
        self.table.check(dev)?;
        self.cache.check()?;
        self.check_bitmap()?;
        self.check_groups(dev)?;
        dev.check_copies()?;
        let mapped: u64 = self.groups.mapped.iter().map(|&m| m as u64).sum();
        let truth = self.table.iter().filter(|(_, p)| p.is_some()).count() as u64;
        if mapped != truth {
            return Err(format!(
                "groups count {mapped} mapped LPNs, the table {truth}"
            ));
        }
        let mut other = vec![0u32; self.groups.count() as usize];
        let mut isolated = other.clone();
        for (lpn, p) in self.table.iter() {
            if let Some(h) = p.map(|p| dev.page_handle(p)) {
                let g = self.groups.of(lpn) as usize;
                other[g] += (h != 0) as u32;
                isolated[g] += (self.cfg.fdp_persistent >> h & 1) as u32;
            }
        }
        if other != self.groups.other_handles || isolated != self.groups.isolated {
            return Err("groups miscount their LPNs of FDP handles".into());
        }
        let total = self.dram_total();
        if total > self.cfg.budget.total || total != self.dram().total() {
            return Err(format!(
                "DRAM {total} B (parts {:?}) over the budget of {} B",
                self.dram().parts,
                self.cfg.budget.total
            ));
        }
        Ok(())
    }
}
