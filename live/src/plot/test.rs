use std::path::PathBuf;
use std::time::Duration;

use taopipe_tuner::{Change, Configuration, Phase, SearchResult, StageTimes, StopReason, Trial};

use super::*;
use crate::report::{Event, Latency, Recovery, StreamReport, TuningReport};
use crate::tune::TuneOptions;

fn trial(composition: &[usize], stage_ms: Vec<f64>, phase: Phase) -> Trial {
    let slowest_ms = stage_ms.iter().copied().fold(0.0, f64::max);
    Trial {
        configuration: Configuration::contiguous(composition, 4).expect("configuration"),
        stage_ms,
        slowest_ms,
        phase,
        rank: None,
    }
}

/// A search of 6 trials whose best is `[3,2]@{0+2,2+2}`.
fn search() -> taopipe_tuner::Report {
    let trials = vec![
        trial(&[5], vec![30.0], Phase::Prior),
        trial(&[3, 2], vec![12.0, 9.0], Phase::Seed),
        trial(&[2, 2, 1], vec![11.0, 14.0, 5.0], Phase::Seed),
        trial(&[4, 1], vec![16.0, 4.0], Phase::Explore),
        trial(&[2, 3], vec![8.0, 13.0], Phase::Focus),
        trial(&[1, 4], vec![4.0, 21.0], Phase::Focus),
    ];
    let best = trials[1].clone();
    let result = SearchResult {
        best: best.configuration,
        best_times: StageTimes::new(best.stage_ms),
        trials,
        tuning: Duration::from_millis(1500),
        stopped: StopReason::Confidence,
    };
    taopipe_tuner::Report::new("pipe-search", Some(10), &result)
}

/// 50 frames over 10 s through two stages: conditions change at 4 s, the watch sees it at
/// 4.6 s, frames 25..30 are trials, the re-tune ends at 6.2 s.
fn report() -> Report {
    let search = search();
    let timeline: Vec<FrameRecord> = (0..50u64)
        .map(|seq| {
            let at_s = 0.2 * (seq + 1) as f64;
            let slow = at_s > 4.0 && at_s < 6.2;
            let trial = (25..30).contains(&seq);
            let configuration = usize::from(at_s >= 6.2);
            FrameRecord {
                seq,
                at_s,
                configuration,
                trial,
                stage_ms: if slow {
                    vec![12.0, 18.0]
                } else {
                    vec![12.0 + 0.1 * (seq % 3) as f64, 9.0]
                },
            }
        })
        .collect();
    let events = vec![
        Event {
            at_s: 4.0,
            frame: 19,
            what: What::Conditions {
                step: "4s:w1=powersave".to_owned(),
            },
        },
        Event {
            at_s: 4.6,
            frame: 22,
            what: What::Change {
                change: Change {
                    stage: 1,
                    was_ms: 9.0,
                    now_ms: 18.0,
                    window_ms: vec![12.0, 18.0],
                    reference_ms: vec![12.0, 9.0],
                },
            },
        },
        Event {
            at_s: 6.2,
            frame: 30,
            what: What::Retuned {
                from: "[3,2]@{0+2,2+2}".to_owned(),
                to: "[2,3]@{0+2,2+2}".to_owned(),
                slowest_ms: 13.0,
                trials: 3,
                took_s: 1.6,
                search: search.clone(),
            },
        },
    ];
    Report {
        version: "test",
        net: "synth".to_owned(),
        isa: "portable".to_owned(),
        cpus: vec![0, 1, 2, 3],
        speeds: vec![1.0, 0.5, 1.0, 1.0],
        emulation: None,
        schedule: Some("4s:w1=powersave".to_owned()),
        tuning: Some(TuningReport {
            options: TuneOptions::default(),
            search,
        }),
        pipeline: vec![
            StageReport {
                units: 2,
                leader: 0,
                width: 2,
                cpus: vec![0, 1],
                ms_per_frame: 8.0,
            },
            StageReport {
                units: 3,
                leader: 2,
                width: 2,
                cpus: vec![2, 3],
                ms_per_frame: 13.0,
            },
        ],
        run: StreamReport {
            frames: 50,
            throughput_fps: 5.0,
            latency_ms: Latency {
                p50: 30.0,
                p99: 45.0,
            },
        },
        baseline: None,
        rate_fps: Some(5.0),
        events,
        configurations: vec!["[3,2]@{0+2,2+2}".to_owned(), "[2,3]@{0+2,2+2}".to_owned()],
        timeline,
        recoveries: vec![Recovery {
            step: "4s:w1=powersave".to_owned(),
            at_s: 4.0,
            settled_fps: 5.0,
            recovery_s: Some(2.2),
            retuned_s: Some(1.5),
            after_retune_fps: Some(5.0),
        }],
        latency_run: None,
        partial: false,
    }
}

/// The file's text, checked to be an SVG document.
fn svg(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("written");
    let body = match text.strip_prefix("<?xml") {
        Some(rest) => &rest[rest.find("?>").expect("xml header ends") + 2..],
        None => &text,
    };
    assert!(
        body.trim_start().starts_with("<svg"),
        "not an SVG: {text:.80}"
    );
    assert!(text.trim_end().ends_with("</svg>"));
    text
}

#[test]
fn run_svg_draws_the_events_and_the_search() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("run.svg");
    run_svg(&report(), &path).expect("drawn");
    let text = svg(&path);
    for label in [
        "4s:w1=powersave",
        "re-tune → [2,3]@{0+2,2+2}",
        "stage1 +100%",
        "initial search, pipe-search",
        "stage0",
        "trial frame",
        "best so far",
    ] {
        assert!(text.contains(label), "no {label:?}");
    }
}

#[test]
fn run_svg_without_tuning_says_so() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("run.svg");
    let mut report = report();
    report.tuning = None;
    report.rate_fps = None;
    run_svg(&report, &path).expect("drawn");
    assert!(svg(&path).contains("not tuned"));
}

#[test]
fn run_svg_of_an_empty_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("run.svg");
    let mut report = report();
    report.timeline.clear();
    report.events.clear();
    report.pipeline.clear();
    run_svg(&report, &path).expect("drawn");
    balance_svg(&report, &dir.path().join("balance.svg")).expect("drawn");
    svg(&path);
}

#[test]
fn balance_svg_labels_each_stage_and_the_slowest() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("balance.svg");
    balance_svg(&report(), &path).expect("drawn");
    let text = svg(&path);
    for label in [
        "stage0 (0+2, 2 units)",
        "stage1 (2+2, 3 units)",
        "slowest 13.00 ms",
        "[2,3]@{0+2,2+2}",
    ] {
        assert!(text.contains(label), "no {label:?}");
    }
}

#[test]
fn throughput_counts_the_last_second() {
    // A frame every 0.25 s (exact in binary) for 10 s: 4 in each full window, the first
    // full one ending at 1 s.
    let mut timeline = report().timeline;
    timeline.truncate(40);
    for (k, f) in timeline.iter_mut().enumerate() {
        f.at_s = 0.25 * (k + 1) as f64;
    }
    let fps = throughput(&timeline);
    assert_eq!(fps.len(), 37);
    assert_eq!(fps[0].0, 1.0);
    assert!(fps.iter().all(|&(_, f)| f == 4.0), "{fps:?}");
}

#[test]
fn trial_spans_join_consecutive_trials() {
    let report = report();
    let spans = trial_spans(&report.timeline, 0.0);
    assert_eq!(spans.len(), 1);
    assert!((spans[0].0 - 5.2).abs() < 1e-9 && (spans[0].1 - 6.0).abs() < 1e-9);
}

#[test]
fn a_missing_folder_is_an_error_naming_the_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("no such folder").join("run.svg");
    for result in [run_svg(&report(), &path), balance_svg(&report(), &path)] {
        let err = result.expect_err("no folder");
        assert!(matches!(err, PlotError::Io { .. }), "{err:?}");
        assert!(
            err.to_string().contains(&path.display().to_string()),
            "{err}"
        );
    }
}

/// Renders the test report into `$TAOPIPE_PLOT_PREVIEW` (a folder) to look at.
#[test]
fn preview() {
    let Some(dir) = std::env::var_os("TAOPIPE_PLOT_PREVIEW") else {
        return;
    };
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir).expect("preview folder");
    let report = report();
    run_svg(&report, &dir.join("run.svg")).expect("drawn");
    balance_svg(&report, &dir.join("balance.svg")).expect("drawn");
    let mut untuned = report;
    untuned.tuning = None;
    run_svg(&untuned, &dir.join("run_untuned.svg")).expect("drawn");
}

#[test]
fn a_one_stage_pipeline_still_gets_its_bar() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("balance.svg");
    let mut one = report();
    one.pipeline.truncate(1);
    balance_svg(&one, &path).expect("drawn");
    let text = svg(&path);
    // The first stage's colour (31, 119, 180) fills a rectangle of positive width (an
    // empty x range drew one of width -50).
    let width = text
        .split("<rect")
        .filter(|r| r.to_lowercase().contains("#1f77b4"))
        .filter_map(|r| {
            r.split("width=\"")
                .nth(1)?
                .split('"')
                .next()?
                .parse::<f64>()
                .ok()
        })
        .next();
    assert!(width.is_some_and(|w| w > 0.0), "bar width {width:?}");
}
