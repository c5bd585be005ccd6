//! Single-threaded SGEMM, `C = A · B`, on row-major slices: the one matrix product that
//! conv and FC use.
//!
//! Every implementation stays reachable through [`GemmImpl`] for A/B benchmarks
//! (`cargo bench -p taopipe-nets -- gemm`). The default was chosen by measurement on the
//! real VGG16/ResNet50 conv shapes (see the crate README, "Kernels"):
//!
//! * [`GemmImpl::Faer`] — the `gemm` crate (faer's GEMM), called with
//!   `Parallelism::None`; it picks its AVX2/FMA (or scalar/SSE) micro-kernel at run time,
//!   so a binary built for generic x86-64 still uses FMA where the CPU has it.
//! * [`GemmImpl::MatrixMultiply`] — `ndarray::linalg::general_mat_mul`, i.e. the
//!   `matrixmultiply` crate (also run-time dispatched, no threads: its `threading`
//!   feature is off).
//! * [`GemmImpl::Naive`] — a plain triple loop, for tests and as the floor of the table.
//!
//! None of them starts a thread. For fixed `(m, n, k)` and strides each is deterministic,
//! which is what lets a layer's chunks be bit-identical for every gang width.

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2, ShapeBuilder};

/// Which SGEMM implementation to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum GemmImpl {
    /// The `gemm` crate with `Parallelism::None` (run-time AVX2/FMA dispatch). The default:
    /// fastest on the measured conv shapes.
    #[default]
    Faer,
    /// `matrixmultiply` through `ndarray::linalg::general_mat_mul`.
    MatrixMultiply,
    /// Triple loop (i, p, j) — a reference, not for production.
    Naive,
}

impl GemmImpl {
    /// Every implementation, for benchmark tables.
    pub const ALL: [GemmImpl; 3] = [GemmImpl::Faer, GemmImpl::MatrixMultiply, GemmImpl::Naive];

    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            GemmImpl::Faer => "gemm-crate",
            GemmImpl::MatrixMultiply => "matrixmultiply",
            GemmImpl::Naive => "naive",
        }
    }
}

/// A row-major matrix operand: `rows × cols`, row `i` starting at `data[i * ld]`.
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a> {
    /// The elements; must hold `(rows - 1) * ld + cols` of them at least.
    pub data: &'a [f32],
    /// Distance between the starts of two consecutive rows (`>= cols`).
    pub ld: usize,
}

/// A mutable row-major output operand, as [`MatRef`].
#[derive(Debug)]
pub struct MatMut<'a> {
    /// The elements; must hold `(rows - 1) * ld + cols` of them at least.
    pub data: &'a mut [f32],
    /// Distance between the starts of two consecutive rows (`>= cols`).
    pub ld: usize,
}

fn needed(rows: usize, cols: usize, ld: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        (rows - 1) * ld + cols
    }
}

/// `C[m×n] = A[m×k] · B[k×n]` (or `C += A · B` when `accumulate`), single-threaded.
///
/// # Panics
/// If a slice is too short for its shape and leading dimension, or a leading dimension is
/// smaller than its row length: these are the caller's invariants, not user input.
#[allow(clippy::too_many_arguments)]
pub fn sgemm(
    imp: GemmImpl,
    m: usize,
    n: usize,
    k: usize,
    a: MatRef<'_>,
    b: MatRef<'_>,
    c: MatMut<'_>,
    accumulate: bool,
) {
    assert!(
        a.ld >= k && b.ld >= n && c.ld >= n,
        "leading dimension too small"
    );
    assert!(
        a.data.len() >= needed(m, k, a.ld),
        "A too short for {m}x{k}"
    );
    assert!(
        b.data.len() >= needed(k, n, b.ld),
        "B too short for {k}x{n}"
    );
    assert!(
        c.data.len() >= needed(m, n, c.ld),
        "C too short for {m}x{n}"
    );
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            for row in c.data.chunks_mut(c.ld).take(m) {
                row[..n].fill(0.0);
            }
        }
        return;
    }
    match imp {
        GemmImpl::Faer => faer_gemm(m, n, k, a, b, c, accumulate),
        GemmImpl::MatrixMultiply => mm_gemm(m, n, k, a, b, c, accumulate),
        GemmImpl::Naive => naive_gemm(m, n, k, a, b, c, accumulate),
    }
}

fn faer_gemm(
    m: usize,
    n: usize,
    k: usize,
    a: MatRef<'_>,
    b: MatRef<'_>,
    c: MatMut<'_>,
    accumulate: bool,
) {
    let as_isize = |x: usize| isize::try_from(x).expect("leading dimension fits isize");
    // SAFETY: `sgemm` checked that every slice holds the last element its shape and row
    // stride address (`(rows-1)*ld + cols`), all strides are non-negative, and column
    // strides are 1; `c` is borrowed mutably, so `dst` aliases neither `lhs` nor `rhs`.
    // `Parallelism::None`: the call runs on this thread only.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.data.as_mut_ptr(),
            1,
            as_isize(c.ld),
            accumulate,
            a.data.as_ptr(),
            1,
            as_isize(a.ld),
            b.data.as_ptr(),
            1,
            as_isize(b.ld),
            1.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

fn mm_gemm(
    m: usize,
    n: usize,
    k: usize,
    a: MatRef<'_>,
    b: MatRef<'_>,
    c: MatMut<'_>,
    accumulate: bool,
) {
    // Shapes were validated above, so the views cannot fail; a failure would be a bug here.
    let av = ArrayView2::from_shape((m, k).strides((a.ld, 1)), &a.data[..needed(m, k, a.ld)])
        .expect("validated A view");
    let bv = ArrayView2::from_shape((k, n).strides((b.ld, 1)), &b.data[..needed(k, n, b.ld)])
        .expect("validated B view");
    let clen = needed(m, n, c.ld);
    let mut cv = ArrayViewMut2::from_shape((m, n).strides((c.ld, 1)), &mut c.data[..clen])
        .expect("validated C view");
    let beta = if accumulate { 1.0 } else { 0.0 };
    general_mat_mul(1.0, &av, &bv, beta, &mut cv);
}

fn naive_gemm(
    m: usize,
    n: usize,
    k: usize,
    a: MatRef<'_>,
    b: MatRef<'_>,
    c: MatMut<'_>,
    accumulate: bool,
) {
    for i in 0..m {
        let crow = &mut c.data[i * c.ld..i * c.ld + n];
        if !accumulate {
            crow.fill(0.0);
        }
        for p in 0..k {
            let aip = a.data[i * a.ld + p];
            let brow = &b.data[p * b.ld..p * b.ld + n];
            for (cj, &bj) in crow.iter_mut().zip(brow) {
                *cj += aip * bj;
            }
        }
    }
}

#[cfg(test)]
mod test;
