//! What an experiment is made of: its definition ([`Def`]: runs, the results its section reads,
//! the section's renderer, why it differs from the paper), the context its runs are built in
//! ([`Ctx`]) and the preset's sizes ([`Scale`]). The registry holds the experiments; the
//! sections render them.

use super::doc::Section;
use super::spec::RunSpec;
use super::{Config, ReproduceError, Results};
use crate::config::DeviceConfig;
use crate::params::{parse_size, Params};

/// The TPFTL motivation's thread counts (its sequential phases read one after another from
/// each job's slice, which the scale must leave room for).
pub const THREADS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

/// The LearnedFTL paper's FTLs, in its figures' order: its baselines (the ideal page map,
/// DFTL, TPFTL, SFTL, LeaFTL, HP-FTL) and LearnedFTL; not the lecture deck's FAST and μ-FTL.
pub const PAPER_FTLS: &[&str] = &[
    "ideal",
    "dftl",
    "tpftl",
    "sftl",
    "leaftl",
    "hpftl",
    "learnedftl",
];

/// Request counts and sizes per preset: each experiment's workload scaled to the device.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    /// The slice each of 64 jobs owns (logical space / 64), KiB.
    pub slice_kib: u64,
    /// Random reads: drain-phase and measured reads per job.
    pub rr_drain: u64,
    /// Random reads: measured reads per job.
    pub rr_ios: u64,
    /// Sequential reads: drain-phase reads per job.
    pub sr_drain: u64,
    /// Sequential reads: measured reads per job.
    pub sr_ios: u64,
    /// `randwrite`'s random 4 KiB writes per job: a 64th of the logical pages, so that its 64
    /// jobs write the logical space once (SPEC's "writing the logical capacity once"). Shorter
    /// phases measured the mapping cache absorbing the writes and the preconditioning's
    /// leftovers, not the steady state (docs/reproduction.md, "Random and sequential writes").
    pub rw_ios: u64,
    /// Requests per job of the experiments that need only a few after their preconditioning:
    /// `dram`'s random writes, `leaftl-mapping`'s random reads.
    pub few_ios: u64,
    /// Sequential 4 KiB writes per job.
    pub sw_ios: u64,
    /// TPFTL motivation: reads per job per thread count.
    pub th_ios: u64,
    /// HP-FTL experiments: 4 KiB writes per job (1.4 × the logical pages at
    /// `logical_ratio=0.5`, over 64 jobs).
    pub hp_ios: u64,
    /// HP-FTL's m sweep (below p, the block's page-number bits).
    pub hp_ms: &'static [u32],
    /// The lecture deck's μ-FTL / DFTL mapping DRAM (DFTL's default 3 % + GTD).
    pub deck_dram: String,
    /// The lecture deck's 4 KiB writes per job.
    pub deck_ios: u64,
    /// FAST's log blocks per LUN plane at the deck's 3 % log buffer.
    pub deck_log_blocks: u32,
}

impl Scale {
    /// The scale of `preset`. `quick` is sized for a suite of minutes, `paper` keeps the
    /// LearnedFTL paper's proportions on its geometry, `tiny` exercises every experiment in
    /// seconds (tests, CI).
    pub fn of(preset: &str) -> Result<Scale, ReproduceError> {
        Ok(match preset {
            "quick" => Scale {
                slice_kib: 60 << 10,
                rr_drain: 1000,
                rr_ios: 5000,
                sr_drain: 1000,
                sr_ios: 5000,
                rw_ios: 15360,
                few_ios: 300,
                sw_ios: 2000,
                th_ios: 2000,
                hp_ios: 11468,
                hp_ms: &[2, 3, 4, 5],
                deck_dram: "240k".into(),
                deck_ios: 2400,
                deck_log_blocks: 8,
            },
            "paper" => Scale {
                slice_kib: 480 << 10,
                rr_drain: 4000,
                rr_ios: 10000,
                sr_drain: 4000,
                sr_ios: 10000,
                rw_ios: 122880,
                few_ios: 300,
                // quick's sequential write phase in lines: its blocks have 8× the pages, so a
                // line is 8× as many writes (with quick's 2,000 the 64 streams would write 3.9
                // lines and fit in the mapping cache).
                sw_ios: 16000,
                th_ios: 8000,
                hp_ios: 91750,
                hp_ms: &[6, 7, 8],
                deck_dram: "1900k".into(),
                deck_ios: 20000,
                deck_log_blocks: 8,
            },
            "tiny" => Scale {
                slice_kib: 1920,
                rr_drain: 100,
                rr_ios: 200,
                sr_drain: 100,
                sr_ios: 200,
                rw_ios: 480,
                few_ios: 30,
                sw_ios: 100,
                th_ios: 50,
                hp_ios: 358,
                hp_ms: &[2, 3, 4, 5],
                deck_dram: "8k".into(),
                deck_ios: 75,
                deck_log_blocks: 2,
            },
            other => return Err(ReproduceError::Preset(other.to_string())),
        })
    }
}

impl Scale {
    /// The scale of `config`'s preset at its capacity: [`Scale::of`] with the sizes that
    /// follow the device's size recomputed for the sized device — each job's slice (a 64th of
    /// the logical space), `randwrite`'s writes (a 64th of the logical pages per job), HP-FTL's
    /// writes (1.4 × the logical pages at `logical_ratio=0.5`), the lecture deck's mapping DRAM
    /// (in proportion to the logical pages, as a ratio of them) and FAST's log blocks (in
    /// proportion to the blocks per plane). The other request counts stay the preset's.
    /// Refused when a slice cannot hold the preset's sequential phases.
    pub fn for_config(config: &Config) -> Result<Scale, ReproduceError> {
        let scale = Scale::of(&config.preset)?;
        let Some(cap) = &config.capacity else {
            return Ok(scale);
        };
        let preset = DeviceConfig::preset(&config.preset)
            .map_err(|_| ReproduceError::Preset(config.preset.clone()))?;
        let sized = DeviceConfig::from_params_sized(&config.preset, Some(cap), &mut Params::new())
            .map_err(|e| match e {
                crate::error::ConfigError::Capacity(m) => ReproduceError::Capacity(m),
                e => ReproduceError::Capacity(e.to_string()),
            })?;
        let s = scale.sized(&preset, &sized);
        let pages = s.slice_kib / 4;
        let need = s.longest_sequential_job();
        if need > pages {
            return Err(ReproduceError::Capacity(format!(
                "{} is too small for the {} suite: its sequential jobs read {need} pages each \
                 in a 64th of the logical space, {pages} pages here; it needs at least {} B \
                 ({}), or a smaller preset",
                crate::error::quote(cap.text()),
                config.preset,
                need * 64 * 4096,
                crate::report::human_bytes(need * 64 * 4096),
            )));
        }
        Ok(s)
    }

    /// This scale (of the device `preset`) with the sizes that follow the device recomputed
    /// for `sized` (the same geometry but the blocks per plane).
    fn sized(self, preset: &DeviceConfig, sized: &DeviceConfig) -> Scale {
        let (g0, g) = (&preset.geometry, &sized.geometry);
        // HP-FTL's device: the same physical pages, logical_ratio=0.5 (as its runs set it).
        let hp_logical = (g.pages() as f64 * 0.5) as u64;
        let dram = parse_size(&self.deck_dram).expect("a size") as u128;
        let dram_kib = (dram * g.logical_pages as u128 / g0.logical_pages as u128 + 512) / 1024;
        let log_blocks = (self.deck_log_blocks as u64 * g.blocks_per_plane as u64
            + g0.blocks_per_plane as u64 / 2)
            / g0.blocks_per_plane as u64;
        Scale {
            slice_kib: g.logical_bytes() / 64 / 4096 * 4,
            rw_ios: g.logical_pages / 64,
            hp_ios: (hp_logical as f64 * 1.4 / 64.0) as u64,
            deck_dram: if dram_kib << 10 == dram {
                self.deck_dram.clone()
            } else {
                format!("{dram_kib}k")
            },
            deck_log_blocks: log_blocks.max(1) as u32,
            ..self
        }
    }

    /// Pages the longest sequential job of the suite reads or writes in its own slice.
    pub fn longest_sequential_job(&self) -> u64 {
        (self.sr_drain + THREADS.len() as u64 * self.th_ios)
            .max(self.sr_drain + self.sr_ios)
            .max(self.sw_ios)
    }
}

/// What an experiment's definition sees: the suite's settings and the preset's scale.
pub struct Ctx<'a> {
    /// The suite's settings.
    pub config: &'a Config,
    /// The preset's sizes.
    pub scale: &'a Scale,
}

impl Ctx<'_> {
    /// The LearnedFTL paper's FTLs, named: an FTL registered later does not join the paper's
    /// experiments.
    pub fn paper_ftls(&self) -> Vec<&'static str> {
        PAPER_FTLS.to_vec()
    }

    /// `r` on LearnedFTL's paper-literal design, if the suite runs it (`--paper-design`: its
    /// preconditionings simulate its collapse, most of the suite's time otherwise).
    pub(super) fn learned_paper(&self, r: RunSpec) -> Option<RunSpec> {
        self.config.paper_design.then(|| paper_design(r))
    }
}

/// One experiment.
#[derive(Debug)]
pub struct Def {
    /// Its name on the command line and in file names.
    pub name: &'static str,
    /// The section title (with the paper figure it reproduces).
    pub title: &'static str,
    /// Its runs (none: a section computed from other experiments' runs).
    pub runs: fn(&Ctx) -> Vec<RunSpec>,
    /// The experiments whose runs its section reads (itself unless derived).
    pub reads: &'static [&'static str],
    /// Renders its section from the results.
    pub section: Render,
    /// Why our numbers differ from the paper's (Markdown; causes as in docs/reproduction.md).
    pub differences: &'static str,
}

/// Renders a section from the results.
pub type Render = fn(&Results, &Def, &mut Section);

/// `r` with `design=paper`: the paper-literal design of the FTL it runs.
pub(super) fn paper_design(r: RunSpec) -> RunSpec {
    r.set("design", "paper")
}
