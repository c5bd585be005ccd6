//! The engine: the one object a library user holds. It is built from a model, a runtime
//! and tuning options; [`Engine::tune`] finds the best configuration by measuring, and
//! [`Engine::run`] serves frames through it, in order, watching each stage's service time
//! and re-tuning when the cores change, and returns a [`Report`].
//!
//! Until it is tuned (or told what to serve with [`Engine::serve`]) an engine serves the
//! one-stage configuration: every unit on all workers, layer-parallel (on the
//! [`widest_place`](crate::widest_place) under a layout file). Every configuration it
//! serves keeps to the places the runtime's layout allows. Tuning keeps that
//! candidate (see [`crate::tune`]), so an engine never serves a configuration slower than
//! one it has measured.
//!
//! # Serving, watching, re-tuning
//! [`Engine::run`] streams the source through the served configuration
//! ([`crate::serve`]). With [`TuneOptions::watch`] set (the default) every frame's stage
//! times feed a [`Watch`]; on a sustained change (or [`Engine::retune`]) the pipeline
//! drains between two frames and a warm re-tune ([`taopipe_tuner::retune`]) runs on the
//! next live frames. It starts from the configuration serving, timed again by a trial: if
//! that trial does not confirm the change (the stage is back within the threshold), the
//! change was a passing one, it is dismissed and serving goes on (a re-tune asked for is
//! never dismissed, even with a change seen on the same frame). Otherwise the trial's
//! busy times per frame give the workers' speeds; the seeds are re-ranked for them and Pipe-search
//! runs from the configuration serving, the one-stage candidate included.
//!
//! A re-tune weighs the units by the time each took as served (the runtime's trace table,
//! at the place of its stage), not by the net's static weights: AlexNet's `fc6` reads 151
//! MB of weights for few FLOPs, so by the static weights the seeds balanced for a core
//! slowed to a fifth put it on that core's stage, and with a re-tune's α of 1 the search
//! stopped before moving it off (`tests/engine.rs`, a worker slowed mid-run: the one-stage
//! configuration won at 75–77 ms in 5 of 8 runs where a split measured 28 ms in the
//! others). Two rules keep those weights from hiding the change they are meant to
//! measure:
//! - they are read when the configuration begins to serve, not when the change is seen:
//!   the table's moving averages weigh each run by a quarter, so by then a slowed stage's
//!   units weighed what they take on the slowed core, and the speeds measured against
//!   them came out near 1 (VGG16, worker 1 at powersave: speed 0.9, the split `[12,9]`
//!   ranked first, 8 trials to reach `[13,8]`; read before, `[13,8]` is the first seed);
//! - a time taken at a place counts as that time on a worker of speed 1: times the
//!   place's width and its slowest worker's speed as the last re-tune measured it (all
//!   1 until then). Otherwise the units a slowed core served weigh twice their work, and
//!   when the core comes back it looks twice as fast as the other (the split `[8,13]`
//!   ranked first where `[10,11]` was best; `test::units_served_on_a_slowed_core_weigh_their_work_so_its_return_shows`).
//!
//! Its trials serve
//! frames too; then the best serves, watched against its trial's times. The report marks
//! every change and re-tune ([`What`]).
//!
//! # Stopping (interrupts)
//! An engine installs no signal handler: a library does not own its process's signals.
//! The caller hands it a [`StopSignal`] ([`Engine::with_stop`]; a handler can raise one
//! through [`StopSignal::from_flag`]) or raises [`Handle::stop`]. Then tuning ends between
//! two trials, keeping the trials done ([`StopReason::Stopped`](taopipe_tuner::StopReason)
//! in the search), and a run admits no frame more: the frames already admitted are
//! delivered, in order, and [`Engine::run`] returns the report with
//! [`Report::partial`] set. [`Engine::baseline`] stops between frames. A stop is final:
//! later runs admit nothing.
//!
//! ```
//! use std::sync::Arc;
//! use taopipe_live::{Engine, TuneOptions, frames};
//! use taopipe_nets::{Model, RandomWeights, zoo};
//! use taopipe_runtime::{Runtime, Topology};
//!
//! let rt = Runtime::builder().topology(Topology::symmetric(2)?).pin(false).build()?;
//! let spec = zoo::by_name("synth1").expect("a zoo net")?;
//! let model = Arc::new(Model::build(spec, &RandomWeights { seed: 1 })?);
//! let options = TuneOptions { alpha: 2, reps: 3, ..TuneOptions::default() };
//! let mut engine = Engine::new(&rt, model.clone(), options)?;
//! let search = engine.tune(|_config, _times| {})?;
//! assert!(search.trials.len() >= 2); // the one-stage candidate, then the search
//! let mut seqs = Vec::new();
//! let report = engine.run(frames(&model, 6, 1), |seq, _frame| seqs.push(seq))?;
//! assert_eq!(seqs, (0..6).collect::<Vec<u64>>()); // every frame, in order
//! assert_eq!(report.run.frames, 6);
//! println!("{}", serde_json::to_string(&report)?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use taopipe_dsl::Seeds;
use taopipe_nets::{Frame, Isa, Model};
use taopipe_runtime::{EmulationSchedule, Place, Runtime, StopSignal};
use taopipe_tuner::{
    Change, Configuration, PipeSearch, SearchError, SearchResult, StageTimes, StopReason,
    WarmStart, Watch, retune, worker_speeds,
};

use crate::LiveError;
use crate::report::{
    Event, Latency, Report, StageReport, StreamReport, TuningReport, What, cpu_ids,
};
use crate::serve::{Gate, Pace, ServedMeasure, Server};
use crate::stream::{allowed_places, layer_parallel};
use crate::tune::{TuneOptions, tune};

/// The lowest frame rate [`Engine::set_rate`] paces at: one frame in about 11.6 days.
/// Frame `n` is due `n / fps` seconds after the start, which must stay a representable
/// `Duration` and `Instant` (a rate of `1e-300` overflowed them on the second frame).
pub const MIN_RATE_FPS: f64 = 1e-6;

/// Tunes a net on a runtime and serves frames through the best configuration measured
/// (module docs).
#[derive(Debug)]
pub struct Engine<'rt> {
    rt: &'rt Runtime,
    model: Arc<Model>,
    options: TuneOptions,
    emulation: Option<String>,
    schedule: Option<EmulationSchedule>,
    pace: Option<f64>,
    tuned: Option<SearchResult>,
    config: Configuration,
    /// Each worker's speed relative to the fastest, as the last re-tune measured it (all
    /// 1 until then): the speeds the units' served times were taken at (module docs).
    speeds: Vec<f64>,
    handle: Handle,
}

/// How a re-tune ended.
enum Retune {
    /// The frame source ended first.
    Ended,
    /// The trial of the configuration serving did not confirm the change.
    Dismissed {
        /// The changed stage's time in that trial, ms.
        now_ms: f64,
    },
    /// The configuration to serve, and the workers' speeds the re-tune measured.
    Found(SearchResult, Vec<f64>),
}

/// Reaches a running engine from any thread or from the sink ([`Engine::handle`]).
#[derive(Debug, Clone, Default)]
pub struct Handle {
    retune: Arc<AtomicBool>,
    marks: Arc<Mutex<Vec<(Instant, String)>>>,
    stop: StopSignal,
}

impl Handle {
    /// Asks for a re-tune at the next frame (or the first frame of the next run).
    pub fn retune(&self) {
        self.retune.store(true, Ordering::Release);
    }

    /// Marks a change of conditions the engine cannot see itself (a neighbour started, a
    /// governor set by hand) now; the run's report lists it as [`What::Conditions`] and
    /// measures the recovery from it.
    pub fn mark(&self, label: impl Into<String>) {
        let mut marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
        marks.push((Instant::now(), label.into()));
    }

    /// Asks the engine to stop (module docs): tuning ends between two trials, a run
    /// between two frames, each returning what it did. Raises the engine's
    /// [`StopSignal`] ([`Engine::with_stop`]), so it is final.
    pub fn stop(&self) {
        self.stop.stop();
    }
}

impl<'rt> Engine<'rt> {
    /// An engine for `model` on `rt`, serving the one-stage configuration until tuned.
    ///
    /// # Errors
    /// A net with no units.
    pub fn new(
        rt: &'rt Runtime,
        model: Arc<Model>,
        options: TuneOptions,
    ) -> Result<Self, LiveError> {
        let units = model.spec().units().len();
        let config = Configuration::contiguous_on(&[units], &allowed_places(rt))?;
        Ok(Engine {
            rt,
            model,
            options,
            emulation: None,
            schedule: None,
            pace: None,
            tuned: None,
            config,
            speeds: vec![1.0; rt.num_workers()],
            handle: Handle::default(),
        })
    }

    /// Stops when `stop` is raised (module docs): e.g. a flag a SIGINT handler sets
    /// ([`StopSignal::from_flag`]). Handles taken before share the engine's former signal,
    /// so call this first.
    pub fn with_stop(mut self, stop: StopSignal) -> Self {
        self.handle.stop = stop;
        self
    }

    /// Records the emulation the runtime was given (as the user wrote it) in reports.
    pub fn with_emulation(mut self, spec: impl Into<String>) -> Self {
        self.emulation = Some(spec.into());
        self
    }

    /// Plays `schedule` (changes of the emulated speeds at given times) during each
    /// [`run`](Self::run), from its start; the report marks each step.
    ///
    /// # Errors
    /// A step naming a worker or cluster the runtime does not have.
    pub fn with_schedule(mut self, schedule: EmulationSchedule) -> Result<Self, LiveError> {
        schedule.validate(self.rt.topology())?;
        self.schedule = Some(schedule);
        Ok(self)
    }

    /// Offers the frames of later runs at `fps` per second, as a camera does, instead of
    /// as fast as the pipeline takes them (`None`); latency then counts from each frame's
    /// due time.
    ///
    /// # Errors
    /// A rate that is not a finite number of at least [`MIN_RATE_FPS`] (one frame in
    /// about 11.6 days): the due time of a frame at a lower rate may not be representable.
    pub fn set_rate(&mut self, fps: Option<f64>) -> Result<(), LiveError> {
        if let Some(fps) = fps.filter(|f| !(f.is_finite() && *f >= MIN_RATE_FPS)) {
            return Err(LiveError::BadRate(fps));
        }
        self.pace = fps;
        Ok(())
    }

    /// Plays no schedule in later runs (e.g. a latency run after the one it was for).
    pub fn clear_schedule(&mut self) {
        self.schedule = None;
    }

    /// Tunes by measuring ([`crate::tune::tune`], on deterministic frames whose outputs
    /// are dropped) and serves the best configuration measured; `on_trial` sees each trial.
    /// Stopped (module docs), it serves the best of the trials done, and the result says
    /// [`StopReason::Stopped`](taopipe_tuner::StopReason).
    ///
    /// # Errors
    /// A failing measurement or layer, or a stop before the first trial was done
    /// ([`LiveError::Stopped`]); the configuration served is then unchanged.
    pub fn tune(
        &mut self,
        mut on_trial: impl FnMut(&Configuration, &StageTimes),
    ) -> Result<&SearchResult, LiveError> {
        let stop = &self.handle.stop;
        let found = tune(self.rt, &self.model, &self.options, stop, &mut on_trial)?;
        self.config = found.best.clone();
        Ok(self.tuned.insert(found))
    }

    /// Serves `config` instead (no tuning).
    ///
    /// # Errors
    /// A configuration that does not fit the net's units or the runtime's workers, or with
    /// a place the runtime's layout does not allow.
    pub fn serve(&mut self, config: Configuration) -> Result<(), LiveError> {
        config.validate(self.model.spec().units().len(), self.rt.num_workers())?;
        allowed_places(self.rt).check(&config)?;
        self.config = config;
        Ok(())
    }

    /// Asks for a re-tune: at the next frame of a run in progress, or at the first frame
    /// of the next run.
    pub fn retune(&self) {
        self.handle.retune();
    }

    /// A handle that asks for re-tunes and marks changes of conditions from another
    /// thread or from the sink.
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// The configuration served now.
    pub fn configuration(&self) -> &Configuration {
        &self.config
    }

    /// The last tuning, if any (re-tunes are in the run's report).
    pub fn tuning(&self) -> Option<&SearchResult> {
        self.tuned.as_ref()
    }

    /// The model.
    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }

    /// The tuning options.
    pub fn options(&self) -> &TuneOptions {
        &self.options
    }

    /// Serves `source` (module docs) and calls `sink(seq, frame)` for each frame, in order,
    /// on the calling thread; then reports the run. The configuration served at the end
    /// stays served. Stopped (module docs), it returns once the frames admitted are
    /// delivered, the report marked [`partial`](Report::partial).
    ///
    /// # Errors
    /// The first failing stage, after the frames ahead of it were delivered.
    pub fn run(
        &mut self,
        mut source: impl Iterator<Item = Frame> + Send,
        mut sink: impl FnMut(u64, Arc<Frame>),
    ) -> Result<Report, LiveError> {
        let rt = self.rt;
        let pace = self.pace.map(|fps| Pace { fps });
        let mut sink = |seq, frame, _latency| sink(seq, frame);
        let mut server = Server::new(
            rt,
            self.model.clone(),
            &mut source,
            &mut sink,
            pace,
            self.handle.retune.clone(),
            self.handle.stop.clone(),
        );
        let conditions = Mutex::new(Vec::new());
        let schedule = self.schedule.clone();
        // The schedule plays until serving ends, stopped or not.
        let played = StopSignal::new();
        let start = server.start;
        let served = std::thread::scope(|s| {
            let player = schedule.as_ref().map(|schedule| {
                let (played, conditions) = (&played, &conditions);
                s.spawn(move || {
                    schedule.play(rt, start, played, |at, step| {
                        let mut events = conditions.lock().unwrap_or_else(|e| e.into_inner());
                        events.push(Event {
                            at_s: at.as_secs_f64(),
                            frame: 0,
                            what: What::Conditions {
                                step: step.to_string(),
                            },
                        });
                    })
                })
            });
            let served = self.serve_watched(&mut server);
            played.stop();
            let played = player.map(|p| p.join().unwrap_or(Ok(())));
            served.and_then(|events| match played {
                Some(Err(e)) => Err(LiveError::from(e)),
                _ => Ok(events),
            })
        })?;
        let mut events = served;
        events.extend(conditions.into_inner().unwrap_or_else(|e| e.into_inner()));
        let marks =
            std::mem::take(&mut *self.handle.marks.lock().unwrap_or_else(|e| e.into_inner()));
        events.extend(marks.into_iter().map(|(at, label)| Event {
            at_s: at.saturating_duration_since(start).as_secs_f64(),
            frame: 0,
            what: What::Conditions { step: label },
        }));
        for e in &mut events {
            if matches!(e.what, What::Conditions { .. }) {
                e.frame = server.timeline.partition_point(|f| f.at_s <= e.at_s) as u64;
            }
        }
        events.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
        let mut report = self.report(&server, events);
        report.recover();
        Ok(report)
    }

    /// Serves segments until the source ends, re-tuning on each change; the events seen.
    fn serve_watched(&mut self, server: &mut Server<'_>) -> Result<Vec<Event>, LiveError> {
        let mut events = Vec::new();
        let mut expected = self.tuned.as_ref().map(|t| t.best_times.clone());
        // Each unit's time as served, taken before the configuration serves (module docs).
        let mut weights = self.served_unit_weights();
        loop {
            if server.stopped() {
                return Ok(events);
            }
            let gate = match self.options.watch {
                Some(options) => Gate::Watch(Watch::new(options, expected.as_ref())),
                None => Gate::Serve,
            };
            let segment = if self.handle.retune.swap(false, Ordering::AcqRel) {
                None // asked before the run: re-tune at once
            } else {
                Some(server.segment(&self.config, gate)?)
            };
            if server.exhausted || server.stopped() {
                return Ok(events);
            }
            let seen_s = server.now_s();
            let (change, forced) = match segment {
                Some(s) if s.change.is_some() || s.forced => (s.change, s.forced),
                Some(_) => return Ok(events), // (only the source ends a serve)
                None => (None, true),
            };
            let (seen, probe) = trigger(change.as_ref(), forced);
            events.extend(seen.into_iter().map(|what| Event {
                at_s: seen_s,
                frame: server.delivered(),
                what,
            }));
            let from = self.config.to_string();
            // (Taken now if the units had no time yet when serving began.)
            let unit_weights = weights.clone().or_else(|| self.served_unit_weights());
            let found = match self.retune_on(server, probe, unit_weights.as_deref())? {
                Retune::Ended => return Ok(events),
                Retune::Dismissed { now_ms } => {
                    events.push(Event {
                        at_s: server.now_s(),
                        frame: server.delivered(),
                        what: What::Dismissed { now_ms },
                    });
                    // The next window is checked against the old reference: a real change
                    // that came just after the dismissing trial is still caught.
                    expected = change.map(|c| StageTimes::new(c.reference_ms));
                    continue;
                }
                Retune::Found(found, speeds) => {
                    self.speeds = speeds;
                    found
                }
            };
            self.config = found.best.clone();
            expected = Some(found.best_times.clone());
            weights = self.served_unit_weights();
            events.push(Event {
                at_s: server.now_s(),
                frame: server.delivered(),
                what: What::Retuned {
                    from,
                    to: found.best.to_string(),
                    slowest_ms: found.best_ms(),
                    trials: found.trials.len(),
                    took_s: server.now_s() - seen_s,
                    search: taopipe_tuner::Report::new(
                        "retune",
                        Some(self.options.retune_alpha),
                        &found,
                    ),
                },
            });
        }
    }

    /// A warm re-tune on the server's next frames (module docs), over units of `weights`
    /// (each unit's time as served before the change). The configuration serving is timed
    /// first; if that trial does not confirm `change` (the stage that moved is back within
    /// the watch's threshold of what it was), the change was a passing one and nothing is
    /// searched.
    fn retune_on(
        &self,
        server: &mut Server<'_>,
        change: Option<&Change>,
        weights: Option<&[u64]>,
    ) -> Result<Retune, LiveError> {
        let (rt, spec) = (self.rt, self.model.spec());
        let c = self.options.stage_limit(rt, &self.model);
        let weights = match weights {
            Some(weights) => weights.to_vec(),
            None => Seeds::from_net(spec, c.max(1))?.weights().to_vec(),
        };
        let mut measure = ServedMeasure::new(server, self.options.stability());
        let ended = |m: &ServedMeasure<'_, '_>, e: taopipe_tuner::MeasureError| {
            if m.exhausted() || e == taopipe_tuner::MeasureError::Stopped {
                Ok(Retune::Ended)
            } else {
                Err(LiveError::from(SearchError::from(e)))
            }
        };
        // The configuration serving, timed again: the window that showed the change mixes
        // frames from before it, and its median can sit just past the threshold.
        let times = match taopipe_tuner::Measure::stage_times(&mut measure, &self.config) {
            Ok(times) => times,
            Err(e) => return ended(&measure, e),
        };
        let per_worker_ms = measure.per_worker_ms.clone();
        let speeds = worker_speeds(&self.config, &weights, &per_worker_ms);
        if let (Some(change), Some(watch)) = (change, self.options.watch) {
            let now_ms = times.stage_ms.get(change.stage).copied().unwrap_or(0.0);
            let shift = (now_ms / change.was_ms).max(change.was_ms / now_ms);
            if shift <= 1.0 + watch.threshold {
                return Ok(Retune::Dismissed { now_ms });
            }
        }
        let start = WarmStart {
            current: &self.config,
            times: &times,
            per_worker_ms: &per_worker_ms,
        };
        let search = PipeSearch::on(self.options.retune_alpha, allowed_places(rt));
        match retune(&search, &weights, c, start, &mut measure) {
            Ok(found) => {
                // A pipeline's stages tell its workers apart; a gang's workers share one
                // time, so a one-stage winner keeps the speeds of the trial above.
                let speeds = if found.best.stage_count() > 1 {
                    let workers = rt.num_workers();
                    let per_worker = per_worker_of_stages(&found.best, &found.best_times, workers);
                    worker_speeds(&found.best, &weights, &per_worker)
                } else {
                    speeds
                };
                Ok(Retune::Found(found, speeds))
            }
            Err(SearchError::Measure(e)) => ended(&measure, e),
            Err(e) => Err(e.into()),
        }
    }

    /// Each unit's weight: its time per frame as it was served, in µs, on a worker of speed
    /// 1 (the runtime's trace table at the place of the unit's stage, times the place's
    /// width and its slowest worker's speed in [`Engine::speeds`]; module docs). `None`
    /// where a unit that runs a task has no time there; a unit without one (a lone
    /// flatten) weighs 1.
    ///
    /// The engine takes it when a configuration starts serving, not when a change is seen
    /// (module docs say why).
    fn served_unit_weights(&self) -> Option<Vec<u64>> {
        let trace = self.rt.trace_table();
        let units = self.model.spec().units();
        let mut weights = Vec::with_capacity(units.len());
        for (stage, range) in self.config.stages().iter().zip(self.config.unit_ranges()) {
            let times = self
                .model
                .layer_times(&trace, Place::new(stage.leader, stage.width));
            let speeds = self.speeds.get(stage.leader..stage.leader + stage.width)?;
            for unit in units.get(range)? {
                let layers = unit.layers();
                let (timed, seconds) = times
                    .iter()
                    .filter(|t| layers.contains(&t.index))
                    .fold((0, 0.0), |(n, sum), t| (n + 1, sum + t.seconds));
                if timed < layers.filter(|&i| self.model.runs_task(i)).count() {
                    return None;
                }
                weights.push(unit_work(seconds, speeds));
            }
        }
        (weights.len() == units.len()).then_some(weights)
    }

    fn report(&self, server: &Server<'_>, events: Vec<Event>) -> Report {
        let final_index = server.configurations.iter().position(|c| *c == self.config);
        let last = server.timeline.last().map_or(0.0, |f| f.at_s);
        let frames = server.delivered();
        let pipeline = self
            .config
            .stages()
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let served: Vec<f64> = server
                    .timeline
                    .iter()
                    .filter(|f| Some(f.configuration) == final_index && !f.trial)
                    .filter_map(|f| f.stage_ms.get(i).copied())
                    .collect();
                StageReport {
                    units: s.layers,
                    leader: s.leader,
                    width: s.width,
                    cpus: cpu_ids(self.rt.topology(), s.leader..s.leader + s.width),
                    ms_per_frame: served.iter().sum::<f64>() / served.len().max(1) as f64,
                }
            })
            .collect();
        Report {
            version: env!("CARGO_PKG_VERSION"),
            net: self.model.spec().name().to_string(),
            isa: Isa::current().map_or("unknown", Isa::name).to_string(),
            cpus: cpu_ids(self.rt.topology(), 0..self.rt.num_workers()),
            speeds: self.rt.speeds(),
            emulation: self.emulation.clone(),
            schedule: self.schedule.as_ref().map(ToString::to_string),
            tuning: self.tuned.as_ref().map(|found| TuningReport {
                options: self.options.clone(),
                search: taopipe_tuner::Report::new(
                    &self.options.search.to_string(),
                    Some(self.options.alpha),
                    found,
                ),
            }),
            pipeline,
            run: StreamReport {
                frames,
                throughput_fps: if last > 0.0 {
                    frames as f64 / last
                } else {
                    0.0
                },
                latency_ms: Latency {
                    p50: server.latency.quantile_ms(0.5),
                    p99: server.latency.quantile_ms(0.99),
                },
            },
            baseline: None,
            rate_fps: self.pace,
            events,
            configurations: server
                .configurations
                .iter()
                .map(ToString::to_string)
                .collect(),
            timeline: server.timeline.clone(),
            recoveries: Vec::new(),
            latency_run: None,
            partial: server.stopped()
                || self
                    .tuned
                    .as_ref()
                    .is_some_and(|t| t.stopped == StopReason::Stopped),
        }
    }

    /// Streams `source` through the layer-parallel baseline (one frame at a time, every
    /// layer on all workers, as ONNX Runtime runs a net; on the
    /// [`widest_place`](crate::widest_place) under a layout) under the same conditions.
    /// Stopped (module docs), it takes no frame more and reports the frames it ran.
    ///
    /// # Errors
    /// A failing layer.
    pub fn baseline(
        &self,
        source: impl Iterator<Item = Frame>,
        sink: impl FnMut(u64, Frame),
    ) -> Result<StreamReport, LiveError> {
        let stop = &self.handle.stop;
        let source = source.take_while(|_| !stop.is_stopped());
        let stats = layer_parallel(self.rt, &self.model, source, sink)?;
        Ok(StreamReport::from_switch(&stats))
    }
}

/// Each of `workers` workers' time per frame from a configuration's stage times: its
/// stage's time (0, read as "no time", for a worker outside every stage).
fn per_worker_of_stages(config: &Configuration, times: &StageTimes, workers: usize) -> Vec<f64> {
    let mut ms = vec![0.0; workers];
    for ((leader, width), &t) in config.places().into_iter().zip(&times.stage_ms) {
        if let Some(stage) = ms.get_mut(leader..leader + width) {
            stage.fill(t);
        }
    }
    ms
}

/// A unit's weight for a re-tune: its time of `seconds` at a place whose workers have
/// `speeds`, as µs on one worker of speed 1 (`width × slowest speed` such workers run
/// that place; module docs).
fn unit_work(seconds: f64, speeds: &[f64]) -> u64 {
    let slowest = speeds.iter().copied().fold(f64::INFINITY, f64::min);
    (seconds * 1e6 * speeds.len() as f64 * slowest)
        .round()
        .max(1.0) as u64
}

/// What a segment that ended with `change` and/or a `forced` re-tune logs, in order, and
/// the change the re-tune's first trial must confirm: none when a re-tune was asked for,
/// which is never dismissed (a change seen on the same frame is still logged).
fn trigger(change: Option<&Change>, forced: bool) -> (Vec<What>, Option<&Change>) {
    let mut seen: Vec<What> = change
        .map(|c| What::Change { change: c.clone() })
        .into_iter()
        .collect();
    if forced {
        seen.push(What::Forced);
    }
    (seen, change.filter(|_| !forced))
}

#[cfg(test)]
mod test {
    use super::*;

    fn change() -> Change {
        Change {
            stage: 0,
            was_ms: 10.0,
            now_ms: 20.0,
            window_ms: vec![20.0],
            reference_ms: vec![10.0],
        }
    }

    #[test]
    fn units_served_on_a_slowed_core_weigh_their_work_so_its_return_shows() {
        // Six units of equal work, split 3 + 3; worker 1 ran at half speed while they
        // were served, so its units took 20 ms each against 10 on worker 0.
        let config = Configuration::contiguous(&[3, 3], 2).expect("config");
        let speeds = [1.0, 0.5];
        let weights: Vec<u64> = [0.010, 0.010, 0.010, 0.020, 0.020, 0.020]
            .iter()
            .enumerate()
            .map(|(u, &s)| unit_work(s, &speeds[u / 3..u / 3 + 1]))
            .collect();
        assert_eq!(weights, vec![10_000; 6]);
        // Worker 1 is back at full speed: both stages take 30 ms, and so do the workers.
        assert_eq!(
            worker_speeds(&config, &weights, &[30.0, 30.0]),
            vec![1.0, 1.0]
        );
        // Weighed by their times alone, worker 1 would look twice as fast as worker 0.
        let timed: Vec<u64> = [10_000, 10_000, 10_000, 20_000, 20_000, 20_000].to_vec();
        assert_eq!(
            worker_speeds(&config, &timed, &[30.0, 30.0]),
            vec![0.5, 1.0]
        );
        // A gang of both workers, one at half speed, does the work of one worker of speed 1.
        assert_eq!(unit_work(0.010, &[1.0, 0.5]), 10_000);
        // A two-stage winner's stage times are its workers' times.
        let times = StageTimes::new(vec![30.0, 60.0]);
        assert_eq!(
            per_worker_of_stages(&config, &times, 3),
            vec![30.0, 60.0, 0.0]
        );
    }

    #[test]
    fn a_forced_re_tune_and_a_change_on_one_frame_are_both_logged_and_never_dismissed() {
        let c = change();
        let (seen, probe) = trigger(Some(&c), true);
        assert!(matches!(
            seen.as_slice(),
            [What::Change { .. }, What::Forced]
        ));
        assert!(
            probe.is_none(),
            "a forced re-tune is not checked against the change"
        );
        let (seen, probe) = trigger(Some(&c), false);
        assert!(matches!(seen.as_slice(), [What::Change { .. }]));
        assert_eq!(probe, Some(&c));
        let (seen, probe) = trigger(None, true);
        assert!(matches!(seen.as_slice(), [What::Forced]));
        assert!(probe.is_none());
    }
}
