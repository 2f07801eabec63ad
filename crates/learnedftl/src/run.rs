//! Experiments: a device, FTL parameters, optional preconditioning and a workload, run on one FTL
//! into a [`RunReport`]. The CLI's `run` and `compare` are thin layers over this.

use crate::config::DeviceConfig;
use crate::engine::{EngineError, Progress, SimOptions, Simulator, Verify};
use crate::error::ConfigError;
use crate::ftl;
use crate::params::{parse_size, Params};
use crate::stats::Metrics;
use crate::workload::{JobSpec, Phase, RwKind};
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// Preconditioning: write `multiple` × the logical capacity with `bs` writes (`RW:BS:MULTIPLE`,
/// e.g. `randwrite:512k:6`), as one job of depth 64 with fio's random map, before measuring.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Precondition {
    /// `write` (sequential) or `randwrite`.
    pub rw: RwKind,
    /// Block size, bytes.
    pub bs: u64,
    /// Multiple of the logical capacity to write.
    pub multiple: f64,
}

impl FromStr for Precondition {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let parts: Vec<&str> = s.split(':').collect();
        let [rw, bs, mult] = parts[..] else {
            return Err(format!(
                "'{s}': expected RW:BS:MULTIPLE, e.g. randwrite:512k:6"
            ));
        };
        let rw: RwKind = rw.parse()?;
        if !matches!(rw, RwKind::Write | RwKind::RandWrite) {
            return Err(format!(
                "'{s}': preconditioning writes: use write or randwrite"
            ));
        }
        let bs = parse_size(bs)
            .filter(|&b| b > 0)
            .ok_or_else(|| format!("'{s}': '{bs}' is not a block size"))?;
        let multiple: f64 = mult
            .parse()
            .ok()
            .filter(|m: &f64| m.is_finite() && *m > 0.0)
            .ok_or_else(|| format!("'{s}': '{mult}' is not a positive multiple"))?;
        Ok(Precondition { rw, bs, multiple })
    }
}

impl fmt::Display for Precondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}k:{}", self.rw, self.bs / 1024, self.multiple)
    }
}

impl Precondition {
    /// The preconditioning job for a logical space of `logical_bytes`.
    pub fn job(&self, logical_bytes: u64) -> JobSpec {
        let mut j = JobSpec::new("precondition", self.rw);
        j.bs = self.bs;
        j.iodepth = 64;
        j.io_size = Some((logical_bytes as f64 * self.multiple) as u64);
        j
    }
}

/// One FTL's run: configuration, every phase in order, and the measured (last) phase.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// FTL name.
    pub ftl: String,
    /// Device preset the configuration started from.
    pub preset: String,
    /// The run's seed.
    pub seed: u64,
    /// Effective configuration: device, FTL parameters, workload.
    pub config: serde_json::Value,
    /// Every phase, preconditioning first.
    pub phases: Vec<Metrics>,
    /// The measured phase (the last).
    pub result: Metrics,
}

/// What to run on each FTL.
#[derive(Clone, Debug)]
pub struct Experiment {
    /// The device.
    pub device: DeviceConfig,
    /// FTL parameters (device keys already taken out).
    pub params: Params,
    /// Preconditioning, if any.
    pub precondition: Option<Precondition>,
    /// The workload's phases (the last is the measured one).
    pub phases: Vec<Phase>,
    /// Seed for everything random.
    pub seed: u64,
    /// Read verification.
    pub verify: Verify,
}

impl Experiment {
    /// Checks that every FTL parameter is understood by at least one of `ftls` (each FTL ignores
    /// keys meant for others), and that each of them accepts the values it takes.
    pub fn check_params(&self, ftls: &[&str]) -> Result<(), ConfigError> {
        let mut unknown: Option<BTreeSet<String>> = None;
        for name in ftls {
            let mut p = self.params.clone();
            ftl::build(name, &self.device, &mut p)?;
            let left: BTreeSet<String> = p.keys().map(str::to_string).collect();
            unknown = Some(match unknown {
                None => left,
                Some(u) => u.intersection(&left).cloned().collect(),
            });
        }
        match unknown {
            Some(u) if !u.is_empty() => Err(ConfigError::UnknownKeys(format!(
                "{} (not a parameter of {})",
                u.into_iter().collect::<Vec<_>>().join(", "),
                ftls.join(", ")
            ))),
            _ => Ok(()),
        }
    }

    /// Runs the experiment on FTL `name`.
    pub fn run(&self, name: &str, progress: &mut dyn Progress) -> Result<RunReport, EngineError> {
        let mut params = self.params.clone();
        let ftl = ftl::build(name, &self.device, &mut params)?;
        let opts = SimOptions {
            verify: self.verify,
            check_invariants: false,
        };
        let mut sim = Simulator::with_ftl(&self.device, ftl, opts);
        let logical = self.device.geometry.logical_bytes();
        let mut phases = Vec::new();
        if let Some(pre) = &self.precondition {
            phases.push(sim.run_jobs("precondition", &[pre.job(logical)], self.seed, progress)?);
        }
        for (i, phase) in self.phases.iter().enumerate() {
            let seed = crate::engine::mix(self.seed, 1 + i as u64, 0);
            phases.push(sim.run_jobs(&phase.name, &phase.jobs, seed, progress)?);
        }
        let result = phases.last().cloned().unwrap_or_default();
        Ok(RunReport {
            ftl: name.to_string(),
            preset: self.device.preset.clone(),
            seed: self.seed,
            config: serde_json::json!({
                "device": self.device,
                "ftl": sim.ftl().params(),
                "precondition": self.precondition,
                "phases": self.phases.iter().map(|p| serde_json::json!({
                    "name": p.name,
                    "jobs": p.jobs,
                })).collect::<Vec<_>>(),
                "verify": self.verify != Verify::Off,
            }),
            phases,
            result,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precondition_syntax() {
        let p: Precondition = "randwrite:512k:6".parse().unwrap();
        assert_eq!(
            (p.rw, p.bs, p.multiple),
            (RwKind::RandWrite, 512 << 10, 6.0)
        );
        assert_eq!(p.job(1 << 30).io_size, Some(6 << 30));
        for bad in [
            "randread:4k:1",
            "write:0:1",
            "write:4k",
            "write:4k:-1",
            "write:4x:1",
        ] {
            assert!(bad.parse::<Precondition>().is_err(), "{bad}");
        }
    }

    #[test]
    fn unknown_parameters_are_refused_by_name() {
        let mut params = Params::new();
        params.insert_assignment("not_a_knob=1", "--set").unwrap();
        let e = Experiment {
            device: DeviceConfig::preset("tiny").unwrap(),
            params,
            precondition: None,
            phases: vec![],
            seed: 1,
            verify: Verify::Off,
        };
        let err = e.check_params(&["ideal"]).unwrap_err().to_string();
        assert!(err.contains("not_a_knob"), "{err}");
    }

    #[test]
    fn runs_report_every_phase() {
        let mut r = JobSpec::new("measure", RwKind::RandRead);
        r.number_ios = Some(500);
        r.numjobs = 4;
        let e = Experiment {
            device: DeviceConfig::preset("tiny").unwrap(),
            params: Params::new(),
            precondition: Some("write:512k:1".parse().unwrap()),
            phases: vec![Phase {
                name: "measure".into(),
                jobs: vec![r],
            }],
            seed: 3,
            verify: Verify::FailFast,
        };
        let rep = e.run("ideal", &mut crate::engine::NoProgress).unwrap();
        assert_eq!(rep.phases.len(), 2);
        assert_eq!(rep.phases[0].phase, "precondition");
        assert_eq!(rep.result.requests.read, 2000);
        assert_eq!(rep.result.verify.checked, 2000);
        assert!(
            rep.phases[0].page_writes
                >= DeviceConfig::preset("tiny").unwrap().geometry.logical_pages
        );
    }
}
