//! The user's handle: [`Runtime`] and its [`RuntimeBuilder`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_deque::Worker;
use crossbeam_utils::sync::Parker;

use crate::emulation::{EmulationError, EmulationSpec, valid_speed};
use crate::error::RuntimeError;
use crate::graph::{GraphHandle, TaskGraph};
use crate::place::Place;
use crate::prepared::PreparedGraph;
use crate::ptt::{PlacePolicy, TraceSnapshot};
use crate::registry::{Registry, WorkerThread};
use crate::sleep::Sleep;
use crate::spans::Spans;
use crate::stats::Stats;
use crate::task::{Task, TaskCtx};
use crate::topology::{Topology, TopologyError};

/// Default spin before an idle worker parks. Long enough to catch the next task of a
/// fork-join loop, short enough that an idle runtime costs nothing measurable.
pub const DEFAULT_IDLE_SPIN: Duration = Duration::from_micros(100);

/// Why a runtime could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The topology (sysfs or layout file) could not be read.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// A worker thread could not start.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

/// Configures a [`Runtime`]. Each knob: builder method first, then (for the topology) the
/// `TAOPIPE_LAYOUT` environment variable, then the default.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use taopipe_runtime::{Runtime, Topology};
/// let rt = Runtime::builder()
///     .topology(Topology::virtual_clusters(&[1, 1])?)
///     .idle_spin(Duration::from_micros(20))
///     .build()?;
/// assert_eq!(rt.topology().clusters().len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct RuntimeBuilder {
    topology: Option<Topology>,
    workers: Option<usize>,
    policy: PlacePolicy,
    idle_spin: Option<Duration>,
    pin: Option<bool>,
}

impl RuntimeBuilder {
    /// Uses this topology instead of detecting one.
    pub fn topology(mut self, topology: Topology) -> RuntimeBuilder {
        self.topology = Some(topology);
        self
    }

    /// `n` unpinned workers in one virtual cluster (tests, examples); ignored when a
    /// topology is given.
    pub fn workers(mut self, n: usize) -> RuntimeBuilder {
        self.workers = Some(n);
        self
    }

    /// How tasks that leave their place to the runtime are placed.
    pub fn place_policy(mut self, policy: PlacePolicy) -> RuntimeBuilder {
        self.policy = policy;
        self
    }

    /// How long an idle worker spins before it parks (default [`DEFAULT_IDLE_SPIN`]).
    pub fn idle_spin(mut self, spin: Duration) -> RuntimeBuilder {
        self.idle_spin = Some(spin);
        self
    }

    /// Whether to pin workers to their CPUs (default: the topology says; detected
    /// topologies pin, virtual ones do not).
    pub fn pin(mut self, pin: bool) -> RuntimeBuilder {
        self.pin = Some(pin);
        self
    }

    /// Starts the workers.
    pub fn build(self) -> Result<Runtime, BuildError> {
        let topology = match (self.topology, self.workers) {
            (Some(t), _) => t,
            (None, Some(n)) => Topology::symmetric(n)?,
            (None, None) => Topology::detect()?,
        };
        let pin = self.pin.unwrap_or(topology.pins());
        let n = topology.num_workers();
        let locals: Vec<Worker<_>> = (0..n).map(|_| Worker::new_lifo()).collect();
        let parkers: Vec<Parker> = (0..n).map(|_| Parker::new()).collect();
        let sleep = Sleep::new(parkers.iter().map(|p| p.unparker().clone()).collect());
        let stealers = locals.iter().map(Worker::stealer).collect();
        let spin = self.idle_spin.unwrap_or(DEFAULT_IDLE_SPIN);
        let registry = Arc::new(Registry::new(topology, stealers, sleep, self.policy, spin));
        let mut runtime = Runtime {
            registry: registry.clone(),
            threads: Vec::with_capacity(n),
            pins: pin,
        };
        for (index, (local, parker)) in locals.into_iter().zip(parkers).enumerate() {
            let cpu = registry.topology.cpus()[index].id;
            let worker = WorkerThread::new(index, local, registry.clone(), parker);
            let registry = registry.clone();
            registry.worker_starting();
            let spawned = std::thread::Builder::new()
                .name(format!("taopipe-w{index}"))
                .spawn(move || {
                    if pin {
                        registry.stats.set_pinned(index, pin_to(cpu, index));
                    }
                    worker.main_loop();
                });
            let handle = spawned.map_err(|e| {
                runtime.registry.worker_exited();
                RuntimeError::Spawn {
                    worker: index,
                    message: e.to_string(),
                }
            })?;
            runtime.threads.push(handle);
        }
        Ok(runtime)
    }
}

/// Pins the calling thread; warns once per process when the OS refuses.
fn pin_to(cpu: usize, worker: usize) -> bool {
    static WARNED: AtomicBool = AtomicBool::new(false);
    let ok = core_affinity::set_for_current(core_affinity::CoreId { id: cpu });
    if !ok && !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!(
            "taopipe: could not pin worker {worker} to CPU {cpu}; workers run unpinned where pinning fails"
        );
    }
    ok
}

/// A pool of workers that runs graphs of moldable tasks. Dropping it finishes the gangs
/// already started, cancels the rest (their [`GraphHandle::wait`] returns
/// [`RuntimeError::ShutDown`]) and joins the workers, unless it is dropped on one of them
/// (a task held the last reference): then they wind down on their own.
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use taopipe_runtime::{Place, Runtime};
///
/// let rt = Runtime::builder().workers(2).build()?;
/// let sum = Arc::new(AtomicU64::new(0));
/// let s = sum.clone();
/// rt.run_on(Place::new(0, 2), move |ctx| {
///     let part: u64 = ctx.split(100).map(|i| i as u64).sum();
///     s.fetch_add(part, Ordering::Relaxed);
/// })?;
/// assert_eq!(sum.load(Ordering::Relaxed), 4950);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Runtime {
    registry: Arc<Registry>,
    threads: Vec<JoinHandle<()>>,
    /// Whether the workers were pinned to their CPUs (the builder's `pin`).
    pins: bool,
}

impl Runtime {
    /// A runtime on the detected topology (sysfs, or the layout file in `TAOPIPE_LAYOUT`).
    pub fn new() -> Result<Runtime, BuildError> {
        RuntimeBuilder::default().build()
    }

    /// Starts configuring a runtime.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// The workers' topology.
    pub fn topology(&self) -> &Topology {
        &self.registry.topology
    }

    /// Number of workers.
    pub fn num_workers(&self) -> usize {
        self.registry.num_workers()
    }

    /// Pins the calling thread to `worker`'s CPU and says whether it now runs there only:
    /// false where this runtime does not pin its workers (a virtual topology), or where the
    /// OS refused.
    ///
    /// For the thread that submits a place's graphs and waits for them, frame after frame
    /// ([`Runtime::run_prepared`]): pinned to the place's first worker's CPU, it hands each
    /// graph to a worker that is still spinning there and is woken on a CPU that is not
    /// idle, instead of on another core that the OS (or a hypervisor) has put to sleep.
    /// Measured on a 2-core AMD EPYC Zen 4 VM, SqueezeNet frames back to back: the median
    /// gap from a frame's last layer to the next frame's first (the caller's wake-up, its
    /// copy of the input, its hand-off) went from 229–254 µs unpinned to 138–158 pinned at
    /// width 1, and from 159–169 to 88–110 at width 2 (`frame --net squeezenet1_1 --width W
    /// --frames 300 --trace F [--unpinned-caller]`, two rounds). Timed against the caller's
    /// clock at width 1 (a scratch loop, three runs of 380 frames): submit to first layer
    /// 25–34 µs pinned against 60–109, last layer to return 13–16 against 22–88.
    ///
    /// ```
    /// use taopipe_runtime::Runtime;
    /// // A virtual topology does not pin its workers, so neither is the caller pinned.
    /// let rt = Runtime::builder().workers(2).build()?;
    /// assert!(!rt.pin_caller(0)?);
    /// assert!(rt.pin_caller(2).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`RuntimeError::NoSuchWorker`] for a worker this runtime does not have.
    pub fn pin_caller(&self, worker: usize) -> Result<bool, RuntimeError> {
        let cpus = self.registry.topology.cpus();
        let cpu = cpus.get(worker).ok_or(RuntimeError::NoSuchWorker {
            worker,
            workers: cpus.len(),
        })?;
        Ok(self.pins && core_affinity::set_for_current(core_affinity::CoreId { id: cpu.id }))
    }

    /// Starts a graph and returns at once.
    ///
    /// # Errors
    /// A placement the topology does not allow, or a cycle, names the task.
    pub fn submit(&self, graph: TaskGraph) -> Result<GraphHandle, RuntimeError> {
        let (tasks, edges) = graph.into_parts();
        self.registry.validate(&tasks)?;
        let state = Arc::new(self.registry.build_state(tasks, edges)?);
        self.registry.inject(&state);
        Ok(GraphHandle {
            state,
            registry: Arc::downgrade(&self.registry),
        })
    }

    /// Runs a graph to completion.
    ///
    /// Call it from outside the pool. A task body that blocks on another graph occupies its
    /// worker meanwhile, and deadlocks if the inner graph needs that worker; from inside a
    /// task, [`Runtime::submit`] without waiting, or add the work to the same graph.
    ///
    /// # Errors
    /// As [`Runtime::submit`], or the first panic of a task, after which the tasks not yet
    /// started are cancelled.
    pub fn run(&self, graph: TaskGraph) -> Result<(), RuntimeError> {
        self.submit(graph)?.wait()
    }

    /// Validates a graph and builds its run state once, for [`Runtime::run_prepared`] to run
    /// it as often as needed: the per-frame path of a pipeline stage does no validation,
    /// sorting or allocation.
    ///
    /// # Errors
    /// As [`Runtime::submit`]: a placement the topology does not allow, or a cycle.
    pub fn prepare(&self, graph: TaskGraph) -> Result<PreparedGraph, RuntimeError> {
        let (tasks, edges) = graph.into_parts();
        self.registry.validate(&tasks)?;
        let state = self.registry.build_state(tasks, edges)?;
        self.registry.reserve_stats(&state);
        Ok(PreparedGraph::new(state, Arc::downgrade(&self.registry)))
    }

    /// Runs a prepared graph to completion, blocking like [`Runtime::run`]. After a run or
    /// two have grown the queues and histograms, a graph whose tasks have fixed places
    /// ([`Task::on`]) runs without a heap allocation. A run that failed leaves the graph
    /// ready for the next.
    ///
    /// # Errors
    /// The first panic of a task (as [`Runtime::run`]);
    /// [`RuntimeError::AlreadyRunning`] if a run of this graph is still in flight (from
    /// another thread); [`RuntimeError::ForeignGraph`] if another runtime prepared it.
    pub fn run_prepared(&self, graph: &PreparedGraph) -> Result<(), RuntimeError> {
        graph.run(&self.registry)
    }

    /// Whether this runtime prepared `graph` (a cache of prepared graphs keyed by what they
    /// compute also needs to know which runtime they are for).
    pub fn prepared(&self, graph: &PreparedGraph) -> bool {
        graph.is_from(&self.registry)
    }

    /// Fork-join: runs `body` once on every worker of `place`, each with its rank, and waits.
    pub fn run_on(
        &self,
        place: Place,
        body: impl Fn(&TaskCtx<'_>) + Send + Sync + 'static,
    ) -> Result<(), RuntimeError> {
        let mut graph = TaskGraph::new();
        graph.add(Task::new("run_on", body).on(place));
        self.run(graph)
    }

    /// Applies an emulation spec: speed factors per cluster or worker, effective for the
    /// next task parts, also while graphs run. Workers the spec does not name go back to 1.0.
    pub fn emulate(&self, spec: &EmulationSpec) -> Result<(), EmulationError> {
        let speeds = spec.resolve(&self.registry.topology)?;
        self.registry.speeds.set_all(&speeds);
        Ok(())
    }

    /// Sets one cluster's speed factor, leaving the others as they are.
    ///
    /// # Errors
    /// A speed outside [[`MIN_SPEED`](crate::MIN_SPEED), 1], or a cluster that does not exist.
    pub fn set_cluster_speed(&self, cluster: usize, speed: f64) -> Result<(), RuntimeError> {
        if !valid_speed(speed) {
            return Err(RuntimeError::BadSpeed(speed));
        }
        let clusters = self.registry.topology.clusters();
        let c = clusters.get(cluster).ok_or(RuntimeError::NoSuchCluster {
            cluster,
            clusters: clusters.len(),
        })?;
        let mut speeds = self.speeds();
        for &w in &c.workers {
            speeds[w] = speed;
        }
        self.registry.speeds.set_all(&speeds);
        Ok(())
    }

    /// Current speed factor of every worker.
    pub fn speeds(&self) -> Vec<f64> {
        self.registry.speeds.snapshot()
    }

    /// The performance trace table as it stands.
    pub fn trace_table(&self) -> TraceSnapshot {
        self.registry.ptt.snapshot()
    }

    /// Forgets every measurement of the trace table.
    pub fn clear_trace_table(&self) {
        self.registry.ptt.clear();
    }

    /// Changes how `Auto` tasks are placed from now on.
    pub fn set_place_policy(&self, policy: PlacePolicy) {
        *self.registry.policy.lock() = policy;
    }

    /// Worker and task-type statistics since start or the last [`Runtime::reset_stats`].
    pub fn stats(&self) -> Stats {
        let t = &self.registry.topology;
        let cpus: Vec<Option<usize>> = t.cpus().iter().map(|c| t.pins().then_some(c.id)).collect();
        let clusters: Vec<usize> = (0..t.num_workers()).map(|w| t.cluster_of(w)).collect();
        self.registry.stats.snapshot(&cpus, &clusters)
    }

    /// Starts recording a [`Span`](crate::Span) for every task part that runs from now on,
    /// with room for `capacity` per worker, allocated here (the `spans` module docs);
    /// forgets any spans recorded before.
    pub fn record_spans(&self, capacity: usize) {
        self.registry.spans.start(capacity);
    }

    /// Stops recording spans and returns them (none if [`Runtime::record_spans`] never ran).
    pub fn take_spans(&self) -> Spans {
        self.registry.spans.take()
    }

    /// Zeroes the statistics.
    pub fn reset_stats(&self) {
        self.registry.stats.reset();
    }

    /// Same as dropping the runtime; reads better at the end of a program.
    pub fn shutdown(self) {}
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("workers", &self.num_workers())
            .field("topology", &self.registry.topology.source())
            .finish()
    }
}

impl Drop for Runtime {
    /// Stops the workers and joins them; the last to exit tells the unfinished graphs.
    ///
    /// A task may hold the last reference (a closure that keeps an `Arc<Runtime>` to
    /// submit more work), and then the runtime is dropped on one of its own workers. That
    /// thread cannot join itself, nor wait for workers whose queued gangs need its rank: it
    /// leaves them to wind down on their own and goes back to its main loop, which drains
    /// its queue and exits. (Joining anyway panicked on the self-join, killed the worker
    /// and left every graph in flight waiting forever: `tests/failure.rs`.)
    fn drop(&mut self) {
        self.registry.terminate();
        let me = std::thread::current().id();
        if self.threads.iter().any(|t| t.thread().id() == me) {
            self.threads.clear(); // detached: they exit once their queues are empty
            return;
        }
        for t in self.threads.drain(..) {
            // A worker's panics, in task bodies and in the runtime's steps around them,
            // are caught and fail their graph (`Registry::guarded`).
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod test;
