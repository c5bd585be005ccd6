//! SVG pictures of an engine run, drawn from its [`Report`].
//!
//! - [`run_svg`]: the run over time, three panels stacked:
//!   1. throughput: frames/s over a sliding 1 s window, taken at each delivery — whether
//!      and how fast the stream recovered after each change;
//!   2. each stage's service time per frame, frames run as re-tune trials hollow over a
//!      shaded band — which stage moved, and what a re-tune cost the stream;
//!   3. the initial search's trajectory (the Pipe-search paper's Fig. 3): each trial's
//!      slowest stage and the best so far — how fast the search converged.
//!
//!   Panels 1 and 2 mark the run's events: changes of conditions (orange), changes the
//!   watch saw (purple, dashed) and re-tunes (green; dashed where one was asked for).
//! - [`balance_svg`]: the served pipeline's stage balance (the paper's Fig. 4): each
//!   stage's ms per frame against the slowest, which bounds the throughput.
//!
//! - [`soak_svg`]: a soak's resident memory against its bound, latency per interval and
//!   throughput, over the run (`plot/soak.rs`).
//!
//! Only plotters' SVG backend is used: text is written as `<text>` elements, so no font
//! library is needed.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use taopipe_tuner::Phase;

use crate::output::{OutputError, write_atomic};
use crate::report::{FrameRecord, Report, StageReport, What};

mod soak;

pub use soak::soak_svg;

/// Why a picture could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlotError {
    /// Drawing failed.
    #[error("drawing {}: {message}", path.display())]
    Draw {
        /// The picture's file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// The file could not be written (the error names it).
    #[error(transparent)]
    Io(#[from] OutputError),
}

/// The throughput window of [`run_svg`], seconds.
pub const THROUGHPUT_WINDOW_S: f64 = 1.0;

const RUN_SIZE: (u32, u32) = (1000, 900);
const FONT: &str = "sans-serif";
/// Pixels right of each plot of [`run_svg`] for its legend.
const LEGEND_W: u32 = 170;

const CONDITIONS: RGBColor = RGBColor(230, 120, 0);
const RETUNE: RGBColor = RGBColor(30, 150, 50);
const CHANGE: RGBColor = RGBColor(140, 70, 180);
/// A change not confirmed by a trial (dismissed).
const DISMISSED: RGBColor = RGBColor(150, 150, 150);
const TRIAL_BAND: RGBColor = RGBColor(255, 235, 160);
const STAGES: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(23, 170, 190),
    RGBColor(140, 86, 75),
    RGBColor(220, 100, 180),
    RGBColor(110, 110, 110),
    RGBColor(170, 170, 30),
    RGBColor(20, 20, 120),
];

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;
type Drawn<T = ()> = Result<T, DrawingAreaErrorKind<std::io::Error>>;

/// Draws the run over time into `path` (module docs): throughput, stage service times
/// and the initial search's trajectory, stacked.
///
/// # Errors
/// The file cannot be written (e.g. its folder is missing), or drawing failed.
pub fn run_svg(report: &Report, path: &Path) -> Result<(), PlotError> {
    write_svg(path, RUN_SIZE, |root| {
        let (top, rest) = root.split_vertically(310);
        let (middle, bottom) = rest.split_vertically(310);
        let end = end_s(report);
        throughput_panel(report, end, &top)?;
        stages_panel(report, end, &middle)?;
        search_panel(report, &bottom)
    })
}

/// Draws the served pipeline's stage balance into `path` (module docs): one bar per
/// stage's ms per frame, a line at the slowest.
///
/// # Errors
/// The file cannot be written (e.g. its folder is missing), or drawing failed.
pub fn balance_svg(report: &Report, path: &Path) -> Result<(), PlotError> {
    let width = (160 * report.pipeline.len() as u32 + 160).max(1000);
    write_svg(path, (width, 500), |root| balance(report, root))
}

/// Renders into a string, then writes it whole ([`write_atomic`]), so that
/// IO errors name the path and a viewer never reads half a picture.
fn write_svg(
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(&Area<'_>) -> Drawn,
) -> Result<(), PlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE)
            .and_then(|()| draw(&root))
            .and_then(|()| root.present())
            .map_err(|e| PlotError::Draw {
                path: path.to_owned(),
                message: e.to_string(),
            })?;
    }
    Ok(write_atomic(path, svg)?)
}

/// The run's last time: last delivery or event, at least 1 s.
fn end_s(report: &Report) -> f64 {
    let frames = report.timeline.iter().map(|f| f.at_s);
    let events = report.events.iter().map(|e| e.at_s);
    frames
        .chain(events)
        .filter(|t| t.is_finite())
        .fold(1.0, f64::max)
}

/// Frames/s over [`THROUGHPUT_WINDOW_S`] ending at each delivery (from the first full
/// window on).
fn throughput(timeline: &[FrameRecord]) -> Vec<(f64, f64)> {
    let mut times: Vec<f64> = timeline
        .iter()
        .map(|f| f.at_s)
        .filter(|t| t.is_finite())
        .collect();
    times.sort_by(f64::total_cmp);
    times
        .iter()
        .filter(|&&t| t >= THROUGHPUT_WINDOW_S)
        .map(|&t| {
            let lo = times.partition_point(|&x| x <= t - THROUGHPUT_WINDOW_S);
            let hi = times.partition_point(|&x| x <= t);
            (t, (hi - lo) as f64 / THROUGHPUT_WINDOW_S)
        })
        .collect()
}

/// A panel's chart over `x` and `y`, the legend space kept free right; its mesh is left
/// to the caller (axis texts, label formats).
fn panel<'a, 'b>(
    area: &'a Area<'b>,
    caption: String,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
) -> Drawn<Chart<'a, 'b>> {
    ChartBuilder::on(area)
        .caption(caption, (FONT, 16))
        .margin(8)
        .margin_right(LEGEND_W)
        .x_label_area_size(32)
        .y_label_area_size(56)
        .build_cartesian_2d(x, y)
}

/// A chart over time (x: 0..`end` s, y: 0..`y_max`), the legend space kept free right.
fn time_chart<'a, 'b>(
    area: &'a Area<'b>,
    caption: String,
    end: f64,
    y_max: f64,
    y_desc: &str,
) -> Drawn<Chart<'a, 'b>> {
    time_chart_over(area, caption, end, 0.0..y_max, y_desc)
}

/// A chart over time (x: 0..`end` s) whose y axis spans `y`, not from 0: where the
/// changes are small against the level (resident memory).
fn time_chart_over<'a, 'b>(
    area: &'a Area<'b>,
    caption: String,
    end: f64,
    y: std::ops::Range<f64>,
    y_desc: &str,
) -> Drawn<Chart<'a, 'b>> {
    let mut chart = panel(area, caption, 0.0..end * 1.01, y)?;
    chart
        .configure_mesh()
        .x_desc("s since start")
        .y_desc(y_desc)
        .light_line_style(RGBColor(246, 246, 246))
        .draw()?;
    Ok(chart)
}

/// What a legend entry shows left of its label.
#[derive(Debug, Clone, Copy)]
enum Sample {
    /// A line.
    Line(ShapeStyle),
    /// A dashed line.
    Dashed(ShapeStyle),
    /// A circle of this radius.
    Dot(ShapeStyle, i32),
    /// A filled box.
    Band(RGBColor),
}

/// A legend entry in the space right of the plot, `row` rows down.
fn legend(area: &Area<'_>, row: usize, label: &str, sample: Sample) -> Drawn {
    let (w, _) = area.dim_in_pixel();
    let x = w as i32 - LEGEND_W as i32 + 12;
    let y = 50 + 18 * row as i32;
    match sample {
        Sample::Line(style) => area.draw(&PathElement::new(vec![(x, y), (x + 20, y)], style))?,
        Sample::Dashed(style) => area.draw(&DashedPathElement::new(
            vec![(x, y), (x + 20, y)],
            5,
            3,
            style,
        ))?,
        Sample::Dot(style, r) => area.draw(&Circle::new((x + 10, y), r, style))?,
        Sample::Band(colour) => area.draw(&Rectangle::new(
            [(x + 2, y - 6), (x + 18, y + 6)],
            colour.filled(),
        ))?,
    }
    let font = TextStyle::from((FONT, 12).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    area.draw(&Text::new(label.to_owned(), (x + 26, y), font))
}

/// The legend of the event markers, from `row` on.
fn events_legend(area: &Area<'_>, report: &Report, row: usize) -> Drawn {
    legend(
        area,
        row,
        "conditions changed",
        Sample::Line(CONDITIONS.stroke_width(2)),
    )?;
    legend(
        area,
        row + 1,
        "change seen",
        Sample::Dashed(CHANGE.stroke_width(2)),
    )?;
    legend(
        area,
        row + 2,
        "re-tuned",
        Sample::Line(RETUNE.stroke_width(2)),
    )?;
    let mut next = row + 3;
    if report.events.iter().any(|e| e.what == What::Forced) {
        legend(
            area,
            next,
            "re-tune asked",
            Sample::Dashed(RETUNE.stroke_width(2)),
        )?;
        next += 1;
    }
    if report
        .events
        .iter()
        .any(|e| matches!(e.what, What::Dismissed { .. }))
    {
        legend(
            area,
            next,
            "change not confirmed",
            Sample::Dashed(DISMISSED.stroke_width(2)),
        )?;
    }
    Ok(())
}

/// The label and line style of an event's marker, and whether it is dashed.
fn marker(what: &What) -> (String, ShapeStyle, bool) {
    match what {
        What::Conditions { step } => (step.clone(), CONDITIONS.stroke_width(2), false),
        What::Change { change } => {
            let pct = (change.now_ms / change.was_ms - 1.0) * 100.0;
            (
                format!("stage{} {pct:+.0}%", change.stage),
                CHANGE.stroke_width(2),
                true,
            )
        }
        What::Forced => ("re-tune asked".to_owned(), RETUNE.stroke_width(2), true),
        What::Dismissed { .. } => ("dismissed".to_owned(), DISMISSED.stroke_width(2), true),
        What::Retuned { to, .. } => (format!("re-tune → {to}"), RETUNE.stroke_width(2), false),
    }
}

/// A vertical marker per event, then the labels on a white ground at the top, in up to 4
/// rows.
fn mark_events(chart: &mut Chart<'_, '_>, report: &Report, end: f64, y_max: f64) -> Drawn {
    let events = || report.events.iter().filter(|e| e.at_s.is_finite());
    for e in events() {
        let (_, style, dashed) = marker(&e.what);
        let line = vec![(e.at_s, 0.0), (e.at_s, y_max)];
        if dashed {
            chart.draw_series(std::iter::once(DashedPathElement::new(line, 6, 4, style)))?;
        } else {
            chart.draw_series(std::iter::once(PathElement::new(line, style)))?;
        }
    }
    // Each label goes in the first of 4 rows where it clears the labels before it (else
    // the row freed the earliest).
    let mut row_ends = [i32::MIN; 4];
    for e in events() {
        let (label, style, _) = marker(&e.what);
        // Text is not measured without a font library: ~6.2 px a character at 11 px.
        let w = (label.chars().count() as f64 * 6.2).ceil() as i32 + 4;
        let right = e.at_s > 0.6 * end;
        let (x0, x1, h) = if right {
            (-w - 1, -1, HPos::Right)
        } else {
            (1, w + 1, HPos::Left)
        };
        let at = chart.backend_coord(&(e.at_s, y_max)).0;
        let row = (0..row_ends.len())
            .find(|&r| row_ends[r] < at + x0 - 4)
            .or_else(|| (0..row_ends.len()).min_by_key(|&r| row_ends[r]))
            .unwrap_or(0);
        row_ends[row] = at + x1;
        let y = 2 + 13 * row as i32;
        let font = (FONT, 11)
            .into_font()
            .color(&style.color)
            .pos(Pos::new(h, VPos::Top));
        chart.draw_series(std::iter::once(
            EmptyElement::at((e.at_s, y_max))
                + Rectangle::new([(x0, y - 1), (x1, y + 12)], WHITE.mix(0.85).filled())
                + Text::new(label, (if right { -3 } else { 3 }, y), font),
        ))?;
    }
    Ok(())
}

/// Panel 1: throughput over time.
fn throughput_panel(report: &Report, end: f64, area: &Area<'_>) -> Drawn {
    let points = throughput(&report.timeline);
    let top = points
        .iter()
        .map(|p| p.1)
        .chain(report.rate_fps)
        .filter(|v| v.is_finite())
        .fold(1.0, f64::max);
    // Headroom for the event labels.
    let y_max = top * 1.35;
    let caption = format!(
        "{}: {} frames, {:.1} frames/s — throughput over a {THROUGHPUT_WINDOW_S} s window",
        report.net, report.run.frames, report.run.throughput_fps
    );
    let mut chart = time_chart(area, caption, end, y_max, "frames/s")?;
    chart.draw_series(std::iter::once(PathElement::new(
        points,
        STAGES[0].stroke_width(2),
    )))?;
    let mut row = 0;
    legend(
        area,
        row,
        "frames/s",
        Sample::Line(STAGES[0].stroke_width(2)),
    )?;
    row += 1;
    if let Some(rate) = report.rate_fps.filter(|r| r.is_finite()) {
        let line = vec![(0.0, rate), (end * 1.01, rate)];
        chart.draw_series(std::iter::once(DashedPathElement::new(
            line,
            4,
            4,
            BLACK.stroke_width(1),
        )))?;
        legend(
            area,
            row,
            "offered rate",
            Sample::Dashed(BLACK.stroke_width(1)),
        )?;
        row += 1;
    }
    mark_events(&mut chart, report, end, y_max)?;
    events_legend(area, report, row + 1)
}

/// Panel 2: each stage's service time per frame; trial frames hollow on a shaded band.
fn stages_panel(report: &Report, end: f64, area: &Area<'_>) -> Drawn {
    let timeline = &report.timeline;
    let stages = timeline.iter().map(|f| f.stage_ms.len()).max().unwrap_or(0);
    let top = timeline
        .iter()
        .flat_map(|f| f.stage_ms.iter().copied())
        .filter(|v| v.is_finite())
        .fold(1.0, f64::max);
    let y_max = top * 1.35;
    let caption = "service time per frame and stage — hollow: frames of re-tune trials".to_owned();
    let mut chart = time_chart(area, caption, end, y_max, "ms")?;
    let bands = trial_spans(timeline, end * 0.003);
    chart.draw_series(
        bands
            .iter()
            .map(|&(a, b)| Rectangle::new([(a, 0.0), (b, y_max)], TRIAL_BAND.filled())),
    )?;
    for i in 0..stages {
        let colour = STAGES[i % STAGES.len()];
        let points = |trial: bool| {
            timeline
                .iter()
                .filter(move |f| f.trial == trial && f.at_s.is_finite())
                .filter_map(move |f| f.stage_ms.get(i).map(|&ms| (f.at_s, ms)))
                .filter(|p| p.1.is_finite())
        };
        chart.draw_series(points(false).map(|p| Circle::new(p, 2, colour.filled())))?;
        chart.draw_series(
            points(true).map(|p| Circle::new(p, 3, colour.mix(0.6).stroke_width(1))),
        )?;
        legend(
            area,
            i,
            &format!("stage{i}"),
            Sample::Dot(colour.filled(), 3),
        )?;
    }
    let grey = RGBColor(90, 90, 90);
    legend(
        area,
        stages,
        "trial frame",
        Sample::Dot(grey.stroke_width(1), 3),
    )?;
    legend(area, stages + 1, "re-tune trials", Sample::Band(TRIAL_BAND))?;
    mark_events(&mut chart, report, end, y_max)?;
    events_legend(area, report, stages + 3)
}

/// The time spans of consecutive trial frames, each at least `min_w` wide.
fn trial_spans(timeline: &[FrameRecord], min_w: f64) -> Vec<(f64, f64)> {
    let mut spans: Vec<(f64, f64)> = Vec::new();
    let mut open = false;
    for f in timeline.iter().filter(|f| f.at_s.is_finite()) {
        match (f.trial, open, spans.last_mut()) {
            (true, true, Some(span)) => span.1 = f.at_s,
            (true, _, _) => spans.push((f.at_s, f.at_s)),
            _ => {}
        }
        open = f.trial;
    }
    for s in &mut spans {
        if s.1 - s.0 < min_w {
            let mid = (s.0 + s.1) / 2.0;
            *s = (mid - min_w / 2.0, mid + min_w / 2.0);
        }
    }
    spans
}

/// The colour and name of a search phase.
fn phase_style(phase: Phase) -> (RGBColor, &'static str) {
    match phase {
        Phase::Prior => (RGBColor(120, 120, 120), "prior (1 stage)"),
        Phase::Current => (BLACK, "serving"),
        Phase::Seed => (RGBColor(31, 119, 180), "seed"),
        Phase::Explore => (RGBColor(23, 170, 190), "explore"),
        Phase::Focus => (RGBColor(214, 39, 40), "focus"),
        Phase::Exhaustive => (RGBColor(140, 86, 75), "exhaustive"),
        Phase::Random => (RGBColor(170, 170, 30), "random"),
        Phase::Confirm => (RGBColor(148, 103, 189), "confirm"),
    }
}

/// Panel 3: the initial search's trials and the best so far, or "not tuned".
fn search_panel(report: &Report, area: &Area<'_>) -> Drawn {
    let Some(tuning) = report
        .tuning
        .as_ref()
        .filter(|t| !t.search.trials.is_empty())
    else {
        let (w, h) = area.dim_in_pixel();
        area.draw(&Rectangle::new(
            [(8, 8), (w as i32 - 8, h as i32 - 8)],
            RGBColor(200, 200, 200).stroke_width(1),
        ))?;
        let font = (FONT, 20)
            .into_font()
            .color(&RGBColor(110, 110, 110))
            .pos(Pos::new(HPos::Center, VPos::Center));
        let text = if report.tuning.is_some() {
            "search trajectory: no trials"
        } else {
            "search trajectory: not tuned"
        };
        return area.draw(&Text::new(text, (w as i32 / 2, h as i32 / 2), font));
    };
    let search = &tuning.search;
    let n = search.trials.len();
    let top = search
        .trials
        .iter()
        .map(|t| t.slowest_ms)
        .filter(|v| v.is_finite())
        .fold(1.0, f64::max);
    let alpha = search
        .alpha
        .map_or_else(String::new, |a| format!(" (α = {a})"));
    let caption = format!(
        "initial search, {}{alpha}: {n} trials in {:.1} s, best {:.1} ms {}",
        search.algorithm, search.tuning_s, search.best.slowest_ms, search.best.configuration
    );
    let mut chart = panel(area, caption, 0.5..n as f64 + 0.5, 0.0..top * 1.1)?;
    let whole = |x: &f64| {
        if (x - x.round()).abs() < 1e-6 {
            format!("{}", x.round())
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .x_desc("trial")
        .y_desc("slowest stage, ms")
        .x_labels(n.clamp(2, 20))
        .x_label_formatter(&whole)
        .light_line_style(RGBColor(246, 246, 246))
        .draw()?;
    let mut best = f64::INFINITY;
    let mut steps = Vec::with_capacity(2 * n);
    for (i, t) in search.trials.iter().enumerate() {
        let x = (i + 1) as f64;
        if best.is_finite() {
            steps.push((x, best));
        }
        if t.slowest_ms < best {
            best = t.slowest_ms;
        }
        if best.is_finite() {
            steps.push((x, best));
        }
    }
    chart.draw_series(std::iter::once(PathElement::new(
        steps,
        BLACK.stroke_width(2),
    )))?;
    let mut phases: Vec<Phase> = Vec::new();
    for (i, t) in search.trials.iter().enumerate() {
        if !phases.contains(&t.phase) {
            phases.push(t.phase);
        }
        let (colour, _) = phase_style(t.phase);
        let p = ((i + 1) as f64, t.slowest_ms);
        chart.draw_series(std::iter::once(Circle::new(p, 4, colour.filled())))?;
        if t.configuration == search.best.configuration {
            chart.draw_series(std::iter::once(Circle::new(p, 8, BLACK.stroke_width(2))))?;
        }
    }
    legend(area, 0, "best so far", Sample::Line(BLACK.stroke_width(2)))?;
    legend(area, 1, "chosen", Sample::Dot(BLACK.stroke_width(2), 6))?;
    for (row, &phase) in phases.iter().enumerate() {
        let (colour, name) = phase_style(phase);
        legend(area, row + 2, name, Sample::Dot(colour.filled(), 4))?;
    }
    Ok(())
}

/// The served configuration as the tuner writes it: `[6,5]@{0+1,1+3}`.
fn configuration(pipeline: &[StageReport]) -> String {
    let units: Vec<String> = pipeline.iter().map(|s| s.units.to_string()).collect();
    let places: Vec<String> = pipeline
        .iter()
        .map(|s| format!("{}+{}", s.leader, s.width))
        .collect();
    format!("[{}]@{{{}}}", units.join(","), places.join(","))
}

/// [`balance_svg`]'s picture.
fn balance(report: &Report, root: &Area<'_>) -> Drawn {
    let pipeline = &report.pipeline;
    let n = pipeline.len();
    let ms = |s: &StageReport| {
        if s.ms_per_frame.is_finite() {
            s.ms_per_frame
        } else {
            0.0
        }
    };
    let slowest = pipeline.iter().map(ms).fold(0.0, f64::max);
    let mean = pipeline.iter().map(ms).sum::<f64>() / n.max(1) as f64;
    let caption = format!(
        "{}: stage balance of {} — slowest {slowest:.1} ms, mean/slowest {:.2}",
        report.net,
        configuration(pipeline),
        if slowest > 0.0 { mean / slowest } else { 0.0 }
    );
    let labels: Vec<String> = pipeline
        .iter()
        .enumerate()
        .map(|(i, s)| format!("stage{i} ({}+{}, {} units)", s.leader, s.width, s.units))
        .collect();
    let label = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    let y_max = slowest.max(1e-3) * 1.2;
    let mut chart = ChartBuilder::on(root)
        .caption(caption, (FONT, 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(60)
        .build_cartesian_2d((0..n.max(2) - 1).into_segmented(), 0.0..y_max)?; // one stage: 2 slots (0..0 draws nothing)
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n.max(1))
        .x_label_formatter(&label)
        .x_label_style((FONT, 13))
        .y_desc("ms per frame")
        .light_line_style(RGBColor(246, 246, 246))
        .draw()?;
    chart.draw_series(pipeline.iter().enumerate().map(|(i, s)| {
        let colour = STAGES[i % STAGES.len()];
        let mut bar = Rectangle::new(
            [
                (SegmentValue::Exact(i), 0.0),
                (SegmentValue::Exact(i + 1), ms(s)),
            ],
            colour.mix(0.8).filled(),
        );
        bar.set_margin(0, 0, 25, 25);
        bar
    }))?;
    // Values above the bars, but the slowest's: the line's label gives it.
    let below = pipeline.iter().enumerate().filter(|(_, s)| ms(s) < slowest);
    chart.draw_series(below.map(|(i, s)| {
        let font =
            TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
        EmptyElement::at((SegmentValue::CenterOf(i), ms(s)))
            + Text::new(format!("{:.2} ms", ms(s)), (0, -4), font)
    }))?;
    if n > 0 {
        let line = vec![
            (SegmentValue::Exact(0), slowest),
            (SegmentValue::Exact(n), slowest),
        ];
        chart.draw_series(std::iter::once(DashedPathElement::new(
            line,
            8,
            5,
            RED.stroke_width(2),
        )))?;
        let fps = if slowest > 0.0 { 1000.0 / slowest } else { 0.0 };
        let font = (FONT, 13)
            .into_font()
            .color(&RED)
            .pos(Pos::new(HPos::Right, VPos::Bottom));
        chart.draw_series(std::iter::once(
            EmptyElement::at((SegmentValue::Exact(n), slowest))
                + Text::new(
                    format!("slowest {slowest:.2} ms: at most {fps:.1} frames/s"),
                    (-6, -4),
                    font,
                ),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod test;
