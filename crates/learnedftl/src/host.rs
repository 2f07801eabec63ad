//! The machine the simulator runs on: the memory a run may use, and an allocator for the
//! binaries that backs the simulator's large tables with huge pages.

pub mod huge_pages;

/// Memory assumed available where the system does not say (no `/proc/meminfo`).
pub const FALLBACK_AVAILABLE_BYTES: u64 = 8 << 30;

/// Memory a run may use, and where the figure came from (quoted in errors).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AvailableMemory {
    /// Bytes.
    pub bytes: u64,
    /// Where the figure came from, e.g. `MemAvailable in /proc/meminfo`.
    pub origin: String,
}

impl AvailableMemory {
    /// What the system reports now: `MemAvailable` of `/proc/meminfo` (Linux), else
    /// [`FALLBACK_AVAILABLE_BYTES`].
    pub fn now() -> AvailableMemory {
        std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|text| mem_available(&text))
            .map(|bytes| AvailableMemory {
                bytes,
                origin: "MemAvailable in /proc/meminfo".into(),
            })
            .unwrap_or(AvailableMemory {
                bytes: FALLBACK_AVAILABLE_BYTES,
                origin: "a fixed limit: the system does not report available memory".into(),
            })
    }
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let kib = line.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_is_read_in_bytes() {
        let text = "MemTotal:       16318460 kB\nMemFree:  100 kB\nMemAvailable:    8000000 kB\n";
        assert_eq!(mem_available(text), Some(8_192_000_000));
        assert_eq!(mem_available("MemFree: 1 kB\n"), None);
        assert!(AvailableMemory::now().bytes > 0);
    }
}
