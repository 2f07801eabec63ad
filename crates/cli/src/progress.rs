//! A progress bar on stderr for long phases (hidden when stderr is not a terminal).

use indicatif::{ProgressBar, ProgressStyle};
use learnedftl::engine::Progress;

/// One bar per phase, labelled with the FTL and phase.
pub struct Bar {
    ftl: String,
    quiet: bool,
    bar: Option<ProgressBar>,
}

impl Bar {
    /// Bars for runs of `ftl`; none at all when `quiet`.
    pub fn new(ftl: &str, quiet: bool) -> Bar {
        Bar {
            ftl: ftl.to_string(),
            quiet,
            bar: None,
        }
    }
}

impl Progress for Bar {
    fn start(&mut self, phase: &str, total: Option<u64>) {
        if self.quiet {
            return;
        }
        let bar = match total {
            Some(n) => ProgressBar::new(n).with_style(
                ProgressStyle::with_template(
                    "{prefix:>24} [{bar:30}] {percent:>3}% {per_sec} eta {eta}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            ),
            None => ProgressBar::new_spinner().with_style(
                ProgressStyle::with_template("{prefix:>24} {spinner} {pos} requests {per_sec}")
                    .expect("valid template"),
            ),
        };
        bar.set_prefix(format!("{} {}", self.ftl, phase));
        self.bar = Some(bar);
    }

    fn advance(&mut self, n: u64) {
        if let Some(b) = &self.bar {
            b.inc(n);
        }
    }

    fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}
