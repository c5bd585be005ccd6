//! x86-64 micro-kernels: AVX2 + FMA (8 lanes) and AVX-512F (16 lanes), from the shared
//! template (`template.rs`). Tiles were chosen by measurement (README, "Kernels";
//! `cargo bench -p taopipe-nets -- report`):
//! - AVX2 6 × 16 (12 accumulators + 2 B vectors + 1 broadcast = 15 of 16 registers);
//! - AVX-512 12 × 32 (24 accumulators + 2 B vectors + broadcast, of 32): on a 16-core
//!   AVX-512 Xeon it averaged 75% of the measured peak over the report's five GEMM shapes,
//!   against 69% for 8 × 48 and 70% for 6 × 64 (8 × 48 wastes most of a 48-pixel panel
//!   on 7×7 layers: 43% against 65% at 512 × 49 × 4608);
//! - AVX-512 8 × 48 (24 accumulators + 3 B vectors + broadcast) for the direct path's
//!   long reductions ([`Isa::wide_kernels`]), which stream their weights past each column
//!   panel: a third fewer passes over them. With the lane kernel for a panel's last
//!   columns it now leads at 512 × 49 × 4608 too (84% against 76% on a 2-core AVX-512
//!   Xeon VM, where 12 × 32 keeps the lead only on VGG's wide first layers, 68% against
//!   62%); `conv/direct.rs` has the frame measurements.

use std::arch::x86_64::*;
use std::ops::Range;

use super::{Isa, Kernels, RawTile};
use crate::conv::winograd;

/// Prefetches the line at `p` into L1 (the template's `$prefetch`).
#[inline(always)]
pub(super) fn prefetch(p: *const f32) {
    // SAFETY: a prefetch is a hint: it never faults and reads nothing, whatever `p` is.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) }
}

/// Prefetches the line at `p` into L2.
#[inline(always)]
pub(super) fn prefetch_l2(p: *const f32) {
    // SAFETY: a prefetch is a hint: it never faults and reads nothing, whatever `p` is.
    unsafe { _mm_prefetch::<_MM_HINT_T1>(p.cast()) }
}

/// Leaky ReLU, `v ≥ 0 ? v : slope · v` lane by lane (the template's `$leaky`): the
/// ordered compare is false for NaN, which then takes `slope · v`, as the scalar rule does.
#[target_feature(enable = "avx")]
#[inline]
fn leaky_avx2(v: __m256, slope: __m256) -> __m256 {
    let keep = _mm256_cmp_ps::<_CMP_GE_OQ>(v, _mm256_setzero_ps());
    _mm256_blendv_ps(_mm256_mul_ps(slope, v), v, keep)
}

/// [`leaky_avx2`] on AVX-512: a mask compare and a masked blend.
#[target_feature(enable = "avx512f")]
#[inline]
fn leaky_avx512(v: __m512, slope: __m512) -> __m512 {
    let keep = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(v, _mm512_setzero_ps());
    _mm512_mask_blend_ps(keep, _mm512_mul_ps(slope, v), v)
}

/// Rows `rows[i][0..8]` of an 8 × 8 block, transposed (the template's `$load_t`): per
/// 128-bit half, rows `i` and `i + 4` come in by a 128-bit load and an insert, then two
/// 4 × 4 transposes run side by side in the halves (unpacks, then shuffles of pairs): 16
/// shuffles, where loading whole rows needs 8 more to cross the halves.
///
/// # Safety
/// The CPU has AVX; each pointer addresses 8 readable floats.
#[target_feature(enable = "avx")]
#[inline]
unsafe fn load_t_avx2(rows: &[*const f32; 8]) -> [__m256; 8] {
    // SAFETY: the loads read `rows[i][0..8]` (the contract).
    let half = |i: usize, at: usize| unsafe {
        let lo = _mm256_castps128_ps256(_mm_loadu_ps(rows[i].add(at)));
        _mm256_insertf128_ps::<1>(lo, _mm_loadu_ps(rows[i + 4].add(at)))
    };
    let mut out = [_mm256_setzero_ps(); 8];
    for at in [0, 4] {
        // Rows (i, i + 4), columns at..at + 4, for i < 4: a 4 × 4 block in each half.
        let [a, b, c, d] = [0, 1, 2, 3].map(|i| half(i, at));
        let (ab_lo, ab_hi) = (_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
        let (cd_lo, cd_hi) = (_mm256_unpacklo_ps(c, d), _mm256_unpackhi_ps(c, d));
        out[at] = _mm256_shuffle_ps::<0x44>(ab_lo, cd_lo);
        out[at + 1] = _mm256_shuffle_ps::<0xEE>(ab_lo, cd_lo);
        out[at + 2] = _mm256_shuffle_ps::<0x44>(ab_hi, cd_hi);
        out[at + 3] = _mm256_shuffle_ps::<0xEE>(ab_hi, cd_hi);
    }
    out
}

/// Rows `rows[i][0..16]` of a 16 × 16 block, transposed (the template's `$load_t`).
///
/// # Safety
/// The CPU has AVX-512F; each pointer addresses 16 readable floats.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn load_t_avx512(rows: &[*const f32; 16]) -> [__m512; 16] {
    // A loop, not `rows.map(..)`: `array::map` is not compiled for AVX-512, so it cannot
    // take the closure's loads inline and stayed a call that passed the 16 vectors
    // through memory (10% of a channel-lanes conv's time in `perf`).
    let mut v = [_mm512_setzero_ps(); 16];
    for (v, &r) in v.iter_mut().zip(rows) {
        // SAFETY: the load reads `r[0..16]` (the contract).
        *v = unsafe { _mm512_loadu_ps(r) };
    }
    transpose_avx512(&mut v);
    v
}

/// A 16 × 16 transpose of `v`: after it, `v[j]`'s lane `i` is what `v[i]`'s lane `j` was.
/// Per 128-bit lane, 4 × 4 transposes ([`transpose_quads`]), then a 4 × 4 transpose of the
/// lanes across four rows' results (two rounds of `shuffle_f32x4`): 64 shuffles.
#[target_feature(enable = "avx512f")]
#[inline]
fn transpose_avx512(v: &mut [__m512; 16]) {
    let s = transpose_quads(v);
    // Column c = 4i + m is lane i of s[m], s[4 + m], s[8 + m], s[12 + m], in that order.
    // `u` takes lanes (0, 1) or (2, 3) of two of them, then the lanes are picked in pairs.
    for m in 0..4 {
        let (s0, s1, s2, s3) = (s[m], s[4 + m], s[8 + m], s[12 + m]);
        let u01_lo = _mm512_shuffle_f32x4::<0x44>(s0, s1); // s0.0 s0.1 s1.0 s1.1
        let u23_lo = _mm512_shuffle_f32x4::<0x44>(s2, s3); // s2.0 s2.1 s3.0 s3.1
        let u01_hi = _mm512_shuffle_f32x4::<0xEE>(s0, s1); // s0.2 s0.3 s1.2 s1.3
        let u23_hi = _mm512_shuffle_f32x4::<0xEE>(s2, s3); // s2.2 s2.3 s3.2 s3.3
        v[m] = _mm512_shuffle_f32x4::<0x88>(u01_lo, u23_lo); // lanes 0 of s0..s3
        v[4 + m] = _mm512_shuffle_f32x4::<0xDD>(u01_lo, u23_lo); // lanes 1
        v[8 + m] = _mm512_shuffle_f32x4::<0x88>(u01_hi, u23_hi); // lanes 2
        v[12 + m] = _mm512_shuffle_f32x4::<0xDD>(u01_hi, u23_hi); // lanes 3
    }
}

/// 4 × 4 transposes of `N` rows (a multiple of 4) in each 128-bit lane: `s[4q + m]`'s
/// lane `i` holds column `4i + m` of rows `4q..4q + 4`. Unpacks pair the rows' floats
/// (`t[2k]`: columns 4i, 4i + 1 of rows 2k, 2k + 1 as a₀ b₀ a₁ b₁; `t[2k + 1]`: columns
/// 4i + 2, 4i + 3), then shuffles take their pairs: `2N` shuffles.
#[target_feature(enable = "avx512f")]
#[inline]
fn transpose_quads<const N: usize>(v: &[__m512; N]) -> [__m512; N] {
    let t: [__m512; N] = std::array::from_fn(|k| {
        let (x, y) = (v[k & !1], v[k | 1]);
        if k % 2 == 0 {
            _mm512_unpacklo_ps(x, y)
        } else {
            _mm512_unpackhi_ps(x, y)
        }
    });
    std::array::from_fn(|k| {
        let (q, m) = (k / 4, k % 4);
        let (x, y) = (t[4 * q + m / 2], t[4 * q + 2 + m / 2]);
        if m % 2 == 0 {
            _mm512_shuffle_ps::<0x44>(x, y)
        } else {
            _mm512_shuffle_ps::<0xEE>(x, y)
        }
    })
}

/// The AVX-512 channel-lanes tiles' transposed store for up to 8 pixels (the template's
/// `lanes_store_default!` contract; 2 vectors of channels). Per vector of channels, an 8 ×
/// 16 transpose in registers: [`transpose_quads`], then one two-source permute per result,
/// which holds channel `c`'s 8 pixels in its low half and channel `c + 4`'s in its high
/// half; each half leaves by a masked store of the tile's `n` pixels. 24 shuffles and 16
/// stores a vector of channels, where the default goes through memory and a 16 × 16
/// transpose (64 shuffles), and wastes 6 of its 16 rows on a tile of 10 pixels. `room`
/// is not needed: the masks store exactly `n` floats. Measured in `conv::lanes`
/// ([`SHORT_STEPS`](crate::conv::lanes::SHORT_STEPS)).
///
/// # Safety
/// The CPU has AVX-512F; `n <= PX <= 8`; for every lane `l` in `lanes`, `row0 + l·ldo`
/// addresses `n` writable floats.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn lanes_store_t_avx512<const PX: usize>(
    acc: &[[__m512; 2]; PX],
    n: usize,
    _room: usize,
    lanes: Range<usize>,
    row0: *mut f32,
    ldo: usize,
) {
    // Result `4p + m` from quads `m` (pixels 0..4) and `4 + m` (pixels 4..8): their lanes
    // 2p (channel 8p + m) and 2p + 1 (channel 8p + 4 + m), pixels in order.
    const PICK: [[i32; 16]; 2] = [
        [0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23],
        [8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31],
    ];
    debug_assert!(n <= PX && PX <= 8, "{n} pixels of a tile of {PX}");
    let low = ((1u32 << n) - 1) as __mmask16;
    for j in 0..2 {
        if lanes.end <= 16 * j || lanes.start >= 16 * (j + 1) {
            continue;
        }
        // Rows past the tile's pixels: zeros, never stored.
        let rows =
            std::array::from_fn::<_, 8, _>(|i| acc.get(i).map_or(_mm512_setzero_ps(), |a| a[j]));
        let u = transpose_quads(&rows);
        for (p, pick) in PICK.iter().enumerate() {
            // SAFETY: `pick` holds 16 `i32`s.
            let pick = unsafe { _mm512_loadu_epi32(pick.as_ptr()) };
            for m in 0..4 {
                let v = _mm512_permutex2var_ps(u[m], pick, u[4 + m]);
                let lane = 16 * j + 8 * p + m;
                // SAFETY: a masked store writes only its mask's lanes: pixels `0..n` of
                // row `lane` (the low half) and of row `lane + 4` (the high half, stored
                // from 8 floats before that row's start), which the contract gives.
                unsafe {
                    if lanes.contains(&lane) {
                        _mm512_mask_storeu_ps(row0.wrapping_add(lane * ldo), low, v);
                    }
                    if lanes.contains(&(lane + 4)) {
                        let hi = row0.wrapping_add((lane + 4) * ldo).wrapping_sub(8);
                        _mm512_mask_storeu_ps(hi, low << 8, v);
                    }
                }
            }
        }
    }
}

/// [`winograd::interleave_steps`] of 8 tiles, for 2 and 4 outputs a tile.
///
/// # Safety
/// The CPU has AVX.
#[target_feature(enable = "avx")]
#[inline]
pub(crate) unsafe fn interleave_avx2(xs: &[f32], m: usize, n: usize, row: &mut [f32]) {
    winograd::interleave_steps(xs, m, n, row, 8, |xs, row, t| {
        let (x, r) = (xs.as_ptr(), row.as_mut_ptr());
        // SAFETY: `interleave_steps` calls this for `t + 8 <= n`, with `m` rows of `n` in
        // `xs` and `m·n` floats in `row`: the loads read tiles `t..t + 8` of each row and
        // the stores write `row[m·t..m·(t + 8)]`.
        unsafe {
            if m == 2 {
                let (a, b) = (_mm256_loadu_ps(x.add(t)), _mm256_loadu_ps(x.add(n + t)));
                // Per 128-bit lane `i`: tiles 4i, 4i + 1 (lo), then 4i + 2, 4i + 3 (hi).
                let (lo, hi) = (_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
                _mm256_storeu_ps(r.add(2 * t), _mm256_permute2f128_ps::<0x20>(lo, hi));
                _mm256_storeu_ps(r.add(2 * t + 8), _mm256_permute2f128_ps::<0x31>(lo, hi));
                return;
            }
            let [a, b, c, d] = std::array::from_fn(|k| _mm256_loadu_ps(x.add(k * n + t)));
            let (ab_lo, ab_hi) = (_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
            let (cd_lo, cd_hi) = (_mm256_unpacklo_ps(c, d), _mm256_unpackhi_ps(c, d));
            let pairs = |x: __m256, y: __m256| {
                let (x, y) = (_mm256_castps_pd(x), _mm256_castps_pd(y));
                let (lo, hi) = (_mm256_unpacklo_pd(x, y), _mm256_unpackhi_pd(x, y));
                (_mm256_castpd_ps(lo), _mm256_castpd_ps(hi))
            };
            // `qj`'s 128-bit lane `i` holds tile `4i + j`'s four outputs.
            let (q0, q1) = pairs(ab_lo, cd_lo);
            let (q2, q3) = pairs(ab_hi, cd_hi);
            _mm256_storeu_ps(r.add(4 * t), _mm256_permute2f128_ps::<0x20>(q0, q1));
            _mm256_storeu_ps(r.add(4 * t + 8), _mm256_permute2f128_ps::<0x20>(q2, q3));
            _mm256_storeu_ps(r.add(4 * t + 16), _mm256_permute2f128_ps::<0x31>(q0, q1));
            _mm256_storeu_ps(r.add(4 * t + 24), _mm256_permute2f128_ps::<0x31>(q2, q3));
        }
    });
}

/// [`winograd::interleave_steps`] of 16 tiles, for 2 and 4 outputs a tile.
///
/// # Safety
/// The CPU has AVX-512F.
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) unsafe fn interleave_avx512(xs: &[f32], m: usize, n: usize, row: &mut [f32]) {
    winograd::interleave_steps(xs, m, n, row, 16, |xs, row, t| {
        let (x, r) = (xs.as_ptr(), row.as_mut_ptr());
        // SAFETY: `interleave_steps` calls this for `t + 16 <= n`, with `m` rows of `n` in
        // `xs` and `m·n` floats in `row`: the loads read tiles `t..t + 16` of each row and
        // the stores write `row[m·t..m·(t + 16)]`.
        unsafe {
            if m == 2 {
                let (a, b) = (_mm512_loadu_ps(x.add(t)), _mm512_loadu_ps(x.add(n + t)));
                // Per 128-bit lane `i`: tiles 4i, 4i + 1 (lo), then 4i + 2, 4i + 3 (hi).
                let (lo, hi) = (_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
                // Lanes (lo 0, lo 1, hi 0, hi 1), then in order (lo 0, hi 0, lo 1, hi 1).
                let first = _mm512_shuffle_f32x4::<0b01_00_01_00>(lo, hi);
                let second = _mm512_shuffle_f32x4::<0b11_10_11_10>(lo, hi);
                let order = |v| _mm512_shuffle_f32x4::<0b11_01_10_00>(v, v);
                _mm512_storeu_ps(r.add(2 * t), order(first));
                _mm512_storeu_ps(r.add(2 * t + 16), order(second));
                return;
            }
            let [a, b, c, d] = std::array::from_fn(|k| _mm512_loadu_ps(x.add(k * n + t)));
            let (ab_lo, ab_hi) = (_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
            let (cd_lo, cd_hi) = (_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
            let pairs = |x: __m512, y: __m512| {
                let (x, y) = (_mm512_castps_pd(x), _mm512_castps_pd(y));
                let (lo, hi) = (_mm512_unpacklo_pd(x, y), _mm512_unpackhi_pd(x, y));
                (_mm512_castpd_ps(lo), _mm512_castpd_ps(hi))
            };
            // `qj`'s 128-bit lane `i` holds tile `4i + j`'s four outputs.
            let (q0, q1) = pairs(ab_lo, cd_lo);
            let (q2, q3) = pairs(ab_hi, cd_hi);
            // Lane `i` of the result `i` of q0..q3: a 4×4 transpose of the lanes.
            let u0 = _mm512_shuffle_f32x4::<0b01_00_01_00>(q0, q1);
            let u1 = _mm512_shuffle_f32x4::<0b01_00_01_00>(q2, q3);
            let u2 = _mm512_shuffle_f32x4::<0b11_10_11_10>(q0, q1);
            let u3 = _mm512_shuffle_f32x4::<0b11_10_11_10>(q2, q3);
            let even = |x, y| _mm512_shuffle_f32x4::<0b10_00_10_00>(x, y);
            let odd = |x, y| _mm512_shuffle_f32x4::<0b11_01_11_01>(x, y);
            _mm512_storeu_ps(r.add(4 * t), even(u0, u1));
            _mm512_storeu_ps(r.add(4 * t + 16), odd(u0, u1));
            _mm512_storeu_ps(r.add(4 * t + 32), even(u2, u3));
            _mm512_storeu_ps(r.add(4 * t + 48), odd(u2, u3));
        }
    });
}

/// The input rows of output row `oy`'s 3×3 stride-2 windows, padded by `pad` above, in
/// an `h`-row plane. A window of fewer than 3 rows repeats its last: `max(v, r)` with `v`
/// already `max(…, r)` returns `v`'s bits, NaN and signed zeros included.
fn window_rows(oy: usize, pad: usize, h: usize) -> [usize; 3] {
    let y0 = (2 * oy).saturating_sub(pad);
    let last = (2 * oy + 3).saturating_sub(pad).min(h) - 1;
    [y0, (y0 + 1).min(last), (y0 + 2).min(last)]
}

/// The AVX-512 3×3 stride-2 max pool of one plane ([`super::MaxPool3x3Fn`], whose
/// contract the caller keeps): the separable route of [`crate::pool`] on 16-float vectors,
/// each output's three columns picked from the column maxima by two-source permutes (even
/// and odd floats of 32) instead of a split into phases. The operations and their order
/// are [`crate::pool::max_columns`]' (rows first, then `max(max(c₀, c₁), c₂)`), with
/// [`crate::activation::max_nan`] as `max_ps` and a blend of a NaN first operand, so the
/// bits are the portable path's. A window of fewer than 3 rows repeats its last, as on
/// AVX2; a padding column is `−∞`, as a masked load's fill.
///
/// The column maxima stay in registers: each vector of 16 outputs takes the maxima of
/// columns `2·o .. 2·o + 48` as three vectors (the third is the next vector's first), and
/// each window's third column is the next window's first column. Written to a row of
/// column maxima and read back at other offsets, as before, every read waited for the
/// stores it overlapped (no store forwarding across them): SqueezeNet's 27×27 pool
/// streamed its input at 11.2 GB/s, ORT's node took a third of its time
/// (`docs/kernel-log.md`).
///
/// The load masks depend on the column only, so they are worked out once per plane, and
/// a vector of columns past the row is `−∞` without a load: worked out per row and
/// vector, their scalar arithmetic outweighed the vector work on small planes. Alone (a
/// scratch `Pool2d::compute_chunks` loop, best of 30000 runs, builds taking turns; 2-core
/// AMD EPYC Zen 5 VM) SqueezeNet's pools went from 0.0712, 0.0396 and 0.0240 ms to 0.064,
/// 0.0352 and 0.0201 (`64 × 111×111`, `128 × 55×55`, `256 × 27×27`), ResNet50's `64 ×
/// 112×112` from 0.0731 to 0.0667; in frames SqueezeNet's three from 0.147–0.152 to
/// 0.131–0.133 ms (`frame --net squeezenet1_1 --width 1 --profile`, two rounds).
///
/// Two output rows run in one pass, their chains side by side: alone (the same loop,
/// three rounds) the first two pools went 0.0635–0.0651 → 0.0586–0.0605 ms and
/// 0.0350–0.0353 → 0.0338–0.0340, the third 0.0202–0.0208 → 0.0196–0.0204.
///
/// # Safety
/// The CPU has AVX-512F; the slices are as [`super::Kernels::max_3x3_s2`] checks.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn max_3x3_s2_avx512(
    plane: &[f32],
    w: usize,
    (pad, _right): (usize, usize),
    dst: &mut [f32],
    ow: usize,
    _column: &mut [f32],
) {
    let (h, oh) = (plane.len() / w, dst.len() / ow);
    // Lanes `i < n` of a 16-float vector (all of them from 16 on).
    let lanes = |n: usize| -> __mmask16 { if n >= 16 { !0 } else { (1u16 << n) - 1 } };
    // `max_nan(a, b)`: `a > b ? a : b` is `max_ps(a, b)`, then a NaN `a` is kept.
    let max = |a: __m512, b: __m512| {
        let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(a, a);
        _mm512_mask_blend_ps(nan, _mm512_max_ps(a, b), a)
    };
    let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    let next = _mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
    let ninf = _mm512_set1_ps(f32::NEG_INFINITY);
    let x = plane.as_ptr();
    // The load mask of padded columns `j..j + 16` (input columns from `j − pad`).
    let mask = |j: usize| {
        let (from, to) = (pad.saturating_sub(j), (pad + w).saturating_sub(j));
        lanes(to) & !lanes(from)
    };
    // The same for every row: worked out once, for the columns `16·k` of the first
    // `MASKS` vectors (a row of up to 7 vectors of outputs), the rest as they come.
    const MASKS: usize = 15;
    let masks: [__mmask16; MASKS] = std::array::from_fn(|k| mask(16 * k));
    let mask_of = |k: usize| if k < MASKS { masks[k] } else { mask(16 * k) };
    // SAFETY: `Kernels::max_3x3_s2` checked `plane` (`h·w`) and `dst` (`oh·ow`). A masked
    // load reads only the lanes of its mask, columns `0..w` of a row `y < h` (the
    // pointer to the row's column `j − pad` is formed with `wrapping_*`: for `j < pad` it
    // lies before the row, and its lanes there are masked off); a masked store writes
    // only the outputs `o0..ow` of row `oy`.
    unsafe {
        // Two output rows a pass (the last alone where `oh` is odd): their chains are
        // independent, so each hides the other's latency.
        for oy in (0..oh).step_by(2) {
            let pair = oy + 1 < oh;
            let rows =
                [oy, (oy + 1).min(oh - 1)].map(|oy| window_rows(oy, pad, h).map(|y| x.add(y * w)));
            // The maxima of padded columns `16·k..16·k + 16` of both rows' windows; past
            // the row, no load.
            let column = |k: usize| {
                let m = mask_of(k);
                if m == 0 {
                    return [ninf; 2];
                }
                let j = 16 * k;
                let window = |rows: [*const f32; 3]| {
                    let [r0, r1, r2] = rows.map(|r| {
                        _mm512_mask_loadu_ps(ninf, m, r.wrapping_add(j).wrapping_sub(pad))
                    });
                    max(max(r0, r1), r2)
                };
                // An odd plane's last row runs alone: no second window to load.
                [window(rows[0]), if pair { window(rows[1]) } else { ninf }]
            };
            let d = dst.as_mut_ptr().add(oy * ow);
            let mut a = column(0);
            for o0 in (0..ow).step_by(16) {
                let k = o0 / 8;
                let (b, c) = (column(k + 1), column(k + 2));
                for r in 0..2 {
                    if r == 1 && !pair {
                        break;
                    }
                    let first = _mm512_permutex2var_ps(a[r], even, b[r]);
                    let second = _mm512_permutex2var_ps(a[r], odd, b[r]);
                    // Each window's third column is the next window's first.
                    let third = _mm512_permutex2var_ps(first, next, c[r]);
                    let out = max(max(first, second), third);
                    _mm512_mask_storeu_ps(d.add(r * ow + o0), lanes(ow - o0), out);
                }
                a = c;
            }
        }
    }
}

/// The AVX2 3×3 stride-2 max pool of one plane ([`super::MaxPool3x3Fn`]): the AVX-512
/// kernel's operations on 8-float vectors, masked loads for the input rows' tails, whole
/// vectors stored into the column's slack and over the next output row (a masked store
/// only at the plane's end: AMD runs them as microcode), and each
/// output's even and odd columns picked from two vectors of the row of column maxima by a
/// `shufps` and a 64-bit `vpermpd`. The bits are the portable path's, as the AVX-512
/// kernel's. The window's three rows are read in one expression (a window of fewer
/// repeats its last row) instead of a loop over them; with the whole-vector tails this
/// took SqueezeNet's three pools from 0.48–0.67 to 0.26–0.31 ms a frame, AlexNet's from
/// 0.17–0.19 to 0.12–0.13 and ResNet50's from 0.25–0.32 to 0.17–0.19 (`frame --net NET
/// --width 1 --profile`, three rounds, builds taking turns; 2-core Zen 3 VM).
///
/// # Safety
/// The CPU has AVX2; the slices are as [`super::Kernels::max_3x3_s2`] checks.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn max_3x3_s2_avx2(
    plane: &[f32],
    w: usize,
    (pad, right): (usize, usize),
    dst: &mut [f32],
    ow: usize,
    column: &mut [f32],
) {
    let (h, oh) = (plane.len() / w, dst.len() / ow);
    let cols = pad + w + right;
    // Lanes `i < n` of an 8-float vector (all of them from 8 on), as a maskload mask.
    let ramp = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let lanes = |n: usize| _mm256_cmpgt_epi32(_mm256_set1_epi32(n.min(8) as i32), ramp);
    // `max_nan(a, b)`: `max_ps(a, b)`, then a NaN `a` kept.
    let max = |a: __m256, b: __m256| {
        let nan = _mm256_cmp_ps::<_CMP_UNORD_Q>(a, a);
        _mm256_blendv_ps(_mm256_max_ps(a, b), a, nan)
    };
    // The even (or odd) floats of `a` then `b`, in order: per 128-bit lane `shufps` picks
    // [a₀ a₂ b₀ b₂ | a₄ a₆ b₄ b₆]; the 64-bit units then go [0, 2, 1, 3].
    let pick = |a: __m256, b: __m256, odd: bool| {
        let v = if odd {
            _mm256_shuffle_ps::<0b11_01_11_01>(a, b)
        } else {
            _mm256_shuffle_ps::<0b10_00_10_00>(a, b)
        };
        _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(v)))
    };
    // The first `n < 8` floats at `p`, the other lanes zero, and a store of the first `n`
    // lanes: masked, for a row's tail only (AMD microcodes masked stores: with them on
    // every vector SqueezeNet's 111×111 pool ran at 2.8 GB/s on a Zen 3).
    let tail_load = |p: *const f32, n: usize| {
        // SAFETY: the masked load reads lanes `< n` only, which the caller's `p` holds.
        unsafe { _mm256_maskload_ps(p, lanes(n)) }
    };
    let tail_store = |p: *mut f32, n: usize, v: __m256| {
        // SAFETY: the masked store writes lanes `< n` only, which the caller's `p` holds.
        unsafe { _mm256_maskstore_ps(p, lanes(n), v) }
    };
    let (c, x) = (column.as_mut_ptr(), plane.as_ptr());
    // SAFETY: `Kernels::max_3x3_s2` checked `plane` (`h·w`), `dst` (`oh·ow`) and `column`
    // (`pad + w + right + COLUMN_SLACK` floats), and that `ow` outputs of 3 columns at
    // stride 2 fit the padded row. Input rows `y0 ≤ y < y1 ≤ h` are read by whole vectors
    // below `w / 8 · 8` and by `tail_load` (masked) past it. The row of column maxima is
    // written at `pad + x0` for `x0 < w` by whole vectors, ending before `pad + w + 8 ≤
    // column.len()`. Output vector `o0 < ow` reads columns `2·o0 .. 2·o0 + 18`, and
    // `2·(ow − 1) + 3 ≤ pad + w + right` puts their end within the slack of 16. It stores
    // a whole vector only where `dst` holds 8 floats from it, else (fewer than 8 outputs
    // left in the plane) by `tail_store`.
    unsafe {
        for i in (0..pad).chain(pad + w..cols) {
            *c.add(i) = f32::NEG_INFINITY;
        }
        let ninf = _mm256_set1_ps(f32::NEG_INFINITY);
        // Whole vectors of a row of columns: plain loads and stores.
        let whole_cols = w / 8 * 8;
        for oy in 0..oh {
            let rows = window_rows(oy, pad, h).map(|y| x.add(y * w));
            let column = |x0: usize| {
                let [r0, r1, r2] = rows.map(|r| _mm256_loadu_ps(r.add(x0)));
                max(max(r0, r1), r2)
            };
            for x0 in (0..whole_cols).step_by(8) {
                _mm256_storeu_ps(c.add(pad + x0), column(x0));
            }
            if whole_cols < w {
                // The row's last vector whole, −∞ past the row (`COLUMN_SLACK`).
                let (x0, n) = (whole_cols, w - whole_cols);
                let row = |r: *const f32| tail_load(r.add(x0), n);
                let v = max(max(row(rows[0]), row(rows[1])), row(rows[2]));
                let v = _mm256_blendv_ps(ninf, v, _mm256_castsi256_ps(lanes(n)));
                _mm256_storeu_ps(c.add(pad + x0), v);
            }
            let d = dst.as_mut_ptr().add(oy * ow);
            for o0 in (0..ow).step_by(8) {
                // Plain loads: the last output vector's columns end inside `COLUMN_SLACK`
                // (its lanes past the row read whatever is there and go unused).
                let at = |from: usize| _mm256_loadu_ps(c.add(2 * o0 + from));
                let (a, b, a2, b2) = (at(0), at(8), at(2), at(10));
                let (first, second, third) =
                    (pick(a, b, false), pick(a, b, true), pick(a2, b2, false));
                let v = max(max(first, second), third);
                // A whole vector where `dst` has room: what it writes past the row, the
                // next rows overwrite.
                if oy * ow + o0 + 8 <= dst.len() {
                    _mm256_storeu_ps(d.add(o0), v);
                } else {
                    tail_store(d.add(o0), ow - o0, v);
                }
            }
        }
    }
}

isa_kernels!(
    mod avx2, feature = "avx2,fma", __m256, lanes = 8, chains = 12,
    zero = _mm256_setzero_ps, load = _mm256_loadu_ps, store = _mm256_storeu_ps,
    set1 = _mm256_set1_ps, fma = _mm256_fmadd_ps, add = _mm256_add_ps,
    sub = _mm256_sub_ps, mul = _mm256_mul_ps, max = _mm256_max_ps,
    min = _mm256_min_ps, leaky = leaky_avx2, prefetch = prefetch, interleave = interleave_avx2,
    load_t = load_t_avx2, max_3x3_s2 = Some(max_3x3_s2_avx2),
    lanes_conv = (2, (6, 6), store_t = (lanes_store_default, 0))
);

// The AVX-512 channel-lanes tile: 2 vectors of output channels by 10 pixels for long
// reductions, by 8 with the store in registers for short ones (`lanes::SHORT_STEPS`). 10,
// not 12 (a decision, from a measurement). With 12 pixels its 24 accumulators, the 12
// pixels' broadcasts and their 12 window pointers did not fit the registers: the
// compiler kept some accumulators on the stack, loaded and stored every step. With 10
// they stay in registers. One conv alone (a scratch `Conv2d::forward` benchmark, ReLU,
// best of runs of a second, two rounds; 2-core Intel Xeon VM, AVX-512): `256 → 256` 3×3
// on 56×56 36.5 → 28.3 ms, `16 → 64` on 55×55 0.57 → 0.45–0.48, `32 → 128` on 27×27 0.53 →
// 0.42–0.44, `64 → 256` on 13×13 0.48 → 0.36, `96 → 208` on 14×14 0.69 → 0.50–0.52,
// `16 → 32` on 28×28 0.075 → 0.061, AlexNet's 11×11 stride-4 stem 1.39 → 1.06–1.13.
isa_kernels!(
    mod avx512, feature = "avx512f,fma", __m512, lanes = 16, chains = 24,
    zero = _mm512_setzero_ps, load = _mm512_loadu_ps, store = _mm512_storeu_ps,
    set1 = _mm512_set1_ps, fma = _mm512_fmadd_ps, add = _mm512_add_ps,
    sub = _mm512_sub_ps, mul = _mm512_mul_ps, max = _mm512_max_ps,
    min = _mm512_min_ps, leaky = leaky_avx512, prefetch = prefetch, interleave = interleave_avx512,
    load_t = load_t_avx512, max_3x3_s2 = Some(max_3x3_s2_avx512),
    lanes_conv = (2, (8, 10), store_t = (super::lanes_store_t_avx512, 8))
);

pub(super) static AVX2: Kernels = table!(Isa::Avx2, avx2, 6, 2);
/// The AVX-512 tables take AVX-512's own channel-blocked depthwise kernel (16 channels a
/// vector) since `load_t_avx512` runs inline: `conv::depthwise`'s docs give the figures
/// against AVX2's (8 channels a vector), which they took before.
pub(super) static AVX512: Kernels = table!(Isa::Avx512, avx512, 12, 2, extra [1, 2, 3, 4]);
pub(super) static AVX512_WIDE: Kernels = table!(Isa::Avx512, avx512, 8, 3, extra [1, 2]);

/// Other tile shapes, for the benchmark that chose the ones above.
pub(super) static VARIANTS: [Kernels; 4] = [
    table!(Isa::Avx2, avx2, 8, 1),
    table!(Isa::Avx512, avx512, 4, 6),
    table!(Isa::Avx512, avx512, 6, 4),
    table!(Isa::Avx512, avx512, 14, 2),
];
