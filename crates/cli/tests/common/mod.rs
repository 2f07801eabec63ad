//! Helpers shared by the CLI's test files.
// Each test file uses some of them.
#![allow(dead_code)]

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// `n` deterministic pseudo-random bytes (a xorshift stream from `seed`, which must not be 0).
pub fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The environment variable naming the file where a run of `scripts/test.sh` (the README's test
/// command) collects the tests that skipped, one line each, to list them at its end.
pub const SKIPPED_FILE_VAR: &str = "LEARNEDFTL_SKIPPED_TESTS";

/// The client program `name` (from the Debian package `package`) if it is on `PATH`.
///
/// Without it the calling test is to skip (it returns `None`), and says so where a person running
/// the tests sees it: on standard error past the harness's capture (which hides what a passing
/// test prints), and, under `scripts/test.sh`, in the list of skipped tests it prints at the end.
/// In CI (`CI` set), where `.ci/run` installs every client, a missing one fails the test instead.
pub fn client(name: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        if std::env::var_os("CI").is_some() {
            panic!("{name} is not installed, and CI must run this test (see .ci/run)");
        }
        skip(&format!(
            "{name} is not installed (apt-get install {package})"
        ));
    }
    found
}

/// Records that the running test skips, and why (see [`client`]).
fn skip(reason: &str) {
    // The harness runs each test on a thread named after it.
    let thread = std::thread::current();
    let exe = std::env::current_exe().unwrap_or_default();
    // `target/debug/deps/<file>-<hash>`: the test file's name.
    let binary = exe
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.rsplit_once('-'))
        .map_or("?", |(name, _)| name);
    let line = format!("{binary}::{}: {reason}\n", thread.name().unwrap_or("?"));
    // `std::io::stderr()` written directly is not captured, unlike `eprintln!`.
    std::io::stderr()
        .write_all(format!("SKIPPED {line}").as_bytes())
        .ok();
    if let Some(file) = std::env::var_os(SKIPPED_FILE_VAR) {
        // One write of a whole line to a file opened for appending: lines of tests running in
        // parallel, in one process or several, do not interleave.
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .unwrap_or_else(|e| panic!("{}: {e}", Path::new(&file).display()));
        f.write_all(line.as_bytes())
            .unwrap_or_else(|e| panic!("{}: {e}", Path::new(&file).display()));
    }
}
