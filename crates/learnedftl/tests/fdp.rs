//! Flexible Data Placement (docs/fdp.md) on every FTL that takes it: each handle type's GC
//! rule, per-handle WAF adding up to the device's, the refusals, and power cuts.
//!
//! The isolation checks here scan flash from the test's side: every data page's handle as the
//! device recorded it, checked against the handle the test last wrote its LPN with (so a
//! mislabelled copy fails too), and the handles each line holds.

mod common;

use common::sim;
use learnedftl::addr::{Ppa, SimTime};
use learnedftl::device::RuOwner;
use learnedftl::engine::Simulator;
use learnedftl::request::Op;
use learnedftl::workload::HostIo;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;

/// The FTLs that place by handle.
const FDP_FTLS: [&str; 6] = ["ideal", "dftl", "tpftl", "sftl", "leaftl", "learnedftl"];

/// `tiny` with 16 spare lines (its own 4 hold no handle's open unit) and `ruhs` handles.
fn fdp_sim(ftl: &str, ruhs: u16, ruh_type: &str) -> Simulator {
    fdp_sim_with(ftl, ruhs, ruh_type, &[])
}

/// [`fdp_sim`] with more keys.
fn fdp_sim_with(ftl: &str, ruhs: u16, ruh_type: &str, more: &[&str]) -> Simulator {
    let ruhs = format!("fdp_ruhs={ruhs}");
    let ty = format!("fdp_ruh_type={ruh_type}");
    let mut kv = vec!["logical_ratio=0.75", &ruhs, &ty];
    kv.extend_from_slice(more);
    sim(ftl, &kv)
}

/// Writes `pages` pages from `lpn` at `t` with placement ID `h`, noted in `handles`.
fn write_tagged(s: &mut Simulator, t: u64, lpn: u64, pages: u64, h: u16, handles: &mut [u16]) {
    s.submit(HostIo {
        arrival: SimTime(t),
        op: Op::Write,
        offset: lpn * 4096,
        len: pages * 4096,
        placement: h,
    })
    .unwrap();
    handles[lpn as usize..(lpn + pages) as usize].fill(h);
}

/// Writes the whole logical space once, 32 KiB at a time, handle `h` its `h`th part.
fn fill(s: &mut Simulator, ruhs: u16, handles: &mut [u16]) {
    let lp = handles.len() as u64;
    let part = lp.div_ceil(ruhs as u64);
    let mut t = s.clock().0;
    for lpn in (0..lp).step_by(8) {
        let h = (lpn / part) as u16;
        let pages = 8.min(lp - lpn);
        t += 20_000;
        write_tagged(s, t, lpn, pages, h, handles);
    }
}

/// `n` random 4 KiB-to-32 KiB writes, each tagged with a handle: handle `h` writes the `h`th
/// part of the logical space three times in four, anywhere otherwise (so LPNs change handle).
/// `handles[lpn]` follows each LPN's last handle. Checks the FTL's invariants (placement
/// included) every `every` writes.
fn tagged_writes(s: &mut Simulator, n: u32, ruhs: u16, seed: u64, handles: &mut [u16]) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let lp = handles.len() as u64;
    let part = lp / ruhs as u64;
    let mut t = s.clock().0;
    for i in 0..n {
        let h = rng.gen_range(0..ruhs);
        let pages = rng.gen_range(1..=8u64);
        let lpn = if rng.gen_range(0..4) < 3 {
            h as u64 * part + rng.gen_range(0..part - pages)
        } else {
            rng.gen_range(0..lp - pages)
        };
        t += 20_000;
        write_tagged(s, t, lpn, pages, h, handles);
        if i % 500 == 0 {
            s.ftl().check_invariants(s.device()).unwrap();
        }
    }
}

/// Per line, the handles of the data pages it holds (valid or not); checks that every valid
/// data page carries its LPN's last handle (of its version on flash: a write an FTL still
/// buffers in DRAM, LeaFTL's, has its older version there).
fn handles_by_line(s: &Simulator, handles: &[u16]) -> Vec<BTreeSet<u8>> {
    let dev = s.device();
    let buffered: BTreeSet<u32> = {
        let mut v = Vec::new();
        s.ftl().unflushed(dev, &mut v);
        v.iter().map(|u| u.lpn.0).collect()
    };
    let geo = dev.geo();
    (0..geo.lines())
        .map(|line| {
            let mut set = BTreeSet::new();
            for i in 0..geo.blocks_per_line() {
                let b = geo.block_in_line(line, i);
                for pg in 0..dev.block_written(b) {
                    let ppa = Ppa(b * geo.pages_per_block + pg);
                    let Some(lpn) = dev.peek_oob(ppa).and_then(|o| o.lpn()) else {
                        continue;
                    };
                    let h = dev.page_handle(ppa);
                    if dev.is_valid(ppa) && !buffered.contains(&lpn.0) {
                        let ftl = s.ftl().name();
                        assert_eq!(h as u16, handles[lpn.idx()], "{ftl}: {ppa:?} holds {lpn:?}");
                    }
                    set.insert(h);
                }
            }
            set
        })
        .collect()
}

#[test]
fn persistently_isolated_handles_never_share_a_reclaim_unit() {
    for ftl in FDP_FTLS {
        let mut s = fdp_sim(ftl, 4, "persistently");
        let mut handles = vec![0u16; s.device().geo().logical_pages as usize];
        // A full device, then twice its spare space: GC runs throughout.
        fill(&mut s, 4, &mut handles);
        tagged_writes(&mut s, 4_000, 4, 1, &mut handles);
        s.ftl().check_invariants(s.device()).unwrap();
        let f = s.device().fdp().unwrap();
        let by_line = handles_by_line(&s, &handles);
        let mut gc_units = 0;
        for (line, set) in (0u32..).zip(&by_line) {
            assert!(set.len() <= 1, "{ftl}: line {line} holds handles {set:?}");
            match f.owner(line) {
                RuOwner::SharedGc => panic!("{ftl}: line {line} is a shared GC unit"),
                RuOwner::Gc(_) => gc_units += 1,
                _ => {}
            }
        }
        assert!(gc_units > 0, "{ftl}: no GC unit: GC never ran");
        assert_eq!(f.counters().events.implicitly_modified, 0, "{ftl}");
    }
}

#[test]
fn initially_isolated_handles_share_only_gc_units() {
    for ftl in FDP_FTLS {
        let mut s = fdp_sim(ftl, 4, "initially");
        let mut handles = vec![0u16; s.device().geo().logical_pages as usize];
        fill(&mut s, 4, &mut handles);
        tagged_writes(&mut s, 4_000, 4, 2, &mut handles);
        s.ftl().check_invariants(s.device()).unwrap();
        let f = s.device().fdp().unwrap();
        let mut mixed = 0;
        for (line, set) in (0u32..).zip(handles_by_line(&s, &handles)) {
            match f.owner(line) {
                RuOwner::SharedGc => mixed += (set.len() > 1) as u32,
                // Host units keep one handle's writes apart under either type.
                _ => assert!(set.len() <= 1, "{ftl}: line {line} holds handles {set:?}"),
            }
        }
        // The scan above would see two handles in one unit: GC merges them here.
        assert!(mixed > 0, "{ftl}: no shared GC unit holds several handles");
        assert!(f.counters().events.implicitly_modified > 0, "{ftl}");
    }
}

#[test]
fn a_controller_write_buffer_keeps_each_writes_placement() {
    // The buffer drains a host write's pages later, as a run of their own: with the handle
    // they were written with (every valid page's handle is checked against its LPN's).
    for ftl in FDP_FTLS {
        let mut s = fdp_sim_with(ftl, 4, "persistently", &["write_buffer=256KiB"]);
        let mut handles = vec![0u16; s.device().geo().logical_pages as usize];
        fill(&mut s, 4, &mut handles);
        tagged_writes(&mut s, 2_000, 4, 3, &mut handles);
        for (line, set) in (0u32..).zip(handles_by_line(&s, &handles)) {
            assert!(set.len() <= 1, "{ftl}: line {line} holds handles {set:?}");
        }
        let c = s.device().fdp().unwrap().counters();
        assert!(c.handles.iter().all(|h| h.host_pages > 0), "{ftl}: {c:?}");
    }
}

#[test]
fn handles_of_either_type_side_by_side_keep_their_own_rules() {
    // Handles 0 and 3 persistently isolated, 1 and 2 initially: 1 and 2 may share GC units,
    // 0's and 3's data never shares a line with another handle's.
    let types = "persistently,initially,initially,persistently";
    for ftl in FDP_FTLS {
        let mut s = fdp_sim(ftl, 4, types);
        let mut handles = vec![0u16; s.device().geo().logical_pages as usize];
        fill(&mut s, 4, &mut handles);
        tagged_writes(&mut s, 4_000, 4, 6, &mut handles);
        s.ftl().check_invariants(s.device()).unwrap();
        let f = s.device().fdp().unwrap();
        let (mut shared_mixed, mut own_gc) = (0, 0);
        for (line, set) in (0u32..).zip(handles_by_line(&s, &handles)) {
            if set.contains(&0) || set.contains(&3) {
                assert_eq!(set.len(), 1, "{ftl}: line {line} holds handles {set:?}");
            }
            match f.owner(line) {
                RuOwner::SharedGc => shared_mixed += (set.len() > 1) as u32,
                RuOwner::Gc(h) => {
                    assert!(
                        h == 0 || h == 3,
                        "{ftl}: line {line} is handle {h}'s GC unit"
                    );
                    own_gc += 1;
                }
                _ => assert!(set.len() <= 1, "{ftl}: line {line} holds handles {set:?}"),
            }
        }
        assert!(
            shared_mixed > 0 && own_gc > 0,
            "{ftl}: {shared_mixed} {own_gc}"
        );
    }
}

#[test]
fn per_handle_waf_adds_up_to_the_device_waf() {
    for ftl in FDP_FTLS {
        for ty in ["initially", "persistently"] {
            let mut s = fdp_sim(ftl, 3, ty);
            let mut handles = vec![0u16; s.device().geo().logical_pages as usize];
            fill(&mut s, 3, &mut handles);
            s.begin_phase("measured");
            tagged_writes(&mut s, 3_000, 3, 4, &mut handles);
            let m = s.end_phase();
            let f = m.fdp.as_ref().expect("FDP metrics");
            assert_eq!(f.handles.len(), 3);
            let shares: f64 = f.handles.iter().map(|h| h.waf_share).sum::<f64>() + f.ftl_waf_share;
            assert!(
                (shares - m.waf).abs() < 1e-9,
                "{ftl} {ty}: shares {shares} != WAF {}",
                m.waf
            );
            let programs = m.flash.programs["total"];
            let media: u64 = f.handles.iter().map(|h| h.media_pages).sum();
            assert_eq!(media + f.ftl_pages, programs, "{ftl} {ty}");
            let host: u64 = f.handles.iter().map(|h| h.host_pages).sum();
            assert_eq!(host, m.flash.programs["user"], "{ftl} {ty}");
            assert!(f.handles.iter().all(|h| h.host_pages > 0 && h.waf >= 1.0));
            assert!(
                f.handles.iter().any(|h| h.gc_pages > 0),
                "{ftl} {ty}: no GC"
            );
        }
    }
}

#[test]
fn ftls_whose_placement_fdp_does_not_fit_refuse_it_naming_why() {
    for (ftl, own, why) in [
        ("hpftl", None, "hashes"),
        ("fast", None, "log blocks"),
        ("blockmap", None, "logical block"),
        ("mu-ftl", None, "partition"),
        (
            "learnedftl",
            Some("design=paper"),
            "borrows other groups' lines",
        ),
    ] {
        let kv = ["logical_ratio=0.75", "fdp_ruhs=2"];
        let mut p =
            learnedftl::Params::from_assignments(kv.iter().copied().chain(own), "test").unwrap();
        let cfg = learnedftl::DeviceConfig::from_params("tiny", &mut p).unwrap();
        let e = learnedftl::ftl::build(ftl, &cfg, &mut p)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("fdp_ruhs") && e.contains(why), "{ftl}: {e}");
    }
}

#[test]
fn without_fdp_placement_ids_change_nothing() {
    // Placement IDs on a device without FDP are ignored by the FTL (the front ends refuse them).
    for ftl in FDP_FTLS {
        let run = |tag: bool| {
            let mut s = sim(ftl, &["logical_ratio=0.75"]);
            let mut rng = rand::rngs::StdRng::seed_from_u64(5);
            let lp = s.device().geo().logical_pages;
            for i in 0..3_000u64 {
                s.submit(HostIo {
                    arrival: SimTime(i * 20_000),
                    op: Op::Write,
                    offset: rng.gen_range(0..lp - 8) * 4096,
                    len: 4096,
                    placement: if tag { (i % 3) as u16 } else { 0 },
                })
                .unwrap();
            }
            let m = s.end_phase();
            assert!(m.fdp.is_none());
            (m.waf, m.flash.programs.clone())
        };
        assert_eq!(run(false), run(true), "{ftl}");
    }
}

#[test]
fn fdp_ranges_place_untagged_writes_by_lba() {
    // What `serve --set fdp_ranges=…` gives unmodified applications: the first half of the
    // logical space on handle 1, the rest on handle 0; a tagged write keeps its own ID.
    let mut s = sim(
        "dftl",
        &["logical_ratio=0.75", "fdp_ruhs=3", "fdp_ranges=0-50%:1"],
    );
    let lp = s.device().geo().logical_pages;
    let mut t = 0;
    let mut write = |s: &mut Simulator, lpn: u64, placement: u16| {
        t += 20_000;
        s.submit(HostIo {
            arrival: SimTime(t),
            op: Op::Write,
            offset: lpn * 4096,
            len: 4096,
            placement,
        })
        .unwrap();
    };
    for lpn in (0..lp).step_by(97) {
        write(&mut s, lpn, 0);
    }
    write(&mut s, 1, 2);
    let m = s.end_phase();
    let h = &m.fdp.unwrap().handles;
    let first_half = (0..lp).step_by(97).filter(|&l| l < lp / 2).count() as u64;
    let pages: Vec<u64> = h.iter().map(|h| h.host_pages).collect();
    assert_eq!(
        pages,
        [
            (0..lp).step_by(97).count() as u64 - first_half,
            first_half,
            1
        ]
    );
}

/// LearnedFTL's merges under FDP (docs/fdp.md, "LearnedFTL"): while idle they sort groups into
/// group lines, and so train their models, without breaking either handle type's rule. Under
/// persistently isolated handles only groups whose pages all carry the default handle are
/// merged; under initially isolated ones any group is, into shared GC units; with handle 0
/// persistently and handle 1 initially isolated, groups of either handle alone are.
#[test]
fn learnedftl_merges_keep_each_handle_types_rule() {
    use learnedftl::engine::NoProgress;
    use learnedftl::workload::Settle;
    for ty in ["initially", "persistently", "persistently,initially"] {
        let mut s = fdp_sim("learnedftl", 2, ty);
        let lp = s.device().geo().logical_pages;
        let mut handles = vec![0u16; lp as usize];
        fill(&mut s, 2, &mut handles);
        // Random overwrites, each half of the logical space by its own handle, handle 1's
        // reaching a line's worth of LPNs into handle 0's half: the groups there hold both.
        let ppl = s.device().geo().pages_per_line() as u64;
        let mut rng = rand::rngs::StdRng::seed_from_u64(8);
        let mut t = s.clock().0;
        for _ in 0..6_000 {
            let h = rng.gen_range(0..2u16);
            let lpn = match h {
                0 => rng.gen_range(0..lp / 2 - ppl),
                _ => rng.gen_range(lp / 2 - ppl..lp),
            };
            t += 20_000;
            write_tagged(&mut s, t, lpn, 1, h, &mut handles);
        }
        s.settle("settle", Settle::Auto, &mut NoProgress).unwrap();
        s.ftl().check_invariants(s.device()).unwrap();
        let x = s.ftl().extra_counters();
        assert!(x["idle_merges"].as_u64().unwrap() > 0, "{ty}: {x}");
        let f = s.device().fdp().unwrap();
        let mut merged_other = false;
        for (line, set) in (0u32..).zip(handles_by_line(&s, &handles)) {
            match f.owner(line) {
                RuOwner::SharedGc if ty != "persistently" => {
                    merged_other |= set.contains(&1);
                    assert!(ty == "initially" || !set.contains(&0), "{ty}: line {line}");
                }
                _ => assert!(set.len() <= 1, "{ty}: line {line} holds handles {set:?}"),
            }
        }
        assert_eq!(ty != "persistently", merged_other, "{ty}");
    }
}
