//! The layering rule (docs/architecture.md): imports point down, units ← addr ← request ←
//! config ← device ← mapping ← ftl ← engine ← run ← report ← reproduce, and the reproduce
//! modules that once imported each other do so one way only. Rust allows any circle between
//! the modules of a crate, so this test reads the sources: a `crate::…` (or `super::…`) path
//! to a higher module in a lower one's code fails, naming the file and line. Comments and test code (`tests.rs`,
//! anything after `#[cfg(test)]`) may look up: tests drive a layer through the ones above it.

use std::path::{Path, PathBuf};

/// A rule: the code of the files under `under` (a file or a folder of `src/`) must not name
/// the modules `forbidden` through any of `prefixes` (`crate::` for the crate's modules, or the
/// paths by which siblings are reached).
struct Rule {
    under: &'static str,
    prefixes: &'static [&'static str],
    forbidden: Vec<&'static str>,
}

/// The layers, lowest first (a file or a folder of `src/`): each must not import a later one.
const LAYERS: &[&str] = &[
    "units.rs",
    "addr.rs",
    "request.rs",
    "config",
    "device",
    "mapping",
    "ftl",
    "engine",
    "run",
    "report",
    "reproduce",
];

/// Within `reproduce/`: `(file or folder, the paths its siblings are reached by, the siblings it
/// must not import)`. The result cache sits below the executor, the experiments' definitions and
/// swept values below the sections, and the sections below the registry that lists them.
const REPRODUCE: &[(&str, &[&str], &[&str])] = &[
    (
        "reproduce/cache.rs",
        &["super::", "crate::reproduce::"],
        &["exec"],
    ),
    (
        "reproduce/def.rs",
        &["super::", "crate::reproduce::"],
        &["registry", "sections", "exec"],
    ),
    (
        "reproduce/sweeps.rs",
        &["super::", "crate::reproduce::"],
        &["registry", "sections", "exec"],
    ),
    (
        "reproduce/sections",
        &["super::", "super::super::", "crate::reproduce::"],
        &["registry", "exec"],
    ),
];

fn rules() -> Vec<Rule> {
    let module = |layer: &'static str| layer.trim_end_matches(".rs");
    let layers = LAYERS.iter().enumerate().map(|(i, &under)| Rule {
        under,
        prefixes: &["crate::"],
        forbidden: LAYERS[i + 1..].iter().map(|&l| module(l)).collect(),
    });
    let reproduce = REPRODUCE.iter().map(|&(under, prefixes, forbidden)| Rule {
        under,
        prefixes,
        forbidden: forbidden.to_vec(),
    });
    layers.chain(reproduce).collect()
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The `.rs` files at or below `path`, sorted.
fn rust_files(path: &Path) -> Vec<PathBuf> {
    if path.is_file() {
        return vec![path.to_path_buf()];
    }
    let mut files = vec![];
    let mut entries: Vec<_> = std::fs::read_dir(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            files.push(p);
        }
    }
    files
}

/// Whether `code` names module `m` through `prefix`: `prefix` then `m` as a whole word, or
/// `prefix{…}` with `m` one of the group's paths.
fn names(code: &str, prefix: &str, m: &str) -> bool {
    let starts_with_m = |rest: &str| {
        rest.starts_with(m)
            && !rest[m.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
    };
    code.match_indices(prefix).any(|(i, _)| {
        // `super::` inside `super::super::` is not the path to a sibling.
        if code[..i].ends_with("super::") {
            return false;
        }
        let rest = &code[i + prefix.len()..];
        match rest.strip_prefix('{') {
            Some(group) => group
                .split(['{', '}', ','])
                .any(|item| starts_with_m(item.trim())),
            None => starts_with_m(rest),
        }
    })
}

/// Every import that breaks `rule`, as `file:line: text`.
fn violations(rule: &Rule) -> Vec<String> {
    let root = src().join(rule.under);
    assert!(root.exists(), "no {}: update the rule", root.display());
    let mut found = vec![];
    for file in rust_files(&root) {
        if file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let mut lines = text.lines().enumerate();
        while let Some((n, line)) = lines.next() {
            let mut code = line.trim_start().to_string();
            if code.starts_with("#[cfg(test)]") {
                break;
            }
            if code.starts_with("//") {
                continue;
            }
            // A `use` over several lines is read whole, so that its groups are seen.
            if code.starts_with("use ") || code.starts_with("pub use ") {
                while !code.trim_end().ends_with(';') {
                    let Some((_, more)) = lines.next() else { break };
                    code.push_str(more.trim());
                }
            }
            for p in rule.prefixes {
                for m in &rule.forbidden {
                    if names(&code, p, m) {
                        let rel = file.strip_prefix(src()).unwrap();
                        found.push(format!(
                            "src/{}:{}: {} (imports point down: {} must not use {p}{m})",
                            rel.display(),
                            n + 1,
                            code,
                            rule.under
                        ));
                    }
                }
            }
        }
    }
    found
}

#[test]
fn imports_point_down() {
    let found: Vec<String> = rules().iter().flat_map(violations).collect();
    assert!(found.is_empty(), "\n{}\n", found.join("\n"));
}

#[test]
fn the_check_sees_imports() {
    assert!(names("use crate::ftl::Op;", "crate::", "ftl"));
    assert!(names(
        "    let x = crate::engine::mix(1, 2, 3);",
        "crate::",
        "engine"
    ));
    assert!(!names("use crate::ftlx::Op;", "crate::", "ftl"));
    assert!(names("use super::exec::Outcome;", "super::", "exec"));
    assert!(!names(
        "use super::super::exec::Outcome;",
        "super::",
        "exec"
    ));
    assert!(names(
        "use super::super::registry::Def;",
        "super::super::",
        "registry"
    ));
    assert!(names("use crate::{addr::Lpn, ftl::Op};", "crate::", "ftl"));
    assert!(names("use super::{exec, Config};", "super::", "exec"));
    assert!(!names("use super::{executor, Config};", "super::", "exec"));
}
