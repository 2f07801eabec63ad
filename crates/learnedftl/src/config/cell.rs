//! Cell types and their page types (`cell=`; docs/device.md "Cell types"): a cell storing
//! `b` bits makes a block's pages cycle through `b` page types (LSB, CSB, MSB, ...), each read
//! and programmed at its own speed.

use crate::error::{quote, ConfigError};
use serde::Serialize;

/// Bits stored per cell.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Cell {
    /// One bit: one page type, `read_ns` and `program_ns` (FEMU's model, every preset).
    #[default]
    Slc,
    /// Two bits: lower and upper pages.
    Mlc,
    /// Three bits: lower, center and upper pages.
    Tlc,
    /// Four bits.
    Qlc,
}

impl Cell {
    /// The `cell=` value naming it.
    pub fn key(self) -> &'static str {
        match self {
            Cell::Slc => "slc",
            Cell::Mlc => "mlc",
            Cell::Tlc => "tlc",
            Cell::Qlc => "qlc",
        }
    }

    /// Page types: bits per cell.
    pub fn page_types(self) -> usize {
        self as usize + 1
    }

    /// Parses a `cell=` value.
    pub fn parse(text: &str) -> Result<Cell, ConfigError> {
        crate::params::parse_word(
            "cell",
            text,
            &[
                ("slc", Cell::Slc),
                ("mlc", Cell::Mlc),
                ("tlc", Cell::Tlc),
                ("qlc", Cell::Qlc),
            ],
        )
    }

    /// Whether this is the single-page-type SLC model.
    pub fn is_slc(&self) -> bool {
        *self == Cell::Slc
    }

    /// Default `(read, program)` latency of each page type, ns, LSB first, for a cell of more
    /// than one bit: FEMU's table (`hw/femu/ocssd/nand/nand.h`): MLC profiled from Micron's
    /// L95B, TLC from the SimpleSSD paper (Jung et al., CAL 2017), QLC extrapolated from TLC
    /// after Micron's FMS'19 characterisation (×1.05, ×1.1, ×1.2 and ×1.6 of TLC's lower,
    /// center, upper and upper page).
    pub fn default_latencies(self) -> (Vec<u64>, Vec<u64>) {
        const TLC_READ: [u64; 3] = [56_500, 77_500, 106_000];
        const TLC_PROGRAM: [u64; 3] = [820_500, 2_225_000, 5_734_000];
        let qlc = |l: [u64; 3]| {
            vec![
                l[0] * 105 / 100,
                l[1] * 110 / 100,
                l[2] * 120 / 100,
                l[2] * 160 / 100,
            ]
        };
        match self {
            Cell::Slc => (vec![], vec![]),
            Cell::Mlc => (vec![48_000, 64_000], vec![850_000, 2_300_000]),
            Cell::Tlc => (TLC_READ.to_vec(), TLC_PROGRAM.to_vec()),
            Cell::Qlc => (qlc(TLC_READ), qlc(TLC_PROGRAM)),
        }
    }
}

/// Formats per-page-type latencies as `--set` takes them (`56500,77500,106000`).
pub fn format_latencies(ns: &[u64]) -> String {
    ns.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// Parses per-page-type latencies for `key`: one positive number of ns per page type.
pub fn parse_latencies(key: &str, text: &str, cell: Cell) -> Result<Vec<u64>, ConfigError> {
    let ns: Vec<u64> = text
        .split(',')
        .map(|v| v.trim().parse::<u64>().ok().filter(|&n| n > 0))
        .collect::<Option<_>>()
        .ok_or_else(|| {
            ConfigError::invalid(
                key,
                format!("{}: expected positive ns separated by commas", quote(text)),
            )
        })?;
    if ns.len() != cell.page_types() {
        return Err(ConfigError::invalid(
            key,
            format!(
                "{} gives {} latencies; cell={} has {} page types",
                quote(text),
                ns.len(),
                cell.key(),
                cell.page_types()
            ),
        ));
    }
    Ok(ns)
}

/// What a host program does when the SLC cache is full (`slc_when_full`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SlcWhenFull {
    /// It goes to the multi-bit cells at their speed.
    #[default]
    Direct,
    /// It waits for the oldest page of its LUN to be folded, then goes to SLC.
    Fold,
}

impl SlcWhenFull {
    /// The `slc_when_full=` value naming it.
    pub fn key(self) -> &'static str {
        match self {
            SlcWhenFull::Direct => "direct",
            SlcWhenFull::Fold => "fold",
        }
    }
}

/// The hybrid SLC cache (docs/device.md "SLC cache"); off unless `slc_cache` or
/// `slc_cache_dynamic` is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SlcCache {
    /// Its static part, pages of host data.
    pub pages: u64,
    /// Whether a dynamic part (the multi-bit pages holding no valid data, in SLC mode) adds to
    /// it, shrinking as the drive fills.
    pub dynamic: bool,
    /// What a host program does when it is full.
    pub when_full: SlcWhenFull,
}

impl SlcCache {
    /// Whether there is a cache.
    pub fn is_on(&self) -> bool {
        self.pages > 0 || self.dynamic
    }

    /// Whether there is none (reports then leave it out).
    pub fn is_off(&self) -> bool {
        !self.is_on()
    }
}
