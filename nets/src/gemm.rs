//! The blocked GEMM the conv engine runs: `C[rows × cols] = A · B`, with `A` (weights)
//! packed once at model build into the micro-kernel's row panels ([`PackedA`]) and `B`
//! (activations) packed per frame into column panels by the caller (im2col, Winograd
//! transform). Loops, outermost first (BLIS's order; sizes in [`crate::cache`]):
//!
//! ```text
//! for each kc block of the reduction      (partial sums stay in C between blocks)
//!   for each mc block of rows             (weights block in L2)
//!     for each NR panel of B              (activation micro-panel in L1)
//!       for each MR panel of the block    (weight micro-panel from L2)
//!         micro-kernel MR × NR over kc, epilogue after the last kc block
//! ```
//!
//! Every element of `C` is one FMA chain over the reduction in order, then the epilogue,
//! whatever the blocking, the tile or the rank that computes it.
//!
//! Choosing this core over the `gemm` crate and tract-linalg was a measurement (README,
//! "Kernels"; `cargo bench -p taopipe-nets -- report`).

use std::ops::Range;

use crate::cache::Blocking;
use crate::simd::{Epilogue, Kernels, MatMut, Residual, prefetch};

/// A row-major `rows × kdim` matrix packed into panels of `MR` rows, rows past the end
/// zero, block by block of the reduction: for each `kc` block, every panel's `kc × MR`
/// values (k-major) one after another. A GEMM block of rows for one `kc` block is then one
/// contiguous run that the hardware prefetcher streams in, instead of a `kc·MR` piece of
/// every panel at a stride of the whole reduction (which cost layers with few pixels and
/// deep reductions, such as ResNet50's 7×7 stage, a third of their speed).
#[derive(Clone, Debug)]
pub struct PackedA {
    mr: usize,
    kc: usize,
    rows: usize,
    kdim: usize,
    data: Vec<f32>,
}

impl PackedA {
    /// Packs `rows × kdim` values, `value(row, k)`, for micro-kernels of `mr` rows and
    /// reduction blocks of `kc` (the [`Blocking`]'s).
    pub fn pack(
        mr: usize,
        kc: usize,
        rows: usize,
        kdim: usize,
        value: impl Fn(usize, usize) -> f32,
    ) -> PackedA {
        assert!(mr > 0 && kc > 0, "MR {mr} and kc {kc} must be positive");
        let panels = rows.div_ceil(mr);
        // Zeros past the last panel: the lane kernel reads whole vectors of rows.
        let mut data = vec![0.0; panels * kdim * mr + crate::simd::MAX_LANES];
        for k0 in (0..kdim).step_by(kc) {
            let kcb = kc.min(kdim - k0);
            let block = &mut data[k0 * panels * mr..(k0 + kcb) * panels * mr];
            for (p, panel) in block.chunks_exact_mut(kcb * mr).enumerate() {
                for r in 0..mr.min(rows - p * mr) {
                    for k in 0..kcb {
                        panel[k * mr + r] = value(p * mr + r, k0 + k);
                    }
                }
            }
        }
        PackedA {
            mr,
            kc,
            rows,
            kdim,
            data,
        }
    }

    /// Packs a row-major matrix with row stride `kdim`.
    pub fn from_rows(mr: usize, kc: usize, rows: usize, kdim: usize, a: &[f32]) -> PackedA {
        assert_eq!(
            a.len(),
            rows * kdim,
            "A is {} values, not {rows}×{kdim}",
            a.len()
        );
        PackedA::pack(mr, kc, rows, kdim, |r, k| a[r * kdim + k])
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The reduction length.
    pub fn kdim(&self) -> usize {
        self.kdim
    }

    /// Floats held (padding included).
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// Floats of `panels` packed B panels of `kdim` rows for micro-kernels `nr` wide.
pub fn packed_b_len(kdim: usize, panels: usize, nr: usize) -> usize {
    kdim * panels * nr
}

/// Where the epilogue's operands come from, for a whole block: `bias[row]` per row of the
/// block, a residual matrix covering the block, ReLU.
#[derive(Clone, Copy, Debug)]
pub struct BlockEpilogue<'a> {
    /// One per row of the block.
    pub bias: &'a [f32],
    /// What to add: a matrix as big as the block, or the block itself (then `a` must
    /// have been packed with the whole reduction in one `kc` block).
    pub residual: Residual<'a>,
    /// Clamp at zero.
    pub relu: bool,
}

/// `C = A[rows] · B`: `rows` of `a` (any range; one starting on a panel boundary, a
/// multiple of `MR`, wastes no kernel call on a partial first panel), `b` packed
/// panels of `a.kdim()` rows (`b.len() >= packed_b_len(kdim, ceil(c.cols() / NR), NR)`),
/// `c` exactly `rows.len() × cols`; then the epilogue, if any. The reduction runs in the
/// `kc` blocks `a` was packed with; `blocking` gives the row blocks.
///
/// # Panics
/// On the shape mismatches above (caller bugs).
pub fn gemm(
    kernels: &Kernels,
    blocking: &Blocking,
    a: &PackedA,
    rows: Range<usize>,
    b: &[f32],
    c: &mut MatMut<'_>,
    epilogue: Option<&BlockEpilogue<'_>>,
) {
    let (mr, nr, kdim) = (kernels.mr, kernels.nr, a.kdim);
    assert_eq!(a.mr, mr, "A packed for MR {} used with MR {mr}", a.mr);
    assert!(rows.end <= a.rows, "rows {rows:?} of {}", a.rows);
    assert_eq!(c.rows(), rows.len(), "C has {} rows for {rows:?}", c.rows());
    let cols = c.cols();
    let panels = cols.div_ceil(nr);
    assert!(b.len() >= packed_b_len(kdim, panels, nr), "B too short");
    if let Some(e) = epilogue {
        assert!(e.bias.len() >= rows.len(), "bias too short");
        assert!(
            !matches!(e.residual, Residual::InPlace) || kdim <= a.kc,
            "an in-place residual needs the reduction ({kdim}) in one kc block ({})",
            a.kc
        );
    }
    let (kc, mc) = (a.kc, blocking.mc.max(mr));
    let apanels_total = a.rows.div_ceil(mr);
    let mut k0 = 0;
    while k0 < kdim {
        let kcb = kc.min(kdim - k0);
        let a_step = kcb * mr;
        let last = k0 + kcb == kdim;
        // A first panel entered mid-way runs alone; then blocks of `mc` aligned rows.
        let lead = ((mr - rows.start % mr) % mr).min(rows.len());
        let blocks = std::iter::once(0..lead).filter(|r| !r.is_empty()).chain(
            (lead..rows.len())
                .step_by(mc)
                .map(|i0| i0..(i0 + mc).min(rows.len())),
        );
        for block in blocks {
            let (i0, h) = (block.start, block.len());
            let first = rows.start + i0;
            let apanels = &a.data[k0 * apanels_total * mr + first / mr * a_step + first % mr..];
            for jp in 0..panels {
                let j0 = jp * nr;
                if kdim <= PREFETCH_C_MAX_K {
                    prefetch_columns(c, i0..i0 + h, (jp + PREFETCH_C_AHEAD) * nr, nr);
                }
                let w = nr.min(cols - j0);
                let bpanel = &b[(jp * kdim + k0) * nr..(jp + 1) * kdim * nr];
                let e = epilogue.filter(|_| last).map(|e| Epilogue {
                    bias: &e.bias[i0..i0 + h],
                    residual: e.residual.sub(i0, j0, h, w),
                    relu: e.relu,
                });
                let mut tile = c.sub(i0, j0, h, w);
                kernels.gemm(kcb, apanels, a_step, bpanel, &mut tile, k0 > 0, e.as_ref());
            }
        }
        k0 += kcb;
    }
}

/// Reductions up to this long prefetch the output tile [`PREFETCH_C_AHEAD`] column
/// panels ahead. With so short a reduction a tile computes in a few hundred cycles and
/// is bound by its stores; each of its rows lies in another output plane, too many
/// streams for the hardware prefetcher, so every line's read-for-ownership missed in
/// turn. VGG16's `conv1_1` (`C·kh·kw` = 27, 12.8 MB of output into a buffer a frame's
/// FC weights had evicted) took 4.3 and 3.7 ms of a frame without, 2.7–3.0 with, one
/// or two panels ahead (`frame --net vgg16 --width 1 --profile`, 2-core AVX-512 VM). On
/// every layer it cost 3–5% in the Winograd GEMMs, whose outputs are hot, and did not
/// change ResNet50's stem (147) or AlexNet's `conv1` (363).
const PREFETCH_C_MAX_K: usize = 64;

/// Column panels ahead that [`PREFETCH_C_MAX_K`] prefetches.
const PREFETCH_C_AHEAD: usize = 2;

/// Prefetches columns `from..from + width` (clipped to `c`) of `rows` of `c`.
fn prefetch_columns(c: &MatMut<'_>, rows: Range<usize>, from: usize, width: usize) {
    if from >= c.cols() {
        return;
    }
    for r in rows {
        let row = &c.row(r)[from..];
        for line in (0..row.len().min(width)).step_by(16) {
            prefetch(row[line..].as_ptr());
        }
    }
}

#[cfg(test)]
mod test;
