//! NVMe Flexible Data Placement's configuration (`fdp_ruhs=`, `fdp_ru=`, `fdp_ruh_type=`;
//! docs/fdp.md): how many reclaim unit handles the device offers, how large a reclaim unit is
//! and which isolation its handles keep. Off (no handles) unless set, and then nothing changes.

use super::Geometry;
use crate::error::{quote, ConfigError};
use crate::params::{keys, Params};
use serde::Serialize;

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
    /// What GC may do with a handle's data.
    pub ruh_type: RuhType,
}

keys! {
    /// The FDP keys ([`FdpConfig::from_params`]; docs/fdp.md).
    pub static FDP_KEYS = "fdp", "NVMe Flexible Data Placement: reclaim unit handles the host tags its writes with";
    FDP_RUHS = "fdp_ruhs" ["handles"] "reclaim unit handles the host may place writes with (0: FDP off); untagged writes go to handle 0";
    FDP_RU = "fdp_ru" ["lines"] "with fdp_ruhs: reclaim unit size in lines (superblocks), the unit GC erases";
    FDP_RUH_TYPE = "fdp_ruh_type" ["initially|persistently"] "with fdp_ruhs: initially isolated, GC may merge handles' valid data; persistently, GC keeps each handle's data apart";
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

    /// Write streams FDP adds beside the device's own data stream, which is handle 0's: the
    /// host streams of handles 1.., and the GC streams (one per handle when persistently
    /// isolated, one shared otherwise).
    pub fn extra_streams(&self) -> u16 {
        if self.is_off() {
            return 0;
        }
        let gc = match self.ruh_type {
            RuhType::Initially => 1,
            RuhType::Persistently => self.ruhs,
        };
        self.ruhs - 1 + gc
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
        let ruh_type = match params
            .take_str_or(&FDP_RUH_TYPE, RuhType::Initially.key())
            .as_str()
        {
            "initially" => RuhType::Initially,
            "persistently" => RuhType::Persistently,
            other => {
                return Err(ConfigError::invalid(
                    "fdp_ruh_type",
                    format!("{}: expected initially or persistently", quote(other)),
                ))
            }
        };
        if ruhs == 0 {
            return Ok(FdpConfig::default());
        }
        let c = FdpConfig {
            ruhs,
            ru_lines,
            ruh_type,
        };
        // Every extra stream keeps a line open that the logical space cannot fill: the spare
        // lines must hold them beside GC's reserve and working lines.
        geo.check_gc_room(
            super::DEFAULT_GC_RESERVE_LINES + c.extra_streams() as u32,
            "fdp_ruhs",
        )?;
        Ok(c)
    }

    /// One line for people describing the configuration, when FDP is on.
    pub fn describe(&self) -> Option<String> {
        self.is_on().then(|| {
            format!(
                "FDP: {} reclaim unit handle(s), {} isolated, reclaim unit {} line(s)",
                self.ruhs,
                self.ruh_type.key(),
                self.ru_lines
            )
        })
    }
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
        assert_eq!(
            (c.ruhs, c.ru_lines, c.ruh_type),
            (4, 1, RuhType::Persistently)
        );
        assert_eq!(c.extra_streams(), 3 + 4);
        assert_eq!(fdp(&["fdp_ruhs=4"]).unwrap().extra_streams(), 3 + 1);
    }

    #[test]
    fn bad_settings_name_their_key() {
        for (kv, key) in [
            (&["fdp_ruhs=200"][..], "fdp_ruhs"),
            (&["fdp_ru=2"], "fdp_ru"),
            (&["fdp_ruhs=2", "fdp_ru=2"], "fdp_ru"),
            (&["fdp_ruhs=2", "fdp_ruh_type=always"], "fdp_ruh_type"),
            // quick's 16 spare lines cannot hold 64 handles' open units.
            (&["fdp_ruhs=64"], "fdp_ruhs"),
        ] {
            let e = fdp(kv).unwrap_err();
            assert!(e.contains(key), "{kv:?}: {e}");
        }
    }
}
