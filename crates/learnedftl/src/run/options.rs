//! Run options as a user gives them — a preset, `key=value` parameters and fio-style job
//! options as text — turned into an [`Experiment`]. The CLI's `run`/`compare` flags and the
//! Python binding's keyword arguments both fill a [`RunOptions`], so the same options make the
//! same experiment whichever front end is used.

use super::{Experiment, Precondition, TraceWorkload, Workload};
use crate::config::{Capacity, DeviceConfig};
use crate::engine::Verify;
use crate::error::ConfigError;
use crate::params::{parse_duration_ns, parse_size, Params};
use crate::trace::{self, TraceError};
use crate::workload::fio::{self, JobFileError};
use crate::workload::{parse_plis, Dist, JobSpec, Phase, RwKind};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The built-in default workload's preconditioning: random 512 KiB writes of twice the
/// capacity (used when no workload is given).
pub const DEFAULT_PRECONDITION: &str = "randwrite:512k:2";
/// The built-in default workload's requests per job (4 KiB random reads, 64 jobs).
pub const DEFAULT_READ_IOS_PER_JOB: u64 = 4096;
/// The built-in default workload's jobs.
pub const DEFAULT_READ_NUMJOBS: u32 = 64;

/// Why [`RunOptions`] do not make an experiment. Every message names the option or parameter
/// at fault.
#[derive(Debug, Error)]
pub enum OptionsError {
    /// An option's value is malformed, or the option makes no sense with the others.
    #[error("{option}: {message}")]
    Option {
        /// The option, as [`RunOptions`] names its field (e.g. `number_ios`).
        option: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A device or FTL parameter, or the preset, is bad.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The job file cannot be read.
    #[error("cannot read job file {path}")]
    ReadJobFile {
        /// The file as given.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The job file is malformed.
    #[error(transparent)]
    JobFile(#[from] JobFileError),
    /// The job built from the options is impossible (the message names the field).
    #[error("{0}")]
    Job(String),
    /// The trace cannot be opened or its format told.
    #[error(transparent)]
    Trace(#[from] TraceError),
}

fn bad(option: &'static str, message: impl ToString) -> OptionsError {
    OptionsError::Option {
        option,
        message: message.to_string(),
    }
}

/// Everything `learnedftl run` takes besides the FTL, in the form a user writes it. Exactly one
/// workload: `job`, `trace`, or `rw` with the job options; none of them runs the built-in
/// default (4 KiB random reads with 64 jobs after [`DEFAULT_PRECONDITION`]).
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Device preset: paper, quick, tiny or 980pro (docs/device.md "Drive presets"), or a drive preset file (PATH.preset).
    pub preset: String,
    /// The preset scaled to this logical capacity by its blocks per plane (`1TiB`, `32GiB`,
    /// bytes; [`Capacity`]).
    pub capacity: Option<String>,
    /// Device and FTL parameters (`--set key=value`).
    pub params: Params,
    /// Preconditioning, `RW:BS:MULTIPLE`.
    pub precondition: Option<String>,
    /// A fio job file; sections separated by `stonewall` run as consecutive phases.
    pub job: Option<PathBuf>,
    /// A block trace replayed open-loop.
    pub trace: Option<PathBuf>,
    /// The trace's format (`None`: detected from the content).
    pub format: Option<String>,
    /// Count malformed trace lines instead of stopping at the first.
    pub skip_bad_lines: bool,
    /// blkparse: the action to keep.
    pub blkparse_action: char,
    /// Trace replay: divide inter-arrival times by this factor.
    pub speed: f64,
    /// Trace replay: refuse, wrap or clip requests beyond the logical space.
    pub address_policy: String,
    /// Trace replay: stop after this many requests.
    pub max_requests: Option<u64>,
    /// Trace replay: keep only this device number.
    pub device_filter: Option<u32>,
    /// Trace replay: placement IDs for writes the trace gives none: `lba:N` or
    /// `size:BYTES,...` (docs/fdp.md).
    pub placement_by: Option<String>,
    /// Trace replay: first write every page the trace reads before writing it.
    pub fill_unwritten: bool,
    /// Trace replay: `open` (at the recorded arrivals) or `closed` (a learnedftl recording:
    /// each request after what it waited for).
    pub replay: String,
    /// Closed-loop replay: the recorded application's phases
    /// (`name,start_unix_ns,end_unix_ns[,ops]` lines).
    pub phases: Option<PathBuf>,
    /// Access pattern of the job: read, write, trim, randread, randwrite, randtrim, rw, randrw.
    pub rw: Option<String>,
    /// Block size (fio syntax).
    pub bs: Option<String>,
    /// Job clones.
    pub numjobs: Option<u32>,
    /// Requests in flight per clone.
    pub iodepth: Option<u32>,
    /// Bytes each clone issues.
    pub io_size: Option<String>,
    /// Requests each clone issues.
    pub number_ios: Option<u64>,
    /// Simulated time limit (runs until then if neither `io_size` nor `number_ios` is given).
    pub runtime: Option<String>,
    /// Region start.
    pub offset: Option<String>,
    /// Region size (default: the rest of the logical space).
    pub size: Option<String>,
    /// Percentage of reads in mixed jobs.
    pub rwmixread: Option<u32>,
    /// random, zipf:THETA, pareto:H or normal:DEV.
    pub random_distribution: Option<String>,
    /// Draw uniform offsets independently instead of fio's once-per-pass random map.
    pub norandommap: bool,
    /// A FLUSH after every this many writes of each clone (fio's `fsync`).
    pub fsync: Option<u64>,
    /// Writes carry FDP placement IDs (fio's `fdp=1`; docs/fdp.md).
    pub fdp: bool,
    /// The placement ID indices writes use (fio's `fdp_pli`: `0,2,5-7`; default: every
    /// handle).
    pub fdp_pli: Option<String>,
    /// How each write picks one: roundrobin (default) or random (fio's `fdp_pli_select`).
    pub fdp_pli_select: Option<String>,
    /// Idle time after preconditioning: auto, off or a duration.
    pub settle: String,
    /// Seed for every random choice.
    pub seed: u64,
    /// Check every read against the oracle; stop at the first wrong one.
    pub verify: bool,
    /// Cut the power once in every window of this many host requests of the workload, each
    /// followed by a recovery of the FTL from flash (docs/power.md).
    pub power_cut_every: Option<u64>,
}

impl Default for RunOptions {
    /// The CLI's defaults: the `quick` preset, the built-in workload, `settle=auto`, seed 1.
    fn default() -> Self {
        RunOptions {
            preset: "quick".into(),
            capacity: None,
            params: Params::new(),
            precondition: None,
            job: None,
            trace: None,
            format: None,
            skip_bad_lines: false,
            blkparse_action: 'Q',
            speed: 1.0,
            address_policy: "refuse".into(),
            max_requests: None,
            device_filter: None,
            placement_by: None,
            fill_unwritten: false,
            replay: "open".into(),
            phases: None,
            rw: None,
            bs: None,
            numjobs: None,
            iodepth: None,
            io_size: None,
            number_ios: None,
            runtime: None,
            offset: None,
            size: None,
            rwmixread: None,
            random_distribution: None,
            norandommap: false,
            fsync: None,
            fdp: false,
            fdp_pli: None,
            fdp_pli_select: None,
            settle: "auto".into(),
            seed: 1,
            verify: false,
            power_cut_every: None,
        }
    }
}

impl RunOptions {
    /// Builds the experiment. `note` hears what a user should be told on the way (a trace
    /// format detected from the content).
    pub fn experiment(&self, note: &mut dyn FnMut(&str)) -> Result<Experiment, OptionsError> {
        self.build(None, note)
    }

    /// Builds the experiment with a job file given as text (`name` stands for its path in
    /// messages) as the workload: for drivers that generate job files
    /// ([`crate::reproduce`]). The options must name no other workload.
    pub fn experiment_with_job_text(
        &self,
        name: &str,
        text: &str,
    ) -> Result<Experiment, OptionsError> {
        if self.job.is_some() || self.trace.is_some() || self.rw.is_some() {
            return Err(bad("job", "a job text is the workload: give no other"));
        }
        self.build(Some((name, text)), &mut |_| {})
    }

    fn build(
        &self,
        job_text: Option<(&str, &str)>,
        note: &mut dyn FnMut(&str),
    ) -> Result<Experiment, OptionsError> {
        self.check_combination()?;
        let mut params = self.params.clone();
        let device = self.device(&mut params)?;
        let logical = device.geometry.logical_bytes();
        let mut precondition = self.precondition.as_deref();
        let workload = match (job_text, &self.trace, &self.job, &self.rw) {
            (Some((name, text)), ..) => {
                Workload::Jobs(fio::parse_bytes(text.as_bytes(), name, logical)?)
            }
            (None, Some(path), _, _) => Workload::Trace(self.trace_workload(path, note)?),
            (None, None, Some(path), _) => {
                let bytes = std::fs::read(path).map_err(|source| OptionsError::ReadJobFile {
                    path: path.display().to_string(),
                    source,
                })?;
                Workload::Jobs(fio::parse_bytes(
                    &bytes,
                    &path.display().to_string(),
                    logical,
                )?)
            }
            (None, None, None, Some(rw)) => {
                let job = self.job_from_options(rw)?;
                job.validate(logical).map_err(OptionsError::Job)?;
                Workload::Jobs(vec![measure(job)])
            }
            (None, None, None, None) => {
                precondition = precondition.or(Some(DEFAULT_PRECONDITION));
                let mut job = JobSpec::new("measure", RwKind::RandRead);
                job.numjobs = DEFAULT_READ_NUMJOBS;
                job.number_ios = Some(DEFAULT_READ_IOS_PER_JOB);
                Workload::Jobs(vec![measure(job)])
            }
        };
        let precondition = precondition
            .map(|p| {
                p.parse::<Precondition>()
                    .map_err(|e| bad("precondition", e))
            })
            .transpose()?;
        Ok(Experiment {
            device,
            params,
            precondition,
            workload,
            settle: self.settle.parse().map_err(|e| bad("settle", e))?,
            seed: self.seed,
            verify: if self.verify {
                Verify::FailFast
            } else {
                Verify::Off
            },
            power_cut_every: match self.power_cut_every {
                Some(0) => return Err(bad("power_cut_every", "0 requests: need at least 1")),
                n => n,
            },
        })
    }

    /// The device: the preset, sized by `capacity` if given, with the device keys of `params`
    /// (taken from it). A capacity's error is the option's.
    pub fn device(&self, params: &mut Params) -> Result<DeviceConfig, OptionsError> {
        let capacity_error = |e| match e {
            ConfigError::Capacity(message) => bad("capacity", message),
            e => OptionsError::Config(e),
        };
        let capacity = self
            .capacity
            .as_deref()
            .map(str::parse::<Capacity>)
            .transpose()
            .map_err(capacity_error)?;
        DeviceConfig::from_params_sized(&self.preset, capacity.as_ref(), params)
            .map_err(capacity_error)
    }

    /// Refuses options that belong to a workload other than the one chosen (the CLI's parser
    /// already refuses these; other front ends rely on this check).
    fn check_combination(&self) -> Result<(), OptionsError> {
        let workloads = [
            ("trace", self.trace.is_some()),
            ("job", self.job.is_some()),
            ("rw", self.rw.is_some()),
        ];
        let given: Vec<&str> = workloads.iter().filter(|w| w.1).map(|w| w.0).collect();
        if given.len() > 1 {
            return Err(bad(
                given[1],
                format!("cannot be used with {}: give one workload", given[0]),
            ));
        }
        let job_options = [
            ("bs", self.bs.is_some()),
            ("numjobs", self.numjobs.is_some()),
            ("iodepth", self.iodepth.is_some()),
            ("io_size", self.io_size.is_some()),
            ("number_ios", self.number_ios.is_some()),
            ("runtime", self.runtime.is_some()),
            ("offset", self.offset.is_some()),
            ("size", self.size.is_some()),
            ("rwmixread", self.rwmixread.is_some()),
            ("random_distribution", self.random_distribution.is_some()),
            ("norandommap", self.norandommap),
            ("fsync", self.fsync.is_some()),
            ("fdp", self.fdp),
            ("fdp_pli", self.fdp_pli.is_some()),
            ("fdp_pli_select", self.fdp_pli_select.is_some()),
        ];
        let trace_options = [
            ("speed", self.speed != 1.0),
            ("address_policy", self.address_policy != "refuse"),
            ("max_requests", self.max_requests.is_some()),
            ("device_filter", self.device_filter.is_some()),
            ("placement_by", self.placement_by.is_some()),
            ("fill_unwritten", self.fill_unwritten),
            ("replay", self.replay != "open"),
            ("phases", self.phases.is_some()),
        ];
        for (options, needs, present) in [
            (&job_options[..], "rw", self.rw.is_some()),
            (&trace_options[..], "trace", self.trace.is_some()),
        ] {
            if let Some((option, _)) = options.iter().find(|o| o.1 && !present) {
                return Err(bad(option, format!("needs {needs}")));
            }
        }
        Ok(())
    }

    fn job_from_options(&self, rw: &str) -> Result<JobSpec, OptionsError> {
        let rw: RwKind = rw.parse().map_err(|e| bad("rw", e))?;
        let mut j = JobSpec::new("measure", rw);
        let size = |option: &'static str, v: &Option<String>| {
            v.as_deref()
                .map(|s| {
                    parse_size(s).ok_or_else(|| {
                        bad(option, format!("'{s}' is not a size (e.g. 4k, 512k, 1g)"))
                    })
                })
                .transpose()
        };
        if let Some(bs) = size("bs", &self.bs)? {
            j.bs = bs;
        }
        j.numjobs = self.numjobs.unwrap_or(1);
        j.iodepth = self.iodepth.unwrap_or(1);
        j.io_size = size("io_size", &self.io_size)?;
        j.number_ios = self.number_ios;
        if let Some(off) = size("offset", &self.offset)? {
            j.offset = off;
        }
        j.size = size("size", &self.size)?;
        if let Some(r) = &self.runtime {
            j.runtime_ns = Some(parse_duration_ns(r).ok_or_else(|| {
                bad(
                    "runtime",
                    format!("'{r}' is not a duration (e.g. 10s, 500ms)"),
                )
            })?);
            j.time_based = j.io_size.is_none() && j.number_ios.is_none();
        }
        if let Some(m) = self.rwmixread {
            j.rwmixread = m;
        }
        if let Some(d) = &self.random_distribution {
            j.dist = d
                .parse::<Dist>()
                .map_err(|e| bad("random_distribution", e))?;
        }
        j.random_map = !self.norandommap;
        j.fsync = self.fsync.unwrap_or(0);
        j.placement.on = self.fdp;
        if let Some(p) = &self.fdp_pli {
            j.placement.plis = parse_plis(p).map_err(|e| bad("fdp_pli", e))?;
        }
        if let Some(s) = &self.fdp_pli_select {
            j.placement.select = s.parse().map_err(|e| bad("fdp_pli_select", e))?;
        }
        Ok(j)
    }

    fn trace_workload(
        &self,
        path: &Path,
        note: &mut dyn FnMut(&str),
    ) -> Result<TraceWorkload, OptionsError> {
        if !(self.speed.is_finite() && self.speed > 0.0) {
            return Err(bad(
                "speed",
                format!("{} is not a positive factor", self.speed),
            ));
        }
        if self.max_requests == Some(0) {
            return Err(bad(
                "max_requests",
                "0 would replay nothing (leave it out for no limit)",
            ));
        }
        let format = self
            .format
            .as_deref()
            .map(|f| f.parse::<trace::Format>().map_err(|e| bad("format", e)))
            .transpose()?;
        let parse = trace::ParseOptions {
            skip_bad_lines: self.skip_bad_lines,
            blkparse_action: self.blkparse_action,
        };
        // Open once now so that a missing file or an undetectable format fails before any run,
        // and the detected format is said once.
        let reader = trace::open(path, format, &parse)?;
        if let Some(n) = reader.detection_note() {
            note(&n);
        }
        let closed_loop = match self.replay.as_str() {
            "open" => false,
            "closed" if reader.format() == trace::Format::Recording => true,
            "closed" => {
                return Err(bad(
                    "replay",
                    format!(
                        "closed needs each request's completion time: a learnedftl recording \
                         (serve --record-format learnedftl), but {} is {}",
                        path.display(),
                        reader.format()
                    ),
                ))
            }
            other => return Err(bad("replay", format!("{other:?} is not open or closed"))),
        };
        let phases = match &self.phases {
            None => Vec::new(),
            Some(_) if !closed_loop => return Err(bad("phases", "needs replay=closed")),
            Some(p) => super::closed::read_phases(p, path, &parse)?,
        };
        Ok(TraceWorkload {
            path: path.to_path_buf(),
            format: Some(reader.format()),
            parse,
            replay: trace::ReplayOptions {
                speed: self.speed,
                address_policy: self
                    .address_policy
                    .parse()
                    .map_err(|e| bad("address_policy", e))?,
                max_requests: self.max_requests,
                device_filter: self.device_filter,
                placement_by: match &self.placement_by {
                    Some(p) => p.parse().map_err(|e| bad("placement_by", e))?,
                    None => trace::PlacementBy::None,
                },
            },
            fill_unwritten: self.fill_unwritten,
            closed_loop,
            phases,
        })
    }
}

/// How many FTLs to simulate at once (`compare`'s `jobs`): as given, or the machine's cores.
pub fn parallel_jobs(jobs: Option<usize>) -> Result<usize, OptionsError> {
    match jobs {
        Some(0) => Err(bad("jobs", "must be at least 1")),
        Some(n) => Ok(n),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}

/// The one measured phase of a job given by options.
fn measure(job: JobSpec) -> Phase {
    Phase {
        name: "measure".into(),
        jobs: vec![job],
        settle: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(f: impl FnOnce(&mut RunOptions)) -> RunOptions {
        let mut o = RunOptions {
            preset: "tiny".into(),
            ..RunOptions::default()
        };
        f(&mut o);
        o
    }

    fn error(o: RunOptions) -> String {
        o.experiment(&mut |_| {}).unwrap_err().to_string()
    }

    #[test]
    fn no_workload_is_the_built_in_default() {
        let e = options(|_| {}).experiment(&mut |_| {}).unwrap();
        assert_eq!(e.precondition, Some(DEFAULT_PRECONDITION.parse().unwrap()));
        let Workload::Jobs(phases) = &e.workload else {
            panic!("a job workload")
        };
        let j = &phases[0].jobs[0];
        assert_eq!(
            (j.rw, j.numjobs, j.number_ios),
            (
                RwKind::RandRead,
                DEFAULT_READ_NUMJOBS,
                Some(DEFAULT_READ_IOS_PER_JOB)
            )
        );
    }

    #[test]
    fn job_options_become_the_measured_job() {
        let e = options(|o| {
            o.rw = Some("randrw".into());
            o.bs = Some("8k".into());
            o.numjobs = Some(3);
            o.runtime = Some("5ms".into());
            o.rwmixread = Some(70);
            o.params.insert("cmt_ratio", "0.1", "set");
        })
        .experiment(&mut |_| {})
        .unwrap();
        assert_eq!(e.precondition, None);
        assert!(e.params.keys().any(|k| k == "cmt_ratio"));
        let Workload::Jobs(phases) = &e.workload else {
            panic!("a job workload")
        };
        let j = &phases[0].jobs[0];
        assert_eq!((j.bs, j.numjobs, j.rwmixread), (8192, 3, 70));
        assert_eq!((j.runtime_ns, j.time_based), (Some(5_000_000), true));
    }

    #[test]
    fn a_capacity_sizes_the_device_and_its_workload() {
        let e = options(|o| o.capacity = Some("240MiB".into()))
            .experiment(&mut |_| {})
            .unwrap();
        let g = &e.device.geometry;
        assert_eq!((g.blocks_per_plane, g.logical_bytes()), (128, 240 << 20));
        assert_eq!(e.device.capacity, Some(240 << 20));
        // The default workload's preconditioning (twice the capacity) and region follow it.
        let p = e.precondition.as_ref().unwrap();
        assert_eq!(p.job(g.logical_bytes()).io_size, Some(480 << 20));
    }

    #[test]
    fn bad_options_are_named() {
        for (o, name) in [
            (options(|o| o.rw = Some("sideways".into())), "rw: "),
            (
                options(|o| {
                    o.rw = Some("read".into());
                    o.bs = Some("4x".into());
                }),
                "bs: '4x'",
            ),
            (options(|o| o.number_ios = Some(3)), "number_ios: needs rw"),
            (
                options(|o| o.fill_unwritten = true),
                "fill_unwritten: needs trace",
            ),
            (
                options(|o| {
                    o.rw = Some("read".into());
                    o.job = Some("x.fio".into());
                }),
                "rw: cannot be used with job",
            ),
            (
                options(|o| o.precondition = Some("read:4k:1".into())),
                "precondition: ",
            ),
            (options(|o| o.settle = "soon".into()), "settle: \"soon\""),
            (
                options(|o| o.preset = "huge".into()),
                "unknown preset \"huge\"",
            ),
            (
                options(|o| o.job = Some("no/such.fio".into())),
                "no/such.fio",
            ),
            (
                options(|o| o.capacity = Some("3XB".into())),
                "capacity: \"3XB\" is not a size",
            ),
            (
                options(|o| {
                    o.capacity = Some("1GiB".into());
                    o.params.insert("blocks_per_plane", "128", "set");
                }),
                "capacity: \"1GiB\" sizes the device by its blocks per plane and cannot be \
                 combined with blocks_per_plane=128 (from set)",
            ),
        ] {
            let e = error(o);
            assert!(e.contains(name), "{e} (expected {name})");
        }
        assert_eq!(
            parallel_jobs(Some(0)).unwrap_err().to_string(),
            "jobs: must be at least 1"
        );
        assert_eq!(parallel_jobs(Some(3)).unwrap(), 3);
        assert!(parallel_jobs(None).unwrap() >= 1);
    }
}
