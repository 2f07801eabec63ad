//! The counters every FTL keeps (SPEC §6). They live with the shared machinery because it counts
//! into them too: garbage collection its events and moved pages, the translation table its
//! lookups and cache hits.

/// Counters every FTL keeps (SPEC §6). Flash operations by cause are counted by the device.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FtlStats {
    /// Host page reads by the flash reads each needed: `[unmapped or DRAM, single, double, triple]`.
    pub lookups: [u64; 4],
    /// Host page reads whose mapping came from a cache entry.
    pub cmt_hits: u64,
    /// Host page reads served by a learned prediction with one flash read.
    pub model_hits: u64,
    /// Garbage-collection events (victims cleaned).
    pub gc_events: u64,
    /// Of which in the background (after a request, not blocking a write).
    pub gc_background: u64,
    /// Of which took another line than the victim rule's first choice, whose collection would
    /// not fit in the free lines (docs/device.md "Which victim").
    pub gc_passed_over: u64,
    /// Valid pages moved by GC (data and translation).
    pub gc_pages_moved: u64,
}

impl FtlStats {
    /// No counts.
    pub const ZERO: FtlStats = FtlStats {
        lookups: [0; 4],
        cmt_hits: 0,
        model_hits: 0,
        gc_events: 0,
        gc_background: 0,
        gc_passed_over: 0,
        gc_pages_moved: 0,
    };

    /// Counts one host page read that needed `flash_reads` reads (0 = unmapped or from DRAM).
    #[inline]
    pub fn lookup(&mut self, flash_reads: usize) {
        self.lookups[flash_reads.min(3)] += 1;
    }
    /// Host page reads.
    pub fn page_reads(&self) -> u64 {
        self.lookups.iter().sum()
    }
    /// Adds `other`'s counters (a phase's totals across a recovery).
    pub fn add(&mut self, other: &FtlStats) {
        for (a, b) in self.lookups.iter_mut().zip(other.lookups) {
            *a += b;
        }
        self.cmt_hits += other.cmt_hits;
        self.model_hits += other.model_hits;
        self.gc_events += other.gc_events;
        self.gc_background += other.gc_background;
        self.gc_passed_over += other.gc_passed_over;
        self.gc_pages_moved += other.gc_pages_moved;
    }
}
