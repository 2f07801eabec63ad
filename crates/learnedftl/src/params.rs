//! `key=value` parameters from the command line (`--set`) or a config file.
//!
//! Every consumer takes the keys it understands, each a declared [`Key`] of a [`Scope`];
//! whatever is left at the end is an error that names the key and the valid keys closest to it,
//! so a typo never silently falls back to a default. A set also remembers which groups of keys
//! ([`Scope`]) its consumers consulted and the defaults they used for keys not given: what
//! `learnedftl params` lists ([`crate::ftl::keys`]).

mod key;
mod suggest;

pub(crate) use key::keys;
pub use key::{Key, Scope};

use crate::error::{quote, ConfigError};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Display;
use std::str::FromStr;

/// An ordered set of `key=value` overrides, each remembering where it came from.
#[derive(Clone, Debug, Default)]
pub struct Params {
    entries: BTreeMap<String, (String, String)>,
    /// The groups of the keys consumers asked for, in the order first asked.
    consulted: Vec<&'static Scope>,
    /// The default a consumer used for each key it asked for with one.
    defaults: BTreeMap<&'static str, String>,
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

    /// Records `value` as the default a consumer used for `key`, if one asked for it: a drive
    /// preset's value, which `learnedftl params` then lists as the preset's default.
    pub fn set_default(&mut self, key: &str, value: &str) {
        if let Some((_, v)) = self.defaults.iter_mut().find(|(k, _)| **k == key) {
            *v = value.to_string();
        }
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

    /// Every `(key, origin)` not yet taken, in key order.
    pub fn left(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries
            .iter()
            .map(|(k, (_, origin))| (k.as_str(), origin.as_str()))
    }

    /// Whether `key` is present (not yet taken).
    pub fn contains(&self, key: &Key) -> bool {
        self.entries.contains_key(key.name())
    }

    /// The raw text of `key` and where it came from, if present (not yet taken).
    pub fn get(&self, key: &Key) -> Option<(&str, &str)> {
        self.entries
            .get(key.name())
            .map(|(v, origin)| (v.as_str(), origin.as_str()))
    }

    /// Removes and returns the raw text of `key`.
    pub fn take_str(&mut self, key: &'static Key) -> Option<String> {
        self.consult(key);
        self.entries.remove(key.name()).map(|(v, _)| v)
    }

    /// Removes and returns the raw text of `key`, or `default` (remembered as its default).
    pub fn take_str_or(&mut self, key: &'static Key, default: &str) -> String {
        self.defaults.insert(key.name(), default.to_string());
        self.take_str(key).unwrap_or_else(|| default.to_string())
    }

    /// Removes `key` and parses it as `T`; an unparsable value is an error naming the key.
    pub fn take<T: FromStr>(&mut self, key: &'static Key) -> Result<Option<T>, ConfigError> {
        self.consult(key);
        match self.entries.remove(key.name()) {
            None => Ok(None),
            Some((v, origin)) => v.parse::<T>().map(Some).map_err(|_| ConfigError::Value {
                key: key.name().to_string(),
                value: v,
                origin,
                expected: std::any::type_name::<T>().to_string(),
            }),
        }
    }

    /// [`Params::take`], or `default` (remembered as its default) when `key` is not given.
    pub fn take_or<T: FromStr + Display>(
        &mut self,
        key: &'static Key,
        default: T,
    ) -> Result<T, ConfigError> {
        self.defaults.insert(key.name(), default.to_string());
        Ok(self.take(key)?.unwrap_or(default))
    }

    /// Removes `key` and parses it as a byte count ([`parse_size`]: `4096`, `64KiB`, `512m`),
    /// or `default` (remembered as its default) when `key` is not given.
    pub fn take_size_or(&mut self, key: &'static Key, default: u64) -> Result<u64, ConfigError> {
        self.defaults.insert(key.name(), default.to_string());
        self.consult(key);
        match self.entries.remove(key.name()) {
            None => Ok(default),
            Some((v, origin)) => parse_size(&v).ok_or_else(|| ConfigError::Value {
                key: key.name().to_string(),
                value: v,
                origin,
                expected: "a size in bytes (4096, 64KiB, 512MiB)".to_string(),
            }),
        }
    }

    /// Removes `key` and parses it as a boolean (`true/false/on/off/1/0/yes/no`).
    pub fn take_bool(&mut self, key: &'static Key) -> Result<Option<bool>, ConfigError> {
        self.consult(key);
        match self.entries.remove(key.name()) {
            None => Ok(None),
            Some((v, origin)) => match v.to_ascii_lowercase().as_str() {
                "1" | "true" | "on" | "yes" => Ok(Some(true)),
                "0" | "false" | "off" | "no" => Ok(Some(false)),
                _ => Err(ConfigError::Value {
                    key: key.name().to_string(),
                    value: v,
                    origin,
                    expected: "a boolean (on/off, true/false, 1/0)".to_string(),
                }),
            },
        }
    }

    /// [`Params::take_bool`], or `default` (remembered as its default, `on` or `off`).
    pub fn take_bool_or(&mut self, key: &'static Key, default: bool) -> Result<bool, ConfigError> {
        let word = if default { "on" } else { "off" };
        self.defaults.insert(key.name(), word.to_string());
        Ok(self.take_bool(key)?.unwrap_or(default))
    }

    fn consult(&mut self, key: &'static Key) {
        let scope = key.scope();
        if !self.consulted.iter().any(|s| std::ptr::eq(*s, scope)) {
            self.consulted.push(scope);
        }
    }

    /// The groups of keys consumers asked for, in the order first asked: every key they hold
    /// is valid for what took this set.
    pub fn consulted(&self) -> &[&'static Scope] {
        &self.consulted
    }

    /// The default a consumer used for `key` when it was asked for with one.
    pub fn default_of(&self, key: &Key) -> Option<&str> {
        self.defaults.get(key.name()).map(String::as_str)
    }

    /// The keys of every group consulted.
    pub fn valid_keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.consulted
            .iter()
            .flat_map(|s| s.keys().iter().map(|k| k.name()))
    }

    /// Fails naming every key nobody took, with the valid keys closest to each.
    pub fn finish(self) -> Result<(), ConfigError> {
        if self.entries.is_empty() {
            return Ok(());
        }
        let unknown: Vec<(&str, &str)> = self.left().collect();
        Err(unknown_keys(&unknown, self.valid_keys().collect(), None))
    }
}

/// The error for `unknown` keys (each with where it came from) where `valid` are the keys
/// accepted, `of` what took them (e.g. `dftl`): each key with the valid keys closest to it, and
/// every valid key when one is close to none.
pub fn unknown_keys(
    unknown: &[(&str, &str)],
    valid: BTreeSet<&str>,
    of: Option<&str>,
) -> ConfigError {
    let mut far = false;
    let keys: Vec<String> = unknown
        .iter()
        .map(|&(k, origin)| {
            let near = suggest::closest(k, valid.iter().copied());
            if near.is_empty() {
                far = true;
                format!("{} (from {origin})", quote(k))
            } else {
                format!(
                    "{} (from {origin}; did you mean {}?)",
                    quote(k),
                    near.join(" or ")
                )
            }
        })
        .collect();
    let mut keys = keys.join(", ");
    if let Some(of) = of {
        keys += &format!(" (not a parameter of {of})");
    }
    let hint = if far && !valid.is_empty() {
        format!(
            "; the valid keys are: {}",
            valid.into_iter().collect::<Vec<_>>().join(", ")
        )
    } else {
        String::new()
    };
    ConfigError::UnknownKeys { keys, hint }
}

/// The value of word `text` among `words` (`(word, value)`), or an error naming `key` and the
/// words it takes ("expected a, b or c").
pub fn parse_word<T: Copy>(key: &str, text: &str, words: &[(&str, T)]) -> Result<T, ConfigError> {
    if let Some(&(_, v)) = words.iter().find(|(w, _)| *w == text) {
        return Ok(v);
    }
    let names: Vec<&str> = words.iter().map(|(w, _)| *w).collect();
    let expected = match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    };
    Err(ConfigError::invalid(
        key,
        format!("{}: expected {expected}", quote(text)),
    ))
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
    fn a_word_is_its_value_and_anything_else_names_the_key_and_the_words() {
        let words = [("a", 1), ("b", 2), ("c", 3)];
        assert_eq!(parse_word("k", "b", &words).unwrap(), 2);
        let e = parse_word("k", "d", &words).unwrap_err().to_string();
        assert!(e.contains("k") && e.contains("expected a, b or c"), "{e}");
        let e = parse_word("k", "x", &[("on", true)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected on"), "{e}");
    }

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

    keys! {
        static TEST_KEYS = "test", "the keys of these tests";
        CMT_RATIO = "cmt_ratio" ["fraction"] "a ratio";
        CHANNELS = "channels" [""] "a count";
        FLAG = "flag" ["on/off"] "a switch";
    }

    #[test]
    fn unknown_keys_are_named_with_the_closest_valid_ones() {
        let mut p = Params::new();
        p.insert_assignment("cmt_ratio=0.5", "--set").unwrap();
        p.insert_assignment("bogus=1", "--set").unwrap();
        assert_eq!(p.take::<f64>(&CMT_RATIO).unwrap(), Some(0.5));
        let e = p.finish().unwrap_err().to_string();
        assert!(e.contains("bogus"), "{e}");
        // Nothing close: every key of the groups consulted.
        assert!(
            e.ends_with("the valid keys are: channels, cmt_ratio, flag"),
            "{e}"
        );
        let mut p = Params::new();
        p.insert_assignment("chanels=4", "--set").unwrap();
        p.take::<f64>(&CMT_RATIO).unwrap();
        let e = p.finish().unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown parameter(s): \"chanels\" (from --set; did you mean channels?)"
        );
    }

    #[test]
    fn defaults_and_groups_are_remembered() {
        let mut p = Params::new();
        p.insert_assignment("channels=4", "--set").unwrap();
        assert_eq!(p.take_or(&CHANNELS, 8u32).unwrap(), 4);
        assert!(!p.take_bool_or(&FLAG, false).unwrap());
        assert_eq!(p.default_of(&CHANNELS), Some("8"));
        assert_eq!(p.default_of(&FLAG), Some("off"));
        assert_eq!(p.default_of(&CMT_RATIO), None);
        assert_eq!(p.consulted().len(), 1);
        assert_eq!(p.consulted()[0].name(), "test");
        p.finish().unwrap();
    }

    #[test]
    fn bad_values_are_named() {
        let mut p = Params::new();
        p.insert_assignment("channels=eight", "--set").unwrap();
        let e = p.take::<u32>(&CHANNELS).unwrap_err().to_string();
        assert!(e.contains("channels") && e.contains("eight"), "{e}");
        assert!(p.insert_assignment("novalue", "--set").is_err());
    }
}
