//! `SharedSlice`: one buffer that the ranks of a gang write in disjoint parts, and that
//! later tasks read whole.
//!
//! A moldable layer's ranks each compute their own part of one output tensor, at the same
//! time, from a body that is `Fn(&TaskCtx)` and so only sees shared references. Copying
//! every rank's part into place afterwards would double the memory traffic of cheap
//! layers; locking the whole buffer would serialise the ranks. `SharedSlice` hands out
//! `&mut` access to *disjoint parts* instead, and checks at run time what the type
//! system cannot see here: a write claim never overlaps another live claim, and a read of
//! the whole buffer never overlaps a write. A conflict is an error naming both claims —
//! it means two tasks that touch the buffer were not ordered by the graph.
//!
//! A claim is a contiguous range ([`SharedSlice::write`]) or a [`Rect`] of rows
//! ([`SharedSlice::write_rect`]): a conv layer's rank writes a tile of output channels ×
//! pixels of a row-major output, which is not one range. Claims live in one short list
//! under one lock: a gang holds a few at a time, so a linear scan beats any index, and a
//! claim costs one lock and no allocation once the list has grown. The lock spins before
//! it parks (`lock.rs`): a wide gang's ranks take it at the same moment. When two
//! rects overlap is `rect.rs`'s business (exact for one stride, conservative across
//! strides).
//!
//! This is the crate's one `unsafe` module: it turns claimed ranges and rows into slices.
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
use std::sync::Arc;

mod lock;
mod rect;

use lock::SpinLock;
pub use rect::Rect;

/// Why a claim on a [`SharedSlice`] was refused. Each variant names the claim asked for
/// (a range claim shows as the one-row rect `start..end`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    /// A range that ends before it starts.
    #[error("range {start}..{end} ends before it starts", start = range.start, end = range.end)]
    Backwards {
        /// The range asked for.
        range: Range<usize>,
    },
    /// A multi-row rect with more columns than its row stride: its rows would overlap.
    #[error("rect {rect} has {cols} columns but rows only {ld} apart, so its rows overlap", cols = rect.cols, ld = rect.ld)]
    RowsCollide {
        /// The rect asked for.
        rect: Rect,
    },
    /// The claim does not fit the buffer.
    #[error("{rect} is out of bounds for a buffer of {len}")]
    OutOfBounds {
        /// The claim asked for.
        rect: Rect,
        /// The buffer's length.
        len: usize,
    },
    /// Another write claim holds part of the claim.
    #[error("{rect} overlaps {held}, which is being written")]
    Overlap {
        /// The claim asked for.
        rect: Rect,
        /// The overlapping claim being written.
        held: Rect,
    },
    /// A write was asked for while the buffer is being read.
    #[error("{rect} cannot be written: the buffer has {readers} reader(s)")]
    BeingRead {
        /// The claim asked for.
        rect: Rect,
        /// Live read guards.
        readers: usize,
    },
    /// A read was asked for while part of the buffer is being written.
    #[error("the buffer cannot be read: {held} is being written")]
    BeingWritten {
        /// A claim being written.
        held: Rect,
    },
}

struct Claims {
    writes: Vec<Rect>,
    readers: usize,
}

/// Write claims a buffer has room for from the start: one per rank of a gang of up to
/// this width claims without allocating, even on the buffer's first run (a pooled frame's
/// buffers may first run long after warm-up).
const CLAIMS: usize = 16;

impl Default for Claims {
    fn default() -> Claims {
        Claims {
            writes: Vec::with_capacity(CLAIMS),
            readers: 0,
        }
    }
}

/// A fixed-length buffer with run-time-checked disjoint write claims and whole reads.
///
/// A [`SharedSlice::window`] is a part of another buffer that is a buffer itself: its
/// claims and reads count in the parent's, so the windows of one buffer and the buffer
/// stay exclusive with one another exactly as the claims of one buffer do.
pub struct SharedSlice<T> {
    /// The elements and their claims, shared by the buffer and its windows.
    cells: Arc<Cells<T>>,
    /// Where this buffer's element 0 is in `cells.storage`: [`SharedSlice::zeroed`] skips
    /// a few elements to start on a cache line, and a window starts inside its parent.
    start: usize,
    len: usize,
}

/// The storage of a buffer and of its windows, and the one list of their claims, in
/// storage indices.
struct Cells<T> {
    /// `UnsafeCell` per element: claimed ranges are mutated through `&self`.
    storage: Box<[UnsafeCell<T>]>,
    claims: SpinLock<Claims>,
}

/// Where [`SharedSlice::zeroed`] buffers start: a cache line, so that SIMD rows of 16
/// floats at multiples of 16 never straddle two lines. The allocator alone gives large
/// buffers a start 16 bytes past a page, and then every second 32-byte load of a GEMM's
/// packed panels was split across lines.
const ALIGN: usize = 64;

// SAFETY: the buffer and its windows own their `T`s together (so a handle may move to
// another thread if `T: Send`, and as handles share the elements, if `T: Sync`), and shared
// access only ever gives `&mut [T]` to one claimant per element and `&[T]` to readers while
// nobody writes (checked in `write`/`read` against the claims of every window, kept in one
// list), which is what `Sync` demands: sending `&mut T` across threads needs `T: Send`,
// sharing `&T` needs `T: Sync`.
unsafe impl<T: Send + Sync> Send for SharedSlice<T> {}
// SAFETY: see above.
unsafe impl<T: Send + Sync> Sync for SharedSlice<T> {}

impl<T> SharedSlice<T> {
    /// Wraps a vector.
    pub fn new(values: Vec<T>) -> SharedSlice<T> {
        SharedSlice {
            len: values.len(),
            cells: Arc::new(Cells {
                storage: values.into_iter().map(UnsafeCell::new).collect(),
                claims: SpinLock::default(),
            }),
            start: 0,
        }
    }

    /// Elements `range` of this buffer as a buffer of their own (a layer writing its
    /// tensor straight into its part of a concat's output). Claims and reads of the window
    /// count in this buffer's (and any window's) list: a window cannot be written while
    /// another window or the buffer is read, nor read while a part of the buffer is being
    /// written, nor claimed where another claim on the buffer holds an element.
    ///
    /// # Panics
    /// If `range` does not fit the buffer.
    ///
    /// ```
    /// use taopipe_runtime::SharedSlice;
    /// let buf = SharedSlice::new(vec![0u8; 6]);
    /// let right = buf.window(2..6);
    /// right.write(1..3)?.fill(7); // elements 3 and 4 of `buf`
    /// let held = buf.write(4..6)?;
    /// assert!(right.write(0..1).is_ok() && right.write(2..3).is_err()); // 4 is held
    /// drop(held);
    /// assert_eq!(&*buf.read()?, &[0, 0, 0, 7, 7, 0]);
    /// # Ok::<(), taopipe_runtime::ClaimError>(())
    /// ```
    pub fn window(&self, range: Range<usize>) -> SharedSlice<T> {
        assert!(
            range.start <= range.end && range.end <= self.len,
            "window {range:?} of a buffer of {}",
            self.len
        );
        SharedSlice {
            cells: self.cells.clone(),
            start: self.start + range.start,
            len: range.len(),
        }
    }

    /// The buffer's elements.
    fn cells(&self) -> &[UnsafeCell<T>] {
        &self.cells.storage[self.start..self.start + self.len]
    }

    /// `rect` (in this buffer's indices) in the storage's indices, where claims are kept.
    fn in_storage(&self, rect: Rect) -> Rect {
        Rect {
            offset: rect.offset + self.start,
            ..rect
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Claims `range` for writing until the guard drops.
    ///
    /// # Errors
    /// If the range is backwards or out of bounds, overlaps a live write claim, or the
    /// buffer is being read.
    pub fn write(&self, range: Range<usize>) -> Result<WriteGuard<'_, T>, ClaimError> {
        if range.start > range.end {
            return Err(ClaimError::Backwards { range });
        }
        self.claim(Rect::row(range.start, range.len()))?;
        // SAFETY: `claim` checked that the range is in bounds and recorded it: until the
        // guard drops, no other claim overlaps it and no reader exists. `UnsafeCell<T>`
        // has `T`'s layout, and the pointer comes from the whole `cells` slice, so it may
        // address any element.
        let slice = unsafe {
            let base = UnsafeCell::raw_get(self.cells().as_ptr());
            std::slice::from_raw_parts_mut(base.add(range.start), range.len())
        };
        Ok(WriteGuard {
            owner: self,
            range,
            slice,
        })
    }

    /// Claims the elements of `rect` for writing until the guard drops. The guard hands out
    /// one row at a time ([`RectGuard::row_mut`]) or all rows at once
    /// ([`RectGuard::rows_mut`]).
    ///
    /// Overlap with other claims is exact for rects of the same `ld` and against range
    /// claims; two multi-row rects of different `ld` are compared by their bounding ranges
    /// ([`Rect::span`]), so such a pair may be refused although it is disjoint.
    ///
    /// # Errors
    /// If the rect's rows collide (`cols > ld` with several rows), it is out of bounds, it
    /// overlaps a live write claim, or the buffer is being read.
    ///
    /// # Examples
    /// ```
    /// use taopipe_runtime::{Rect, SharedSlice};
    /// // A 3 × 4 matrix; two ranks write the left and right halves of every row.
    /// let m = SharedSlice::new(vec![0u8; 12]);
    /// let mut left = m.write_rect(Rect::new(0, 4, 3, 2))?;
    /// let mut right = m.write_rect(Rect::new(2, 4, 3, 2))?;
    /// for (i, row) in left.rows_mut().enumerate() {
    ///     row.fill(i as u8);
    /// }
    /// right.row_mut(1).fill(9);
    /// assert!(m.write_rect(Rect::new(5, 4, 2, 2)).is_err()); // overlaps both
    /// drop((left, right));
    /// assert_eq!(&*m.read()?, &[0, 0, 0, 0, 1, 1, 9, 9, 2, 2, 0, 0]);
    /// # Ok::<(), taopipe_runtime::ClaimError>(())
    /// ```
    pub fn write_rect(&self, rect: Rect) -> Result<RectGuard<'_, T>, ClaimError> {
        self.claim(rect)?;
        Ok(RectGuard { owner: self, rect })
    }

    /// Records a write claim after checking its shape, its bounds, readers and overlaps.
    /// One short critical section: a scan of the live claims (a few per gang) and a push
    /// into a vector that keeps its capacity, so steady-state claims do not allocate.
    fn claim(&self, rect: Rect) -> Result<(), ClaimError> {
        if rect.rows_collide() {
            return Err(ClaimError::RowsCollide { rect });
        }
        if rect.checked_end().is_none_or(|end| end > self.len()) {
            return Err(ClaimError::OutOfBounds {
                rect,
                len: self.len(),
            });
        }
        let mut claims = self.cells.claims.lock();
        if claims.readers > 0 {
            return Err(ClaimError::BeingRead {
                rect,
                readers: claims.readers,
            });
        }
        let stored = self.in_storage(rect);
        if let Some(&held) = claims.writes.iter().find(|held| held.overlaps(&stored)) {
            let held = self.local(held);
            return Err(ClaimError::Overlap { rect, held });
        }
        claims.writes.push(stored);
        Ok(())
    }

    /// Reads the whole buffer until the guard drops.
    ///
    /// # Errors
    /// If part of the buffer is being written.
    pub fn read(&self) -> Result<ReadGuard<'_, T>, ClaimError> {
        let mut claims = self.cells.claims.lock();
        if let Some(&held) = claims.writes.first() {
            let held = self.local(held);
            return Err(ClaimError::BeingWritten { held });
        }
        claims.readers += 1;
        drop(claims);
        // SAFETY: no write claim is live and none can start while `readers > 0` (checked
        // in `write` under the same lock), so nobody mutates the elements while this
        // shared slice exists.
        let slice = unsafe {
            let base = UnsafeCell::raw_get(self.cells().as_ptr());
            std::slice::from_raw_parts(base.cast_const(), self.len())
        };
        Ok(ReadGuard { owner: self, slice })
    }

    /// Exclusive access, no claims needed, unless the buffer shares its elements with a
    /// window or a parent ([`SharedSlice::window`]): then `None`. `&mut self` proves that
    /// nobody holds a guard on this handle, and the storage being this handle's alone that
    /// nobody holds one on another.
    pub fn get_mut(&mut self) -> Option<&mut [T]> {
        let (start, len) = (self.start, self.len);
        let cells = Arc::get_mut(&mut self.cells)?;
        let cells = &mut cells.storage[start..start + len];
        // SAFETY: `&mut` to the storage, which no other handle shares, excludes every
        // guard; `UnsafeCell<T>` has `T`'s layout.
        Some(unsafe {
            std::slice::from_raw_parts_mut(UnsafeCell::raw_get(cells.as_ptr()), cells.len())
        })
    }

    /// The values, back as a vector.
    ///
    /// # Panics
    /// If a window of the buffer, or the buffer of which it is a window, is still alive:
    /// the elements are theirs too.
    pub fn into_vec(self) -> Vec<T> {
        let (start, len) = (self.start, self.len);
        let Ok(cells) = Arc::try_unwrap(self.cells) else {
            panic!("into_vec of a buffer whose elements a window or its parent shares");
        };
        cells
            .storage
            .into_vec()
            .into_iter()
            .skip(start)
            .take(len)
            .map(UnsafeCell::into_inner)
            .collect()
    }

    /// `rect` (in storage indices, as claims are kept) in this buffer's indices, for an
    /// error message; a claim starting before this window stays in storage indices.
    fn local(&self, rect: Rect) -> Rect {
        Rect {
            offset: rect.offset.checked_sub(self.start).unwrap_or(rect.offset),
            ..rect
        }
    }

    fn release_write(&self, rect: Rect) {
        let stored = self.in_storage(rect);
        let mut claims = self.cells.claims.lock();
        if let Some(i) = claims.writes.iter().position(|&r| r == stored) {
            claims.writes.swap_remove(i);
        }
    }

    fn release_read(&self) {
        self.cells.claims.lock().readers -= 1;
    }
}

impl<T: Clone + Default> SharedSlice<T> {
    /// `len` default values, starting on a 64-byte boundary (a cache line) when `T`'s size
    /// divides it.
    pub fn zeroed(len: usize) -> SharedSlice<T> {
        let size = std::mem::size_of::<T>();
        let slack = if size > 0 && ALIGN.is_multiple_of(size) {
            ALIGN / size - 1
        } else {
            0
        };
        let mut buffer = SharedSlice::new(vec![T::default(); len + slack]);
        let misaligned = buffer.cells.storage.as_ptr() as usize % ALIGN;
        if slack > 0 && misaligned.is_multiple_of(size) {
            buffer.start = (ALIGN - misaligned) % ALIGN / size;
        }
        buffer.len = len;
        buffer
    }
}

impl<T> fmt::Debug for SharedSlice<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let claims = self.cells.claims.lock();
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
        let range = &self.range;
        self.owner
            .release_write(Rect::row(range.start, range.len()));
    }
}

impl<T: fmt::Debug> fmt::Debug for WriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteGuard")
            .field("range", &self.range)
            .finish_non_exhaustive()
    }
}

/// Mutable access to the rows of a claimed [`Rect`]; releases the claim when dropped (also
/// on unwind).
///
/// Rows are handed out as slices borrowed from the guard: one at a time with
/// [`RectGuard::row_mut`], or all of them, disjoint, with [`RectGuard::rows_mut`].
pub struct RectGuard<'a, T> {
    owner: &'a SharedSlice<T>,
    rect: Rect,
}

impl<T> RectGuard<'_, T> {
    /// The claimed rect.
    pub fn rect(&self) -> Rect {
        self.rect
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rect.rows
    }

    /// Elements per row.
    pub fn cols(&self) -> usize {
        self.rect.cols
    }

    /// Row `i` (`cols` elements).
    ///
    /// # Panics
    /// If `i >= rows`, like indexing a slice out of bounds.
    pub fn row_mut(&mut self, i: usize) -> &mut [T] {
        assert!(
            i < self.rect.rows,
            "row {i} of a rect of {} rows ({})",
            self.rect.rows,
            self.rect
        );
        // SAFETY: row `i` lies in the claimed rect, which `&mut self` lends to one caller
        // at a time.
        unsafe { claimed_row(self.owner.cells(), self.rect, i) }
    }

    /// The claimed elements as one raw pointer to the rect's first element; row `i`,
    /// element `j` is at `i · ld + j` from it. For code that walks many rows at once
    /// through its own strided view (the kernels' micro-kernels store a tile of rows per
    /// instruction sequence). Writing through it is sound only inside the rect and while
    /// `&mut self` is held, exactly as with [`RectGuard::rows_mut`]; the pointer is derived
    /// from the whole buffer, so it may address every row.
    pub fn as_mut_ptr(&mut self) -> *mut T {
        // `UnsafeCell<T>` has `T`'s layout; an offset within (or one past) the buffer, and
        // never dereferenced here.
        self.owner
            .cells()
            .as_ptr()
            .wrapping_add(self.rect.offset)
            .cast::<T>()
            .cast_mut()
    }

    /// The distance between the starts of two rows.
    pub fn ld(&self) -> usize {
        self.rect.ld
    }

    /// Every row, in order; the slices are disjoint and may be held together.
    pub fn rows_mut(&mut self) -> impl ExactSizeIterator<Item = &mut [T]> + '_ {
        let (cells, rect) = (self.owner.cells(), self.rect);
        // SAFETY: each row lies in the claimed rect, which `&mut self` lends to this
        // iterator alone, and the iterator yields each row once; rows of one rect are
        // disjoint (`claim` refuses a multi-row rect with `cols > ld`).
        (0..rect.rows).map(move |i| unsafe { claimed_row(cells, rect, i) })
    }
}

/// Row `i` of `rect` as a mutable slice.
///
/// # Safety
/// `rect` must be a live claim on the buffer whose elements are `cells`, held by the
/// caller, with `i < rect.rows`, and no other reference to the row may live as long as
/// the returned slice.
#[allow(
    clippy::mut_from_ref,
    reason = "the caller's claim, not the shared borrow, makes the row exclusive"
)]
unsafe fn claimed_row<T>(cells: &[UnsafeCell<T>], rect: Rect, i: usize) -> &mut [T] {
    if rect.cols == 0 {
        // The rows of an empty rect need not lie in the buffer: nothing to index.
        return Default::default();
    }
    // Bounds-checked: a claim always fits, so this never panics, but a slip cannot escape.
    let row = &cells[rect.row_range(i)];
    // SAFETY: the caller holds the claim on these elements and lends them to no one else;
    // `UnsafeCell<T>` has `T`'s layout, and writing through a pointer derived from a
    // shared reference to `UnsafeCell`s is allowed.
    unsafe { std::slice::from_raw_parts_mut(UnsafeCell::raw_get(row.as_ptr()), row.len()) }
}

impl<T> Drop for RectGuard<'_, T> {
    fn drop(&mut self) {
        self.owner.release_write(self.rect);
    }
}

impl<T> fmt::Debug for RectGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RectGuard")
            .field("rect", &self.rect)
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
