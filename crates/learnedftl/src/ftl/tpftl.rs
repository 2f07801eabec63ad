//! TPFTL (Zhou et al., EuroSys'15; SPEC §5.3): demand-based page mapping whose cache is a
//! two-level LRU of TP nodes and their entries, with workload-adaptive loading (request-level
//! and selective prefetch) and batch write-back of a node's dirty entries.
//!
//! The cache is [`crate::mapping::TpCache`] (shared with LearnedFTL; its module docs describe
//! every policy); the request path, TP handling and GC are shared with DFTL and SFTL in
//! [`super::demand`].
//!
//! Parameters: `cmt_ratio` (default 0.03) or `mapping_dram_bytes`; `request_prefetch` and
//! `selective_prefetch` (both on); `prefetch_threshold` (3, the ±3 node counter; 0 keeps selective prefetch on);
//! `node_bytes` (0: DRAM charged per TP node on top of 8 B per entry); the GC thresholds.

use super::demand::{Cmt, Demand, Evict};
use crate::addr::{Lpn, Ppa, SimTime};
use crate::config::DeviceConfig;
use crate::error::ConfigError;
use crate::mapping::tpcache::ENTRY_BYTES;
use crate::mapping::{Lookup, TpCache, TpCacheConfig, TransTable, WriteBack};
use crate::params::Params;
use std::ops::Range;

/// TPFTL: [`Demand`] with [`TpCache`].
pub type Tpftl = Demand<TpCache>;

crate::params::keys! {
    /// The keys of TPFTL's cache ([`cache_config`]; LearnedFTL's cache is TPFTL's).
    pub static TPCACHE_KEYS = "tpcache", "TPFTL's two-level cache of TP nodes and their entries";
    NODE_BYTES = "node_bytes" ["B"] "DRAM charged per cached TP node on top of 8 B per entry";
    REQUEST_PREFETCH = "request_prefetch" ["on/off"] "request-level prefetch: a miss loads the rest of the request's entries from the same TP read";
    SELECTIVE_PREFETCH = "selective_prefetch" ["on/off"] "selective prefetch: a miss also loads as many entries as precede it cached in its TP node";
    PREFETCH_THRESHOLD = "prefetch_threshold" [""] "the ±N node counter that switches selective prefetch on and off (0: always on)";
}

/// The cache's knobs from `params` (defaults: TPFTL as published).
pub fn cache_config(params: &mut Params) -> Result<TpCacheConfig, ConfigError> {
    let d = TpCacheConfig::default();
    let cfg = TpCacheConfig {
        node_bytes: params.take_or(&NODE_BYTES, d.node_bytes)?,
        request_prefetch: params.take_bool_or(&REQUEST_PREFETCH, d.request_prefetch)?,
        selective_prefetch: params.take_bool_or(&SELECTIVE_PREFETCH, d.selective_prefetch)?,
        switch_threshold: params.take_or(&PREFETCH_THRESHOLD, d.switch_threshold)?,
    };
    if cfg.switch_threshold < 0 {
        return Err(ConfigError::invalid(
            "prefetch_threshold",
            format!(
                "{} must be at least 0 (0: no switching)",
                cfg.switch_threshold
            ),
        ));
    }
    Ok(cfg)
}

/// Builds TPFTL for a device.
pub fn new(dev: &DeviceConfig, params: &mut Params) -> Result<Tpftl, ConfigError> {
    let geo = &dev.geometry;
    let cfg = cache_config(params)?;
    let (lp, epp) = (geo.logical_pages as u32, geo.entries_per_tp());
    Demand::build(
        "tpftl",
        dev,
        params,
        ENTRY_BYTES + cfg.node_bytes,
        |bytes, _| Ok(TpCache::new(lp, epp, bytes, cfg)),
    )
}

impl Cmt for TpCache {
    #[inline]
    fn lookup(&mut self, lpn: Lpn) -> Lookup {
        TpCache::lookup(self, lpn)
    }

    fn load_range(&self, lpn: Lpn, req_last: Lpn) -> Range<u32> {
        TpCache::load_range(self, lpn, req_last)
    }

    fn evict_for(&mut self, range: &Range<u32>, _: &TransTable) -> Evict {
        match TpCache::evict_for(self, range) {
            None => Evict::Fits,
            Some(e) if e.written_back == 0 => Evict::Clean,
            Some(e) => Evict::Dirty(WriteBack {
                tpn: e.tpn,
                read_first: true,
            }),
        }
    }

    fn load(&mut self, lpn: Lpn, range: Range<u32>, ready: SimTime, _: &TransTable) {
        TpCache::load(self, lpn, range, ready);
    }

    fn flush_one(&mut self, _: &TransTable) -> Option<WriteBack> {
        TpCache::flush_one(self).map(|tpn| WriteBack {
            tpn,
            read_first: true,
        })
    }

    fn mark_dirty(&mut self, lpn: Lpn, _: Option<Ppa>, _: &TransTable) {
        TpCache::mark_dirty(self, lpn);
    }

    fn gc_update(&mut self, lpn: Lpn, _: Ppa, _: &TransTable) -> bool {
        TpCache::gc_update(self, lpn)
    }

    #[inline]
    fn prefetch(&self, lpn: Lpn) {
        TpCache::prefetch(self, lpn)
    }

    #[inline]
    fn prefetch_touch(&self, lpn: Lpn) {
        TpCache::prefetch_touch(self, lpn)
    }

    fn dram_parts(&self, parts: &mut Vec<(&'static str, u64)>) {
        parts.push(("cmt_entries", self.entry_bytes()));
        if self.config().node_bytes > 0 {
            parts.push(("cmt_nodes", self.node_bytes()));
        }
    }

    #[inline]
    fn bytes(&self) -> u64 {
        TpCache::bytes(self)
    }

    fn check(&self, _: &TransTable) -> Result<(), String> {
        TpCache::check(self)
    }

    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "cmt_bytes": self.capacity(), "tpcache": self.config() })
    }

    fn counters(&self) -> serde_json::Value {
        serde_json::json!({
            "entries": self.entries(),
            "dirty": self.dirty_entries(),
            "nodes": self.nodes(),
            "selective_prefetch_on": self.selective_prefetch_on(),
            "stats": self.stats(),
        })
    }

    fn reset_stats(&mut self) {
        TpCache::reset_stats(self)
    }
}

super::registered!(Tpftl, "tpftl", demand = new);
