//! Hot-path benchmarks: the device's timing and state updates per page, its LUN timelines under
//! a deep queue of double reads (`timing=femu` and the default `timing=backfill`), and the ideal
//! FTL's page path (random 4 KiB writes with GC, random 4 KiB reads) on the `quick` preset, and
//! the random map that picks every random job's blocks.
//!
//! `cargo bench -p learnedftl --bench page_path`

mod common;

use common::filled;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use learnedftl::device::{Cause, Device, Oob, Src};
use learnedftl::workload::dist::{BlockPicker, Dist};
use learnedftl::workload::HostIo;
use learnedftl::{DeviceConfig, Lpn, Op, Params, Ppa, SimTime, Vppn};

/// Programs, reads and invalidates a whole line in VPPN order, then erases it.
fn device_line_cycle(c: &mut Criterion) {
    let cfg = DeviceConfig::preset("quick").unwrap();
    let geo = cfg.geometry.clone();
    let ppl = geo.pages_per_line();
    let mut g = c.benchmark_group("device");
    // Each iteration: ppl programs + ppl reads (the page operations we count).
    g.throughput(Throughput::Elements(2 * ppl as u64));
    g.bench_function("program_read_invalidate_erase_line", |b| {
        b.iter_batched_ref(
            || Device::new(&cfg),
            |dev| {
                let mut t = SimTime::ZERO;
                for v in 0..ppl {
                    let ppa = dev.math().vppn_to_ppa(Vppn(v));
                    t = dev
                        .program(ppa, Oob::data(Lpn(v), 1), Src::Host, Cause::User, t)
                        .unwrap();
                }
                for v in 0..ppl {
                    let ppa = dev.math().vppn_to_ppa(Vppn(v));
                    let (_, d) = dev.read(ppa, Cause::User, t).unwrap();
                    dev.invalidate(ppa).unwrap();
                    t = t.max(d);
                }
                for i in 0..geo.blocks_per_line() {
                    dev.erase(geo.block_in_line(0, i), Cause::GcData, t)
                        .unwrap();
                }
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// Double reads on a fully programmed device as 64 outstanding requests issue them: each
/// request reads a random page at its arrival and another when that read completes, booked
/// in the future as dependent reads are (the case gap filling exists for).
fn lun_timelines_deep_queue(c: &mut Criterion) {
    const N: u32 = 100_000;
    let mut g = c.benchmark_group("timelines");
    g.sample_size(10);
    // Two page reads per request.
    g.throughput(Throughput::Elements(2 * N as u64));
    for timing in ["femu", "backfill"] {
        let mut p =
            Params::from_assignments([format!("timing={timing}").as_str()], "bench").unwrap();
        let cfg = DeviceConfig::from_params("quick", &mut p).unwrap();
        let mut dev = Device::new(&cfg);
        let pages = dev.geo().pages() as u32;
        let ppb = dev.geo().pages_per_block;
        for ppa in (0..pages).map(Ppa) {
            dev.program(
                ppa,
                Oob::data(Lpn(ppa.0 % ppb), 1),
                Src::Host,
                Cause::User,
                SimTime::ZERO,
            )
            .unwrap();
        }
        let mut t = dev.drained_at();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        g.bench_function(format!("double_reads_qd64_{timing}"), |b| {
            b.iter(|| {
                for _ in 0..N {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // 64 requests per 200 µs: about what 64 LUNs serve in double reads.
                    t = t.after(200_000 / 64);
                    dev.advance_floor(t);
                    let first = Ppa(x as u32 % pages);
                    let (_, r) = dev.read(first, Cause::TransRead, t).unwrap();
                    let second = Ppa((x >> 32) as u32 % pages);
                    dev.read(second, Cause::User, r).unwrap();
                }
            })
        });
    }
    g.finish();
}

/// Host requests straight into the engine (no job machinery): random 4 KiB writes (GC included)
/// and random 4 KiB reads on a full device.
fn ideal_page_path(c: &mut Criterion) {
    const N: u64 = 100_000;
    let mut g = c.benchmark_group("ideal");
    g.sample_size(10);
    g.throughput(Throughput::Elements(N));
    let mut sim = filled("ideal");
    let pages = sim.device().geo().logical_pages;
    // A fixed pseudo-random sequence of pages (xorshift), the same every iteration.
    let lpns: Vec<u64> = {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        (0..N)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % pages
            })
            .collect()
    };
    for (name, op) in [
        ("random_4k_writes_with_gc", Op::Write),
        ("random_4k_reads", Op::Read),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut t = sim.clock();
                for &lpn in &lpns {
                    t = t.after(1000);
                    let io = HostIo {
                        placement: 0,
                        arrival: t,
                        op,
                        offset: lpn * 4096,
                        len: 4096,
                    };
                    sim.submit(io).unwrap();
                }
            })
        });
    }
    g.finish();
}

/// Draws of a random job's block picker (`norandommap` off: a seeded permutation per pass) over
/// logical spaces of paper geometry: 30 GiB, 1 TiB (just past 2^28 pages, so the permutation's
/// domain is 4n and a value takes 4 passes on average) and 4 TiB.
fn random_map(c: &mut Criterion) {
    use rand::SeedableRng;
    let mut g = c.benchmark_group("random_map");
    const DRAWS: u64 = 4096;
    g.throughput(Throughput::Elements(DRAWS));
    for (name, n) in [
        ("30GiB", 7_864_320u64),
        ("1TiB", 268_462_080),
        ("4TiB", 1_006_632_960),
    ] {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        let mut p = BlockPicker::new(n, Dist::Uniform, true, &mut rng);
        g.bench_function(name, |b| {
            b.iter(|| (0..DRAWS).fold(0u64, |a, _| a ^ p.next(&mut rng)))
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    device_line_cycle,
    lun_timelines_deep_queue,
    ideal_page_path,
    random_map
);
criterion_main!(benches);
