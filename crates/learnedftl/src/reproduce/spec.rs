//! One run of an experiment as data: a label, the FTLs it compares, `--set` parameters,
//! preconditioning and a workload — what `learnedftl compare` would be given. The suite's
//! settings ([`Config`]: preset, setup, seed) are added when it is built.

use super::{Config, ReproduceError, Setup};
use crate::run::{Experiment, RunOptions};
use std::path::PathBuf;

/// What a run measures after its preconditioning.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkloadSpec {
    /// A generated job file, by name (`jobs/<name>.fio` in the output directory).
    Job(&'static str),
    /// One job from options, as `compare --rw ... --bs ...` gives it.
    Options {
        /// Access pattern (`randread`, `write`, ...).
        rw: &'static str,
        /// Block size, fio syntax.
        bs: &'static str,
        /// Job clones.
        numjobs: u32,
        /// Requests per clone.
        number_ios: u64,
        /// Requests in flight per clone.
        iodepth: u32,
        /// `random_distribution`, if not uniform.
        dist: Option<&'static str>,
    },
    /// A block trace replayed open-loop with `--address-policy wrap`.
    Trace {
        /// The trace file.
        path: PathBuf,
        /// Replay speed factor.
        speed: f64,
    },
    /// A learnedftl recording replayed closed-loop, with its application's phases.
    Recording {
        /// The recording.
        path: PathBuf,
        /// Its phases file.
        phases: PathBuf,
    },
}

/// One run: `compare` of `ftls` under one label.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSpec {
    /// How the report names the run (unique within its experiment).
    pub label: String,
    /// The FTLs it runs, each from the same seed.
    pub ftls: Vec<String>,
    /// `--set key=value` parameters.
    pub params: Vec<(String, String)>,
    /// `RW:BS:MULTIPLE` preconditioning.
    pub precondition: Option<&'static str>,
    /// The workload.
    pub workload: WorkloadSpec,
    /// A configuration error is an expected outcome (kept in the report as the run's error).
    pub may_refuse: bool,
    /// The run's own device, `(preset, capacity)`: the suite's `--preset` and `--capacity` do
    /// not apply (the theory oracle's device of one-block lines, the validation's drive).
    pub device: Option<(&'static str, Option<&'static str>)>,
}

impl RunSpec {
    /// A run of `ftls` with `workload`, no parameters and no preconditioning.
    pub fn new(label: impl Into<String>, ftls: &[&str], workload: WorkloadSpec) -> RunSpec {
        RunSpec {
            label: label.into(),
            ftls: ftls.iter().map(|f| f.to_string()).collect(),
            params: Vec::new(),
            precondition: None,
            workload,
            may_refuse: false,
            device: None,
        }
    }

    /// Adds `--set key=value`.
    pub fn set(mut self, key: &str, value: impl ToString) -> RunSpec {
        self.params.push((key.to_string(), value.to_string()));
        self
    }

    /// Sets the preconditioning.
    pub fn pre(mut self, precondition: &'static str) -> RunSpec {
        self.precondition = Some(precondition);
        self
    }

    /// Marks a configuration error as an expected outcome.
    pub fn may_refuse(mut self) -> RunSpec {
        self.may_refuse = true;
        self
    }

    /// Runs on its own device: `preset` at `capacity` (its own size without), whatever the
    /// suite's `--preset` and `--capacity`.
    pub fn on_device(mut self, preset: &'static str, capacity: Option<&'static str>) -> RunSpec {
        self.device = Some((preset, capacity));
        self
    }

    /// The run's preset and capacity (as given, or canonical: the text a command shows).
    fn preset_and_capacity(&self, config: &Config, canonical: bool) -> (String, Option<String>) {
        match self.device {
            Some((preset, capacity)) => (preset.to_string(), capacity.map(str::to_string)),
            None => (
                config.preset.clone(),
                config.capacity.as_ref().map(|c| {
                    if canonical {
                        c.canonical()
                    } else {
                        c.text().to_string()
                    }
                }),
            ),
        }
    }

    /// Every parameter of the run: the setup's, then the run's own (a later one wins).
    fn all_params(&self, config: &Config) -> Vec<(String, String)> {
        let mut p: Vec<(String, String)> = match config.setup {
            Setup::Default => vec![],
            Setup::Femu => vec![
                ("timing".into(), "femu".into()),
                ("gc".into(), "femu".into()),
            ],
        };
        p.extend(self.params.iter().cloned());
        p
    }

    fn settle(config: &Config) -> &'static str {
        match config.setup {
            Setup::Default => "auto",
            Setup::Femu => "off",
        }
    }

    /// The experiment it runs on each FTL; `job_text` gives a generated job file's text.
    pub fn experiment(
        &self,
        config: &Config,
        job_text: impl Fn(&str) -> Option<String>,
    ) -> Result<Experiment, ReproduceError> {
        let (preset, capacity) = self.preset_and_capacity(config, false);
        let mut o = RunOptions {
            preset,
            capacity,
            precondition: self.precondition.map(str::to_string),
            settle: Self::settle(config).into(),
            seed: config.seed,
            ..RunOptions::default()
        };
        for (k, v) in self.all_params(config) {
            o.params.insert(&k, &v, "--set");
        }
        let bad = |source| ReproduceError::Run {
            label: self.label.clone(),
            source: Box::new(source),
        };
        match &self.workload {
            WorkloadSpec::Job(name) => {
                let text = job_text(name).ok_or_else(|| {
                    ReproduceError::Internal(format!("{}: no job file {name}", self.label))
                })?;
                o.experiment_with_job_text(&format!("jobs/{name}.fio"), &text)
                    .map_err(bad)
            }
            WorkloadSpec::Options {
                rw,
                bs,
                numjobs,
                number_ios,
                iodepth,
                dist,
            } => {
                o.rw = Some(rw.to_string());
                o.bs = Some(bs.to_string());
                o.numjobs = Some(*numjobs);
                o.number_ios = Some(*number_ios);
                o.iodepth = (*iodepth != 1).then_some(*iodepth);
                o.random_distribution = dist.map(str::to_string);
                o.experiment(&mut |_| {}).map_err(bad)
            }
            WorkloadSpec::Trace { path, speed } => {
                o.trace = Some(path.clone());
                o.speed = *speed;
                o.address_policy = "wrap".into();
                o.experiment(&mut |_| {}).map_err(bad)
            }
            WorkloadSpec::Recording { path, phases } => {
                o.trace = Some(path.clone());
                o.replay = "closed".into();
                o.phases = Some(phases.clone());
                o.experiment(&mut |_| {}).map_err(bad)
            }
        }
    }

    /// The `learnedftl compare` command that runs the same thing (job files as written to the
    /// output directory's `jobs/`).
    pub fn command(&self, config: &Config) -> String {
        let (preset, capacity) = self.preset_and_capacity(config, true);
        let mut c = format!("learnedftl compare --preset {preset}");
        if let Some(cap) = capacity {
            c += &format!(" --capacity {cap}");
        }
        c += &format!(" --seed {} --ftl {}", config.seed, self.ftls.join(","));
        for (k, v) in self.all_params(config) {
            c += &format!(" --set {k}={v}");
        }
        if config.setup == Setup::Femu {
            c += " --settle off";
        }
        if let Some(p) = self.precondition {
            c += &format!(" --precondition {p}");
        }
        match &self.workload {
            WorkloadSpec::Job(name) => c += &format!(" --job jobs/{name}.fio"),
            WorkloadSpec::Options {
                rw,
                bs,
                numjobs,
                number_ios,
                iodepth,
                dist,
            } => {
                c += &format!(" --rw {rw} --bs {bs} --numjobs {numjobs} --number-ios {number_ios}");
                if *iodepth != 1 {
                    c += &format!(" --iodepth {iodepth}");
                }
                if let Some(d) = dist {
                    c += &format!(" --random-distribution {d}");
                }
            }
            WorkloadSpec::Trace { path, speed } => {
                c += &format!(
                    " --trace {} --address-policy wrap --speed {speed}",
                    path.display()
                )
            }
            WorkloadSpec::Recording { path, phases } => {
                c += &format!(
                    " --trace {} --replay closed --phases {}",
                    path.display(),
                    phases.display()
                )
            }
        }
        c
    }
}
