//! Trace parsing throughput (lines per second) on generated in-memory traces.
//!
//! `cargo bench -p learnedftl --bench trace_parse -- --warm-up-time 1 --measurement-time 3`

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use learnedftl::trace::{Format, ParseOptions, TraceReader};
use std::io::{Cursor, Write};
use std::sync::Arc;

const LINES: u64 = 500_000;

/// A trace of `LINES` lines, each made by `line(i)`.
fn generate(mut line: impl FnMut(&mut Vec<u8>, u64)) -> Arc<[u8]> {
    let mut buf = Vec::with_capacity(LINES as usize * 48);
    for i in 0..LINES {
        line(&mut buf, i);
    }
    buf.into()
}

/// A cheap pseudo-random address (a multiplicative hash), so lines vary in length.
fn addr(i: u64) -> u64 {
    i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 34
}

fn parse(c: &mut Criterion, format: Format, data: Arc<[u8]>) {
    let mut g = c.benchmark_group("trace_parse");
    g.throughput(Throughput::Elements(LINES));
    g.bench_function(format.name(), |b| {
        b.iter(|| {
            let reader = TraceReader::from_read(
                "bench",
                Cursor::new(Arc::clone(&data)),
                Some(format),
                &ParseOptions::default(),
            )
            .expect("in-memory reader");
            let mut bytes = 0u64;
            for rec in reader {
                bytes += rec.expect("generated lines are valid").len;
            }
            assert_eq!(bytes % 512, 0);
            black_box(bytes)
        })
    });
    g.finish();
}

fn disksim(c: &mut Criterion) {
    let data = generate(|buf, i| {
        let _ = writeln!(
            buf,
            "{} 0 {} {} {}",
            i * 1_250,
            addr(i),
            8 << (i % 4),
            i % 3 % 2
        );
    });
    parse(c, Format::DiskSim, data);
}

fn msr(c: &mut Criterion) {
    let data = generate(|buf, i| {
        let op = if i % 3 == 0 { "Read" } else { "Write" };
        let _ = writeln!(
            buf,
            "{},src1,{},{op},{},{},{}",
            128_166_372_003_061_629 + i * 731,
            i % 3,
            addr(i) * 512,
            4096 << (i % 4),
            1_000 + i % 9_000
        );
    });
    parse(c, Format::Msr, data);
}

criterion_group!(benches, disksim, msr);
criterion_main!(benches);
