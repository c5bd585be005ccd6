//! The examples' outputs, as processes: output paths checked before any work, `--json -`
//! leaving stdout to the JSON alone, reports written whole, and `compare` failing when a
//! planner fails. Tiny nets and one frame, so each run takes milliseconds (calibrate, whose
//! grid has no smaller setting, a few seconds; soak, which runs by the clock, two).
//!
//! Build the examples first when filtering: `cargo build --release --examples`.

mod common;

use std::path::Path;

use common::{run_example, scratch, text};

/// Every example with `--json`, with arguments that make its run short.
const FAST: &[(&str, &[&str])] = &[
    (
        "frame",
        &["--net", "synth1", "--width", "1", "--frames", "1"],
    ),
    // The tuning driver of vgg16, alexnet, resnet50 and synthetic (common::tune).
    (
        "synthetic",
        &[
            "--net", "synth1", "--frames", "1", "--tune", "alpha=1", "--reps", "1",
        ],
    ),
    ("pipeline", &["--net", "synth1", "--frames", "1"]),
    (
        "compare",
        &[
            "--net",
            "synth1",
            "--planners",
            "layer-parallel,pipe-search",
            "--tune",
            "alpha=1",
            "--reps",
            "1",
            "--frames",
            "1",
        ],
    ),
    (
        "runtime_bench",
        &[
            "--workers",
            "2",
            "--tasks",
            "100",
            "--reps",
            "1",
            "--warmup",
            "0",
            "--fj-iters",
            "10",
        ],
    ),
    ("runtime_demo", &["--tasks", "5", "--elements", "1000"]),
    ("calibrate", &["--cpus", "0", "--reps", "1"]),
    (
        "soak",
        &[
            "--net",
            "synth1",
            "--seconds",
            "2",
            "--switch-every",
            "0.3",
            "--speeds-every",
            "0.1",
            "--interval",
            "1",
        ],
    ),
];

fn args<'a>(fast: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    fast.iter().chain(more).copied().collect()
}

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// Asserts that `name` failed at once on `bad`: a non-zero exit, the path and `why` in
/// stderr, and nothing on stdout (every example prints its setup before working).
fn assert_refused(name: &str, run: &[&str], bad: &Path, why: &str) {
    let out = run_example(name, run);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{name} {run:?} was accepted");
    assert!(
        stderr.contains(utf8(bad)) && stderr.contains(why),
        "{name}: the error should name {} and say `{why}`: {stderr}",
        bad.display()
    );
    assert!(
        out.stdout.is_empty(),
        "{name} started working before refusing {}: {}",
        bad.display(),
        text(&out.stdout)
    );
}

#[test]
fn a_bad_output_path_is_refused_before_any_work_naming_it() {
    let dir = scratch("outputs-refused");
    let missing = dir.join("no-such-folder").join("report.json");
    for (name, fast) in FAST {
        assert_refused(
            name,
            &args(fast, &["--json", utf8(&missing)]),
            &missing,
            "does not exist",
        );
    }
    let file = dir.join("a-file");
    std::fs::write(&file, "").expect("a file");
    let (frame, synthetic, calibrate) = (FAST[0].1, FAST[1].1, FAST[6].1);
    assert_refused(
        "frame",
        &args(frame, &["--output", utf8(&dir)]),
        &dir,
        "is a folder",
    );
    assert_refused(
        "frame",
        &args(frame, &["--json", utf8(&dir)]),
        &dir,
        "is a folder",
    );
    let under_file = file.join("pictures");
    assert_refused(
        "synthetic",
        &args(synthetic, &["--plots", utf8(&under_file)]),
        &under_file,
        "is not a folder",
    );
    assert_refused(
        "calibrate",
        &args(calibrate, &["--out", utf8(&missing)]),
        &missing,
        "does not exist",
    );
    let names: Vec<_> = std::fs::read_dir(&dir)
        .expect("scratch")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["a-file"], "the checks leave no file behind");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_to_stdout_leaves_stdout_to_the_json_alone() {
    let dir = scratch("outputs-stdout");
    let cal = dir.join("cal.json");
    for (name, fast) in FAST {
        let mut run = args(fast, &["--json", "-"]);
        if *name == "calibrate" {
            run.extend(["--out", utf8(&cal)]);
        }
        let out = run_example(name, &run);
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{name}: {stderr}");
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{name}: stdout is not one JSON value ({e}): {}",
                text(&out.stdout)
            )
        });
        assert!(json.is_object(), "{name}: {json}");
        // The text output went to stderr instead.
        assert!(stderr.lines().count() >= 3, "{name}: {stderr}");
    }
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cal).expect("--out")).expect("JSON");
    assert!(saved["samples"].is_array(), "{saved}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_frame_trace_holds_every_rank_of_every_layer() {
    let dir = scratch("outputs-trace");
    let (trace, report) = (dir.join("trace.json"), dir.join("report.json"));
    let out = run_example(
        "frame",
        &[
            "--net",
            "synth1",
            "--width",
            "2",
            "--frames",
            "3",
            "--trace",
            utf8(&trace),
            "--json",
            utf8(&report),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json = |p: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).expect("written")).expect("JSON")
    };
    let (trace, report) = (json(&trace), json(&report));
    let layers = report["layers"].as_u64().expect("layers");
    let events = trace["traceEvents"].as_array().expect("events");
    // Two ranks of every layer in each of the three frames, each on its worker's row.
    assert_eq!(events.len() as u64, 3 * 2 * layers, "{trace}");
    assert!(
        events
            .iter()
            .all(|e| e["ph"] == "X" && e["dur"].as_f64() >= Some(0.0))
    );
    for worker in 0..2 {
        let on = events.iter().filter(|e| e["tid"] == worker).count() as u64;
        assert_eq!(on, 3 * layers, "worker {worker}");
    }
    let timeline = &report["timeline"];
    assert_eq!(
        (timeline["spans"].as_u64(), timeline["frames"].as_u64()),
        (Some(6 * layers), Some(3))
    );
    assert!(
        timeline["busy_ms_per_frame"].as_f64() > Some(0.0),
        "{timeline}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reports_land_whole_and_a_plots_folder_is_created() {
    let dir = scratch("outputs-written");
    let (report, output, plots) = (
        dir.join("report.json"),
        dir.join("out.f32"),
        dir.join("new").join("pictures"),
    );
    std::fs::write(&report, "an older, longer report to be replaced").expect("old report");
    let out = run_example(
        "frame",
        &args(
            FAST[0].1,
            &["--json", utf8(&report), "--output", utf8(&output)],
        ),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("JSON");
    assert_eq!(json["net"], "synth1");
    assert!(std::fs::metadata(&output).expect("--output").len() > 0);

    let out = run_example("synthetic", &args(FAST[1].1, &["--plots", utf8(&plots)]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    for svg in ["run.svg", "balance.svg"] {
        assert!(plots.join(svg).is_file(), "{svg} in {}", plots.display());
    }
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("scratch")
        .map(|e| e.expect("entry").file_name())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["new", "out.f32", "report.json"],
        "no temporary file left"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `compare --net synth1 --frames 1` with `more`.
fn compare(more: &[&str]) -> std::process::Output {
    run_example(
        "compare",
        &args(&["--net", "synth1", "--frames", "1"], more),
    )
}

#[test]
fn compare_fails_when_a_planner_fails_and_still_prints_the_table() {
    let dir = scratch("outputs-compare");
    let (bad, report) = (dir.join("bad-calibration.json"), dir.join("compare.json"));
    // A calibration that parses (a file that does not is refused at start, tests/bad_input.rs)
    // but was taken on core types no runtime has (the first starts at worker 0): Pipe-it
    // fails when it plans.
    std::fs::write(
        &bad,
        r#"{"version": 1, "machine": {"description": "elsewhere", "workers": 6,
            "core_types": [{"leader": 5, "cores": 1, "speed": 1.0, "cluster": 0}]},
            "samples": []}"#,
    )
    .expect("bad calibration");
    let out = compare(&[
        "--planners",
        "layer-parallel,pipe-it",
        "--calibration",
        utf8(&bad),
        "--json",
        utf8(&report),
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(!out.status.success(), "a failed planner exited 0: {stdout}");
    assert!(
        stderr.contains("1 of 2 planner(s) failed: pipe-it") && stderr.contains(utf8(&bad)),
        "stderr names the failure and its cause: {stderr}"
    );
    let row = |planner: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(planner))
            .unwrap_or_else(|| panic!("no {planner} row: {stdout}"))
            .to_string()
    };
    assert!(
        row("layer-parallel ").contains("every layer on"),
        "{stdout}"
    );
    assert!(row("pipe-it ").contains("FAILED"), "{stdout}");
    assert!(
        stdout.contains("error: the calibration") && stdout.contains(utf8(&bad)),
        "the table shows why: {stdout}"
    );
    // The report is still written, with the error in its row.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("JSON");
    let rows = json["rows"].as_array().expect("rows");
    assert!(rows[0]["error"].is_null() && rows[0]["measured_fps"].is_number());
    assert!(
        rows[1]["error"]
            .as_str()
            .is_some_and(|e| e.contains(utf8(&bad))),
        "{json}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compare_succeeds_when_a_planner_is_only_skipped() {
    // One worker: CoDL has no two devices to split between, so it is skipped, not failed.
    let out = compare(&["--cpus", "0", "--planners", "codl"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("note: CoDL splits"), "{stdout}");
}
