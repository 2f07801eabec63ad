//! Library errors, and [`quote`] for the input text they repeat.

use crate::addr::{Lpn, Ppa};
use thiserror::Error;

/// Characters of input text an error message repeats at most.
pub const QUOTE_MAX_CHARS: usize = 60;

/// Input text for an error message: in double quotes with control characters, quotes and
/// backslashes escaped as Rust's `{:?}` does (so garbage bytes never reach the terminal raw),
/// invalid UTF-8 shown as U+FFFD, and cut after [`QUOTE_MAX_CHARS`] characters (marked `…`).
pub fn quote(text: impl AsRef<[u8]>) -> String {
    let text = String::from_utf8_lossy(text.as_ref());
    match text.char_indices().nth(QUOTE_MAX_CHARS) {
        Some((cut, _)) => format!("{:?}…", &text[..cut]),
        None => format!("{text:?}"),
    }
}

/// A bad configuration value, preset or geometry.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ConfigError {
    /// A `key=value` could not be parsed.
    #[error("{origin}: cannot parse {}: expected {expected}", quote(.text))]
    Syntax {
        /// Where it came from.
        origin: String,
        /// The text.
        text: String,
        /// What was expected.
        expected: String,
    },
    /// A value of the wrong type or range.
    #[error("{origin}: {key}: {}: expected {expected}", quote(.value))]
    Value {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// Where it came from.
        origin: String,
        /// What was expected.
        expected: String,
    },
    /// Keys nobody understood ([`crate::params::unknown_keys`]).
    #[error("unknown parameter(s): {keys}{hint}")]
    UnknownKeys {
        /// The keys, quoted, each with where it came from and the valid keys closest to it.
        keys: String,
        /// Every valid key, when one of the keys is close to none (else empty).
        hint: String,
    },
    /// A field whose value is impossible, with the reason.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The field.
        field: String,
        /// Why.
        reason: String,
    },
    /// The simulator state of the configuration would not fit in the machine's memory.
    #[error(
        "the simulator state would need about {} MiB, more than the {} MiB available \
         ({origin}), for {runs} run(s) at once, each: {breakdown}{}",
        .estimate >> 20,
        .available >> 20,
        if *.runs > 1 { " or run fewer at once" } else { "" }
    )]
    TooLarge {
        /// Estimated bytes for all the runs at once.
        estimate: u64,
        /// Runs at once.
        runs: usize,
        /// One run's estimate part by part, then what would shrink the largest part.
        breakdown: String,
        /// Bytes available.
        available: u64,
        /// Where the available figure came from.
        origin: String,
    },
    /// A bad `--capacity` (its value, or a device it cannot size); the message quotes the value.
    #[error("capacity: {0}")]
    Capacity(String),
    /// An unknown preset name.
    #[error("unknown preset {} (expected one of: paper, quick, tiny, 980pro, or a drive preset file PATH.preset)", quote(.0))]
    UnknownPreset(String),
    /// An unknown FTL name.
    #[error("unknown FTL {} (implemented: {known})", quote(.name))]
    UnknownFtl {
        /// The name given.
        name: String,
        /// The implemented names.
        known: String,
    },
}

impl ConfigError {
    /// Shorthand for [`ConfigError::Invalid`].
    pub fn invalid(field: &str, reason: impl Into<String>) -> Self {
        ConfigError::Invalid {
            field: field.to_string(),
            reason: reason.into(),
        }
    }
}

/// Misuse of the flash device: each of these means an FTL bug.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DeviceError {
    /// The payload store failed (an I/O error of its file).
    #[error("payload store: {0}")]
    Payload(String),
    /// A page programmed out of order within its block.
    #[error(
        "program of {ppa:?} out of order: block's next free page is {expected}, got page {got}"
    )]
    OutOfOrderProgram {
        /// The page.
        ppa: Ppa,
        /// The block's write pointer.
        expected: u32,
        /// The page index given.
        got: u32,
    },
    /// A read of a page that holds no data.
    #[error("read of erased page {0:?}")]
    ReadErased(Ppa),
    /// An erase of a block that still holds valid pages.
    #[error("erase of block {block} holding {valid} valid page(s)")]
    EraseValid {
        /// Global block index.
        block: u32,
        /// Its valid pages.
        valid: u32,
    },
    /// Invalidation of a page that is not valid.
    #[error("invalidate of page {0:?} that is not valid")]
    InvalidateInvalid(Ppa),
    /// An address beyond the device.
    #[error("address {0:?} beyond the device")]
    OutOfRange(Ppa),
    /// The power was cut (docs/power.md): not a bug, the engine recovers.
    #[error("power lost")]
    PowerLost,
    /// A trim record programmed with no contents (neither through `Device::program_record` nor
    /// as a copy of a record page).
    #[error("trim record programmed at {0:?} without contents")]
    RecordWithoutContents(Ppa),
    /// Recovery re-validated a page that is torn or already valid.
    #[error("revalidate of page {0:?} that is torn or already valid")]
    Revalidate(Ppa),
}

/// An FTL's failure to serve a request.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum FtlError {
    /// The device refused an operation: an FTL bug.
    #[error("device misuse: {0}")]
    Device(#[from] DeviceError),
    /// No free space can be reclaimed (every page is valid).
    #[error("device full: no line can be reclaimed")]
    NoSpace,
    /// A mapping structure of fixed size has no room left (e.g. HP-FTL's secondary table).
    #[error("mapping table full: {0}")]
    TableFull(String),
    /// A request outside the logical space.
    #[error("request for {lpn:?}+{len} beyond the logical space of {logical_pages} pages")]
    OutOfRange {
        /// First page.
        lpn: Lpn,
        /// Pages.
        len: u32,
        /// Logical pages.
        logical_pages: u64,
    },
    /// An internal invariant was broken.
    #[error("FTL invariant broken: {0}")]
    Invariant(String),
}

impl FtlError {
    /// Whether this is the device's power loss (a power cut struck), not a failure.
    pub fn is_power_lost(&self) -> bool {
        matches!(self, FtlError::Device(DeviceError::PowerLost))
    }
}

/// A device state that cannot be saved or loaded (`serve --state`, docs/power.md).
#[derive(Debug, Error, Clone, PartialEq)]
pub enum StateError {
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The file is not a state this version can read, or is damaged.
    #[error("{0}")]
    Format(String),
    /// The state was made by another device or FTL.
    #[error("the state was saved with {what} {saved}, this device has {now}")]
    Mismatch {
        /// What differs: format, ftl, geometry, cell, slc_cache.
        what: &'static str,
        /// The saved value.
        saved: String,
        /// This device's.
        now: String,
    },
}

/// A failed recovery after a power cut.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum RecoverError {
    /// The FTL has no recovery yet.
    #[error("{name} cannot recover from a power cut yet (recoverable: {known})")]
    Unsupported {
        /// The FTL.
        name: String,
        /// The FTLs that can.
        known: String,
    },
    /// Its parameters are wrong (they were accepted when it was built, so this is a bug).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Recovery failed: a recovery bug.
    #[error("recovery: {0}")]
    Ftl(#[from] FtlError),
}

impl From<DeviceError> for RecoverError {
    fn from(e: DeviceError) -> Self {
        RecoverError::Ftl(e.into())
    }
}
