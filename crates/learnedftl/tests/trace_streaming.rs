//! Streaming: a ~2-million-line DiskSim trace produced on the fly by a `Read` generator (never
//! held in memory) parses in bounded memory. Memory is measured by counting heap bytes with a
//! global allocator (this file holds one test, so nothing else allocates meanwhile).

use learnedftl::trace::{Format, ParseOptions, TraceReader, TraceStats, MAX_LINE};
use learnedftl::Op;
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{self, Read};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
            PEAK.fetch_max(live, Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// DiskSim lines, generated as they are read: writes (even lines) and reads (odd lines), each
/// sequential in its own region 8 GiB apart.
struct Generator {
    next: u64,
    lines: u64,
    line: Vec<u8>,
    pos: usize,
    bytes: u64,
}

impl Generator {
    fn new(lines: u64) -> Self {
        Generator {
            next: 0,
            lines,
            line: Vec::with_capacity(64),
            pos: 0,
            bytes: 0,
        }
    }
}

impl Read for Generator {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < out.len() {
            if self.pos == self.line.len() {
                if self.next == self.lines {
                    break;
                }
                let i = self.next;
                self.line.clear();
                use std::io::Write;
                let lba = (i / 2) * 8 + (i % 2) * (1 << 24);
                writeln!(self.line, "{} 0 {lba} 8 {}", i * 1000, i % 2)?;
                self.pos = 0;
                self.next += 1;
            }
            let k = (self.line.len() - self.pos).min(out.len() - n);
            out[n..n + k].copy_from_slice(&self.line[self.pos..self.pos + k]);
            self.pos += k;
            n += k;
        }
        self.bytes += n as u64;
        Ok(n)
    }
}

#[test]
fn trace_two_million_lines_stream_in_bounded_memory() {
    const LINES: u64 = 2_000_000;
    let before = LIVE.load(Relaxed);
    let mut reader = TraceReader::from_read(
        "generated",
        Generator::new(LINES),
        None,
        &ParseOptions::default(),
    )
    .unwrap();
    assert_eq!(reader.format(), Format::DiskSim);
    let mut count = 0u64;
    let mut reads = 0u64;
    let mut last = None;
    PEAK.store(LIVE.load(Relaxed), Relaxed);
    let baseline = LIVE.load(Relaxed);
    for rec in reader.by_ref() {
        let rec = rec.unwrap();
        count += 1;
        reads += u64::from(rec.op == Op::Read);
        last = Some(rec);
    }
    let peak_growth = PEAK.load(Relaxed) - baseline;
    assert_eq!(count, LINES);
    assert_eq!(reads, LINES / 2);
    let last = last.unwrap();
    assert_eq!((last.line, last.time_ns), (LINES, (LINES - 1) * 1000));
    // Tens of megabytes went through; nothing grew while parsing them.
    assert!(
        peak_growth < 4096,
        "heap grew by {peak_growth} bytes while streaming"
    );
    assert!(reader.line_buffer_capacity() <= 2 * MAX_LINE);
    // The reader itself (read buffer, sniffed head, line buffer) is a fixed ~100 KiB.
    assert!(
        baseline - before < 256 * 1024,
        "reader holds {} bytes",
        baseline - before
    );
    drop(reader);

    // Statistics stream too: their memory is bounded by the address span, not the length.
    let reader = TraceReader::from_read(
        "generated",
        Generator::new(LINES),
        Some(Format::DiskSim),
        &ParseOptions::default(),
    )
    .unwrap();
    let stats = TraceStats::from_records(reader).unwrap();
    assert_eq!(stats.requests, LINES);
    assert_eq!(stats.footprint_pages, Some(LINES));
    assert_eq!(stats.sequential_fraction, 1.0);
}
