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

use super::{Isa, Kernels, MatMut, RawTile};
use crate::conv::winograd::{self, Geometry, Products};
use crate::gemm::BlockEpilogue;

/// Prefetches the line at `p` into L1 (the template's `$prefetch`).
#[inline(always)]
pub(super) fn prefetch(p: *const f32) {
    // SAFETY: a prefetch is a hint: it never faults and reads nothing, whatever `p` is.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) }
}

isa_kernels!(
    mod avx2, feature = "avx2,fma", __m256, lanes = 8, chains = 12,
    zero = _mm256_setzero_ps, load = _mm256_loadu_ps, store = _mm256_storeu_ps,
    set1 = _mm256_set1_ps, fma = _mm256_fmadd_ps, add = _mm256_add_ps, max = _mm256_max_ps,
    prefetch = prefetch
);

isa_kernels!(
    mod avx512, feature = "avx512f,fma", __m512, lanes = 16, chains = 24,
    zero = _mm512_setzero_ps, load = _mm512_loadu_ps, store = _mm512_storeu_ps,
    set1 = _mm512_set1_ps, fma = _mm512_fmadd_ps, add = _mm512_add_ps, max = _mm512_max_ps,
    prefetch = prefetch
);

pub(super) static AVX2: Kernels = table!(Isa::Avx2, avx2, 6, 2);
pub(super) static AVX512: Kernels = table!(Isa::Avx512, avx512, 12, 2, extra [1, 2, 3, 4]);
pub(super) static AVX512_WIDE: Kernels = table!(Isa::Avx512, avx512, 8, 3, extra [1, 2]);

/// Other tile shapes, for the benchmark that chose the ones above.
pub(super) static VARIANTS: [Kernels; 4] = [
    table!(Isa::Avx2, avx2, 8, 1),
    table!(Isa::Avx512, avx512, 4, 6),
    table!(Isa::Avx512, avx512, 6, 4),
    table!(Isa::Avx512, avx512, 14, 2),
];
