//! Library errors.

use crate::addr::{Lpn, Ppa};
use thiserror::Error;

/// A bad configuration value, preset or geometry.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ConfigError {
    /// A `key=value` could not be parsed.
    #[error("{origin}: cannot parse '{text}': expected {expected}")]
    Syntax {
        /// Where it came from.
        origin: String,
        /// The text.
        text: String,
        /// What was expected.
        expected: String,
    },
    /// A value of the wrong type or range.
    #[error("{origin}: {key}={value}: expected {expected}")]
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
    /// Keys nobody understood.
    #[error("unknown parameter(s): {0}")]
    UnknownKeys(String),
    /// A field whose value is impossible, with the reason.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The field.
        field: String,
        /// Why.
        reason: String,
    },
    /// An unknown preset name.
    #[error("unknown preset '{0}' (expected one of: paper, quick, tiny)")]
    UnknownPreset(String),
    /// An unknown FTL name.
    #[error("unknown FTL '{name}' (implemented: {known})")]
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
