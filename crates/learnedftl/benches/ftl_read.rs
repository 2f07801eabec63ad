//! 4 KiB random reads on the `quick` preset after a sequential fill, for the ideal FTL and the
//! demand-based FTLs (DFTL, TPFTL, SFTL at their 3 % CMT), requests straight into the engine.
//! Throughput is in host page reads; each FTL's simulated page operations per read are printed
//! once (1 for ideal, about 2 for a double read), so page operations per wall second follow.
//!
//! `cargo bench -p learnedftl --bench ftl_read`

mod common;

use common::filled;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use learnedftl::engine::Simulator;
use learnedftl::workload::HostIo;
use learnedftl::Op;

const N: u64 = 50_000;

fn random_reads(c: &mut Criterion) {
    let mut g = c.benchmark_group("random_4k_reads");
    g.sample_size(10);
    g.throughput(Throughput::Elements(N));
    for ftl in ["ideal", "dftl", "tpftl", "sftl"] {
        let mut sim = filled(ftl);
        let pages = sim.device().geo().logical_pages;
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let lpns: Vec<u64> = (0..N)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % pages
            })
            .collect();
        let run = |sim: &mut Simulator| {
            let mut t = sim.clock();
            for &lpn in &lpns {
                t = t.after(1000);
                let io = HostIo {
                    placement: 0,
                    arrival: t,
                    op: Op::Read,
                    offset: lpn * 4096,
                    len: 4096,
                };
                sim.submit(io).unwrap();
            }
        };
        // One untimed pass (drains dirty entries left by the fill), then report page ops/read.
        run(&mut sim);
        sim.begin_phase("probe");
        run(&mut sim);
        let m = sim.end_phase();
        let ops = m.flash.reads["total"] + m.flash.programs["total"];
        eprintln!(
            "{ftl}: {:.2} simulated page operations per host page read",
            ops as f64 / N as f64
        );
        g.bench_function(ftl, |b| b.iter(|| run(&mut sim)));
    }
    g.finish();
}

criterion_group!(benches, random_reads);
criterion_main!(benches);
