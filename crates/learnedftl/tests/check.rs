//! `learnedftl check` through the engine: every registered FTL passes a short check with
//! power cuts, and the check catches each injected fault, shrinks it to a short stream and
//! saves a replay that fails again.

use learnedftl::check::{self, CheckReport, CheckSpec, EngineDriver, ReplayFile, RunOptions};
use learnedftl::check::{Driver, Through};
use learnedftl::engine::{NoProgress, Simulator};
use learnedftl::ftl::FTLS;
use std::path::PathBuf;
use std::time::Duration;

fn spec(ftl: &str, ops: u64, cut_every: u64, set: &[&str]) -> CheckSpec {
    CheckSpec {
        ftl: ftl.into(),
        preset: "tiny".into(),
        capacity: None,
        set: set.iter().map(|s| s.to_string()).collect(),
        seed: 5,
        ops,
        cut_every,
        through: Through::Engine,
        connections: 1,
        blank: false,
    }
}

fn dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("check-test-{}-{name}", std::process::id()))
}

fn run(
    spec: &CheckSpec,
    ops: Option<Vec<check::stream::HostOp>>,
    failures: PathBuf,
) -> CheckReport {
    let opts = RunOptions {
        shrink_time: Duration::from_secs(60),
        failures_dir: failures,
    };
    let mut make = |sim: Simulator| -> Result<Box<dyn Driver>, String> {
        Ok(Box::new(EngineDriver::new(sim)))
    };
    check::run(spec, ops, &opts, &mut make, &mut NoProgress).unwrap()
}

#[test]
fn every_ftl_passes_a_check_with_power_cuts() {
    for &ftl in FTLS {
        let r = run(&spec(ftl, 3000, 150, &[]), None, dir(ftl));
        assert!(r.failures.is_empty(), "{ftl}: {:?}", r.failures);
        assert_eq!(r.ops, 3000, "{ftl}");
        assert!(r.power_cuts >= 3, "{ftl}: {} cuts", r.power_cuts);
        assert!(
            r.reads_checked > 1000 && r.bytes_checked > 10 << 20,
            "{ftl}"
        );
    }
}

/// Flexible Data Placement (docs/fdp.md): every FTL that takes it passes with placement IDs on
/// its writes and power cuts, under both handle types; the FTLs' invariants the check runs
/// include the placement rules, and the oracle each page's handle.
#[test]
fn every_fdp_ftl_passes_a_check_with_placement_ids_and_power_cuts() {
    // Behind a power-loss-protected write buffer too: drained runs and the capacitor dump
    // keep each write's placement ID (the oracle checks every page's handle).
    let plp = ["write_buffer=64KiB", "power_loss_protection=on"];
    for ftl in ["ideal", "dftl", "tpftl", "sftl", "leaftl", "learnedftl"] {
        for (ty, drive) in [
            ("initially", &[][..]),
            ("persistently", &[]),
            ("initially", &plp),
        ] {
            let ty = format!("fdp_ruh_type={ty}");
            let mut set = vec!["logical_ratio=0.75", "fdp_ruhs=4", &ty];
            set.extend_from_slice(drive);
            let r = run(&spec(ftl, 5000, 150, &set), None, dir(ftl));
            assert!(r.failures.is_empty(), "{ftl} {set:?}: {:?}", r.failures);
            assert!(r.power_cuts >= 3, "{ftl} {set:?}: {} cuts", r.power_cuts);
        }
    }
}

/// Each fault is caught, shrunk to at most a few dozen operations, and its saved stream
/// fails again when replayed.
#[test]
fn the_check_catches_each_injected_fault() {
    let cases = [
        ("dftl", "wrong-read:2000", 0),
        ("tpftl", "drop-trim", 0),
        ("leaftl", "lose-flush", 500),
        ("sftl", "forget-mapping", 500),
    ];
    for (ftl, fault, cuts) in cases {
        let d = dir(&format!("{ftl}-{fault}"));
        let set = format!("inject={fault}");
        let s = spec(ftl, 20_000, cuts, &[&set]);
        let r = run(&s, None, d.clone());
        let f = r
            .failures
            .first()
            .unwrap_or_else(|| panic!("{fault} not caught"));
        let n = f.stream_ops.unwrap();
        assert!(n <= 40, "{fault}: shrunk to {n} operations only: {f}");
        let replay = f.replay.as_deref().unwrap();
        assert!(replay.starts_with("learnedftl check --replay "), "{replay}");
        let file: ReplayFile = serde_json::from_str(
            &std::fs::read_to_string(f.replay_file.as_ref().unwrap()).unwrap(),
        )
        .unwrap();
        assert_eq!(file.ops.len() as u64, n);
        let again = run(&file.spec, Some(file.ops), d.clone());
        assert!(
            !again.failures.is_empty(),
            "{fault}: the replay of {} passes: {f}",
            f.replay_file.as_ref().unwrap()
        );
        std::fs::remove_dir_all(d).unwrap();
    }
}

/// A fault the preconditioning's writes trigger (a write of one LPN in 64 never reaches the
/// FTL): the first wrong read finds the preconditioning's data where the write it lost should
/// be, so the check shrinks the preconditioning too, from a blank device, to a stream that
/// holds the lost write, and saves a replay (on a blank device) that fails again.
#[test]
fn a_failure_the_preconditioning_caused_is_shrunk_with_it() {
    let d = dir("setup");
    let s = spec("ideal", 5000, 0, &["inject=drop-write:64"]);
    let r = run(&s, None, d.clone());
    let f = r.failures.first().expect("drop-write caught");
    let n = f.stream_ops.unwrap();
    assert!(n <= 10, "shrunk to {n} operations only: {f}");
    let file: ReplayFile =
        serde_json::from_str(&std::fs::read_to_string(f.replay_file.as_ref().unwrap()).unwrap())
            .unwrap();
    assert!(file.spec.blank, "{f}");
    assert_eq!(file.ops.len() as u64, n);
    assert!(file.ops.iter().any(|o| o.id > 0), "no write left: {f}");
    let again = run(&file.spec, Some(file.ops), d.clone());
    assert!(!again.failures.is_empty(), "the replay passes: {f}");
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn the_same_seed_gives_the_same_check() {
    let s = spec("learnedftl", 2000, 250, &[]);
    let (a, b) = (run(&s, None, dir("a")), run(&s, None, dir("b")));
    assert_eq!(
        (a.ops, a.reads_checked, a.bytes_checked, a.power_cuts),
        (b.ops, b.reads_checked, b.bytes_checked, b.power_cuts)
    );
}

/// A read served from LeaFTL's write buffer, then a power cut in the background GC after it
/// that loses the buffered write: the read returned the new bytes before the cut, and the
/// check must compare it with the model as it was then, not with the version recovery brought
/// back (the soak's seed-7 false failure).
#[test]
fn a_cut_in_the_background_work_after_a_read_leaves_what_the_read_returned() {
    use check::stream::{Cut, HostOp, Kind};
    use learnedftl::device::Cause;
    // Background GC after every request.
    let s = spec(
        "leaftl",
        0,
        1,
        &["gc_bg_lines=20", "gc_bg_min_invalid=0.001"],
    );
    let x = 12_345 * 4096;
    let op = |kind, cut| HostOp {
        placement: 0,
        kind,
        offset: x,
        len: 4096,
        fua: false,
        id: 0,
        new_batch: true,
        cut,
    };
    let write = HostOp {
        id: check::prepare(&s).unwrap().last_id + 1,
        ..op(Kind::Write, None)
    };
    let cut = Cut::At {
        cause: Cause::GcData,
        nth: 1,
    };
    let r = run(
        &s,
        Some(vec![write, op(Kind::Read, Some(cut)), op(Kind::Read, None)]),
        dir("bg-cut"),
    );
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert_eq!(r.power_cuts, 1);
    assert_eq!(
        r.power_cuts_in.get("gc_data"),
        Some(&1),
        "{:?}",
        r.power_cuts_in
    );
    assert_eq!(r.reads_checked, 2);
}

/// Power-loss protection and a write larger than the write buffer (it goes around it), cut
/// after programming pages whose older acknowledged version the buffer held: recovery wrote
/// the dumped version back over the newer one with its older stamp, and at the next cut the
/// newer, never acknowledged version came back (LearnedFTL and μ-FTL, `check --ops 100000
/// --power-cuts --set power_loss_protection=on --set write_buffer=256KiB`, 2026-11-29).
#[test]
fn a_write_around_a_protected_buffer_cut_twice_keeps_what_the_first_recovery_left() {
    use check::stream::{Cut, HostOp, Kind};
    let sets = [
        "power_loss_protection=on",
        "write_buffer=16KiB",
        "write_buffer_drain=full",
    ];
    for ftl in ["ideal", "learnedftl", "mu-ftl"] {
        let s = CheckSpec {
            blank: true,
            ..spec(ftl, 0, 1, &sets)
        };
        let x = 4096 * 4096;
        let op = |kind, pages: u64, id, cut| HostOp {
            placement: 0,
            kind,
            offset: x,
            len: pages * 4096,
            fua: false,
            id,
            new_batch: true,
            cut,
        };
        let ops = vec![
            op(Kind::Write, 2, 1, None), // buffered
            // Around the buffer; cut in its third flash operation, after two of its pages.
            op(Kind::Write, 8, 2, Some(Cut::After(2))),
            op(Kind::Read, 8, 0, None),
            // A read programs nothing: the cut strikes right after it.
            op(Kind::Read, 8, 0, Some(Cut::After(1))),
            op(Kind::Read, 8, 0, None),
        ];
        let r = run(&s, Some(ops), dir(&format!("around-{ftl}")));
        assert!(r.failures.is_empty(), "{ftl}: {:?}", r.failures);
        assert_eq!(r.power_cuts, 2, "{ftl}");
        assert_eq!(r.reads_checked, 3, "{ftl}");
    }
}

/// `--capacity` sizes the checked device as `run`'s does, and its replay command says so.
#[test]
fn a_check_at_a_capacity_sizes_its_device_and_names_it() {
    let s = CheckSpec {
        capacity: Some("240MiB".into()),
        ..spec("ideal", 2000, 0, &[])
    };
    let (cfg, _) = s.device().unwrap();
    assert_eq!(cfg.geometry.blocks_per_plane, 128, "twice tiny's 64");
    assert!(
        s.command()
            .starts_with("learnedftl check --ftl ideal --preset tiny --capacity 240MiB --seed 5"),
        "{}",
        s.command()
    );
    let r = run(&s, None, dir("capacity"));
    assert!(r.failures.is_empty(), "{:?}", r.failures);
}
