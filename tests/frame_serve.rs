//! The `frame` example as a process, the way `bench/peers/` drives it: `--input`,
//! `--output` and the `--serve` protocol, on the tiny `synth1` net (milliseconds a frame);
//! and under a `--layout` file that allows width 1 only.
//!
//! It runs the example binary that `cargo test` builds beside the test binaries
//! (`target/<profile>/examples/frame`); with a `--test` filter cargo builds no examples, so
//! build it first: `cargo build --release --example frame`.

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use common::{example_bin, scratch, text};

/// Runs `frame` at width 1 with `args`, feeding `stdin`.
fn frame(args: &[&str], stdin: &str) -> Output {
    frame_on(&[&["--width", "1"], args].concat(), stdin)
}

/// Runs `frame` on synth1 with `args` (no `--width`), feeding `stdin`.
fn frame_on(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(example_bin("frame"))
        .args(["--net", "synth1"])
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .env("RUST_LIB_BACKTRACE", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start frame");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("frame ran")
}

/// The lines `frame --serve` printed after `ready`: its answers.
fn answers(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .skip_while(|l| *l != "ready")
        .skip(1)
        .collect()
}

fn f32_bytes(values: impl Iterator<Item = f32>) -> Vec<u8> {
    values.flat_map(f32::to_le_bytes).collect()
}

#[test]
fn serve_answers_each_count_and_writes_the_same_output_as_a_plain_run() {
    let dir = scratch("frame-serve");
    let input = dir.join("input.f32");
    // synth1 takes 8x8x8 values.
    std::fs::write(&input, f32_bytes((0..512).map(|i| (i % 7) as f32 / 7.0))).expect("input");
    let served = dir.join("served.f32");
    let out = frame(
        &[
            "--input",
            input.to_str().expect("utf-8"),
            "--output",
            served.to_str().expect("utf-8"),
            "--serve",
        ],
        "3\n1\nquit\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let after = answers(&stdout);
    assert_eq!(after.len(), 2, "only the answers follow `ready`: {stdout}");
    for (line, count) in after.iter().zip([3, 1]) {
        let answer: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let ms = answer["ms"].as_array().expect("an ms array");
        assert_eq!(ms.len(), count, "{line}");
        assert!(ms.iter().all(|m| m.as_f64().is_some_and(|m| m > 0.0)));
    }

    let plain = dir.join("plain.f32");
    let out = frame(
        &[
            "--input",
            input.to_str().expect("utf-8"),
            "--output",
            plain.to_str().expect("utf-8"),
            "--frames",
            "1",
        ],
        "",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let served = std::fs::read(&served).expect("served output");
    assert!(!served.is_empty() && served.len().is_multiple_of(4));
    assert_eq!(served, std::fs::read(&plain).expect("plain output"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn limits_are_measured_on_request_and_by_peak() {
    let out = frame_on(&["--width", "2", "--serve"], "limits\n1\nquit\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let after = answers(&stdout);
    assert_eq!(after.len(), 2, "one answer a command: {stdout}");
    let answer: serde_json::Value = serde_json::from_str(after[0]).expect("a JSON line");
    let limits = answer["limits"].as_array().expect("a limits array");
    let workers: Vec<u64> = limits
        .iter()
        .filter_map(|l| l["workers"].as_u64())
        .collect();
    assert_eq!(workers, [1, 2], "one worker, then the place: {}", after[0]);
    for key in ["fma_gflops", "read_gbs", "copy_gbs"] {
        assert!(
            limits
                .iter()
                .all(|l| l[key].as_f64().is_some_and(|v| v > 0.0)),
            "{key}: {}",
            after[0]
        );
    }
    assert!(
        after[1].starts_with("{\"ms\":"),
        "frames still run: {}",
        after[1]
    );

    // `--peak`: printed, in the JSON report, and the frame's share of the peak.
    let dir = scratch("frame-peak");
    let json = dir.join("frame.json");
    let json_arg = json.to_str().expect("utf-8");
    let out = frame(&["--peak", "--frames", "2", "--json", json_arg], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("limits, measured now: 1 worker: FMA"),
        "{stdout}"
    );
    assert!(
        stdout.contains("of the place's FMA peak measured now"),
        "{stdout}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("JSON");
    let limits = report["limits"].as_array().expect("limits in the report");
    assert_eq!(limits.len(), 1, "width 1: one worker only");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_exits_cleanly_at_the_end_of_stdin_and_fails_on_a_bad_line() {
    let out = frame(&["--serve"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).lines().last(), Some("ready"));

    for bad in ["two", "0", "-1", ""] {
        let out = frame(&["--serve"], &format!("1\n{bad}\n1\n"));
        assert!(!out.status.success(), "`{bad}` was accepted");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(&format!("line 2: `{bad}`")),
            "`{bad}`: {stderr}"
        );
        assert_eq!(
            text(&out.stdout)
                .lines()
                .skip_while(|l| *l != "ready")
                .count(),
            2,
            "one answer before the bad line"
        );
    }
}

#[test]
fn a_wrong_input_or_output_path_is_an_error_naming_it() {
    let dir = scratch("frame-errors");
    for (name, bytes) in [("empty.f32", 0), ("short.f32", 2044), ("long.f32", 2052)] {
        let path = dir.join(name);
        std::fs::write(&path, vec![0u8; bytes]).expect("input");
        let out = frame(&["--input", path.to_str().expect("utf-8")], "");
        assert!(!out.status.success(), "{name} was accepted");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(name) && stderr.contains("2048 bytes") && !stderr.contains("panic"),
            "{name}: {stderr}"
        );
    }
    // An endless file is refused after one byte too many, not read whole.
    let out = frame(&["--input", "/dev/zero"], "");
    assert!(!out.status.success(), "/dev/zero was accepted");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("/dev/zero") && stderr.contains("the file has more"),
        "{stderr}"
    );
    let missing = dir.join("no-such-folder").join("out.f32");
    let out = frame(&["--output", missing.to_str().expect("utf-8")], "");
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no-such-folder"),
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_width_one_layout_runs_frames_on_one_worker_and_refuses_a_wider_width() {
    let dir = scratch("layout");
    // The layout of issue 12 on (up to) two CPUs this process may use.
    let cpus: Vec<String> = taopipe::runtime::Topology::detect()
        .expect("detect")
        .cpus()
        .iter()
        .take(2)
        .map(|c| c.id.to_string())
        .collect();
    let layout = dir.join("width-1.layout");
    let widths = vec!["1"; cpus.len()].join("\n");
    std::fs::write(&layout, format!("{}\n{widths}\n", cpus.join(" "))).expect("layout");
    let layout = layout.to_str().expect("utf-8");
    let under_layout = dir.join("layout.f32");
    let out = frame_on(
        &[
            "--layout",
            layout,
            "--frames",
            "1",
            "--check",
            "--output",
            under_layout.to_str().expect("utf-8"),
        ],
        "",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("on place 0+1"), "{stdout}");
    assert!(stdout.contains("bit-identical"), "{stdout}");
    // The same frame on every worker without a layout: the same bits.
    let everywhere = dir.join("everywhere.f32");
    let out = frame_on(
        &[
            "--frames",
            "1",
            "--output",
            everywhere.to_str().expect("utf-8"),
        ],
        "",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read(&under_layout).expect("output"),
        std::fs::read(&everywhere).expect("output")
    );
    if cpus.len() == 2 {
        let out = frame_on(&["--layout", layout, "--width", "2"], "");
        assert!(!out.status.success(), "--width 2 was accepted");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("--width 2") && stderr.contains("[1]") && !stderr.contains("panic"),
            "{stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
