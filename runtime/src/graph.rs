//! Task graphs: tasks plus `make_edge` dependencies, and the shared state of a run.
//!
//! The run state ([`GraphState`]) is built once per graph: dense successor lists, the
//! roots, per-task pending counters and gang slots. A one-shot graph ([`Runtime::run`])
//! uses it once and is freed by an idle worker; a prepared graph
//! ([`Runtime::prepare`](crate::Runtime::prepare)) resets it between runs (see
//! `prepared.rs` for when that is safe).
//!
//! [`Runtime::run`]: crate::Runtime::run

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};

use crate::error::RuntimeError;
use crate::gang::GangSlot;
use crate::ptt::Row;
use crate::registry::Registry;
use crate::task::Task;

/// A task's handle inside its [`TaskGraph`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TaskId(pub(crate) usize);

impl TaskId {
    /// The task's position in the order it was added.
    pub fn index(self) -> usize {
        self.0
    }
}

/// A DAG of moldable tasks. A task becomes ready when its last predecessor finishes.
///
/// # Examples
/// ```
/// use std::sync::{Arc, Mutex};
/// use taopipe_runtime::{Runtime, Task, TaskGraph};
///
/// let rt = Runtime::builder().workers(2).build()?;
/// let log = Arc::new(Mutex::new(Vec::new()));
/// let mut g = TaskGraph::new();
/// let ids: Vec<_> = (0..3).map(|i| {
///     let log = log.clone();
///     g.add(Task::new("step", move |_| log.lock().unwrap().push(i)))
/// }).collect();
/// g.make_edge(ids[0], ids[1]);
/// g.make_edge(ids[1], ids[2]);
/// rt.run(g)?;
/// assert_eq!(*log.lock().unwrap(), [0, 1, 2]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct TaskGraph {
    tasks: Vec<Task>,
    /// `(from, to)` pairs in the order they were made; submission sorts them into a dense
    /// successor array in one pass, so building a big graph allocates nothing per task.
    edges: Vec<(u32, u32)>,
}

impl TaskGraph {
    /// An empty graph.
    pub fn new() -> TaskGraph {
        TaskGraph::default()
    }

    /// An empty graph with room for `tasks` tasks and `edges` edges.
    pub fn with_capacity(tasks: usize, edges: usize) -> TaskGraph {
        TaskGraph {
            tasks: Vec::with_capacity(tasks),
            edges: Vec::with_capacity(edges),
        }
    }

    /// Adds a task with no dependencies yet.
    ///
    /// # Panics
    /// Past `u32::MAX - 1` tasks, which no graph of this runtime can index.
    pub fn add(&mut self, task: Task) -> TaskId {
        assert!(
            self.tasks.len() < u32::MAX as usize,
            "a task graph holds at most {} tasks",
            u32::MAX - 1
        );
        self.tasks.push(task);
        TaskId(self.tasks.len() - 1)
    }

    /// `to` starts only after `from` finished.
    ///
    /// # Panics
    /// If either id does not belong to this graph (a programming error, like an index out
    /// of bounds).
    pub fn make_edge(&mut self, from: TaskId, to: TaskId) {
        assert!(
            from.0 < self.tasks.len() && to.0 < self.tasks.len(),
            "make_edge({}, {}) on a graph of {} tasks",
            from.0,
            to.0,
            self.tasks.len()
        );
        self.edges.push((from.0 as u32, to.0 as u32));
    }

    /// Number of tasks.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether the graph has no task.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Number of edges made so far (duplicates count).
    pub fn edge_count(&self) -> usize {
        self.edges.len()
    }

    /// The tasks, in the order they were added.
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    pub(crate) fn into_parts(self) -> (Vec<Task>, Vec<(u32, u32)>) {
        (self.tasks, self.edges)
    }
}

/// What a task records into: its trace-table row and its stats slot, resolved once per
/// distinct (type, hint) at submission so the hot path does no hashing.
pub(crate) struct Key {
    pub(crate) row: Arc<Row>,
    pub(crate) kind_id: usize,
}

/// A submitted graph: tasks, dependencies in a dense layout (the `pending` counters of
/// neighbouring tasks share cache lines, successors are one flat array), what is left to
/// do, and how it ended.
pub(crate) struct GraphState {
    pub(crate) tasks: Vec<Task>,
    /// Per task: index into `keys`.
    key_of: Box<[u32]>,
    keys: Box<[Key]>,
    pending: Box<[AtomicU32]>,
    /// Successors of task `i`: `succ[succ_start[i]..succ_start[i + 1]]`.
    succ_start: Box<[u32]>,
    succ: Box<[u32]>,
    /// Tasks without predecessors, found once: a run starts by queuing them.
    roots: Box<[u32]>,
    /// Per task: its gang's bookkeeping when it runs on more than its dispatcher.
    gangs: Box<[GangSlot]>,
    /// Number of sinks: `sinks_left` starts from it.
    sinks: usize,
    /// Sinks (tasks without successors) not yet finished or cancelled. The graph is done
    /// when this reaches zero: every task reaches a sink, and a sink starts only after all
    /// its predecessors completed. Counting sinks instead of all tasks keeps most
    /// completions off this shared counter. It lives on its own cache line, away from the
    /// read-mostly fields above (and, since padding aligns the struct, away from the
    /// `Arc`'s reference count too).
    sinks_left: CachePadded<AtomicUsize>,
    /// Set once a task panicked: later tasks are skipped.
    failed: AtomicBool,
    outcome: Mutex<Outcome>,
    done: Condvar,
}

/// How a run ended, behind the graph's lock.
#[derive(Default)]
struct Outcome {
    /// The first failure, or `Ok` once the last sink finished without one.
    result: Option<Result<(), RuntimeError>>,
    /// Set, under the lock, by whoever ends the run (the last sink, or shutdown). A waiter
    /// that sees it knows the setter has nothing left to do with this run's state but to
    /// unlock — the counter `sinks_left` alone would not say that: the last sink's worker
    /// decrements it before it takes the lock.
    settled: bool,
}

impl GraphState {
    /// Builds the run state, checking the graph for cycles (Kahn's algorithm).
    /// `key` resolves a (type, hint) to its trace-table row and stats slot.
    pub(crate) fn new(
        tasks: Vec<Task>,
        edges: Vec<(u32, u32)>,
        mut key: impl FnMut(&'static str, u64) -> Key,
    ) -> Result<GraphState, RuntimeError> {
        let n = tasks.len();
        if edges.len() >= u32::MAX as usize {
            return Err(RuntimeError::GraphTooLarge {
                tasks: n,
                edges: edges.len(),
            });
        }
        // Counting sort of the edges by source: successors in the order they were made.
        let mut succ_start = vec![0u32; n + 1];
        let mut indegree = vec![0u32; n];
        for &(from, to) in &edges {
            succ_start[from as usize + 1] += 1;
            indegree[to as usize] += 1;
        }
        for i in 0..n {
            succ_start[i + 1] += succ_start[i];
        }
        let mut fill = succ_start.clone();
        let mut succ = vec![0u32; edges.len()];
        for &(from, to) in &edges {
            succ[fill[from as usize] as usize] = to;
            fill[from as usize] += 1;
        }
        // Edges that all point forward cannot form a cycle: the usual case (graphs built in
        // order) skips Kahn's pass.
        if !edges.iter().all(|&(from, to)| from < to) {
            check_acyclic(&tasks, &succ_start, &succ, &indegree)?;
        }
        let sinks = (0..n)
            .filter(|&i| succ_start[i] == succ_start[i + 1])
            .count();
        let roots = (0..n as u32)
            .filter(|&i| indegree[i as usize] == 0)
            .collect();
        let (key_of, keys) = resolve_keys(&tasks, &mut key);
        Ok(GraphState {
            tasks,
            key_of,
            keys,
            pending: indegree.into_iter().map(AtomicU32::new).collect(),
            succ_start: succ_start.into(),
            succ: succ.into(),
            roots,
            gangs: (0..n).map(|_| GangSlot::default()).collect(),
            sinks,
            sinks_left: CachePadded::new(AtomicUsize::new(sinks)),
            failed: AtomicBool::new(false),
            outcome: Mutex::new(Outcome {
                result: None,
                settled: n == 0,
            }),
            done: Condvar::new(),
        })
    }

    /// Tasks with no predecessor.
    pub(crate) fn roots(&self) -> impl Iterator<Item = usize> + '_ {
        self.roots.iter().map(|&r| r as usize)
    }

    /// Each task's predecessor count, as the pending counters hold them before a run.
    pub(crate) fn in_degrees(&self) -> Box<[u32]> {
        self.pending
            .iter()
            .map(|p| p.load(Ordering::Relaxed))
            .collect()
    }

    /// Puts the run state back to how it was before the first run: pending counters from
    /// `indegree`, every sink to do, no failure, no outcome. Gang slots re-arm at dispatch.
    ///
    /// Only for a settled run that no worker touches any more (`prepared.rs` says why a
    /// settled run is one); the stores are published to the workers by queuing the roots.
    pub(crate) fn reset(&self, indegree: &[u32]) {
        for (pending, &d) in self.pending.iter().zip(indegree) {
            pending.store(d, Ordering::Relaxed);
        }
        self.sinks_left.store(self.sinks, Ordering::Relaxed);
        self.failed.store(false, Ordering::Relaxed);
        *self.outcome.lock() = Outcome {
            result: None,
            settled: self.tasks.is_empty(),
        };
    }

    /// The gang bookkeeping of `node`.
    pub(crate) fn gang(&self, node: usize) -> &GangSlot {
        &self.gangs[node]
    }

    /// The successors of `node`.
    pub(crate) fn successors(&self, node: usize) -> impl Iterator<Item = usize> + '_ {
        let range = self.succ_start[node] as usize..self.succ_start[node + 1] as usize;
        self.succ[range].iter().map(|&s| s as usize)
    }

    /// One predecessor of `node` finished; true when it was the last.
    pub(crate) fn release(&self, node: usize) -> bool {
        self.pending[node].fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// Where `node` records its time.
    pub(crate) fn key(&self, node: usize) -> &Key {
        &self.keys[self.key_of[node] as usize]
    }

    /// The index of `node`'s key among the graph's distinct keys, `0..key_count()`.
    pub(crate) fn key_index(&self, node: usize) -> usize {
        self.key_of[node] as usize
    }

    /// Number of distinct (type, hint) keys.
    pub(crate) fn key_count(&self) -> usize {
        self.keys.len()
    }

    pub(crate) fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Records the first failure; later tasks of the graph are cancelled.
    pub(crate) fn fail(&self, error: RuntimeError) {
        if !self.failed.swap(true, Ordering::AcqRel) {
            self.outcome.lock().result.get_or_insert(Err(error));
        }
    }

    /// Counts `node` as finished; returns true when that finished the graph.
    ///
    /// For a sink that was not the last, and for every other task, this is the task's last
    /// touch of the run state; the last sink's last touch is the unlock below.
    pub(crate) fn finish_one(&self, node: usize) -> bool {
        let sink = self.succ_start[node] == self.succ_start[node + 1];
        if !sink || self.sinks_left.fetch_sub(1, Ordering::AcqRel) != 1 {
            return false;
        }
        let mut outcome = self.outcome.lock();
        outcome.result.get_or_insert(Ok(()));
        outcome.settled = true;
        self.done.notify_all();
        true
    }

    fn sinks_unfinished(&self) -> usize {
        self.sinks_left.load(Ordering::Acquire)
    }

    /// Ends a graph the runtime will never finish (it shut down). A failure recorded
    /// before stays the graph's result.
    pub(crate) fn abandon(&self) {
        let unfinished_sinks = self.sinks_unfinished();
        if unfinished_sinks == 0 {
            return;
        }
        let mut outcome = self.outcome.lock();
        outcome
            .result
            .get_or_insert(Err(RuntimeError::ShutDown { unfinished_sinks }));
        outcome.settled = true;
        self.done.notify_all();
    }

    /// Blocks until the run is settled and takes its result.
    pub(crate) fn wait_settled(&self) -> Result<(), RuntimeError> {
        let mut outcome = self.outcome.lock();
        while !outcome.settled {
            self.done.wait(&mut outcome);
        }
        outcome.result.take().unwrap_or(Ok(()))
    }

    fn is_settled(&self) -> bool {
        self.outcome.lock().settled
    }
}

/// Each task's index into the distinct (type, hint) keys. Neighbouring tasks usually share
/// a key, so the last one is checked before the map.
fn resolve_keys(
    tasks: &[Task],
    key: &mut impl FnMut(&'static str, u64) -> Key,
) -> (Box<[u32]>, Box<[Key]>) {
    let mut seen: HashMap<(&'static str, u64), u32> = HashMap::new();
    let mut keys = Vec::new();
    let mut last: Option<(&'static str, u64, u32)> = None;
    let key_of = tasks
        .iter()
        .map(|t| match last {
            Some((kind, hint, id)) if std::ptr::eq(kind, t.kind) && hint == t.hint => id,
            _ => {
                let id = *seen.entry((t.kind, t.hint)).or_insert_with(|| {
                    keys.push(key(t.kind, t.hint));
                    (keys.len() - 1) as u32
                });
                last = Some((t.kind, t.hint, id));
                id
            }
        })
        .collect();
    (key_of, keys.into())
}

fn check_acyclic(
    tasks: &[Task],
    succ_start: &[u32],
    succ: &[u32],
    indegree: &[u32],
) -> Result<(), RuntimeError> {
    let mut left = indegree.to_vec();
    let mut stack: Vec<usize> = (0..tasks.len()).filter(|&i| left[i] == 0).collect();
    let mut seen = 0;
    while let Some(i) = stack.pop() {
        seen += 1;
        for &s in &succ[succ_start[i] as usize..succ_start[i + 1] as usize] {
            let s = s as usize;
            left[s] -= 1;
            if left[s] == 0 {
                stack.push(s);
            }
        }
    }
    if seen == tasks.len() {
        return Ok(());
    }
    let index = (0..tasks.len()).find(|&i| left[i] > 0).unwrap_or(0);
    Err(RuntimeError::Cycle {
        task: tasks[index].kind.to_string(),
        index,
    })
}

/// Waits for a submitted graph. Dropping the handle does not cancel the graph.
pub struct GraphHandle {
    pub(crate) state: Arc<GraphState>,
    /// The pool whose idle workers free the finished graph.
    pub(crate) registry: Weak<Registry>,
}

impl GraphHandle {
    /// Blocks until every task finished (or was cancelled after a panic, or the runtime
    /// shut down) and says how the graph ended.
    ///
    /// The finished graph (every task's closure) is freed by an idle worker, not here, so
    /// the caller gets its result without paying for the deallocation.
    pub fn wait(self) -> Result<(), RuntimeError> {
        let result = self.state.wait_settled();
        if let Some(registry) = self.registry.upgrade() {
            registry.retire(self.state);
        }
        result
    }

    /// Whether the graph has ended.
    pub fn is_done(&self) -> bool {
        self.state.is_settled()
    }
}

impl std::fmt::Debug for GraphHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphHandle")
            .field("state", &self.state)
            .finish()
    }
}

/// Finished graphs waiting to be freed by an idle worker.
#[derive(Default)]
pub(crate) struct Retired {
    graphs: Mutex<Vec<Arc<GraphState>>>,
    len: AtomicUsize,
}

impl Retired {
    pub(crate) fn push(&self, graph: Arc<GraphState>) {
        self.graphs.lock().push(graph);
        self.len.fetch_add(1, Ordering::Release);
    }

    /// Whether a graph waits to be freed.
    pub(crate) fn pending(&self) -> bool {
        self.len.load(Ordering::Acquire) > 0
    }

    /// Frees every retired graph (outside the lock). Cheap when there is none.
    pub(crate) fn reap(&self) {
        if self.len.load(Ordering::Acquire) == 0 {
            return;
        }
        let graphs = std::mem::take(&mut *self.graphs.lock());
        self.len.fetch_sub(graphs.len(), Ordering::Release);
        drop(graphs);
    }
}

impl std::fmt::Debug for GraphState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphState")
            .field("tasks", &self.tasks.len())
            .field("sinks_left", &self.sinks_unfinished())
            .field("failed", &self.has_failed())
            .finish()
    }
}
