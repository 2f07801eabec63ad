//! SVG plots of results (plotters' SVG backend): what people would rather look at than a table.
//!
//! Text is placed with plotters' size estimate and drawn by the viewer's sans-serif font, so a
//! plot needs no font file and no network to view.

use super::RunReport;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Why a plot could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("plot: {0}")]
pub struct PlotError(String);

fn err(e: impl std::fmt::Display) -> PlotError {
    PlotError(e.to_string())
}

/// One panel: a metric of the measured phase per FTL.
struct Panel {
    title: &'static str,
    value: fn(&RunReport) -> f64,
}

const PANELS: [Panel; 3] = [
    Panel {
        title: "IOPS (measured phase)",
        value: |r| r.result.iops,
    },
    Panel {
        title: "p99 latency, µs (reads and writes)",
        value: |r| r.result.latency_us.all.p99,
    },
    Panel {
        title: "WAF (programs / host page writes)",
        value: |r| r.result.waf,
    },
];

/// `compare`'s measured phase as an SVG of side-by-side bar charts, one bar per FTL: IOPS, p99
/// latency and WAF (SPEC §6 definitions, docs/metrics.md).
pub fn compare_svg(runs: &[RunReport]) -> Result<String, PlotError> {
    if runs.is_empty() {
        return Err(err("no run to plot"));
    }
    // Wide enough for a horizontal FTL name under each bar.
    let width = (PANELS.len() as u32) * (90 + 72 * runs.len() as u32).max(300);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 380)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        for (panel, area) in PANELS.iter().zip(root.split_evenly((1, PANELS.len()))) {
            bars(&area, panel, runs)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Draws `panel`'s bars for `runs` on `area`.
fn bars(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    panel: &Panel,
    runs: &[RunReport],
) -> Result<(), PlotError> {
    let values: Vec<f64> = runs.iter().map(panel.value).collect();
    let top = values.iter().copied().fold(0.0, f64::max);
    let top = if top > 0.0 { top * 1.1 } else { 1.0 };
    // Segments `0..=last`: one per FTL.
    let last = runs.len() as u32 - 1;
    let mut chart = ChartBuilder::on(area)
        .caption(panel.title, ("sans-serif", 15))
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(70)
        .build_cartesian_2d((0..last).into_segmented(), 0.0..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(runs.len())
        .x_label_formatter(&|x| match x {
            SegmentValue::CenterOf(i) => runs
                .get(*i as usize)
                .map_or(String::new(), |r| r.ftl.clone()),
            _ => String::new(),
        })
        .x_label_style(("sans-serif", 12))
        .y_label_formatter(&|v| compact(*v))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(
            Histogram::vertical(&chart)
                .style(BLUE.mix(0.7).filled())
                .margin(6)
                .data((0..=last).zip(values.iter().copied())),
        )
        .map_err(err)?;
    Ok(())
}

/// `1234567` as `1.23M`: axis labels stay short.
fn compact(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || v == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::compact;

    #[test]
    fn axis_labels_are_compact() {
        assert_eq!(compact(869_293.0), "869k");
        assert_eq!(compact(1_234_567.0), "1.23M");
        assert_eq!(compact(0.0), "0");
        assert_eq!(compact(4.48), "4.48");
        assert_eq!(compact(280.1), "280");
    }
}
