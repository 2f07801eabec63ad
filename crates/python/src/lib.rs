//! `learnedftl._learnedftl`: the Python binding of the learnedftl library. A thin layer: keyword
//! arguments fill the library's [`RunOptions`] (as the CLI's flags do), the library builds and
//! runs the experiment with the GIL released, and the report comes back as the same JSON the
//! CLI writes with `--json`, decoded into Python objects.

use learnedftl::engine::NoProgress;
use learnedftl::ftl::FTLS;
use learnedftl::host::AvailableMemory;
use learnedftl::run::{parallel_jobs, Experiment, RunOptions};
use pyo3::create_exception;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::path::PathBuf;

mod reproduce;

/// The simulator's large tables on huge pages (learnedftl::host::huge_pages: less CPU time for
/// the same results).
#[global_allocator]
static ALLOC: learnedftl::host::huge_pages::HugePages = learnedftl::host::huge_pages::HugePages;

create_exception!(
    learnedftl,
    LearnedFtlError,
    PyValueError,
    "A bad option or parameter, or a failed run; the message is the library's and names the \
     option, parameter or FTL at fault."
);

/// The keyword options of `run` and `compare`, named as [`RunOptions`]' fields (the CLI's flags
/// with `_` for `-`; `set` is `--set` as a dict).
const OPTIONS: &[&str] = &[
    "preset",
    "capacity",
    "set",
    "precondition",
    "job",
    "trace",
    "format",
    "skip_bad_lines",
    "blkparse_action",
    "speed",
    "address_policy",
    "max_requests",
    "device_filter",
    "placement_by",
    "fill_unwritten",
    "replay",
    "phases",
    "rw",
    "bs",
    "numjobs",
    "iodepth",
    "io_size",
    "number_ios",
    "runtime",
    "offset",
    "size",
    "rwmixread",
    "random_distribution",
    "norandommap",
    "fsync",
    "fdp",
    "fdp_pli",
    "fdp_pli_select",
    "settle",
    "seed",
    "verify",
    "power_cut_every",
];

/// A library error as a Python exception, with its whole chain of causes (as the CLI prints it).
fn error(e: impl Into<anyhow::Error>) -> PyErr {
    LearnedFtlError::new_err(format!("{:#}", e.into()))
}

/// `value` as the text a user would write on the command line: Python's `str()`, except that
/// booleans are `true`/`false` (so `set={"gc_bg": True}` works).
fn text(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(b) = value.extract::<bool>() {
        return Ok(b.to_string());
    }
    Ok(value.str()?.to_string())
}

/// Extracts option `key`, naming it if the value has the wrong type.
fn take<'py, T: FromPyObject<'py>>(key: &str, value: &Bound<'py, PyAny>) -> PyResult<T> {
    value
        .extract()
        .map_err(|e| LearnedFtlError::new_err(format!("{key}: {e}")))
}

/// The keyword arguments given a value: `(name, value)`, those set to `None` left out (they
/// keep the option's default).
fn given<'py>(kwargs: Option<&Bound<'py, PyDict>>) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
    let mut out = vec![];
    for (key, value) in kwargs.into_iter().flatten() {
        if !value.is_none() {
            out.push((key.extract()?, value));
        }
    }
    Ok(out)
}

/// Fills [`RunOptions`] from keyword arguments; `None` leaves an option at its default.
fn run_options(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<RunOptions> {
    let mut o = RunOptions::default();
    for (key, value) in given(kwargs)? {
        let v = &value;
        match key.as_str() {
            "preset" => o.preset = text(v)?,
            "capacity" => o.capacity = Some(text(v)?),
            "set" => {
                let params = v
                    .downcast::<PyDict>()
                    .map_err(|_| LearnedFtlError::new_err("set: expected a dict of parameters"))?;
                for (k, v) in params {
                    o.params.insert(&text(&k)?, &text(&v)?, "set");
                }
            }
            "precondition" => o.precondition = Some(text(v)?),
            "job" => o.job = Some(take::<PathBuf>(&key, v)?),
            "trace" => o.trace = Some(take::<PathBuf>(&key, v)?),
            "format" => o.format = Some(text(v)?),
            "skip_bad_lines" => o.skip_bad_lines = take(&key, v)?,
            "blkparse_action" => o.blkparse_action = take(&key, v)?,
            "speed" => o.speed = take(&key, v)?,
            "address_policy" => o.address_policy = text(v)?,
            "max_requests" => o.max_requests = Some(take(&key, v)?),
            "device_filter" => o.device_filter = Some(take(&key, v)?),
            "placement_by" => o.placement_by = Some(text(v)?),
            "fill_unwritten" => o.fill_unwritten = take(&key, v)?,
            "replay" => o.replay = text(v)?,
            "phases" => o.phases = Some(take::<PathBuf>(&key, v)?),
            "rw" => o.rw = Some(text(v)?),
            "bs" => o.bs = Some(text(v)?),
            "numjobs" => o.numjobs = Some(take(&key, v)?),
            "iodepth" => o.iodepth = Some(take(&key, v)?),
            "io_size" => o.io_size = Some(text(v)?),
            "number_ios" => o.number_ios = Some(take(&key, v)?),
            "runtime" => o.runtime = Some(text(v)?),
            "offset" => o.offset = Some(text(v)?),
            "size" => o.size = Some(text(v)?),
            "rwmixread" => o.rwmixread = Some(take(&key, v)?),
            "random_distribution" => o.random_distribution = Some(text(v)?),
            "norandommap" => o.norandommap = take(&key, v)?,
            "fsync" => o.fsync = Some(take(&key, v)?),
            "fdp" => o.fdp = take(&key, v)?,
            "fdp_pli" => o.fdp_pli = Some(text(v)?),
            "fdp_pli_select" => o.fdp_pli_select = Some(text(v)?),
            "settle" => o.settle = text(v)?,
            "seed" => o.seed = take(&key, v)?,
            "verify" => o.verify = take(&key, v)?,
            "power_cut_every" => o.power_cut_every = Some(take(&key, v)?),
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "unexpected keyword argument '{key}' (options: ftl, {})",
                    OPTIONS.join(", ")
                )))
            }
        }
    }
    Ok(o)
}

/// The experiment `options` describe, checked against the memory `at_once` simulators need
/// (before anything is built) and against `ftls`.
fn experiment(options: &RunOptions, ftls: &[&str], at_once: usize) -> PyResult<Experiment> {
    let e = options.experiment(&mut |_| {}).map_err(error)?;
    e.check_memory(at_once, &AvailableMemory::now())
        .map_err(error)?;
    e.check_params(ftls).map_err(error)?;
    Ok(e)
}

/// Serialised reports as Python objects: the JSON the CLI writes, through `json.loads`.
fn decode(py: Python<'_>, json: serde_json::Result<String>) -> PyResult<PyObject> {
    let json = json.map_err(error)?;
    Ok(py.import("json")?.call_method1("loads", (json,))?.unbind())
}

/// Runs a workload on one FTL; returns the report of `learnedftl run --json`.
#[pyfunction]
#[pyo3(signature = (ftl = "ideal", **options))]
fn run(py: Python<'_>, ftl: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<PyObject> {
    let options = run_options(options)?;
    let json = py.allow_threads(|| {
        let e = experiment(&options, &[ftl], 1)?;
        let report = e
            .run(ftl, &mut NoProgress)
            .map_err(|err| error(anyhow::Error::new(err).context(format!("{ftl}: run failed"))))?;
        Ok::<_, PyErr>(serde_json::to_string(&report))
    })?;
    decode(py, json)
}

/// Runs the same workload on several FTLs (default: every implemented one), `jobs` at a time
/// (default: the machine's cores); returns the reports of `learnedftl compare --json`.
#[pyfunction]
#[pyo3(signature = (ftls = None, jobs = None, **options))]
fn compare(
    py: Python<'_>,
    ftls: Option<Vec<String>>,
    jobs: Option<usize>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyObject> {
    let options = run_options(options)?;
    let names: Vec<&str> = match &ftls {
        Some(f) => f.iter().map(String::as_str).collect(),
        None => FTLS.to_vec(),
    };
    if names.is_empty() {
        return Err(LearnedFtlError::new_err("ftls: no FTL given"));
    }
    let jobs = parallel_jobs(jobs).map_err(error)?;
    let json = py.allow_threads(|| {
        let e = experiment(&options, &names, jobs.min(names.len()))?;
        let runs = e
            .run_all(&names, jobs, |_| NoProgress)
            .map_err(|(ftl, err)| {
                error(anyhow::Error::new(err).context(format!("{ftl}: run failed")))
            })?;
        Ok::<_, PyErr>(serde_json::to_string(&runs))
    })?;
    decode(py, json)
}

/// The native module: `run`, `compare`, `reproduce` and its distributed steps,
/// `LearnedFtlError`, and the names of the FTLs, presets and options.
#[pymodule]
fn _learnedftl(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce::reproduce, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce::reproduce_plan, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce::reproduce_group, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce::reproduce_store, m)?)?;
    m.add("LearnedFtlError", py.get_type::<LearnedFtlError>())?;
    m.add("FTLS", PyTuple::new(py, FTLS)?)?;
    m.add("PRESETS", PyTuple::new(py, learnedftl::config::PRESETS)?)?;
    m.add("OPTIONS", PyTuple::new(py, OPTIONS)?)?;
    m.add(
        "REPRODUCE_OPTIONS",
        PyTuple::new(py, reproduce::REPRODUCE_OPTIONS)?,
    )?;
    Ok(())
}
