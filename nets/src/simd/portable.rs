//! The portable path: plain Rust, no intrinsics. Any CPU runs it, Miri checks it, and it
//! is the reference the SIMD paths are tested against (besides the naive loops).
//!
//! The tile is 4 × 16: the accumulators are a `[[f32; 16]; 4]` the compiler keeps in
//! vector registers where the baseline target has them (SSE2 on x86-64). Products are
//! `a * b + c` (two roundings): `mul_add` without hardware FMA is a slow library call.

use super::{Isa, Kernels, RawTile};
use crate::activation::with_activation;

const MR: usize = 4;
const NR: usize = 16;

pub(super) static PORTABLE: Kernels = Kernels {
    isa: Isa::Portable,
    mr: MR,
    nr: NR,
    lanes: 1,
    gemm,
    gemm_extra: None,
    gemm_narrow: None,
    gemm_cols: None,
    dot_rows,
    fma_probe,
    winograd_input: blocked::winograd_input,
    winograd_output: blocked::winograd_output,
    max_2x2,
    max_3x3_s1,
    max_3x3_s2: None,
    depthwise,
    depthwise_blocked: blocked::depthwise_blocked,
    depthwise_lanes: blocked::DEPTHWISE_LANES,
    lanes_conv: blocked::lanes_conv,
    lanes_oc: blocked::LANES_OC,
};

/// Floats per vector the portable depthwise kernel's blocks assume: the baseline's
/// (SSE2 on x86-64, NEON on aarch64), which LLVM vectorises the plain loops for.
const DEPTHWISE_LANES: usize = 4;

/// The depthwise convolution of a run of channels, multiply then add (no FMA:
/// `crate::conv::depthwise`'s docs).
///
/// # Safety
/// Always safe (see [`super::DepthwiseFn`]).
unsafe fn depthwise(
    ch: &crate::conv::depthwise::Channels<'_>,
    split: &mut [f32],
    wide: &mut [f32],
    dst: &mut [f32],
) {
    use crate::conv::depthwise::{BLOCK_VECTORS, channels, run_portable};
    const B: usize = BLOCK_VECTORS * DEPTHWISE_LANES;
    channels::<DEPTHWISE_LANES>(ch, split, wide, dst, run_portable::<B, DEPTHWISE_LANES>);
}

/// The channel-blocked depthwise kernel of the SIMD paths ([`depthwise_blocked!`]) on
/// plain arrays of 4 floats, multiply then add: the same template code, which Miri checks
/// here, with the portable path's arithmetic.
mod blocked {
    type V = [f32; 4];

    fn zero() -> V {
        [0.0; 4]
    }

    /// # Safety
    /// `p` points to 4 readable floats.
    unsafe fn load(p: *const f32) -> V {
        // SAFETY: the caller's.
        unsafe { p.cast::<V>().read_unaligned() }
    }

    /// # Safety
    /// `p` points to 4 writable floats.
    unsafe fn store(p: *mut f32, v: V) {
        // SAFETY: the caller's.
        unsafe { p.cast::<V>().write_unaligned(v) }
    }

    fn set1(x: f32) -> V {
        [x; 4]
    }

    fn add(a: V, b: V) -> V {
        std::array::from_fn(|i| a[i] + b[i])
    }

    fn sub(a: V, b: V) -> V {
        std::array::from_fn(|i| a[i] - b[i])
    }

    fn mul(a: V, b: V) -> V {
        std::array::from_fn(|i| a[i] * b[i])
    }

    /// [`winograd::interleave_from`] from tile 0 (the template's `$interleave`).
    ///
    /// # Safety
    /// Always safe.
    unsafe fn interleave(xs: &[f32], m: usize, n: usize, row: &mut [f32]) {
        crate::conv::winograd::interleave_from(xs, m, n, 0, row);
    }

    /// The lanes conv's `$prefetch`: nothing (no portable prefetch).
    fn prefetch(_p: *const f32) {}

    /// `a·b + c`, two roundings (as the portable path's other kernels).
    fn fma(a: V, b: V, c: V) -> V {
        std::array::from_fn(|i| a[i] * b[i] + c[i])
    }

    /// `if a > b { a } else { b }`, x86 `max_ps`'s rule (the template's `$max`).
    fn max(a: V, b: V) -> V {
        std::array::from_fn(|i| if a[i] > b[i] { a[i] } else { b[i] })
    }

    /// `if a < b { a } else { b }`, x86 `min_ps`'s rule (the template's `$min`).
    fn min(a: V, b: V) -> V {
        std::array::from_fn(|i| if a[i] < b[i] { a[i] } else { b[i] })
    }

    /// `v ≥ 0 ? v : slope · v` (the template's `$leaky`).
    fn leaky(v: V, slope: V) -> V {
        std::array::from_fn(|i| if v[i] >= 0.0 { v[i] } else { slope[i] * v[i] })
    }

    /// # Safety
    /// Each pointer addresses 4 readable floats.
    unsafe fn load_t(rows: &[*const f32; 4]) -> [V; 4] {
        // SAFETY: the caller's.
        let v = rows.map(|r| unsafe { load(r) });
        std::array::from_fn(|j| std::array::from_fn(|i| v[i][j]))
    }

    conv_kernels!(
        attr = {},
        V,
        lanes = 4,
        lanes_conv = (2, (4, 4), store_t = (lanes_store_default, 0)),
        zero = zero,
        load = load,
        store = store,
        set1 = set1,
        fma = fma,
        add = add,
        sub = sub,
        mul = mul,
        max = max,
        min = min,
        leaky = leaky,
        load_t = load_t,
        interleave = interleave,
        prefetch = prefetch
    );
}

/// # Safety
/// Always safe (see [`super::MaxPool2x2Fn`]).
unsafe fn max_2x2(plane: &[f32], w: usize, dst: &mut [f32], ow: usize) {
    crate::pool::max_2x2(plane, w, dst, ow);
}

/// # Safety
/// Always safe (see [`super::MaxPool3x3S1Fn`]).
unsafe fn max_3x3_s1(plane: &[f32], w: usize, dst: &mut [f32], rows: &mut [f32]) {
    crate::pool::max_3x3_s1(plane, w, dst, rows);
}

/// # Safety
/// See [`super::GemmFn`].
unsafe fn gemm(t: &RawTile) {
    for p in 0..t.rows.div_ceil(MR) {
        let rows = MR.min(t.rows - p * MR);
        // SAFETY: panel `p` and rows `p·MR..p·MR + rows` exist (the contract).
        unsafe { tile(t, p * MR, rows, t.a.add(p * t.a_step)) };
    }
}

/// `rows ≤ MR` rows of C from the panel at `a`.
///
/// # Safety
/// As [`gemm`], for rows `r0..r0 + rows`.
unsafe fn tile(t: &RawTile, r0: usize, rows: usize, a: *const f32) {
    // Only the panel's first `rows` rows are read: a lone panel entered mid-way may end
    // right after them in its last `k` step (Miri caught the whole-`MR` slice reading past
    // such an A: `simd::test::a_lone_short_panel_is_read_no_further_than_its_rows`).
    let a_len = t.kc.checked_sub(1).map_or(0, |k| k * MR + rows);
    // SAFETY: the panel holds `a_len` floats (`kc·MR` but for a lone panel's last step)
    // and `b` `kc` steps of `NR` floats `ldb` apart (the contract).
    let a = unsafe { std::slice::from_raw_parts(a, a_len) };
    let b_len = t.kc.checked_sub(1).map_or(0, |k| k * t.ldb + NR);
    // SAFETY: as above.
    let b = unsafe { std::slice::from_raw_parts(t.b, b_len) };
    let mut acc = [[0.0f32; NR]; MR];
    // SAFETY: row `i < rows` of the tile is row `r0 + i` of `c`: NR floats at its `ldc`.
    let row = |i: usize| unsafe { t.c.add((r0 + i) * t.ldc) };
    if t.accumulate {
        for (i, r) in acc.iter_mut().enumerate().take(rows) {
            // SAFETY: see `row`.
            r.copy_from_slice(unsafe { std::slice::from_raw_parts(row(i), NR) });
        }
    }
    for k in 0..t.kc {
        let bk = &b[k * t.ldb..k * t.ldb + NR];
        for (r, &av) in acc.iter_mut().zip(&a[k * MR..k * MR + rows]) {
            for (v, &bv) in r.iter_mut().zip(bk) {
                *v += av * bv;
            }
        }
    }
    if !t.bias.is_null() {
        for (i, r) in acc.iter_mut().enumerate().take(rows) {
            // SAFETY: `bias` holds `rows` floats from `r0` on (the contract).
            let b = unsafe { *t.bias.add(r0 + i) };
            r.iter_mut().for_each(|v| *v += b);
            if !t.residual.is_null() {
                // SAFETY: the residual addresses these rows, NR floats each at `ldr`.
                let res =
                    unsafe { std::slice::from_raw_parts(t.residual.add((r0 + i) * t.ldr), NR) };
                r.iter_mut().zip(res).for_each(|(v, x)| *v += x);
            }
        }
        with_activation!(t.act, |act| {
            for r in acc.iter_mut().take(rows) {
                r.iter_mut().for_each(|v| *v = act(*v));
            }
        });
    }
    for (i, r) in acc.iter().enumerate().take(rows) {
        // SAFETY: see `row`; writable and aliasing nothing (the contract).
        unsafe { std::slice::from_raw_parts_mut(row(i), NR) }.copy_from_slice(r);
    }
}

/// # Safety
/// See [`super::DotRowsFn`].
unsafe fn dot_rows(w: *const f32, n: usize, x: *const f32, rows: usize, y: *mut f32) {
    // SAFETY: the caller guarantees `w` holds rows·n floats, `x` n and `y` rows.
    let (w, x, y) = unsafe {
        (
            std::slice::from_raw_parts(w, rows * n),
            std::slice::from_raw_parts(x, n),
            std::slice::from_raw_parts_mut(y, rows),
        )
    };
    for (yr, wr) in y.iter_mut().zip(w.chunks_exact(n.max(1))) {
        *yr = crate::reduce::dot(wr, x);
    }
}

/// # Safety
/// Always safe: plain arithmetic (an `unsafe fn` for the table's uniform type).
unsafe fn fma_probe(iters: u64) -> (u64, f32) {
    let mut acc = [[1.0f32; NR]; MR];
    let (a, b) = (
        std::hint::black_box(0.999_99f32),
        std::hint::black_box(1e-7f32),
    );
    for _ in 0..iters {
        for row in &mut acc {
            for v in row.iter_mut() {
                *v = *v * a + b;
            }
        }
    }
    let sink = acc.iter().flatten().sum();
    (iters * (2 * MR * NR) as u64, sink)
}
