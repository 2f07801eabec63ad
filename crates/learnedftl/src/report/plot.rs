//! SVG plots of results (plotters' SVG backend): grouped bar charts and line charts, with an
//! optional "paper" series beside ours.
//!
//! Text is laid out with DejaVu Sans, embedded in the library (`assets/DejaVuSans.ttf`, licence
//! beside it) and registered with plotters' `ab_glyph` text backend, so label widths are
//! measured, not guessed; the SVG names the family [`FONT_FAMILY`], which `report.html` embeds
//! as an `@font-face` (a standalone SVG falls back to the viewer's sans-serif). No network is
//! needed to view a plot.

use super::RunReport;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::sync::Once;

/// The font family every plot's text uses.
pub const FONT_FAMILY: &str = "DejaVu Sans";

/// The embedded font (DejaVu Sans; licence: `assets/DejaVuSans.LICENSE`).
pub const FONT_TTF: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

/// Why a plot could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("plot: {0}")]
pub struct PlotError(String);

fn err(e: impl std::fmt::Display) -> PlotError {
    PlotError(e.to_string())
}

/// Registers the embedded font with plotters once per process.
fn font(size: u32) -> TextStyle<'static> {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT_TTF)
            .unwrap_or_else(|_| unreachable!("the embedded DejaVu Sans is a valid TrueType font"));
    });
    TextStyle::from((FONT_FAMILY, size).into_font())
}

/// One named series of values; `None` where it has no value (e.g. the paper gives none).
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend name ("ours", "paper", an FTL, ...).
    pub name: String,
    /// One value per category (bars) or per x value (lines).
    pub values: Vec<Option<f64>>,
}

/// A chart: grouped bars per category, or lines over a numeric x axis.
#[derive(Clone, Debug)]
pub struct Chart {
    /// Caption.
    pub title: String,
    /// What the y axis measures.
    pub y_label: String,
    /// Bars: the category names; lines: the x values, as numbers in text.
    pub categories: Vec<String>,
    /// The series (bars: side by side within a category; lines: one line each).
    pub series: Vec<Series>,
    /// Grouped bars or lines.
    pub kind: Kind,
}

/// How a [`Chart`] draws its series.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// Side-by-side bars per category.
    Bars,
    /// Lines over a numeric x axis (the categories parsed as numbers) described by `x_label`.
    Lines {
        /// What the x axis measures.
        x_label: String,
    },
}

// Series colours, in order; a series named "paper" is drawn grey.
const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn colour(series: &Series, i: usize) -> RGBColor {
    if series.name == "paper" {
        RGBColor(150, 150, 150)
    } else {
        COLOURS[i % COLOURS.len()]
    }
}

impl Chart {
    /// The chart alone as an SVG document.
    pub fn svg(&self) -> Result<String, PlotError> {
        let width = match self.kind {
            Kind::Lines { .. } => 640,
            Kind::Bars => (120
                + 40 * self.categories.len() as u32 * self.series.len().max(1) as u32)
                .clamp(480, 1100),
        };
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (width, 380)).into_drawing_area();
            root.fill(&WHITE).map_err(err)?;
            self.draw(&root)?;
            root.present().map_err(err)?;
        }
        Ok(svg)
    }

    fn draw(&self, area: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), PlotError> {
        if self.categories.is_empty() || self.series.is_empty() {
            return Err(err(format!("{}: nothing to plot", self.title)));
        }
        match &self.kind {
            Kind::Lines { x_label } => self.draw_lines(area, x_label),
            Kind::Bars => self.draw_bars(area),
        }
    }

    fn top(&self) -> f64 {
        let top = self
            .series
            .iter()
            .flat_map(|s| s.values.iter().flatten().copied())
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        if top > 0.0 {
            top * 1.1
        } else {
            1.0
        }
    }

    fn draw_bars(&self, area: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), PlotError> {
        let n = self.categories.len() as u32;
        let k = self.series.len() as u32;
        // Each category is `k + 1` slots wide: one per series and a gap.
        let mut chart = ChartBuilder::on(area)
            .caption(&self.title, font(15))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(64)
            .build_cartesian_2d(0u32..n * (k + 1), 0.0..self.top())
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels((n * (k + 1)) as usize)
            .x_label_formatter(&|x| {
                // The label sits under the middle of its category's bars.
                if k > 0 && x % (k + 1) == k / 2 {
                    self.categories
                        .get((x / (k + 1)) as usize)
                        .cloned()
                        .unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .x_label_style(font(11))
            .y_desc(&self.y_label)
            .axis_desc_style(font(12))
            .y_label_style(font(11))
            .y_label_formatter(&|v| compact(*v))
            .draw()
            .map_err(err)?;
        for (i, s) in self.series.iter().enumerate() {
            let c = colour(s, i);
            let bars = s.values.iter().enumerate().filter_map(|(j, v)| {
                let x = j as u32 * (k + 1) + i as u32;
                v.filter(|v| v.is_finite())
                    .map(|v| Rectangle::new([(x, 0.0), (x + 1, v)], c.mix(0.85).filled()))
            });
            chart
                .draw_series(bars)
                .map_err(err)?
                .label(s.name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], c.filled()));
        }
        legend(&mut chart)
    }

    fn draw_lines(
        &self,
        area: &DrawingArea<SVGBackend<'_>, Shift>,
        x_label: &str,
    ) -> Result<(), PlotError> {
        let xs: Vec<f64> = self
            .categories
            .iter()
            .map(|c| c.parse::<f64>().map_err(|_| err(format!("x value {c:?}"))))
            .collect::<Result<_, _>>()?;
        let (lo, hi) = xs
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            });
        let pad = if hi > lo { (hi - lo) * 0.03 } else { 1.0 };
        let mut chart = ChartBuilder::on(area)
            .caption(&self.title, font(15))
            .margin(8)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(lo - pad..hi + pad, 0.0..self.top())
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(&self.y_label)
            .axis_desc_style(font(12))
            .label_style(font(11))
            .x_label_formatter(&|v| compact(*v))
            .y_label_formatter(&|v| compact(*v))
            .draw()
            .map_err(err)?;
        for (i, s) in self.series.iter().enumerate() {
            let c = colour(s, i);
            let points: Vec<(f64, f64)> = xs
                .iter()
                .zip(&s.values)
                .filter_map(|(&x, v)| v.filter(|v| v.is_finite()).map(|v| (x, v)))
                .collect();
            chart
                .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))
                .map_err(err)?
                .label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 14, y)], c.stroke_width(2)));
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled())))
                .map_err(err)?;
        }
        legend(&mut chart)
    }
}

fn legend<'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
) -> Result<(), PlotError> {
    chart
        .configure_series_labels()
        .label_font(font(11))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)
}

/// One of `compare`'s panels: title, unit and the value plotted per run.
type Panel = (&'static str, &'static str, fn(&RunReport) -> f64);

/// `compare`'s measured phase as an SVG of side-by-side bar charts, one bar per FTL: IOPS, p99
/// latency and WAF (SPEC §6 definitions, docs/metrics.md).
pub fn compare_svg(runs: &[RunReport]) -> Result<String, PlotError> {
    if runs.is_empty() {
        return Err(err("no run to plot"));
    }
    let panels: [Panel; 3] = [
        ("IOPS (measured phase)", "IOPS", |r| r.result.iops),
        ("p99 latency (reads and writes)", "µs", |r| {
            r.result.latency_us.all.p99
        }),
        ("WAF (programs / host page writes)", "WAF", |r| r.result.waf),
    ];
    let charts: Vec<Chart> = panels
        .iter()
        .map(|(title, unit, value)| Chart {
            title: title.to_string(),
            y_label: unit.to_string(),
            categories: runs.iter().map(|r| r.ftl.clone()).collect(),
            series: vec![Series {
                name: "measured".into(),
                values: runs.iter().map(|r| Some(value(r))).collect(),
            }],
            kind: Kind::Bars,
        })
        .collect();
    // Wide enough for a horizontal FTL name under each bar.
    let panel = (90 + 72 * runs.len() as u32).max(300);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (panel * charts.len() as u32, 380))
            .into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        for (chart, area) in charts.iter().zip(root.split_evenly((1, charts.len()))) {
            chart.draw(&area)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// `1234567` as `1.23M`: axis labels stay short.
fn compact(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels_are_compact() {
        assert_eq!(compact(869_293.0), "869k");
        assert_eq!(compact(1_234_567.0), "1.23M");
        assert_eq!(compact(0.0), "0");
        assert_eq!(compact(4.48), "4.48");
        assert_eq!(compact(280.1), "280");
        assert_eq!(compact(20.0), "20");
    }

    fn chart(lines: Option<&str>) -> Chart {
        Chart {
            title: "T".into(),
            y_label: "IOPS".into(),
            categories: vec!["1".into(), "2".into(), "4".into()],
            series: vec![
                Series {
                    name: "ours".into(),
                    values: vec![Some(10.0), Some(20.0), Some(35.0)],
                },
                Series {
                    name: "paper".into(),
                    values: vec![None, Some(18.0), None],
                },
            ],
            kind: match lines {
                Some(x) => Kind::Lines { x_label: x.into() },
                None => Kind::Bars,
            },
        }
    }

    #[test]
    fn bars_and_lines_draw_every_series_in_the_embedded_font() {
        for lines in [None, Some("jobs")] {
            let svg = chart(lines).svg().unwrap();
            assert!(svg.starts_with("<svg"), "{lines:?}");
            assert!(svg.contains(FONT_FAMILY), "{lines:?}");
            // The legend names both series.
            let text = |t: &str| svg.contains(&format!("\n{t}\n</text>"));
            assert!(text("ours") && text("paper"), "{lines:?}: {svg}");
        }
        // Bars: three of ours and the paper's one value.
        let svg = chart(None).svg().unwrap();
        let grey = svg.matches("fill=\"#969696\"").count();
        assert_eq!(grey, 2, "one paper bar and its legend swatch");
    }

    #[test]
    fn an_empty_chart_is_an_error() {
        let mut c = chart(None);
        c.series.clear();
        assert!(c.svg().unwrap_err().to_string().contains("nothing to plot"));
        let mut c = chart(Some("x"));
        c.categories[0] = "one".into();
        assert!(c.svg().is_err());
    }
}
