//! Serving: frames from a source streamed through configurations that change between
//! frames, trials timed on those live frames, and the watch that notices when the cores
//! change.
//!
//! A `Server` owns the frame source and the sink for one [`Engine::run`](crate::Engine::run).
//! It runs **segments**: one configuration's pipeline over the frames the segment admits.
//! A segment ends between two frames — when a trial has enough samples, when the watch
//! sees a change, when a re-tune is asked for, at a set moment (a soak's switch to its next
//! configuration, [`mod@crate::soak`]), or when the source ends — and the pipeline
//! then drains: every admitted frame is delivered, in order, and the next segment takes
//! the next frame from the same source. Sequence numbers run on across segments, so no
//! frame is lost, duplicated or reordered by a switch.
//!
//! **Trials on live frames** (`ServedMeasure`) admit one frame more at a time until the
//! per-stage medians are stable ([`Stability`]), or until it clearly cannot beat the
//! search's best (racing, [`Samples::with_bound`]), so a trial costs the frames it needs
//! and no more; those frames are served like any other. A trial measures the pipeline **full**,
//! as it runs when it serves (stages side by side compete for caches and memory
//! bandwidth). A sample is one *beat* of the pipeline: with `p` stages, sample `k` is
//! stage `s`'s time on frame `k + p − 1 − s`, the frames the stages hold at the same
//! moment, so every sampled stage time ran beside its neighbours' work, and `n` samples
//! cost `n + p − 1` frames. (Sampling whole frames instead, the first `p − 1` frames
//! fill the pipeline unsampled and `p − 1` more must follow the last one sampled:
//! `n + 2(p − 1)` frames.) No other warm-up: the frame pool and the stage graphs are
//! prepared before a segment starts.
//!
//! A racing trial of two or more stages **probes** first: it admits one frame alone and,
//! once that frame has left the last stage, asks
//! [`Samples::probe_hopeless`](taopipe_tuner::Samples::probe_hopeless) whether it can
//! still win. If not, the trial ends with that one frame; if so, it admits its first beat
//! and its beats start after the probe frame, so it costs `n + p` frames.
//!
//! **Stopping** (the caller's [`StopSignal`], e.g. raised by a SIGINT handler): the segment
//! running admits no frame more, the frames it admitted are delivered in order, and no
//! later segment starts. A trial cut by the stop is not a measurement
//! ([`MeasureError::Stopped`]: the search ends with the trials done before). The stop may
//! be an atomic a signal handler stores to, which cannot wake a thread, so a segment
//! waiting to admit its next frame (a trial between beats, a paced source between due
//! times) looks at it every 10 ms (`STOP_POLL`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use taopipe_nets::{Frame, Model};
use taopipe_runtime::{Latencies, Pipeline, Runtime, StopSignal};
use taopipe_tuner::{
    Change, Configuration, Measure, MeasureError, Samples, Stability, StageTimes, Watch,
};

use crate::LiveError;
use crate::measure::LiveMeasure;
use crate::report::FrameRecord;

/// How often a segment waiting to admit a frame looks at the stop (module docs): well
/// under a frame of the smallest nets served, so a stop costs no frame more.
pub(crate) const STOP_POLL: Duration = Duration::from_millis(10);

/// When a segment stops admitting frames.
pub(crate) enum Gate {
    /// A trial: one frame more at a time until the samples are stable.
    Trial(Samples, Stability),
    /// Serving, watched: until the watch sees a change.
    Watch(Watch),
    /// Serving, unwatched: until the source ends.
    Serve,
    /// Serving, unwatched, until this moment: the first frame it would admit at or after
    /// it is left in the source (a soak's switch to its next configuration).
    Until(Instant),
}

/// How a segment ended.
pub(crate) struct Segment {
    /// The gate, with what it learnt (a trial's samples).
    pub gate: Gate,
    /// The change the watch saw, if any.
    pub change: Option<Change>,
    /// Whether a re-tune was asked for.
    pub forced: bool,
    /// Frames delivered.
    pub frames: u64,
    /// Each worker's busy time over the segment.
    pub busy: Vec<Duration>,
}

/// The state a segment's admitter, observer and sink share.
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

struct State {
    gate: Gate,
    /// Stage times per frame of the segment (local sequence numbers).
    rows: Vec<Vec<f64>>,
    allowed: u64,
    admitted: u64,
    /// Frames each stage has finished (each stage takes frames in order).
    finished: Vec<u64>,
    /// A trial's beats pushed to its samples so far (module docs).
    beats: u64,
    /// Whether a trial's probe frame is still on its way (module docs).
    probing: bool,
    /// Frames before a trial's first beat: 1 after a probe, else 0.
    skip: u64,
    done: bool,
    change: Option<Change>,
    forced: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stage `stage` finished frame `seq` in `took`. A trial's gate decides on each beat
    /// that completes, the watch's on each frame that leaves the last stage.
    fn observe(&self, stage: usize, stages: usize, seq: u64, took: Duration, retune: &AtomicBool) {
        let mut st = self.lock();
        let seq = seq as usize;
        if st.rows.len() <= seq {
            st.rows.resize_with(seq + 1, || vec![0.0; stages]);
        }
        st.rows[seq][stage] = took.as_secs_f64() * 1e3;
        st.finished[stage] += 1;
        let State {
            gate,
            rows,
            finished,
            beats,
            probing,
            skip,
            allowed,
            change,
            ..
        } = &mut *st;
        let mut stop = false;
        match gate {
            Gate::Trial(samples, _) if *probing => {
                // The probe frame (frame 0, alone) left the last stage: end or go on.
                if stage + 1 == stages {
                    *probing = false;
                    if samples.probe_hopeless(&rows[0]) {
                        samples.push(&rows[0]);
                        stop = true;
                    } else {
                        *skip = 1;
                        *allowed = 1 + stages as u64;
                    }
                }
            }
            Gate::Trial(samples, rule) => {
                // Beat `k` is complete once stage `s` finished frame `skip + k + p − 1 − s`.
                let complete = (0..stages)
                    .map(|s| finished[s].saturating_sub(*skip + (stages - 1 - s) as u64))
                    .min()
                    .unwrap_or(0);
                while *beats < complete && !stop {
                    let k = (*skip + *beats) as usize;
                    let beat: Vec<f64> = (0..stages).map(|s| rows[k + stages - 1 - s][s]).collect();
                    samples.push(&beat);
                    *beats += 1;
                    if samples.settled(rule) {
                        stop = true;
                    } else {
                        *allowed += 1;
                    }
                }
            }
            Gate::Watch(watch) if stage + 1 == stages => {
                if let Some(seen) = watch.observe(&rows[seq]) {
                    *change = Some(seen);
                    stop = true;
                }
            }
            Gate::Watch(_) | Gate::Serve | Gate::Until(_) => {}
        }
        if stage + 1 == stages
            && !matches!(st.gate, Gate::Trial(..))
            && retune.swap(false, Ordering::AcqRel)
        {
            st.forced = true;
            stop = true;
        }
        if stop {
            st.done = true;
        }
        self.wake.notify_all();
    }
}

/// Frames offered at a fixed rate, as a camera offers them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    pub fps: f64,
}

/// What a [`Server`] hands each frame to, in order: its sequence number (counting on across
/// segments), the frame, and its latency from arrival to output when its arrival is known.
pub(crate) type Sink<'a> = dyn FnMut(u64, Arc<Frame>, Option<Duration>) + 'a;

/// Serves one run's frames (module docs).
pub(crate) struct Server<'a> {
    rt: &'a Runtime,
    model: Arc<Model>,
    source: &'a mut (dyn Iterator<Item = Frame> + Send),
    sink: &'a mut Sink<'a>,
    pace: Option<Pace>,
    retune: Arc<AtomicBool>,
    stop: StopSignal,
    /// When the run started.
    pub start: Instant,
    taken: u64,
    delivered: u64,
    /// Whether the source has ended.
    pub exhausted: bool,
    /// Every frame delivered.
    pub timeline: Vec<FrameRecord>,
    /// The configurations served, in order of first use.
    pub configurations: Vec<Configuration>,
    /// Arrival-to-output latency of every frame.
    pub latency: Latencies,
}

impl<'a> Server<'a> {
    pub(crate) fn new(
        rt: &'a Runtime,
        model: Arc<Model>,
        source: &'a mut (dyn Iterator<Item = Frame> + Send),
        sink: &'a mut Sink<'a>,
        pace: Option<Pace>,
        retune: Arc<AtomicBool>,
        stop: StopSignal,
    ) -> Self {
        Server {
            rt,
            model,
            source,
            sink,
            pace,
            retune,
            stop,
            start: Instant::now(),
            taken: 0,
            delivered: 0,
            exhausted: false,
            timeline: Vec::new(),
            configurations: Vec::new(),
            latency: Latencies::new(),
        }
    }

    /// Frames delivered so far.
    pub(crate) fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Whether the stop was raised before the source ended: the run is cut short.
    pub(crate) fn stopped(&self) -> bool {
        self.stop.is_stopped() && !self.exhausted
    }

    /// Seconds since the run started.
    pub(crate) fn now_s(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Streams frames through `config` until `gate` says stop or the source ends.
    pub(crate) fn segment(
        &mut self,
        config: &Configuration,
        gate: Gate,
    ) -> Result<Segment, LiveError> {
        let trial = matches!(gate, Gate::Trial(..));
        let stages = config.stage_count();
        if self.stop.is_stopped() {
            // Nothing to admit: no pipeline built, no frame pool filled.
            return Ok(Segment {
                gate,
                change: None,
                forced: false,
                frames: 0,
                busy: vec![Duration::ZERO; self.rt.num_workers()],
            });
        }
        // A trial admits the frames of its first beat; each beat that does not settle it
        // admits one more, so the pipeline stays full and `n` samples cost `n + p − 1`
        // frames (module docs).
        // A racing trial of several stages probes with one frame first (module docs).
        let probing = stages > 1 && matches!(&gate, Gate::Trial(samples, _) if samples.races());
        let allowed = match (trial, probing) {
            (false, _) => u64::MAX,
            (true, true) => 1,
            (true, false) => stages as u64,
        };
        let index = match self.configurations.iter().position(|c| c == config) {
            Some(i) => i,
            None => {
                self.configurations.push(config.clone());
                self.configurations.len() - 1
            }
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                gate,
                rows: Vec::new(),
                allowed,
                admitted: 0,
                finished: vec![0; stages],
                beats: 0,
                probing,
                skip: 0,
                done: false,
                change: None,
                forced: false,
            }),
            wake: Condvar::new(),
        });
        let (watcher, retune) = (shared.clone(), self.retune.clone());
        let pipeline = Pipeline::new(LiveMeasure::stages(&self.model, config))?.with_observer(
            move |stage, seq, took| watcher.observe(stage, stages, seq, took, &retune),
        );
        LiveMeasure::reserve(self.rt, &self.model, config, &pipeline)?;
        let busy_before = busy(self.rt);
        let arrivals: Mutex<VecDeque<Instant>> = Mutex::new(VecDeque::new());
        let mut admit = Admit {
            source: &mut *self.source,
            shared: &shared,
            arrivals: &arrivals,
            stop: &self.stop,
            pace: self.pace,
            start: self.start,
            taken: &mut self.taken,
            exhausted: &mut self.exhausted,
        };
        let (start, sink) = (self.start, &mut *self.sink);
        let (timeline, latency, delivered) =
            (&mut self.timeline, &mut self.latency, &mut self.delivered);
        let mut frames = 0;
        pipeline.run(
            self.rt,
            &mut admit,
            |seq, frame| {
                let now = Instant::now();
                let took = arrivals
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .pop_front()
                    .map(|arrival| now.saturating_duration_since(arrival));
                if let Some(took) = took {
                    latency.record(took);
                }
                let stage_ms = shared
                    .lock()
                    .rows
                    .get(seq as usize)
                    .cloned()
                    .unwrap_or_default();
                timeline.push(FrameRecord {
                    seq: *delivered,
                    at_s: now.saturating_duration_since(start).as_secs_f64(),
                    configuration: index,
                    trial,
                    stage_ms,
                });
                sink(*delivered, frame, took);
                *delivered += 1;
                frames += 1;
            },
            &self.stop,
        )?;
        let busy_after = busy(self.rt);
        let mut st = shared.lock();
        let gate = std::mem::replace(&mut st.gate, Gate::Serve);
        Ok(Segment {
            gate,
            change: st.change.take(),
            forced: st.forced,
            frames,
            busy: busy_after
                .iter()
                .zip(&busy_before)
                .map(|(a, b)| a.saturating_sub(*b))
                .collect(),
        })
    }
}

/// Each worker's busy time so far.
fn busy(rt: &Runtime) -> Vec<Duration> {
    rt.stats().workers.iter().map(|w| w.busy).collect()
}

/// The segment's view of the source: admits frames while the gate allows and no stop is
/// raised, paced if asked, and notes each frame's arrival.
struct Admit<'s, 'a> {
    source: &'s mut (dyn Iterator<Item = Frame> + Send + 'a),
    shared: &'s Shared,
    arrivals: &'s Mutex<VecDeque<Instant>>,
    stop: &'s StopSignal,
    pace: Option<Pace>,
    start: Instant,
    taken: &'s mut u64,
    exhausted: &'s mut bool,
}

impl Iterator for Admit<'_, '_> {
    type Item = Arc<Frame>;

    fn next(&mut self) -> Option<Arc<Frame>> {
        {
            let mut st = self.shared.lock();
            while !st.done && st.admitted >= st.allowed && !self.stop.is_stopped() {
                st = self
                    .shared
                    .wake
                    .wait_timeout(st, STOP_POLL)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            if let Gate::Until(end) = st.gate
                && Instant::now() >= end
            {
                st.done = true;
            }
            if st.done || self.stop.is_stopped() {
                return None;
            }
            st.admitted += 1;
        }
        let arrival = match self.pace {
            Some(p) => {
                let due = self.start + Duration::from_secs_f64(*self.taken as f64 / p.fps);
                while let Some(wait) = due.checked_duration_since(Instant::now()) {
                    if self.stop.is_stopped() {
                        return None;
                    }
                    std::thread::sleep(wait.min(STOP_POLL));
                }
                due
            }
            None => Instant::now(),
        };
        let Some(frame) = self.source.next() else {
            *self.exhausted = true;
            self.shared.lock().done = true;
            self.shared.wake.notify_all();
            return None;
        };
        *self.taken += 1;
        self.arrivals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(arrival);
        Some(Arc::new(frame))
    }
}

/// Trials timed on the frames a [`Server`] serves: each configuration streams live frames,
/// one more at a time, until its stage times are stable (module docs).
pub(crate) struct ServedMeasure<'s, 'a> {
    server: &'s mut Server<'a>,
    rule: Stability,
    /// Each worker's busy time per frame in the last trial, ms.
    pub per_worker_ms: Vec<f64>,
    /// The search's best slowest-stage time so far, to race against.
    best_ms: Option<f64>,
}

impl<'s, 'a> ServedMeasure<'s, 'a> {
    /// Whether the source ended (a trial that failed for want of frames).
    pub(crate) fn exhausted(&self) -> bool {
        self.server.exhausted
    }

    pub(crate) fn new(server: &'s mut Server<'a>, rule: Stability) -> Self {
        ServedMeasure {
            server,
            rule,
            per_worker_ms: Vec::new(),
            best_ms: None,
        }
    }
}

impl Measure for ServedMeasure<'_, '_> {
    fn set_best(&mut self, best_ms: f64) {
        self.best_ms = Some(best_ms);
    }

    fn stage_times(&mut self, config: &Configuration) -> Result<StageTimes, MeasureError> {
        if self.server.stop.is_stopped() {
            return Err(MeasureError::Stopped);
        }
        let samples = Samples::new(config.stage_count()).with_bound(self.best_ms.take());
        let gate = Gate::Trial(samples, self.rule);
        let segment = self
            .server
            .segment(config, gate)
            .map_err(|e| MeasureError::Failed {
                reason: format!("{config}: {e}"),
            })?;
        let Gate::Trial(samples, _) = segment.gate else {
            unreachable!("a trial segment keeps its gate")
        };
        if self.server.stop.is_stopped() && !samples.settled(&self.rule) {
            // Cut by the stop: too few samples to be a measurement (module docs).
            return Err(MeasureError::Stopped);
        }
        if samples.is_empty() {
            return Err(MeasureError::Failed {
                reason: format!("{config}: the frame source ended"),
            });
        }
        let n = segment.frames.max(1) as f64;
        self.per_worker_ms = segment
            .busy
            .iter()
            .map(|b| b.as_secs_f64() * 1e3 / n)
            .collect();
        Ok(samples.times(3.0))
    }
}

#[cfg(test)]
mod test;
