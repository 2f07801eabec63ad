//! Results cached by a hash of their full configuration and the build: a re-run loads what
//! has not changed instead of simulating it.
//!
//! A unit's key is the MD5 (hex) of the canonical JSON of: the build identity, the FTL, the
//! experiment's whole configuration ([`Experiment::describe`]: device geometry, timing and
//! energy, FTL parameters as given, preconditioning, settle rule, workload phases with every
//! job field, trace replay options, seed, verification) and, for a trace, the MD5 of the trace
//! file's bytes. Entries are `DIR/cache/<key>.json` (`{wall_seconds, report}`), written to a
//! temporary file and renamed into place.

use super::{Outcome, ReproduceError};
use crate::run::{Experiment, Workload};
use md5::{Digest, Md5};
use std::path::{Path, PathBuf};

/// The cache directory and the build its entries must come from.
#[derive(Clone, Debug)]
pub struct Cache {
    dir: Option<PathBuf>,
    build: String,
    /// Entries are stored but not loaded (`--fresh`).
    refresh: bool,
}

fn md5_hex(bytes: &[u8]) -> String {
    Md5::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Cache {
    /// A cache in `dir` for results of `build` (e.g. the crate version and a hash of the
    /// running executable: any rebuild invalidates every entry). `None`: no cache (nothing is
    /// loaded or stored; keys are still computed).
    pub fn new(dir: Option<&Path>, build: &str) -> Cache {
        Cache {
            dir: dir.map(Path::to_path_buf),
            build: build.to_string(),
            refresh: false,
        }
    }

    /// The same cache, but every run is simulated again and its entry replaced.
    pub fn refreshing(self) -> Cache {
        Cache {
            refresh: true,
            ..self
        }
    }

    /// The identity of the running executable: `version` and the MD5 of the executable file
    /// (a rebuild with any change gives another identity).
    pub fn build_identity(version: &str) -> Result<String, ReproduceError> {
        let exe = std::env::current_exe().map_err(|e| ReproduceError::Io {
            path: "the running executable".into(),
            source: e,
        })?;
        Cache::build_identity_of(version, &exe)
    }

    /// The identity of the build in file `binary` (an executable, or the shared library that
    /// holds the simulator, as the Python package's): `version` and the file's MD5.
    pub fn build_identity_of(version: &str, binary: &Path) -> Result<String, ReproduceError> {
        let bytes = std::fs::read(binary).map_err(|e| ReproduceError::Io {
            path: binary.display().to_string(),
            source: e,
        })?;
        Ok(format!("{version}+{}", md5_hex(&bytes)))
    }

    /// The cache key of `experiment` run on `ftl`.
    pub fn key(&self, ftl: &str, experiment: &Experiment) -> Result<String, ReproduceError> {
        let trace = match &experiment.workload {
            Workload::Trace(t) => Some(md5_hex(&std::fs::read(&t.path).map_err(|e| {
                ReproduceError::Io {
                    path: t.path.display().to_string(),
                    source: e,
                }
            })?)),
            Workload::Jobs(_) => None,
        };
        let v = serde_json::json!({
            "build": self.build,
            "ftl": ftl,
            "config": experiment.describe(),
            "seed": experiment.seed,
            "trace_md5": trace,
        });
        Ok(md5_hex(v.to_string().as_bytes()))
    }

    /// The key of the state `experiment` starts its workload from on `ftl` (everything but
    /// the workload): units with equal group keys share one preparation. In memory only.
    pub fn group_key(ftl: &str, experiment: &Experiment) -> String {
        let mut c = experiment.describe();
        if let Some(o) = c.as_object_mut() {
            o.remove("workload");
        }
        let v = serde_json::json!({"ftl": ftl, "config": c, "seed": experiment.seed});
        md5_hex(v.to_string().as_bytes())
    }

    fn path(&self, key: &str) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(format!("{key}.json")))
    }

    /// Whether `key` has an entry.
    pub fn has(&self, key: &str) -> bool {
        !self.refresh && self.path(key).is_some_and(|p| p.is_file())
    }

    /// The entry of `key`, if present and readable (an unreadable entry is recomputed).
    pub fn load(&self, key: &str) -> Option<Outcome> {
        if self.refresh {
            return None;
        }
        let text = std::fs::read(self.path(key)?).ok()?;
        let mut v: serde_json::Value = serde_json::from_slice(&text).ok()?;
        Some(Outcome {
            wall_seconds: v["wall_seconds"].as_f64()?,
            report: Ok(v.get_mut("report")?.take()),
            cached: true,
        })
    }

    /// Stores a successful outcome under `key`.
    pub fn store(&self, key: &str, outcome: &Outcome) -> Result<(), ReproduceError> {
        let (Some(path), Ok(report)) = (self.path(key), &outcome.report) else {
            return Ok(());
        };
        let v = serde_json::json!({"wall_seconds": outcome.wall_seconds, "report": report});
        super::output::write_file(&path, v.to_string().as_bytes())
    }

    /// The stored text of `key`'s entry, to be stored in another cache
    /// ([`Cache::store_entry`]): how results computed elsewhere (a Ray task) come back.
    pub fn entry(&self, key: &str) -> Option<String> {
        std::fs::read_to_string(self.path(key)?).ok()
    }

    /// Stores an entry's text ([`Cache::entry`]) under `key`, after checking that it is one.
    pub fn store_entry(&self, key: &str, text: &str) -> Result<(), ReproduceError> {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| ReproduceError::Foreign(format!("cache entry {key}: {e}")))?;
        if !(v["wall_seconds"].is_number() && v["report"].is_object()) {
            return Err(ReproduceError::Foreign(format!(
                "cache entry {key}: not a run's result"
            )));
        }
        match self.path(key) {
            Some(path) => super::output::write_file(&path, text.as_bytes()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::RunOptions;

    fn base() -> RunOptions {
        RunOptions {
            preset: "tiny".into(),
            precondition: Some("randwrite:512k:1".into()),
            rw: Some("randread".into()),
            bs: Some("4k".into()),
            numjobs: Some(4),
            number_ios: Some(100),
            ..RunOptions::default()
        }
    }

    fn key(o: &RunOptions, ftl: &str, build: &str) -> String {
        let e = o.experiment(&mut |_| {}).unwrap();
        Cache::new(None, build).key(ftl, &e).unwrap()
    }

    /// Every option that changes a run changes its key; equal options give equal keys.
    #[test]
    fn the_key_changes_when_any_parameter_changes() {
        let b = base();
        let k0 = key(&b, "dftl", "v1");
        assert_eq!(key(&b, "dftl", "v1"), k0, "deterministic");
        assert_ne!(key(&b, "tpftl", "v1"), k0, "ftl");
        assert_ne!(key(&b, "dftl", "v2"), k0, "build");
        type Change = fn(&mut RunOptions);
        let changes: &[(&str, Change)] = &[
            ("preset", |o| o.preset = "quick".into()),
            ("capacity", |o| o.capacity = Some("240MiB".into())),
            // Another capacity: another device.
            ("larger capacity", |o| o.capacity = Some("241MiB".into())),
            // The same device (rounded up to the same blocks per plane) asked differently: the
            // report says what was asked, so the key does too.
            ("capacity rounded to the same device", |o| {
                o.capacity = Some("240.5MiB".into())
            }),
            ("device parameter", |o| {
                o.params.insert("read_ns", "41000", "t")
            }),
            ("timing", |o| o.params.insert("timing", "femu", "t")),
            ("ftl parameter", |o| {
                o.params.insert("cmt_ratio", "0.1", "t")
            }),
            ("precondition", |o| {
                o.precondition = Some("randwrite:512k:2".into())
            }),
            ("no precondition", |o| o.precondition = None),
            ("settle", |o| o.settle = "off".into()),
            ("seed", |o| o.seed = 2),
            ("verify", |o| o.verify = true),
            ("rw", |o| o.rw = Some("read".into())),
            ("bs", |o| o.bs = Some("8k".into())),
            ("numjobs", |o| o.numjobs = Some(5)),
            ("iodepth", |o| o.iodepth = Some(2)),
            ("number_ios", |o| o.number_ios = Some(101)),
            ("offset", |o| o.offset = Some("4k".into())),
            ("size", |o| o.size = Some("1m".into())),
            ("distribution", |o| {
                o.random_distribution = Some("zipf:0.9".into())
            }),
            ("norandommap", |o| o.norandommap = true),
        ];
        let mut seen = vec![k0];
        for (what, change) in changes {
            let mut o = base();
            change(&mut o);
            let k = key(&o, "dftl", "v1");
            assert!(!seen.contains(&k), "{what} did not change the key");
            seen.push(k);
        }
    }

    #[test]
    fn capacities_are_told_apart_even_on_one_geometry() {
        let e = |capacity: &str| {
            let mut o = base();
            o.capacity = Some(capacity.into());
            o.experiment(&mut |_| {}).unwrap()
        };
        let (a, b) = (e("241MiB"), e("240.5MiB"));
        assert_eq!(a.device.geometry, b.device.geometry);
        assert_ne!(
            Cache::new(None, "v1").key("dftl", &a).unwrap(),
            Cache::new(None, "v1").key("dftl", &b).unwrap()
        );
        assert_ne!(Cache::group_key("dftl", &a), Cache::group_key("dftl", &b));
    }

    #[test]
    fn the_group_key_ignores_only_the_workload() {
        let e = |f: fn(&mut RunOptions)| {
            let mut o = base();
            f(&mut o);
            o.experiment(&mut |_| {}).unwrap()
        };
        let g = Cache::group_key("dftl", &e(|_| {}));
        assert_eq!(Cache::group_key("dftl", &e(|o| o.number_ios = Some(7))), g);
        assert_eq!(
            Cache::group_key("dftl", &e(|o| o.rw = Some("read".into()))),
            g
        );
        assert_ne!(Cache::group_key("tpftl", &e(|_| {})), g);
        assert_ne!(Cache::group_key("dftl", &e(|o| o.seed = 9)), g);
        assert_ne!(
            Cache::group_key("dftl", &e(|o| o.params.insert("cmt_ratio", "0.2", "t"))),
            g
        );
        assert_ne!(Cache::group_key("dftl", &e(|o| o.settle = "off".into())), g);
    }

    #[test]
    fn entries_round_trip_and_a_damaged_one_is_a_miss() {
        let dir = std::env::temp_dir().join(format!("learnedftl-cache-{}", std::process::id()));
        let c = Cache::new(Some(&dir), "v1");
        assert!(c.load("k").is_none());
        let o = Outcome {
            report: Ok(serde_json::json!({"ftl": "ideal"})),
            wall_seconds: 1.5,
            cached: false,
        };
        c.store("k", &o).unwrap();
        let back = c.load("k").unwrap();
        assert!(back.cached && back.wall_seconds == 1.5);
        assert_eq!(back.report.unwrap()["ftl"], "ideal");
        assert!(c.clone().refreshing().load("k").is_none());
        std::fs::write(dir.join("k.json"), "{").unwrap();
        assert!(c.load("k").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
