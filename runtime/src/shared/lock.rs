//! The lock over a buffer's claims: it spins before it parks.
//!
//! Every item a gang shares out takes this lock two to four times (its write claim, the
//! claim's release, and a read of a shared block and its release), and on a wide gang the
//! ranks take their items at the same moment. A claim holds the lock for a scan of a few
//! rects, so a rank that finds it taken gets it after at most a few microseconds, the
//! other ranks' turns. `parking_lot`'s `Mutex` spins for about a microsecond, then yields
//! and parks, and a parked rank is woken by a system call and the scheduler. On the
//! 16-core x86-64 Linux machine (`frame --net NET --width 16 --frames N`, three rounds,
//! the builds taking turns), spinning first took GoogLeNet from 7.46–7.63 to 5.32–5.43
//! ms a frame, MobileNetV2 from 3.87–3.92 to 2.75–2.85, SqueezeNet from 2.39–2.56 to
//! 1.76–1.79, ResNet50 from 11.8–12.3 to 10.4–10.5 and AlexNet from 3.08–3.23 to
//! 2.47–2.67; VGG16, whose layers are long, stayed within that machine's noise
//! (16.7–17.7 against 15.8–19.0). In traces of a first version of it, SqueezeNet's global
//! average pool went from 64 µs at width 16 to 17 (38 at width 1).
//! A lock held longer than [`SPIN`] (its holder descheduled: more threads than cores)
//! parks the waiters as before.

use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};

/// How long a rank spins on a taken lock before it parks: far longer than a claim holds
/// it, far shorter than a time slice.
const SPIN: Duration = Duration::from_micros(50);

/// Spins between two looks at the clock.
const SPINS: usize = 64;

/// A `parking_lot::Mutex` whose `lock` spins up to [`SPIN`] before it parks.
#[derive(Debug, Default)]
pub(super) struct SpinLock<T>(Mutex<T>);

impl<T> SpinLock<T> {
    /// Locks, spinning while the lock is taken (reading it, not writing it, so the
    /// spinners do not take its cache line from the holder) for up to [`SPIN`], then
    /// parking.
    pub(super) fn lock(&self) -> MutexGuard<'_, T> {
        if let Some(guard) = self.0.try_lock() {
            return guard;
        }
        let start = Instant::now();
        loop {
            for _ in 0..SPINS {
                std::hint::spin_loop();
                if !self.0.is_locked()
                    && let Some(guard) = self.0.try_lock()
                {
                    return guard;
                }
            }
            if start.elapsed() > SPIN {
                return self.0.lock();
            }
        }
    }
}

// No `unsafe` here, so nothing for Miri to check, and its futex shim rejects
// `parking_lot_core`'s futex call (the variadic argument's type) once a thread parks.
#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::thread;

    /// Threads that take the lock at once each add to the count under it: no update is
    /// lost, whether a thread got the lock spinning or parked (eight threads on fewer
    /// cores park when a holder is descheduled).
    #[test]
    fn contended_locks_lose_no_update() {
        let lock = Arc::new(SpinLock::<u64>::default());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let lock = Arc::clone(&lock);
                thread::spawn(move || {
                    for _ in 0..2_000 {
                        let mut n = lock.lock();
                        let seen = *n;
                        std::hint::spin_loop();
                        *n = seen + 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("no thread panics");
        }
        assert_eq!(*lock.lock(), 8 * 2_000);
    }

    /// A lock held past the spin parks the waiter, which still gets it once it is freed.
    #[test]
    fn a_long_hold_parks_the_waiter() {
        let lock = Arc::new(SpinLock::<u32>::default());
        let held = lock.lock();
        let waiter = {
            let lock = Arc::clone(&lock);
            thread::spawn(move || *lock.lock() + 1)
        };
        thread::sleep(SPIN * 20);
        drop(held);
        assert_eq!(waiter.join().expect("the waiter gets the lock"), 1);
    }
}
