//! End-to-end tests of `learnedftl reproduce` on the tiny preset: the output directory's files,
//! a re-run served from the cache, a clear error for an unknown experiment, and the HTML report
//! in a real headless browser (Debian's `chromium`): it loads with no console message, every
//! plot is drawn in the embedded font with nothing over anything else (legends, marks, labels),
//! no repeated tick label and nothing cut off, and a screenshot is kept in
//! `ci-artifacts/` in the target directory. Without chromium the browser test is skipped, except in CI (`CI`
//! set), where `.ci/run` installs it; the README's test command lists it as skipped (tested
//! here too).

mod common;

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

/// A fresh directory under the target directory's `ci-artifacts/` (kept after the test, for
/// people and CI to look at): `$CARGO_TARGET_DIR` when set (a relative one from the workspace
/// root, where cargo is run), else the workspace's `target/`.
fn artifacts(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), |t| root.join(t));
    let dir = target.join("ci-artifacts").join(name);
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
    // `dram` runs every registered FTL, `cmt-sweep` its six cache sizes.
    let runs = learnedftl::ftl::FTLS.len() + 6;
    let (ok, _, stderr) = learnedftl(&args);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "2 experiments, {runs} runs (0 cached, 0 shared between experiments)"
        )),
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
        ok && stderr.contains(&format!(
            "{runs} runs ({runs} cached, 0 shared between experiments)"
        )),
        "{stderr}"
    );
    // Another seed is another configuration.
    let mut other = args.to_vec();
    other.extend(["--seed", "2", "--jobs", "1"]);
    let (ok, _, stderr) = learnedftl(&other);
    assert!(
        ok && stderr.contains(&format!("{runs} runs (0 cached, 0 shared")),
        "{stderr}"
    );
}

#[test]
fn a_capacity_runs_every_experiment_on_the_sized_device_and_names_it() {
    // The default output directory, under a scratch working directory.
    let dir = artifacts("reproduce-capacity");
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_learnedftl"))
            .current_dir(&dir)
            .args([
                "reproduce",
                "--preset",
                "tiny",
                "--capacity",
                "240MiB",
                "--quiet",
                "dram",
            ])
            .output()
            .expect("run the binary");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        stderr
    };
    // `dram` runs every registered FTL.
    let runs = learnedftl::ftl::FTLS.len();
    let stderr = run();
    assert!(
        stderr.contains(&format!("{runs} runs (0 cached"))
            && stderr.contains("output in results/tiny-240MiB"),
        "{stderr}"
    );
    let out = dir.join("results/tiny-240MiB");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("dram.json")).unwrap()).unwrap();
    assert_eq!(json["capacity"], 240u64 << 20);
    for r in json["runs"].as_array().unwrap() {
        let command = r["command"].as_str().unwrap();
        assert!(
            command.starts_with("learnedftl compare --preset tiny --capacity 240MiB --seed 1 "),
            "{command}"
        );
        for report in r["reports"].as_array().unwrap() {
            let d = &report["config"]["device"];
            assert_eq!(d["capacity"], 240u64 << 20);
            assert_eq!(d["geometry"]["blocks_per_plane"], 128, "twice tiny's 64");
            assert_eq!(d["geometry"]["logical_pages"], 61440);
        }
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.starts_with("# Reproduction report (tiny preset at 240MiB, default setup, seed 1)"),
        "{md}"
    );
    // The cache holds them under the capacity: a re-run loads every one.
    assert!(run().contains(&format!("{runs} runs ({runs} cached")));
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

/// Loads `report.html` in an iframe of a check page that counts the plots drawn, asks whether
/// the embedded font loaded, and measures the laid-out page (element boxes) for faults a reader
/// would see: in every chart (`.panel`), a mark (bar, line, point) outside the plot area, a legend
/// over the plot area or a mark, two tick labels of an axis that read the same, two texts over
/// each other or a text cut off at the plot's edge; a code block cut off without a scroll bar; a
/// number in a table broken over lines. The result is JSON in `#result`.
const CHECK_PAGE: &str = r#"<!DOCTYPE html><html><body><pre id="result">not loaded</pre>
<iframe id="r" src="report.html" style="width:1280px;height:2000px"></iframe>
<script>
document.getElementById('r').addEventListener('load', async () => {
  const d = document.getElementById('r').contentDocument;
  await d.fonts.ready;
  const faults = [];
  const box = e => e.getBoundingClientRect();
  const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 &&
    Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5;
  const inside = (a, b) => a.left >= b.left - 0.5 && a.right <= b.right + 0.5 &&
    a.top >= b.top - 0.5 && a.bottom <= b.bottom + 0.5;
  const figures = [...d.querySelectorAll('figure.plot')];
  let drawn = 0;
  for (const f of figures) {
    const svg = f.querySelector('svg');
    const panels = svg ? [...svg.querySelectorAll('.panel')] : [];
    if (box(svg || f).width > 0 && panels.length > 0 &&
        panels.every(p => p.querySelector('.mark'))) drawn++;
    panels.forEach((p, i) => {
      const where = `${f.id}, chart ${i + 1}`;
      const area = box(p.querySelector('.plot-area'));
      const marks = [...p.querySelectorAll('.mark')].map(box);
      if (marks.some(m => !inside(m, area))) faults.push(`${where}: a mark outside the plot area`);
      for (const l of p.querySelectorAll('.legend')) {
        if (overlap(box(l), area)) faults.push(`${where}: the legend over the plot area`);
        if (marks.some(m => overlap(box(l), m))) faults.push(`${where}: the legend over data`);
      }
      for (const a of p.querySelectorAll('.axis')) {
        const ticks = [...a.querySelectorAll('.tick')].map(t => t.textContent);
        if (new Set(ticks).size < ticks.length) {
          faults.push(`${where}: repeated tick labels ${ticks.join(' | ')}`);
        }
      }
      const texts = [...p.querySelectorAll('text')];
      texts.forEach((t, j) => {
        if (!inside(box(t), box(svg))) faults.push(`${where}: "${t.textContent}" cut off`);
        for (const u of texts.slice(j + 1)) {
          if (overlap(box(t), box(u))) faults.push(`${where}: "${t.textContent}" over "${u.textContent}"`);
        }
      });
    });
  }
  for (const pre of d.querySelectorAll('pre')) {
    if (pre.scrollWidth > pre.clientWidth && !['auto', 'scroll'].includes(getComputedStyle(pre).overflowX)) {
      faults.push(`a code block cut off: ${pre.textContent.slice(0, 60)}`);
    }
  }
  for (const td of d.querySelectorAll('td')) {
    if (!/^[\d\s.,%×\/+\-–]*\d[\d\s.,%×\/+\-–]*$/.test(td.textContent)) continue;
    const range = d.createRange();
    range.selectNodeContents(td);
    const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
    if (lines > 1) faults.push(`"${td.textContent}" broken over ${lines} lines in a table`);
  }
  const loaded = [...d.fonts].filter(f => f.status === 'loaded').length;
  document.getElementById('result').textContent = JSON.stringify({
    expected: Number(d.body.dataset.plots), figures: figures.length, drawn,
    font: d.fonts.check('12px "DejaVu Sans"') && loaded > 0, faults,
  });
});
</script></body></html>"#;

#[test]
fn the_html_report_renders_in_a_headless_browser() {
    let Some(chromium) = common::client("chromium", "chromium") else {
        return;
    };
    let out = artifacts("reproduce-tiny");
    // The shipped recordings too, so that the application experiments' sections render.
    let recordings = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recordings");
    let (ok, _, stderr) = learnedftl(&[
        "reproduce",
        "--preset",
        "tiny",
        "--out",
        out.to_str().unwrap(),
        "--recordings",
        recordings.to_str().unwrap(),
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
    // The page's text as serialised: `&`, `<` and `>` escaped.
    let json = result
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let r: serde_json::Value =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {result}\n{stderr}"));
    assert!(r["expected"].as_u64().unwrap() >= 20, "{r}");
    assert_eq!(
        (&r["figures"], &r["drawn"]),
        (&r["expected"], &r["expected"]),
        "every plot present and drawn: {r}"
    );
    assert_eq!(r["font"], true, "the embedded font loaded: {r}");
    let faults = r["faults"].as_array().unwrap();
    assert!(faults.is_empty(), "{faults:#?}");
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

/// The README's test command, from the first code block after "Run the whole test suite".
fn readme_test_command() -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let after = readme
        .split_once("Run the whole test suite")
        .expect("the README says how to run the tests")
        .1;
    let block = after.split("```").nth(1).expect("a code block");
    let command = block.lines().skip(1).collect::<Vec<_>>().join("\n");
    command.trim().to_string()
}

#[test]
fn the_readme_test_command_lists_the_tests_that_skipped() {
    let dir = artifacts("test-command");
    // Stands in for cargo: prints two binaries' failures as the harness does, runs the browser
    // test of this very file with no chromium on `PATH`, so that it skips, and exits with a
    // status of its own to be passed on.
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let cargo = bin.join("cargo");
    std::fs::write(
        &cargo,
        format!(
            "#!/bin/sh\necho \"$*\" >'{args}'\n\
             printf '     Running tests/a.rs (a-1)\\ntest one ... FAILED\\ntest two ... ok\\n'\n\
             printf '     Running tests/b.rs (b-2)\\ntest three::four ... FAILED\\n'\n\
             PATH=/nonexistent '{exe}' --exact the_html_report_renders_in_a_headless_browser || exit 1\n\
             exit 7\n",
            args = dir.join("args").display(),
            exe = std::env::current_exe().unwrap().display(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&cargo, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let command = readme_test_command();
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    // Twice: the second run lists its own skips only.
    for _ in 0..2 {
        let out = Command::new("sh")
            .args(["-c", &command])
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
            .env("PATH", &path)
            .env("CARGO_TARGET_DIR", &dir)
            .env_remove("CI")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(7),
            "cargo's status\n{stdout}\n{stderr}"
        );
        let tail: Vec<&str> = stdout.lines().rev().take(2).collect();
        assert_eq!(
            tail,
            [
                "  reproduce::the_html_report_renders_in_a_headless_browser: chromium is not \
                 installed (apt-get install chromium)",
                "1 test skipped (it passed without running; CI installs what it needs: .ci/run):",
            ],
            "{stdout}\n{stderr}"
        );
        // Every binary runs, and every failure is listed at the end, with its binary.
        assert_eq!(
            std::fs::read_to_string(dir.join("args")).unwrap().trim(),
            "test --workspace --no-fail-fast"
        );
        assert!(
            stdout.contains("Failed tests (2):\n  tests/a.rs: one\n  tests/b.rs: three::four\n"),
            "{stdout}"
        );
    }
    // Nothing left behind for a later run to list.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| {
            let n = n.to_string_lossy();
            n.starts_with("skipped-tests") || n.starts_with("test-log")
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
