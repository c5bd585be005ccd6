//! What a run reports, as structs that derive `Serialize`: the JSON a script reads is the
//! struct, not a map put together by a command-line tool.
//!
//! - [`Report`]: a run of the engine (tuning, serving, re-tunes), with a human table
//!   ([`fmt::Display`]).
//! - [`FrameReport`]: frames of a net run one at a time on one place, layer by layer.
//! - [`PlanReport`]: a given plan streamed in pipeline or switch mode, next to the
//!   layer-parallel baseline.
//! - [`CompareReport`]: every planner on the same machine state, one [`PlannerRow`] each.
//! - [`TimelineReport`]: where the ranks of a frame's gangs waited (`frame --trace`), with
//!   [`chrome_trace`] for a timeline viewer.
//!
//! Pipe-it's calibration report is its own planner's
//! ([`CalibrationReport`](crate::planners::pipeit::CalibrationReport)).

use std::fmt;
use std::ops::Range;

use serde::Serialize;
use taopipe_runtime::{PipelineStats, Runtime, Topology};

use crate::devices::{Device, devices};
use crate::planners::armcoup::SwitchStats;
use crate::tune::TuneOptions;

mod compare;
mod frame;
mod plan;
mod timeline;

pub use compare::{CompareReport, PlannerRow};
pub use frame::{FrameReport, LayerTimeReport, LimitsReport, TopClass};
pub use plan::{PlanPart, PlanReport};
pub use timeline::{LayerSkew, TimelineReport, chrome_trace};

/// The OS CPUs of a run of workers, in worker order: what a report records next to each
/// place or worker, so numbers from two machines are read on their own CPUs.
pub(crate) fn cpu_ids(topology: &Topology, workers: Range<usize>) -> Vec<usize> {
    let cpus = topology.cpus();
    workers.map(|w| cpus[w].id).collect()
}

/// The machine a planner's run was on, as the planners see it; reports flatten it into
/// their top level (`"cpus"`, `"speeds"`, `"devices"`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MachineReport {
    /// The OS CPU of each worker.
    pub cpus: Vec<usize>,
    /// Each worker's speed factor (emulation; 1 = full speed).
    pub speeds: Vec<f64>,
    /// The runtime's devices, fastest first ([`devices`]): what mapping strings and the
    /// planners' device indices refer to.
    pub devices: Vec<Device>,
}

impl MachineReport {
    /// `rt` as it runs now: take it before a run changes speeds (a plan's per-stage
    /// DVFS), so the devices are the ones the plan was made on.
    ///
    /// ```
    /// use taopipe_live::report::MachineReport;
    /// use taopipe_runtime::{EmulationSpec, Runtime, Topology};
    ///
    /// let rt = Runtime::builder().topology(Topology::symmetric(2)?).pin(false).build()?;
    /// rt.emulate(&"w1=powersave".parse::<EmulationSpec>()?)?;
    /// let machine = MachineReport::of(&rt);
    /// assert_eq!(machine.speeds, [1.0, 0.5]);
    /// assert_eq!(machine.devices.len(), 2); // one speed each
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn of(rt: &Runtime) -> MachineReport {
        MachineReport {
            cpus: cpu_ids(rt.topology(), 0..rt.num_workers()),
            speeds: rt.speeds(),
            devices: devices(rt),
        }
    }
}

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
    /// Whether the work reported was cut short by a stop (an interrupt;
    /// [`Engine::with_stop`](crate::Engine::with_stop)): the run ended before its source
    /// did, or the tuning before its search did (its `stopped` says `"stopped"`). The
    /// frames listed were still all delivered, in order; what is missing was never
    /// started. A caller that skips later parts (the baseline, a latency run) on a stop
    /// sets it too.
    pub partial: bool,
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
    /// The conditions changed: a step of the emulation schedule, or a mark
    /// ([`Handle::mark`](crate::Handle::mark)).
    Conditions {
        /// The step, as written (`20s:w1=powersave`), or the mark's label.
        step: String,
    },
    /// The watch saw a sustained change of a stage's service time.
    Change {
        /// The change.
        change: taopipe_tuner::Change,
    },
    /// A re-tune was asked for ([`Engine::retune`](crate::Engine::retune)).
    Forced,
    /// A trial of the configuration serving did not confirm the change seen: it passed,
    /// and nothing was searched.
    Dismissed {
        /// The changed stage's time in that trial, ms.
        now_ms: f64,
    },
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
    /// Seconds from the change to the start of the first window of throughput within
    /// [`RECOVERY_BAND`] of `settled_fps` that every later window of the interval also
    /// is; `None` if none.
    pub recovery_s: Option<f64>,
    /// Seconds from the change to the end of the first re-tune after it, if one ended
    /// before the next change.
    pub retuned_s: Option<f64>,
    /// Throughput from the end of that re-tune to the next change (or the end), fps.
    pub after_retune_fps: Option<f64>,
}

/// Throughput windows for [`Report::recover`], seconds (rounded to whole frames).
pub const RECOVERY_WINDOW_S: f64 = 2.0;
/// How close to the settled throughput a window must be to count as recovered.
pub const RECOVERY_BAND: f64 = 0.10;

impl Report {
    /// How the run recovered from each change of conditions ([`What::Conditions`]):
    /// - the settled throughput is the frames delivered in the last half of the interval
    ///   until the next change (or the end) over its length;
    /// - throughput at each delivery is the last `w` frame intervals over their time, `w`
    ///   the frames of [`RECOVERY_WINDOW_S`] at the settled rate (whole frames: a window
    ///   of 2 s at 7 frames/s counted in frames would be off by 7% for one frame);
    /// - recovered at the start of the first such window within [`RECOVERY_BAND`] (10%:
    ///   the frame-to-frame jitter of a 2-core VM) of the settled throughput, with every
    ///   later window in the interval within it too.
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
                let mut r = recovery(&self.timeline, step, *at, until);
                let retuned = self.events.iter().find(|e| {
                    matches!(e.what, What::Retuned { .. }) && e.at_s > *at && e.at_s <= until
                });
                if let Some(e) = retuned {
                    let served = self
                        .timeline
                        .iter()
                        .filter(|f| f.at_s > e.at_s && f.at_s <= until)
                        .count() as f64;
                    r.retuned_s = Some(e.at_s - at);
                    r.after_retune_fps = (until > e.at_s).then(|| served / (until - e.at_s));
                }
                r
            })
            .collect();
    }

    /// The pipeline's throughput over the baseline's, if there is one and the conditions
    /// did not change during the run (the baseline runs under one condition).
    pub fn speedup(&self) -> Option<f64> {
        let changed = self
            .events
            .iter()
            .any(|e| matches!(e.what, What::Conditions { .. }));
        if changed {
            return None;
        }
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
            write!(f, "after {}: ", r.step)?;
            match r.recovery_s {
                Some(s) => write!(
                    f,
                    "throughput recovered in {s:.1} s, settled at {:.2} frames/s",
                    r.settled_fps
                )?,
                None => write!(f, "throughput did not settle (within 10%)")?,
            }
            if let (Some(s), Some(fps)) = (r.retuned_s, r.after_retune_fps) {
                write!(f, "; re-tuned after {s:.1} s, then {fps:.2} frames/s")?;
            }
            writeln!(f)?;
        }
        if let Some(x) = self.speedup() {
            writeln!(f, "pipeline / layer-parallel throughput: {x:.2}")?;
        }
        if self.partial {
            writeln!(
                f,
                "partial: stopped before the end ({} frames delivered)",
                self.run.frames
            )?;
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
    // Windows of a whole number of frame intervals, so no window is off by a frame.
    let w = ((settled_fps * RECOVERY_WINDOW_S).round() as usize).max(2);
    let ok = |i: usize| {
        let fps = w as f64 / (times[i] - times[i - w]);
        (fps / settled_fps - 1.0).abs() <= RECOVERY_BAND
    };
    let first_good_tail = (w..times.len()).rev().take_while(|&i| ok(i)).last();
    Recovery {
        step: step.to_string(),
        at_s: at,
        settled_fps,
        recovery_s: first_good_tail
            .filter(|_| settled_fps > 0.0)
            .map(|i| times[i - w] - at),
        retuned_s: None,
        after_retune_fps: None,
    }
}

impl fmt::Display for What {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            What::Conditions { step } => write!(f, "conditions: {step}"),
            What::Change { change } => write!(f, "change seen: {change}"),
            What::Forced => write!(f, "re-tune asked for"),
            What::Dismissed { now_ms } => {
                write!(f, "change not confirmed ({now_ms:.1} ms): no re-tune")
            }
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

#[cfg(test)]
mod test {
    use super::*;

    /// Frames delivered at `fps` from `from` (exclusive) to `to` (inclusive).
    fn frames(out: &mut Vec<FrameRecord>, from: f64, to: f64, fps: f64) {
        let mut t = from;
        while t + 1.0 / fps <= to + 1e-9 {
            t += 1.0 / fps;
            out.push(FrameRecord {
                seq: out.len() as u64,
                at_s: t,
                configuration: 0,
                trial: false,
                stage_ms: vec![1e3 / fps],
            });
        }
    }

    #[test]
    fn recovery_starts_where_every_later_window_is_within_the_band() {
        let mut timeline = Vec::new();
        frames(&mut timeline, 0.0, 5.0, 10.0);
        frames(&mut timeline, 5.0, 6.0, 5.0); // the change at 5 s halves the throughput
        frames(&mut timeline, 6.0, 12.0, 10.0); // recovered at 6 s
        let r = recovery(&timeline, "5s:w1=0.5", 5.0, 12.0);
        assert!((r.settled_fps - 10.0).abs() < 0.01, "{r:?}");
        // The first 2 s window within 10% of 10 frames/s starts at 5.6 s: two slow
        // intervals and eighteen fast ones, 9.1 frames/s.
        let s = r.recovery_s.expect("recovered");
        assert!((s - 0.6).abs() < 0.05, "{r:?}");
    }

    #[test]
    fn a_throughput_that_never_settles_has_no_recovery() {
        let mut timeline = Vec::new();
        frames(&mut timeline, 0.0, 5.0, 10.0);
        frames(&mut timeline, 5.0, 8.0, 5.0);
        frames(&mut timeline, 8.0, 9.0, 10.0);
        frames(&mut timeline, 9.0, 12.0, 5.0);
        frames(&mut timeline, 12.0, 13.0, 12.0);
        let r = recovery(&timeline, "change", 5.0, 13.0);
        assert_eq!(r.recovery_s, None, "{r:?}");
    }
}
