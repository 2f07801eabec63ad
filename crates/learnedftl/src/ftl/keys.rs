//! The `--set` keys of the FTLs and the device, with their defaults on a preset (`learnedftl
//! params`). The listing is found by building each FTL: its groups are those the parsers
//! consulted ([`Params::consulted`]), its defaults those they used ([`Params::default_of`]), so
//! it cannot list a key the parsers do not take or miss one they do.

use super::{build, FTLS};
use crate::config::DeviceConfig;
use crate::error::ConfigError;
use crate::params::{Params, Scope};
use serde::Serialize;
use std::collections::BTreeMap;

/// One key of a [`Listing`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KeyInfo {
    /// The name given to `--set`.
    pub key: &'static str,
    /// Its default on the listing's preset, as `--set` takes it; `None` when there is none
    /// (the key replaces another one, or does nothing unless given).
    pub default: Option<String>,
    /// In a listing of every FTL: the FTLs whose default differs from `default`, with theirs.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub default_for: BTreeMap<&'static str, Option<String>>,
    /// Its unit, or the words it accepts (`on/off`, `reserve|femu`); empty for a plain count.
    pub unit: &'static str,
    /// The setting it needs to apply, e.g. `gc=femu`.
    pub only_with: Option<&'static str>,
    /// One line of meaning.
    pub meaning: &'static str,
}

/// The keys one parser takes together ([`Scope`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    /// Its name (`device`, `gc`, `budget`, an FTL's name, ...).
    pub group: &'static str,
    /// What its keys configure.
    pub about: &'static str,
    /// The FTLs of the listing that take its keys.
    pub ftls: Vec<&'static str>,
    /// Its keys, in the order they are taken.
    pub keys: Vec<KeyInfo>,
}

/// Every key one FTL, or every FTL, takes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Listing {
    /// The preset the defaults are for.
    pub preset: String,
    /// The FTL listed, or `None` for every FTL.
    pub ftl: Option<String>,
    /// The groups of keys, in the order the parsers consult them (the device's first).
    pub groups: Vec<Group>,
}

/// The keys of `ftl` (every FTL when `None`) and the device, with their defaults on `preset`.
/// Builds each FTL on the preset (and again under the settings some keys need, for their
/// defaults), so it takes the time and memory of those builds.
pub fn listing(ftl: Option<&str>, preset: &str) -> Result<Listing, ConfigError> {
    let ftls: Vec<&'static str> = match ftl {
        None => FTLS.to_vec(),
        Some(name) => vec![FTLS.iter().copied().find(|f| *f == name).ok_or_else(|| {
            ConfigError::UnknownFtl {
                name: name.to_string(),
                known: FTLS.join(", "),
            }
        })?],
    };
    let mut groups: Vec<(&'static Scope, Group)> = Vec::new();
    for name in ftls {
        for (scope, defaults) in groups_of(name, preset)? {
            match groups.iter_mut().find(|(s, _)| std::ptr::eq(*s, scope)) {
                Some((_, g)) => {
                    for (info, default) in g.keys.iter_mut().zip(defaults) {
                        if info.default != default {
                            info.default_for.insert(name, default);
                        }
                    }
                    g.ftls.push(name);
                }
                None => {
                    let keys = scope
                        .keys()
                        .iter()
                        .zip(defaults)
                        .map(|(k, default)| KeyInfo {
                            key: k.name(),
                            default,
                            default_for: BTreeMap::new(),
                            unit: k.unit(),
                            only_with: k.only_with(),
                            meaning: k.meaning(),
                        })
                        .collect();
                    let group = Group {
                        group: scope.name(),
                        about: scope.about(),
                        ftls: vec![name],
                        keys,
                    };
                    groups.push((scope, group));
                }
            }
        }
    }
    Ok(Listing {
        preset: preset.to_string(),
        ftl: ftl.map(str::to_string),
        groups: groups.into_iter().map(|(_, g)| g).collect(),
    })
}

/// A group of keys and the default of each of its keys, in order.
type Defaults = (&'static Scope, Vec<Option<String>>);

/// Each group of keys that building `ftl` on `preset` consults, in order, with the default of
/// each of its keys: the one the build used, or for a key that needs a setting (`gc=femu`) the
/// one a build under that setting used.
fn groups_of(ftl: &str, preset: &str) -> Result<Vec<Defaults>, ConfigError> {
    let base = consult(ftl, preset, None)?;
    let mut under: BTreeMap<&str, Params> = BTreeMap::new();
    let mut out = Vec::new();
    for &scope in base.consulted() {
        let mut defaults = Vec::new();
        for &key in scope.keys() {
            let default = match (base.default_of(key), key.only_with()) {
                (Some(d), _) => Some(d.to_string()),
                (None, Some(setting)) => {
                    if !under.contains_key(setting) {
                        under.insert(setting, consult(ftl, preset, Some(setting))?);
                    }
                    under[setting].default_of(key).map(str::to_string)
                }
                (None, None) => None,
            };
            defaults.push(default);
        }
        out.push((scope, defaults));
    }
    Ok(out)
}

/// The parameters after building `ftl` on `preset` with `setting` (a `key=value`) given.
fn consult(ftl: &str, preset: &str, setting: Option<&str>) -> Result<Params, ConfigError> {
    let mut p = Params::new();
    if let Some(s) = setting {
        p.insert_assignment(s, "the key listing")?;
    }
    let dev = DeviceConfig::from_params(preset, &mut p)?;
    build(ftl, &dev, &mut p)?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ftl::Ftl;

    /// A value to give a key that has no default.
    fn example(key: &str) -> &'static str {
        match key {
            "logical_ratio" => "0.9",
            "mapping_dram_bytes" => "1m",
            "inject" => "drop-trim",
            "dram_ratio" => "1",
            _ => panic!("{key} has no default: give this test a value for it"),
        }
    }

    /// The device and FTL built on `tiny` from `sets`, checking that every key was taken.
    fn built(ftl: &str, sets: &[&str]) -> (DeviceConfig, Box<dyn Ftl>) {
        let mut p = Params::from_assignments(sets.iter().copied(), "test").unwrap();
        let dev = DeviceConfig::from_params("tiny", &mut p).unwrap_or_else(|e| panic!("{e}"));
        let f = build(ftl, &dev, &mut p).unwrap_or_else(|e| panic!("{ftl} {sets:?}: {e}"));
        p.finish().unwrap_or_else(|e| panic!("{ftl} {sets:?}: {e}"));
        (dev, f)
    }

    #[test]
    fn every_listed_key_is_taken_and_its_default_is_the_one_used() {
        for ftl in FTLS {
            let l = listing(Some(ftl), "tiny").unwrap();
            assert_eq!(l.groups[0].group, "device", "{ftl}");
            let mut names: Vec<&str> = l
                .groups
                .iter()
                .flat_map(|g| g.keys.iter().map(|k| k.key))
                .collect();
            let n = names.len();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), n, "{ftl}: a key in two groups");
            for k in l.groups.iter().flat_map(|g| &g.keys) {
                let setting: Vec<&str> = k.only_with.into_iter().collect();
                let (dev, f) = built(ftl, &setting);
                let given = format!(
                    "{}={}",
                    k.key,
                    k.default.as_deref().unwrap_or_else(|| example(k.key))
                );
                let (dev_given, f_given) = built(ftl, &[setting.as_slice(), &[&given]].concat());
                if k.default.is_some() {
                    // The default given explicitly changes nothing.
                    assert_eq!(dev, dev_given, "{ftl} {given}");
                    assert_eq!(f.params(), f_given.params(), "{ftl} {given}");
                }
            }
        }
    }

    #[test]
    fn no_setting_consults_a_group_the_listing_leaves_out() {
        for ftl in FTLS {
            let l = listing(Some(ftl), "tiny").unwrap();
            let listed: Vec<&str> = l.groups.iter().map(|g| g.group).collect();
            // Every setting a key needs, and every word a key accepts.
            let mut settings: Vec<String> = Vec::new();
            for k in l.groups.iter().flat_map(|g| &g.keys) {
                settings.extend(k.only_with.map(str::to_string));
                if k.unit.contains('|') {
                    settings.extend(k.unit.split('|').map(|w| format!("{}={w}", k.key)));
                }
            }
            for s in &settings {
                let mut p = Params::new();
                p.insert_assignment(s, "test").unwrap();
                let dev = DeviceConfig::from_params("tiny", &mut p).unwrap();
                // Some words are refused on their own (e.g. a design needing other keys); what
                // was consulted before the refusal counts all the same.
                let _ = build(ftl, &dev, &mut p);
                for scope in p.consulted() {
                    assert!(
                        listed.contains(&scope.name()),
                        "{ftl} {s}: {}",
                        scope.name()
                    );
                }
            }
        }
    }

    #[test]
    fn every_ftl_listing_names_the_ftls_of_shared_groups_and_their_defaults() {
        let l = listing(None, "tiny").unwrap();
        let device = &l.groups[0];
        assert_eq!((device.group, device.ftls.len()), ("device", FTLS.len()));
        let budget = l.groups.iter().find(|g| g.group == "budget").unwrap();
        assert!(!budget.ftls.contains(&"ideal") && budget.ftls.contains(&"dftl"));
        let cmt = budget.keys.iter().find(|k| k.key == "cmt_ratio").unwrap();
        assert_eq!(cmt.default.as_deref(), Some("0.03"));
        assert_eq!(
            cmt.default_for,
            BTreeMap::from([("learnedftl", Some("0.015".to_string()))])
        );
        let channels = &device.keys[0];
        assert_eq!(
            (channels.key, channels.default.as_deref()),
            ("channels", Some("4"))
        );
        let text = crate::report::params_table(&l);
        assert!(text.contains("0.03 (learnedftl 0.015)"), "{text}");
        assert!(listing(Some("nope"), "tiny").is_err());
        assert!(listing(None, "huge").is_err());
    }
}
