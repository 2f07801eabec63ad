//! What a suite writes to its output directory: the job files its runs use (`jobs/`), one JSON
//! per experiment, report.md with its `plots/`, and report.html. The CLI and the Python
//! package write the same files.

use super::{document, Config, Def, Plan, ReproduceError, Results};
use std::path::Path;

/// Writes `bytes` to `path` through a temporary file renamed into place, so a reader never
/// sees half a file.
pub(super) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ReproduceError> {
    let io = |source| ReproduceError::Io {
        path: path.display().to_string(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let name = path
        .file_name()
        .map_or("out".into(), |n| n.to_string_lossy());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(io)
}

/// Writes the job files `plan`'s runs use to `out/jobs/NAME.fio`.
pub fn write_jobs(out: &Path, plan: &Plan) -> Result<(), ReproduceError> {
    for (name, text) in plan.job_files() {
        write_file(&out.join(format!("jobs/{name}.fio")), text.as_bytes())?;
    }
    Ok(())
}

/// Writes every experiment's JSON (`out/NAME.json`), report.md with its `plots/`, and
/// report.html.
pub fn write_report(
    out: &Path,
    config: &Config,
    defs: &[&'static Def],
    results: &Results,
) -> Result<(), ReproduceError> {
    for e in results.experiments.iter().filter(|e| !e.runs.is_empty()) {
        let json = serde_json::to_string(e).map_err(|e| ReproduceError::Internal(e.to_string()))?;
        write_file(&out.join(format!("{}.json", e.experiment)), json.as_bytes())?;
    }
    let doc = document(config, defs, results);
    for (file, chart) in doc.charts() {
        write_file(&out.join("plots").join(file), chart.svg()?.as_bytes())?;
    }
    write_file(&out.join("report.md"), doc.markdown().as_bytes())?;
    write_file(&out.join("report.html"), doc.html()?.as_bytes())
}
