//! SIGINT and SIGTERM sent to the examples, as processes (issue 12): each test starts an
//! example, waits (generously) for the line that says it reached the state under test,
//! sends the signal with `kill(2)`, and checks the exit code (130 for SIGINT, 143 for
//! SIGTERM), the note on stderr, and the report: written whole, marked partial, its counts
//! consistent and its frames in order, and no temporary file left beside it.
//!
//! Build the examples first when filtering: `cargo build --release --examples`.
#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use common::{example_bin, scratch};
use serde_json::Value;

/// How long a child may take to reach a state or to exit: far beyond what any of these
/// takes on a loaded 2-core machine (seconds), so only a hang fails the test.
const PATIENCE: Duration = Duration::from_secs(180);

/// A running example whose stdout (or stderr) lines arrive on a channel.
struct Running {
    child: Child,
    lines: Receiver<String>,
    /// Everything read so far from the stream watched, for failure messages.
    seen: Vec<String>,
    /// The other stream, read whole at exit.
    other: Option<std::thread::JoinHandle<String>>,
}

/// Which stream carries the text (`--json -` moves it to stderr).
#[derive(Clone, Copy, PartialEq)]
enum Text {
    Stdout,
    Stderr,
}

fn start(name: &str, args: &[&str], text: Text) -> Running {
    let mut child = Command::new(example_bin(name))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {name}: {e}"));
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let (watched, other): (Box<dyn Read + Send>, Box<dyn Read + Send>) = match text {
        Text::Stdout => (Box::new(out.expect("piped")), Box::new(err.expect("piped"))),
        Text::Stderr => (Box::new(err.expect("piped")), Box::new(out.expect("piped"))),
    };
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(watched).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let other = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = BufReader::new(other).read_to_string(&mut text);
        text
    });
    Running {
        child,
        lines,
        seen: Vec::new(),
        other: Some(other),
    }
}

impl Running {
    /// Waits for a line of the watched stream that contains `needle`.
    fn wait_for(&mut self, needle: &str) {
        self.wait_until(needle, |line| line.contains(needle));
    }

    /// Waits for a line of the watched stream that `is` accepts (`what` describes it).
    fn wait_until(&mut self, what: &str, is: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let found = is(&line);
                    self.seen.push(line);
                    if found {
                        return;
                    }
                }
                Err(e) => {
                    let _ = self.child.kill();
                    panic!(
                        "no line {what} ({e:?}); read so far:\n{}",
                        self.seen.join("\n")
                    );
                }
            }
        }
    }

    fn signal(&self, sig: libc::c_int) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid");
        // SAFETY: kill(2) has no memory-safety preconditions; `pid` is our own child,
        // not yet waited for, so the pid cannot have been reused.
        let sent = unsafe { libc::kill(pid, sig) };
        assert_eq!(sent, 0, "kill({pid}, {sig})");
    }

    /// Waits for the exit: its status, the rest of the watched stream and the other one.
    fn finish(mut self) -> (ExitStatus, String, String) {
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("did not exit after the signal:\n{}", self.seen.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // The reader ends at end of file: the child has exited.
        self.seen.extend(self.lines.iter());
        let other = self.other.take().expect("once").join().expect("reader");
        (status, self.seen.join("\n"), other)
    }
}

/// The report at `path`: whole JSON, marked partial; and nothing else in its folder but
/// `also` (no temporary file of `write_atomic` left behind).
fn report(path: &Path, also: &[&str]) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: the report was not written: {e}", path.display()));
    let json: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: not whole JSON: {e}", path.display()));
    assert_eq!(json["partial"], Value::Bool(true), "marked partial");
    let folder = path.parent().expect("a folder");
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut want: Vec<String> = also.iter().map(|s| s.to_string()).collect();
    want.push(
        path.file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned(),
    );
    want.sort();
    assert_eq!(
        names, want,
        "only the report (no temporary file) in the folder"
    );
    json
}

/// The engine's report: `run.frames` frames, listed in the timeline in order.
fn assert_frames_in_order(json: &Value) -> u64 {
    let frames = json["run"]["frames"].as_u64().expect("run.frames");
    let seqs: Vec<u64> = json["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .map(|f| f["seq"].as_u64().expect("seq"))
        .collect();
    assert_eq!(
        seqs,
        (0..frames).collect::<Vec<_>>(),
        "every frame, in order"
    );
    frames
}

/// How long a child works before it is signalled, when the test wants work done first.
const SERVE_A_WHILE: Duration = Duration::from_millis(500);

/// The serving driver (vgg16, alexnet, resnet50, synthetic) on a tiny net, tuned in
/// milliseconds, then serving for a minute unless stopped.
const SERVE_LONG: &[&str] = &[
    "--net",
    "synth1",
    "--tune",
    "alpha=1",
    "--reps",
    "1",
    "--seconds",
    "600",
];

#[test]
fn sigint_while_serving_finishes_the_frames_writes_a_partial_report_and_exits_130() {
    let dir = scratch("sigint-serving");
    let json = dir.join("run.json");
    let plots = dir.join("plots");
    let mut args = SERVE_LONG.to_vec();
    args.extend(["--json", json.to_str().expect("utf-8"), "--plots"]);
    args.push(plots.to_str().expect("utf-8"));
    let mut run = start("synthetic", &args, Text::Stdout);
    run.wait_for("serving ");
    // Some frames served first, so the report has frames to list (synth1 serves
    // thousands a second: half a second is a margin of hundreds, not a timing claim).
    std::thread::sleep(SERVE_A_WHILE);
    run.signal(libc::SIGINT);
    let (status, out, err) = run.finish();
    assert_eq!(status.code(), Some(130), "{status}: {err}");
    assert!(
        err.contains("interrupted by SIGINT") && err.contains("run.json"),
        "the note on stderr: {err}"
    );
    assert!(out.contains("partial: stopped before the end"), "{out}");
    let json = report(&json, &["plots"]);
    let frames = assert_frames_in_order(&json);
    assert!(frames > 0, "frames were served before the signal");
    assert_eq!(json["tuning"]["search"]["stopped"], "confidence");
    assert_eq!(json["baseline"], Value::Null, "the baseline was skipped");
    assert_eq!(
        json["latency_run"],
        Value::Null,
        "the latency run was skipped"
    );
    // The pictures are written whole too.
    let mut pictures: Vec<String> = std::fs::read_dir(&plots)
        .expect("plots written")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    pictures.sort();
    assert_eq!(pictures, ["balance.svg", "run.svg"]);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn sigterm_while_serving_exits_143_with_the_report_alone_on_stdout() {
    let mut args = SERVE_LONG.to_vec();
    args.extend(["--json", "-"]);
    let mut run = start("synthetic", &args, Text::Stderr);
    run.wait_for("serving ");
    std::thread::sleep(SERVE_A_WHILE);
    run.signal(libc::SIGTERM);
    let (status, err, out) = run.finish();
    assert_eq!(status.code(), Some(143), "{status}: {err}");
    assert!(err.contains("interrupted by SIGTERM"), "{err}");
    let json: Value = serde_json::from_str(&out).expect("stdout holds the JSON alone");
    assert_eq!(json["partial"], Value::Bool(true));
    assert!(assert_frames_in_order(&json) > 0);
}

/// Sends SIGINT to a run that is tuning and checks what every such stop must show: exit
/// 130 with the message, a report at `json` whose search says it was stopped, and no frame
/// served. Returns the report, how many trials it kept, and the run's stdout.
fn interrupt_tuning(run: Running, json: &Path) -> (Value, usize, String) {
    run.signal(libc::SIGINT);
    let (status, out, err) = run.finish();
    assert_eq!(status.code(), Some(130), "{status}: {err}");
    assert!(err.contains("interrupted by SIGINT"), "{err}");
    let json = report(json, &[]);
    let search = &json["tuning"]["search"];
    assert_eq!(search["stopped"], "stopped", "{out}");
    let trials = search["trials"].as_array().expect("trials").len();
    assert_eq!(json["run"]["frames"], 0, "nothing served after the stop");
    (json, trials, out)
}

#[test]
fn sigint_during_tuning_keeps_the_trials_done_and_serves_nothing() {
    let dir = scratch("sigint-tuning");
    let json = dir.join("run.json");
    // An exhaustive search with 7 samples a trial: seconds of trials after the first.
    let args = [
        "--tune",
        "alpha=10",
        "--search",
        "exhaustive",
        "--reps",
        "7",
        "--tolerance",
        "0",
        "--frames",
        "5",
        "--json",
        json.to_str().expect("utf-8"),
    ];
    let mut run = start("alexnet", &args, Text::Stdout);
    // The trial table's first row: the one-stage candidate is measured.
    run.wait_until("of trial 1", |line| line.trim_start().starts_with("1 "));
    let (json, trials, out) = interrupt_tuning(run, &json);
    assert!(
        trials >= 1,
        "the trials done are kept (the first was seen): {out}"
    );
    assert_eq!(assert_frames_in_order(&json), 0);
    std::fs::remove_dir_all(dir).ok();
}

/// The issue's own case: Ctrl-C during `vgg16 --tune alpha=10`, the main job, after its
/// second trial (a few seconds on 2 cores).
#[test]
fn sigint_during_the_main_jobs_vgg16_tuning_exits_130_with_its_trials() {
    let dir = scratch("sigint-vgg16");
    let json = dir.join("run.json");
    let args = [
        "--tune",
        "alpha=10",
        "--json",
        json.to_str().expect("utf-8"),
    ];
    let mut run = start("vgg16", &args, Text::Stdout);
    // The trial table's second row (not "2 workers from sysfs …").
    run.wait_until("of trial 2", |line| {
        line.trim_start().starts_with("2 ") && line.contains("@{")
    });
    let (json, trials, out) = interrupt_tuning(run, &json);
    assert_eq!(json["net"], "vgg16");
    assert!((2..20).contains(&trials), "{trials} trials: {out}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_second_sigint_exits_at_once_and_never_leaves_a_half_written_report() {
    let dir = scratch("sigint-twice");
    let json = dir.join("run.json");
    let mut args = SERVE_LONG.to_vec();
    args.extend(["--json", json.to_str().expect("utf-8")]);
    let mut run = start("synthetic", &args, Text::Stdout);
    run.wait_for("serving ");
    std::thread::sleep(SERVE_A_WHILE);
    run.signal(libc::SIGINT);
    std::thread::sleep(Duration::from_millis(2));
    run.signal(libc::SIGINT);
    let (status, _, err) = run.finish();
    assert_eq!(status.code(), Some(130), "{status}: {err}");
    // Whichever came first, the clean stop's write or the second signal's exit: the
    // report is whole or absent, never half.
    if json.exists() {
        let text = std::fs::read_to_string(&json).expect("read");
        let parsed: Value = serde_json::from_str(&text).expect("a whole report");
        assert_eq!(parsed["partial"], Value::Bool(true));
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn sigint_stops_the_pipeline_example_between_frames() {
    let dir = scratch("sigint-pipeline");
    let json = dir.join("run.json");
    let args = [
        "--net",
        "synth1",
        "--frames",
        "100000000",
        "--json",
        json.to_str().expect("utf-8"),
    ];
    let mut run = start("pipeline", &args, Text::Stdout);
    run.wait_for("units@place");
    std::thread::sleep(SERVE_A_WHILE);
    run.signal(libc::SIGINT);
    let (status, _, err) = run.finish();
    assert_eq!(status.code(), Some(130), "{status}: {err}");
    let json = report(&json, &[]);
    let base = json["baseline"]["frames"]
        .as_u64()
        .expect("baseline frames");
    let run = json["run"]["frames"].as_u64().expect("run frames");
    assert!(base < 100_000_000 && run < 100_000_000, "{base}, {run}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn sigint_ends_a_soak_with_its_frames_checked_and_a_partial_report() {
    let dir = scratch("sigint-soak");
    let json = dir.join("soak.json");
    let args = [
        "--net",
        "synth1",
        "--seconds",
        "600",
        "--switch-every",
        "1",
        "--speeds-every",
        "0.5",
        "--interval",
        "1",
        "--json",
        json.to_str().expect("utf-8"),
    ];
    let mut run = start("soak", &args, Text::Stdout);
    run.wait_for("configurations");
    std::thread::sleep(Duration::from_secs(2));
    run.signal(libc::SIGINT);
    let (status, out, err) = run.finish();
    assert_eq!(status.code(), Some(130), "{status}: {err}");
    assert!(err.contains("interrupted by SIGINT"), "{err}");
    assert!(out.contains("partial: stopped at"), "{out}");
    let json = report(&json, &[]);
    let (frames_in, frames_out) = (&json["frames_in"], &json["frames_out"]);
    assert_eq!(frames_in, frames_out, "the frames in flight finished");
    assert!(frames_out.as_u64().is_some_and(|n| n > 0), "{json}");
    assert_eq!(json["checks"]["in_order"], true);
    assert!(json["elapsed_s"].as_f64().is_some_and(|s| s < 600.0));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn sigterm_stops_frame_between_frames() {
    let dir = scratch("sigterm-frame");
    let json = dir.join("frame.json");
    let args = [
        "--net",
        "synth1",
        "--frames",
        "100000000",
        "--json",
        json.to_str().expect("utf-8"),
    ];
    let mut run = start("frame", &args, Text::Stdout);
    run.wait_for("built in");
    std::thread::sleep(SERVE_A_WHILE);
    run.signal(libc::SIGTERM);
    let (status, _, err) = run.finish();
    assert_eq!(status.code(), Some(143), "{status}: {err}");
    let json = report(&json, &[]);
    let timed = json["frame_ms"].as_array().expect("frame_ms").len();
    assert!(timed < 100_000_000, "{timed}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn sigint_ends_compare_at_the_planner_in_progress() {
    let dir = scratch("sigint-compare");
    let json = dir.join("compare.json");
    let args = [
        "--net",
        "synth1",
        "--planners",
        "layer-parallel,pipe-search",
        "--frames",
        "100000000",
        "--json",
        json.to_str().expect("utf-8"),
    ];
    let mut run = start("compare", &args, Text::Stdout);
    run.wait_for("frames per planner");
    std::thread::sleep(SERVE_A_WHILE);
    run.signal(libc::SIGINT);
    let (status, _, err) = run.finish();
    assert_eq!(status.code(), Some(130), "{status}: {err}");
    let json = report(&json, &[]);
    let rows = json["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "no planner after the one interrupted");
    assert_eq!(rows[0]["planner"], "layer-parallel");
    assert_eq!(rows[0]["note"], "interrupted");
    std::fs::remove_dir_all(dir).ok();
}
