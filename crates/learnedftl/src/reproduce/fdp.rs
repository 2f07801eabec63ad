//! `reproduce fdp` (issue 52; docs/fdp.md): what NVMe Flexible Data Placement does to write
//! amplification, isolation and the learned mappings, as runs and job files. (a) Two lifetimes,
//! CacheLib's shape, across utilisations; (b) WARP-style multi-stream mixes, one adversarial to
//! reclaim-unit GC, under both handle types; (c) one handle's random writes beside another's
//! reads; (d) TPFTL, LeaFTL and LearnedFTL on (a).
//!
//! Every run uses a device exposing [`FDP_LOGICAL_RATIO`] of its flash ([`FDP_LOGICAL_RATIO_4`]
//! with four handles), with and without FDP, so that the handles' open units fit `tiny` too; a utilisation is the share of that logical
//! space the workload writes (the rest is never written, spare space as CacheLib leaves it).

use super::def::{Ctx, Scale};
use super::spec::{RunSpec, WorkloadSpec};

/// The logical space of the `fdp` runs with two handles, as a share of the physical pages: the
/// spare lines of `tiny` then hold GC's and two persistently isolated handles' open units.
pub const FDP_LOGICAL_RATIO: f64 = 0.875;

/// The logical space of (b)'s runs, with four handles.
pub const FDP_LOGICAL_RATIO_4: f64 = 0.8;

/// (a)'s utilisations, percent of the logical space, with their job files (untagged, and
/// tagged for the FDP runs).
pub const UTILISATIONS: [(u32, &str, &str); 4] = [
    (50, "fdp-a-50", "fdp-a-50-t"),
    (70, "fdp-a-70", "fdp-a-70-t"),
    (85, "fdp-a-85", "fdp-a-85-t"),
    (95, "fdp-a-95", "fdp-a-95-t"),
];

/// The utilisation of (b), (c) and (d) ((d) runs (a)'s job files at it).
const FIXED_UTILISATION: u32 = 85;

/// How a run places: a label and `fdp_ruh_type` (`None`: no FDP, writes untagged).
pub const PLACEMENTS: [(&str, Option<&str>); 3] = [
    ("no FDP", None),
    ("FDP initially", Some("initially")),
    ("FDP persistently", Some("persistently")),
];

/// (d)'s FTLs.
pub const MAPPING_FTLS: [&str; 3] = ["tpftl", "leaftl", "learnedftl"];

/// (b)'s mixes: a label and its job files (untagged, tagged).
pub const MIXES: [(&str, &str, &str); 3] = [
    ("rates 8:4:2:1", "fdp-b-rates", "fdp-b-rates-t"),
    ("equal rates", "fdp-b-equal", "fdp-b-equal-t"),
    (
        "adversarial: handles not lifetimes",
        "fdp-b-adversarial",
        "fdp-b-adversarial-t",
    ),
];

/// Every job file of the experiment: each untagged, and tagged (`-t`) for the FDP runs.
pub const JOBS: [&str; 16] = [
    "fdp-a-50",
    "fdp-a-50-t",
    "fdp-a-70",
    "fdp-a-70-t",
    "fdp-a-85",
    "fdp-a-85-t",
    "fdp-a-95",
    "fdp-a-95-t",
    "fdp-b-rates",
    "fdp-b-rates-t",
    "fdp-b-equal",
    "fdp-b-equal-t",
    "fdp-b-adversarial",
    "fdp-b-adversarial-t",
    "fdp-c",
    "fdp-c-t",
];

/// The untagged job file, or the tagged one for a run with FDP (`ruh_type` given).
fn job(untagged: &'static str, tagged: &'static str, ruh_type: Option<&str>) -> WorkloadSpec {
    WorkloadSpec::Job(if ruh_type.is_some() { tagged } else { untagged })
}

/// `run` on the experiment's device for `handles` handles, with them (of `ruh_type`) or
/// without FDP (`None`).
fn placed(run: RunSpec, handles: u32, ruh_type: Option<&str>) -> RunSpec {
    let run = run.set("logical_ratio", ratio(handles));
    match ruh_type {
        None => run,
        Some(t) => run.set("fdp_ruhs", handles).set("fdp_ruh_type", t),
    }
}

/// The runs of `reproduce fdp`, labelled `(a) 85 % · no FDP` and so on.
pub fn runs(_: &Ctx) -> Vec<RunSpec> {
    let mut runs = Vec::new();
    for (u, untagged, tagged) in UTILISATIONS {
        for (label, ty) in PLACEMENTS {
            let w = job(untagged, tagged, ty);
            let r = RunSpec::new(format!("(a) {u} % · {label}"), &["ideal"], w);
            runs.push(placed(r, 2, ty));
        }
    }
    for (mix, untagged, tagged) in MIXES {
        for (label, ty) in PLACEMENTS {
            let w = job(untagged, tagged, ty);
            let r = RunSpec::new(format!("(b) {mix} · {label}"), &["ideal"], w);
            runs.push(placed(r, 4, ty));
        }
    }
    for (label, ty) in PLACEMENTS {
        let w = job("fdp-c", "fdp-c-t", ty);
        let r = RunSpec::new(format!("(c) {label}"), &["ideal", "tpftl"], w);
        runs.push(placed(r, 2, ty));
    }
    // (d): (a) at the fixed utilisation, on the mapping schemes that read through a cache
    // (TPFTL), learned segments (LeaFTL) and learned models over a cache (LearnedFTL), whose
    // merges differ by handle type.
    for (label, ty) in PLACEMENTS {
        let w = job("fdp-a-85", "fdp-a-85-t", ty);
        let r = RunSpec::new(format!("(d) {label}"), &MAPPING_FTLS, w);
        runs.push(placed(r, 2, ty));
    }
    runs
}

/// The logical space's share of the physical pages on the device for `handles` handles.
fn ratio(handles: u32) -> f64 {
    if handles > 2 {
        FDP_LOGICAL_RATIO_4
    } else {
        FDP_LOGICAL_RATIO
    }
}

/// `u` % of the logical space of the device for `handles` handles, in whole 512 KiB units,
/// KiB; from the suite's scale, whose slice is a 64th of the preset's logical space (15/16 of
/// its pages).
fn used_kib(s: &Scale, u: u32, handles: u32) -> u64 {
    let physical_pages = s.slice_kib * 64 / 4 * 16 / 15;
    let logical_kib = (physical_pages as f64 * ratio(handles)) as u64 * 4;
    logical_kib * u as u64 / 100 / 512 * 512
}

/// Round `kib` down to whole 512 KiB units.
fn units(kib: u64) -> u64 {
    kib / 512 * 512
}

/// `fdp=1` and `fdp_pli=ids` when `tagged`, else nothing.
fn tag(tagged: bool, ids: &str) -> String {
    if tagged {
        format!("fdp=1\nfdp_pli={ids}\n")
    } else {
        String::new()
    }
}

/// The job file `name` for `s`, if it is one of [`JOBS`].
pub fn job_text(name: &str, s: &Scale) -> Option<String> {
    if !JOBS.contains(&name) {
        return None;
    }
    let (stem, tagged) = match name.strip_suffix("-t") {
        Some(stem) => (stem, true),
        None => (name, false),
    };
    let text = match stem {
        "fdp-a-50" => two_lifetimes(s, 50, tagged),
        "fdp-a-70" => two_lifetimes(s, 70, tagged),
        "fdp-a-85" => two_lifetimes(s, 85, tagged),
        "fdp-a-95" => two_lifetimes(s, 95, tagged),
        "fdp-c" => isolation(s, tagged),
        mix => mixes(s, mix, tagged)?,
    };
    Some(text)
}

/// (a): a hot quarter of the used space under 4 KiB random overwrites (placement ID 1) beside
/// a circular log of 512 KiB writes over the rest (ID 0): filled once, then two passes of the
/// log (one warming, one measured) with as many bytes of hot overwrites each, then reads.
fn two_lifetimes(s: &Scale, u: u32, tagged: bool) -> String {
    let used = used_kib(s, u, 2);
    let hot = units(used / 4);
    let log = used - hot;
    let per_clone = log / 4 / 4 * 4;
    let (h, l) = (tag(tagged, "1"), tag(tagged, "0"));
    let pass = |name: &str| {
        format!(
            "[{name}]\nstonewall\nrw=randwrite\nbs=4k\nnumjobs=4\nsize={hot}k\nio_size={per_clone}k\n{h}\n\
             [{name}-log]\nrw=write\nbs=512k\noffset={hot}k\nsize={log}k\n{l}\n"
        )
    };
    format!(
        "; Two lifetimes at {u} % utilisation (CacheLib's shape): a hot region of {hot} KiB under\n\
         ; 4 KiB random overwrites beside a circular log of 512 KiB writes over {log} KiB{}.\n\
         [fill]\nrw=write\nbs=512k\nsize={hot}k\n{h}\n\
         [fill-log]\nrw=write\nbs=512k\noffset={hot}k\nsize={log}k\n{l}\n\
         {}{}\
         [read]\nstonewall\nrw=randread\nbs=4k\nnumjobs=16\nsize={used}k\nnumber_ios={}\n",
        if tagged {
            "; the hot\n; region's writes carry placement ID 1, the log's 0"
        } else {
            ""
        },
        pass("warm"),
        pass("measure"),
        s.rr_ios / 4,
    )
}

/// (b): four regions of the used space, filled each with its own ID, then random 4 KiB writes
/// (a warming pass over the used space's size, then one measured) by the mix's rule.
fn mixes(s: &Scale, mix: &str, tagged: bool) -> Option<String> {
    let used = used_kib(s, FIXED_UTILISATION, 4);
    let region = units(used / 4);
    let mut fill = String::new();
    for i in 0..4 {
        fill += &format!(
            "[{}]\nrw=write\nbs=512k\noffset={}k\nsize={region}k\n{}\n",
            if i == 0 {
                "fill".to_string()
            } else {
                format!("fill-{i}")
            },
            i * region,
            tag(tagged, &i.to_string())
        );
    }
    let pass = |name: &str| -> Option<String> {
        Some(match mix {
            "fdp-b-rates" | "fdp-b-equal" => {
                let weights = if mix == "fdp-b-rates" { [8, 4, 2, 1] } else { [1, 1, 1, 1] };
                let total: u64 = weights.iter().sum();
                (0..4)
                    .map(|i| {
                        let io = 4 * region * weights[i] / total / 4 * 4;
                        format!(
                            "[{}]\n{}rw=randwrite\nbs=4k\noffset={}k\nsize={region}k\nio_size={io}k\n{}\n",
                            if i == 0 { name.to_string() } else { format!("{name}-{i}") },
                            if i == 0 { "stonewall\n" } else { "" },
                            i as u64 * region,
                            tag(tagged, &i.to_string())
                        )
                    })
                    .collect()
            }
            "fdp-b-adversarial" => format!(
                "[{name}]\nstonewall\nrw=randwrite\nbs=4k\nnumjobs=4\nsize={}k\nio_size={region}k\n{}{}\n",
                4 * region,
                tag(tagged, "0-3"),
                if tagged { "fdp_pli_select=random\n" } else { "" }
            ),
            _ => return None,
        })
    };
    Some(format!(
        "; Four streams at {FIXED_UTILISATION} % utilisation: {mix}. Each fills its own quarter{}.\n{fill}{}{}",
        if tagged { " with its own placement ID" } else { "" },
        pass("warm")?,
        pass("measure")?
    ))
}

/// (c): the used space's first half is one handle's (ID 1), written at random; its second half
/// another's (ID 0), only read. Filled together; a warming pass of writes; then reads of the
/// second half beside more writes of the first.
fn isolation(s: &Scale, tagged: bool) -> String {
    let used = used_kib(s, FIXED_UTILISATION, 2);
    let half = units(used / 2);
    let (w, r) = (tag(tagged, "1"), tag(tagged, "0"));
    format!(
        "; Isolation at {FIXED_UTILISATION} % utilisation: 4 KiB random writes to {half} KiB beside\n\
         ; 4 KiB random reads of the other {half} KiB.\n\
         [fill]\nrw=write\nbs=512k\nsize={half}k\n{w}\n\
         [fill-read]\nrw=write\nbs=512k\noffset={half}k\nsize={half}k\n{r}\n\
         [warm]\nstonewall\nrw=randwrite\nbs=4k\nnumjobs=4\nsize={half}k\nio_size={}k\n{w}\n\
         [measure]\nstonewall\nrw=randwrite\nbs=4k\nnumjobs=4\nsize={half}k\nio_size={}k\n{w}\n\
         [measure-read]\nrw=randread\nbs=4k\nnumjobs=16\noffset={half}k\nsize={half}k\nnumber_ios={}\n",
        half / 4 / 4 * 4,
        half / 16 / 4 * 4,
        s.rr_ios,
    )
}
