//! taopipe-runtime: a XiTAO-style work-stealing runtime whose tasks are **moldable**.
//!
//! A task has a *width* (how many workers run it together) and a *place* (which workers:
//! a contiguous run `leader..leader+width`). Every worker of the place calls the task's
//! body at the same time with its own rank, so a layer of a CNN runs data-parallel on
//! exactly the cores a pipeline stage owns. Tasks form DAGs; ready tasks are load-balanced
//! by work stealing, own cluster first. A performance trace table remembers what each
//! task type took at each place and places tasks that let the runtime choose. A speed
//! factor per cluster emulates slow cores (big.LITTLE, a DVFS governor) on a machine
//! without them.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use taopipe_runtime::{Place, Runtime, Task, TaskGraph};
//!
//! let rt = Runtime::builder().workers(2).build()?;
//! let parts = Arc::new(AtomicUsize::new(0));
//! let mut g = TaskGraph::new();
//! let p = parts.clone();
//! let wide = g.add(Task::new("wide", move |_| { p.fetch_add(1, Ordering::Relaxed); }).on(Place::new(0, 2)));
//! let p = parts.clone();
//! let narrow = g.add(Task::new("narrow", move |_| { p.fetch_add(10, Ordering::Relaxed); }));
//! g.make_edge(wide, narrow);
//! rt.run(g)?;
//! assert_eq!(parts.load(Ordering::Relaxed), 12);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The design is in `runtime/README.md`.
#![deny(missing_docs)]

mod cpulist;
mod emulation;
mod error;
mod excerpt;
mod gang;
mod graph;
mod latency;
mod pipeline;
mod place;
mod pool;
mod prepared;
mod ptt;
mod registry;
mod shared;
mod sleep;
mod spans;
mod stats;
mod task;
mod topology;

/// The examples of `runtime/README.md`, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;

pub use crate::cpulist::{format_cpu_list, parse_cpu_list};
pub use crate::emulation::{
    EmulationError, EmulationSchedule, EmulationSpec, MIN_SPEED, PERFORMANCE, POWERSAVE,
    ScheduleError, Step, Target,
};
pub use crate::error::RuntimeError;
pub use crate::excerpt::excerpt;
pub use crate::graph::{GraphHandle, TaskGraph, TaskId};
pub use crate::latency::Latencies;
pub use crate::pipeline::{
    MAX_QUEUE, Observer, Pipeline, PipelineError, PipelineStats, Stage, StageStats, StopSignal,
};
pub use crate::place::Place;
pub use crate::pool::{BuildError, DEFAULT_IDLE_SPIN, Runtime, RuntimeBuilder};
pub use crate::prepared::PreparedGraph;
pub use crate::ptt::{EMA_WEIGHT, Objective, PlacePolicy, TraceEntry, TraceRow, TraceSnapshot};
pub use crate::shared::{ClaimError, ReadGuard, Rect, RectGuard, SharedSlice, WriteGuard};
pub use crate::spans::{GangRun, Span, Spans};
pub use crate::stats::{Stats, TaskTypeStats, WorkerStats};
pub use crate::task::{Placement, Task, TaskCtx, split_range};
pub use crate::topology::{Cluster, CoreKind, Cpu, MAX_LAYOUT_BYTES, Topology, TopologyError};
