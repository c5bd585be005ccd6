//! Prepared graphs: a task graph validated and laid out once, then run again and again.
//!
//! Inference runs the same graph for every frame. [`Runtime::run`](crate::Runtime::run)
//! validates placements, checks for cycles, sorts the edges, resolves trace-table rows and
//! builds the run state each time; [`Runtime::prepare`](crate::Runtime::prepare) does all
//! of that once and [`Runtime::run_prepared`](crate::Runtime::run_prepared) only resets
//! the counters. Together with the registry's allocation-free dispatch (gang bookkeeping
//! in the graph, queue locks held by recursion, roots listed once), a run of a prepared
//! graph whose tasks have fixed places makes no heap allocation once the queues and
//! histograms have grown: the kernel engine's per-frame path stays off the allocator.
//!
//! # When the state may be reset
//!
//! A run resets the pending counters (from the in-degrees saved at preparation), the sink
//! counter, the failure flag and the outcome, and each gang slot re-arms when its task is
//! dispatched. That is only sound when no worker still touches the previous run's state.
//! A run is over when its outcome is *settled*, which the last sink's worker marks under
//! the graph's lock; the next run resets after seeing that mark under the same lock (and,
//! when another thread runs it, after acquiring the `running` flag the first released).
//! What can a worker still do then?
//!
//! - Every task has completed: each task reaches a sink, a sink is counted only after it
//!   ran, and it runs only after each predecessor released it. Failed runs too: cancelled
//!   tasks are still popped and completed, only their bodies are skipped.
//! - So every queue entry of the run was popped, and every rank of every gang returned from
//!   the body and from the barrier before its `rank_done` — the slot's last touch, which
//!   the last rank's acquire orders before the task's completion.
//! - A task's completion (`complete`) releases its successors, then calls `finish_one`,
//!   which for anything but a sink only reads the immutable successor layout. A release
//!   that is not the successor's last cannot be the end of the run, since that successor
//!   still has to run; the last one happens before the successor runs, hence before the
//!   run settles (the AcqRel read-modify-writes on `pending` and `sinks_left` chain these
//!   orders together).
//! - The last sink's worker takes the lock, marks the run settled and unlocks: its last
//!   touch. Recording into the trace table and the stats happened before (and touches
//!   the runtime's tables, not the graph's state).
//!
//! What is left are `Arc` clones that workers drop a moment later: reference counts, not
//! run state. The earlier design's waiter, which returned as soon as `sinks_left` read
//! zero, would have raced with the last sink taking the lock; hence the `settled` mark.
//!
//! # Misuse
//!
//! A second run while one is in flight is [`RuntimeError::AlreadyRunning`], found by a
//! flag, never a reset under a live run. A graph's rows and stats ids belong to the runtime
//! that prepared it, so running it on another is [`RuntimeError::ForeignGraph`]. A run that
//! failed (a task panicked) still drains every task, so the graph is ready for the next run.
//! Prepared runs are not listed for shutdown: `run_prepared` borrows the runtime until the
//! run settles, so the runtime cannot be dropped under it.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use crate::error::RuntimeError;
use crate::graph::GraphState;
use crate::registry::Registry;

/// A task graph ready to run many times on the runtime that prepared it
/// ([`Runtime::prepare`](crate::Runtime::prepare),
/// [`Runtime::run_prepared`](crate::Runtime::run_prepared)).
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use taopipe_runtime::{Place, Runtime, Task, TaskGraph};
///
/// let rt = Runtime::builder().workers(2).build()?;
/// let ranks = Arc::new(AtomicUsize::new(0));
/// let mut g = TaskGraph::new();
/// let r = ranks.clone();
/// let conv = g.add(Task::new("conv", move |_| { r.fetch_add(1, Ordering::Relaxed); }).on(Place::new(0, 2)));
/// let r = ranks.clone();
/// let pool = g.add(Task::new("pool", move |_| { r.fetch_add(1, Ordering::Relaxed); }).on(Place::new(1, 1)));
/// g.make_edge(conv, pool);
/// let frame = rt.prepare(g)?;
/// for _ in 0..10 {
///     rt.run_prepared(&frame)?;
/// }
/// assert_eq!(ranks.load(Ordering::Relaxed), 10 * 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PreparedGraph {
    state: Arc<GraphState>,
    /// Each task's predecessor count: the pending counters restart from it every run.
    indegree: Box<[u32]>,
    /// The runtime whose trace-table rows and stats ids the graph's tasks record into.
    /// Weak, so a graph does not keep a dropped pool alive; it still pins the allocation,
    /// so no other runtime can have the same address.
    owner: Weak<Registry>,
    /// Set while a run is in flight.
    running: AtomicBool,
}

impl PreparedGraph {
    pub(crate) fn new(state: GraphState, owner: Weak<Registry>) -> PreparedGraph {
        PreparedGraph {
            indegree: state.in_degrees(),
            state: Arc::new(state),
            owner,
            running: AtomicBool::new(false),
        }
    }

    /// Number of tasks.
    pub fn len(&self) -> usize {
        self.state.tasks.len()
    }

    /// Whether the graph has no task.
    pub fn is_empty(&self) -> bool {
        self.state.tasks.is_empty()
    }

    /// Whether `registry` prepared the graph (so it may run there).
    pub(crate) fn is_from(&self, registry: &Arc<Registry>) -> bool {
        std::ptr::eq(self.owner.as_ptr(), Arc::as_ptr(registry))
    }

    /// Runs the graph to completion on `registry` (see the module docs).
    pub(crate) fn run(&self, registry: &Arc<Registry>) -> Result<(), RuntimeError> {
        if !self.is_from(registry) {
            let (first_task, tasks) = self.name();
            return Err(RuntimeError::ForeignGraph { first_task, tasks });
        }
        if self.running.swap(true, Ordering::Acquire) {
            let (first_task, tasks) = self.name();
            return Err(RuntimeError::AlreadyRunning { first_task, tasks });
        }
        let _running = Running(&self.running);
        self.state.reset(&self.indegree);
        registry.start(&self.state);
        self.state.wait_settled()
    }

    /// What errors call the graph: its first task's type and its size.
    fn name(&self) -> (String, usize) {
        let first = self.state.tasks.first().map_or("(none)", |t| t.kind);
        (first.to_string(), self.len())
    }
}

/// Clears the `running` flag when a run ends, also if waiting unwinds.
struct Running<'a>(&'a AtomicBool);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl fmt::Debug for PreparedGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedGraph")
            .field("tasks", &self.len())
            .field("running", &self.running.load(Ordering::Relaxed))
            .finish()
    }
}
