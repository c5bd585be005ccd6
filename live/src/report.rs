//! What a run of the engine reports: one [`Report`] that derives `Serialize`, so the JSON
//! a script reads is this struct, and a human table ([`fmt::Display`]).

use std::fmt;

use serde::Serialize;
use taopipe_runtime::PipelineStats;

use crate::planners::armcoup::SwitchStats;
use crate::tune::TuneOptions;

/// Median and tail latency in ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    /// 50th percentile.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// One stage of the pipeline served.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageReport {
    /// Consecutive units of the net (a unit is one or more layers).
    pub units: usize,
    /// First worker of its place.
    pub leader: usize,
    /// Workers of its place.
    pub width: usize,
    /// The OS CPUs of those workers.
    pub cpus: Vec<usize>,
    /// Mean busy time per frame, ms.
    pub ms_per_frame: f64,
}

/// A stream of frames: how many, how fast, how late.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamReport {
    /// Frames delivered.
    pub frames: u64,
    /// Frames per second over the stream.
    pub throughput_fps: f64,
    /// Latency per frame, from its arrival (paced input: the time it was due; otherwise
    /// when it was taken from the source) to its output, queueing included.
    pub latency_ms: Latency,
}

impl StreamReport {
    /// From a pipeline's statistics.
    pub fn from_pipeline(stats: &PipelineStats) -> StreamReport {
        StreamReport {
            frames: stats.delivered,
            throughput_fps: stats.throughput_fps(),
            latency_ms: Latency {
                p50: stats.latency_ms(0.5),
                p99: stats.latency_ms(0.99),
            },
        }
    }

    /// From the layer-parallel baseline's statistics.
    pub fn from_switch(stats: &SwitchStats) -> StreamReport {
        StreamReport {
            frames: stats.frames,
            throughput_fps: stats.throughput_fps(),
            latency_ms: Latency {
                p50: stats.latency_ms(0.5),
                p99: stats.latency_ms(0.99),
            },
        }
    }
}

/// How the served configuration was found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TuningReport {
    /// The settings.
    pub options: TuneOptions,
    /// Every trial, the best and how long it took (the tuner's report).
    pub search: taopipe_tuner::Report,
}

/// A run of the engine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// taopipe's version.
    pub version: &'static str,
    /// The net's name.
    pub net: String,
    /// The kernels' instruction-set path (`avx512`, `avx2`, `neon`, `portable`).
    pub isa: String,
    /// The OS CPU of each worker.
    pub cpus: Vec<usize>,
    /// Each worker's speed factor (emulation; 1 = full speed).
    pub speeds: Vec<f64>,
    /// The emulation asked for, as given (`--emulate`), if any.
    pub emulation: Option<String>,
    /// The emulation schedule played during the run (`--emulate-schedule`), if any.
    pub schedule: Option<String>,
    /// The tuning, if the engine was tuned.
    pub tuning: Option<TuningReport>,
    /// The configuration served, stage by stage.
    pub pipeline: Vec<StageReport>,
    /// The stream through it.
    pub run: StreamReport,
    /// The layer-parallel baseline under the same conditions, if it was run.
    pub baseline: Option<StreamReport>,
    /// Frames offered per second (`--rate`); `None`: as fast as the pipeline takes them
    /// (a saturating run: its throughput counts, its latency is a full queue's).
    pub rate_fps: Option<f64>,
    /// What happened during the run, in order: changes of conditions, changes seen,
    /// re-tunes.
    pub events: Vec<Event>,
    /// The configurations served, in order of first use (the timeline's indices).
    pub configurations: Vec<String>,
    /// Every frame delivered, in order.
    pub timeline: Vec<FrameRecord>,
    /// For each change of conditions, how long until the throughput recovered.
    pub recoveries: Vec<Recovery>,
    /// A second, paced run for latency (a saturating run's latency is a full queue's).
    pub latency_run: Option<PacedRun>,
}

/// A run with frames offered at a fixed rate, for its latency.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PacedRun {
    /// Frames offered per second.
    pub rate_fps: f64,
    /// The stream.
    pub stream: StreamReport,
}

/// One delivered frame.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrameRecord {
    /// Its sequence number.
    pub seq: u64,
    /// When it was delivered, seconds since the run started.
    pub at_s: f64,
    /// The configuration that ran it (index into [`Report::configurations`]).
    pub configuration: usize,
    /// Whether it ran as part of a trial (a re-tune's measurement).
    pub trial: bool,
    /// Each stage's service time for it, ms.
    pub stage_ms: Vec<f64>,
}

/// Something that happened during a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// Seconds since the run started.
    pub at_s: f64,
    /// Frames delivered before it.
    pub frame: u64,
    /// What.
    #[serde(flatten)]
    pub what: What,
}

/// The kinds of [`Event`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum What {
    /// The emulation schedule changed the workers' speeds.
    Conditions {
        /// The step, as written (`20s:w1=powersave`).
        step: String,
    },
    /// The watch saw a sustained change of a stage's service time.
    Change {
        /// The change.
        change: taopipe_tuner::Change,
    },
    /// A re-tune was asked for ([`Engine::retune`](crate::Engine::retune)).
    Forced,
    /// A re-tune finished.
    Retuned {
        /// The configuration before.
        from: String,
        /// The configuration chosen.
        to: String,
        /// Its slowest stage, ms.
        slowest_ms: f64,
        /// Trials measured (the configuration serving included).
        trials: usize,
        /// Seconds the re-tune took, from the change seen.
        took_s: f64,
        /// The search.
        search: taopipe_tuner::Report,
    },
}

/// How a run recovered from one change of conditions (see [`Report::recover`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recovery {
    /// The step that changed the conditions.
    pub step: String,
    /// When, seconds since the run started.
    pub at_s: f64,
    /// Throughput settled to before the next change (the last half of the interval), fps.
    pub settled_fps: f64,
    /// Seconds from the change to the start of the first window of throughput within 5%
    /// of `settled_fps` that every later window of the interval also is; `None` if none.
    pub recovery_s: Option<f64>,
}

/// Throughput windows for [`Report::recover`], seconds.
pub const RECOVERY_WINDOW_S: f64 = 2.0;

impl Report {
    /// How the run recovered from each change of conditions ([`What::Conditions`]):
    /// - the settled throughput is the frames delivered in the last half of the interval
    ///   until the next change (or the end) over its length;
    /// - throughput at time `t` is the frames delivered in `(t − RECOVERY_WINDOW_S, t]`
    ///   over [`RECOVERY_WINDOW_S`], taken at every delivery;
    /// - recovered at the start (`t − window`) of the first such window that is within 5%
    ///   of the settled throughput, with every later window in the interval within 5% too.
    pub fn recover(&mut self) {
        let changes: Vec<(String, f64)> = self
            .events
            .iter()
            .filter_map(|e| match &e.what {
                What::Conditions { step } => Some((step.clone(), e.at_s)),
                _ => None,
            })
            .collect();
        let end = self.timeline.last().map_or(0.0, |f| f.at_s);
        self.recoveries = changes
            .iter()
            .enumerate()
            .map(|(i, (step, at))| {
                let until = changes.get(i + 1).map_or(end, |c| c.1);
                recovery(&self.timeline, step, *at, until)
            })
            .collect();
    }

    /// The pipeline's throughput over the baseline's, if there is one.
    pub fn speedup(&self) -> Option<f64> {
        self.baseline
            .as_ref()
            .map(|b| self.run.throughput_fps / b.throughput_fps)
    }
}

impl fmt::Display for Report {
    /// The chosen pipeline, stage by stage, then throughput and latency next to the
    /// baseline's.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<8} {:>8} {:>8} {:>10}",
            "stage", "place", "units", "ms/frame"
        )?;
        for (i, s) in self.pipeline.iter().enumerate() {
            let place = format!("{}+{}", s.leader, s.width);
            writeln!(
                f,
                "{:<8} {:>8} {:>8} {:>10.1}",
                format!("stage{i}"),
                place,
                s.units,
                s.ms_per_frame
            )?;
        }
        writeln!(
            f,
            "\n{:<16} {:>10} {:>10} {:>10}",
            "", "frames/s", "p50 ms", "p99 ms"
        )?;
        // Latency only where frames came at a rate, or one at a time (the baseline): a
        // saturating pipeline's latency is a full queue's.
        let paced = self
            .latency_run
            .as_ref()
            .map(|p| (p.stream.latency_ms, p.rate_fps))
            .or(self.rate_fps.map(|r| (self.run.latency_ms, r)));
        let latency = |l: Option<Latency>| match l {
            Some(l) => format!("{:>10.1} {:>10.1}", l.p50, l.p99),
            None => format!("{:>10} {:>10}", "-", "-"),
        };
        writeln!(
            f,
            "{:<16} {:>10.2} {}",
            "pipeline",
            self.run.throughput_fps,
            latency(paced.map(|p| p.0))
        )?;
        if let Some(b) = &self.baseline {
            writeln!(
                f,
                "{:<16} {:>10.2} {}",
                "layer-parallel",
                b.throughput_fps,
                latency(Some(b.latency_ms))
            )?;
        }
        match paced {
            Some((_, rate)) => {
                writeln!(f, "(pipeline latency with frames offered at {rate:.2}/s)")?
            }
            None => writeln!(
                f,
                "(pipeline latency: run with a rate, e.g. --rate, to measure it)"
            )?,
        }
        for e in &self.events {
            writeln!(f, "{:>8.1} s  frame {:>5}  {}", e.at_s, e.frame, e.what)?;
        }
        for r in &self.recoveries {
            match r.recovery_s {
                Some(s) => writeln!(
                    f,
                    "after {}: throughput recovered in {s:.1} s, settled at {:.2} frames/s",
                    r.step, r.settled_fps
                )?,
                None => writeln!(f, "after {}: throughput did not settle", r.step)?,
            }
        }
        if let Some(x) = self.speedup() {
            writeln!(f, "pipeline / layer-parallel throughput: {x:.2}")?;
        }
        Ok(())
    }
}

/// The recovery from a change at `at` in the interval up to `until` ([`Report::recover`]).
fn recovery(timeline: &[FrameRecord], step: &str, at: f64, until: f64) -> Recovery {
    let times: Vec<f64> = timeline
        .iter()
        .map(|f| f.at_s)
        .filter(|&t| t > at && t <= until)
        .collect();
    let half = at + (until - at) / 2.0;
    let settled = times.iter().filter(|&&t| t > half).count() as f64;
    let settled_fps = if until > half {
        settled / (until - half)
    } else {
        0.0
    };
    let all: Vec<f64> = timeline.iter().map(|f| f.at_s).collect();
    let fps_at = |t: f64| {
        let lo = all.partition_point(|&x| x <= t - RECOVERY_WINDOW_S);
        let hi = all.partition_point(|&x| x <= t);
        (hi - lo) as f64 / RECOVERY_WINDOW_S
    };
    let ok = |t: f64| (fps_at(t) / settled_fps - 1.0).abs() <= 0.05;
    let windows: Vec<f64> = times
        .iter()
        .copied()
        .filter(|&t| t - RECOVERY_WINDOW_S >= at)
        .collect();
    let first_good_tail = (0..windows.len())
        .rev()
        .take_while(|&i| ok(windows[i]))
        .last();
    Recovery {
        step: step.to_string(),
        at_s: at,
        settled_fps,
        recovery_s: first_good_tail
            .filter(|_| settled_fps > 0.0)
            .map(|i| windows[i] - RECOVERY_WINDOW_S - at),
    }
}

impl fmt::Display for What {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            What::Conditions { step } => write!(f, "conditions: {step}"),
            What::Change { change } => write!(f, "change seen: {change}"),
            What::Forced => write!(f, "re-tune asked for"),
            What::Retuned {
                from,
                to,
                slowest_ms,
                trials,
                took_s,
                ..
            } => write!(
                f,
                "re-tuned {from} -> {to} ({slowest_ms:.1} ms) in {took_s:.1} s, {trials} trials"
            ),
        }
    }
}
