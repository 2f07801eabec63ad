//! An allocator for the binaries (the CLI, the Python extension): the system allocator, except
//! that every allocation of at least [`MIN_BYTES`] is mapped on its own, 2 MiB-aligned, with
//! the kernel asked for transparent huge pages behind it.
//!
//! Why: the simulator's tables indexed by page or LPN (OOB, page maps, cache indexes, program
//! times) are tens of MiB and read at random, so with 4 KiB pages most lookups miss the TLB as
//! well as the cache, and two runs side by side (`reproduce --jobs 2`) compete for both. With
//! this allocator the `quick` suite took 7–8 % less CPU time (docs/reproduction.md). Where THP
//! is `madvise` (Debian's default) the advice is what opts in; under `never` it is ignored and
//! under `always` it changes nothing. No result depends on it. Off Linux this is the system
//! allocator.

use std::alloc::{GlobalAlloc, Layout, System};

/// Allocations from this size up (a huge page) get their own mapping.
pub const MIN_BYTES: usize = HUGE;

/// A transparent huge page.
const HUGE: usize = 2 << 20;

/// A base page: mappings are whole base pages (the part past the last huge page stays on base
/// pages, so nothing is rounded up to 2 MiB).
const PAGE: usize = 4 << 10;

/// The allocator; install it with `#[global_allocator]`.
#[derive(Copy, Clone, Debug, Default)]
pub struct HugePages;

/// Whether `layout` gets its own mapping.
fn mapped(layout: &Layout) -> bool {
    cfg!(target_os = "linux") && layout.size() >= MIN_BYTES && layout.align() <= HUGE
}

// SAFETY: small layouts go to the system allocator unchanged; large ones to `map` and `unmap`,
// which return and release whole, aligned, zeroed anonymous mappings of at least the size asked.
// `mapped` depends on the layout alone, so a block is always released the way it was obtained.
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if mapped(&layout) {
            map(layout.size())
        } else {
            System.alloc(layout)
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if mapped(&layout) {
            // Fresh anonymous memory is zeroed: nothing to write, no page touched yet.
            map(layout.size())
        } else {
            System.alloc_zeroed(layout)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if mapped(&layout) {
            unmap(ptr, layout.size());
        } else {
            System.dealloc(ptr, layout);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        if !mapped(&layout) && !mapped(&new_layout) {
            return System.realloc(ptr, layout, new_size);
        }
        let new = self.alloc(new_layout);
        if !new.is_null() {
            std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
            self.dealloc(ptr, layout);
        }
        new
    }
}

/// A zeroed mapping of `size` bytes (rounded up to whole base pages) starting on a huge-page
/// boundary, advised for huge pages; null if the system refuses.
#[cfg(target_os = "linux")]
unsafe fn map(size: usize) -> *mut u8 {
    let len = size.next_multiple_of(PAGE);
    // One huge page more than needed, so an aligned start lies inside; the ends go back.
    let raw = libc::mmap(
        std::ptr::null_mut(),
        len + HUGE,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
        -1,
        0,
    );
    if raw == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    let start = (raw as usize).next_multiple_of(HUGE);
    let head = start - raw as usize;
    if head > 0 {
        libc::munmap(raw, head);
    }
    libc::munmap((start + len) as *mut libc::c_void, HUGE - head);
    // Advice only: refused (THP compiled out), the mapping keeps 4 KiB pages.
    libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    start as *mut u8
}

/// Releases a mapping of [`map`] for `size` bytes.
#[cfg(target_os = "linux")]
unsafe fn unmap(ptr: *mut u8, size: usize) {
    libc::munmap(ptr.cast(), size.next_multiple_of(PAGE));
}

#[cfg(not(target_os = "linux"))]
unsafe fn map(_: usize) -> *mut u8 {
    unreachable!("only Linux maps allocations itself")
}

#[cfg(not(target_os = "linux"))]
unsafe fn unmap(_: *mut u8, _: usize) {
    unreachable!("only Linux maps allocations itself")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Allocates `size` bytes through `HugePages` (not installed: called directly).
    fn layout(size: usize) -> Layout {
        Layout::from_size_align(size, 8).unwrap()
    }

    #[test]
    fn large_blocks_are_aligned_zeroed_and_keep_their_bytes_through_realloc() {
        let a = HugePages;
        let big = MIN_BYTES + 12_345;
        // SAFETY: every pointer is used within the size it was allocated with and released
        // once, with its layout.
        unsafe {
            let p = a.alloc_zeroed(layout(big));
            assert!(!p.is_null());
            if mapped(&layout(big)) {
                assert_eq!(p as usize % HUGE, 0);
            }
            let s = std::slice::from_raw_parts_mut(p, big);
            assert!(s.iter().all(|&b| b == 0));
            for (i, b) in s.iter_mut().enumerate() {
                *b = (i % 251) as u8;
            }
            // Grow (mapped to mapped), then shrink below the threshold (to the system's).
            let q = a.realloc(p, layout(big), 3 * big);
            let s = std::slice::from_raw_parts(q, big);
            assert!(s.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
            let r = a.realloc(q, layout(3 * big), 1000);
            let s = std::slice::from_raw_parts(r, 1000);
            assert!(s.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
            // And back up past it.
            let t = a.realloc(r, layout(1000), big);
            assert!(std::slice::from_raw_parts(t, 1000)
                .iter()
                .enumerate()
                .all(|(i, &b)| b == (i % 251) as u8));
            a.dealloc(t, layout(big));
        }
    }

    #[test]
    fn small_blocks_and_odd_alignments_go_to_the_system_allocator() {
        assert!(!mapped(&layout(MIN_BYTES - 1)));
        assert!(!mapped(
            &Layout::from_size_align(MIN_BYTES, 2 * HUGE).unwrap()
        ));
        assert_eq!(mapped(&layout(MIN_BYTES)), cfg!(target_os = "linux"));
    }
}
