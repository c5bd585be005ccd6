//! Moldable tasks: one body, run by every worker of a place with its own rank.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use crate::gang::GangSync;
use crate::place::Place;

/// The body of a moldable task. Every worker of the place calls it once, at the same time,
/// with its own [`TaskCtx::rank`].
pub(crate) type Body = Arc<dyn Fn(&TaskCtx<'_>) + Send + Sync>;

/// Where a task runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Exactly this place (a pipeline stage pins its layers this way).
    Fixed(Place),
    /// Any place of this width: the worker that dispatches the task leads it when it can
    /// (classic work stealing for width 1, the default).
    Width(usize),
    /// The runtime picks leader and width from the performance trace table.
    Auto,
}

/// A moldable task: a type name (its row in the trace table and the stats), an optional
/// workload hint, a placement and a body.
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use taopipe_runtime::{Place, Runtime, Task, TaskGraph};
///
/// let rt = Runtime::builder().workers(2).build()?;
/// let ranks = Arc::new(AtomicUsize::new(0));
/// let seen = ranks.clone();
/// let mut g = TaskGraph::new();
/// g.add(Task::new("count", move |ctx| {
///     seen.fetch_add(1 + ctx.rank(), Ordering::Relaxed);
/// }).on(Place::new(0, 2)));
/// rt.run(g)?;
/// assert_eq!(ranks.load(Ordering::Relaxed), 1 + 2); // ranks 0 and 1 each ran once
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Task {
    pub(crate) kind: &'static str,
    pub(crate) hint: u64,
    pub(crate) placement: Placement,
    pub(crate) body: Body,
}

impl Task {
    /// A width-1 task that runs wherever a worker is free.
    pub fn new(kind: &'static str, body: impl Fn(&TaskCtx<'_>) + Send + Sync + 'static) -> Task {
        Task {
            kind,
            hint: 0,
            placement: Placement::Width(1),
            body: Arc::new(body),
        }
    }

    /// Runs on exactly `place`.
    pub fn on(mut self, place: Place) -> Task {
        self.placement = Placement::Fixed(place);
        self
    }

    /// Runs on any allowed place of `width` workers.
    pub fn width(mut self, width: usize) -> Task {
        self.placement = Placement::Width(width);
        self
    }

    /// Lets the runtime choose the place from measured times.
    pub fn auto(mut self) -> Task {
        self.placement = Placement::Auto;
        self
    }

    /// A workload hint: tasks of one type with different hints (say, layer sizes) keep
    /// separate rows in the trace table.
    pub fn hint(mut self, hint: u64) -> Task {
        self.hint = hint;
        self
    }

    /// The task type's name.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// How this task is placed.
    pub fn placement(&self) -> Placement {
        self.placement
    }
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("kind", &self.kind)
            .field("hint", &self.hint)
            .field("placement", &self.placement)
            .finish_non_exhaustive()
    }
}

/// What one worker of a gang knows while it runs its part of a task.
pub struct TaskCtx<'a> {
    pub(crate) rank: usize,
    pub(crate) place: Place,
    pub(crate) worker: usize,
    pub(crate) sync: &'a GangSync,
}

impl TaskCtx<'_> {
    /// This worker's rank in the gang, `0..width`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// How many workers run this task.
    pub fn width(&self) -> usize {
        self.place.width()
    }

    /// The place the task runs on.
    pub fn place(&self) -> Place {
        self.place
    }

    /// The worker index running this rank.
    pub fn worker(&self) -> usize {
        self.worker
    }

    /// This rank's share of `n` items: contiguous, in rank order, sizes differing by at
    /// most one. Splitting outputs this way keeps results bit-identical for every width.
    ///
    /// # Examples
    /// ```
    /// # use taopipe_runtime::{Place, Runtime, Task, TaskGraph};
    /// let rt = Runtime::builder().workers(2).build()?;
    /// rt.run_on(Place::new(0, 2), |ctx| {
    ///     let mine = ctx.split(5);
    ///     assert_eq!(mine, if ctx.rank() == 0 { 0..3 } else { 3..5 });
    /// })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn split(&self, n: usize) -> Range<usize> {
        split_range(n, self.rank, self.width())
    }

    /// Waits until every rank of the gang reached this point.
    ///
    /// Gangs are queued on every worker in one global order, so barriers in overlapping
    /// gangs cannot deadlock. If another rank panicked, this panics too, cancelling the
    /// task instead of hanging.
    pub fn barrier(&self) {
        self.sync.wait(self.width());
    }

    /// Shares the items of `phases` consecutive phases (phase `p` holds `len(p)` items)
    /// between the ranks, as they get free: `run(p, item)` runs each item exactly once, on
    /// whichever rank claims it first, and no item of a phase starts before every item of
    /// the earlier phases finished. Every rank must call it with the same phases.
    ///
    /// Unlike [`TaskCtx::split`], a rank that is late (descheduled by the OS, or on a core
    /// that a governor or a neighbour slowed) takes fewer items instead of holding the
    /// gang back. Which rank runs an item must not change the item's result: then results
    /// stay bit-identical for every width. In a one-phase share of a gang of two, rank 0
    /// takes items from the front and rank 1 from the back, so a pair that runs layer after
    /// layer split the same way keeps each rank on the same end of every layer, near the
    /// data it wrote. Otherwise items are claimed from the front: put small items last.
    ///
    /// # Panics
    /// If another rank of the task panicked while this one waits for a phase.
    ///
    /// # Examples
    /// ```
    /// # use std::sync::Arc;
    /// # use std::sync::atomic::{AtomicUsize, Ordering};
    /// # use taopipe_runtime::{Place, Runtime};
    /// let rt = Runtime::builder().workers(2).build()?;
    /// let packed = Arc::new(AtomicUsize::new(0));
    /// let summed = Arc::new(AtomicUsize::new(0));
    /// let (p, s) = (packed.clone(), summed.clone());
    /// rt.run_on(Place::new(0, 2), move |ctx| {
    ///     // Phase 0: 6 items of packing; phase 1: 3 items that need all of it.
    ///     ctx.share(2, |phase| [6, 3][phase], |phase, _item| {
    ///         if phase == 0 {
    ///             p.fetch_add(1, Ordering::Relaxed);
    ///         } else {
    ///             assert_eq!(p.load(Ordering::Relaxed), 6);
    ///             s.fetch_add(1, Ordering::Relaxed);
    ///         }
    ///     });
    /// })?;
    /// assert_eq!(summed.load(Ordering::Relaxed), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn share(
        &self,
        phases: usize,
        len: impl Fn(usize) -> usize,
        run: impl FnMut(usize, usize),
    ) {
        self.sync.share(self.rank, self.width(), phases, len, run);
    }
}

impl fmt::Debug for TaskCtx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskCtx")
            .field("rank", &self.rank)
            .field("place", &self.place)
            .field("worker", &self.worker)
            .finish()
    }
}

/// The `rank`-th of `width` near-equal contiguous shares of `0..n`.
pub fn split_range(n: usize, rank: usize, width: usize) -> Range<usize> {
    let (base, extra) = (n / width, n % width);
    let start = rank * base + rank.min(extra);
    let len = base + usize::from(rank < extra);
    start..start + len
}
