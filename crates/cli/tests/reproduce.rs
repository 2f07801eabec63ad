//! End-to-end tests of `learnedftl reproduce` on the tiny preset: the output directory's files,
//! a re-run served from the cache, a clear error for an unknown experiment, and the HTML report
//! in a real headless browser (Debian's `chromium`): it loads with no console message, every
//! plot is drawn in the embedded font, and a screenshot is kept in `target/ci-artifacts/`.
//! Without chromium the browser test is skipped with a notice, except in CI (`CI` set), where
//! `.ci/run` installs it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn learnedftl(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_learnedftl"))
        .args(args)
        .output()
        .expect("run the binary");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh directory under the workspace's `target/ci-artifacts/` (kept after the test, for
/// people and CI to look at).
fn artifacts(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/ci-artifacts")
        .join(name);
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn reproduce_writes_the_report_and_a_rerun_comes_from_the_cache() {
    let out = artifacts("reproduce-cli");
    let o = out.to_str().unwrap();
    let args = [
        "reproduce",
        "--preset",
        "tiny",
        "--out",
        o,
        "--quiet",
        "dram",
        "cmt-sweep",
    ];
    let (ok, _, stderr) = learnedftl(&args);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("2 experiments, 15 runs (0 cached, 0 shared between experiments)"),
        "{stderr}"
    );
    for f in [
        "report.html",
        "report.md",
        "dram.json",
        "cmt-sweep.json",
        "jobs/randread.fio",
        "plots/dram-1.svg",
        "plots/cmt-sweep-1.svg",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("cmt-sweep.json")).unwrap()).unwrap();
    assert_eq!(json["runs"].as_array().unwrap().len(), 6);
    assert_eq!(json["runs"][0]["reports"][0]["ftl"], "tpftl");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## TPFTL CMT-size sweep") && md.contains("**Why ours differs"));

    let (ok, _, stderr) = learnedftl(&args);
    assert!(
        ok && stderr.contains("15 runs (15 cached, 0 shared between experiments)"),
        "{stderr}"
    );
    // Another seed is another configuration.
    let mut other = args.to_vec();
    other.extend(["--seed", "2", "--jobs", "1"]);
    let (ok, _, stderr) = learnedftl(&other);
    assert!(
        ok && stderr.contains("15 runs (0 cached, 0 shared"),
        "{stderr}"
    );
}

#[test]
fn runs_shared_between_experiments_are_counted_as_shared_not_cached() {
    let out = artifacts("reproduce-shared");
    // Both experiments start each workload with the same ideal-FTL run.
    let args = [
        "reproduce",
        "--preset",
        "tiny",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
        "hpftl-fig2",
        "hpftl-secondary",
    ];
    let (ok, _, stderr) = learnedftl(&args);
    assert!(ok, "{stderr}");
    let counts = stderr
        .lines()
        .find_map(|l| {
            l.split_once(" runs (")?
                .1
                .split_once(')')
                .map(|(c, _)| c.to_string())
        })
        .unwrap_or_else(|| panic!("no run counts: {stderr}"));
    let (cached, shared) = counts
        .split_once(" cached, ")
        .and_then(|(c, s)| {
            Some((
                c.parse::<u32>().ok()?,
                s.strip_suffix(" shared between experiments")?,
            ))
        })
        .unwrap_or_else(|| panic!("{counts}"));
    assert_eq!(
        cached, 0,
        "a fresh output directory has nothing cached: {stderr}"
    );
    assert!(shared.parse::<u32>().unwrap() > 0, "{stderr}");
}

#[test]
fn reproduce_refuses_what_it_does_not_know() {
    let (ok, _, stderr) = learnedftl(&["reproduce", "--preset", "tiny", "no-such"]);
    assert!(
        !ok && stderr.contains("unknown experiment \"no-such\""),
        "{stderr}"
    );
    let (ok, _, stderr) = learnedftl(&["reproduce", "--preset", "huge", "dram"]);
    assert!(
        !ok && stderr.contains("unknown preset \"huge\""),
        "{stderr}"
    );
    let (ok, _, stderr) = learnedftl(&["reproduce", "--setup", "qemu", "dram"]);
    assert!(
        !ok && stderr.contains("--setup") && stderr.contains("qemu"),
        "{stderr}"
    );
    let (ok, stdout, _) = learnedftl(&["reproduce", "--list"]);
    assert!(ok && stdout.contains("randread") && stdout.contains("hpftl-fig2"));
}

/// chromium if installed; `None` (after saying so) if not, outside CI.
fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("chromium"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        if std::env::var_os("CI").is_some() {
            panic!("chromium is not installed, and CI must run this test (see .ci/run)");
        }
        eprintln!("SKIPPED: chromium is not installed (apt-get install chromium)");
    }
    found
}

/// Loads `report.html` in an iframe of a check page that counts the plots drawn and asks
/// whether the embedded font loaded.
const CHECK_PAGE: &str = r#"<!DOCTYPE html><html><body><pre id="result">not loaded</pre>
<iframe id="r" src="report.html" style="width:1280px;height:2000px"></iframe>
<script>
document.getElementById('r').addEventListener('load', async () => {
  const d = document.getElementById('r').contentDocument;
  await d.fonts.ready;
  const figures = [...d.querySelectorAll('figure.plot')];
  const drawn = figures.filter(f => {
    const s = f.querySelector('svg');
    return s && s.getBoundingClientRect().width > 0 && s.querySelectorAll('rect, path, polyline, circle').length > 0;
  });
  const loaded = [...d.fonts].filter(f => f.status === 'loaded').length;
  document.getElementById('result').textContent =
    `expected ${d.body.dataset.plots} figures ${figures.length} drawn ${drawn.length} ` +
    `font ${d.fonts.check('12px "DejaVu Sans"') && loaded > 0}`;
});
</script></body></html>"#;

#[test]
fn the_html_report_renders_in_a_headless_browser() {
    let Some(chromium) = chromium() else { return };
    let out = artifacts("reproduce-tiny");
    let (ok, _, stderr) = learnedftl(&[
        "reproduce",
        "--preset",
        "tiny",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(ok, "{stderr}");
    std::fs::write(out.join("check.html"), CHECK_PAGE).unwrap();
    let browser = |extra: &[&str], page: &str| {
        Command::new(&chromium)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--allow-file-access-from-files",
                "--virtual-time-budget=20000",
                "--enable-logging=stderr",
                "--v=0",
            ])
            .args(extra)
            .arg(format!(
                "file://{}",
                out.join(page).canonicalize().unwrap().display()
            ))
            .output()
            .expect("run chromium")
    };
    let dom = browser(&["--dump-dom"], "check.html");
    let stdout = String::from_utf8_lossy(&dom.stdout);
    let stderr = String::from_utf8_lossy(&dom.stderr);
    let result = stdout
        .split("<pre id=\"result\">")
        .nth(1)
        .and_then(|s| s.split('<').next())
        .unwrap_or_default()
        .to_string();
    let n: Vec<&str> = result.split(' ').collect();
    assert!(n.len() == 8 && n[0] == "expected", "{result}\n{stderr}");
    assert!(n[1].parse::<usize>().unwrap() >= 20, "{result}");
    assert_eq!(
        (n[3], n[5]),
        (n[1], n[1]),
        "every plot present and drawn: {result}"
    );
    assert_eq!(n[7], "true", "the embedded font loaded: {result}");
    // The report has no script: any console message (a resource that failed to load, a
    // parse error) is a fault.
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "{console:#?}");

    let shot = out.join("../report.png");
    std::fs::remove_file(&shot).ok();
    let s = browser(
        &[
            "--window-size=1280,3000",
            &format!("--screenshot={}", shot.display()),
        ],
        "report.html",
    );
    assert!(
        s.status.success() && shot.is_file(),
        "{}",
        String::from_utf8_lossy(&s.stderr)
    );
}
