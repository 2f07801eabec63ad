//! fio job files: the INI subset of SPEC §4.1.
//!
//! `[global]` options apply to the job sections after it; every other section is a job. A job
//! with `stonewall` (or `wait_for_previous`) starts a new phase: it runs after every earlier job
//! has finished, and statistics are reported per phase. Options that do not change a simulation
//! (`ioengine`, `direct`, `filename`, `group_reporting`, `thread`, `description`) are accepted
//! and ignored; any other unknown option is an error naming it and its line. `settle=auto|off|
//! DURATION` in the section that starts a phase lets the device settle before that phase (SPEC
//! §3.5; not a fio option).

use super::dist::Dist;
use super::job::{JobSpec, RwKind};
use super::Settle;
use crate::error::quote;
use crate::params::{parse_duration_ns, parse_size};
use thiserror::Error;

/// A job file error: where and what.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{file}:{line}: {message}")]
pub struct JobFileError {
    /// File name as given.
    pub file: String,
    /// 1-based line (0 = the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Jobs that run together; phases run one after another.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    /// Name (the first job's name).
    pub name: String,
    /// The jobs.
    pub jobs: Vec<JobSpec>,
    /// Idle time before the phase (`settle=` in its first section); `None`: none.
    pub settle: Option<Settle>,
}

const IGNORED: &[&str] = &[
    "ioengine",
    "direct",
    "filename",
    "group_reporting",
    "thread",
    "description",
];

/// Applies one option to a job; `Ok(true)` if it was `stonewall`.
fn apply(
    job: &mut JobSpec,
    key: &str,
    value: Option<&str>,
    logical_bytes: u64,
) -> Result<bool, String> {
    let need = || value.ok_or_else(|| format!("{key} needs a value ({key}=...)"));
    let size = |v: &str| -> Result<u64, String> {
        if let Some(p) = v.trim().strip_suffix('%') {
            let f: f64 = p
                .trim()
                .parse()
                .map_err(|_| format!("{key}: {} is not a percentage", quote(v)))?;
            if !(0.0..=100.0).contains(&f) {
                return Err(format!("{key}: {} is not in 0%..100%", quote(v)));
            }
            return Ok((logical_bytes as f64 * f / 100.0) as u64);
        }
        parse_size(v)
            .ok_or_else(|| format!("{key}: {} is not a size (e.g. 4k, 512KiB, 1g)", quote(v)))
    };
    let int = |v: &str| -> Result<u64, String> {
        v.trim()
            .parse::<u64>()
            .map_err(|_| format!("{key}: {} is not a whole number", quote(v)))
    };
    let percent = |v: &str| -> Result<u32, String> {
        match int(v)? {
            p @ 0..=100 => Ok(p as u32),
            p => Err(format!("{key}: {p} is above 100")),
        }
    };
    let flag = |v: Option<&str>| -> Result<bool, String> {
        match v.map(|s| s.trim()) {
            None | Some("1") | Some("true") => Ok(true),
            Some("0") | Some("false") => Ok(false),
            Some(o) => Err(format!("{key}: {} is not 0 or 1", quote(o))),
        }
    };
    match key {
        "rw" | "readwrite" => job.rw = need()?.parse::<RwKind>()?,
        "rwmixread" => job.rwmixread = percent(need()?)?,
        "rwmixwrite" => job.rwmixread = 100 - percent(need()?)?,
        "bs" | "blocksize" => job.bs = size(need()?)?,
        "numjobs" => {
            job.numjobs = u32::try_from(int(need()?)?).map_err(|_| "numjobs: too large")?
        }
        "iodepth" => {
            job.iodepth = u32::try_from(int(need()?)?).map_err(|_| "iodepth: too large")?
        }
        "offset" => job.offset = size(need()?)?,
        "offset_increment" => job.offset_increment = size(need()?)?,
        "size" => job.size = Some(size(need()?)?),
        "io_size" | "io_limit" => job.io_size = Some(size(need()?)?),
        "number_ios" => job.number_ios = Some(int(need()?)?),
        "runtime" => {
            let v = need()?;
            job.runtime_ns = Some(parse_duration_ns(v).ok_or_else(|| {
                format!("runtime: {} is not a duration (e.g. 10s, 500ms)", quote(v))
            })?)
        }
        "time_based" => job.time_based = flag(value)?,
        "random_distribution" => {
            job.dist = need()?
                .parse::<Dist>()
                .map_err(|e| format!("random_distribution: {e}"))?
        }
        "norandommap" => job.random_map = !flag(value)?,
        "randseed" => job.seed = Some(int(need()?)?),
        "fsync" => job.fsync = int(need()?)?,
        "fdp" => job.placement.on = flag(value)?,
        "dataplacement" => {
            job.placement.on = match need()?.trim() {
                "fdp" => true,
                "none" => false,
                other => {
                    return Err(format!(
                        "dataplacement: {} is not fdp or none (streams are left out)",
                        quote(other)
                    ))
                }
            }
        }
        "fdp_pli" | "plids" => {
            job.placement.plis =
                super::job::parse_plis(need()?).map_err(|e| format!("{key}: {e}"))?
        }
        "fdp_pli_select" | "plid_select" => {
            job.placement.select = need()?.parse().map_err(|e| format!("{key}: {e}"))?
        }
        "stonewall" | "wait_for_previous" => return flag(value),
        k if IGNORED.contains(&k) => {}
        _ => return Err(format!("unknown option {}", quote(key))),
    }
    Ok(false)
}

/// [`parse`] on a job file's raw bytes: bytes that are not UTF-8 are an error naming their line.
pub fn parse_bytes(
    bytes: &[u8],
    file: &str,
    logical_bytes: u64,
) -> Result<Vec<Phase>, JobFileError> {
    let text = std::str::from_utf8(bytes).map_err(|e| JobFileError {
        file: file.to_string(),
        line: 1 + bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count(),
        message: "not UTF-8 text".into(),
    })?;
    parse(text, file, logical_bytes)
}

/// Parses a job file. `file` names it in errors; sizes given in percent are taken of
/// `logical_bytes`. Every job is validated against the logical space.
pub fn parse(text: &str, file: &str, logical_bytes: u64) -> Result<Vec<Phase>, JobFileError> {
    let err = |line: usize, message: String| JobFileError {
        file: file.to_string(),
        line,
        message,
    };
    let mut global = JobSpec::new("global", RwKind::Read);
    // The section being read: (spec, stonewall, first line, `settle=` and its line).
    type Section = (JobSpec, bool, usize, Option<(Settle, usize)>);
    let mut current: Option<Section> = None;
    let mut in_global = false;
    let mut phases: Vec<Phase> = Vec::new();
    let finish = |job: Option<Section>, phases: &mut Vec<Phase>| -> Result<(), JobFileError> {
        if let Some((spec, stonewall, line, settle)) = job {
            spec.validate(logical_bytes)
                .map_err(|m| err(line, format!("job {}: {m}", quote(&spec.name))))?;
            match phases.last_mut() {
                Some(p) if !stonewall => {
                    if let Some((_, at)) = settle {
                        return Err(err(
                            at,
                            format!(
                                "settle applies before a phase, but job {} joins phase {} \
                                 (add stonewall, or move settle to that phase's first section)",
                                quote(&spec.name),
                                quote(&p.name)
                            ),
                        ));
                    }
                    p.jobs.push(spec)
                }
                _ => phases.push(Phase {
                    name: spec.name.clone(),
                    jobs: vec![spec],
                    settle: settle.map(|s| s.0),
                }),
            }
        }
        Ok(())
    };
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .ok_or_else(|| err(lineno, format!("section header {} lacks ']'", quote(line))))?
                .trim();
            if name.is_empty() {
                return Err(err(lineno, "empty section name".into()));
            }
            finish(current.take(), &mut phases)?;
            in_global = name == "global";
            if !in_global {
                let mut spec = global.clone();
                spec.name = name.to_string();
                current = Some((spec, false, lineno, None));
            }
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (line, None),
        };
        if key == "settle" {
            let Some((_, _, _, settle)) = current.as_mut() else {
                return Err(err(
                    lineno,
                    "settle belongs in a job section (it applies before that job's phase)".into(),
                ));
            };
            let v = value.ok_or_else(|| err(lineno, "settle needs a value (settle=...)".into()))?;
            let s = v
                .parse::<Settle>()
                .map_err(|m| err(lineno, format!("settle: {m}")))?;
            *settle = Some((s, lineno));
        } else if in_global {
            let stonewall =
                apply(&mut global, key, value, logical_bytes).map_err(|m| err(lineno, m))?;
            if stonewall {
                return Err(err(
                    lineno,
                    "stonewall belongs in a job section, not [global]".into(),
                ));
            }
        } else if let Some((spec, stonewall, _, _)) = current.as_mut() {
            *stonewall |= apply(spec, key, value, logical_bytes).map_err(|m| err(lineno, m))?;
        } else {
            return Err(err(
                lineno,
                format!("option {} outside any section", quote(key)),
            ));
        }
    }
    finish(current.take(), &mut phases)?;
    if phases.is_empty() {
        return Err(err(0, "no job sections".into()));
    }
    Ok(phases)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn globals_sections_and_stonewall_phases() {
        let text = "\
; warm up, then measure
[global]
bs=4k
iodepth=1
ioengine=psync
direct=1

[fill]
rw=write
bs=512k
size=50%

[measure]
stonewall
rw=randread
numjobs=64
io_size=64m
random_distribution=zipf:1.2
[also]
rw=randwrite
norandommap
runtime=2s
time_based
";
        let phases = parse(text, "t.fio", 4 * GIB).unwrap();
        assert_eq!(phases.len(), 2);
        assert_eq!(phases[0].jobs.len(), 1);
        let fill = &phases[0].jobs[0];
        assert_eq!(
            (fill.rw, fill.bs, fill.size),
            (RwKind::Write, 512 << 10, Some(2 * GIB))
        );
        let m = &phases[1].jobs[0];
        assert_eq!(
            (m.rw, m.bs, m.numjobs, m.io_size),
            (RwKind::RandRead, 4096, 64, Some(64 << 20))
        );
        assert_eq!(m.dist, Dist::Zipf { theta: 1.2 });
        let a = &phases[1].jobs[1];
        assert!(!a.random_map && a.time_based);
        assert_eq!(a.runtime_ns, Some(2_000_000_000));
    }

    #[test]
    fn settle_applies_before_the_phase_its_section_starts() {
        let text = "[w]\nrw=write\nsize=1m\n[r]\nstonewall\nsettle=100ms\nrw=read\n\
                    [r2]\nrw=read\n[x]\nstonewall\nsettle=off\n[y]\nstonewall\nsettle=auto\n";
        let phases = parse(text, "t.fio", 4 * GIB).unwrap();
        let settles: Vec<_> = phases.iter().map(|p| p.settle).collect();
        assert_eq!(
            settles,
            [
                None,
                Some(Settle::For(100_000_000)),
                Some(Settle::Off),
                Some(Settle::Auto)
            ]
        );
        assert_eq!(phases[1].jobs.len(), 2);
    }

    #[test]
    fn fios_data_placement_options_in_both_spellings() {
        let text = "[global]\nrw=randwrite\nfdp=1\nfdp_pli=0,2\n[a]\n[b]\ndataplacement=fdp\n\
                    plids=1-3\nplid_select=random\n[c]\ndataplacement=none\nfdp_pli=\n";
        let e = parse(text, "p.fio", 4 * GIB).unwrap_err();
        assert_eq!(e.line, 12, "{e}");
        let ok = text.replace("fdp_pli=\n", "");
        let phases = parse(&ok, "p.fio", 4 * GIB).unwrap();
        let jobs = &phases[0].jobs;
        assert_eq!(
            (jobs[0].placement.on, &jobs[0].placement.plis[..]),
            (true, &[0, 2][..])
        );
        assert_eq!(jobs[1].placement.plis, [1, 2, 3]);
        assert_eq!(jobs[1].placement.select, crate::workload::PliSelect::Random);
        assert!(!jobs[2].placement.on);
        let e = parse("[a]\nrw=write\ndataplacement=streams\n", "p.fio", GIB).unwrap_err();
        assert!(e.message.contains("dataplacement"), "{e}");
    }

    #[test]
    fn errors_name_option_and_line() {
        let cases = [
            ("[a]\nrw=read\nfoo=1\n", 3, "foo"),
            ("[a]\nrw=sideways\n", 2, "sideways"),
            ("[a]\nbs=4q\n", 2, "bs"),
            ("bs=4k\n", 1, "outside"),
            ("[a\n", 1, "]"),
            ("[a]\nrandom_distribution=zipf:1\n", 2, "theta"),
            ("[a]\nsize=8g\nrw=read\n", 1, "beyond"),
            ("[global]\nstonewall\n", 2, "stonewall"),
            ("# nothing\n", 0, "no job"),
            ("[a]\nruntime=fast\n", 2, "runtime"),
            ("[a]\nsettle=soon\n", 2, "settle"),
            ("[a]\nsettle\n", 2, "settle"),
            ("[global]\nsettle=auto\n", 2, "settle"),
            ("[a]\nrw=read\n[b]\nsettle=off\n", 4, "settle"),
            (
                "[a]\nrw=randrw\nrwmixread=150\n",
                3,
                "rwmixread: 150 is above 100",
            ),
            (
                "[a]\nrw=randrw\nrwmixwrite=150\n",
                3,
                "rwmixwrite: 150 is above 100",
            ),
            ("[a]\nrw=read\nnumber_ios=0\n", 1, "number_ios"),
            ("[a]\nrw=read\nruntime=0\n", 1, "runtime"),
            ("[a]\nrw=read\nbs=8k\nio_size=4k\n", 1, "io_size"),
            ("[a]\nrw=read\nbs=4k\n[\u{1b}[31m\n", 4, "\\u{1b}"),
        ];
        for (text, line, needle) in cases {
            let e = parse(text, "bad.fio", 4 * GIB).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.to_string().contains(needle), "{text:?}: {e}");
            assert!(e.to_string().starts_with("bad.fio:"), "{e}");
        }
        let e = parse_bytes(b"[a]\nrw=read\nbs=4\xffk\n", "bad.fio", 4 * GIB).unwrap_err();
        assert_eq!((e.line, e.message.as_str()), (3, "not UTF-8 text"));
    }
}
