//! `Rect`: the shape of a write claim, and when two claims overlap.
//!
//! A conv layer's ranks write 2-D tiles of a row-major `[rows × ld]` output (output
//! channels × pixels), so one rank's share is a block of rows, not one contiguous range.
//! A rect names such a block by its first element, its row stride and its size; a plain
//! range is a rect of one row.
//!
//! Overlap is decided exactly when both claims step through the buffer with one stride:
//! two rects of the same `ld`, or any rect against a one-row claim (whose stride does not
//! matter). Two multi-row rects of *different* strides are compared by their bounding
//! ranges instead: conservative (a legal pair of interleaved tiles may be refused), but
//! such a pair means two layouts of one buffer being written at once, which a kernel plan
//! does not produce.

use std::fmt;
use std::ops::Range;

/// Elements `offset + i*ld + j` of a buffer, for `i < rows` and `j < cols`: `rows` rows of
/// `cols` elements, each row `ld` after the previous. A row may run past the end of its
/// `ld`-wide line into the next (a tile of a flattened plane); rows of a multi-row rect may
/// not overlap each other, so `cols <= ld` is required when `rows > 1`.
///
/// # Examples
/// ```
/// use taopipe_runtime::Rect;
/// // Columns 2..5 of rows 1..3 of a 4 × 8 matrix.
/// let tile = Rect::new(8 + 2, 8, 2, 3);
/// assert_eq!(tile.span(), 10..21);
/// assert_eq!(tile.len(), 6);
/// assert_eq!(tile.to_string(), "2x3 at 10 (ld 8)");
/// assert_eq!(Rect::row(4, 3).to_string(), "4..7"); // a range is a rect of one row
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rect {
    /// Index of the first element of the first row.
    pub offset: usize,
    /// Distance between the starts of consecutive rows (the matrix's leading dimension).
    pub ld: usize,
    /// Number of rows.
    pub rows: usize,
    /// Elements per row.
    pub cols: usize,
}

impl Rect {
    /// `rows` rows of `cols` elements, `ld` apart, starting at `offset`. Whether it fits a
    /// buffer is checked when it is claimed.
    pub const fn new(offset: usize, ld: usize, rows: usize, cols: usize) -> Rect {
        Rect {
            offset,
            ld,
            rows,
            cols,
        }
    }

    /// The range `offset..offset + len` as a rect of one row.
    pub const fn row(offset: usize, len: usize) -> Rect {
        Rect::new(offset, len, 1, len)
    }

    /// Whether the rect holds no element.
    pub const fn is_empty(&self) -> bool {
        self.rows == 0 || self.cols == 0
    }

    /// Number of elements (`rows × cols`, saturating).
    pub const fn len(&self) -> usize {
        self.rows.saturating_mul(self.cols)
    }

    /// The smallest range holding every element (`offset..offset` when empty; saturating
    /// where the arithmetic overflows, which no rect that fits a buffer does).
    pub const fn span(&self) -> Range<usize> {
        if self.is_empty() {
            return self.offset..self.offset;
        }
        let end = self
            .offset
            .saturating_add((self.rows - 1).saturating_mul(self.ld))
            .saturating_add(self.cols);
        self.offset..end
    }

    /// The end of [`Rect::span`], or `None` if it does not fit in a `usize`.
    pub(super) fn checked_end(&self) -> Option<usize> {
        if self.is_empty() {
            return Some(self.offset);
        }
        (self.rows - 1)
            .checked_mul(self.ld)?
            .checked_add(self.offset)?
            .checked_add(self.cols)
    }

    /// Whether the rows overlap each other (more columns than the row stride).
    pub(super) fn rows_collide(&self) -> bool {
        self.rows > 1 && self.cols > self.ld
    }

    /// The index range of row `i`.
    pub(super) fn row_range(&self, i: usize) -> Range<usize> {
        let start = self.offset + i * self.ld;
        start..start + self.cols
    }

    /// Whether two claims may share an element: exact when they have one stride (see the
    /// module docs), bounding ranges otherwise. Both must fit the buffer and have rows
    /// that do not collide (claims check that first), so no arithmetic below overflows.
    pub(super) fn overlaps(&self, other: &Rect) -> bool {
        if self.is_empty() || other.is_empty() {
            return false;
        }
        let ld = match (self.rows, other.rows) {
            (1, 1) => return spans_meet(self.span(), other.span()),
            (1, _) => other.ld,
            (_, 1) => self.ld,
            (_, _) if self.ld == other.ld => self.ld,
            _ => return spans_meet(self.span(), other.span()),
        };
        rows_meet(self, other, ld)
    }
}

fn spans_meet(a: Range<usize>, b: Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

/// Whether a row of `a` meets a row of `b` when both step by `ld` (`ld >= 1`: it comes
/// from a non-empty multi-row rect whose `cols <= ld`).
///
/// Row `i` of `a` is `[a.offset + i·ld, +a.cols)`, row `k` of `b` is
/// `[b.offset + k·ld, +b.cols)`. With `m = k − i` and `d = b.offset − a.offset` they meet iff
/// `−b.cols < d + m·ld < a.cols`, for some `m` in `1 − a.rows ..= b.rows − 1`. `d + m·ld`
/// grows with `m`, so only the smallest `m` above the lower bound needs checking: no
/// enumeration of rows, however tall the rects.
fn rows_meet(a: &Rect, b: &Rect, ld: usize) -> bool {
    let (ld, d) = (ld as i128, b.offset as i128 - a.offset as i128);
    let (a_cols, b_cols) = (a.cols as i128, b.cols as i128);
    let lowest = 1 - a.rows as i128;
    let highest = b.rows as i128 - 1;
    // The smallest m with d + m·ld > −b.cols (`div_euclid` by a positive ld is a floor).
    let m = ((-b_cols - d).div_euclid(ld) + 1).max(lowest);
    m <= highest && d + m * ld < a_cols
}

impl fmt::Display for Rect {
    /// `start..end` for one row (the notation of a range claim), else
    /// `ROWSxCOLS at OFFSET (ld LD)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.rows == 1 {
            write!(
                f,
                "{}..{}",
                self.offset,
                self.offset.saturating_add(self.cols)
            )
        } else {
            write!(
                f,
                "{}x{} at {} (ld {})",
                self.rows, self.cols, self.offset, self.ld
            )
        }
    }
}
