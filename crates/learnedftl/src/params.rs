//! `key=value` parameters from the command line (`--set`) or a config file.
//!
//! Every consumer takes the keys it understands; whatever is left at the end is an error that
//! names the key, so a typo never silently falls back to a default.

use crate::error::{quote, ConfigError};
use std::collections::BTreeMap;
use std::str::FromStr;

/// An ordered set of `key=value` overrides, each remembering where it came from.
#[derive(Clone, Debug, Default)]
pub struct Params {
    entries: BTreeMap<String, (String, String)>,
}

impl Params {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `key=value`; `origin` (e.g. `--set`) is quoted in errors. A later value replaces an
    /// earlier one, as with repeated command-line flags.
    pub fn insert(&mut self, key: &str, value: &str, origin: &str) {
        self.entries.insert(
            key.trim().to_string(),
            (value.trim().to_string(), origin.to_string()),
        );
    }

    /// Parses every `key=value` of `items` (e.g. a list of `--set` flags).
    pub fn from_assignments<'a>(
        items: impl IntoIterator<Item = &'a str>,
        origin: &str,
    ) -> Result<Params, ConfigError> {
        let mut p = Params::new();
        for a in items {
            p.insert_assignment(a, origin)?;
        }
        Ok(p)
    }

    /// Parses `key=value` and adds it.
    pub fn insert_assignment(&mut self, text: &str, origin: &str) -> Result<(), ConfigError> {
        let (k, v) = text.split_once('=').ok_or_else(|| ConfigError::Syntax {
            origin: origin.to_string(),
            text: text.to_string(),
            expected: "key=value".to_string(),
        })?;
        if k.trim().is_empty() {
            return Err(ConfigError::Syntax {
                origin: origin.to_string(),
                text: text.to_string(),
                expected: "a non-empty key before '='".to_string(),
            });
        }
        self.insert(k, v, origin);
        Ok(())
    }

    /// Keys not yet taken.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// Every `(key, value)` not yet taken, in key order (a stable description of the set).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries
            .iter()
            .map(|(k, (v, _))| (k.as_str(), v.as_str()))
    }

    /// Whether `key` is present (not yet taken).
    pub fn contains(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }

    /// Removes and returns the raw text of `key`.
    pub fn take_str(&mut self, key: &str) -> Option<String> {
        self.entries.remove(key).map(|(v, _)| v)
    }

    /// Removes `key` and parses it as `T`; an unparsable value is an error naming the key.
    pub fn take<T: FromStr>(&mut self, key: &str) -> Result<Option<T>, ConfigError> {
        match self.entries.remove(key) {
            None => Ok(None),
            Some((v, origin)) => v.parse::<T>().map(Some).map_err(|_| ConfigError::Value {
                key: key.to_string(),
                value: v,
                origin,
                expected: std::any::type_name::<T>().to_string(),
            }),
        }
    }

    /// Removes `key` and parses it as a boolean (`true/false/on/off/1/0/yes/no`).
    pub fn take_bool(&mut self, key: &str) -> Result<Option<bool>, ConfigError> {
        match self.entries.remove(key) {
            None => Ok(None),
            Some((v, origin)) => match v.to_ascii_lowercase().as_str() {
                "1" | "true" | "on" | "yes" => Ok(Some(true)),
                "0" | "false" | "off" | "no" => Ok(Some(false)),
                _ => Err(ConfigError::Value {
                    key: key.to_string(),
                    value: v,
                    origin,
                    expected: "a boolean (on/off, true/false, 1/0)".to_string(),
                }),
            },
        }
    }

    /// Fails naming every key nobody took.
    pub fn finish(self) -> Result<(), ConfigError> {
        if self.entries.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = self
            .entries
            .iter()
            .map(|(k, (_, origin))| format!("{} (from {origin})", quote(k)))
            .collect();
        Err(ConfigError::UnknownKeys(keys.join(", ")))
    }
}

/// Parses a size with an optional binary suffix (`4k`, `512KiB`, `1g`, `4096`), as fio does.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(lower.len());
    let (num, suffix) = lower.split_at(digits_end);
    if num.is_empty() {
        return None;
    }
    let mult: u64 = match suffix.trim() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    };
    if num.contains('.') {
        let f: f64 = num.parse().ok()?;
        let v = f * mult as f64;
        (v.is_finite() && v >= 0.0 && v < u64::MAX as f64).then_some(v as u64)
    } else {
        num.parse::<u64>().ok()?.checked_mul(mult)
    }
}

/// Parses a duration in simulated time (`10s`, `500ms`, `250us`, `100ns`, `2m`; bare = seconds,
/// as fio's `runtime`). Returns nanoseconds.
pub fn parse_duration_ns(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    let digits_end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(digits_end);
    let f: f64 = num.parse().ok()?;
    let mult = match suffix {
        "" | "s" => 1e9,
        "ms" => 1e6,
        "us" => 1e3,
        "ns" => 1.0,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return None,
    };
    let v = f * mult;
    (v.is_finite() && v >= 0.0 && v < u64::MAX as f64).then_some(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4k"), Some(4096));
        assert_eq!(parse_size("512KiB"), Some(512 << 10));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("1.5m"), Some(3 << 19));
        assert_eq!(parse_size("k"), None);
        assert_eq!(parse_size("4q"), None);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("2"), Some(2_000_000_000));
        assert_eq!(parse_duration_ns("500ms"), Some(500_000_000));
        assert_eq!(parse_duration_ns("3us"), Some(3000));
        assert_eq!(parse_duration_ns("x"), None);
    }

    #[test]
    fn unknown_keys_are_named() {
        let mut p = Params::new();
        p.insert_assignment("cmt_ratio=0.5", "--set").unwrap();
        p.insert_assignment("bogus=1", "--set").unwrap();
        assert_eq!(p.take::<f64>("cmt_ratio").unwrap(), Some(0.5));
        let e = p.finish().unwrap_err().to_string();
        assert!(e.contains("bogus"), "{e}");
    }

    #[test]
    fn bad_values_are_named() {
        let mut p = Params::new();
        p.insert_assignment("channels=eight", "--set").unwrap();
        let e = p.take::<u32>("channels").unwrap_err().to_string();
        assert!(e.contains("channels") && e.contains("eight"), "{e}");
        assert!(p.insert_assignment("novalue", "--set").is_err());
    }
}
