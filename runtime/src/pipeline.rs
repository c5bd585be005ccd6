//! Pipelines: ordered stages, each a chain of moldable tasks on its own place, working on
//! successive frames at once.
//!
//! A [`Stage`] runs a frame's work on the stage's place: the layers of a pipeline stage,
//! each a moldable task. Its work is a *runner* ([`Stage::runner`]), called once per frame:
//! typically `rt.run_prepared(..)` of a graph the frame carries, prepared once, so the
//! per-frame path neither builds a graph nor allocates. [`Stage::new`] is the simple form,
//! a runner that builds a [`TaskGraph`] for each frame and runs it. [`Pipeline::run`]
//! streams frames through the stages:
//!
//! - Each stage has a **driver**: a thread that takes the next frame from its input queue,
//!   calls the stage's runner for it (which sleeps until the graph finishes), and passes the
//!   frame on. Drivers compute nothing — every task still runs on the runtime's workers, on
//!   the stage's place — they only order the stage's frames, the way XiTAO launches one
//!   task-DAG per stage. (A driver blocked on a graph costs no CPU: it parks.)
//! - Queues between stages are **bounded** ([`Pipeline::queue`] frames), so a fast stage
//!   waits for a slow one instead of piling up frames.
//! - Each stage takes frames first-in first-out, so **frames leave in the order they came**,
//!   moved by value: none is lost or duplicated. [`PipelineStats`] counts them.
//! - **Stopping** ([`StopSignal`]) stops admitting frames; every frame already admitted is
//!   finished and delivered; frames never admitted stay in the caller's iterator.
//! - If a stage's graph fails (a task panicked), the pipeline stops admitting, delivers the
//!   frames ahead of the failed one, and returns the error naming the stage and the frame.
//! - **Reconfiguring** is calling `run` again with other stages (a new split, new places):
//!   the runtime, its workers and its trace table live on. Raise the [`StopSignal`] to end
//!   a run between two frames; the frames not yet admitted wait in the iterator for the
//!   next run, so switching loses, duplicates and reorders nothing.
//! - **Watching**: an observer ([`Pipeline::with_observer`]) sees each stage's service time
//!   for each frame as it happens, so a caller can notice the cores changing mid-run.
//!
//! # Examples
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::sync::Arc;
//! use taopipe_runtime::{Pipeline, Place, Runtime, Stage, StopSignal, Task, TaskGraph};
//!
//! let rt = Runtime::builder().workers(2).build()?;
//! // Two stages: add 1 on worker 0, then double on worker 1.
//! let add = Stage::new("add", Place::new(0, 1), |x: &Arc<AtomicU64>| {
//!     let x = x.clone();
//!     let mut g = TaskGraph::new();
//!     g.add(Task::new("add", move |_| { x.fetch_add(1, Ordering::Relaxed); }));
//!     g
//! });
//! let double = Stage::new("double", Place::new(1, 1), |x: &Arc<AtomicU64>| {
//!     let x = x.clone();
//!     let mut g = TaskGraph::new();
//!     g.add(Task::new("double", move |_| { x.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(v * 2)).ok(); }));
//!     g
//! });
//! let pipeline = Pipeline::new(vec![add, double])?;
//! let mut frames = (0..5).map(|i| Arc::new(AtomicU64::new(i)));
//! let mut out = Vec::new();
//! let stats = pipeline.run(&rt, &mut frames, |_, x| out.push(x.load(Ordering::Relaxed)), &StopSignal::new())?;
//! assert_eq!(out, [2, 4, 6, 8, 10]);
//! assert_eq!(stats.delivered, 5);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::RuntimeError;
use crate::graph::TaskGraph;
use crate::latency::Latencies;
use crate::place::Place;
use crate::pool::Runtime;

mod queue;

use queue::{Queue, Receiver, Sender};

type Runner<F> = dyn Fn(&Runtime, &F) -> Result<(), RuntimeError> + Send + Sync;

/// Sees `(stage, seq, service time)` after each runner call, on the stage's driver thread.
pub type Observer = dyn Fn(usize, u64, Duration) + Send + Sync;

/// One stage: a name, a place, and the work it runs for a frame (its tasks should run on
/// the stage's place: use [`Stage::place`] when building them).
pub struct Stage<F> {
    name: String,
    place: Place,
    run: Arc<Runner<F>>,
}

impl<F> Stage<F> {
    /// A stage that builds `work(frame)` for each frame and runs it on the runtime.
    pub fn new(
        name: impl Into<String>,
        place: Place,
        work: impl Fn(&F) -> TaskGraph + Send + Sync + 'static,
    ) -> Stage<F> {
        Stage::runner(name, place, move |rt: &Runtime, frame: &F| {
            rt.run(work(frame))
        })
    }

    /// A stage whose driver calls `run(rt, frame)` for each frame, in order; an error fails
    /// the pipeline, naming the stage and the frame. A typical runner runs a graph prepared
    /// once for the frame's buffers, so that frames cost no allocation:
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use taopipe_runtime::{Pipeline, Place, PreparedGraph, Runtime, Stage, StopSignal, Task, TaskGraph};
    ///
    /// /// A frame: a buffer and, per stage, a graph prepared over it.
    /// struct Frame { value: Arc<AtomicU64>, graphs: [PreparedGraph; 2] }
    ///
    /// let rt = Runtime::builder().workers(2).build()?;
    /// let frame = |i: u64| -> Result<Arc<Frame>, Box<dyn std::error::Error>> {
    ///     let value = Arc::new(AtomicU64::new(i));
    ///     let (a, b) = (value.clone(), value.clone());
    ///     let mut add = TaskGraph::new();
    ///     add.add(Task::new("add", move |_| { a.fetch_add(1, Ordering::Relaxed); }).on(Place::new(0, 1)));
    ///     let mut double = TaskGraph::new();
    ///     double.add(Task::new("double", move |_| { b.fetch_add(b.load(Ordering::Relaxed), Ordering::Relaxed); }).on(Place::new(1, 1)));
    ///     Ok(Arc::new(Frame { value, graphs: [rt.prepare(add)?, rt.prepare(double)?] }))
    /// };
    /// let stages = (0..2).map(|s| {
    ///     Stage::runner(format!("s{s}"), Place::new(s, 1), move |rt: &Runtime, f: &Arc<Frame>| rt.run_prepared(&f.graphs[s]))
    /// });
    /// let pipeline = Pipeline::new(stages.collect())?;
    /// let mut frames = vec![frame(1)?, frame(5)?].into_iter();
    /// let mut out = Vec::new();
    /// pipeline.run(&rt, &mut frames, |_, f| out.push(f.value.load(Ordering::Relaxed)), &StopSignal::new())?;
    /// assert_eq!(out, [4, 12]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn runner(
        name: impl Into<String>,
        place: Place,
        run: impl Fn(&Runtime, &F) -> Result<(), RuntimeError> + Send + Sync + 'static,
    ) -> Stage<F> {
        Stage {
            name: name.into(),
            place,
            run: Arc::new(run),
        }
    }

    /// The stage's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the stage's tasks run.
    pub fn place(&self) -> Place {
        self.place
    }
}

impl<F> Clone for Stage<F> {
    fn clone(&self) -> Stage<F> {
        Stage {
            name: self.name.clone(),
            place: self.place,
            run: self.run.clone(),
        }
    }
}

impl<F> fmt::Debug for Stage<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stage")
            .field("name", &self.name)
            .field("place", &self.place)
            .finish_non_exhaustive()
    }
}

/// Asks a running pipeline to stop admitting frames. Cloning shares the signal.
#[derive(Debug, Clone, Default)]
pub struct StopSignal(Arc<AtomicBool>);

impl StopSignal {
    /// A signal not yet raised.
    pub fn new() -> StopSignal {
        StopSignal::default()
    }

    /// A signal raised whenever `flag` is set, by this process or by a signal handler. A
    /// handler may do little more than store to an atomic, so the caller makes the flag,
    /// registers it (`signal_hook::flag::register(SIGINT, flag.clone())`) and hands it
    /// here; the runtime installs no handler itself, the process's signals being its
    /// owner's.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use taopipe_runtime::StopSignal;
    ///
    /// let flag = Arc::new(AtomicBool::new(false));
    /// let stop = StopSignal::from_flag(flag.clone());
    /// assert!(!stop.is_stopped());
    /// flag.store(true, Ordering::SeqCst); // what a signal handler does
    /// assert!(stop.is_stopped());
    /// ```
    pub fn from_flag(flag: Arc<AtomicBool>) -> StopSignal {
        StopSignal(flag)
    }

    /// Stops admitting frames; admitted ones are still delivered.
    pub fn stop(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether [`StopSignal::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// Why a pipeline did not run to the end of its frames.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PipelineError {
    /// A pipeline needs at least one stage.
    #[error("a pipeline needs at least one stage")]
    NoStages,
    /// Two stages share a worker: they would compete for it instead of running side by side.
    #[error("stages `{a}` ({pa}) and `{b}` ({pb}) share workers; stage places must be disjoint")]
    Overlap {
        /// First stage.
        a: String,
        /// Its place.
        pa: Place,
        /// Second stage.
        b: String,
        /// Its place.
        pb: Place,
    },
    /// A queue capacity of 0.
    #[error("queue capacity must be at least 1")]
    ZeroQueue,
    /// A queue capacity over [`MAX_QUEUE`].
    #[error("queue capacity {frames} is over the most, {MAX_QUEUE} frames")]
    QueueTooLong {
        /// The capacity asked for.
        frames: usize,
    },
    /// A stage's graph failed on a frame.
    #[error("stage `{stage}` failed on frame {frame}: {error}")]
    Stage {
        /// The stage.
        stage: String,
        /// The frame's sequence number (0 = first admitted).
        frame: u64,
        /// What happened.
        error: RuntimeError,
    },
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct PipelineStats {
    /// Frames taken from the iterator.
    pub admitted: u64,
    /// Frames that left the last stage (in order).
    pub delivered: u64,
    /// From the first admission to the last delivery.
    pub elapsed: Duration,
    /// Per stage: name, place, frames, total time its graphs took.
    pub stages: Vec<StageStats>,
    /// Admission-to-delivery latency of every delivered frame.
    pub latency: Latencies,
}

/// One stage's share.
#[derive(Debug, Clone, PartialEq)]
pub struct StageStats {
    /// The stage.
    pub name: String,
    /// Its place.
    pub place: Place,
    /// Frames it processed.
    pub frames: u64,
    /// Total time of its runner calls (for a stage of [`Stage::new`]: building, submitting
    /// and finishing its graphs).
    pub busy: Duration,
}

impl StageStats {
    /// Mean time per frame in milliseconds (0 without frames).
    pub fn mean_ms(&self) -> f64 {
        if self.frames == 0 {
            0.0
        } else {
            self.busy.as_secs_f64() * 1e3 / self.frames as f64
        }
    }
}

impl PipelineStats {
    /// Delivered frames per second.
    pub fn throughput_fps(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.delivered as f64 / s
        } else {
            0.0
        }
    }

    /// A latency quantile in milliseconds (`q` in 0..=1; [`Latencies::quantile_ms`]).
    pub fn latency_ms(&self, q: f64) -> f64 {
        self.latency.quantile_ms(q)
    }
}

/// The deepest queue between two stages, in frames. A bounded pipeline needs a few (the
/// default is 2; deeper only adds latency), and every frame in flight holds buffers of its
/// own: 4096 VGG16 frames would hold 140 GB. Deeper queues are refused, so a capacity
/// cannot overflow [`Pipeline::max_in_flight`] or a queue's allocation (`usize::MAX`
/// panicked there).
pub const MAX_QUEUE: usize = 4096;

/// Ordered stages and the capacity of the queues between them.
pub struct Pipeline<F> {
    stages: Vec<Stage<F>>,
    queue: usize,
    observer: Option<Arc<Observer>>,
}

impl<F> fmt::Debug for Pipeline<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipeline")
            .field("stages", &self.stages)
            .field("queue", &self.queue)
            .field("observed", &self.observer.is_some())
            .finish()
    }
}

/// A frame on its way, with its sequence number and admission time.
struct InFlight<F> {
    seq: u64,
    admitted: Instant,
    frame: F,
}

impl<F: Send> Pipeline<F> {
    /// A pipeline with queues of 2 frames between stages.
    ///
    /// # Errors
    /// No stages, or stages whose places overlap.
    pub fn new(stages: Vec<Stage<F>>) -> Result<Pipeline<F>, PipelineError> {
        if stages.is_empty() {
            return Err(PipelineError::NoStages);
        }
        for (i, a) in stages.iter().enumerate() {
            if let Some(b) = stages[i + 1..].iter().find(|b| a.place.overlaps(b.place)) {
                return Err(PipelineError::Overlap {
                    a: a.name.clone(),
                    pa: a.place,
                    b: b.name.clone(),
                    pb: b.place,
                });
            }
        }
        Ok(Pipeline {
            stages,
            queue: 2,
            observer: None,
        })
    }

    /// Sets how many frames may wait between two stages.
    ///
    /// # Errors
    /// A capacity of 0, or over [`MAX_QUEUE`].
    pub fn with_queue(mut self, frames: usize) -> Result<Pipeline<F>, PipelineError> {
        if frames == 0 {
            return Err(PipelineError::ZeroQueue);
        }
        if frames > MAX_QUEUE {
            return Err(PipelineError::QueueTooLong { frames });
        }
        self.queue = frames;
        Ok(self)
    }

    /// Calls `observer(stage, seq, service)` after each stage finishes each frame, on that
    /// stage's driver thread (keep it short: the stage waits for it). `seq` counts from 0
    /// per run, like the sink's.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use taopipe_runtime::{Pipeline, Place, Runtime, Stage, StopSignal, TaskGraph};
    ///
    /// let rt = Runtime::builder().workers(1).build()?;
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = seen.clone();
    /// let pipeline = Pipeline::new(vec![Stage::new("s", Place::new(0, 1), |_: &u32| TaskGraph::new())])?
    ///     .with_observer(move |stage, seq, _took| log.lock().unwrap().push((stage, seq)));
    /// pipeline.run(&rt, &mut (0..3u32), |_, _| {}, &StopSignal::new())?;
    /// assert_eq!(*seen.lock().unwrap(), [(0, 0), (0, 1), (0, 2)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_observer(
        mut self,
        observer: impl Fn(usize, u64, Duration) + Send + Sync + 'static,
    ) -> Pipeline<F> {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// Frames that may wait between two stages.
    pub fn queue(&self) -> usize {
        self.queue
    }

    /// Most frames alive at once during [`run`](Pipeline::run): one the admitter holds
    /// while it waits to enqueue, `queue` in each of the `stages + 1` queues, one per stage
    /// at work and one in the sink. A frame pool this deep never runs dry.
    pub fn max_in_flight(&self) -> usize {
        let n = self.stages.len();
        (n + 1) * self.queue + n + 2
    }

    /// The stages.
    pub fn stages(&self) -> &[Stage<F>] {
        &self.stages
    }

    /// Streams `frames` through the stages until the iterator ends or `stop` is raised,
    /// calling `sink(seq, frame)` for each finished frame, in order, on the calling thread.
    ///
    /// # Errors
    /// The first stage failure, after the frames ahead of it were delivered.
    pub fn run(
        &self,
        rt: &Runtime,
        frames: &mut (dyn Iterator<Item = F> + Send),
        mut sink: impl FnMut(u64, F),
        stop: &StopSignal,
    ) -> Result<PipelineStats, PipelineError> {
        let failure: Mutex<Option<PipelineError>> = Mutex::new(None);
        let halt = StopSignal::new(); // raised on failure: stop admitting
        let n = self.stages.len();
        let queues: Vec<Queue<InFlight<F>>> = (0..=n).map(|_| Queue::new(self.queue)).collect();
        let (mut senders, mut receivers): (Vec<_>, Vec<_>) = queues
            .iter()
            .map(|q| {
                let (tx, rx) = q.ends();
                (Some(tx), Some(rx))
            })
            .unzip();
        let mut busy = vec![(0u64, Duration::ZERO); n];
        let mut latency = Latencies::new();
        let (mut admitted, mut delivered) = (0u64, 0u64);
        let mut first: Option<Instant> = None;
        let mut last = Instant::now();
        std::thread::scope(|s| {
            let first_tx = senders[0].take().expect("fresh channel");
            let admitting = s.spawn(|| admit(frames, first_tx, stop, &halt));
            let drivers: Vec<_> = self
                .stages
                .iter()
                .enumerate()
                .map(|(i, stage)| {
                    let rx = receivers[i].take().expect("fresh channel");
                    let tx = senders[i + 1].take().expect("fresh channel");
                    let watch = Watch {
                        stage: i,
                        observer: self.observer.as_deref(),
                        failure: &failure,
                        halt: &halt,
                    };
                    s.spawn(move || drive(rt, stage, rx, tx, watch))
                })
                .collect();
            let out = receivers[n].take().expect("fresh channel");
            for flight in out {
                last = Instant::now();
                first.get_or_insert(flight.admitted); // frames leave in admission order
                latency.record(flight.admitted.elapsed());
                delivered += 1;
                sink(flight.seq, flight.frame);
            }
            admitted = admitting.join().unwrap_or(0);
            for (i, d) in drivers.into_iter().enumerate() {
                busy[i] = d.join().unwrap_or_default();
            }
        });
        if let Some(error) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(error);
        }
        Ok(PipelineStats {
            admitted,
            delivered,
            elapsed: first.map_or(Duration::ZERO, |f| last.saturating_duration_since(f)),
            stages: self
                .stages
                .iter()
                .zip(busy)
                .map(|(st, (frames, busy))| StageStats {
                    name: st.name.clone(),
                    place: st.place,
                    frames,
                    busy,
                })
                .collect(),
            latency,
        })
    }
}

/// Feeds frames into the first queue until the iterator ends or someone stops; returns how
/// many it admitted.
fn admit<F>(
    frames: &mut (dyn Iterator<Item = F> + Send),
    tx: Sender<'_, InFlight<F>>,
    stop: &StopSignal,
    halt: &StopSignal,
) -> u64 {
    let mut seq = 0;
    while !stop.is_stopped() && !halt.is_stopped() {
        let Some(frame) = frames.next() else { break };
        if tx
            .send(InFlight {
                seq,
                admitted: Instant::now(),
                frame,
            })
            .is_err()
        {
            break; // the first stage failed and hung up
        }
        seq += 1;
    }
    seq
}

/// What a driver reports to, beside its queues.
struct Watch<'a> {
    stage: usize,
    observer: Option<&'a Observer>,
    failure: &'a Mutex<Option<PipelineError>>,
    halt: &'a StopSignal,
}

/// One stage's driver: frames in order, one runner call each. Returns (frames, busy time).
fn drive<F>(
    rt: &Runtime,
    stage: &Stage<F>,
    rx: Receiver<'_, InFlight<F>>,
    tx: Sender<'_, InFlight<F>>,
    watch: Watch<'_>,
) -> (u64, Duration) {
    let (mut frames, mut busy) = (0u64, Duration::ZERO);
    for flight in rx {
        let start = Instant::now();
        let result = (stage.run)(rt, &flight.frame);
        let took = start.elapsed();
        busy += took;
        frames += 1;
        if let Some(observe) = watch.observer {
            observe(watch.stage, flight.seq, took);
        }
        if let Err(error) = result {
            watch.halt.stop();
            let mut first = watch.failure.lock().unwrap_or_else(|e| e.into_inner());
            first.get_or_insert(PipelineError::Stage {
                stage: stage.name.clone(),
                frame: flight.seq,
                error,
            });
            break; // dropping `rx` and `tx` ends the stages before and after this one
        }
        if tx.send(flight).is_err() {
            break;
        }
    }
    (frames, busy)
}
