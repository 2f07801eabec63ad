//! `reproduce` and the three calls that hand its groups of units to other processes (Ray
//! tasks, in the package's `reproduce(backend="ray")`): `reproduce_plan` lists the groups the
//! cache lacks, `reproduce_group` simulates one and returns its cache entries,
//! `reproduce_store` puts entries into the cache. A suite's report is then rendered from the
//! cache, as `learnedftl reproduce` renders a re-run: the same files.

use crate::{decode, error, given, take, text, LearnedFtlError};
use learnedftl::config::Capacity;
use learnedftl::engine::NoProgress;
use learnedftl::host::AvailableMemory;
use learnedftl::reproduce::{self as library, Cache, Config, Def, Plan, Setup};
use learnedftl::run::parallel_jobs;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The keyword options of `reproduce` (and of the three calls after it), named as
/// `learnedftl reproduce`'s flags with `_` for `-`, plus `experiments` (a list of names).
pub const REPRODUCE_OPTIONS: &[&str] = &[
    "experiments",
    "preset",
    "capacity",
    "setup",
    "out",
    "seed",
    "traces",
    "recordings",
    "paper_design",
    "fresh",
];

/// A suite as the options describe it.
struct Suite {
    config: Config,
    defs: Vec<&'static Def>,
    out: PathBuf,
    fresh: bool,
}

impl Suite {
    /// Reads the options; the defaults are the CLI's.
    fn new(options: Option<&Bound<'_, PyDict>>) -> PyResult<Suite> {
        let (mut experiments, mut preset, mut setup) = (vec![], "quick".to_string(), None);
        let (mut capacity, mut out, mut seed) = (None, None, 1u64);
        let (mut traces, mut recordings) = (
            PathBuf::from("../shared/traces"),
            PathBuf::from("recordings"),
        );
        let (mut paper_design, mut fresh) = (false, false);
        for (key, value) in given(options)? {
            let v = &value;
            match key.as_str() {
                "experiments" => experiments = take::<Vec<String>>(&key, v)?,
                "preset" => preset = text(v)?,
                "capacity" => capacity = Some(text(v)?),
                "setup" => setup = Some(text(v)?),
                "out" => out = Some(take::<PathBuf>(&key, v)?),
                "seed" => seed = take(&key, v)?,
                "traces" => traces = take(&key, v)?,
                "recordings" => recordings = take(&key, v)?,
                "paper_design" => paper_design = take(&key, v)?,
                "fresh" => fresh = take(&key, v)?,
                other => {
                    return Err(LearnedFtlError::new_err(format!(
                        "unknown option {other:?} (one of: {})",
                        REPRODUCE_OPTIONS.join(", ")
                    )))
                }
            }
        }
        let bad = |key: &str, e: String| LearnedFtlError::new_err(format!("{key}: {e}"));
        let setup: Setup = match setup {
            Some(s) => s.parse().map_err(|e| bad("setup", e))?,
            None => Setup::Default,
        };
        let capacity = capacity
            .map(|c| {
                c.parse::<Capacity>()
                    .map_err(|e| bad("capacity", e.to_string()))
            })
            .transpose()?;
        let config = Config {
            preset,
            capacity,
            setup,
            seed,
            traces_dir: traces,
            recordings_dir: recordings,
            paper_design,
        };
        library::Scale::for_config(&config).map_err(error)?;
        Ok(Suite {
            out: out.unwrap_or_else(|| config.default_out()),
            defs: library::select(&experiments).map_err(error)?,
            config,
            fresh,
        })
    }

    /// The cache in `dir` (the suite's own: `None`), for results of this package's build.
    fn cache(&self, py: Python<'_>, dir: Option<&Path>) -> PyResult<Cache> {
        // The simulator is this extension module, not the Python executable running it.
        let module: PathBuf = py
            .import("learnedftl._learnedftl")?
            .getattr("__file__")?
            .extract()?;
        let build = Cache::build_identity_of(env!("CARGO_PKG_VERSION"), &module).map_err(error)?;
        let dir = dir.map_or_else(|| self.out.join("cache"), Path::to_path_buf);
        let cache = Cache::new(Some(&dir), &build);
        Ok(if self.fresh {
            cache.refreshing()
        } else {
            cache
        })
    }

    fn plan(&self, cache: &Cache) -> PyResult<Plan> {
        Plan::new(&self.config, &self.defs, cache).map_err(error)
    }
}

/// Runs the suite as `learnedftl reproduce` does (`jobs` at a time, default the machine's
/// cores), writing the same files to `out`; returns a summary: `out`, `runs`, `cached`,
/// `simulated`, `shared`, `starts` (preparations), `shared_starts` (false when a prepared
/// state and its copy do not fit in memory, so each run prepared its own), `failures` (runs
/// that failed unexpectedly), `checks_failed`, `checks_known` and `seconds`.
#[pyfunction]
#[pyo3(signature = (jobs = None, **options))]
pub fn reproduce(
    py: Python<'_>,
    jobs: Option<usize>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyObject> {
    let t0 = Instant::now();
    let suite = Suite::new(options)?;
    let cache = suite.cache(py, None)?;
    let mut plan = suite.plan(&cache)?;
    let jobs = plan.workers(parallel_jobs(jobs).map_err(error)?);
    let summary = py.allow_threads(|| {
        let shared = plan
            .fit_memory(jobs, &AvailableMemory::now())
            .map_err(error)?;
        let work = plan.work(&cache);
        library::write_jobs(&suite.out, &plan).map_err(error)?;
        let results = plan.execute(&cache, jobs, |_| NoProgress, |_, _| {});
        library::write_report(&suite.out, &suite.config, &suite.defs, &results).map_err(error)?;
        let checks = library::checks(&results);
        let (known, failed): (Vec<_>, Vec<_>) = checks.iter().partition(|c| c.known.is_some());
        Ok::<_, PyErr>(serde_json::json!({
            "out": suite.out,
            "runs": plan.units().len(),
            "cached": work.cached,
            "simulated": work.simulate,
            "shared": work.shared,
            "starts": work.starts,
            "shared_starts": shared,
            "failures": results.failures(),
            "checks_failed": failed.iter().map(|c| &c.what).collect::<Vec<_>>(),
            "checks_known": known.iter().map(|c| &c.what).collect::<Vec<_>>(),
            "seconds": t0.elapsed().as_secs_f64(),
        }))
    })?;
    decode(py, serde_json::to_string(&summary))
}

/// The groups of units the suite's cache does not hold: a list of `{group, keys, units,
/// memory_bytes, state_bytes}`, each one task for `reproduce_group` (or, where no machine has
/// `memory_bytes`, one task per key asking for `state_bytes`).
#[pyfunction]
#[pyo3(signature = (**options))]
pub fn reproduce_plan(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<PyObject> {
    let suite = Suite::new(options)?;
    let cache = suite.cache(py, None)?;
    let groups = suite.plan(&cache)?.groups(&cache);
    decode(py, serde_json::to_string(&groups))
}

/// Simulates the units `keys` of `group` (a `reproduce_plan` entry made by the same build)
/// one after the other from one preparation, touching no cache of the suite's; returns
/// `(key, entry)` for each unit that succeeded, `entry` the text `reproduce_store` takes.
#[pyfunction]
#[pyo3(signature = (group, keys, **options))]
pub fn reproduce_group(
    py: Python<'_>,
    group: &str,
    keys: Vec<String>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<(String, String)>> {
    let suite = Suite::new(options)?;
    let scratch =
        std::env::temp_dir().join(format!("learnedftl-group-{}-{group}", std::process::id()));
    let cache = suite.cache(py, Some(&scratch))?.refreshing();
    let mut plan = suite.plan(&cache)?;
    plan.retain_group(group, &keys).map_err(error)?;
    let entries = py.allow_threads(|| {
        plan.execute(&cache, 1, |_| NoProgress, |_, _| {});
        keys.iter()
            .filter_map(|k| cache.entry(k).map(|e| (k.clone(), e)))
            .collect()
    });
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(entries)
}

/// Stores `(key, entry)` pairs from `reproduce_group` in the suite's cache; returns how many.
#[pyfunction]
#[pyo3(signature = (entries, **options))]
pub fn reproduce_store(
    py: Python<'_>,
    entries: Vec<(String, String)>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<usize> {
    let suite = Suite::new(options)?;
    let cache = suite.cache(py, None)?;
    for (key, entry) in &entries {
        cache.store_entry(key, entry).map_err(error)?;
    }
    Ok(entries.len())
}
