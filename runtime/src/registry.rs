//! The pool: worker threads, their queues, and the main loop.
//!
//! Every worker owns two queues:
//! - a **ready deque** (crossbeam-deque, LIFO for the owner, FIFO for thieves) of tasks
//!   whose predecessors are done but whose place is not yet decided;
//! - an **assembly queue** of gangs it must take part in: task instances already placed,
//!   which every worker of the place runs with its own rank.
//!
//! A worker looks for work in one chain: its assembly queue, then (unless shutting down)
//! its ready deque, then the ready deques of workers of its own cluster, then of the other
//! clusters, then the injector where tasks submitted from outside land. A ready task it
//! finds is *dispatched*: its place is resolved ([`Placement`]), and the gang is pushed on
//! the assembly queue of every worker of the place. Those queues are locked in ascending
//! worker order for the push, so any two gangs appear in the same relative order on every
//! worker they share: overlapping gangs cannot wait on each other in a cycle, even when
//! their ranks meet at barriers. A width-1 task whose place is the dispatching worker runs
//! at once, without a gang.
//!
//! The rank that finishes a task last records its time in the trace table and the stats
//! and releases the successors onto its own ready deque.
//!
//! A panic on a worker, in a task's body or in the runtime's own steps around it (placing
//! it, the emulated stall, recording its time: [`Step`]), is caught where it happens
//! ([`Registry::guarded`]) and fails the task's graph; the worker then completes the task
//! as usual, so the graph drains and its waiter gets the error. A worker thread that died
//! instead would leave every graph needing it waiting forever.
//!
//! Nothing on this path allocates once the queues have grown: a gang is a [`GangRef`]
//! (graph, task, place) whose bookkeeping lives in the graph's [`GangSlot`](crate::gang::GangSlot),
//! the queue locks are held by recursion instead of in a vector of guards, and roots are
//! listed once per graph. So a prepared graph runs again and again without touching the
//! allocator.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use crossbeam_utils::sync::Parker;
use crossbeam_utils::{Backoff, CachePadded};
use parking_lot::Mutex;
use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::emulation::Speeds;
use crate::error::RuntimeError;
use crate::gang::GangRef;
use crate::graph::{GraphState, Key, Retired};
use crate::place::Place;
use crate::ptt::{PlacePolicy, TraceTable};
use crate::sleep::Sleep;
use crate::spans::{Part, SpanRecorder};
use crate::stats::StatsCollector;
use crate::task::{Placement, Task, TaskCtx};
use crate::topology::Topology;

mod guard;

pub(crate) use guard::Step;

/// The dispatcher index of a thread that is not a worker (nothing to skip when waking).
const NOT_A_WORKER: usize = usize::MAX;

/// A ready task: a node of a submitted graph.
pub(crate) struct TaskRef {
    graph: Arc<GraphState>,
    node: usize,
}

#[derive(Default)]
struct Assembly {
    queue: VecDeque<GangRef>,
    /// Set by a worker that exits: no gang may be queued on it any more.
    closed: bool,
}

/// What the pool shares between its workers and the [`Runtime`](crate::Runtime) handle.
pub(crate) struct Registry {
    pub(crate) topology: Topology,
    stealers: Box<[Stealer<TaskRef>]>,
    /// Per worker: the other workers, own cluster first, each list rotated to start next
    /// to the worker so thieves spread out.
    steal_order: Box<[Box<[usize]>]>,
    injector: Injector<TaskRef>,
    assembly: Box<[CachePadded<Mutex<Assembly>>]>,
    /// Gangs queued per worker, readable without the lock (idle checks).
    assembly_len: Box<[CachePadded<AtomicUsize>]>,
    /// `place_of_width[w][k]`: the place of width `w` a task of `Placement::Width(w)` takes
    /// when worker `k` dispatches it (one containing `k` if the layout has one).
    place_of_width: Box<[Box<[Option<Place>]>]>,
    pub(crate) sleep: Sleep,
    pub(crate) speeds: Speeds,
    pub(crate) ptt: TraceTable,
    pub(crate) stats: StatsCollector,
    pub(crate) spans: SpanRecorder,
    pub(crate) policy: Mutex<PlacePolicy>,
    idle_spin: Duration,
    terminate: AtomicBool,
    /// Worker threads started and not yet exited: the last one to exit tells the graphs
    /// left unfinished ([`Registry::abandon_live_graphs`]), so that happens also when no
    /// thread joins the workers (a runtime dropped on one of its own workers).
    running: AtomicUsize,
    live: Mutex<Vec<Weak<GraphState>>>,
    /// Finished graphs that idle workers free (see [`GraphHandle::wait`](crate::GraphHandle::wait)).
    retired: Retired,
    /// `0..n`, for waking any worker.
    everyone: Box<[usize]>,
    /// Test hook: the step of the runtime's own that panics, standing in for a bug there.
    #[cfg(test)]
    pub(crate) fault: Mutex<Option<Step>>,
}

impl Registry {
    pub(crate) fn new(
        topology: Topology,
        stealers: Vec<Stealer<TaskRef>>,
        sleep: Sleep,
        policy: PlacePolicy,
        idle_spin: Duration,
    ) -> Registry {
        let n = topology.num_workers();
        let places = topology.places();
        Registry {
            steal_order: (0..n).map(|w| steal_order(&topology, w)).collect(),
            place_of_width: (0..=n)
                .map(|w| (0..n).map(|k| place_of_width(&places, w, k)).collect())
                .collect(),
            ptt: TraceTable::new(places, n),
            stealers: stealers.into(),
            injector: Injector::new(),
            assembly: (0..n)
                .map(|_| CachePadded::new(Mutex::new(Assembly::default())))
                .collect(),
            assembly_len: (0..n)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
            sleep,
            speeds: Speeds::new(n),
            stats: StatsCollector::new(n),
            spans: SpanRecorder::new(n),
            policy: Mutex::new(policy),
            idle_spin,
            terminate: AtomicBool::new(false),
            running: AtomicUsize::new(0),
            live: Mutex::new(Vec::new()),
            retired: Retired::default(),
            everyone: (0..n).collect(),
            topology,
            #[cfg(test)]
            fault: Mutex::new(None),
        }
    }

    /// The place a ready task runs on when `worker` dispatches it (see [`Placement`]).
    fn resolve(&self, graph: &GraphState, node: usize, worker: usize, rng: &mut StdRng) -> Place {
        match graph.tasks[node].placement {
            Placement::Fixed(place) => place,
            Placement::Width(w) => self.place_of_width[w][worker].unwrap_or(Place::new(worker, 1)),
            Placement::Auto => {
                let policy = *self.policy.lock();
                self.ptt.choose(&graph.key(node).row, worker, policy, rng)
            }
        }
    }

    pub(crate) fn num_workers(&self) -> usize {
        self.topology.num_workers()
    }

    /// Checks that every task's placement fits this pool.
    pub(crate) fn validate(&self, tasks: &[Task]) -> Result<(), RuntimeError> {
        for (index, task) in tasks.iter().enumerate() {
            match task.placement {
                Placement::Fixed(place) if !self.topology.is_allowed(place) => {
                    return Err(RuntimeError::PlaceNotAllowed {
                        task: task.kind.to_string(),
                        index,
                        place,
                        workers: self.num_workers(),
                    });
                }
                Placement::Width(width)
                    if self
                        .place_of_width
                        .get(width)
                        .is_none_or(|row| row.iter().all(Option::is_none)) =>
                {
                    return Err(RuntimeError::WidthNotAllowed {
                        task: task.kind.to_string(),
                        index,
                        width,
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Builds the run state of a graph, resolving each task's trace-table row and stats id.
    pub(crate) fn build_state(
        &self,
        tasks: Vec<Task>,
        edges: Vec<(u32, u32)>,
    ) -> Result<GraphState, RuntimeError> {
        GraphState::new(tasks, edges, |kind, hint| Key {
            row: self.ptt.row(kind, hint),
            kind_id: self.stats.intern(kind),
        })
    }

    /// Creates ahead of time the stats histograms that the tasks of fixed places will
    /// record into (their type's, on each worker of the place: the task's last rank
    /// records), so that runs of a prepared graph never allocate one.
    pub(crate) fn reserve_stats(&self, graph: &GraphState) {
        let n = self.num_workers();
        let mut seen = vec![false; graph.key_count() * n];
        for (node, task) in graph.tasks.iter().enumerate() {
            let Placement::Fixed(place) = task.placement else {
                continue;
            };
            for w in place.workers() {
                if !std::mem::replace(&mut seen[graph.key_index(node) * n + w], true) {
                    self.stats.reserve(w, graph.key(node).kind_id);
                }
            }
        }
    }

    /// Starts a freshly submitted graph, remembering it so that a shutdown can tell its
    /// waiter (see [`Registry::abandon_live_graphs`]).
    pub(crate) fn inject(&self, graph: &Arc<GraphState>) {
        {
            let mut live = self.live.lock();
            live.retain(|g| g.strong_count() > 0);
            live.push(Arc::downgrade(graph));
        }
        self.start(graph);
    }

    /// Queues the roots of a graph whose run state is fresh (or freshly reset).
    pub(crate) fn start(&self, graph: &Arc<GraphState>) {
        let mut injected = 0;
        for node in graph.roots() {
            // A root with a fixed place is already placed: queue it on its workers directly
            // (and wake exactly them) instead of letting any worker pick it up first.
            if let Placement::Fixed(place) = graph.tasks[node].placement {
                let gang = GangRef {
                    graph: graph.clone(),
                    node,
                    place,
                };
                self.enqueue_gang(gang, NOT_A_WORKER);
            } else {
                self.injector.push(TaskRef {
                    graph: graph.clone(),
                    node,
                });
                injected += 1;
            }
        }
        self.sleep.wake_some(&self.everyone, injected);
    }

    /// Hands a finished graph to the workers to free, waking one if all are parked.
    pub(crate) fn retire(&self, graph: Arc<GraphState>) {
        self.retired.push(graph);
        self.sleep.wake_some(&self.everyone, 1);
    }

    /// Arms the task's gang slot and pushes the gang onto the assembly queue of every
    /// worker of its place, all queues locked together, and wakes them. Fails when a worker
    /// of the place has exited.
    fn enqueue_gang(&self, gang: GangRef, dispatcher: usize) -> bool {
        gang.graph.gang(gang.node).arm(gang.place.width());
        let workers = gang.place.workers();
        if !self.push_gang(workers.clone(), &gang) {
            return false;
        }
        for w in workers.filter(|&w| w != dispatcher) {
            self.sleep.wake(w);
        }
        true
    }

    /// Locks the assembly queue of the first of `workers`, recurses into the rest, and
    /// pushes the gang once every deeper queue took it. So all the place's queues are held
    /// at once, taken in ascending worker order (the order that keeps two gangs in the same
    /// relative order on every worker they share, and lock acquisition free of cycles),
    /// without a vector of guards; the depth is the place's width. Pushes nothing if a
    /// queue is closed.
    fn push_gang(&self, mut workers: std::ops::Range<usize>, gang: &GangRef) -> bool {
        let Some(w) = workers.next() else {
            return true;
        };
        let mut assembly = self.assembly[w].lock();
        if assembly.closed || !self.push_gang(workers, gang) {
            return false;
        }
        assembly.queue.push_back(GangRef {
            graph: gang.graph.clone(),
            ..*gang
        });
        self.assembly_len[w].fetch_add(1, Ordering::Release);
        true
    }

    fn pop_assembly(&self, worker: usize) -> Option<GangRef> {
        if self.assembly_len[worker].load(Ordering::Acquire) == 0 {
            return None;
        }
        let gang = self.assembly[worker].lock().queue.pop_front();
        if gang.is_some() {
            self.assembly_len[worker].fetch_sub(1, Ordering::Release);
        }
        gang
    }

    /// Closes a worker's assembly queue if it is empty (shutdown).
    fn close_assembly(&self, worker: usize) -> bool {
        let mut a = self.assembly[worker].lock();
        a.closed = a.queue.is_empty();
        a.closed
    }

    fn terminating(&self) -> bool {
        self.terminate.load(Ordering::Acquire)
    }

    /// Asks workers to finish the gangs queued on them and exit.
    pub(crate) fn terminate(&self) {
        self.terminate.store(true, Ordering::Release);
        self.sleep.wake_all();
    }

    /// Counts a worker thread about to start; [`Registry::worker_exited`] (or a failed
    /// spawn) takes it back.
    pub(crate) fn worker_starting(&self) {
        self.running.fetch_add(1, Ordering::AcqRel);
    }

    /// A worker thread is done (or never started): the last one abandons what is left.
    pub(crate) fn worker_exited(&self) {
        if self.running.fetch_sub(1, Ordering::AcqRel) == 1 && self.terminating() {
            self.abandon_live_graphs();
        }
    }

    /// After the workers exited: every graph still unfinished is told the runtime is gone.
    fn abandon_live_graphs(&self) {
        while self.injector.steal().is_success() {}
        for graph in self.live.lock().drain(..).filter_map(|g| g.upgrade()) {
            graph.abandon();
        }
    }

    fn has_work(&self, worker: usize) -> bool {
        self.terminating()
            || self.retired.pending()
            || self.assembly_len[worker].load(Ordering::Acquire) > 0
            || !self.injector.is_empty()
            || self.stealers.iter().any(|s| !s.is_empty())
    }
}

/// Counts a worker's exit when its main loop ends, also by unwinding (which only a bug in
/// the runtime's own bookkeeping could cause: task panics are caught).
struct Exit(Arc<Registry>);

impl Drop for Exit {
    fn drop(&mut self) {
        self.0.worker_exited();
    }
}

/// Other workers in the order `worker` tries to steal from them.
fn steal_order(topology: &Topology, worker: usize) -> Box<[usize]> {
    let n = topology.num_workers();
    let own = topology.cluster_of(worker);
    let rotated = (1..n).map(|i| (worker + i) % n);
    let (mut near, far): (Vec<usize>, Vec<usize>) =
        rotated.partition(|&w| topology.cluster_of(w) == own);
    near.extend(far);
    near.into()
}

fn place_of_width(places: &[Place], width: usize, worker: usize) -> Option<Place> {
    let candidates = places.iter().filter(|p| p.width() == width);
    candidates
        .min_by_key(|p| (!p.contains(worker), p.leader().abs_diff(worker)))
        .copied()
}

/// Everything one worker thread owns.
pub(crate) struct WorkerThread {
    index: usize,
    local: Worker<TaskRef>,
    registry: Arc<Registry>,
    parker: Parker,
    rng: StdRng,
    /// The gang this worker left while its other ranks still ran: the next idle spell
    /// spins until it completes (up to [`GANG_LINGER`]) before parking.
    left: Option<(Arc<GraphState>, usize)>,
}

/// The longest a worker that left a running gang spins for it before it parks; the idle
/// spin then counts from the gang's end. Until the gang's last rank finishes, the task
/// after it (which usually needs this worker too) is about to be dispatched, and waking a
/// parked worker costs tens to hundreds of microseconds (more on a VM). With the plain
/// 100 µs spin, 5 frames at width 2 on a 2-core VM parked the 2 workers 80–115 times
/// (ResNet50) and 18–25 times (AlexNet); with this, 5 and 5–9. Interleaved
/// `frame --width 2` runs, medians with against without: ResNet50 63.8 against 67.7 ms
/// and 56.7 against 62.4 (two sets of 6 rounds), 131.9 against 138.0 with a CPU hog on
/// the second core (4 rounds); AlexNet 18.2 against 20.3 (12 rounds) and 16.4 against
/// 16.3 (6 rounds). A first version, which spun as long as the
/// rank had run whatever the gang did, measured slower on ResNet50 (medians of 70.0
/// against 62.3 ms over 8 rounds) and was dropped.
pub(crate) const GANG_LINGER: Duration = Duration::from_millis(5);

impl WorkerThread {
    pub(crate) fn new(
        index: usize,
        local: Worker<TaskRef>,
        registry: Arc<Registry>,
        parker: Parker,
    ) -> WorkerThread {
        WorkerThread {
            index,
            local,
            registry,
            parker,
            rng: StdRng::seed_from_u64(0x7a0_91be ^ index as u64),
            left: None,
        }
    }

    /// Runs until the runtime terminates and this worker's assembly queue is empty.
    pub(crate) fn main_loop(mut self) {
        let _exit = Exit(self.registry.clone());
        loop {
            if let Some(gang) = self.registry.pop_assembly(self.index) {
                self.left = None;
                self.run_rank(gang);
                continue;
            }
            if self.registry.terminating() {
                if self.registry.close_assembly(self.index) {
                    return;
                }
                continue;
            }
            if let Some(task) = self.find_task() {
                // Busy again: the gang left behind no longer matters (and its graph may go).
                self.left = None;
                self.dispatch(task);
                continue;
            }
            self.idle();
        }
    }

    /// Local deque, then thieving (own cluster first), then the injector.
    fn find_task(&self) -> Option<TaskRef> {
        self.local
            .pop()
            .or_else(|| self.steal())
            .or_else(|| self.steal_injected())
    }

    fn steal(&self) -> Option<TaskRef> {
        let registry = &self.registry;
        loop {
            let mut retry = false;
            for &victim in registry.steal_order[self.index].iter() {
                match registry.stealers[victim].steal() {
                    Steal::Success(task) => {
                        registry.stats.record_steal(self.index);
                        return Some(task);
                    }
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
        }
    }

    fn steal_injected(&self) -> Option<TaskRef> {
        loop {
            match self.registry.injector.steal_batch_and_pop(&self.local) {
                Steal::Success(task) => return Some(task),
                Steal::Retry => continue,
                Steal::Empty => return None,
            }
        }
    }

    /// Spins for `idle_spin` (cheap wake-up for fork-join), or while the gang this worker
    /// just left still runs (up to [`GANG_LINGER`]), then parks.
    #[cold]
    fn idle(&mut self) {
        let left = self.left.take();
        let registry = &self.registry;
        registry.retired.reap();
        let start = Instant::now();
        // The idle spin counts from when the gang left behind completes: its last rank
        // dispatches the next task just after.
        let mut spin_from = start;
        let backoff = Backoff::new();
        while spin_from.elapsed() < registry.idle_spin {
            if registry.has_work(self.index) || !self.local.is_empty() {
                return;
            }
            if start.elapsed() < GANG_LINGER
                && left
                    .as_ref()
                    .is_some_and(|(graph, node)| graph.gang(*node).running())
            {
                spin_from = Instant::now();
            }
            if backoff.is_completed() {
                std::thread::yield_now();
            } else {
                backoff.snooze();
            }
        }
        // Never park holding a graph: a task's closure may hold the last reference to the
        // runtime, and a parked worker that kept it would keep the pool alive, parked, for
        // good (a leak found by `tests/stress_shutdown.rs`). Dropping it here may drop the
        // runtime, on this worker: then `has_work` below sees the shutdown.
        drop(left);
        if registry
            .sleep
            .sleep(self.index, &self.parker, || registry.has_work(self.index))
        {
            registry.stats.record_park(self.index);
        }
    }

    /// Decides where a ready task runs and starts it there.
    fn dispatch(&mut self, task: TaskRef) {
        let TaskRef { graph, node } = task;
        if graph.has_failed() {
            self.complete(graph, node);
            return;
        }
        let (registry, rng, worker) = (&*self.registry, &mut self.rng, self.index);
        let Some(place) = registry.guarded(&graph, node, worker, Some(Step::Place), || {
            registry.resolve(&graph, node, worker, rng)
        }) else {
            self.complete(graph, node);
            return;
        };
        if place.width() == 1 && place.leader() == self.index {
            // A gang of one waits for nobody and shares with nobody: its slot is never
            // touched, so it needs no arming.
            let took = self.run_part(&graph, node, place);
            self.finish(graph, node, place, took);
            return;
        }
        // A refused gang means shutdown: its graph is abandoned once the workers exit.
        self.registry
            .enqueue_gang(GangRef { graph, node, place }, self.index);
    }

    /// Runs this worker's rank of a gang; the last rank to finish completes the task.
    fn run_rank(&mut self, gang: GangRef) {
        let GangRef { graph, node, place } = gang;
        let slot = graph.gang(node);
        let took = self.run_part(&graph, node, place);
        match slot.rank_done(took) {
            Some(slowest) => self.finish(graph, node, place, slowest),
            None => self.left = Some((graph, node)),
        }
    }

    /// Calls the task body for this worker's rank, then stalls as the emulated speed says;
    /// a panic in either fails the graph (see [`Registry::guarded`]). Returns the rank's
    /// time.
    fn run_part(&self, graph: &GraphState, node: usize, place: Place) -> Duration {
        let (registry, worker) = (&*self.registry, self.index);
        let start = quanta::Instant::now();
        if graph.has_failed() {
            // Ranks of this gang that started before the failure would wait for this one
            // at a barrier forever: release them (they give up as after a rank's panic).
            // A width-1 task run at once has no other rank; its slot is re-armed before
            // any later gang uses it.
            graph.gang(node).sync.abandon();
        } else {
            let ctx = TaskCtx {
                rank: worker - place.leader(),
                place,
                worker,
                sync: &graph.gang(node).sync,
            };
            let body = &graph.tasks[node].body;
            registry.guarded(graph, node, worker, None, || body(&ctx));
        }
        let stall = || {
            let mut took = quanta::Instant::now().duration_since(start);
            if registry.speeds.stall(worker, took) {
                took = quanta::Instant::now().duration_since(start);
            }
            registry.stats.record_part(worker, took);
            took
        };
        let took = registry
            .guarded(graph, node, worker, Some(Step::Stall), stall)
            .unwrap_or_else(|| quanta::Instant::now().duration_since(start));
        registry.spans.record(worker, || {
            let task = &graph.tasks[node];
            Part {
                kind: task.kind,
                hint: task.hint,
                rank: worker - place.leader(),
                leader: place.leader(),
                width: place.width(),
                start,
                took,
            }
        });
        took
    }

    /// Records a finished task's time and releases its successors.
    fn finish(&mut self, graph: Arc<GraphState>, node: usize, place: Place, took: Duration) {
        if !graph.has_failed() {
            let (registry, worker) = (&*self.registry, self.index);
            let key = graph.key(node);
            registry.guarded(&graph, node, worker, Some(Step::Record), || {
                registry.ptt.record(&key.row, place, took.as_secs_f64());
                registry.stats.record_task(worker, key.kind_id, took);
            });
        }
        self.complete(graph, node);
    }

    /// Marks `node` done: successors whose last predecessor it was become ready here.
    /// The graph's `Arc` moves into the last of them, so a chain of tasks passes one
    /// reference along instead of touching the shared count for every task.
    fn complete(&mut self, graph: Arc<GraphState>, node: usize) {
        let mut released = 0usize;
        let mut last = None;
        for s in graph.successors(node) {
            if graph.release(s) {
                if let Some(prev) = last.replace(s) {
                    self.local.push(TaskRef {
                        graph: graph.clone(),
                        node: prev,
                    });
                }
                released += 1;
            }
        }
        graph.finish_one(node);
        if let Some(s) = last {
            self.local.push(TaskRef { graph, node: s });
        }
        if released > 0 {
            self.share_surplus();
        }
    }

    /// Wakes a parked worker when this one holds more ready work than it takes next (its
    /// deque beyond the task it pops next, or all of it while gangs wait on it first).
    /// One at a time: a woken worker that steals and releases more wakes the next.
    fn share_surplus(&self) {
        let registry = &*self.registry;
        let busy_here = registry.assembly_len[self.index].load(Ordering::Acquire) > 0;
        let surplus = if busy_here {
            self.local.len()
        } else {
            self.local.len().saturating_sub(1)
        };
        registry
            .sleep
            .wake_some(&registry.steal_order[self.index], surplus.min(1));
    }
}
