//! Gangs: one dispatched instance of a moldable task, run by every worker of its place.
//!
//! A gang's bookkeeping — ranks still running, the slowest rank's time, the barrier — lives
//! in its graph, one [`GangSlot`] per task, instead of in an allocation per dispatch: a task
//! is dispatched once per run, so its slot is free to re-arm when the task is dispatched
//! again (the next run of a prepared graph), and a steady stream of runs allocates nothing.
//! A slot is a few atomics (24 bytes), so graphs of a million tasks stay affordable. The
//! assembly queues hold [`GangRef`]s: which graph, which task, which place.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crossbeam_utils::Backoff;

use crate::graph::GraphState;
use crate::place::Place;

/// One gang queued on every worker of `place`: each of them runs `node` of `graph`.
pub(crate) struct GangRef {
    pub(crate) graph: Arc<GraphState>,
    pub(crate) node: usize,
    pub(crate) place: Place,
}

/// The shared state of a task's gang, re-armed each time the task is dispatched.
#[derive(Default)]
pub(crate) struct GangSlot {
    /// Ranks that have not finished yet; the rank that brings it to zero completes the task.
    remaining: AtomicU32,
    /// The slowest rank's time, emulated stall included: the task's time at its place.
    slowest_ns: AtomicU64,
    pub(crate) sync: GangSync,
}

// Every task of every graph has a slot: keep it to a few atomics.
const _: () = assert!(std::mem::size_of::<GangSlot>() <= 32);

impl GangSlot {
    /// Arms the slot for a gang of `width` ranks. The dispatcher calls it before queuing
    /// the gang; the assembly queues' locks publish it to the ranks. Nothing else touches
    /// the slot in between: the previous gang of this task (an earlier run) finished before
    /// its run ended, and a task is dispatched once per run.
    pub(crate) fn arm(&self, width: usize) {
        self.remaining.store(width as u32, Ordering::Relaxed);
        self.slowest_ns.store(0, Ordering::Relaxed);
        self.sync.reset();
    }

    /// Whether ranks of the gang (or of a later dispatch of the task) still run: what a
    /// rank that left it waits on before it parks (the registry's `GANG_LINGER`).
    pub(crate) fn running(&self) -> bool {
        self.remaining.load(Ordering::Relaxed) > 0
    }

    /// A rank finished after `took`. Returns the gang's time (its slowest rank) to the last
    /// rank, `None` to the others. A rank touches the slot no more after this.
    pub(crate) fn rank_done(&self, took: Duration) -> Option<Duration> {
        self.slowest_ns
            .fetch_max(took.as_nanos() as u64, Ordering::AcqRel);
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            Some(Duration::from_nanos(
                self.slowest_ns.load(Ordering::Acquire),
            ))
        } else {
            None
        }
    }
}

/// What the ranks of one gang synchronise with: a reusable sense-reversing barrier, and a
/// shared list of work items that ranks claim as they get free ([`GangSync::share`]). Both
/// spin, then yield: gang members run at the same time by construction, so waits are
/// short. The width comes from the caller (the gang's place), so one value serves whatever
/// place the task gets.
#[derive(Default)]
pub(crate) struct GangSync {
    arrived: AtomicU32,
    generation: AtomicU32,
    /// Items of the shared list handed out so far (the next one's index).
    claimed: AtomicU32,
    /// Items of the shared list finished so far.
    finished: AtomicU32,
    broken: AtomicBool,
}

impl GangSync {
    /// Waits until `width` ranks arrived.
    pub(crate) fn wait(&self, width: usize) {
        if width <= 1 {
            return;
        }
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) as usize + 1 == width {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        self.spin_until(|| self.generation.load(Ordering::Acquire) != generation);
    }

    /// Runs items of `phases` consecutive phases, phase `p` holding `len(p)` items, as
    /// `run(p, item)`. Every one of the `width` ranks of the gang calls it with the same
    /// phases; each item runs exactly once, on whichever rank claims it first, and no item
    /// of a phase starts before every item of the phases before it has finished. A gang of
    /// one runs them in order and touches no counter, as [`GangSync::wait`] does.
    ///
    /// Items are numbered across phases in order and claimed one at a time from a shared
    /// counter, so a rank that is late (descheduled, or on a slower core) takes fewer items
    /// instead of holding the others back. Phase order then follows from one count of
    /// finished items: an item of a phase starting at index `s` waits until `s` items have
    /// finished, and as no later item can start before that, those are exactly the items
    /// before `s`.
    pub(crate) fn share(
        &self,
        width: usize,
        phases: usize,
        len: impl Fn(usize) -> usize,
        mut run: impl FnMut(usize, usize),
    ) {
        if width <= 1 {
            for phase in 0..phases {
                (0..len(phase)).for_each(|item| run(phase, item));
            }
            return;
        }
        let (mut phase, mut start) = (0, 0);
        let Some(mut end) = (phases > 0).then(|| len(0)) else {
            return;
        };
        let mut ready = 0;
        loop {
            let item = self.claimed.fetch_add(1, Ordering::Relaxed) as usize;
            while item >= end {
                phase += 1;
                if phase == phases {
                    return;
                }
                start = end;
                end += len(phase);
            }
            if ready < start {
                self.spin_until(|| self.finished.load(Ordering::Acquire) as usize >= start);
                ready = start;
            }
            run(phase, item - start);
            self.finished.fetch_add(1, Ordering::Release);
        }
    }

    /// Spins, then yields, until `done()`; panics if another rank broke the gang.
    fn spin_until(&self, done: impl Fn() -> bool) {
        let backoff = Backoff::new();
        while !done() {
            if self.broken.load(Ordering::Acquire) {
                panic!("a gang was abandoned: another rank of this task panicked");
            }
            if backoff.is_completed() {
                std::thread::yield_now();
            } else {
                backoff.snooze();
            }
        }
    }

    /// Called when a rank panicked: ranks waiting now, or later, give up instead of hanging.
    pub(crate) fn abandon(&self) {
        self.broken.store(true, Ordering::Release);
    }

    /// Forgets arrivals, items and a break of an earlier gang (one that failed midway).
    fn reset(&self) {
        self.arrived.store(0, Ordering::Relaxed);
        self.claimed.store(0, Ordering::Relaxed);
        self.finished.store(0, Ordering::Relaxed);
        self.broken.store(false, Ordering::Relaxed);
    }
}
