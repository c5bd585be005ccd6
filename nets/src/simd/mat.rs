//! Strided matrix views for the micro-kernels: `rows × cols` floats, row `i` at `i · ld`.
//!
//! [`MatMut`] is an exclusive view that may come from a slice or from a runtime claim on
//! a tile of a shared output (`taopipe_runtime::RectGuard`): both are just a pointer, a
//! row stride and a shape whose every element the view may write. Sub-views re-borrow.

use std::marker::PhantomData;

use taopipe_runtime::RectGuard;

/// Panics unless `rows × cols` at row stride `ld` fits in `len` values without rows
/// overlapping (the `from_slice` contract of both views).
fn check_view(len: usize, ld: usize, rows: usize, cols: usize) {
    assert!(rows <= 1 || cols <= ld, "cols {cols} > ld {ld}");
    assert!(
        len >= span(rows, cols, ld),
        "{rows}×{cols} at ld {ld} needs {} values, got {len}",
        span(rows, cols, ld),
    );
}

/// Elements a `rows × cols` view with row stride `ld` spans.
fn span(rows: usize, cols: usize, ld: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        (rows - 1) * ld + cols
    }
}

/// A read-only strided view.
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a> {
    data: &'a [f32],
    ld: usize,
    rows: usize,
    cols: usize,
}

impl<'a> MatRef<'a> {
    /// `rows × cols` of `data` at row stride `ld`.
    ///
    /// # Panics
    /// If `data` is too short, or `cols > ld` with more than one row.
    pub fn from_slice(data: &'a [f32], ld: usize, rows: usize, cols: usize) -> MatRef<'a> {
        check_view(data.len(), ld, rows, cols);
        MatRef {
            data,
            ld,
            rows,
            cols,
        }
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Row stride.
    pub fn ld(&self) -> usize {
        self.ld
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &'a [f32] {
        assert!(i < self.rows, "row {i} of {}", self.rows);
        &self.data[i * self.ld..i * self.ld + self.cols]
    }

    /// The `rows × cols` block at `(r, c)`.
    pub fn sub(&self, r: usize, c: usize, rows: usize, cols: usize) -> MatRef<'a> {
        assert!(
            r + rows <= self.rows && c + cols <= self.cols,
            "sub-view out of bounds"
        );
        if rows == 0 || cols == 0 {
            return MatRef {
                data: &[],
                ld: self.ld,
                rows,
                cols,
            };
        }
        MatRef::from_slice(&self.data[r * self.ld + c..], self.ld, rows, cols)
    }

    pub(crate) fn as_ptr(&self) -> *const f32 {
        self.data.as_ptr()
    }
}

/// An exclusive strided view: the micro-kernels store through it.
#[derive(Debug)]
pub struct MatMut<'a> {
    ptr: *mut f32,
    ld: usize,
    rows: usize,
    cols: usize,
    _borrow: PhantomData<&'a mut [f32]>,
}

// SAFETY: a `MatMut` is an exclusive borrow of `f32`s, like `&mut [f32]`, which is Send.
unsafe impl Send for MatMut<'_> {}

impl<'a> MatMut<'a> {
    /// `rows × cols` of `data` at row stride `ld`.
    ///
    /// # Panics
    /// If `data` is too short, or `cols > ld` with more than one row.
    pub fn from_slice(data: &'a mut [f32], ld: usize, rows: usize, cols: usize) -> MatMut<'a> {
        check_view(data.len(), ld, rows, cols);
        MatMut {
            ptr: data.as_mut_ptr(),
            ld,
            rows,
            cols,
            _borrow: PhantomData,
        }
    }

    /// The tile a runtime claim holds: its rows and stride, borrowed from the guard.
    pub fn from_rect(guard: &'a mut RectGuard<'_, f32>) -> MatMut<'a> {
        let (rows, cols, ld) = (guard.rows(), guard.cols(), guard.ld());
        MatMut {
            ptr: guard.as_mut_ptr(),
            ld,
            rows,
            cols,
            _borrow: PhantomData,
        }
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Row stride.
    pub fn ld(&self) -> usize {
        self.ld
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f32] {
        assert!(i < self.rows, "row {i} of {}", self.rows);
        // SAFETY: row `i < rows` spans `cols` elements at `i · ld` inside the view (its
        // constructor checked the extent), borrowed shared through `&self`.
        unsafe { std::slice::from_raw_parts(self.ptr.add(i * self.ld), self.cols) }
    }

    /// Row `i`, mutably.
    pub fn row_mut(&mut self, i: usize) -> &mut [f32] {
        assert!(i < self.rows, "row {i} of {}", self.rows);
        // SAFETY: as `row`, borrowed exclusively through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(i * self.ld), self.cols) }
    }

    /// The `rows × cols` block at `(r, c)`, re-borrowed.
    ///
    /// # Panics
    /// If the block does not lie inside the view.
    pub fn sub(&mut self, r: usize, c: usize, rows: usize, cols: usize) -> MatMut<'_> {
        assert!(
            r + rows <= self.rows && c + cols <= self.cols,
            "sub-view {rows}×{cols} at ({r}, {c}) of {}×{}",
            self.rows,
            self.cols
        );
        MatMut {
            // In bounds (checked above), so `wrapping_add` is an ordinary offset.
            ptr: self.ptr.wrapping_add(r * self.ld + c),
            ld: self.ld,
            rows,
            cols,
            _borrow: PhantomData,
        }
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut f32 {
        self.ptr
    }

    /// Copies `len`-float runs into rows `rows`, from column `col` on: row `rows.start + i`
    /// gets `src[i · src_step..][..len]`. The strided stores of a packing routine, with
    /// the bounds checked once.
    ///
    /// # Panics
    /// If the rows or columns lie outside the view, or `src` is too short.
    pub(crate) fn copy_rows(
        &mut self,
        rows: std::ops::Range<usize>,
        col: usize,
        src: &[f32],
        src_step: usize,
        len: usize,
    ) {
        let runs = rows.len();
        if runs == 0 || len == 0 {
            return;
        }
        assert!(
            rows.end <= self.rows && col + len <= self.cols,
            "runs outside the view"
        );
        assert!(src.len() >= (runs - 1) * src_step + len, "source too short");
        // SAFETY: rows `rows` of the view, columns `col..col + len`, are inside it (checked
        // above) and exclusively borrowed through `&mut self`; `src` is a shared slice,
        // so it cannot overlap them.
        unsafe {
            super::runs::raw_runs(
                self.ptr.add(rows.start * self.ld + col),
                self.ld,
                src.as_ptr(),
                src_step,
                runs,
                len,
                1,
            );
        }
    }
}
