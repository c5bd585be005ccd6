//! Errors a caller of the runtime can see.

use crate::place::Place;

/// Why a graph did not run to completion, or could not be submitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuntimeError {
    /// A task panicked; the rest of its graph was cancelled.
    #[error("task `{task}` (#{index}) panicked on worker {worker}: {message}")]
    TaskPanicked {
        /// The task's type name.
        task: String,
        /// The task's index in its graph.
        index: usize,
        /// The worker whose rank panicked first.
        worker: usize,
        /// The panic payload, when it was a string.
        message: String,
    },
    /// The runtime's own code around a task (placing it, its emulated stall, recording its
    /// time) panicked; the rest of the graph was cancelled. A bug in the runtime, reported
    /// like a task's panic so that whoever waits gets an error rather than a hang.
    #[error(
        "the runtime panicked on worker {worker} while {during} task `{task}` (#{index}): {message}"
    )]
    RuntimePanicked {
        /// The task's type name.
        task: String,
        /// The task's index in its graph.
        index: usize,
        /// The worker that panicked first.
        worker: usize,
        /// What the runtime was doing: `placing`, `stalling (emulated speed) after`,
        /// `recording the time of` (static text keeps the error small).
        during: &'static str,
        /// The panic payload, when it was a string.
        message: String,
    },
    /// The runtime shut down before the graph finished.
    #[error(
        "the runtime shut down before this graph finished ({unfinished_sinks} of its final tasks never ran)"
    )]
    ShutDown {
        /// Sinks (tasks without successors) that never finished.
        unfinished_sinks: usize,
    },
    /// A task asks for a place the topology does not allow.
    #[error(
        "task `{task}` (#{index}) asks for place {place}, which this runtime's {workers} worker(s) and layout do not allow"
    )]
    PlaceNotAllowed {
        /// The task's type name.
        task: String,
        /// The task's index in its graph.
        index: usize,
        /// The place asked for.
        place: Place,
        /// Workers in the runtime.
        workers: usize,
    },
    /// A task asks for a width no place of the layout has.
    #[error("task `{task}` (#{index}) asks for width {width}, but no allowed place has that width")]
    WidthNotAllowed {
        /// The task's type name.
        task: String,
        /// The task's index in its graph.
        index: usize,
        /// The width asked for.
        width: usize,
    },
    /// The edges of a graph form a cycle, so some task could never start.
    #[error("the task graph has a cycle through task `{task}` (#{index})")]
    Cycle {
        /// A task on the cycle.
        task: String,
        /// Its index.
        index: usize,
    },
    /// More tasks or edges than a graph can index (2^32 - 1 each).
    #[error(
        "the task graph has {tasks} tasks and {edges} edges; at most {} of each fit",
        u32::MAX
    )]
    GraphTooLarge {
        /// Tasks in the graph.
        tasks: usize,
        /// Edges in the graph.
        edges: usize,
    },
    /// A prepared graph was run while a run of it was still in flight.
    #[error(
        "the prepared graph of {tasks} task(s) starting with `{first_task}` is already running; a prepared graph runs once at a time"
    )]
    AlreadyRunning {
        /// The type name of the graph's first task.
        first_task: String,
        /// Tasks in the graph.
        tasks: usize,
    },
    /// A prepared graph was run on another runtime than the one that prepared it.
    #[error(
        "the prepared graph of {tasks} task(s) starting with `{first_task}` was prepared on another runtime; run it on that one"
    )]
    ForeignGraph {
        /// The type name of the graph's first task.
        first_task: String,
        /// Tasks in the graph.
        tasks: usize,
    },
    /// A speed factor outside [[`MIN_SPEED`](crate::MIN_SPEED), 1] (written in exponent
    /// form when tiny).
    #[error("speed factor {0:?} is out of range: it must be in [{min}, 1]", min = crate::MIN_SPEED)]
    BadSpeed(f64),
    /// A cluster index the topology does not have.
    #[error("cluster {cluster} does not exist: this runtime has {clusters} cluster(s)")]
    NoSuchCluster {
        /// The index asked for.
        cluster: usize,
        /// How many clusters exist.
        clusters: usize,
    },
    /// A worker index the runtime does not have.
    #[error("worker {worker} does not exist: this runtime has {workers} worker(s)")]
    NoSuchWorker {
        /// The index asked for.
        worker: usize,
        /// How many workers exist.
        workers: usize,
    },
    /// A worker thread could not be started.
    #[error("could not start worker thread {worker}: {message}")]
    Spawn {
        /// The worker index.
        worker: usize,
        /// The OS error.
        message: String,
    },
}
