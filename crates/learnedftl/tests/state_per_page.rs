//! The simulator's state per physical page (docs/device.md "Memory"): every FTL, counted by the
//! allocator as what a run's peak grows by from a 1 GiB device to a 4 GiB one, within 16 B per
//! physical page with `--verify` and 12 B without — caches sized by their DRAM budget kept
//! alike at both sizes, and the mapping DRAM an FTL models as tables (LearnedFTL's models and
//! bitmaps) beyond the bound. What a 4 TiB device needs follows from it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use learnedftl::engine::{NoProgress, SimOptions, Simulator, Verify};
use learnedftl::ftl::FTLS;
use learnedftl::workload::{JobSpec, RwKind};
use learnedftl::{DeviceConfig, Params};

/// Counts the bytes live on the heap and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(now, Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= layout.size() {
            grew(new_size - layout.size());
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Relaxed);
        }
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn phase(s: &mut Simulator, rw: RwKind, bs: u64, ios: Option<u64>) {
    let mut j = JobSpec::new("phase", rw);
    j.bs = bs;
    j.numjobs = 1;
    j.number_ios = ios;
    s.run_jobs("phase", &[j], 1, &mut NoProgress).unwrap();
}

/// `paper`'s pages and blocks (512 pages of 4 KiB, as a 4 TiB device keeps them) on 4 LUNs, with
/// `blocks_per_plane` (the lines).
fn device(blocks_per_plane: u32) -> DeviceConfig {
    let mut cfg = DeviceConfig::preset("paper").unwrap();
    cfg.geometry.channels = 2;
    cfg.geometry.luns_per_channel = 2;
    cfg.geometry.blocks_per_plane = blocks_per_plane;
    cfg.geometry.logical_pages = learnedftl::config::default_logical_pages(cfg.geometry.pages());
    cfg
}

/// What a run of `ftl` on `cfg` (a sequential fill, random writes with GC, random reads)
/// allocates at its peak, and the mapping DRAM it models outside its cache (models, bitmaps,
/// GTD), bytes.
fn peak_bytes(cfg: &DeviceConfig, ftl: &str, verify: Verify) -> (f64, f64) {
    // A cache sized by its DRAM budget is not state per page: the same small budget at both
    // sizes (small enough to bind: SFTL's compressed TPs would otherwise all fit at both, and
    // its cache grow with the device). LearnedFTL's models, fixed DRAM growing with the device,
    // leave no fixed total that fits both sizes: a cache of 0.1 % of the mappings, counted.
    let budget = match ftl {
        "learnedftl" => "cmt_ratio=0.001",
        _ => "mapping_dram_bytes=64k",
    };
    let params = Params::from_assignments([budget], "test").unwrap();
    let opts = SimOptions {
        verify,
        check_invariants: false,
        ..SimOptions::default()
    };
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    let fixed_dram = {
        let mut s = Simulator::by_name(cfg, ftl, &params, opts).unwrap();
        phase(&mut s, RwKind::Write, 512 << 10, None);
        phase(&mut s, RwKind::RandWrite, 4096, Some(20_000));
        phase(&mut s, RwKind::RandRead, 4096, Some(5_000));
        let dram = s.ftl().dram();
        dram.parts
            .iter()
            .filter(|(part, _)| MODELLED_TABLES.contains(part))
            .map(|p| p.1)
            .sum::<u64>()
    };
    ((PEAK.load(Relaxed) - before) as f64, fixed_dram as f64)
}

/// The parts of an FTL's mapping DRAM (`Ftl::dram`) that are tables growing with the device,
/// not caches: the paper's own DRAM (LearnedFTL's models and bitmaps, 192 B per TP of 1024
/// LPNs, and its group table). The bound is on what the simulator keeps beyond them.
const MODELLED_TABLES: [&str; 2] = ["models", "groups"];

#[test]
fn every_ftl_keeps_at_most_16_bytes_per_physical_page_and_12_without_verify() {
    // Per page = the growth from 1 GiB to 4 GiB over the pages added: what does not grow with
    // the device (per LUN, latency histograms, the jobs, the cache) cancels out.
    let (small, large) = (device(128), device(512));
    let added = (large.geometry.pages() - small.geometry.pages()) as f64;
    let mut over = Vec::new();
    for ftl in FTLS {
        for (verify, bound) in [(Verify::FailFast, 16.0), (Verify::Off, 12.0)] {
            let (large_bytes, large_dram) = peak_bytes(&large, ftl, verify);
            let (small_bytes, small_dram) = peak_bytes(&small, ftl, verify);
            let per_page = (large_bytes - small_bytes) / added;
            let modelled = (large_dram - small_dram) / added;
            eprintln!(
                "{ftl:10} {verify:?}: {per_page:.2} B per physical page, {modelled:.2} of them \
                 modelled mapping DRAM"
            );
            if per_page - modelled > bound {
                over.push(format!(
                    "{ftl} ({verify:?}): {per_page:.2} - {modelled:.2} B > {bound}"
                ));
            }
            // The memory estimate that refuses what would not fit counts it all.
            let v = verify != Verify::Off;
            let estimate = (large.state_bytes(v) - small.state_bytes(v)) as f64 / added;
            if per_page > estimate {
                over.push(format!(
                    "{ftl} ({verify:?}): {per_page:.2} B > estimate {estimate:.2}"
                ));
            }
        }
    }
    assert!(over.is_empty(), "over the bound: {over:?}");
}
