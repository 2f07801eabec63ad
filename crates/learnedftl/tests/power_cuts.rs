//! Power cuts on every recoverable FTL (docs/power.md): on `tiny`, full and fragmented so GC
//! runs throughout, a random stream of writes, trims, flushes and reads is cut at 1,000 random
//! instants per FTL (request and operation offset drawn from a seed); after each cut the FTL is
//! rebuilt from flash and the engine reads every LPN through a clone of the recovered simulator
//! against the oracle (acknowledged writes and trims must hold; the request in flight may leave
//! old or new data on each page) and checks the FTL's invariants. Plus deterministic cuts at
//! chosen operations.

use learnedftl::device::{Cause, PowerCut};
use learnedftl::engine::{NoProgress, Payload, PowerCutPlan, SimOptions, Simulator, Verify};
use learnedftl::ftl::RECOVERABLE;
use learnedftl::seed::mix;
use learnedftl::stats::{Metrics, PowerCutSummary};
use learnedftl::workload::{HostIo, JobSpec, RwKind, Settle};
use learnedftl::{DeviceConfig, Op, Params};

/// Cuts per FTL in one test run.
const CUTS: u64 = 1000;
/// Host requests per cut window.
const EVERY: u64 = 12;

/// A simulator on a full, fragmented `tiny` with fail-fast verification.
fn prepared(ftl: &str, kv: &[&str], seed: u64) -> Simulator {
    let mut params = Params::from_assignments(kv.iter().copied(), "test").unwrap();
    let cfg = DeviceConfig::from_params("tiny", &mut params).unwrap();
    let opts = SimOptions {
        verify: Verify::FailFast,
        check_invariants: false,
        ..SimOptions::default()
    };
    let mut sim = Simulator::new(&cfg, ftl, params, opts).unwrap();
    let mut fill = JobSpec::new("fill", RwKind::Write);
    fill.bs = 512 << 10;
    sim.run_jobs("fill", &[fill], seed, &mut NoProgress)
        .unwrap();
    let mut frag = JobSpec::new("fragment", RwKind::RandWrite);
    frag.bs = 16 << 10;
    frag.io_size = Some(cfg.geometry.logical_bytes() / 2);
    frag.iodepth = 8;
    sim.run_jobs("fragment", &[frag], seed, &mut NoProgress)
        .unwrap();
    sim
}

/// `n` random requests, one at a time from the simulator's clock: writes of 1–8 pages (50 %),
/// reads of 1–16 (30 %), trims of 1–16 (15 %), flushes; returns the phase's metrics.
fn random_requests(sim: &mut Simulator, n: u64, seed: u64) -> Metrics {
    let lp = sim.device().geo().logical_pages;
    sim.begin_phase("random");
    let mut t = sim.clock();
    for i in 0..n {
        let r = mix(seed, i, 7);
        let (op, max) = match r % 100 {
            0..=49 => (Op::Write, 8),
            50..=79 => (Op::Read, 16),
            80..=94 => (Op::Trim, 16),
            _ => (Op::Flush, 0),
        };
        let first = (r >> 8) % lp;
        let pages = (1 + (r >> 40) % max.max(1)).min(lp - first);
        let io = HostIo {
            placement: 0,
            arrival: t,
            op,
            offset: first * 4096,
            len: if op == Op::Flush { 0 } else { pages * 4096 },
        };
        t = sim
            .submit(io)
            .unwrap_or_else(|e| panic!("{} request {i}: {e}", sim.ftl().name()));
    }
    sim.end_phase()
}

/// `cuts` random cuts on `ftl` (parameters `kv`): every LPN checked after each, GC and trim
/// records on the way; returns the phase's metrics.
fn cut_often(ftl: &str, kv: &[&str], seed: u64, cuts: u64) -> Metrics {
    cut_prepared(prepared(ftl, kv, seed), seed, cuts)
}

/// [`cut_often`] on a simulator already prepared.
fn cut_prepared(mut sim: Simulator, seed: u64, cuts: u64) -> Metrics {
    let ftl = sim.ftl().name();
    sim.plan_power_cuts(PowerCutPlan { every: EVERY, seed })
        .unwrap();
    let m = random_requests(&mut sim, cuts * EVERY, seed);
    let p = m.power_cuts.as_ref().expect("power cuts reported");
    assert_eq!(p.count, cuts, "{ftl}");
    assert_eq!(m.verify.failures, 0, "{ftl}");
    // Every LPN was checked after every cut, on top of the reads.
    let lp = sim.device().geo().logical_pages;
    assert!(m.verify.checked >= cuts * lp, "{ftl}: {}", m.verify.checked);
    assert!(m.gc.events > 0, "{ftl}: no GC");
    assert!(p.recovery_sim_seconds > 0.0);
    // Recovery's reads are the scans', plus those of the collections it finished or its own
    // programs needed (GC causes).
    let scans = m.flash.reads["recovery"];
    let gc_reads = m.flash.reads["gc_data"] + m.flash.reads["gc_translation"];
    assert!(
        scans > 0 && scans <= p.recovery_flash_reads && scans + gc_reads >= p.recovery_flash_reads,
        "{ftl}: {scans} scan reads, {gc_reads} GC reads, {p:?}"
    );
    assert!(m.requests.trim > 0, "{ftl}: no trim");
    sim.ftl().check_invariants(sim.device()).unwrap();
    m
}

/// [`CUTS`] random cuts without checkpoints: each recovery reads every programmed page.
fn random_cuts(ftl: &str, kv: &[&str], seed: u64) -> PowerCutSummary {
    let m = cut_often(ftl, kv, seed, CUTS);
    let p = m.power_cuts.expect("power cuts reported");
    let lp = DeviceConfig::preset("tiny").unwrap().geometry.logical_pages;
    // The scan reads every programmed page: most of the device.
    assert!(p.recovery_flash_reads >= CUTS * lp / 2, "{ftl}: {p:?}");
    assert_eq!(m.flash.programs["checkpoint"], 0);
    p
}

#[test]
fn random_cuts_ideal() {
    random_cuts("ideal", &[], 1);
}

#[test]
fn random_cuts_dftl() {
    // A cache of ~100 entries: write-backs on most requests, so cuts land in them too.
    random_cuts("dftl", &["mapping_dram_bytes=1k"], 2);
}

#[test]
fn random_cuts_tpftl() {
    random_cuts("tpftl", &["mapping_dram_bytes=1k", "node_bytes=16"], 3);
}

#[test]
fn random_cuts_sftl() {
    random_cuts("sftl", &[], 4);
}

#[test]
fn random_cuts_leaftl() {
    // A small write buffer so that flushes (and cuts inside them) are frequent; γ > 0 so that
    // approximate segments are relearned too.
    let p = random_cuts("leaftl", &["write_buffer_pages=64", "gamma=2"], 5);
    // Cuts struck with acknowledged writes in the buffer, and some were lost (the check
    // allowed each to read as any version from its durable one on).
    assert!(p.lost_unflushed_pages > 0, "{p:?}");
}

#[test]
fn random_cuts_learnedftl() {
    random_cuts("learnedftl", &[], 14);
}

#[test]
fn random_cuts_learnedftl_after_idle_merges() {
    // The device idles first: idle merges sort the fragmented groups into lines of their own
    // (room reclaimed from the log; tiny's own spare lines are all GC's reserve, hence a lower
    // logical ratio), which recovery must then rebuild as group lines.
    let mut sim = prepared("learnedftl", &["logical_ratio=0.85"], 16);
    let settle = sim
        .settle("settle", Settle::Auto, &mut NoProgress)
        .unwrap()
        .unwrap();
    let merges = &settle.ftl_counters["idle_merges"];
    assert!(merges.as_u64().unwrap() > 0, "{merges}");
    cut_prepared(sim, 16, CUTS);
}

#[test]
fn random_cuts_learnedftl_when_idle_time_runs_out_mid_sort() {
    // Idle time ends half way through the sort: the new mappings of pages the idle
    // collections moved wait in the CMT as dirty entries (`idle_gc_updates=cache`) when the
    // host comes back, and a cut loses them as it loses any dirty entry: recovery must find the
    // moved pages by their OOBs.
    let mut sim = prepared("learnedftl", &["logical_ratio=0.85"], 20);
    let whole = sim
        .clone()
        .settle("settle", Settle::Auto, &mut NoProgress)
        .unwrap()
        .unwrap();
    let half = (whole.sim_seconds * 1e9 / 2.0) as u64;
    let settle = sim
        .settle("settle", Settle::For(half), &mut NoProgress)
        .unwrap()
        .unwrap();
    let cached = &settle.ftl_counters["idle_cached_moves"];
    assert!(cached.as_u64().unwrap() > 0, "{cached}");
    assert!(
        settle.sim_seconds < whole.sim_seconds,
        "the idle time ran out"
    );
    cut_prepared(sim, 20, CUTS);
}

#[test]
fn random_cuts_learnedftl_paper_design() {
    // Groups borrow lenders' lines and are collected (and trained) whole.
    random_cuts("learnedftl", &["design=paper"], 15);
}

#[test]
fn random_cuts_mu_ftl() {
    random_cuts("mu-ftl", &[], 7);
}

#[test]
fn random_cuts_hpftl() {
    random_cuts("hpftl", &[], 8);
}

#[test]
fn random_cuts_hpftl_paper_design() {
    // A fixed secondary table, refilled by recovery.
    random_cuts("hpftl", &["design=paper"], 9);
}

#[test]
fn random_cuts_fast() {
    random_cuts("fast", &[], 10);
}

#[test]
fn random_cuts_blockmap() {
    random_cuts("blockmap", &[], 18);
}

#[test]
fn random_cuts_blockmap_merging_on_the_old_blocks_plane() {
    random_cuts("blockmap", &["place=plane"], 19);
}

#[test]
fn leaftl_with_power_loss_protection_loses_nothing() {
    // The buffer is programmed on capacitor energy: every acknowledged write must read back
    // exactly (nothing is reported unflushed, so the check allows no older version).
    let p = random_cuts(
        "leaftl",
        &["write_buffer_pages=64", "power_loss_protection=on"],
        6,
    );
    assert_eq!(p.lost_unflushed_pages, 0);
}

#[test]
fn with_checkpoints_recovery_reads_little_and_loses_nothing_on_every_ftl() {
    // A checkpoint every 64 host page writes (about every two cut windows): each recovery
    // reads the checkpoint, the pages programmed since and the translation pages, not the
    // ~28 k programmed pages a full scan reads; the check after each cut is the same.
    const CKPT_CUTS: u64 = 300;
    let lp = DeviceConfig::preset("tiny").unwrap().geometry.logical_pages;
    for (i, ftl) in RECOVERABLE.iter().enumerate() {
        let m = cut_often(ftl, &["checkpoint_every=64"], 40 + i as u64, CKPT_CUTS);
        let p = m.power_cuts.expect("power cuts reported");
        assert!(m.flash.programs["checkpoint"] > 0, "{ftl}: no checkpoint");
        assert!(
            p.recovery_flash_reads < CKPT_CUTS * lp / 20,
            "{ftl}: {} reads in {} recoveries",
            p.recovery_flash_reads,
            p.count
        );
    }
}

#[test]
fn a_cut_while_a_checkpoint_is_written_recovers_from_the_previous_one() {
    for ftl in RECOVERABLE {
        let m = deterministic_cut(
            ftl,
            &["checkpoint_every=64"],
            // The 40th checkpoint page: inside a later checkpoint than the first on every FTL
            // (the ideal FTL's are 31 pages on `tiny`, a demand FTL's 1 or 2).
            PowerCut::AtCause {
                cause: Cause::Checkpoint,
                nth: 40,
            },
            41,
        );
        assert!(m.flash.programs["checkpoint"] >= 40, "{ftl}");
    }
}

/// Arms `cut`, runs random requests until it struck, and checks the recovery.
fn deterministic_cut(ftl: &str, kv: &[&str], cut: PowerCut, seed: u64) -> Metrics {
    let m = armed_cut(ftl, kv, cut, seed);
    assert_eq!(cuts_in(&m), 1, "{ftl} {cut:?}");
    m
}

/// `ftl` prepared with `cut` armed, then 3,000 random requests, enough for any of the cuts
/// below to strike where the FTL does the operation cut; every read checked.
fn armed_cut(ftl: &str, kv: &[&str], cut: PowerCut, seed: u64) -> Metrics {
    let mut sim = prepared(ftl, kv, seed);
    sim.arm_power_cut(cut).unwrap();
    let m = random_requests(&mut sim, 3000, seed);
    assert_eq!(m.verify.failures, 0, "{ftl}");
    m
}

/// The power cuts that struck in `m`.
fn cuts_in(m: &Metrics) -> u64 {
    m.power_cuts.as_ref().map_or(0, |p| p.count)
}

#[test]
fn a_cut_during_gc_copies_and_erases_recovers() {
    for ftl in RECOVERABLE {
        // A GC copy in flight: its victim still holds the valid original.
        deterministic_cut(
            ftl,
            &[],
            PowerCut::AtCause {
                cause: Cause::GcData,
                nth: 100,
            },
            3,
        );
    }
}

#[test]
fn a_cut_during_a_trim_record_recovers() {
    // The trim in flight is not acknowledged: its LPNs may read old data or unmapped. The cut
    // strikes at an FTL's 20th trim record, if it makes trims durable by records at all.
    for ftl in RECOVERABLE {
        let m = armed_cut(
            ftl,
            &[],
            PowerCut::AtCause {
                cause: Cause::TrimRecord,
                nth: 20,
            },
            4,
        );
        let records = m.flash.programs["trim_record"];
        assert_eq!(
            cuts_in(&m),
            u64::from(records >= 20),
            "{ftl}: {records} records"
        );
    }
}

#[test]
fn a_cut_in_the_middle_of_a_leaftl_flush_loses_only_its_unprogrammed_pages() {
    // Host programs happen only in flushes: the 100th is page 36 of the second 64-page flush.
    let mut sim = prepared("leaftl", &["write_buffer_pages=64"], 11);
    sim.arm_power_cut(PowerCut::AtCause {
        cause: Cause::User,
        nth: 100,
    })
    .unwrap();
    let m = random_requests(&mut sim, 3000, 11);
    assert_eq!(m.verify.failures, 0);
    let p = m.power_cuts.expect("power cuts reported");
    assert_eq!(p.count, 1);
    // The flush's remaining pages (and the buffer refilled by later writes in the request, if
    // any) were lost; the programmed ones read back (the check allowed no older version).
    assert!((1..=64).contains(&p.lost_unflushed_pages), "{p:?}");
}

/// `ftl`, prepared from `seed`, cut at each of its first `merges` GC-data operations in turn
/// (a cut at each, on a copy of the same state), `requests` random requests after: every read
/// checked, the cut struck once, the FTL's invariants hold.
fn recovers_at_each_merge_operation(ftl: &str, seed: u64, merges: u64, requests: u64) {
    let base = prepared(ftl, &[], seed);
    for nth in 1..=merges {
        let mut sim = base.clone();
        sim.arm_power_cut(PowerCut::AtCause {
            cause: Cause::GcData,
            nth,
        })
        .unwrap();
        let m = random_requests(&mut sim, requests, seed);
        assert_eq!(m.verify.failures, 0, "{ftl}: cut at merge operation {nth}");
        assert_eq!(m.power_cuts.map(|p| p.count), Some(1), "{ftl}: cut {nth}");
        sim.ftl().check_invariants(sim.device()).unwrap();
    }
}

#[test]
fn fast_recovers_from_a_cut_at_any_of_its_first_merge_operations() {
    // Every copy, padding page and erase of FAST's merges carries cause gc_data: cutting at
    // each of the first 48 tears a copy into a data or sequential log block, a padding page, or
    // an erase (a whole torn block), in switch, partial and full merges alike.
    recovers_at_each_merge_operation("fast", 12, 48, 600);
}

#[test]
fn blockmap_recovers_from_a_cut_at_any_of_its_first_merge_operations() {
    // Every copy, padding page and erase of blockmap's merges carries cause gc_data (a trim's
    // merges too): cutting at each of the first 150 tears a copy or padding page of a merge's
    // destination (the old block then still whole), or an erase of the old block (the
    // destination whole), in merges by writes and by trims, over one and several logical
    // blocks.
    recovers_at_each_merge_operation("blockmap", 20, 150, 100);
}

#[test]
fn a_cut_during_a_translation_page_write_recovers() {
    // LeaFTL's group TPs (evictions), mu-FTL's tree-path and bitmap pages.
    for ftl in ["leaftl", "mu-ftl"] {
        deterministic_cut(
            ftl,
            &[],
            PowerCut::AtCause {
                cause: Cause::TransWrite,
                nth: 5,
            },
            13,
        );
    }
}

#[test]
fn every_ftl_recovers_and_unknown_names_are_refused() {
    for name in learnedftl::ftl::FTLS {
        assert!(RECOVERABLE.contains(name), "{name}");
    }
    let cfg = DeviceConfig::preset("tiny").unwrap();
    let mut dev = learnedftl::device::Device::new(&cfg);
    let e = learnedftl::ftl::recover(
        "no-such-ftl",
        &cfg,
        &mut Params::new(),
        &mut dev,
        learnedftl::SimTime(0),
    )
    .err()
    .expect("an unknown FTL cannot recover")
    .to_string();
    assert!(
        e.contains("no-such-ftl") && e.contains("cannot recover") && e.contains("learnedftl"),
        "{e}"
    );
}

#[test]
fn learnedftl_with_free_tp_writes_refuses_power_cuts_before_any_strikes() {
    // tp_write_cost=free writes no TP and no trim record: cuts are refused when planned or
    // armed, naming the parameter, before the workload runs.
    let mut sim = prepared("learnedftl", &["tp_write_cost=free"], 17);
    for e in [
        sim.arm_power_cut(PowerCut::AfterOps(10)).unwrap_err(),
        sim.plan_power_cuts(PowerCutPlan { every: 5, seed: 1 })
            .unwrap_err(),
    ] {
        let e = e.to_string();
        assert!(
            e.contains("tp_write_cost=free") && e.contains("cannot recover"),
            "{e}"
        );
    }
    assert!(!sim.device().power_cut_armed());
}

#[test]
fn learnedftl_recovers_from_a_cut_during_a_training_collection() {
    // design=paper: groups are collected whole and trained; a collection programs its members'
    // TPs (cause gc_translation) after copying their pages and before erasing the old lines
    // and training. In the first 100 requests no translation line is collected and at least 8
    // such programs are issued (checked on an uncut clone), so every gc_translation program
    // cut below is a training collection's: each cut below
    // leaves one half done (pages copied, some TPs new, old lines not erased, models lost).
    let kv = ["design=paper"];
    let base = prepared("learnedftl", &kv, 16);
    let mut uncut = base.clone();
    let m = random_requests(&mut uncut, 100, 16);
    let c = uncut.ftl().extra_counters();
    assert_eq!(c["trans_gcs"], 0, "{c}");
    assert!(c["group_gcs"].as_u64().unwrap() >= 4, "{c}");
    assert!(
        m.flash.programs["gc_translation"] >= 8,
        "{:?}",
        m.flash.programs
    );
    for nth in [1, 2, 3, 5, 8] {
        let mut sim = base.clone();
        sim.arm_power_cut(PowerCut::AtCause {
            cause: Cause::GcTrans,
            nth,
        })
        .unwrap();
        let m = random_requests(&mut sim, 600, 16);
        assert_eq!(m.verify.failures, 0, "cut at TP program {nth}");
        assert_eq!(m.power_cuts.map(|p| p.count), Some(1), "cut {nth}");
        // Models serve reads again (recovery retrained them; the check after it enforced the
        // bitmap invariant).
        let c = sim.ftl().extra_counters();
        assert!(c["bits_set"].as_u64().unwrap() > 0, "cut {nth}: {c}");
        sim.ftl().check_invariants(sim.device()).unwrap();
    }
}

#[test]
fn a_cut_during_a_translation_page_write_rewrites_stale_pages() {
    let small_caches: [(&str, &[&str]); 3] = [
        ("dftl", &["mapping_dram_bytes=1k"]),
        ("tpftl", &["mapping_dram_bytes=1k", "node_bytes=16"]),
        ("sftl", &["mapping_dram_bytes=3k"]),
    ];
    for (ftl, kv) in small_caches {
        // A small cache: write-backs all the time, and dirty entries the cut loses.
        let cut = PowerCut::AtCause {
            cause: Cause::TransWrite,
            nth: 30,
        };
        let m = deterministic_cut(ftl, kv, cut, 5);
        // The torn TP's entries, and those still dirty in the cache, were lost: recovery found
        // TPs older than the data they map and wrote them again.
        assert!(
            m.flash.programs["recovery"] > 0,
            "{ftl}: {:?}",
            m.flash.programs
        );
    }
}

#[test]
fn a_cut_still_armed_when_the_device_settles_is_refused_clearly() {
    // DFTL owes an idle device the write-back of its dirty cached entries.
    let mut sim = prepared("dftl", &[], 6);
    sim.arm_power_cut(PowerCut::AfterOps(0)).unwrap();
    let e = sim
        .settle(
            "settle",
            learnedftl::workload::Settle::Auto,
            &mut NoProgress,
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("struck while the device settled"), "{e}");
}

/// The bytes of `lpn`'s page at `version` (0: never written or trimmed, zeroes): the LPN and
/// the version, then the version's low byte.
fn page_bytes(lpn: u64, version: u64, page: &mut [u8]) {
    if version == 0 {
        page.fill(0);
        return;
    }
    page.fill(version as u8);
    page[..8].copy_from_slice(&lpn.to_le_bytes());
    page[8..16].copy_from_slice(&version.to_le_bytes());
}

/// Which version `page` of `lpn` holds, if it is one ([`page_bytes`]).
fn version_of(lpn: u64, page: &[u8]) -> Option<u64> {
    let v = u64::from_le_bytes(page[8..16].try_into().unwrap());
    let mut want = vec![0; page.len()];
    page_bytes(lpn, v, &mut want);
    (want == page).then_some(v)
}

/// Power cuts so far.
fn cuts(sim: &Simulator) -> u64 {
    sim.live_metrics().power_cuts.map_or(0, |p| p.count)
}

/// With payloads, after random cuts every page's bytes are those of a version recovery may
/// pick: the acknowledged one, or for a request a cut interrupted, old or new per page. A
/// `tiny` (120 MiB) is filled, then overwritten so GC moves data, with a cut in every
/// window of 64 requests (each check clones the device, data included); reads along the way and a full read at the end check the bytes (the
/// engine checks the stamps against its oracle after each cut).
fn payloads_survive_random_cuts(ftl: &str, seed: u64) {
    // Every acknowledged write must survive, so LeaFTL's volatile write buffer is made durable
    // (its bytes are programmed at the cut on capacitor energy).
    let plp = if ftl == "leaftl" {
        "power_loss_protection=on"
    } else {
        "power_loss_protection=off"
    };
    let mut params = Params::from_assignments(["payloads=true", plp], "test").unwrap();
    let cfg = DeviceConfig::from_params("tiny", &mut params).unwrap();
    let opts = SimOptions {
        verify: Verify::FailFast,
        check_invariants: false,
        ..SimOptions::default()
    };
    let mut sim = Simulator::new(&cfg, ftl, params, opts).unwrap();
    let lp = sim.device().geo().logical_pages;
    let ps = sim.device().geo().page_size as usize;
    // The versions each LPN may read as (old and new after an interrupted write).
    let mut may: Vec<(u64, u64)> = vec![(0, 0); lp as usize];
    let mut buf = vec![0u8; 16 * ps];
    let mut t = sim.clock();
    let mut version = 0;
    // Returns completion and whether a cut interrupted the write.
    let mut write = |sim: &mut Simulator, may: &mut [(u64, u64)], first: u64, pages: u64, t| {
        version += 1;
        for (i, page) in buf[..pages as usize * ps].chunks_mut(ps).enumerate() {
            page_bytes(first + i as u64, version, page);
        }
        let before = cuts(sim);
        let io = HostIo {
            placement: 0,
            arrival: t,
            op: Op::Write,
            offset: first * ps as u64,
            len: pages * ps as u64,
        };
        let done = sim
            .submit_data(io, Payload::Write(&buf[..pages as usize * ps]))
            .unwrap_or_else(|e| panic!("{ftl}: write {first}+{pages}: {e}"));
        let interrupted = cuts(sim) > before;
        for l in first..first + pages {
            let old = may[l as usize].0;
            may[l as usize] = (if interrupted { old } else { version }, version);
        }
        (done, interrupted)
    };
    let mut first = 0;
    while first < lp {
        let pages = 16.min(lp - first);
        t = write(&mut sim, &mut may, first, pages, t).0;
        first += pages;
    }
    sim.plan_power_cuts(PowerCutPlan { every: 64, seed })
        .unwrap();
    let mut read = vec![0u8; 16 * ps];
    // Reads and checks `first..first + pages`, each LPN then holding what it read; returns
    // completion.
    let mut resolve = |sim: &mut Simulator, may: &mut [(u64, u64)], first: u64, pages: u64, t| {
        let io = HostIo {
            placement: 0,
            arrival: t,
            op: Op::Read,
            offset: first * ps as u64,
            len: pages * ps as u64,
        };
        let bytes = &mut read[..pages as usize * ps];
        // A read a cut interrupts is issued again after the recovery: it returns data too.
        let done = sim.submit_data(io, Payload::Read(bytes)).unwrap();
        for (i, page) in bytes.chunks(ps).enumerate() {
            let l = first + i as u64;
            let (a, b) = may[l as usize];
            match version_of(l, page) {
                Some(v) if v == a || v == b => may[l as usize] = (v, v),
                found => panic!("{ftl}: LPN {l} holds {found:?}, may hold {a} or {b}"),
            }
        }
        done
    };
    for i in 0..1500 {
        let r = mix(seed, i, 11);
        let first = (r >> 8) % lp;
        let pages = (1 + (r >> 40) % 8).min(lp - first);
        t = match write(&mut sim, &mut may, first, pages, t) {
            // A later write's cut could leave any of three versions: resolve now.
            (done, true) => resolve(&mut sim, &mut may, first, pages, done),
            (done, false) if r % 4 == 0 => resolve(&mut sim, &mut may, first, pages, done),
            (done, false) => done,
        };
    }
    let m = sim.live_metrics();
    assert!(m.power_cuts.unwrap().count >= 20, "{ftl}");
    assert!(m.gc.pages_moved > 0, "{ftl}: GC moved data");
    let mut first = 0;
    while first < lp {
        let pages = 16.min(lp - first);
        t = resolve(&mut sim, &mut may, first, pages, t);
        first += pages;
    }
    assert_eq!(sim.live_metrics().verify.failures, 0, "{ftl}");
}

#[test]
fn a_read_a_cut_interrupts_is_issued_again_and_returns_the_data() {
    // DFTL with a cache of ~100 entries, payloads kept: after 400 single-page writes every
    // cached entry is dirty, so reading LPN 0 (evicted long ago) writes a TP back first; the
    // cut strikes at that program, inside the read.
    let mut params =
        Params::from_assignments(["payloads=true", "mapping_dram_bytes=1k"], "test").unwrap();
    let cfg = DeviceConfig::from_params("tiny", &mut params).unwrap();
    let mut sim = Simulator::new(&cfg, "dftl", params, SimOptions::checked()).unwrap();
    let ps = cfg.geometry.page_size as usize;
    let mut page = vec![0u8; ps];
    let mut t = sim.clock();
    for l in 0..400u64 {
        page_bytes(l, 7, &mut page);
        let io = HostIo {
            placement: 0,
            arrival: t,
            op: Op::Write,
            offset: l * ps as u64,
            len: ps as u64,
        };
        t = sim.submit_data(io, Payload::Write(&page)).unwrap();
    }
    sim.arm_power_cut(PowerCut::AtCause {
        cause: Cause::TransWrite,
        nth: 1,
    })
    .unwrap();
    page.fill(0);
    let io = HostIo {
        placement: 0,
        arrival: t,
        op: Op::Read,
        offset: 0,
        len: ps as u64,
    };
    let done = sim.submit_data(io, Payload::Read(&mut page)).unwrap();
    let m = sim.live_metrics();
    assert_eq!(
        m.power_cuts.map(|p| p.count),
        Some(1),
        "the cut struck in the read"
    );
    assert_eq!(version_of(0, &page), Some(7));
    assert_eq!(m.verify.failures, 0);
    // Its latency includes the recovery (a full scan of the ~400 programmed pages and more).
    assert!(done.since(t) > 40_000, "{}", done.since(t));
}

#[test]
fn payloads_survive_random_cuts_on_every_recoverable_ftl() {
    for (i, ftl) in RECOVERABLE.iter().enumerate() {
        payloads_survive_random_cuts(ftl, 20 + i as u64);
    }
}
