//! The mapping DRAM budget of a cached-mapping FTL (SPEC §5.0), parsed the same way for every
//! scheme (DFTL, TPFTL, SFTL, LeaFTL, LearnedFTL).
//!
//! An FTL has *fixed* DRAM it cannot shrink (the GTD at 4 B per TP; LearnedFTL's models) and a
//! *cache* that holds what fits in the rest. Two ways to size it, from `--set`:
//!
//! * `cmt_ratio=r`: the cache holds `r` of the logical mappings' bytes at 8 B per mapping
//!   (`r · logical_pages · 8`), as the papers configure it ("3 % of the page mappings"). The
//!   fixed part comes on top: the total budget is `cache + fixed`.
//! * `mapping_dram_bytes=N` (sizes like `256k` accepted): the **total** mapping DRAM, fixed part
//!   included; the cache gets `N − fixed`. This is what an `equal-dram` comparison sets for every
//!   FTL.
//!
//! Giving both is an error. **The GTD counts inside the budget** (the budget is the total an FTL
//! may use, and [`crate::ftl::DramUsage::budget`] is compared with the total of every part), so a
//! `cmt_ratio` budget is `cache + GTD`.

use crate::config::Geometry;
use crate::error::quote;
use crate::error::ConfigError;
use crate::params::{keys, parse_size, Params};
use serde::Serialize;

keys! {
    /// The mapping DRAM budget's keys ([`Budget::from_params`]).
    pub static BUDGET_KEYS = "budget", "the mapping DRAM of a cached-mapping FTL (SPEC §5.0)";
    MAPPING_DRAM_BYTES = "mapping_dram_bytes" ["B (4k, 1m, ...)"] "total mapping DRAM, fixed parts included, instead of cmt_ratio";
    CMT_RATIO = "cmt_ratio" ["of the mappings' bytes"] "the cache holds this share of the logical mappings at 8 B each; fixed DRAM (GTD, models) comes on top";
}

/// A mapping DRAM budget split into the fixed part and the cache.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Budget {
    /// Total mapping DRAM the FTL may use (fixed + cache).
    pub total: u64,
    /// DRAM the FTL needs regardless of the cache (GTD, models).
    pub fixed: u64,
    /// What the cache may hold.
    pub cache: u64,
}

impl Budget {
    /// The most bytes of cache a budget in `params` can give an FTL, without taking the keys:
    /// `mapping_dram_bytes`, else `cmt_ratio` (3 %, the largest default, unless given) of the
    /// logical mappings at 8 B each; 0 if they do not parse (building the FTL says why).
    pub fn largest_cache(geo: &Geometry, params: &Params) -> u64 {
        match (params.get(&MAPPING_DRAM_BYTES), params.get(&CMT_RATIO)) {
            (Some((text, _)), _) => parse_size(text).unwrap_or(0),
            (None, ratio) => {
                let r = ratio.map_or(Some(0.03), |(t, _)| t.parse::<f64>().ok());
                r.filter(|r| (0.0..=1.0).contains(r))
                    .map_or(0, |r| (r * geo.logical_pages as f64 * 8.0) as u64)
            }
        }
    }

    /// Takes `cmt_ratio` or `mapping_dram_bytes` from `params` (default: `default_ratio` of the
    /// logical mappings). `fixed` is the FTL's fixed DRAM; `min_cache` the smallest cache the
    /// scheme can work with (e.g. one entry, one TP). Errors name the key.
    pub fn from_params(
        geo: &Geometry,
        params: &mut Params,
        default_ratio: f64,
        fixed: u64,
        min_cache: u64,
    ) -> Result<Budget, ConfigError> {
        let bytes = params.take_str(&MAPPING_DRAM_BYTES);
        if bytes.is_some() && params.contains(&CMT_RATIO) {
            return Err(ConfigError::invalid(
                "cmt_ratio",
                "give either cmt_ratio or mapping_dram_bytes, not both",
            ));
        }
        let (key, cache) = match bytes {
            Some(text) => {
                let total = parse_size(&text).ok_or_else(|| {
                    ConfigError::invalid(
                        "mapping_dram_bytes",
                        format!("{} is not a size (e.g. 262144, 256k, 1m)", quote(text)),
                    )
                })?;
                ("mapping_dram_bytes", total.saturating_sub(fixed))
            }
            None => {
                let r = params.take_or(&CMT_RATIO, default_ratio)?;
                if !(r > 0.0 && r <= 1.0) {
                    return Err(ConfigError::invalid(
                        "cmt_ratio",
                        format!("{r} is not a fraction in (0, 1]"),
                    ));
                }
                ("cmt_ratio", (r * geo.logical_pages as f64 * 8.0) as u64)
            }
        };
        if cache < min_cache {
            return Err(ConfigError::invalid(
                key,
                format!(
                    "leaves {cache} B for the cache after {fixed} B of fixed mapping DRAM; \
                     at least {min_cache} B are needed"
                ),
            ));
        }
        Ok(Budget {
            total: cache + fixed,
            fixed,
            cache,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DeviceConfig;

    fn budget(kv: &[&str]) -> Result<Budget, ConfigError> {
        let geo = DeviceConfig::preset("tiny").unwrap().geometry;
        let mut p = Params::from_assignments(kv.iter().copied(), "--set").unwrap();
        let b = Budget::from_params(&geo, &mut p, 0.03, 240, 8)?;
        p.finish().unwrap();
        Ok(b)
    }

    #[test]
    fn ratio_and_bytes_size_the_cache() {
        // tiny: 30,720 logical pages; 3 % of 245,760 B.
        let b = budget(&[]).unwrap();
        assert_eq!((b.cache, b.fixed, b.total), (7372, 240, 7612));
        let b = budget(&["cmt_ratio=0.5"]).unwrap();
        assert_eq!(b.cache, 122_880);
        let b = budget(&["mapping_dram_bytes=4k"]).unwrap();
        assert_eq!((b.cache, b.total), (4096 - 240, 4096));
        for bad in [
            &["cmt_ratio=0"][..],
            &["cmt_ratio=1.5"],
            &["mapping_dram_bytes=100"],
            &["mapping_dram_bytes=lots"],
            &["cmt_ratio=0.1", "mapping_dram_bytes=1m"],
        ] {
            assert!(budget(bad).is_err(), "{bad:?}");
        }
    }
}
