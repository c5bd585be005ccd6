//! The picture of a soak ([`soak_svg`]), three panels over the run's time:
//! 1. resident memory at every sample, the warm-up shaded, its peak and the bound's limit
//!    dashed — whether memory settled, and how far below the limit;
//! 2. each interval's p50 and p99 latency — whether latency drifted;
//! 3. frames delivered per second between samples — whether the stream slowed down or
//!    stalled at a switch.

use std::path::Path;

use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::{
    Area, Chart, Drawn, PlotError, STAGES, Sample as Swatch, TRIAL_BAND, legend, time_chart,
    time_chart_over,
};
use crate::report::Latency;
use crate::soak::SoakReport;

const SOAK_SIZE: (u32, u32) = (1000, 900);

/// Draws a soak's run into `path` (module docs).
///
/// # Errors
/// The file cannot be written (e.g. its folder is missing), or drawing failed.
pub fn soak_svg(report: &SoakReport, path: &Path) -> Result<(), PlotError> {
    super::write_svg(path, SOAK_SIZE, |root| {
        let (top, rest) = root.split_vertically(300);
        let (middle, bottom) = rest.split_vertically(300);
        let end = report.elapsed_s.max(1.0);
        rss_panel(report, end, &top)?;
        latency_panel(report, end, &middle)?;
        throughput_panel(report, end, &bottom)
    })
}

/// A dashed horizontal line at `y` across the run.
fn level(chart: &mut Chart<'_, '_>, y: f64, end: f64, style: ShapeStyle) -> Drawn {
    let line = vec![(0.0, y), (end * 1.01, y)];
    chart.draw_series(std::iter::once(DashedPathElement::new(line, 6, 4, style)))?;
    Ok(())
}

/// Panel 1: resident memory, the warm-up and the bound.
fn rss_panel(report: &SoakReport, end: f64, area: &Area<'_>) -> Drawn {
    let bound = &report.rss;
    // Zoomed on the level: a MiB of growth shows, and the limit is always in view.
    let rss = report
        .samples
        .iter()
        .map(|s| s.rss_mib)
        .filter(|v| v.is_finite());
    let low = rss.clone().fold(f64::INFINITY, f64::min);
    let high = rss.chain([bound.limit_mib]).fold(0.0, f64::max);
    let margin = bound.headroom_mib.max(1.0);
    let y = if low.is_finite() {
        (low - margin).max(0.0)..high + margin / 2.0
    } else {
        0.0..high.max(1.0)
    };
    let verdict = if report.checks.rss_bounded {
        "within"
    } else {
        "PAST"
    };
    let caption = format!(
        "{}: resident memory — peak after the warm-up {:.1} MiB, {verdict} the limit {:.1} MiB",
        report.net, bound.peak_mib, bound.limit_mib
    );
    let band = [(0.0, y.start), (bound.warmup_s, y.end)];
    let mut chart = time_chart_over(area, caption, end, y, "MiB")?;
    chart.draw_series(std::iter::once(Rectangle::new(band, TRIAL_BAND.filled())))?;
    let red = RGBColor(214, 39, 40);
    let grey = RGBColor(120, 120, 120);
    level(&mut chart, bound.limit_mib, end, red.stroke_width(2))?;
    level(&mut chart, bound.baseline_mib, end, grey.stroke_width(1))?;
    chart.draw_series(std::iter::once(PathElement::new(
        report
            .samples
            .iter()
            .map(|s| (s.at_s, s.rss_mib))
            .collect::<Vec<_>>(),
        STAGES[0].stroke_width(2),
    )))?;
    legend(area, 0, "RSS", Swatch::Line(STAGES[0].stroke_width(2)))?;
    legend(area, 1, "warm-up", Swatch::Band(TRIAL_BAND))?;
    legend(
        area,
        2,
        "warm-up peak",
        Swatch::Dashed(grey.stroke_width(1)),
    )?;
    legend(area, 3, "limit", Swatch::Dashed(red.stroke_width(2)))
}

/// Panel 2: p50 and p99 latency per interval, as steps over each interval.
fn latency_panel(report: &SoakReport, end: f64, area: &Area<'_>) -> Drawn {
    let top = report
        .intervals
        .iter()
        .filter_map(|i| i.latency_ms.map(|l| l.p99))
        .filter(|v| v.is_finite())
        .fold(1.0, f64::max);
    let interval = report
        .intervals
        .first()
        .map_or(0.0, |i| i.end_s - i.start_s);
    let caption = format!(
        "latency per {interval:.0} s interval — over the run p50 {:.1} ms, p99 {:.1} ms",
        report.latency_ms.p50, report.latency_ms.p99
    );
    let mut chart = time_chart(area, caption, end, top * 1.15, "ms")?;
    type Quantile = fn(Latency) -> f64;
    let series: [(&str, RGBColor, Quantile); 2] =
        [("p50", STAGES[0], |l| l.p50), ("p99", STAGES[1], |l| l.p99)];
    for (row, (name, colour, value)) in series.into_iter().enumerate() {
        // One horizontal step per interval with frames; gaps where none came out.
        for i in &report.intervals {
            if let Some(l) = i.latency_ms {
                let y = value(l);
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(i.start_s, y), (i.end_s, y)],
                    colour.stroke_width(2),
                )))?;
            }
        }
        legend(area, row, name, Swatch::Line(colour.stroke_width(2)))?;
    }
    Ok(())
}

/// Panel 3: frames delivered per second between consecutive samples.
fn throughput_panel(report: &SoakReport, end: f64, area: &Area<'_>) -> Drawn {
    // The last sample closes the run, a fraction of a period after the one before: a
    // window that short is mostly noise, and left out.
    let period = report
        .samples
        .get(1)
        .map_or(0.0, |s| s.at_s - report.samples[0].at_s);
    let points: Vec<(f64, f64)> = report
        .samples
        .windows(2)
        .filter(|w| w[1].at_s - w[0].at_s >= period / 2.0 && w[1].at_s > w[0].at_s)
        .map(|w| {
            let fps = (w[1].frames_out - w[0].frames_out) as f64 / (w[1].at_s - w[0].at_s);
            (w[1].at_s, fps)
        })
        .collect();
    let top = points.iter().map(|p| p.1).fold(1.0, f64::max);
    let caption = format!(
        "frames/s between samples — {} frames in, {} out, {:.2} frames/s; {} reconfigurations, {} speed changes",
        report.frames_in,
        report.frames_out,
        report.throughput_fps,
        report.reconfigurations,
        report.speed_changes
    );
    let mut chart = time_chart(area, caption, end, top * 1.15, "frames/s")?;
    chart.draw_series(std::iter::once(PathElement::new(
        points,
        STAGES[2].stroke_width(1),
    )))?;
    legend(area, 0, "frames/s", Swatch::Line(STAGES[2].stroke_width(1)))
}
