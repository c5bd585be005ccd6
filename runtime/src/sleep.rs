//! Idle workers: spin briefly, then park until someone pushes work they can run.
//!
//! The protocol is the classic Dekker handshake. A worker about to park raises its flag,
//! issues a SeqCst fence and looks for work once more; a producer pushes its work, issues
//! a SeqCst fence and unparks every flagged worker it wants awake. One of the two always
//! sees the other, and an unpark that lands before the park leaves a token that makes the
//! park return at once, so a wake-up is never lost. Parking has no timeout: an idle runtime
//! makes no system calls at all.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};

use crossbeam_utils::CachePadded;
use crossbeam_utils::sync::{Parker, Unparker};

pub(crate) struct Sleep {
    sleeping: Box<[CachePadded<AtomicBool>]>,
    sleepers: AtomicUsize,
    unparkers: Box<[Unparker]>,
}

impl Sleep {
    pub(crate) fn new(unparkers: Vec<Unparker>) -> Sleep {
        Sleep {
            sleeping: (0..unparkers.len())
                .map(|_| CachePadded::new(AtomicBool::new(false)))
                .collect(),
            sleepers: AtomicUsize::new(0),
            unparkers: unparkers.into(),
        }
    }

    /// Parks `worker` unless `has_work` finds something after the flag is up.
    /// Returns whether it actually parked.
    pub(crate) fn sleep(
        &self,
        worker: usize,
        parker: &Parker,
        has_work: impl Fn() -> bool,
    ) -> bool {
        self.sleeping[worker].store(true, Ordering::Relaxed);
        self.sleepers.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let parked = !has_work();
        if parked {
            parker.park();
        }
        self.sleeping[worker].store(false, Ordering::Relaxed);
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
        parked
    }

    /// Wakes `worker` if it is parked (or about to park). Call after publishing its work.
    pub(crate) fn wake(&self, worker: usize) {
        fence(Ordering::SeqCst);
        if self.sleeping[worker].load(Ordering::Relaxed) {
            self.unparkers[worker].unpark();
        }
    }

    /// Wakes up to `count` parked workers, scanning `order` (nearest first).
    pub(crate) fn wake_some(&self, order: &[usize], count: usize) {
        if count == 0 {
            return;
        }
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut woken = 0;
        for &w in order {
            if self.sleeping[w].swap(false, Ordering::Relaxed) {
                self.unparkers[w].unpark();
                woken += 1;
                if woken == count {
                    return;
                }
            }
        }
    }

    /// Wakes everyone (shutdown).
    pub(crate) fn wake_all(&self) {
        fence(Ordering::SeqCst);
        for u in self.unparkers.iter() {
            u.unpark();
        }
    }
}
