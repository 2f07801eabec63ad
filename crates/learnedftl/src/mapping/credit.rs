//! A flash-work allowance earned by host writes: optional work an FTL does to save DRAM or keep
//! its models accurate (LearnedFTL's group merges, HP-FTL's moves back into the primary table)
//! may move at most `rate` pages per host page written, so that it cannot take over the device.
//! `rate = inf` lifts the limit; `0` turns the work off.

use crate::error::ConfigError;
use crate::params::{Key, Params};

/// Pages of optional work per host page, and what is still unspent.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Credit {
    rate: f64,
    balance: f64,
}

impl Credit {
    /// Takes `key` from `params` (pages per host page, `>= 0`, `inf` accepted; default
    /// `default`), naming the key in errors.
    pub fn from_params(
        params: &mut Params,
        key: &'static Key,
        default: f64,
    ) -> Result<Credit, ConfigError> {
        let rate = params.take_or(key, default)?;
        if rate.is_nan() || rate < 0.0 {
            return Err(ConfigError::invalid(
                key.name(),
                format!("{rate} is not a number of pages >= 0 (inf: no limit)"),
            ));
        }
        Ok(Credit { rate, balance: 0.0 })
    }

    /// Pages earned per host page.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// One host page written: earns `rate` pages, keeping at most `cap` unspent so that the
    /// work follows the writes rather than bunching up after a quiet spell.
    pub fn earn(&mut self, cap: f64) {
        self.balance = (self.balance + self.rate).min(cap);
    }

    /// Whether `pages` more pages of work are covered.
    pub fn covers(&self, pages: u64) -> bool {
        self.rate.is_infinite() || self.balance >= pages as f64
    }

    /// Spends `pages` pages.
    pub fn spend(&mut self, pages: u64) {
        self.balance -= pages as f64;
    }

    /// The rate for reports: a number, or `"inf"` (JSON has no infinity).
    pub fn rate_json(&self) -> serde_json::Value {
        if self.rate.is_finite() {
            serde_json::json!(self.rate)
        } else {
            serde_json::json!("inf")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::params::keys! {
        static TEST_KEYS = "test", "the keys of these tests";
        B = "b" ["pages per host page"] "a credit rate";
    }

    fn credit(v: &str) -> Result<Credit, ConfigError> {
        let mut p = Params::new();
        p.insert("b", v, "test");
        Credit::from_params(&mut p, &B, 0.0)
    }

    #[test]
    fn earns_up_to_the_cap_and_spends() {
        let mut c = credit("0.5").unwrap();
        assert!(!c.covers(1));
        c.earn(10.0);
        c.earn(10.0);
        assert!(c.covers(1) && !c.covers(2));
        c.spend(1);
        assert!(!c.covers(1));
        for _ in 0..100 {
            c.earn(3.0);
        }
        assert!(c.covers(3) && !c.covers(4));
        assert_eq!(c.rate_json(), serde_json::json!(0.5));
    }

    #[test]
    fn inf_always_covers_and_bad_rates_name_the_key() {
        let c = credit("inf").unwrap();
        assert!(c.covers(u64::MAX));
        assert_eq!(c.rate_json(), serde_json::json!("inf"));
        for bad in ["-1", "nan"] {
            let e = credit(bad).unwrap_err().to_string();
            assert!(e.contains('b'), "{e}");
        }
    }
}
