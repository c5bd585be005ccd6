//! The bounded FIFO queue between two pipeline stages.
//!
//! `std::sync::mpsc::sync_channel` would do, except that its blocking paths allocate: a
//! thread's first blocking send or receive creates a per-thread context, and a waiter list
//! grows as waiters register. A stage's first blocking send can come at any frame (the
//! first time its successor falls behind), so a pipeline of prepared graphs would allocate
//! at unpredictable frames. This queue is a ring allocated up front under a `std` mutex
//! with two condition variables (futex-based: no allocation and no per-thread state), with
//! one sender and one receiver. Either end closes its side when dropped, which is how a
//! failing stage stops the stages around it.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// A bounded single-producer single-consumer queue.
pub(super) struct Queue<T> {
    state: Mutex<State<T>>,
    not_empty: Condvar,
    not_full: Condvar,
}

struct State<T> {
    items: VecDeque<T>,
    capacity: usize,
    sender_gone: bool,
    receiver_gone: bool,
}

impl<T> Queue<T> {
    /// A queue holding at most `capacity` (at least 1) items.
    pub(super) fn new(capacity: usize) -> Queue<T> {
        let capacity = capacity.max(1);
        Queue {
            state: Mutex::new(State {
                items: VecDeque::with_capacity(capacity),
                capacity,
                sender_gone: false,
                receiver_gone: false,
            }),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
        }
    }

    /// The queue's two ends (take them once: each closes its side when dropped).
    pub(super) fn ends(&self) -> (Sender<'_, T>, Receiver<'_, T>) {
        (Sender(self), Receiver(self))
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // Nothing panics while holding the lock; a poisoned one still holds valid state.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The producing end.
pub(super) struct Sender<'q, T>(&'q Queue<T>);

impl<T> Sender<'_, T> {
    /// Waits for room and queues `item`; gives it back if the receiver is gone.
    pub(super) fn send(&self, item: T) -> Result<(), T> {
        let q = self.0;
        let mut state = q.lock();
        while state.items.len() == state.capacity && !state.receiver_gone {
            state = q
                .not_full
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if state.receiver_gone {
            return Err(item);
        }
        state.items.push_back(item);
        drop(state);
        q.not_empty.notify_one();
        Ok(())
    }
}

impl<T> Drop for Sender<'_, T> {
    fn drop(&mut self) {
        self.0.lock().sender_gone = true;
        self.0.not_empty.notify_one();
    }
}

/// The consuming end: an iterator that ends once the sender is gone and the queue is
/// drained.
pub(super) struct Receiver<'q, T>(&'q Queue<T>);

impl<T> Iterator for Receiver<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        let q = self.0;
        let mut state = q.lock();
        loop {
            if let Some(item) = state.items.pop_front() {
                drop(state);
                q.not_full.notify_one();
                return Some(item);
            }
            if state.sender_gone {
                return None;
            }
            state = q
                .not_empty
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl<T> Drop for Receiver<'_, T> {
    fn drop(&mut self) {
        // Items still queued are dropped with the queue.
        self.0.lock().receiver_gone = true;
        self.0.not_full.notify_one();
    }
}

#[cfg(test)]
mod test;
