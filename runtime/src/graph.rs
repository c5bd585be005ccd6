//! Task graphs: tasks plus `make_edge` dependencies, and the shared state of one run.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::{Condvar, Mutex};

use crate::error::RuntimeError;
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
    succs: Vec<Vec<usize>>,
}

impl TaskGraph {
    /// An empty graph.
    pub fn new() -> TaskGraph {
        TaskGraph::default()
    }

    /// Adds a task with no dependencies yet.
    pub fn add(&mut self, task: Task) -> TaskId {
        self.tasks.push(task);
        self.succs.push(Vec::new());
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
        self.succs[from.0].push(to.0);
    }

    /// Number of tasks.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether the graph has no task.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// The tasks, in the order they were added.
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    pub(crate) fn into_parts(self) -> (Vec<Task>, Vec<Vec<usize>>) {
        (self.tasks, self.succs)
    }
}

/// One node of a submitted graph.
pub(crate) struct Node {
    pub(crate) task: Task,
    pub(crate) succs: Box<[usize]>,
    pub(crate) pending: AtomicUsize,
}

/// A submitted graph: its nodes, what is left to do, and how it ended.
pub(crate) struct GraphState {
    pub(crate) nodes: Box<[Node]>,
    /// Tasks not yet finished or cancelled.
    remaining: AtomicUsize,
    /// Set once a task panicked: later tasks are skipped.
    failed: AtomicBool,
    outcome: Mutex<Option<Result<(), RuntimeError>>>,
    done: Condvar,
}

impl GraphState {
    /// Builds the run state, checking the graph for cycles (Kahn's algorithm).
    pub(crate) fn new(
        tasks: Vec<Task>,
        succs: Vec<Vec<usize>>,
    ) -> Result<GraphState, RuntimeError> {
        let mut indegree = vec![0usize; tasks.len()];
        for &s in succs.iter().flatten() {
            indegree[s] += 1;
        }
        check_acyclic(&tasks, &succs, &indegree)?;
        let nodes = tasks
            .into_iter()
            .zip(succs)
            .zip(&indegree)
            .map(|((task, succs), &d)| Node {
                task,
                succs: succs.into(),
                pending: AtomicUsize::new(d),
            })
            .collect::<Box<[Node]>>();
        let remaining = AtomicUsize::new(nodes.len());
        let outcome = Mutex::new(if nodes.is_empty() { Some(Ok(())) } else { None });
        Ok(GraphState {
            nodes,
            remaining,
            failed: AtomicBool::new(false),
            outcome,
            done: Condvar::new(),
        })
    }

    /// Tasks with no predecessor.
    pub(crate) fn roots(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes.len()).filter(|&i| self.nodes[i].pending.load(Ordering::Relaxed) == 0)
    }

    pub(crate) fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Records the first failure; later tasks of the graph are cancelled.
    pub(crate) fn fail(&self, error: RuntimeError) {
        if !self.failed.swap(true, Ordering::AcqRel) {
            let mut outcome = self.outcome.lock();
            if outcome.is_none() {
                *outcome = Some(Err(error));
            }
        }
    }

    /// Counts one task as finished; returns true when it was the last one.
    pub(crate) fn finish_one(&self) -> bool {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) != 1 {
            return false;
        }
        let mut outcome = self.outcome.lock();
        if outcome.is_none() {
            *outcome = Some(Ok(()));
        }
        self.done.notify_all();
        true
    }

    pub(crate) fn unfinished(&self) -> usize {
        self.remaining.load(Ordering::Acquire)
    }

    /// Ends a graph the runtime will never finish (it shut down).
    pub(crate) fn abandon(&self) {
        let unfinished = self.unfinished();
        if unfinished == 0 {
            return;
        }
        let mut outcome = self.outcome.lock();
        if outcome.is_none() {
            *outcome = Some(Err(RuntimeError::ShutDown { unfinished }));
        }
        self.done.notify_all();
    }

    fn is_settled(outcome: &Option<Result<(), RuntimeError>>, remaining: usize) -> bool {
        matches!(outcome, Some(Err(RuntimeError::ShutDown { .. }))) || remaining == 0
    }
}

fn check_acyclic(
    tasks: &[Task],
    succs: &[Vec<usize>],
    indegree: &[usize],
) -> Result<(), RuntimeError> {
    let mut left = indegree.to_vec();
    let mut stack: Vec<usize> = (0..tasks.len()).filter(|&i| left[i] == 0).collect();
    let mut seen = 0;
    while let Some(i) = stack.pop() {
        seen += 1;
        for &s in &succs[i] {
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
#[derive(Debug)]
pub struct GraphHandle {
    pub(crate) state: std::sync::Arc<GraphState>,
}

impl GraphHandle {
    /// Blocks until every task finished (or was cancelled after a panic, or the runtime
    /// shut down) and says how the graph ended.
    pub fn wait(self) -> Result<(), RuntimeError> {
        let state = &self.state;
        let mut outcome = state.outcome.lock();
        while !GraphState::is_settled(&outcome, state.unfinished()) {
            state.done.wait(&mut outcome);
        }
        outcome.take().unwrap_or(Ok(()))
    }

    /// Whether the graph has ended.
    pub fn is_done(&self) -> bool {
        GraphState::is_settled(&self.state.outcome.lock(), self.state.unfinished())
    }
}

impl std::fmt::Debug for GraphState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphState")
            .field("tasks", &self.nodes.len())
            .field("remaining", &self.remaining.load(Ordering::Relaxed))
            .field("failed", &self.has_failed())
            .finish()
    }
}
