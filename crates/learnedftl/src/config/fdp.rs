//! NVMe Flexible Data Placement's configuration (`fdp_ruhs=`, `fdp_ru=`, `fdp_ruh_type=`;
//! docs/fdp.md): how many reclaim unit handles the device offers, how large a reclaim unit is
//! and which isolation its handles keep. Off (no handles) unless set, and then nothing changes.

use super::Geometry;
use crate::error::{quote, ConfigError};
use crate::params::{keys, parse_size, parse_word, Params};
use serde::{Serialize, Serializer};

/// Most reclaim unit handles a configuration may have: fio's limit on placement IDs
/// (`FDP_MAX_RUHS`), and a handle fits a byte per page.
pub const MAX_RUHS: u16 = 128;

/// What garbage collection may do with the data of a reclaim unit handle (NVMe TP4146 "Reclaim
/// Unit Handle Type").
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuhType {
    /// Initially isolated: host writes of different handles go to different reclaim units, but
    /// GC may move the valid data of several handles into one shared GC unit.
    #[default]
    Initially,
    /// Persistently isolated: GC keeps each handle's data apart, in GC units of its own.
    Persistently,
}

impl RuhType {
    /// The `fdp_ruh_type=` value naming it.
    pub fn key(self) -> &'static str {
        match self {
            RuhType::Initially => "initially",
            RuhType::Persistently => "persistently",
        }
    }
}

/// The FDP configuration the device runs with (one reclaim group: docs/fdp.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FdpConfig {
    /// Reclaim unit handles (`fdp_ruhs`; 0: FDP off). Placement ID `p` names handle `p`;
    /// handle 0 takes the writes that carry none.
    pub ruhs: u16,
    /// Lines per reclaim unit (`fdp_ru`): 1, a superblock.
    pub ru_lines: u32,
    /// What GC may do with each handle's data, by handle (`fdp_ruh_type`: one type for every
    /// handle, or a list with one per handle); reported as one type when all are alike.
    #[serde(rename = "ruh_type", serialize_with = "types_json")]
    pub ruh_types: Vec<RuhType>,
    /// Placement of untagged writes by logical page range (`fdp_ranges`): `(first page, end
    /// page, handle)`, in order and disjoint; a write without a placement ID whose first page
    /// falls in a range goes to its handle (the rest to handle 0).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ranges: Vec<(u64, u64, u16)>,
}

keys! {
    /// The FDP keys, parsed with the device's
    /// ([`crate::config::DeviceConfig::from_params`]; docs/fdp.md).
    pub static FDP_KEYS = "fdp", "NVMe Flexible Data Placement: reclaim unit handles the host tags its writes with";
    FDP_RUHS = "fdp_ruhs" ["handles"] "reclaim unit handles the host may place writes with (0: FDP off); untagged writes go to handle 0";
    FDP_RU = "fdp_ru" ["lines"] "with fdp_ruhs: reclaim unit size in lines (superblocks), the unit GC erases";
    FDP_RUH_TYPE = "fdp_ruh_type" ["initially|persistently"] "with fdp_ruhs: initially isolated, GC may merge handles' valid data; persistently, GC keeps each handle's data apart; a comma-separated list gives each handle its own type";
    FDP_RANGES = "fdp_ranges" ["START-END:ID,..."] "with fdp_ruhs: untagged writes whose first byte is in [START, END) go to handle ID (sizes or % of the logical space; serve's placement for unmodified applications)";
}

impl FdpConfig {
    /// Whether FDP is on (the device has handles).
    pub fn is_on(&self) -> bool {
        self.ruhs > 0
    }

    /// Whether FDP is off (reports then leave it out).
    pub fn is_off(&self) -> bool {
        !self.is_on()
    }

    /// Handle `h`'s type (initially isolated for a handle the device does not have).
    #[inline]
    pub fn ruh_type(&self, h: u8) -> RuhType {
        self.ruh_types.get(h as usize).copied().unwrap_or_default()
    }

    /// Whether handle `h` is persistently isolated.
    #[inline]
    pub fn persistent(&self, h: u8) -> bool {
        self.ruh_type(h) == RuhType::Persistently
    }

    /// Bit `h` set for each persistently isolated handle `h` (at most [`MAX_RUHS`] handles):
    /// what hot paths test instead of looking the type up.
    pub fn persistent_mask(&self) -> u128 {
        (0..self.ruhs)
            .filter(|&h| self.persistent(h as u8))
            .fold(0, |bits, h| bits | 1u128 << h)
    }

    /// Write streams FDP adds beside the device's own data stream, which is handle 0's: the
    /// host streams of handles 1.., and the GC streams (one per persistently isolated handle,
    /// and one shared by the initially isolated ones, if any).
    pub fn extra_streams(&self) -> u16 {
        if self.is_off() {
            return 0;
        }
        let own = self
            .ruh_types
            .iter()
            .filter(|&&t| t == RuhType::Persistently)
            .count();
        let shared = self.ruh_types.contains(&RuhType::Initially);
        self.ruhs - 1 + own as u16 + shared as u16
    }

    /// The handles' types as `fdp_ruh_type` names them: one type when all are alike, else one
    /// per handle, comma-separated.
    pub fn types_key(&self) -> String {
        key_of_types(&self.ruh_types)
    }

    /// The FDP keys of `params` applied (and removed), checked against `geo`: the open reclaim
    /// units of every handle must fit the over-provisioning beside GC's reserve.
    pub(super) fn from_params(params: &mut Params, geo: &Geometry) -> Result<Self, ConfigError> {
        let ruhs = params.take_or(&FDP_RUHS, 0u16)?;
        if ruhs > MAX_RUHS {
            return Err(ConfigError::invalid(
                "fdp_ruhs",
                format!("{ruhs} handles: at most {MAX_RUHS} (fio's placement ID limit)"),
            ));
        }
        // The unit and type are taken (and checked) with FDP off too: they describe the
        // configuration FDP would have, as the drain keys describe a write buffer.
        let ru_lines = params.take_or(&FDP_RU, 1u32)?;
        if ru_lines != 1 {
            return Err(ConfigError::invalid(
                "fdp_ru",
                format!(
                    "{ru_lines} lines: reclaim units are one line (GC erases whole lines; larger \
                     units are left out, docs/fdp.md)"
                ),
            ));
        }
        let types = params.take_str_or(&FDP_RUH_TYPE, RuhType::Initially.key());
        let mut ruh_types = Vec::new();
        for t in types.split(',').map(str::trim) {
            let words = [
                ("initially", RuhType::Initially),
                ("persistently", RuhType::Persistently),
            ];
            ruh_types.push(parse_word("fdp_ruh_type", t, &words)?);
        }
        // One type for every handle, or one per handle.
        match ruh_types.len() {
            1 => ruh_types.resize(ruhs as usize, ruh_types[0]),
            n if n == ruhs as usize => {}
            n => {
                return Err(ConfigError::invalid(
                    "fdp_ruh_type",
                    format!("{n} types for {ruhs} handles (fdp_ruhs): give one, or one per handle"),
                ))
            }
        }
        // Empty by default: every untagged write goes to handle 0.
        let ranges = parse_ranges(&params.take_str_or(&FDP_RANGES, ""), geo, ruhs)?;
        if ruhs == 0 {
            return Ok(FdpConfig::default());
        }
        let c = FdpConfig {
            ruhs,
            ru_lines,
            ruh_types,
            ranges,
        };
        // Every extra stream keeps a line open that the logical space cannot fill: the spare
        // lines must hold them beside GC's reserve and working lines.
        geo.check_gc_room(
            super::DEFAULT_GC_RESERVE_LINES + c.extra_streams() as u32,
            "fdp_ruhs",
        )?;
        Ok(c)
    }

    /// The handle an untagged write to logical page `lpn` goes to by `fdp_ranges` (0 outside
    /// them). A scan: there are a few ranges.
    #[inline]
    pub fn handle_of(&self, lpn: u64) -> u16 {
        self.ranges
            .iter()
            .find(|&&(start, end, _)| (start..end).contains(&lpn))
            .map_or(0, |r| r.2)
    }

    /// The placement ID a write tagged `placement` whose first logical page is `lpn` is placed
    /// with: its own, or, untagged (0, as NVMe cannot tell it from ID 0), `fdp_ranges`'. The
    /// engine places by it and `serve --record` records it, so a replay places the same way.
    #[inline]
    pub fn write_placement(&self, placement: u16, lpn: u64) -> u16 {
        match placement {
            0 => self.handle_of(lpn),
            p => p,
        }
    }

    /// One line for people describing the configuration, when FDP is on.
    pub fn describe(&self) -> Option<String> {
        self.is_on().then(|| {
            format!(
                "FDP: {} reclaim unit handle(s), {}, reclaim unit {} line(s){}",
                self.ruhs,
                match self.types_key() {
                    k if k.contains(',') => format!("isolated by handle: {k}"),
                    k => format!("{k} isolated"),
                },
                self.ru_lines,
                match self.ranges.len() {
                    0 => String::new(),
                    n => format!(", {n} range(s) placing untagged writes"),
                }
            )
        })
    }
}

/// Handle types as `fdp_ruh_type` names them: one type when all are alike (the default type
/// for none), else one per handle, comma-separated.
fn key_of_types(types: &[RuhType]) -> String {
    match types.split_first() {
        None => RuhType::default().key().into(),
        Some((t, rest)) if rest.iter().all(|r| r == t) => t.key().into(),
        Some(_) => {
            let keys: Vec<&str> = types.iter().map(|t| t.key()).collect();
            keys.join(",")
        }
    }
}

/// Serialises the handles' types as [`key_of_types`] names them (reports keep one word for
/// the usual configuration).
fn types_json<S: Serializer>(types: &[RuhType], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&key_of_types(types))
}

/// Parses `fdp_ranges` (`START-END:ID,...`; each bound a size, `1g`, or a share of the logical
/// space, `25%`; whole pages) on `geo` with `ruhs` handles: ranges in order and disjoint, each
/// naming a handle the device has. With FDP off (`ruhs` 0) any range is refused.
fn parse_ranges(
    text: &str,
    geo: &Geometry,
    ruhs: u16,
) -> Result<Vec<(u64, u64, u16)>, ConfigError> {
    let bad = |why: String| ConfigError::invalid("fdp_ranges", why);
    let logical = geo.logical_bytes();
    let ps = geo.page_size as u64;
    let bound = |v: &str| -> Result<u64, ConfigError> {
        let v = v.trim();
        let bytes = match v.strip_suffix('%') {
            Some(p) => p
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|f| (0.0..=100.0).contains(f))
                .map(|f| (logical as f64 * f / 100.0) as u64),
            None => parse_size(v),
        };
        let bytes = bytes.ok_or_else(|| bad(format!("{} is not a size or a share", quote(v))))?;
        if bytes > logical {
            return Err(bad(format!(
                "{} lies beyond the logical space of {logical} B",
                quote(v)
            )));
        }
        Ok(bytes / ps)
    };
    let mut out: Vec<(u64, u64, u16)> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let parsed = part.split_once(':').and_then(|(r, id)| {
            let (a, b) = r.split_once('-')?;
            Some((a, b, id.trim().parse::<u16>().ok()?))
        });
        let Some((a, b, id)) = parsed else {
            return Err(bad(format!("{} is not START-END:ID", quote(part))));
        };
        if ruhs == 0 {
            return Err(bad(
                "only applies with fdp_ruhs of 1 or more (FDP on)".into()
            ));
        }
        if id >= ruhs {
            return Err(bad(format!(
                "{}: handle {id}, but fdp_ruhs is {ruhs}",
                quote(part)
            )));
        }
        let (start, end) = (bound(a)?, bound(b)?);
        if start >= end || out.last().is_some_and(|l| l.1 > start) {
            return Err(bad(format!(
                "{} is empty, or overlaps or precedes the range before it",
                quote(part)
            )));
        }
        out.push((start, end, id));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DeviceConfig;

    fn fdp(kv: &[&str]) -> Result<FdpConfig, String> {
        let mut p = Params::new();
        for a in kv {
            p.insert_assignment(a, "t").unwrap();
        }
        let c = DeviceConfig::from_params("quick", &mut p).map_err(|e| e.to_string())?;
        p.finish().map_err(|e| e.to_string())?;
        Ok(c.fdp)
    }

    #[test]
    fn off_by_default_and_parsed_when_on() {
        assert!(fdp(&[]).unwrap().is_off());
        assert!(fdp(&["fdp_ruh_type=persistently"]).unwrap().is_off());
        let c = fdp(&["fdp_ruhs=4", "fdp_ruh_type=persistently"]).unwrap();
        assert_eq!((c.ruhs, c.ru_lines), (4, 1));
        assert_eq!(c.ruh_types, vec![RuhType::Persistently; 4]);
        assert_eq!(c.extra_streams(), 3 + 4);
        assert_eq!(fdp(&["fdp_ruhs=4"]).unwrap().extra_streams(), 3 + 1);
        // One type per handle: a GC stream per persistently isolated one, one shared.
        let c = fdp(&[
            "fdp_ruhs=3",
            "fdp_ruh_type=persistently, initially,initially",
        ])
        .unwrap();
        assert!(c.persistent(0) && !c.persistent(1) && !c.persistent(2));
        assert_eq!(c.extra_streams(), 2 + 1 + 1);
        assert_eq!(c.types_key(), "persistently,initially,initially");
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["ruh_type"], "persistently,initially,initially");
        let c = fdp(&["fdp_ruhs=2", "fdp_ruh_type=initially,initially"]).unwrap();
        assert_eq!(serde_json::to_value(&c).unwrap()["ruh_type"], "initially");
    }

    #[test]
    fn ranges_place_untagged_writes() {
        let c = fdp(&["fdp_ruhs=3", "fdp_ranges=0-1g:1, 50%-100%:2"]).unwrap();
        let quarter = 1u64 << 30 >> 12;
        assert_eq!(c.ranges[0], (0, quarter, 1));
        assert_eq!(
            (
                c.handle_of(0),
                c.handle_of(quarter - 1),
                c.handle_of(quarter)
            ),
            (1, 1, 0)
        );
        let last = c.ranges[1].1 - 1;
        assert_eq!(c.handle_of(last), 2);
        for bad in [
            "0-1g:3",
            "1g-0:1",
            "0-2g:1,1g-3g:2",
            "0-1g",
            "0-200%:1",
            "x-1g:1",
        ] {
            let ranges = format!("fdp_ranges={bad}");
            let e = fdp(&["fdp_ruhs=3", &ranges]).unwrap_err();
            assert!(e.contains("fdp_ranges"), "{bad}: {e}");
        }
        assert!(fdp(&["fdp_ranges=0-1g:0"])
            .unwrap_err()
            .contains("fdp_ruhs"));
    }

    #[test]
    fn bad_settings_name_their_key() {
        for (kv, key) in [
            (&["fdp_ruhs=200"][..], "fdp_ruhs"),
            (&["fdp_ru=2"], "fdp_ru"),
            (&["fdp_ruhs=2", "fdp_ru=2"], "fdp_ru"),
            (&["fdp_ruhs=2", "fdp_ruh_type=always"], "fdp_ruh_type"),
            (
                &["fdp_ruhs=3", "fdp_ruh_type=initially,persistently"],
                "fdp_ruh_type",
            ),
            (
                &["fdp_ruhs=2", "fdp_ruh_type=initially,sometimes"],
                "fdp_ruh_type",
            ),
            // quick's 16 spare lines cannot hold 64 handles' open units.
            (&["fdp_ruhs=64"], "fdp_ruhs"),
        ] {
            let e = fdp(kv).unwrap_err();
            assert!(e.contains(key), "{kv:?}: {e}");
        }
    }
}
