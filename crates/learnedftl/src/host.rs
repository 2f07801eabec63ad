//! The machine the simulator runs on: the memory a run may use, an allocator for the
//! binaries that backs the simulator's large tables with huge pages, and the CPU's cache
//! prefetch hint.

pub mod huge_pages;
pub mod prefetch;

pub use prefetch::prefetch;

use crate::error::ConfigError;
use crate::units::human_bytes;

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

/// The simulator state of one run, part by part (docs/device.md "Memory"), estimated from the
/// configuration so that one too large for the machine is refused before anything is
/// allocated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryEstimate {
    parts: Vec<MemoryPart>,
}

/// One part of a [`MemoryEstimate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPart {
    /// What it is and how it is counted, e.g. `the jobs of phase "measure" (…)`.
    pub what: String,
    /// Bytes.
    pub bytes: u64,
    /// What makes it smaller, e.g. `lower numjobs or iodepth of job "measure"`.
    pub shrink: String,
}

impl MemoryEstimate {
    /// The estimate with one more part.
    pub fn with(mut self, what: String, bytes: u64, shrink: &str) -> MemoryEstimate {
        self.parts.push(MemoryPart {
            what,
            bytes,
            shrink: shrink.to_string(),
        });
        self
    }

    /// The parts, in the order added.
    pub fn parts(&self) -> &[MemoryPart] {
        &self.parts
    }

    /// Bytes of one run (saturating).
    pub fn bytes(&self) -> u64 {
        self.parts
            .iter()
            .fold(0u64, |sum, p| sum.saturating_add(p.bytes))
    }

    /// Checks that `runs` runs at once fit in `available`; the error gives every part and what
    /// would shrink the largest.
    pub fn check(&self, runs: usize, available: &AvailableMemory) -> Result<(), ConfigError> {
        let estimate = self.bytes().saturating_mul(runs.max(1) as u64);
        if estimate <= available.bytes {
            return Ok(());
        }
        let parts: Vec<String> = self
            .parts
            .iter()
            .map(|p| format!("{} for {}", human_bytes(p.bytes), p.what))
            .collect();
        let shrink = self
            .parts
            .iter()
            .max_by_key(|p| p.bytes)
            .map_or("", |p| &p.shrink);
        Err(ConfigError::TooLarge {
            estimate,
            runs,
            breakdown: format!(
                "{} (docs/device.md \"Memory\"); {shrink}",
                parts.join(" + ")
            ),
            available: available.bytes,
            origin: available.origin.clone(),
        })
    }
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    kib_field(meminfo, "MemAvailable:")
}

/// The `key  N kB` line of a `/proc` text, in bytes.
fn kib_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find_map(|l| l.strip_prefix(key))?;
    let kib = line.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()?;
    kib.checked_mul(1024)
}

/// The memory left on the machine below which a run stops with an error rather than grow
/// further ([`crate::engine::SimOptions::memory_floor`]): an FTL whose tables grow with the
/// writes (LeaFTL's segments under small random writes) can pass the estimate made before the
/// run and then exhaust the machine hours in, where the kernel would kill the largest process.
pub const MEMORY_FLOOR_BYTES: u64 = 256 << 20;

/// This process's resident memory (`VmRSS` of `/proc/self/status`), if the system says.
pub fn resident_bytes() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|text| kib_field(&text, "VmRSS:"))
}

/// When the machine has less than `floor` bytes available ([`MEMORY_FLOOR_BYTES`]), what it has
/// left and what this process holds, for the error that stops a growing run; `None` while it
/// has more, or when `floor` is 0.
pub fn short_of_memory(floor: u64) -> Option<String> {
    if floor == 0 {
        return None;
    }
    let available = AvailableMemory::now();
    if available.bytes >= floor {
        return None;
    }
    let held = resident_bytes().map_or_else(
        || "its own size unknown".to_string(),
        |b| format!("this process holding {}", human_bytes(b)),
    );
    Some(format!(
        "{} left on the machine ({}), below the floor of {}, {held}",
        human_bytes(available.bytes),
        available.origin,
        human_bytes(floor)
    ))
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
        assert_eq!(
            kib_field("Name: x\nVmRSS:\t  2048 kB\n", "VmRSS:"),
            Some(2 << 20)
        );
        assert_eq!(short_of_memory(0), None);
        let short = short_of_memory(u64::MAX).unwrap();
        assert!(short.contains("MemAvailable") && short.contains("this process holding"));
    }
}
