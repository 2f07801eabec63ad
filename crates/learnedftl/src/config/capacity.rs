//! `--capacity SIZE`: a preset scaled to a logical capacity by its blocks per plane
//! (docs/device.md "Capacity").
//!
//! The capacity is the **logical** (user-visible) space the host sees, as an SSD's advertised
//! capacity is. It is reached by changing one dimension, the blocks per plane (= lines); the
//! channels, LUNs, planes, pages per block, page and OOB sizes stay the preset's (or what `--set`
//! gives them). Blocks per plane are rounded **up**: the device is the smallest whose logical
//! space, at the preset's over-provisioning (15/16 of the physical pages), holds at least the
//! capacity asked, so a job or trace sized to the capacity always fits, and the capacity of a
//! preset gives that preset exactly (`--preset paper --capacity 30GiB` is `paper`).

use super::{DeviceConfig, Geometry};
use crate::error::{quote, ConfigError};
use crate::params::Params;
use std::str::FromStr;

/// The logical pages of a device of `pages` physical pages unless `logical_ratio` or
/// `logical_pages` says otherwise: 15/16 of them, the presets' over-provisioning (SPEC §3.1).
pub const fn default_logical_pages(pages: u64) -> u64 {
    pages * 15 / 16
}

/// The binary units `--capacity` takes (case-insensitive; `B` or none: bytes).
const UNITS: [(&str, &str, u32); 6] = [
    ("k", "kib", 10),
    ("m", "mib", 20),
    ("g", "gib", 30),
    ("t", "tib", 40),
    ("p", "pib", 50),
    ("e", "eib", 60),
];

/// A capacity asked for (`--capacity`): the text as given and the bytes it means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capacity {
    text: String,
    bytes: u64,
}

fn refused(reason: String) -> ConfigError {
    ConfigError::Capacity(reason)
}

impl FromStr for Capacity {
    type Err = ConfigError;

    /// A size in binary units: `512MiB`, `32GiB`, `1TiB`, `1.5TiB` (or `512M`, `1T`,
    /// case-insensitive), or plain bytes. Decimal units (`TB`, `GB`, ...) are refused: an SSD's
    /// "1 TB" is 10^12 bytes, fio's is 2^40, and the two differ by 10 %.
    fn from_str(text: &str) -> Result<Capacity, ConfigError> {
        let t = text.trim();
        let end = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(end);
        let unit = unit.trim().to_ascii_lowercase();
        let not_a_size = || {
            refused(format!(
                "{} is not a size: give binary units (512MiB, 32GiB, 1TiB, 1.5TiB) or bytes",
                quote(text)
            ))
        };
        let shift = match unit.as_str() {
            "" | "b" => 0,
            "kb" | "mb" | "gb" | "tb" | "pb" | "eb" => {
                return Err(refused(format!(
                    "{} is in decimal units, which are ambiguous (10^{} bytes for a drive's \
                     label, 2^{} for fio): write {}{}iB for the binary size, or the bytes",
                    quote(text),
                    3 * (1 + "kmgtpe".find(&unit[..1]).unwrap_or(0)),
                    10 * (1 + "kmgtpe".find(&unit[..1]).unwrap_or(0)),
                    num,
                    unit[..1].to_ascii_uppercase()
                )))
            }
            u => match UNITS
                .iter()
                .find(|(short, long, _)| u == *short || u == *long)
            {
                Some(&(_, _, shift)) => shift,
                None => return Err(not_a_size()),
            },
        };
        // Exact arithmetic on the decimal digits: 3.75GiB is 3 × 2^30 + 0.75 × 2^30 bytes.
        let (int, frac) = num.split_once('.').unwrap_or((num, ""));
        if int.is_empty() && frac.is_empty()
            || frac.contains('.')
            || !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit())
            || frac.len() > 18
        {
            return Err(not_a_size());
        }
        let too_large = || {
            refused(format!(
                "{} is too large (page addresses are 32-bit: at most 2^32-1 physical pages)",
                quote(text)
            ))
        };
        let digits: u128 = format!("{int}{frac}").parse().map_err(|_| too_large())?;
        let scale = 10u128.pow(frac.len() as u32);
        let bytes = digits
            .checked_mul(1u128 << shift)
            .ok_or_else(too_large)?
            .div_ceil(scale);
        let bytes = u64::try_from(bytes).map_err(|_| too_large())?;
        if bytes == 0 {
            return Err(refused(format!(
                "{} is no space at all: give a size such as 32GiB or 1TiB",
                quote(text)
            )));
        }
        Ok(Capacity {
            text: t.to_string(),
            bytes,
        })
    }
}

impl Capacity {
    /// The capacity of `bytes` bytes, named by [`format_capacity`].
    pub fn from_bytes(bytes: u64) -> Capacity {
        Capacity {
            text: format_capacity(bytes),
            bytes,
        }
    }

    /// The bytes asked for.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The text as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// A name for the capacity fit for a file name and for `--capacity`, exact: the largest
    /// binary unit it reaches with at most six decimals (`1TiB`, `3.75GiB`, `23.4375GiB`), else
    /// the bytes.
    pub fn canonical(&self) -> String {
        let Some(&(_, long, shift)) = UNITS.iter().rev().find(|u| self.bytes >> u.2 > 0) else {
            return self.bytes.to_string();
        };
        let unit = format!("{}iB", long[..1].to_ascii_uppercase());
        let (int, mut rem) = (self.bytes >> shift, self.bytes as u128 & ((1 << shift) - 1));
        let mut frac = String::new();
        while rem > 0 && frac.len() < 6 {
            rem *= 10;
            frac.push(char::from(b'0' + (rem >> shift) as u8));
            rem &= (1 << shift) - 1;
        }
        match (rem, frac.is_empty()) {
            (0, true) => format!("{int}{unit}"),
            (0, false) => format!("{int}.{frac}{unit}"),
            _ => self.bytes.to_string(),
        }
    }

    /// The smallest blocks per plane whose logical space, at the presets' over-provisioning
    /// ([`default_logical_pages`]), holds this capacity on `g` (its other dimensions as they
    /// are; `g` must have passed its shape checks). Refused when the device would need more than
    /// 2^32-1 physical pages.
    pub fn blocks_per_plane(&self, g: &Geometry) -> Result<u32, ConfigError> {
        let line = g.pages_per_line() as u64;
        let want = self.bytes.div_ceil(g.page_size as u64);
        let logical = |bpp: u64| default_logical_pages(bpp.saturating_mul(line));
        // pages × 15/16 ≥ want: an estimate from the ratio, then exact steps either way.
        let mut bpp = (want as u128 * 16)
            .div_ceil(15 * line as u128)
            .clamp(1, u64::MAX as u128 / line as u128 / 2) as u64;
        while logical(bpp) < want {
            bpp += 1;
        }
        while bpp > 1 && logical(bpp - 1) >= want {
            bpp -= 1;
        }
        let most = max_blocks_per_plane(g);
        if bpp > most as u64 {
            return Err(refused(format!(
                "{} needs {bpp} blocks per plane, {} physical pages of {} B: more than \
                 2^32-1 (page addresses are 32-bit); the largest on this geometry is {}",
                quote(&self.text),
                bpp as u128 * line as u128,
                g.page_size,
                format_capacity(logical(most as u64) * g.page_size as u64)
            )));
        }
        Ok(bpp as u32)
    }
}

/// The most blocks per plane `g`'s other dimensions allow: fewer than 2^32-1 physical pages.
fn max_blocks_per_plane(g: &Geometry) -> u32 {
    ((u32::MAX as u64 - 1) / g.pages_per_line() as u64).min(u32::MAX as u64) as u32
}

/// `bytes` as a size `--capacity` takes, rounded **down** to two decimals of the largest
/// binary unit it reaches (`1TiB`, `3.75GiB`, `14.99TiB`, `512B`): never more than `bytes`.
pub fn format_capacity(bytes: u64) -> String {
    let Some(&(_, long, shift)) = UNITS.iter().rev().find(|u| bytes >> u.2 > 0) else {
        return format!("{bytes}B");
    };
    let hundredths = (bytes as u128 * 100) >> shift;
    let (int, frac) = (hundredths / 100, hundredths % 100);
    let unit = format!("{}iB", long[..1].to_ascii_uppercase());
    match frac {
        0 => format!("{int}{unit}"),
        f if f % 10 == 0 => format!("{int}.{}{unit}", f / 10),
        f => format!("{int}.{f:02}{unit}"),
    }
}

/// The largest device on a preset that fits in memory, from [`largest_capacity`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Largest {
    /// Blocks per plane.
    pub blocks_per_plane: u32,
    /// Its logical bytes (what `--capacity` asks for).
    pub logical_bytes: u64,
    /// Its simulator state, bytes ([`DeviceConfig::state_bytes`]).
    pub state_bytes: u64,
    /// The limit was the 32-bit page addresses, not memory.
    pub address_bound: bool,
}

/// The largest `--capacity` of `preset` (its own geometry, the presets' over-provisioning)
/// whose simulator state ([`DeviceConfig::state_bytes`], with the oracle when `verify`) fits
/// in `available` bytes; `None` when not even the smallest device the geometry checks allow
/// does. The device alone: jobs, caches sized by their DRAM budget and payloads are left out.
pub fn largest_capacity(
    preset: &str,
    verify: bool,
    available: u64,
) -> Result<Option<Largest>, ConfigError> {
    let base = DeviceConfig::preset(preset)?;
    let most = max_blocks_per_plane(&base.geometry);
    let sized = |bpp: u32| {
        let mut c = base.clone();
        c.geometry.blocks_per_plane = bpp;
        c.geometry.logical_pages = default_logical_pages(c.geometry.pages());
        c
    };
    let fits = |bpp: u32| sized(bpp).state_bytes(verify) <= available;
    // State grows with the blocks per plane: the last that fits, by bisection.
    let Some(least) = (1..=most).find(|&b| sized(b).validate().is_ok()) else {
        return Ok(None);
    };
    if !fits(least) {
        return Ok(None);
    }
    let (mut lo, mut hi) = (least, most);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let c = sized(lo);
    Ok(Some(Largest {
        blocks_per_plane: lo,
        logical_bytes: c.geometry.logical_bytes(),
        state_bytes: c.state_bytes(verify),
        address_bound: lo == most,
    }))
}

impl DeviceConfig {
    /// [`DeviceConfig::from_params`] with the blocks per plane chosen by `capacity`
    /// ([`Capacity::blocks_per_plane`], on the geometry the other keys give) when it is given.
    /// `blocks_per_plane` or `logical_pages` in `params` with a capacity is an error naming both;
    /// `logical_ratio` re-carves the logical space of the sized device, as it does a preset's.
    /// A capacity below the smallest device the geometry checks allow is an error naming it.
    pub fn from_params_sized(
        preset: &str,
        capacity: Option<&Capacity>,
        params: &mut Params,
    ) -> Result<Self, ConfigError> {
        let Some(cap) = capacity else {
            return Self::from_params(preset, params);
        };
        for key in [&super::BLOCKS_PER_PLANE, &super::LOGICAL_PAGES] {
            if let Some((value, origin)) = params.get(key) {
                return Err(refused(format!(
                    "{} sizes the device by its blocks per plane and cannot be combined with \
                     {}={value} (from {origin}): give one or the other",
                    quote(cap.text()),
                    key.name(),
                )));
            }
        }
        let given = params.clone();
        match Self::build(preset, Some(cap), params) {
            // Too small for GC (lines, over-provisioning): say which capacity is the least.
            Err(ConfigError::Invalid { field, reason })
                if matches!(
                    field.as_str(),
                    "blocks_per_plane" | "logical_pages" | "logical_ratio"
                ) =>
            {
                Err(match least_capacity(preset, &given) {
                    Some(least) => refused(format!(
                        "{} is below the smallest {preset} device the geometry checks allow, \
                         {least} (invalid {field}: {reason})",
                        quote(cap.text())
                    )),
                    None => ConfigError::Invalid { field, reason },
                })
            }
            built => built,
        }
    }
}

impl DeviceConfig {
    /// What a `--capacity` made of this device, for people: the size asked, the blocks per
    /// plane it was rounded up to, and the exact logical and physical bytes (`None` without
    /// a capacity).
    pub fn capacity_note(&self) -> Option<String> {
        let asked = self.capacity?;
        let g = &self.geometry;
        let over = g.logical_bytes().saturating_sub(asked);
        Some(format!(
            "capacity: {} asked ({asked} B), rounded up to {} blocks per plane: {} B logical{}, \
             {} B physical ({})",
            Capacity::from_bytes(asked).canonical(),
            g.blocks_per_plane,
            g.logical_bytes(),
            if over == 0 {
                " (exactly)".to_string()
            } else {
                format!(" ({over} B more)")
            },
            g.physical_bytes(),
            crate::units::human_bytes(g.physical_bytes()),
        ))
    }
}

/// The smallest capacity `preset` with `params` builds at, as `--capacity` takes it (exactly:
/// the bytes when no two-decimal binary size says it); `None`
/// when no blocks per plane up to 2^16 builds (the fault is not the size).
fn least_capacity(preset: &str, params: &Params) -> Option<String> {
    // Validity only grows with the blocks per plane (more lines, more spare pages).
    (1..=1u32 << 16).find_map(|bpp| {
        let mut p = params.clone();
        p.insert("blocks_per_plane", &bpp.to_string(), "--capacity");
        let g = DeviceConfig::from_params(preset, &mut p).ok()?.geometry;
        // What --capacity sizes to these blocks per plane (at 15/16, whatever logical_ratio
        // then makes of them).
        let bytes = default_logical_pages(g.pages()) * g.page_size as u64;
        Some(Capacity::from_bytes(bytes).canonical())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<u64, String> {
        text.parse::<Capacity>()
            .map(|c| c.bytes())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn sizes_in_binary_units_or_bytes() {
        for (text, bytes) in [
            ("1TiB", 1u64 << 40),
            ("4TiB", 4 << 40),
            ("32GiB", 32 << 30),
            ("512MiB", 512 << 20),
            ("512M", 512 << 20),
            ("1t", 1 << 40),
            ("1 tib", 1 << 40),
            ("3.75GiB", 3840 << 20),
            ("1.5TiB", 3 << 39),
            ("64KiB", 64 << 10),
            ("4096", 4096),
            ("4096B", 4096),
            ("0.5k", 512),
            ("1PiB", 1 << 50),
            ("2e", 2 << 60),
        ] {
            assert_eq!(parse(text), Ok(bytes), "{text}");
        }
    }

    #[test]
    fn bad_sizes_name_the_value() {
        for (text, says) in [
            ("0", "\"0\" is no space at all"),
            ("0TiB", "no space at all"),
            ("3XB", "\"3XB\" is not a size"),
            ("TiB", "not a size"),
            ("", "not a size"),
            ("1.2.3GiB", "not a size"),
            ("-1GiB", "not a size"),
            ("1TB", "\"1TB\" is in decimal units"),
            ("1TB", "write 1TiB"),
            ("32gb", "10^9 bytes"),
            ("99999999999TiB", "too large"),
            ("16EiB", "\"16EiB\" is too large"),
            ("2PB", "10^15 bytes"),
            ("99999999999999999999999", "too large"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(
                e.starts_with("capacity: ") && e.contains(says),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn formatted_capacities_round_down_and_parse_back() {
        assert_eq!(format_capacity(1 << 40), "1TiB");
        assert_eq!(format_capacity(3840 << 20), "3.75GiB");
        assert_eq!(format_capacity(30 << 30), "30GiB");
        assert_eq!(format_capacity((1 << 40) - 1), "1023.99GiB");
        assert_eq!(format_capacity(1536 << 30), "1.5TiB");
        assert_eq!(format_capacity(100), "100B");
        for b in [1u64 << 40, 3840 << 20, 123_456_789_012, 999] {
            assert!(parse(&format_capacity(b)).unwrap() <= b);
        }
        assert_eq!(Capacity::from_bytes(1 << 40).canonical(), "1TiB");
        assert_eq!(Capacity::from_bytes(3840 << 20).canonical(), "3.75GiB");
        assert_eq!(
            Capacity::from_bytes(25_165_824_000).canonical(),
            "23.4375GiB"
        );
        assert_eq!(Capacity::from_bytes(100).canonical(), "100");
        for b in [
            1u64 << 40,
            3840 << 20,
            25_165_824_000,
            1_000_000_000_000,
            12345,
        ] {
            let c = Capacity::from_bytes(b).canonical();
            assert_eq!(parse(&c), Ok(b), "{c}");
        }
        assert_eq!(
            "1000000000000".parse::<Capacity>().unwrap().canonical(),
            "1000000000000"
        );
    }

    fn sized(preset: &str, capacity: &str, set: &[&str]) -> Result<DeviceConfig, String> {
        let mut p = Params::from_assignments(set.iter().copied(), "--set").unwrap();
        let cap = capacity.parse::<Capacity>().map_err(|e| e.to_string())?;
        DeviceConfig::from_params_sized(preset, Some(&cap), &mut p).map_err(|e| e.to_string())
    }

    #[test]
    fn a_capacity_scales_only_the_blocks_per_plane() {
        for (preset, capacity, bpp) in [
            ("paper", "30GiB", 256),
            ("paper", "32GiB", 274),
            ("paper", "1TiB", 8739),
            ("paper", "4TiB", 34953),
            ("quick", "3.75GiB", 256),
            ("quick", "1TiB", 69906),
            ("tiny", "120MiB", 64),
            ("tiny", "121MiB", 65),
        ] {
            let base = DeviceConfig::preset(preset).unwrap();
            let c = sized(preset, capacity, &[]).unwrap();
            let g = &c.geometry;
            assert_eq!(g.blocks_per_plane, bpp, "{preset} {capacity}");
            let mut same = base.clone();
            same.geometry.blocks_per_plane = bpp;
            same.geometry.logical_pages = g.logical_pages;
            same.capacity = c.capacity;
            assert_eq!(c, same, "only blocks_per_plane changes");
            // The preset's over-provisioning, and the smallest device that holds the capacity.
            assert_eq!(g.logical_pages, g.pages() * 15 / 16);
            let asked = parse(capacity).unwrap();
            assert!(g.logical_bytes() >= asked, "{preset} {capacity}");
            let smaller = (bpp as u64 - 1) * g.pages_per_line() as u64 * 15 / 16;
            assert!(
                smaller * 4096 < asked,
                "{preset} {capacity}: rounded up, not further"
            );
            assert_eq!(c.capacity, Some(asked));
        }
        let note = sized("tiny", "121MiB", &[])
            .unwrap()
            .capacity_note()
            .unwrap();
        assert_eq!(
            note,
            "capacity: 121MiB asked (126877696 B), rounded up to 65 blocks per plane: \
             127795200 B logical (917504 B more), 136314880 B physical (130.0 MiB)"
        );
        assert_eq!(DeviceConfig::preset("tiny").unwrap().capacity_note(), None);
        // A preset's own capacity gives the preset, capacity recorded aside.
        let mut c = sized("paper", "30GiB", &[]).unwrap();
        c.capacity = None;
        assert_eq!(c, DeviceConfig::preset("paper").unwrap());
    }

    #[test]
    fn other_geometry_keys_apply_before_sizing_and_logical_ratio_after() {
        let c = sized("quick", "1GiB", &["channels=4", "page_size=8192"]).unwrap();
        let g = &c.geometry;
        assert_eq!((g.channels, g.page_size, g.pages_per_block), (4, 8192, 64));
        assert!(g.logical_bytes() >= 1 << 30);
        let half = sized("quick", "1GiB", &["logical_ratio=0.5"]).unwrap();
        let whole = sized("quick", "1GiB", &[]).unwrap();
        assert_eq!(half.geometry.pages(), whole.geometry.pages());
        assert_eq!(half.geometry.logical_pages, whole.geometry.pages() / 2);
    }

    #[test]
    fn bad_capacities_are_refused_naming_what_conflicts() {
        for (preset, capacity, set, says) in [
            (
                "quick",
                "1TiB",
                &["blocks_per_plane=512"][..],
                "\"1TiB\" sizes the device by its blocks per plane and cannot be combined with \
                 blocks_per_plane=512 (from --set)",
            ),
            (
                "quick",
                "1TiB",
                &["logical_pages=1000"],
                "cannot be combined with logical_pages=1000",
            ),
            (
                "paper",
                "512MiB",
                &[],
                "\"512MiB\" is below the smallest paper device the geometry checks allow, \
                 7.5GiB",
            ),
            ("tiny", "1MiB", &[], "smallest tiny device"),
            // Enough lines, but 3 spare: GC's reserve of 2 and its working lines do not fit.
            (
                "quick",
                "720MiB",
                &[],
                "smallest quick device the geometry checks allow, 960MiB (invalid \
                 logical_pages: over-provisioning of 12288 pages holds 3 whole line(s)",
            ),
            (
                "paper",
                "16TiB",
                &[],
                "more than 2^32-1 (page addresses are 32-bit); the largest on this geometry \
                 is 14.99TiB",
            ),
            (
                "quick",
                "1PiB",
                &[],
                "\"1PiB\" needs 71582789 blocks per plane",
            ),
            ("quick", "1TiB", &["channels=0"], "invalid channels"),
        ] {
            let e = sized(preset, capacity, set).unwrap_err();
            assert!(e.contains(says), "{capacity} {set:?}: {e}");
        }
        // The smallest allowed is accepted, and one that rounds to a line fewer refused.
        assert_eq!(sized("paper", "7.5GiB", &[]).unwrap().geometry.lines(), 64);
        assert_eq!(sized("paper", "7.4GiB", &[]).unwrap().geometry.lines(), 64);
        assert!(sized("paper", "7.3GiB", &[]).is_err());
        // With a smaller over-provisioning the least is larger, and it is accepted.
        let e = sized("paper", "3.75GiB", &["logical_ratio=0.99"]).unwrap_err();
        assert!(
            e.contains("smallest paper device the geometry checks allow, 46.875GiB"),
            "{e}"
        );
        sized("paper", "46.875GiB", &["logical_ratio=0.99"]).unwrap();
        // Not a matter of size: the parameter's own error.
        let e = sized("quick", "1TiB", &["logical_ratio=2"]).unwrap_err();
        assert!(
            e.starts_with("invalid logical_ratio: 2 is not strictly"),
            "{e}"
        );
    }

    #[test]
    fn the_largest_capacity_follows_the_state_estimate() {
        let g = DeviceConfig::preset("quick").unwrap();
        let at = |bpp: u32, verify| {
            let mut c = g.clone();
            c.geometry.blocks_per_plane = bpp;
            c.geometry.logical_pages = default_logical_pages(c.geometry.pages());
            c.state_bytes(verify)
        };
        for verify in [false, true] {
            let budget = at(1000, verify) + 10;
            let l = largest_capacity("quick", verify, budget).unwrap().unwrap();
            assert_eq!(l.blocks_per_plane, 1000, "verify {verify}");
            assert!(!l.address_bound);
            assert_eq!(l.logical_bytes, 1000 * 4096 * 3840);
            // What list prints for it asks for no larger device.
            let printed: Capacity = format_capacity(l.logical_bytes).parse().unwrap();
            let mut p = Params::new();
            let c = DeviceConfig::from_params_sized("quick", Some(&printed), &mut p).unwrap();
            assert!(c.geometry.blocks_per_plane <= 1000);
        }
        assert!(largest_capacity("quick", false, 1000).unwrap().is_none());
        let l = largest_capacity("paper", true, u64::MAX).unwrap().unwrap();
        assert!(l.address_bound && l.blocks_per_plane == 131_071);
    }
}
