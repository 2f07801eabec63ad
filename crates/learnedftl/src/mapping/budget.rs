//! The mapping-DRAM budget of the cached-mapping FTLs (SPEC §5.0): by default their caches hold
//! 3 % of the bytes of the full page map (8 B per logical page), overridable with `cmt_ratio`.

use crate::config::Geometry;
use crate::error::ConfigError;
use crate::params::Params;

/// The default share of the full page map a mapping cache may hold.
pub const DEFAULT_CMT_RATIO: f64 = 0.03;

/// Bytes of the full page-level map: 8 B per logical page.
pub fn full_map_bytes(geo: &Geometry) -> u64 {
    geo.logical_pages * 8
}

/// Takes `cmt_ratio` (a fraction in (0, 1], default 3 %) and returns the mapping-cache budget in
/// bytes: that fraction of [`full_map_bytes`].
pub fn mapping_dram_bytes(geo: &Geometry, params: &mut Params) -> Result<u64, ConfigError> {
    let ratio = params
        .take::<f64>("cmt_ratio")?
        .unwrap_or(DEFAULT_CMT_RATIO);
    if !(ratio > 0.0 && ratio <= 1.0) {
        return Err(ConfigError::invalid(
            "cmt_ratio",
            format!("{ratio} is not a fraction in (0, 1]"),
        ));
    }
    Ok((full_map_bytes(geo) as f64 * ratio) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DeviceConfig;

    #[test]
    fn three_percent_by_default() {
        let g = DeviceConfig::preset("paper").unwrap().geometry;
        let mut p = Params::new();
        // 7,864,320 LPNs × 8 B × 3 %.
        assert_eq!(mapping_dram_bytes(&g, &mut p).unwrap(), 1_887_436);
        p.insert_assignment("cmt_ratio=0", "t").unwrap();
        assert!(mapping_dram_bytes(&g, &mut p).is_err());
    }
}
