//! Progress bars on stderr for long phases (hidden when stderr is not a terminal), one line per
//! FTL running at the time.

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use learnedftl::engine::Progress;

/// One bar per phase, labelled with the FTL and phase.
pub struct Bar {
    ftl: String,
    /// Where the bar is drawn, so that FTLs running at once each keep a line of their own;
    /// `None` when quiet.
    lines: Option<MultiProgress>,
    bar: Option<ProgressBar>,
}

impl Bar {
    /// Bars for runs of `ftl`, drawn among `lines`; none at all when `quiet`.
    pub fn new(ftl: &str, lines: &MultiProgress, quiet: bool) -> Bar {
        Bar {
            ftl: ftl.to_string(),
            lines: (!quiet).then(|| lines.clone()),
            bar: None,
        }
    }
}

impl Progress for Bar {
    fn start(&mut self, phase: &str, total: Option<u64>) {
        let Some(lines) = &self.lines else {
            return;
        };
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
        self.bar = Some(lines.add(bar));
    }

    fn advance(&mut self, n: u64) {
        if let Some(b) = &self.bar {
            b.inc(n);
        }
    }

    fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
            if let Some(lines) = &self.lines {
                lines.remove(&b);
            }
        }
    }
}
