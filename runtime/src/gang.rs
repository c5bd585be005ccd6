//! A gang: one dispatched instance of a moldable task, shared by the workers of its place.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::Backoff;

use crate::graph::GraphState;
use crate::place::Place;

/// One task instance queued on every worker of `place`.
pub(crate) struct Gang {
    pub(crate) graph: Arc<GraphState>,
    pub(crate) node: usize,
    pub(crate) place: Place,
    /// Ranks that have not finished yet; the rank that brings it to zero completes the task.
    pub(crate) remaining: AtomicUsize,
    /// The slowest rank's time, emulated stall included: the task's time at this place.
    pub(crate) slowest_ns: AtomicU64,
    pub(crate) barrier: GangBarrier,
}

impl Gang {
    pub(crate) fn new(graph: Arc<GraphState>, node: usize, place: Place) -> Gang {
        Gang {
            graph,
            node,
            place,
            remaining: AtomicUsize::new(place.width()),
            slowest_ns: AtomicU64::new(0),
            barrier: GangBarrier::new(place.width()),
        }
    }
}

/// A reusable sense-reversing barrier for the ranks of one gang. It spins, then yields:
/// gang members run at the same time by construction, so waits are short.
pub(crate) struct GangBarrier {
    width: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    broken: AtomicBool,
}

impl GangBarrier {
    pub(crate) fn new(width: usize) -> GangBarrier {
        GangBarrier {
            width,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            broken: AtomicBool::new(false),
        }
    }

    pub(crate) fn wait(&self) {
        if self.width <= 1 {
            return;
        }
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.width {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        let backoff = Backoff::new();
        while self.generation.load(Ordering::Acquire) == generation {
            if self.broken.load(Ordering::Acquire) {
                panic!("a gang barrier was abandoned: another rank of this task panicked");
            }
            if backoff.is_completed() {
                std::thread::yield_now();
            } else {
                backoff.snooze();
            }
        }
    }

    /// Called when a rank panicked: ranks waiting now, or later, give up instead of hanging.
    pub(crate) fn break_barrier(&self) {
        self.broken.store(true, Ordering::Release);
    }
}
