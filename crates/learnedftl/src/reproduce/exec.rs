//! Planning and running the suite: one unit per (run, FTL); units whose simulators start from
//! the same prepared state (same FTL, device, parameters, preconditioning, settle rule, seed)
//! form a group that is prepared once and cloned for each unit (or, when a state and its copy do
//! not fit in memory, prepared again for each: [`Plan::fit_memory`]); units run in parallel on
//! a work queue; results are cached by a hash of their full configuration and the build.

use super::cache::Cache;
use super::def::{Ctx, Def, Scale};
use super::registry::job_text;
use super::spec::RunSpec;
use super::{Config, ExperimentResult, Outcome, ReproduceError, Results, RunResult};
use crate::engine::Progress;
use crate::host::AvailableMemory;
use crate::run::{Experiment, Prepared};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// One FTL of one run.
#[derive(Debug)]
pub struct Unit {
    /// Index of its experiment in the plan.
    pub exp: usize,
    /// Index of its run in the experiment.
    pub run: usize,
    /// The FTL.
    pub ftl: String,
    /// What it runs.
    experiment: Arc<Experiment>,
    /// Its cache key.
    pub key: String,
    /// Its preparation group's key.
    group: String,
}

impl Unit {
    /// What it runs (on [`Unit::ftl`]).
    pub fn experiment(&self) -> &Experiment {
        &self.experiment
    }
}

/// A group of units not in the cache that start from one prepared state ([`Plan::groups`]):
/// the unit of work handed to another machine (a Ray task), which runs it with
/// [`Plan::retain_group`] and [`Plan::execute`] and returns the entries of `keys`.
#[derive(Clone, Debug, Serialize)]
pub struct GroupPlan {
    /// The group's key.
    pub group: String,
    /// Its distinct units' cache keys.
    pub keys: Vec<String>,
    /// Its units' names ([`Plan::name`]).
    pub units: Vec<String>,
    /// Memory it needs at once: the prepared state and the clone a unit runs on (the state
    /// alone when the group has one unit, which runs on the original).
    pub memory_bytes: u64,
    /// Memory one prepared state needs: what a task running one of its units alone (its own
    /// preparation, no clone) asks for.
    pub state_bytes: u64,
}

/// The suite's units, grouped, with the experiments and runs they come from.
pub struct Plan {
    config: Config,
    experiments: Vec<(&'static Def, Vec<RunSpec>)>,
    units: Vec<Unit>,
    jobs: BTreeMap<&'static str, String>,
    /// Units that start from the same state share one preparation (cloned for each); when
    /// false each unit prepares its own ([`Plan::fit_memory`]).
    share_starts: bool,
}

/// What a plan will do with a cache ([`Plan::work`]); every unit is simulated, loaded from the
/// cache, or shared.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Work {
    /// Distinct units to simulate.
    pub simulate: usize,
    /// The preparations (shared starts) they need.
    pub starts: usize,
    /// Units whose result the cache holds.
    pub cached: usize,
    /// Units not in the cache that are identical to an earlier unit (experiments that share a
    /// run): simulated once, for the first.
    pub shared: usize,
}

impl Plan {
    /// Plans `defs` under `config`: builds every run's experiment (a registry or option error
    /// names the run) and keys every unit with `cache`.
    pub fn new(
        config: &Config,
        defs: &[&'static Def],
        cache: &Cache,
    ) -> Result<Plan, ReproduceError> {
        let scale = Scale::for_config(config)?;
        let ctx = Ctx {
            config,
            scale: &scale,
        };
        let jobs: BTreeMap<&'static str, String> = super::registry::JOB_FILES
            .iter()
            .chain(&super::fdp::JOBS)
            .filter_map(|j| job_text(j, &scale).map(|t| (*j, t)))
            .collect();
        let mut experiments = vec![];
        let mut units = vec![];
        for (exp, def) in defs.iter().enumerate() {
            let runs = (def.runs)(&ctx);
            for (run, spec) in runs.iter().enumerate() {
                let e = Arc::new(spec.experiment(config, |j| jobs.get(j).cloned())?);
                for ftl in &spec.ftls {
                    units.push(Unit {
                        exp,
                        run,
                        ftl: ftl.clone(),
                        key: cache.key(ftl, &e)?,
                        group: Cache::group_key(ftl, &e),
                        experiment: e.clone(),
                    });
                }
            }
            experiments.push((*def, runs));
        }
        Ok(Plan {
            config: config.clone(),
            experiments,
            units,
            jobs,
            share_starts: true,
        })
    }

    /// "experiment/run label FTL": how progress lines name a unit.
    pub fn name(&self, u: &Unit) -> String {
        let (def, runs) = &self.experiments[u.exp];
        format!("{}/{} {}", def.name, runs[u.run].label, u.ftl)
    }

    /// Every unit, in run order.
    pub fn units(&self) -> &[Unit] {
        &self.units
    }

    /// The job files the runs use: name and text (written to the output's `jobs/`).
    pub fn job_files(&self) -> impl Iterator<Item = (&str, &str)> {
        let used: Vec<&str> = self
            .experiments
            .iter()
            .flat_map(|(_, runs)| runs.iter())
            .filter_map(|r| match r.workload {
                super::spec::WorkloadSpec::Job(j) => Some(j),
                _ => None,
            })
            .collect();
        self.jobs
            .iter()
            .filter(move |(name, _)| used.contains(name))
            .map(|(n, t)| (*n, t.as_str()))
    }

    /// What [`Plan::execute`] will do with `cache`: which units it simulates, from how many
    /// preparations, and which it takes from the cache or from an identical unit (the same key)
    /// of another experiment.
    pub fn work(&self, cache: &Cache) -> Work {
        let distinct = |mut v: Vec<&str>| {
            v.sort_unstable();
            v.dedup();
            v.len()
        };
        let todo: Vec<&Unit> = self.units.iter().filter(|u| !cache.has(&u.key)).collect();
        let simulate = distinct(todo.iter().map(|u| u.key.as_str()).collect());
        Work {
            simulate,
            starts: distinct(todo.iter().map(|u| self.start_of(u)).collect()),
            cached: self.units.len() - todo.len(),
            shared: todo.len() - simulate,
        }
    }

    /// The preparation `u` runs from: its group's shared one, or its own.
    fn start_of<'a>(&self, u: &'a Unit) -> &'a str {
        if self.share_starts {
            &u.group
        } else {
            &u.key
        }
    }

    /// The groups of units `cache` does not hold, in run order (each unit once: an identical
    /// unit of another experiment is left to the cache).
    pub fn groups(&self, cache: &Cache) -> Vec<GroupPlan> {
        let mut groups: Vec<GroupPlan> = vec![];
        let mut seen = std::collections::BTreeSet::new();
        for u in &self.units {
            if cache.has(&u.key) || !seen.insert(u.key.as_str()) {
                continue;
            }
            let state = u.experiment.memory_estimate().bytes();
            match groups.iter_mut().find(|g| g.group == u.group) {
                Some(g) => {
                    g.keys.push(u.key.clone());
                    g.units.push(self.name(u));
                    g.state_bytes = g.state_bytes.max(state);
                }
                None => groups.push(GroupPlan {
                    group: u.group.clone(),
                    keys: vec![u.key.clone()],
                    units: vec![self.name(u)],
                    memory_bytes: 0,
                    state_bytes: state,
                }),
            }
        }
        for g in &mut groups {
            let copies = if g.keys.len() > 1 { 2 } else { 1 };
            g.memory_bytes = copies * g.state_bytes;
        }
        groups
    }

    /// Keeps only the units of `group` whose keys are `keys` (a [`GroupPlan`] made by another
    /// process): [`Plan::execute`] then runs just them. Fails when they differ, as when the
    /// plan was made by another build (the build is part of every key).
    pub fn retain_group(&mut self, group: &str, keys: &[String]) -> Result<(), ReproduceError> {
        self.units.retain(|u| u.group == group);
        let mut mine: Vec<&str> = self.units.iter().map(|u| u.key.as_str()).collect();
        mine.sort_unstable();
        mine.dedup();
        let mut theirs: Vec<&str> = keys.iter().map(String::as_str).collect();
        theirs.sort_unstable();
        theirs.dedup();
        if mine.is_empty() || theirs.iter().any(|k| !mine.contains(k)) {
            return Err(ReproduceError::Foreign(format!(
                "group {group}: this build plans other units ({} of {} keys known); every \
                 machine must run the same build of learnedftl on the same files",
                theirs.iter().filter(|k| mine.contains(k)).count(),
                theirs.len()
            )));
        }
        self.units.retain(|u| theirs.contains(&u.key.as_str()));
        Ok(())
    }

    /// The workers [`Plan::execute`] runs for `jobs`: as many, but at least one and no more
    /// than there are units (more would have nothing to do, and a thread each all the same).
    pub fn workers(&self, jobs: usize) -> usize {
        jobs.clamp(1, self.units.len().max(1))
    }

    /// Checks that `jobs` workers fit in `available` memory and chooses how units that start
    /// from the same state run. Shared, each worker holds one simulator and at most one
    /// snapshot ([`Plan::execute`]'s order): 2 × the [`Plan::workers`] simulators of the
    /// largest unit at once. When those do not fit but one per worker does (a 4 TiB device on
    /// a 24 GiB machine), every unit prepares its own start instead: the same results, the
    /// preparation repeated for each unit that would have shared it ([`Work::starts`] counts
    /// them). Returns whether starts are shared; fails when not even one simulator per worker
    /// fits.
    pub fn fit_memory(
        &mut self,
        jobs: usize,
        available: &AvailableMemory,
    ) -> Result<bool, ReproduceError> {
        let workers = self.workers(jobs);
        let Some(u) = self
            .units
            .iter()
            .max_by_key(|u| u.experiment.memory_estimate().bytes())
        else {
            return Ok(true);
        };
        self.share_starts = u.experiment.check_memory(2 * workers, available).is_ok();
        if !self.share_starts {
            u.experiment
                .check_memory(workers, available)
                .map_err(|e| match workers {
                    1 => ReproduceError::Memory(e.to_string()),
                    // Say how: the runs at once are the workers.
                    _ => ReproduceError::Memory(format!("{e} (--jobs 1, or jobs=1 from Python)")),
                })?;
        }
        Ok(self.share_starts)
    }

    /// Runs every unit not in `cache` on [`Plan::workers`]`(jobs)` threads, storing each result
    /// in the cache as it completes; `progress(label)` makes a unit's (or a preparation's)
    /// progress display and `done` hears of each unit as it ends. Units that start from the
    /// same state share one preparation (unless [`Plan::fit_memory`] found no room for a copy:
    /// then each prepares its own): the first worker to take the group prepares it, and the
    /// units' runs are queued at the front, each starting from a clone (the last one takes the
    /// original), so a snapshot lives only until its last unit has started and at most one per
    /// worker is alive.
    /// A unit identical to an earlier one (the same key: experiments may share a run) is not
    /// run again; it gets that unit's outcome, counted as cached.
    pub fn execute<P: Progress>(
        &self,
        cache: &Cache,
        jobs: usize,
        progress: impl Fn(&str) -> P + Sync,
        done: impl Fn(&Unit, &Outcome) + Sync,
    ) -> Results {
        let outcomes: Vec<Mutex<Option<Outcome>>> =
            self.units.iter().map(|_| Mutex::new(None)).collect();
        let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        let mut order: Vec<&str> = vec![];
        // (unit, the earlier identical unit that runs for it)
        let mut copies: Vec<(usize, usize)> = vec![];
        let mut first_of: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, u) in self.units.iter().enumerate() {
            if let Some(o) = cache.load(&u.key) {
                done(u, &o);
                *outcomes[i].lock().expect("no panic holding it") = Some(o);
                continue;
            }
            if let Some(&j) = first_of.get(u.key.as_str()) {
                copies.push((i, j));
                continue;
            }
            first_of.insert(u.key.as_str(), i);
            let start = self.start_of(u);
            let g = groups.entry(start).or_default();
            if g.is_empty() {
                order.push(start);
            }
            g.push(i);
        }
        let queue = Mutex::new(Queue {
            tasks: order
                .iter()
                .map(|g| Task::Prepare(groups[g].clone()))
                .collect(),
            busy: 0,
        });
        let wake = Condvar::new();
        let finish = |i: usize, r: Result<serde_json::Value, String>, wall: f64| {
            let o = Outcome {
                report: r,
                wall_seconds: wall,
                cached: false,
            };
            if o.report.is_ok() {
                // A cache that cannot be written costs a re-run later, not this result.
                let _ = cache.store(&self.units[i].key, &o);
            }
            done(&self.units[i], &o);
            *outcomes[i].lock().expect("no panic holding it") = Some(o);
        };
        let worker = || loop {
            let task = {
                let mut q = queue.lock().expect("no panic holding the queue");
                loop {
                    if let Some(t) = q.tasks.pop_front() {
                        q.busy += 1;
                        break Some(t);
                    }
                    if q.busy == 0 {
                        break None;
                    }
                    q = wake.wait(q).expect("no panic holding the queue");
                }
            };
            let Some(task) = task else {
                wake.notify_all();
                return;
            };
            match task {
                Task::Prepare(units) => {
                    let u = &self.units[units[0]];
                    let t0 = Instant::now();
                    let mut bar = progress(&format!("{} (shared start of {})", u.ftl, units.len()));
                    match u.experiment.prepare(&u.ftl, &mut bar) {
                        Err(e) => {
                            let wall = t0.elapsed().as_secs_f64();
                            for &i in &units {
                                finish(i, Err(e.to_string()), wall);
                            }
                        }
                        Ok(p) => {
                            let shared = Arc::new(Snapshot {
                                state: Mutex::new(Some(p)),
                                left: Mutex::new(units.len()),
                            });
                            let mut q = queue.lock().expect("no panic holding the queue");
                            for &i in units.iter().rev() {
                                q.tasks.push_front(Task::Run(i, shared.clone()));
                            }
                        }
                    }
                }
                Task::Run(i, snapshot) => {
                    let u = &self.units[i];
                    let t0 = Instant::now();
                    let prepared = snapshot.take();
                    drop(snapshot);
                    let label = self.name(u);
                    let r = u
                        .experiment
                        .run_prepared(&u.ftl, prepared, &mut progress(&label))
                        .map_err(|e| e.to_string())
                        .and_then(|rep| serde_json::to_value(rep).map_err(|e| e.to_string()));
                    finish(i, r, t0.elapsed().as_secs_f64());
                }
            }
            queue.lock().expect("no panic holding the queue").busy -= 1;
            wake.notify_all();
        };
        std::thread::scope(|s| {
            for _ in 1..self.workers(jobs) {
                s.spawn(worker);
            }
            worker();
        });
        for (i, j) in copies {
            let o = Outcome {
                cached: true,
                ..outcomes[j]
                    .lock()
                    .expect("no panic holding it")
                    .clone()
                    .expect("it ran")
            };
            done(&self.units[i], &o);
            *outcomes[i].lock().expect("no panic holding it") = Some(o);
        }
        let outcomes: Vec<Outcome> = outcomes
            .into_iter()
            .map(|o| {
                o.into_inner()
                    .expect("no panic holding it")
                    .expect("every unit ran or failed")
            })
            .collect();
        self.results(&outcomes)
    }

    fn results(&self, outcomes: &[Outcome]) -> Results {
        let mut experiments: Vec<ExperimentResult> = self
            .experiments
            .iter()
            .map(|(def, runs)| ExperimentResult {
                experiment: def.name.to_string(),
                preset: self.config.preset.clone(),
                capacity: self.config.capacity.as_ref().map(|c| c.bytes()),
                runs: runs
                    .iter()
                    .map(|r| RunResult {
                        label: r.label.clone(),
                        command: r.command(&self.config),
                        wall_seconds: 0.0,
                        cached: 0,
                        reports: vec![],
                        error: None,
                        may_refuse: r.may_refuse,
                    })
                    .collect(),
            })
            .collect();
        for (u, o) in self.units.iter().zip(outcomes) {
            let run = &mut experiments[u.exp].runs[u.run];
            run.wall_seconds += o.wall_seconds;
            run.cached += o.cached as usize;
            match &o.report {
                Ok(r) => run.reports.push(r.clone()),
                Err(e) => {
                    run.error.get_or_insert_with(|| format!("{}: {e}", u.ftl));
                }
            }
        }
        Results { experiments }
    }
}

enum Task {
    /// Prepare the shared start of these units (indices into the plan's units).
    Prepare(Vec<usize>),
    /// Run a unit from a snapshot.
    Run(usize, Arc<Snapshot>),
}

struct Queue {
    tasks: VecDeque<Task>,
    /// Tasks being worked on (a preparation may still queue runs).
    busy: usize,
}

/// A prepared state shared by the units that start from it.
struct Snapshot {
    state: Mutex<Option<Prepared>>,
    left: Mutex<usize>,
}

impl Snapshot {
    /// A copy for one unit; the last unit takes the original, which frees it.
    fn take(&self) -> Prepared {
        let mut left = self.left.lock().expect("no panic holding it");
        *left -= 1;
        let mut state = self.state.lock().expect("no panic holding it");
        if *left == 0 {
            state.take().expect("taken only by the last unit")
        } else {
            state.as_ref().expect("taken only by the last unit").clone()
        }
    }
}
