//! `SharedSlice`: one buffer that the ranks of a gang write in disjoint parts, and that
//! later tasks read whole.
//!
//! A moldable layer's ranks each compute their own part of one output tensor, at the same
//! time, from a body that is `Fn(&TaskCtx)` and so only sees shared references. Copying
//! every rank's part into place afterwards would double the memory traffic of cheap
//! layers; locking the whole buffer would serialise the ranks. `SharedSlice` hands out
//! `&mut` access to *disjoint ranges* instead, and checks at run time what the type
//! system cannot see here: a write claim never overlaps another live claim, and a read of
//! the whole buffer never overlaps a write. A conflict is an error naming both ranges —
//! it means two tasks that touch the buffer were not ordered by the graph.
//!
//! This is the crate's one `unsafe` module: it turns the claimed ranges into slices.
//! Its tests run under Miri (`cargo +nightly miri test -p taopipe-runtime shared`).
//!
//! # Examples
//! ```
//! use std::sync::Arc;
//! use taopipe_runtime::{Place, Runtime, SharedSlice};
//!
//! let rt = Runtime::builder().workers(2).build()?;
//! let out = Arc::new(SharedSlice::new(vec![0u32; 10]));
//! let o = out.clone();
//! rt.run_on(Place::new(0, 2), move |ctx| {
//!     let range = ctx.split(10);
//!     let mut part = o.write(range.clone()).expect("ranks write disjoint ranges");
//!     for (x, i) in part.iter_mut().zip(range) {
//!         *x = i as u32 * 10;
//!     }
//! })?;
//! assert_eq!(&*out.read()?, &[0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::cell::UnsafeCell;
use std::fmt;
use std::ops::{Deref, DerefMut, Range};

use parking_lot::Mutex;

/// Why a claim on a [`SharedSlice`] was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    /// The range does not fit the buffer.
    #[error("range {start}..{end} is out of bounds for a buffer of {len}", start = range.start, end = range.end)]
    OutOfBounds {
        /// The range asked for.
        range: Range<usize>,
        /// The buffer's length.
        len: usize,
    },
    /// Another write claim holds part of the range.
    #[error("range {start}..{end} overlaps {hs}..{he}, which is being written", start = range.start, end = range.end, hs = held.start, he = held.end)]
    Overlap {
        /// The range asked for.
        range: Range<usize>,
        /// The overlapping range being written.
        held: Range<usize>,
    },
    /// A write was asked for while the buffer is being read.
    #[error("range {start}..{end} cannot be written: the buffer has {readers} reader(s)", start = range.start, end = range.end)]
    BeingRead {
        /// The range asked for.
        range: Range<usize>,
        /// Live read guards.
        readers: usize,
    },
    /// A read was asked for while part of the buffer is being written.
    #[error("the buffer cannot be read: {start}..{end} is being written", start = held.start, end = held.end)]
    BeingWritten {
        /// A range being written.
        held: Range<usize>,
    },
}

#[derive(Default)]
struct Claims {
    writes: Vec<Range<usize>>,
    readers: usize,
}

/// A fixed-length buffer with run-time-checked disjoint write claims and whole reads.
pub struct SharedSlice<T> {
    /// `UnsafeCell` per element: claimed ranges are mutated through `&self`.
    cells: Box<[UnsafeCell<T>]>,
    claims: Mutex<Claims>,
}

// SAFETY: the buffer owns its `T`s (so it may move to another thread if `T: Send`), and
// shared access only ever gives `&mut [T]` to one claimant per element and `&[T]` to
// readers while nobody writes (checked in `write`/`read`), which is what `Sync` demands:
// sending `&mut T` across threads needs `T: Send`, sharing `&T` needs `T: Sync`.
unsafe impl<T: Send> Send for SharedSlice<T> {}
// SAFETY: see above.
unsafe impl<T: Send + Sync> Sync for SharedSlice<T> {}

impl<T> SharedSlice<T> {
    /// Wraps a vector.
    pub fn new(values: Vec<T>) -> SharedSlice<T> {
        SharedSlice {
            cells: values.into_iter().map(UnsafeCell::new).collect(),
            claims: Mutex::default(),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Claims `range` for writing until the guard drops.
    ///
    /// # Errors
    /// If the range is out of bounds, overlaps a live write claim, or the buffer is being
    /// read.
    pub fn write(&self, range: Range<usize>) -> Result<WriteGuard<'_, T>, ClaimError> {
        if range.start > range.end || range.end > self.len() {
            return Err(ClaimError::OutOfBounds {
                range,
                len: self.len(),
            });
        }
        let mut claims = self.claims.lock();
        if claims.readers > 0 {
            return Err(ClaimError::BeingRead {
                range,
                readers: claims.readers,
            });
        }
        let overlapping = claims
            .writes
            .iter()
            .find(|held| held.start < range.end && range.start < held.end);
        if let Some(held) = overlapping {
            return Err(ClaimError::Overlap {
                range,
                held: held.clone(),
            });
        }
        claims.writes.push(range.clone());
        drop(claims);
        // SAFETY: `range` is in bounds (checked above), and until the guard drops no other
        // claim overlaps it and no reader exists (checked under the lock, and recorded in
        // `claims` so later claims see it). `UnsafeCell<T>` has `T`'s layout, and the
        // pointer comes from the whole `cells` slice, so it may address any element.
        let slice = unsafe {
            let base = UnsafeCell::raw_get(self.cells.as_ptr());
            std::slice::from_raw_parts_mut(base.add(range.start), range.len())
        };
        Ok(WriteGuard {
            owner: self,
            range,
            slice,
        })
    }

    /// Reads the whole buffer until the guard drops.
    ///
    /// # Errors
    /// If part of the buffer is being written.
    pub fn read(&self) -> Result<ReadGuard<'_, T>, ClaimError> {
        let mut claims = self.claims.lock();
        if let Some(held) = claims.writes.first() {
            return Err(ClaimError::BeingWritten { held: held.clone() });
        }
        claims.readers += 1;
        drop(claims);
        // SAFETY: no write claim is live and none can start while `readers > 0` (checked
        // in `write` under the same lock), so nobody mutates the elements while this
        // shared slice exists.
        let slice = unsafe {
            let base = UnsafeCell::raw_get(self.cells.as_ptr());
            std::slice::from_raw_parts(base.cast_const(), self.len())
        };
        Ok(ReadGuard { owner: self, slice })
    }

    /// Exclusive access, no claims needed: `&mut self` proves nobody else holds a guard.
    pub fn get_mut(&mut self) -> &mut [T] {
        let len = self.cells.len();
        // SAFETY: `&mut self` excludes every guard (they borrow `self`), and
        // `UnsafeCell<T>` has `T`'s layout.
        unsafe { std::slice::from_raw_parts_mut(UnsafeCell::raw_get(self.cells.as_ptr()), len) }
    }

    /// The values, back as a vector.
    pub fn into_vec(self) -> Vec<T> {
        self.cells
            .into_vec()
            .into_iter()
            .map(UnsafeCell::into_inner)
            .collect()
    }

    fn release_write(&self, range: &Range<usize>) {
        let mut claims = self.claims.lock();
        if let Some(i) = claims.writes.iter().position(|r| r == range) {
            claims.writes.swap_remove(i);
        }
    }

    fn release_read(&self) {
        self.claims.lock().readers -= 1;
    }
}

impl<T: Clone + Default> SharedSlice<T> {
    /// `len` default values.
    pub fn zeroed(len: usize) -> SharedSlice<T> {
        SharedSlice::new(vec![T::default(); len])
    }
}

impl<T> fmt::Debug for SharedSlice<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let claims = self.claims.lock();
        f.debug_struct("SharedSlice")
            .field("len", &self.len())
            .field("writes", &claims.writes)
            .field("readers", &claims.readers)
            .finish()
    }
}

/// Mutable access to a claimed range; releases the claim when dropped (also on unwind).
pub struct WriteGuard<'a, T> {
    owner: &'a SharedSlice<T>,
    range: Range<usize>,
    slice: &'a mut [T],
}

impl<T> WriteGuard<'_, T> {
    /// The claimed range.
    pub fn range(&self) -> Range<usize> {
        self.range.clone()
    }
}

impl<T> Deref for WriteGuard<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.slice
    }
}

impl<T> DerefMut for WriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.slice
    }
}

impl<T> Drop for WriteGuard<'_, T> {
    fn drop(&mut self) {
        self.owner.release_write(&self.range);
    }
}

impl<T: fmt::Debug> fmt::Debug for WriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteGuard")
            .field("range", &self.range)
            .finish_non_exhaustive()
    }
}

/// Shared access to the whole buffer; no write can start until it drops.
pub struct ReadGuard<'a, T> {
    owner: &'a SharedSlice<T>,
    slice: &'a [T],
}

impl<T> Deref for ReadGuard<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.slice
    }
}

impl<T> Drop for ReadGuard<'_, T> {
    fn drop(&mut self) {
        self.owner.release_read();
    }
}

impl<T> fmt::Debug for ReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadGuard")
            .field("len", &self.slice.len())
            .finish()
    }
}

#[cfg(test)]
mod test;
