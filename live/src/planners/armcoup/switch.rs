//! ARM-CO-UP's **switch mode** (Aghapour et al., TODAES 2024, §4.1), and the per-run /
//! per-stage speed settings that stand in for its per-layer and per-sub-graph DVFS.
//!
//! # Switch mode
//!
//! A net's units are cut into **runs** (ARM-CO-UP's sub-graphs: consecutive units on one
//! device, e.g. the runs of a [`Mapping`] string). [`Switch::run`] takes one frame at a
//! time and executes its runs in order, each as [`Model::run_stage`] on its own place:
//! nothing overlaps, so a frame's latency is the sum of its runs (plus the switches), and
//! a run may put its units on whichever device suits them best. Pipeline mode is the
//! runtime's [`Pipeline`](taopipe_runtime::Pipeline) with one stage per run
//! ([`Mapping::pipeline`], [`LiveMeasure::stages`](crate::measure::LiveMeasure::stages)).
//!
//! # Speeds (DVFS, emulated)
//!
//! Decision: a run's speed factor `f ∈ (0, 1]` **scales** the speed its place's workers had
//! when the run started (the emulated core type, e.g. `--emulate w1=powersave`), the way
//! DVFS lowers a core's clock below its own maximum: `f = 1` leaves the device as it is, a
//! little core at `0.5` and `f = 0.5` runs at `0.25`. Switch mode applies each run's factor
//! just before the run (per-layer DVFS, set at run time; the paper's non-blocking trigger is
//! immediate here), pipeline mode applies every stage's factor once before the stream
//! starts (per-processor DVFS, set at setup) with [`ScaledSpeeds`]; both restore the speeds
//! found when they end. The runtime's only per-worker speed setter is an
//! [`EmulationSpec`], so factors go through one (`w0=…,w1=…`; Rust prints an `f64` so that
//! it parses back to the same value).
//!
//! # Sender / receiver buffers for skip edges
//!
//! ARM-CO-UP gives each sub-graph receiver a queue buffer so that a skip edge from stage 0
//! to stage 3 does not stall stage 0 while stage 3 still works on older frames (its Fig. 8).
//! Here every frame owns all its tensors: [`Model::frame`] allocates one buffer per layer,
//! and a frame moves through the pipeline's queues as one `Arc<Frame>`. A residual operand
//! produced in stage 0 and read in stage 2 therefore waits in *that frame's* buffer while
//! the frame passes stage 1 — the "sender" is the producing layer writing its frame's
//! buffer, the "receiver buffer" is every frame in flight between the stages (as deep as
//! the queues: [`Pipeline::with_queue`](taopipe_runtime::Pipeline::with_queue)), and the
//! receive is the frame arriving at the consuming stage. No stage waits for a consumer, and
//! a later frame cannot overwrite the tensor because it writes its own buffers.
//! `tests/switch.rs` checks both with a skip that spans two stage boundaries.

use std::fmt::Write as _;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::planners::armcoup::{Mapping, MappingError};
use taopipe_nets::{Frame, Model};
use taopipe_runtime::{EmulationError, EmulationSpec, Latencies, Place, Runtime, RuntimeError};

use crate::devices::Device;

/// Why a switch-mode plan or a speed setting is invalid, or a run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SwitchError {
    /// A plan needs at least one run.
    #[error("switch mode needs at least one run")]
    NoRuns,
    /// A run without units.
    #[error("run {run} holds no units ({units:?})")]
    EmptyRun {
        /// The run (0-based).
        run: usize,
        /// Its units.
        units: Range<usize>,
    },
    /// Runs that do not follow each other.
    #[error("run {run} starts at unit {start}, but the run before it ends at unit {expected}")]
    Gap {
        /// The run.
        run: usize,
        /// Its first unit.
        start: usize,
        /// Where the previous run ended (0 for the first run).
        expected: usize,
    },
    /// Runs that do not cover the net.
    #[error("the runs cover units 0..{covered}, but the net has {units} units")]
    Coverage {
        /// Where the last run ends.
        covered: usize,
        /// Units of the net.
        units: usize,
    },
    /// A speed factor outside (0, 1].
    #[error("run/stage {run}: speed factor {speed} is not in (0, 1]")]
    BadSpeed {
        /// The run or stage.
        run: usize,
        /// The factor.
        speed: f64,
    },
    /// Not one speed factor per run.
    #[error("{speeds} speed factor(s) for {runs} run(s): give one per run")]
    SpeedCount {
        /// Factors given.
        speeds: usize,
        /// Runs of the plan.
        runs: usize,
    },
    /// A place the runtime cannot run.
    #[error("run/stage {run}: place {place} is not allowed by this runtime ({workers} worker(s))")]
    PlaceNotAllowed {
        /// The run or stage.
        run: usize,
        /// Its place.
        place: Place,
        /// Workers of the runtime.
        workers: usize,
    },
    /// A mapping that does not fit.
    #[error(transparent)]
    Mapping(#[from] MappingError),
    /// The speeds could not be applied.
    #[error("setting speeds: {0}")]
    Emulation(#[from] EmulationError),
    /// A run's graph failed.
    #[error("run {run} failed on frame {frame}: {source}")]
    Run {
        /// The run.
        run: usize,
        /// The frame's sequence number.
        frame: u64,
        /// What happened.
        #[source]
        source: RuntimeError,
    },
}

/// One run of switch mode: consecutive units on one place, at a speed factor.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchRun {
    /// The units it executes.
    pub units: Range<usize>,
    /// Where (the device's workers).
    pub place: Place,
    /// Speed factor applied to the place's workers during the run (see the module docs).
    pub speed: f64,
}

/// Switch mode: a net's runs executed one after another for each frame.
///
/// ```
/// use std::sync::Arc;
/// use taopipe_dsl::net;
/// use taopipe_nets::{Model, RandomWeights};
/// use taopipe_runtime::{Place, Runtime};
/// use taopipe_live::planners::armcoup::{Switch, SwitchRun};
///
/// let spec = net! { tiny [2, 6, 6] =>
///     c1: conv(4, 3x3, pad 1) relu,
///     c2: conv(4, 3x3, pad 1),
///     add: add(c1) relu,
///     fc: fc(3),
/// }?;
/// let model = Arc::new(Model::build(spec, &RandomWeights { seed: 1 })?);
/// let rt = Runtime::builder().workers(2).build()?;
/// let runs = vec![
///     SwitchRun { units: 0..1, place: Place::new(0, 1), speed: 1.0 },
///     SwitchRun { units: 1..3, place: Place::new(1, 1), speed: 0.5 }, // DVFS: half speed
/// ];
/// let switch = Switch::new(model.clone(), runs)?;
/// let input = vec![0.5; model.input_len()];
/// let mut out = Vec::new();
/// let stats = switch.run(&rt, [model.frame(input.clone())?], |_, f| out = f.output())?;
/// assert_eq!(out, model.forward(&rt, input, Place::new(0, 2))?);
/// assert_eq!((stats.frames, stats.runs.len()), (1, 2));
/// assert_eq!(rt.speeds(), vec![1.0, 1.0]); // restored
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Switch {
    model: Arc<Model>,
    runs: Vec<SwitchRun>,
}

impl Switch {
    /// A plan of `runs` for `model`, checked: at least one run, each non-empty, in order
    /// and covering every unit, speed factors in (0, 1].
    ///
    /// # Errors
    /// The first violation, naming the run.
    pub fn new(model: Arc<Model>, runs: Vec<SwitchRun>) -> Result<Switch, SwitchError> {
        if runs.is_empty() {
            return Err(SwitchError::NoRuns);
        }
        let mut expected = 0;
        for (run, r) in runs.iter().enumerate() {
            if r.units.start != expected {
                return Err(SwitchError::Gap {
                    run,
                    start: r.units.start,
                    expected,
                });
            }
            if r.units.is_empty() {
                return Err(SwitchError::EmptyRun {
                    run,
                    units: r.units.clone(),
                });
            }
            check_speed(run, r.speed)?;
            expected = r.units.end;
        }
        let units = model.spec().units().len();
        if expected != units {
            return Err(SwitchError::Coverage {
                covered: expected,
                units,
            });
        }
        Ok(Switch { model, runs })
    }

    /// The plan of a mapping string's runs on `devices` (from
    /// [`devices`](crate::devices::devices)), with one speed factor per run, or none for
    /// all at 1.0.
    ///
    /// # Errors
    /// A mapping that does not fit the net or the devices, a wrong number of factors, or
    /// a factor outside (0, 1].
    pub fn from_mapping(
        model: Arc<Model>,
        mapping: &Mapping,
        devices: &[Device],
        speeds: &[f64],
    ) -> Result<Switch, SwitchError> {
        mapping.check(model.spec().units().len(), devices.len())?;
        let runs = mapping.runs();
        if !speeds.is_empty() && speeds.len() != runs.len() {
            return Err(SwitchError::SpeedCount {
                speeds: speeds.len(),
                runs: runs.len(),
            });
        }
        let runs = runs
            .into_iter()
            .enumerate()
            .map(|(i, (units, device))| SwitchRun {
                units,
                place: devices[device].place,
                speed: speeds.get(i).copied().unwrap_or(1.0),
            })
            .collect();
        Switch::new(model, runs)
    }

    /// The runs, in order.
    pub fn runs(&self) -> &[SwitchRun] {
        &self.runs
    }

    /// Runs every frame through the runs, one frame at a time, and calls `sink(seq,
    /// frame)` after each. Speeds are restored when it returns, also on an error.
    ///
    /// # Errors
    /// A place this runtime does not allow (before any frame runs), or the first failing
    /// run, naming it and the frame.
    pub fn run(
        &self,
        rt: &Runtime,
        frames: impl IntoIterator<Item = Frame>,
        mut sink: impl FnMut(u64, Frame),
    ) -> Result<SwitchStats, SwitchError> {
        for (run, r) in self.runs.iter().enumerate() {
            check_place(rt, run, r.place)?;
        }
        let mut speeds = ScaledSpeeds::apply(rt, &[])?;
        let mut runs: Vec<RunStats> = self
            .runs
            .iter()
            .map(|r| RunStats {
                units: r.units.clone(),
                place: r.place,
                speed: r.speed,
                frames: 0,
                busy: Duration::ZERO,
            })
            .collect();
        let mut latency = Latencies::new();
        let start = Instant::now();
        let mut seq = 0u64;
        for frame in frames {
            let admitted = Instant::now();
            for (i, (r, stats)) in self.runs.iter().zip(&mut runs).enumerate() {
                speeds.rescale(&[(r.place, r.speed)])?;
                let t = Instant::now();
                self.model
                    .run_stage(rt, &frame, r.units.clone(), r.place)
                    .map_err(|source| SwitchError::Run {
                        run: i,
                        frame: seq,
                        source,
                    })?;
                stats.busy += t.elapsed();
                stats.frames += 1;
            }
            latency.record(admitted.elapsed());
            sink(seq, frame);
            seq += 1;
        }
        let elapsed = start.elapsed();
        drop(speeds);
        Ok(SwitchStats {
            frames: seq,
            elapsed,
            latency,
            runs,
        })
    }
}

/// One run's share of a switch-mode stream.
#[derive(Debug, Clone, PartialEq)]
pub struct RunStats {
    /// Its units.
    pub units: Range<usize>,
    /// Its place.
    pub place: Place,
    /// Its speed factor.
    pub speed: f64,
    /// Frames it executed.
    pub frames: u64,
    /// Total time of its graphs.
    pub busy: Duration,
}

impl RunStats {
    /// Mean time per frame in milliseconds (0 without frames).
    pub fn mean_ms(&self) -> f64 {
        if self.frames == 0 {
            0.0
        } else {
            self.busy.as_secs_f64() * 1e3 / self.frames as f64
        }
    }
}

/// What a switch-mode stream measured.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchStats {
    /// Frames run.
    pub frames: u64,
    /// From the first frame's start to the last one's end.
    pub elapsed: Duration,
    /// Each frame's latency, its first run's start to its last run's end.
    pub latency: Latencies,
    /// Per run.
    pub runs: Vec<RunStats>,
}

impl SwitchStats {
    /// Frames per second.
    pub fn throughput_fps(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 { self.frames as f64 / s } else { 0.0 }
    }

    /// A latency quantile in ms (`q` in 0..=1; [`Latencies::quantile_ms`]).
    pub fn latency_ms(&self, q: f64) -> f64 {
        self.latency.quantile_ms(q)
    }
}

/// Worker speeds scaled on some places until dropped, then restored to what they were
/// (pipeline mode's per-stage DVFS; switch mode rescales per run). See the module docs.
///
/// ```
/// use taopipe_runtime::{Place, Runtime};
/// use taopipe_live::planners::armcoup::ScaledSpeeds;
///
/// let rt = Runtime::builder().workers(3).build()?;
/// {
///     let _dvfs = ScaledSpeeds::apply(&rt, &[(Place::new(1, 2), 0.5)])?;
///     assert_eq!(rt.speeds(), vec![1.0, 0.5, 0.5]);
/// }
/// assert_eq!(rt.speeds(), vec![1.0, 1.0, 1.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ScaledSpeeds<'rt> {
    rt: &'rt Runtime,
    base: Vec<f64>,
    current: Vec<f64>,
}

impl<'rt> ScaledSpeeds<'rt> {
    /// Scales the workers of each place by its factor (in list order; index `i` of the
    /// list is stage `i` in errors).
    ///
    /// # Errors
    /// A factor outside (0, 1] or a place beyond the runtime's workers; nothing changes
    /// then.
    pub fn apply(rt: &'rt Runtime, scales: &[(Place, f64)]) -> Result<Self, SwitchError> {
        let base = rt.speeds();
        let mut s = ScaledSpeeds {
            rt,
            current: base.clone(),
            base,
        };
        s.rescale(scales)?;
        Ok(s)
    }

    /// The speeds found when this began, restored on drop.
    pub fn base(&self) -> &[f64] {
        &self.base
    }

    /// Scales the base speeds anew: these places by their factors, every other worker back
    /// to its base speed.
    ///
    /// # Errors
    /// As [`ScaledSpeeds::apply`].
    pub fn rescale(&mut self, scales: &[(Place, f64)]) -> Result<(), SwitchError> {
        let workers = self.base.len();
        let mut speeds = self.base.clone();
        for (i, &(place, factor)) in scales.iter().enumerate() {
            check_speed(i, factor)?;
            if place.workers().end > workers {
                return Err(SwitchError::PlaceNotAllowed {
                    run: i,
                    place,
                    workers,
                });
            }
            for w in place.workers() {
                speeds[w] = self.base[w] * factor;
            }
        }
        if speeds != self.current {
            set_speeds(self.rt, &speeds)?;
            self.current = speeds;
        }
        Ok(())
    }
}

impl Drop for ScaledSpeeds<'_> {
    fn drop(&mut self) {
        if self.current != self.base {
            // The base speeds came from this runtime, so they are valid.
            let _ = set_speeds(self.rt, &self.base);
        }
    }
}

/// Sets every worker's speed (through an emulation spec: see the module docs).
fn set_speeds(rt: &Runtime, speeds: &[f64]) -> Result<(), SwitchError> {
    let mut spec = String::new();
    for (w, s) in speeds.iter().enumerate() {
        let sep = if w == 0 { "" } else { "," };
        let _ = write!(spec, "{sep}w{w}={s}");
    }
    rt.emulate(&spec.parse::<EmulationSpec>()?)?;
    Ok(())
}

fn check_speed(run: usize, speed: f64) -> Result<(), SwitchError> {
    if speed > 0.0 && speed <= 1.0 {
        Ok(())
    } else {
        Err(SwitchError::BadSpeed { run, speed })
    }
}

fn check_place(rt: &Runtime, run: usize, place: Place) -> Result<(), SwitchError> {
    if rt.topology().is_allowed(place) {
        Ok(())
    } else {
        Err(SwitchError::PlaceNotAllowed {
            run,
            place,
            workers: rt.num_workers(),
        })
    }
}
