//! aarch64 micro-kernels: Advanced SIMD (4 lanes), from the shared template
//! (`template.rs`). The GEMM tile is 8 × 12: 24 accumulators + 3 B vectors + a broadcast,
//! of 32 registers (the shape XNNPACK and ARM Compute Library use on Cortex-A cores).
//! Every aarch64 core has NEON; the kernel tests run under `qemu-aarch64` in CI.

use super::{Isa, Kernels, RawTile};
use crate::conv::winograd;
use std::arch::aarch64::*;

/// `a·b + c` in the template's argument order.
#[target_feature(enable = "neon")]
#[inline]
fn fma(a: float32x4_t, b: float32x4_t, c: float32x4_t) -> float32x4_t {
    vfmaq_f32(c, a, b)
}

/// A vector of zeros.
#[target_feature(enable = "neon")]
#[inline]
fn zero() -> float32x4_t {
    vdupq_n_f32(0.0)
}

/// `if a > b { a } else { b }` lane by lane: x86 `max_ps`'s rule, which the template's
/// ReLU (`max(zero, v)`) and clip rely on. `vmaxq_f32` propagates NaN too, but returns
/// `+0.0` for `max(+0.0, −0.0)`, so ReLU(−0.0) would be `+0.0` here and `−0.0` on x86 and
/// the portable path; a compare and a select keep every path's bits equal (one instruction more per
/// vector than `vmaxq_f32`, in the epilogue only, not in the `k` loop).
#[target_feature(enable = "neon")]
#[inline]
fn max(a: float32x4_t, b: float32x4_t) -> float32x4_t {
    vbslq_f32(vcgtq_f32(a, b), a, b)
}

/// `if a < b { a } else { b }` lane by lane: x86 `min_ps`'s rule, for the template's clip
/// (`min(max, max(min, v))`); `vminq_f32` differs on NaN and zeros as `vmaxq_f32` does.
#[target_feature(enable = "neon")]
#[inline]
fn min(a: float32x4_t, b: float32x4_t) -> float32x4_t {
    vbslq_f32(vcltq_f32(a, b), a, b)
}

/// Leaky ReLU, `v ≥ 0 ? v : slope · v` lane by lane (the template's `$leaky`): `vcgeq_f32`
/// is false for NaN, which then takes `slope · v`, as the scalar rule does.
#[target_feature(enable = "neon")]
#[inline]
fn leaky(v: float32x4_t, slope: float32x4_t) -> float32x4_t {
    vbslq_f32(vcgeq_f32(v, vdupq_n_f32(0.0)), v, vmulq_f32(slope, v))
}

/// The template's `$prefetch`: nothing (`core::arch::aarch64::_prefetch` is not stable
/// yet).
#[inline(always)]
fn prefetch(_p: *const f32) {}

/// [`winograd::interleave_steps`] of 4 tiles, for 2 and 4 outputs a tile, by NEON's
/// interleaving stores.
///
/// # Safety
/// The CPU has NEON.
#[target_feature(enable = "neon")]
#[inline]
pub(super) unsafe fn interleave(xs: &[f32], m: usize, n: usize, row: &mut [f32]) {
    winograd::interleave_steps(xs, m, n, row, 4, |xs, row, t| {
        let (x, r) = (xs.as_ptr(), row.as_mut_ptr());
        // SAFETY: `interleave_steps` calls this for `t + 4 <= n`, with `m` rows of `n` in
        // `xs` and `m·n` floats in `row`: the loads read tiles `t..t + 4` of each row and
        // the store writes `row[m·t..m·(t + 4)]`.
        unsafe {
            if m == 2 {
                let v = float32x4x2_t(vld1q_f32(x.add(t)), vld1q_f32(x.add(n + t)));
                vst2q_f32(r.add(2 * t), v);
            } else {
                let [a, b, c, d] = std::array::from_fn(|k| vld1q_f32(x.add(k * n + t)));
                vst4q_f32(r.add(4 * t), float32x4x4_t(a, b, c, d));
            }
        }
    });
}

/// Rows `rows[i][0..4]` of a 4 × 4 block, transposed (the template's `$load_t`):
/// `trn1`/`trn2` pair the rows' floats, then their 64-bit halves.
///
/// # Safety
/// The CPU has NEON; each pointer addresses 4 readable floats.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn load_t(rows: &[*const f32; 4]) -> [float32x4_t; 4] {
    // SAFETY: the loads read `rows[i][0..4]` (the contract).
    let v = rows.map(|r| unsafe { vld1q_f32(r) });
    // a₀ b₀ a₂ b₂, a₁ b₁ a₃ b₃, and the same of rows c, d.
    let (ab0, ab1) = (vtrn1q_f32(v[0], v[1]), vtrn2q_f32(v[0], v[1]));
    let (cd0, cd1) = (vtrn1q_f32(v[2], v[3]), vtrn2q_f32(v[2], v[3]));
    let lo = |x, y| {
        vreinterpretq_f32_f64(vtrn1q_f64(
            vreinterpretq_f64_f32(x),
            vreinterpretq_f64_f32(y),
        ))
    };
    let hi = |x, y| {
        vreinterpretq_f32_f64(vtrn2q_f64(
            vreinterpretq_f64_f32(x),
            vreinterpretq_f64_f32(y),
        ))
    };
    [lo(ab0, cd0), lo(ab1, cd1), hi(ab0, cd0), hi(ab1, cd1)]
}

isa_kernels!(
    mod neon, feature = "neon", float32x4_t, lanes = 4, chains = 16,
    zero = zero, load = vld1q_f32, store = vst1q_f32, set1 = vdupq_n_f32,
    fma = fma, add = vaddq_f32, sub = vsubq_f32, mul = vmulq_f32, max = max, min = min, leaky = leaky, prefetch = prefetch,
    interleave = interleave, load_t = load_t, max_3x3_s2 = None,
    lanes_conv = (4, (6, 6), store_t = (lanes_store_default, 0))
);

pub(super) static NEON: Kernels = table!(Isa::Neon, neon, 8, 3);
