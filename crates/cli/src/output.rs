//! Output that never loses data silently: writes to standard output that report failure
//! instead of panicking, files written to a temporary sibling and renamed into place (a failed
//! run leaves no half file), refusal to write over an input, and error messages whose causes
//! are not repeated.

use anyhow::{bail, Context, Result};
use std::fs::{self, File, Metadata};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Exit status after a closed pipe on standard output (`| head`): that of a Unix tool killed
/// by SIGPIPE (128 + 13), with no message.
pub const BROKEN_PIPE_EXIT: u8 = 141;

/// Writes `text` to standard output and flushes it.
pub fn print(text: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("cannot write to standard output")
}

/// Writes `text` to standard error. A failure is ignored: there is nowhere left to report it.
pub fn note(text: &str) {
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

/// Where an output goes.
#[derive(Copy, Clone, Debug)]
pub enum Target<'a> {
    /// Standard output.
    Stdout,
    /// A file.
    File(&'a Path),
}

impl Target<'_> {
    /// Refuses when this output is one of `inputs` (same path, a hard or symbolic link to it):
    /// writing would destroy the input, or (appending to it) never reach its end.
    pub fn refuse_over(self, inputs: &[&Path]) -> Result<()> {
        let out = match self {
            Target::Stdout => stdout_metadata(),
            Target::File(p) => fs::metadata(p).ok(),
        };
        // Only regular files can be read back: /dev/null or a pipe is no input's copy.
        let Some(out) = out.filter(Metadata::is_file) else {
            return Ok(());
        };
        for input in inputs {
            let same = match self {
                Target::File(p) => same_path(p, input),
                Target::Stdout => false,
            };
            if same || fs::metadata(input).is_ok_and(|i| same_file(&out, &i)) {
                let what = match self {
                    Target::Stdout => "standard output".to_string(),
                    Target::File(p) => format!("the output {}", p.display()),
                };
                bail!(
                    "{what} is the input {} (the same file): writing it would destroy the input; \
                     choose another output",
                    input.display()
                );
            }
        }
        Ok(())
    }
}

fn same_path(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

#[cfg(unix)]
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

#[cfg(not(unix))]
fn same_file(_: &Metadata, _: &Metadata) -> bool {
    false // the canonical paths are compared instead
}

#[cfg(unix)]
fn stdout_metadata() -> Option<Metadata> {
    use std::os::fd::AsFd;
    let fd = io::stdout().as_fd().try_clone_to_owned().ok()?;
    File::from(fd).metadata().ok()
}

#[cfg(not(unix))]
fn stdout_metadata() -> Option<Metadata> {
    None
}

/// A file being written: a regular file goes to a temporary file beside it, renamed over it by
/// [`OutputFile::commit`] (dropped uncommitted, the temporary file is removed and the old file
/// stays); a special file (`/dev/null`, a pipe, a terminal) is written in place.
pub struct OutputFile {
    path: PathBuf,
    /// The temporary file and the path it is renamed to; `None` when writing in place.
    rename: Option<(PathBuf, PathBuf)>,
    file: BufWriter<File>,
}

impl OutputFile {
    /// Starts writing `path`.
    pub fn create(path: &Path) -> Result<OutputFile> {
        let cannot = || format!("cannot create {}", path.display());
        let existing = fs::metadata(path).ok();
        if existing.as_ref().is_some_and(|m| !m.is_file()) {
            let file = File::create(path).with_context(cannot)?;
            return Ok(OutputFile {
                path: path.to_path_buf(),
                rename: None,
                file: BufWriter::new(file),
            });
        }
        // Through a symbolic link, replace its target (not the link).
        let target = match existing {
            Some(_) => fs::canonicalize(path).with_context(cannot)?,
            None => path.to_path_buf(),
        };
        let name = target
            .file_name()
            .with_context(|| format!("{}: not a file name", path.display()))?;
        let tmp = target.with_file_name(format!(
            ".{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .with_context(cannot)?;
        if let Some(m) = existing {
            // The replacement keeps the permissions of the file it replaces.
            let _ = fs::set_permissions(&tmp, m.permissions());
        }
        Ok(OutputFile {
            path: path.to_path_buf(),
            rename: Some((tmp, target)),
            file: BufWriter::new(file),
        })
    }

    /// Finishes the file: flushes it and renames it into place.
    pub fn commit(mut self) -> Result<()> {
        let cannot = || format!("cannot write {}", self.path.display());
        self.file.flush().with_context(cannot)?;
        if let Some((tmp, target)) = self.rename.take() {
            let moved = self
                .file
                .get_ref()
                .sync_all()
                .and_then(|()| fs::rename(&tmp, &target));
            if let Err(e) = moved {
                let _ = fs::remove_file(&tmp);
                return Err(e).with_context(cannot);
            }
        }
        Ok(())
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let Some((tmp, _)) = &self.rename {
            let _ = fs::remove_file(tmp);
        }
    }
}

/// Writes `text` to `target` whole: standard output, or a file replaced only on success.
pub fn write_all(target: Target<'_>, text: &str) -> Result<()> {
    match target {
        Target::Stdout => print(text),
        Target::File(path) => {
            let mut f = OutputFile::create(path)?;
            f.write_all(text.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            f.commit()
        }
    }
}

/// Whether `e` comes from writing to a closed pipe.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// `e` and its causes joined by `: `, leaving out a cause whose text the message already ends
/// with (an error that prints its source and also returns it, as I/O wrappers do).
pub fn render_error(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let msg = cause.to_string();
        if out.ends_with(&msg) {
            continue;
        }
        if !out.is_empty() {
            out += ": ";
        }
        out += &msg;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("lftl-output-{name}-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_file_is_replaced_only_on_commit() {
        let dir = scratch("commit");
        let path = dir.join("out.txt");
        fs::write(&path, "old").unwrap();
        let mut f = OutputFile::create(&path).unwrap();
        f.write_all(b"new").unwrap();
        drop(f);
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        let mut f = OutputFile::create(&path).unwrap();
        f.write_all(b"new").unwrap();
        f.commit().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn repeated_causes_are_printed_once() {
        let io = io::Error::other("disk on fire");
        let e = anyhow::Error::new(io).context("x.trace: disk on fire");
        assert_eq!(render_error(&e), "x.trace: disk on fire");
        let e = anyhow::Error::new(io::Error::other("disk on fire")).context("cannot read x");
        assert_eq!(render_error(&e), "cannot read x: disk on fire");
        let pipe = anyhow::Error::new(io::Error::from(io::ErrorKind::BrokenPipe)).context("out");
        assert!(is_broken_pipe(&pipe) && !is_broken_pipe(&e));
    }
}
