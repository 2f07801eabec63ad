//! SVG plots of results: grouped bar charts and line charts, with an optional "paper" series
//! beside ours, written as SVG text.
//!
//! Text is laid out with DejaVu Sans, embedded in the library (`assets/DejaVuSans.ttf`, licence
//! beside it) and measured with `ab_glyph`, so label widths are known, not guessed; the SVG names
//! the family [`FONT_FAMILY`], which `report.html` embeds as an `@font-face` (a standalone SVG
//! falls back to the viewer's sans-serif). No network is needed to view a plot.
//!
//! The layout keeps every part clear of the others: the legend sits right of the plot area,
//! never over data; the value axis spans every value, the paper's too; tick labels are printed
//! at the precision of their step, so no two read the same; category labels wrap at spaces, the
//! chart widening to fit the longest word. Elements carry classes a browser can check geometry
//! by: `panel` (one chart), `plot-area`, `mark` (a bar, line or point), `legend`, `axis` (with
//! its `tick` labels), `title`.

use super::RunReport;
use ab_glyph::{Font, FontRef};
use std::fmt::Write;
use std::sync::OnceLock;

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
const COLOURS: [&str; 6] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
];

fn colour(series: &Series, i: usize) -> &'static str {
    if series.name == "paper" {
        "#969696"
    } else {
        COLOURS[i % COLOURS.len()]
    }
}

// Font sizes (px).
const TITLE: f64 = 15.0;
const AXIS: f64 = 12.0;
const TICK: f64 = 11.0;
// Line height of wrapped text, in font sizes.
const LEADING: f64 = 1.2;
// Outer margin, and the room between an axis and its labels.
const MARGIN: f64 = 10.0;
const GAP: f64 = 6.0;
// The plot area's height, and the least width of a bar chart's or a line chart's.
const PLOT_HEIGHT: f64 = 260.0;
const BARS_WIDTH: f64 = 400.0;
const LINES_WIDTH: f64 = 480.0;
// Line charts keep their points this far inside the plot area, so a point's dot stays in it.
const INSET: f64 = 6.0;
const AXIS_COLOUR: &str = "#444";
// A legend entry's height and its swatch's size.
const ENTRY: f64 = 18.0;
const SWATCH: f64 = 12.0;

/// DejaVu Sans, parsed once.
fn face() -> &'static FontRef<'static> {
    static FACE: OnceLock<FontRef<'static>> = OnceLock::new();
    FACE.get_or_init(|| {
        FontRef::try_from_slice(FONT_TTF)
            .unwrap_or_else(|_| unreachable!("the embedded DejaVu Sans is a valid TrueType font"))
    })
}

/// Font units per em (CSS sizes a font by its em).
fn em() -> f64 {
    face().units_per_em().unwrap_or(2048.0) as f64
}

/// How far glyphs of a `size` px font reach above their baseline.
fn ascent(size: f64) -> f64 {
    face().ascent_unscaled() as f64 / em() * size
}

/// The height of a line of a `size` px font's glyphs (ascent to descent).
fn height(size: f64) -> f64 {
    (face().ascent_unscaled() - face().descent_unscaled()) as f64 / em() * size
}

/// The advance width of `text` in a `size` px font, kerning included (as a browser lays it out).
fn width(text: &str, size: f64) -> f64 {
    let f = face();
    let mut units = 0.0;
    let mut previous = None;
    for c in text.chars() {
        let g = f.glyph_id(c);
        if let Some(p) = previous {
            units += f.kern_unscaled(p, g);
        }
        units += f.h_advance_unscaled(g);
        previous = Some(g);
    }
    units as f64 / em() * size
}

/// The width of the widest of `texts` in tick-label type.
fn widest<S: AsRef<str>>(texts: impl IntoIterator<Item = S>) -> f64 {
    texts
        .into_iter()
        .map(|t| width(t.as_ref(), TICK))
        .fold(0.0, f64::max)
}

/// `text`'s words, where a word led by a unit or a closing mark stays with the one before it
/// ("3 %)", "1.5 ×"): the pieces a label may wrap between.
fn words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = vec![];
    for w in text.split_whitespace() {
        match words.last_mut() {
            Some(last) if w.starts_with(|c: char| !c.is_alphanumeric() && c != '(') => {
                last.push(' ');
                last.push_str(w);
            }
            _ => words.push(w.to_string()),
        }
    }
    words
}

/// `text`'s [`words`] in lines no wider than `max` (a longer word alone on its line).
fn wrap(text: &str, size: f64, max: f64) -> Vec<String> {
    let mut lines: Vec<String> = vec![];
    for word in words(text) {
        match lines.last_mut() {
            Some(line) if width(&format!("{line} {word}"), size) <= max => {
                line.push(' ');
                line.push_str(&word);
            }
            _ => lines.push(word),
        }
    }
    lines
}

/// `s` as XML (and HTML) text or attribute value.
pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Where a text's anchor sits on it.
#[derive(Clone, Copy)]
enum Anchor {
    Start,
    Middle,
    End,
}

/// An SVG element list under construction.
#[derive(Default)]
struct Svg(String);

impl Svg {
    /// `lines` of text of `class` at `size` px, the first line's top at `top`, anchored at `x`.
    fn text<S: AsRef<str>>(
        &mut self,
        class: &str,
        x: f64,
        top: f64,
        size: f64,
        anchor: Anchor,
        lines: &[S],
    ) {
        let anchor = match anchor {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        };
        let _ = write!(
            self.0,
            "<text class=\"{class}\" x=\"{x:.1}\" y=\"{:.1}\" font-size=\"{size}\" text-anchor=\"{anchor}\">",
            top + ascent(size)
        );
        for (i, line) in lines.iter().enumerate() {
            let dy = if i == 0 { 0.0 } else { size * LEADING };
            let _ = write!(
                self.0,
                "<tspan x=\"{x:.1}\" dy=\"{dy:.1}\">{}</tspan>",
                escape(line.as_ref())
            );
        }
        self.0 += "</text>\n";
    }

    /// One line of text turned a quarter left (reading upwards), centred on `y`, its glyphs'
    /// top edge at `left`.
    fn text_up(&mut self, class: &str, left: f64, y: f64, size: f64, text: &str) {
        let x = left + ascent(size);
        let _ = writeln!(
            self.0,
            "<text class=\"{class}\" x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{size}\" text-anchor=\"middle\" transform=\"rotate(-90 {x:.1} {y:.1})\">{}</text>",
            escape(text)
        );
    }

    fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), stroke: &str, width: f64) {
        let _ = writeln!(
            self.0,
            "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" stroke=\"{stroke}\" stroke-width=\"{width}\"/>"
        );
    }

    fn rect(&mut self, class: &str, (x, y): (f64, f64), (w, h): (f64, f64), fill: &str) {
        let _ = writeln!(
            self.0,
            "<rect class=\"{class}\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{fill}\"/>"
        );
    }

    fn open(&mut self, class: &str) {
        let _ = writeln!(self.0, "<g class=\"{class}\">");
    }

    fn close(&mut self) {
        self.0 += "</g>\n";
    }
}

/// A linear axis from `lo` to `hi` in steps of `step` (1, 2 or 5 times a power of ten).
#[derive(Clone, Debug, PartialEq)]
struct Axis {
    lo: f64,
    hi: f64,
    step: f64,
}

impl Axis {
    /// The axis with about `ticks` steps that spans `lo..=hi`, ending on ticks.
    fn spanning(lo: f64, hi: f64, ticks: f64) -> Axis {
        let hi = if hi > lo { hi } else { lo + 1.0 };
        let raw = (hi - lo) / ticks;
        let magnitude = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0]
            .into_iter()
            .map(|m| m * magnitude)
            .find(|s| *s >= raw * (1.0 - 1e-9))
            .unwrap_or(10.0 * magnitude);
        Axis {
            lo: (lo / step + 1e-9).floor() * step,
            hi: (hi / step - 1e-9).ceil() * step,
            step,
        }
    }

    /// The tick values, `lo` to `hi`: whole multiples of the step (zero is exactly 0).
    fn ticks(&self) -> Vec<f64> {
        let first = (self.lo / self.step).round() as i64;
        let last = (self.hi / self.step).round() as i64;
        (first..=last).map(|i| i as f64 * self.step).collect()
    }

    /// `v` as a tick label: in thousands ("20k") or millions ("1.2M") on a large axis, with as
    /// many decimals as the step needs, so every tick reads differently.
    fn label(&self, v: f64) -> String {
        let big = self.lo.abs().max(self.hi.abs());
        let (unit, suffix) = match big {
            b if b >= 1e6 => (1e6, "M"),
            b if b >= 1e4 => (1e3, "k"),
            _ => (1.0, ""),
        };
        if v == 0.0 {
            return "0".into();
        }
        let decimals = (-((self.step / unit).log10() + 1e-9).floor()).max(0.0) as usize;
        format!("{:.*}{suffix}", decimals, v / unit)
    }

    /// Where `v` falls between `from` (at `lo`) and `to` (at `hi`).
    fn at(&self, v: f64, from: f64, to: f64) -> f64 {
        from + (v - self.lo) / (self.hi - self.lo) * (to - from)
    }
}

/// One chart laid out: its SVG elements from (0, 0) and its size.
struct Panel {
    body: String,
    width: f64,
    height: f64,
}

/// How a chart's x axis is laid out: bars of categories, or numeric.
enum X {
    /// A group of bars per category, `group` px wide; each category's label in lines.
    Bars {
        group: f64,
        labels: Vec<Vec<String>>,
    },
    /// A numeric axis described by `label`; the x value of each point.
    Lines {
        axis: Axis,
        xs: Vec<f64>,
        label: String,
    },
}

/// Where a chart's parts go, from its measured text.
struct Layout {
    /// The value axis and its tick labels.
    y: Axis,
    y_ticks: Vec<(f64, String)>,
    x: X,
    /// The plot area's left and right edges, its bottom and top (`y0 > y1`, SVG's y grows down).
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    /// Whether the legend is drawn (right of the plot area).
    legend: bool,
    /// The whole chart's width.
    width: f64,
}

impl Layout {
    /// Where value `v` falls on the y axis. Line charts keep their points [`INSET`] inside the
    /// plot area, so a point's dot stays in it; bars stand on its bottom edge.
    fn y_at(&self, v: f64) -> f64 {
        let inset = match self.x {
            X::Lines { .. } => INSET,
            X::Bars { .. } => 0.0,
        };
        self.y.at(v, self.y0 - inset, self.y1 + inset)
    }

    /// Where x value `v` of a line chart falls.
    fn x_at(&self, axis: &Axis, v: f64) -> f64 {
        axis.at(v, self.x0 + INSET, self.x1 - INSET)
    }
}

impl Chart {
    /// The chart alone as an SVG document.
    pub fn svg(&self) -> Result<String, PlotError> {
        // A single series needs no legend: the title and axes name it.
        let panel = self.panel(self.series.len() > 1)?;
        Ok(document(&[panel]))
    }

    fn panel(&self, legend: bool) -> Result<Panel, PlotError> {
        let l = self.layout(legend)?;
        let mut svg = Svg::default();
        svg.text(
            "title",
            l.width / 2.0,
            MARGIN,
            TITLE,
            Anchor::Middle,
            &[&self.title],
        );
        svg.rect(
            "plot-area",
            (l.x0, l.y1),
            (l.x1 - l.x0, l.y0 - l.y1),
            "none",
        );
        self.draw_y_axis(&l, &mut svg);
        let axis_bottom = self.draw_x_axis(&l, &mut svg);
        self.draw_marks(&l, &mut svg);
        let legend_bottom = self.draw_legend(&l, &mut svg);
        Ok(Panel {
            body: svg.0,
            width: l.width,
            height: axis_bottom.max(legend_bottom) + MARGIN,
        })
    }

    fn layout(&self, legend: bool) -> Result<Layout, PlotError> {
        if self.categories.is_empty() || self.series.is_empty() {
            return Err(err(format!("{}: nothing to plot", self.title)));
        }
        let (lo, hi) = self
            .series
            .iter()
            .flat_map(|s| s.values.iter().flatten().copied())
            .filter(|v| v.is_finite())
            .fold((0.0f64, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
        let y = Axis::spanning(lo, hi, 6.0);
        let y_ticks: Vec<(f64, String)> = y.ticks().into_iter().map(|v| (v, y.label(v))).collect();
        let n = self.categories.len() as f64;
        let mut x = match &self.kind {
            Kind::Bars => X::Bars {
                // Room for every bar, for the longest word of a label, and not too narrow.
                group: (20.0 * self.series.len() as f64)
                    .max(widest(self.categories.iter().flat_map(|c| words(c))) + 2.0 * GAP)
                    .max(BARS_WIDTH / n),
                labels: vec![],
            },
            Kind::Lines { x_label } => {
                let xs: Vec<f64> = self
                    .categories
                    .iter()
                    .map(|c| {
                        let x = c.parse::<f64>().ok().filter(|x| x.is_finite());
                        x.ok_or_else(|| err(format!("x value {c:?}")))
                    })
                    .collect::<Result<_, _>>()?;
                let (lo, hi) = xs
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                        (a.min(v), b.max(v))
                    });
                X::Lines {
                    axis: Axis::spanning(lo, hi, 6.0),
                    xs,
                    label: x_label.clone(),
                }
            }
        };

        // Left to right: margin, y label turned up, tick labels, ticks, the plot area, legend.
        let left = MARGIN + height(AXIS) + GAP + widest(y_ticks.iter().map(|(_, t)| t)) + GAP;
        let legend_width = match legend {
            true => 2.0 * GAP + SWATCH + GAP + widest(self.series.iter().map(|s| &s.name)),
            false => 0.0,
        };
        let (mut plot_width, overhang) = match &x {
            X::Bars { group, .. } => (group * n, 0.0),
            // The last x tick label is centred on the plot area's right edge.
            X::Lines { axis, .. } => (LINES_WIDTH, width(&axis.label(axis.hi), TICK) / 2.0),
        };
        let right = legend_width.max(overhang) + MARGIN;
        // A title wider than the chart widens the plot area.
        plot_width = plot_width.max(width(&self.title, TITLE) + 2.0 * MARGIN - left - right);
        if let X::Bars { group, labels } = &mut x {
            *group = plot_width / n;
            *labels = self
                .categories
                .iter()
                .map(|c| wrap(c, TICK, *group - GAP))
                .collect();
        }
        let top = MARGIN + height(TITLE) + 2.0 * GAP;
        let plot_height = PLOT_HEIGHT.max(width(&self.y_label, AXIS) + 2.0 * GAP);
        Ok(Layout {
            y,
            y_ticks,
            x,
            x0: left,
            x1: left + plot_width,
            y0: top + plot_height,
            y1: top,
            legend,
            width: left + plot_width + right,
        })
    }

    /// Grid lines, the y axis, its ticks and their labels, its name.
    fn draw_y_axis(&self, l: &Layout, svg: &mut Svg) {
        svg.open("grid");
        for (v, _) in &l.y_ticks {
            svg.line((l.x0, l.y_at(*v)), (l.x1, l.y_at(*v)), "#e4e4e4", 1.0);
        }
        svg.close();
        svg.open("axis y");
        svg.line((l.x0, l.y0), (l.x0, l.y1), AXIS_COLOUR, 1.0);
        for (v, label) in &l.y_ticks {
            let at = l.y_at(*v);
            svg.line((l.x0 - 4.0, at), (l.x0, at), AXIS_COLOUR, 1.0);
            let top = at - height(TICK) / 2.0;
            svg.text("tick", l.x0 - GAP, top, TICK, Anchor::End, &[label]);
        }
        svg.text_up("label", MARGIN, (l.y0 + l.y1) / 2.0, AXIS, &self.y_label);
        svg.close();
    }

    /// The x axis with its labels (and name, for lines); returns the bottom of what it drew.
    fn draw_x_axis(&self, l: &Layout, svg: &mut Svg) -> f64 {
        svg.open("axis x");
        svg.line((l.x0, l.y0), (l.x1, l.y0), AXIS_COLOUR, 1.0);
        let mut bottom = l.y0 + GAP + 2.0;
        match &l.x {
            X::Bars { group, labels } => {
                for (j, label) in labels.iter().enumerate() {
                    let middle = l.x0 + (j as f64 + 0.5) * group;
                    svg.text("tick", middle, bottom, TICK, Anchor::Middle, label);
                }
                let lines = labels.iter().map(Vec::len).max().unwrap_or(0);
                bottom += lines as f64 * TICK * LEADING;
            }
            X::Lines { axis, label, .. } => {
                for v in axis.ticks() {
                    let at = l.x_at(axis, v);
                    svg.line((at, l.y0), (at, l.y0 + 4.0), AXIS_COLOUR, 1.0);
                    svg.text("tick", at, bottom, TICK, Anchor::Middle, &[axis.label(v)]);
                }
                bottom += height(TICK) + GAP;
                let middle = (l.x0 + l.x1) / 2.0;
                svg.text("label", middle, bottom, AXIS, Anchor::Middle, &[label]);
                bottom += height(AXIS);
            }
        }
        svg.close();
        bottom
    }

    /// The bars, or the lines and their points.
    fn draw_marks(&self, l: &Layout, svg: &mut Svg) {
        svg.open("marks");
        let k = self.series.len() as f64;
        for (i, s) in self.series.iter().enumerate() {
            let c = colour(s, i);
            let values = s
                .values
                .iter()
                .enumerate()
                .filter_map(|(j, v)| v.filter(|v| v.is_finite()).map(|v| (j, v)));
            match &l.x {
                X::Bars { group, .. } => {
                    // The bars of a category fill 80 % of its group, centred, at most 40 px each.
                    let bar = (group * 0.8 / k).min(40.0);
                    for (j, v) in values {
                        let left = l.x0 + (j as f64 + 0.5) * group + (i as f64 - k / 2.0) * bar;
                        let (base, end) = (l.y_at(0.0), l.y_at(v));
                        svg.rect("mark", (left, base.min(end)), (bar, (base - end).abs()), c);
                    }
                }
                X::Lines { axis, xs, .. } => {
                    let points: Vec<(f64, f64)> = values
                        .filter_map(|(j, v)| xs.get(j).map(|&x| (l.x_at(axis, x), l.y_at(v))))
                        .collect();
                    let list: Vec<String> = points
                        .iter()
                        .map(|(x, y)| format!("{x:.1},{y:.1}"))
                        .collect();
                    // A line needs two points (a lone point is its dot).
                    if points.len() > 1 {
                        let _ = writeln!(
                            svg.0,
                            "<polyline class=\"mark\" points=\"{}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"/>",
                            list.join(" ")
                        );
                    }
                    for (x, y) in points {
                        let _ = writeln!(
                            svg.0,
                            "<circle class=\"mark\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\" fill=\"{c}\"/>"
                        );
                    }
                }
            }
        }
        svg.close();
    }

    /// The legend right of the plot area, a swatch and a name per series (if the layout has
    /// one); returns its bottom.
    fn draw_legend(&self, l: &Layout, svg: &mut Svg) -> f64 {
        if !l.legend {
            return 0.0;
        }
        svg.open("legend");
        let left = l.x1 + 2.0 * GAP;
        for (i, s) in self.series.iter().enumerate() {
            let middle = l.y1 + (i as f64 + 0.5) * ENTRY;
            let c = colour(s, i);
            match l.x {
                X::Bars { .. } => {
                    svg.rect("swatch", (left, middle - SWATCH / 2.0), (SWATCH, SWATCH), c)
                }
                X::Lines { .. } => svg.line((left, middle), (left + SWATCH, middle), c, 2.0),
            }
            let top = middle - height(TICK) / 2.0;
            svg.text(
                "name",
                left + SWATCH + GAP,
                top,
                TICK,
                Anchor::Start,
                &[&s.name],
            );
        }
        svg.close();
        l.y1 + self.series.len() as f64 * ENTRY
    }
}

/// `panels` side by side in one SVG document, on white.
fn document(panels: &[Panel]) -> String {
    let width: f64 = panels.iter().map(|p| p.width).sum::<f64>().ceil();
    let height = panels.iter().map(|p| p.height).fold(0.0, f64::max).ceil();
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"'{FONT_FAMILY}', sans-serif\" \
         fill=\"#222\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    let mut x = 0.0;
    for p in panels {
        let _ = writeln!(
            out,
            "<g class=\"panel\" transform=\"translate({x:.1} 0)\">\n{}</g>",
            p.body
        );
        x += p.width;
    }
    out + "</svg>\n"
}

/// One of `compare`'s panels: title, unit and the value plotted per run.
type Metric = (&'static str, &'static str, fn(&RunReport) -> f64);

/// `compare`'s measured phase as an SVG of side-by-side bar charts, one bar per FTL: IOPS, p99
/// latency and WAF (SPEC §6 definitions, docs/metrics.md).
pub fn compare_svg(runs: &[RunReport]) -> Result<String, PlotError> {
    if runs.is_empty() {
        return Err(err("no run to plot"));
    }
    let metrics: [Metric; 3] = [
        ("IOPS (measured phase)", "IOPS", |r| r.result.iops),
        ("p99 latency (reads and writes)", "µs", |r| {
            r.result.latency_us.all.p99
        }),
        ("WAF (programs / host page writes)", "WAF", |r| r.result.waf),
    ];
    let panels = metrics
        .iter()
        .map(|(title, unit, value)| {
            Chart {
                title: title.to_string(),
                y_label: unit.to_string(),
                categories: runs.iter().map(|r| r.ftl.clone()).collect(),
                series: vec![Series {
                    name: "measured".into(),
                    values: runs.iter().map(|r| Some(value(r))).collect(),
                }],
                kind: Kind::Bars,
            }
            .panel(false)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(document(&panels))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_never_repeat_and_the_axis_spans_every_value() {
        for (hi, expect) in [
            // The training share: 0.01 and 0.03 used to appear twice.
            (0.0352, vec!["0", "0.01", "0.02", "0.03", "0.04"]),
            (1.0, vec!["0", "0.2", "0.4", "0.6", "0.8", "1.0"]),
            (9.1, vec!["0", "2", "4", "6", "8", "10"]),
            (188_568.0, vec!["0", "50k", "100k", "150k", "200k"]),
            (1_234_567.0, vec!["0", "0.5M", "1.0M", "1.5M"]),
            (0.0, vec!["0", "0.2", "0.4", "0.6", "0.8", "1.0"]),
        ] {
            let a = Axis::spanning(0.0, hi, 6.0);
            let labels: Vec<String> = a.ticks().iter().map(|v| a.label(*v)).collect();
            assert_eq!(labels, expect, "up to {hi}");
            assert!(a.hi >= hi && a.lo == 0.0);
        }
        for (lo, hi) in [(1.0, 64.0), (3.0, 50.0), (0.001, 0.0371), (-3.5, 12.0)] {
            let a = Axis::spanning(lo, hi, 6.0);
            let labels: Vec<String> = a.ticks().iter().map(|v| a.label(*v)).collect();
            let mut distinct = labels.clone();
            distinct.dedup();
            assert_eq!(distinct, labels, "{lo}..{hi}");
            assert!(a.lo <= lo && a.hi >= hi && labels.len() >= 4, "{labels:?}");
        }
    }

    #[test]
    fn long_labels_wrap_at_spaces() {
        let max = width("randwrite default", TICK);
        assert_eq!(
            wrap("randwrite default precondition", TICK, max),
            ["randwrite default", "precondition"]
        );
        assert_eq!(wrap("one", TICK, 1.0), ["one"]);
        assert_eq!(
            wrap("random, log_blocks=8 (3 %)", TICK, 1.0),
            ["random,", "log_blocks=8", "(3 %)"]
        );
        assert!(width("WW", TICK) > width("ii", TICK) && width("", TICK) == 0.0);
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
                    values: vec![None, Some(48.0), None],
                },
            ],
            kind: match lines {
                Some(x) => Kind::Lines { x_label: x.into() },
                None => Kind::Bars,
            },
        }
    }

    /// The numbers of `attr="…"` in `element`.
    fn attr(element: &str, attr: &str) -> f64 {
        let start = element.find(&format!(" {attr}=\"")).unwrap() + attr.len() + 3;
        element[start..].split('"').next().unwrap().parse().unwrap()
    }

    #[test]
    fn bars_and_lines_draw_every_series_with_a_legend_beside_the_plot_area() {
        for lines in [None, Some("jobs")] {
            let svg = chart(lines).svg().unwrap();
            assert!(
                svg.starts_with("<svg") && svg.contains(FONT_FAMILY),
                "{lines:?}"
            );
            let legend = svg.split("<g class=\"legend\">").nth(1).unwrap();
            assert!(
                legend.contains(">ours<") && legend.contains(">paper<"),
                "{svg}"
            );
            let area = svg.lines().find(|l| l.contains("plot-area")).unwrap();
            let right = attr(area, "x") + attr(area, "width");
            let top = attr(area, "y");
            // Every legend element starts right of the plot area.
            for e in legend
                .lines()
                .skip(1)
                .take_while(|l| !l.starts_with("</g>"))
            {
                let x = if e.starts_with("<line") {
                    attr(e, "x1")
                } else {
                    attr(e, "x")
                };
                assert!(x > right, "{e} over the plot area (right edge {right})");
            }
            // Every mark within the plot area: the paper's 48 too.
            for m in svg.lines().filter(|l| l.contains("class=\"mark\"")) {
                let y = match m {
                    m if m.starts_with("<rect") => attr(m, "y"),
                    m if m.starts_with("<circle") => attr(m, "cy") - attr(m, "r"),
                    _ => continue,
                };
                assert!(y >= top, "{m} above the plot area (top {top})");
            }
        }
        // Bars: three of ours and the paper's one value, the paper's grey.
        let svg = chart(None).svg().unwrap();
        let marks: Vec<&str> = svg.lines().filter(|l| l.contains("\"mark\"")).collect();
        assert_eq!(marks.len(), 4);
        assert_eq!(marks.iter().filter(|m| m.contains("#969696")).count(), 1);
        // One series: no legend.
        let mut one = chart(None);
        one.series.pop();
        assert!(!one.svg().unwrap().contains("legend"));
    }

    #[test]
    fn a_category_label_wraps_and_widens_the_chart_to_its_longest_word() {
        let mut c = chart(None);
        c.categories = [
            "randwrite default precondition",
            "randwrite default measure",
            "x",
        ]
        .map(String::from)
        .to_vec();
        let svg = c.svg().unwrap();
        assert!(svg.contains(">precondition</tspan>"), "{svg}");
        let area = svg.lines().find(|l| l.contains("plot-area")).unwrap();
        assert!(attr(area, "width") / 3.0 >= width("precondition", TICK) + GAP);
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
