//! `learnedftl reproduce`: the papers' experiments (SPEC §7) as one suite — the experiment
//! registry ([`registry::EXPERIMENTS`], one place to add an experiment), a planner that groups
//! runs by identical preconditioned state and prepares each state once ([`exec::Plan`]), a
//! parallel executor, a result cache keyed by the full configuration and the build
//! ([`cache::Cache`]), and the report: our numbers beside the papers', the cause of every
//! difference, sanity checks, charts ([`document`], [`checks`]).
//!
//! The CLI and the Python package are thin layers: they parse options and show progress; the
//! files are written here ([`output`]). For other machines, [`Plan::groups`] lists the units
//! the cache lacks by shared start, [`Plan::retain_group`] narrows a plan to one, and
//! [`Cache::entry`] / [`Cache::store_entry`] carry the results back (the Python package's
//! `reproduce(backend="ray")`).

pub mod cache;
pub mod def;
pub mod doc;
pub mod exec;
pub mod fdp;
pub mod output;
pub mod registry;
mod report;
mod sections;
pub mod spec;
pub mod sweeps;
pub mod theory;
pub mod validation;

pub use cache::Cache;
pub use def::{Def, Scale};
pub use exec::{GroupPlan, Plan, Unit, Work};
pub use output::{write_jobs, write_report};
pub use registry::EXPERIMENTS;
pub use report::{checks, document, Finding};
pub use spec::{RunSpec, WorkloadSpec};

use crate::config::Capacity;
use crate::report::plot::PlotError;
use crate::run::OptionsError;
use serde::Serialize;
use std::path::PathBuf;
use std::str::FromStr;
use thiserror::Error;

/// Why the suite cannot be planned or run.
#[derive(Debug, Error)]
pub enum ReproduceError {
    /// No such experiment.
    #[error("unknown experiment {0:?} (one of: {names})", names = EXPERIMENTS.iter().map(|d| d.name).collect::<Vec<_>>().join(", "))]
    Experiment(String),
    /// No scale for this preset.
    #[error("unknown preset {0:?} (paper, quick, tiny, 980pro or a PATH.preset file)")]
    Preset(String),
    /// A run's options are bad (a registry error, or a bad setup).
    #[error("run {label:?}: {source}")]
    Run {
        /// The run.
        label: String,
        /// What is wrong.
        #[source]
        source: Box<OptionsError>,
    },
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A bad `--capacity`, or one the preset's suite cannot run at (the message quotes it).
    #[error("capacity: {0}")]
    Capacity(String),
    /// The simulators would not fit in memory.
    #[error("{0}")]
    Memory(String),
    /// A chart could not be drawn.
    #[error("{0}")]
    Plot(#[from] PlotError),
    /// Results computed elsewhere (a Ray task) do not fit this suite: another build, or a
    /// damaged entry.
    #[error("{0}")]
    Foreign(String),
    /// A bug in the registry.
    #[error("internal: {0}")]
    Internal(String),
}

/// The setup every run uses (docs/reproduction.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Setup {
    /// The simulator's defaults: gap-filling timing, one GC reserve, a settle phase.
    Default,
    /// The paper's FEMU setup: `timing=femu gc=femu`, no settle phase.
    Femu,
}

impl FromStr for Setup {
    type Err = String;
    fn from_str(s: &str) -> Result<Setup, String> {
        match s {
            "default" => Ok(Setup::Default),
            "femu" => Ok(Setup::Femu),
            _ => Err(format!("unknown setup {s:?} (default or femu)")),
        }
    }
}

/// The suite's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Device preset: paper, quick, tiny or 980pro (docs/device.md "Drive presets"), or a drive preset file (PATH.preset).
    pub preset: String,
    /// The preset scaled to this logical capacity (`--capacity`; [`Capacity`]) in every run;
    /// the workloads' sizes that follow the capacity follow it ([`Scale::for_config`]).
    pub capacity: Option<Capacity>,
    /// Setup of every run.
    pub setup: Setup,
    /// Seed of every run.
    pub seed: u64,
    /// Where the sample traces are (`websearch-small.disksim`, `tpcc-small.disksim`); the
    /// trace experiment skips those absent.
    pub traces_dir: PathBuf,
    /// Where the shipped learnedftl recordings are (the repository's `recordings/`); the
    /// experiments replaying them skip those absent.
    pub recordings_dir: PathBuf,
    /// Also run LearnedFTL's paper-literal design (`design=paper`) where an experiment is
    /// about its mechanism, and the ablations of its switches (`--paper-design`;
    /// docs/reproduction.md says why they are not in the default suite).
    pub paper_design: bool,
}

impl Config {
    /// Where the suite writes unless told: `results/PRESET`, with `-CAPACITY` under
    /// `--capacity` and `-femu` under `--setup femu`.
    pub fn default_out(&self) -> PathBuf {
        let mut name = self.preset.clone();
        if let Some(c) = &self.capacity {
            name += &format!("-{}", c.canonical());
        }
        if self.setup == Setup::Femu {
            name += "-femu";
        }
        PathBuf::from("results").join(name)
    }
}

/// The experiments named (all when none is), in registry order. A derived experiment (one
/// that reads other experiments' runs) is included when it or one of its sources is named.
pub fn select(names: &[String]) -> Result<Vec<&'static Def>, ReproduceError> {
    if let Some(n) = names
        .iter()
        .find(|n| !EXPERIMENTS.iter().any(|d| d.name == n.as_str()))
    {
        return Err(ReproduceError::Experiment(n.clone()));
    }
    Ok(EXPERIMENTS
        .iter()
        .filter(|d| {
            let named = |n: &str| names.iter().any(|m| m == n);
            names.is_empty()
                || named(d.name)
                || (d.reads != [d.name] && d.reads.iter().any(|r| named(r)))
        })
        .collect())
}

/// A unit's outcome.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The run report (JSON), or why there is none.
    pub report: Result<serde_json::Value, String>,
    /// Wall time of the unit's own work (its share of a shared preparation not included),
    /// seconds; for a cached unit, the time it took when it ran.
    pub wall_seconds: f64,
    /// Loaded from the cache, or copied from the identical unit of another experiment that
    /// ran in the same suite.
    pub cached: bool,
}

/// One run's results: every FTL's report (`compare --json`'s objects), or its error.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    /// The run's label.
    pub label: String,
    /// The equivalent `learnedftl compare` command.
    pub command: String,
    /// Wall time of its FTLs' own work, summed (shared preparations not included), seconds.
    pub wall_seconds: f64,
    /// How many of its FTLs came from the cache.
    pub cached: usize,
    /// One report per FTL that ran.
    pub reports: Vec<serde_json::Value>,
    /// The first FTL's error, if any failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// An error is an expected outcome of this run.
    #[serde(skip)]
    pub may_refuse: bool,
}

/// One experiment's results (`DIR/<experiment>.json`).
#[derive(Clone, Debug, Serialize)]
pub struct ExperimentResult {
    /// Its name.
    pub experiment: String,
    /// The preset.
    pub preset: String,
    /// The logical capacity asked for (`--capacity`), bytes; absent when none was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<u64>,
    /// Its runs in order.
    pub runs: Vec<RunResult>,
}

/// Every experiment's results.
#[derive(Clone, Debug)]
pub struct Results {
    /// In registry order.
    pub experiments: Vec<ExperimentResult>,
}

impl Results {
    /// The results of experiment `name`, if it ran.
    pub fn get(&self, name: &str) -> Option<&ExperimentResult> {
        self.experiments
            .iter()
            .find(|e| e.experiment == name && !e.runs.is_empty())
    }

    /// Errors that were not expected: runs that failed without `may_refuse`.
    pub fn failures(&self) -> Vec<String> {
        self.experiments
            .iter()
            .flat_map(|e| e.runs.iter().map(move |r| (e, r)))
            .filter(|(_, r)| !r.may_refuse)
            .filter_map(|(e, r)| {
                r.error
                    .as_ref()
                    .map(|err| format!("{} / {}: {err}", e.experiment, r.label))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn experiments_are_selected_by_name_in_registry_order() {
        let all = select(&[]).unwrap();
        assert_eq!(all.len(), EXPERIMENTS.len());
        let some = select(&["dram".into(), "randread".into()]).unwrap();
        assert_eq!(
            some.iter().map(|d| d.name).collect::<Vec<_>>(),
            ["randread", "training", "dram"],
            "training reads randread's runs"
        );
        let e = select(&["nope".into()]).err().unwrap().to_string();
        assert!(
            e.contains("unknown experiment \"nope\"") && e.contains("randread"),
            "{e}"
        );
        assert_eq!("femu".parse::<Setup>(), Ok(Setup::Femu));
        assert!("fast".parse::<Setup>().is_err());
    }
}
