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
//! Reductions of at most `STORE_BOUND_K` swap the two inner loops (its docs say why).
//!
//! Every element of `C` is one FMA chain over the reduction in order, then the epilogue,
//! whatever the blocking, the tile or the rank that computes it.
//!
//! Choosing this core over the `gemm` crate and tract-linalg was a measurement (README,
//! "Kernels"; `cargo bench -p taopipe-nets -- report`).

use std::ops::Range;

use crate::activation::Activation;
use crate::cache::Blocking;
use crate::simd::{Epilogue, Kernels, MatMut, Residual, prefetch_l2};

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
/// block, a residual matrix covering the block, the activation ([`Epilogue`]'s order).
#[derive(Clone, Copy, Debug)]
pub struct BlockEpilogue<'a> {
    /// One per row of the block.
    pub bias: &'a [f32],
    /// What to add: a matrix as big as the block, or the block itself (then `a` must
    /// have been packed with the whole reduction in one `kc` block).
    pub residual: Residual<'a>,
    /// Applied last.
    pub act: Activation,
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
    let layout = BLayout::Packed;
    gemm_with(kernels, blocking, a, rows, b, layout, c, epilogue);
}

/// [`gemm`] with B read in place: row `k` of B is `b[k·ldb..]`, the first `c.cols()`
/// floats of it, a whole number of `NR` panels (`ldb >= c.cols()`). A pointwise conv's
/// input is such a B, one channel plane per row, which its GEMM then reads without a pack
/// (`conv/direct.rs` says where that pays). The bits are [`gemm`]'s on the same values.
///
/// Its B is prefetched into L2 from the blocked loop, two column panels ahead (`B_AHEAD`),
/// every line of the panel's rows before the tile two panels back runs (a decision, from
/// measurements). A column panel's rows lie a plane apart, 64 to 512 streams, so in a
/// frame, with the input in L3 or memory, every line was a demand miss. A prefetch from
/// the micro-kernel's `k` loop cured that but slowed every GEMM, since they share that
/// loop: the report's direct path ran 3–7% slower in four rounds taking turns with the
/// build before (`cargo bench -p taopipe-nets --bench bench_main -- report`: 93.2, 97.3,
/// 99.1 and 95.5 GFLOP/s against 100.4, 104.5, 102.3 and 99.3). From the blocked loop
/// the micro-kernel stays as it was. Measured on a 2-core AMD EPYC Zen 4 VM, alone with
/// the input cold (a scratch `Conv2d::compute_chunks` loop, 24 MB written between runs,
/// median of 0.4 s of runs, rounds taking turns): SqueezeNet's `128 → 16` squeeze on 55×55
/// 0.332–0.366 ms without, 0.227–0.341 with an L1 hint, **0.192–0.265** with the L2 hint;
/// MobileNetV2's `144 → 24` on 56×56 0.514–0.620, 0.319–0.537 and **0.322–0.398**; 1, 4
/// and 8 panels ahead (L1 hint) no better than 2. In frames (`frame --width 1 --frames 100
/// --profile`, four rounds, the builds taking turns) SqueezeNet's `features_4` squeeze
/// went 0.157 → 0.147 ms and its layers summed 7.57 → 7.49 ms; MobileNetV2's `32 → 16`
/// on 112×112 0.233 → 0.209 and its layers 8.20 → 8.06.
///
/// # Panics
/// As [`gemm`]; also if `c.cols()` is not whole panels or `b` lacks a row.
#[allow(clippy::too_many_arguments)]
pub fn gemm_in_place(
    kernels: &Kernels,
    blocking: &Blocking,
    a: &PackedA,
    rows: Range<usize>,
    b: &[f32],
    ldb: usize,
    c: &mut MatMut<'_>,
    epilogue: Option<&BlockEpilogue<'_>>,
) {
    let layout = BLayout::Rows { ld: ldb };
    gemm_with(kernels, blocking, a, rows, b, layout, c, epilogue);
}

/// Where B's values are.
#[derive(Clone, Copy, Debug)]
enum BLayout {
    /// Panels of `kdim` rows of `NR` ([`packed_b_len`]).
    Packed,
    /// Row `k` at `k·ld`, its columns in order: panels `NR` apart.
    Rows { ld: usize },
}

/// [`gemm`] and [`gemm_in_place`]: one blocked loop for both layouts of B.
#[allow(clippy::too_many_arguments)]
fn gemm_with(
    kernels: &Kernels,
    blocking: &Blocking,
    a: &PackedA,
    rows: Range<usize>,
    b: &[f32],
    layout: BLayout,
    c: &mut MatMut<'_>,
    epilogue: Option<&BlockEpilogue<'_>>,
) {
    let (mr, nr, kdim) = (kernels.mr, kernels.nr, a.kdim);
    assert_eq!(a.mr, mr, "A packed for MR {} used with MR {mr}", a.mr);
    assert!(rows.end <= a.rows, "rows {rows:?} of {}", a.rows);
    assert_eq!(c.rows(), rows.len(), "C has {} rows for {rows:?}", c.rows());
    let cols = c.cols();
    let panels = cols.div_ceil(nr);
    // Floats from a panel to the next, and from a `k` step to the next.
    let (panel_step, k_step) = match layout {
        BLayout::Packed => {
            assert!(b.len() >= packed_b_len(kdim, panels, nr), "B too short");
            (kdim * nr, nr)
        }
        BLayout::Rows { ld } => {
            assert!(
                cols.is_multiple_of(nr) && ld >= cols,
                "B in place: {cols} columns, not whole panels of {nr} in rows of {ld}"
            );
            assert!(
                kdim == 0 || cols == 0 || b.len() >= (kdim - 1) * ld + cols,
                "B in place: {} floats for {kdim} rows of {ld}",
                b.len()
            );
            (nr, ld)
        }
    };
    let in_place = matches!(layout, BLayout::Rows { .. });
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
    // A last panel of a few columns rides with the panel before it, in its pass over the
    // weights (`Kernels::gemm_extra`), instead of a pass of its own. Measured on ResNet50's
    // 7×7 stage (49 = 48 + 1 pixels; 2-core AVX-512 Xeon VM, `frame --profile`, 4–5
    // interleaved rounds, three runs): its 1×1 convs went from 0.70–0.75 to 0.62–0.67 ms
    // a frame at width 1, its 3×3 convs from 1.66–1.73 to 1.53–1.63, and the frame's layers
    // summed from 48.8–49.6 to 46.9–47.9 ms at width 1 and 27.7–28.5 to 27.4–27.7 at
    // width 2.
    let tail = cols % nr;
    let joined = !in_place && joins_tail(kernels, cols);
    let passes = if joined { panels - 1 } else { panels };
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
            // Rows `r` of the block (`r.start` on a panel of it) times column panels `jps`:
            // whole ones, or one panel (the last may be short or joined).
            let mut tile = |r: Range<usize>, jps: Range<usize>| {
                let (j0, ri) = (jps.start * nr, i0 + r.start);
                let two = joined && jps.end == passes;
                let w = if two {
                    nr + tail
                } else {
                    (jps.len() * nr).min(cols - j0)
                };
                let e = epilogue.filter(|_| last).map(|e| Epilogue {
                    bias: &e.bias[ri..i0 + r.end],
                    residual: e.residual.sub(ri, j0, r.len(), w),
                    act: e.act,
                });
                let ap = &apanels[r.start / mr * a_step..];
                let mut c = c.sub(ri, j0, r.len(), w);
                let (from, next) = (jps.start * panel_step + k0 * k_step, panel_step);
                if two {
                    let b = &b[from..(jps.start + 2) * kdim * nr];
                    kernels.gemm_extra(kcb, ap, a_step, b, next, &mut c, k0 > 0, e.as_ref());
                } else if jps.len() > 1 || in_place {
                    let b = &b[from..];
                    let acc = k0 > 0;
                    kernels.gemm_panels(kcb, ap, a_step, b, next, k_step, &mut c, acc, e.as_ref());
                } else {
                    let b = &b[from..jps.end * kdim * nr];
                    kernels.gemm(kcb, ap, a_step, b, &mut c, k0 > 0, e.as_ref());
                }
            };
            // B read in place keeps the column-panel order: a panel's rows lie a plane
            // apart, on as many pages, so each is read from memory once and then from L1
            // by every row panel (`conv/direct.rs`, `IN_PLACE_MAX_CHANNELS`).
            if kdim <= STORE_BOUND_K && cols >= STORE_BOUND_COLS && !in_place {
                // The whole panels of a row panel in one call (`Kernels::gemm_panels`),
                // then a short or joined last one.
                let whole = if joined { passes - 1 } else { cols / nr };
                for r0 in (0..h).step_by(mr) {
                    let r = r0..(r0 + mr).min(h);
                    if whole > 0 {
                        tile(r.clone(), 0..whole);
                    }
                    (whole..passes).for_each(|jp| tile(r.clone(), jp..jp + 1));
                }
            } else {
                for jp in 0..passes {
                    if in_place {
                        // In place, a `k` step is a row of B.
                        prefetch_rows(b, k_step, jp + B_AHEAD, nr, k0..k0 + kcb, cols);
                    }
                    tile(0..h, jp..jp + 1);
                }
            }
        }
        k0 += kcb;
    }
}

/// How many column panels ahead [`gemm_in_place`] prefetches B's rows.
const B_AHEAD: usize = 2;

/// Prefetches rows `ks` of column panel `panel` of a B read in place (row `k` at `k·ld`,
/// `nr` columns a panel) into L2, every cache line of them; nothing past the last of
/// `cols` columns. Issued before the tile of the panel [`B_AHEAD`] before it, outside the
/// micro-kernel, whose loop every GEMM shares ([`gemm_in_place`]'s docs).
fn prefetch_rows(b: &[f32], ld: usize, panel: usize, nr: usize, ks: Range<usize>, cols: usize) {
    const LINE: usize = 64;
    let j0 = panel * nr;
    if j0 >= cols {
        return;
    }
    let width = nr.min(cols - j0) * size_of::<f32>();
    for k in ks {
        let row = b.as_ptr().wrapping_add(k * ld + j0);
        // From the start of the row's first line.
        let lead = (row as usize % LINE) as isize;
        for offset in (-lead..width as isize).step_by(LINE) {
            prefetch_l2(row.wrapping_byte_offset(offset));
        }
    }
}

/// Whether [`gemm`] computes the last, short column panel of a block `cols` wide in one
/// pass with the panel before it (`Kernels::gemm_extra`). That kernel reads only the
/// short panel's first `cols mod NR` columns, so a pack may leave the rest unwritten.
pub(crate) fn joins_tail(kernels: &Kernels, cols: usize) -> bool {
    let (nr, tail) = (kernels.nr, cols % kernels.nr);
    tail > 0 && tail <= kernels.extra_cols() && cols > nr
}

/// Reductions up to this long are bound by their stores: a tile computes in a few
/// hundred cycles. There the block runs row panel by row panel, each weight micro-panel
/// staying in L1 while the column panels come from L2, so the output is written along
/// its rows: a few sequential streams, which the hardware prefetcher follows. Column panel
/// by column panel (the order for longer reductions, the column panel in L1) writes a
/// tile into each of the block's rows, each row in another output plane: too many streams
/// for the prefetcher, so every line's read-for-ownership missed in turn. An earlier cure,
/// prefetching the next tiles' output lines, is gone with it. Measured on a 2-core
/// AVX-512 Xeon VM:
/// - at 64: ResNet50's `64 → 256` 1×1 convs on 56×56 went from 133 to 175 GFLOP/s alone
///   (`cargo bench -p taopipe-nets -- report`), and from 0.75 to 0.60–0.64 ms in a frame
///   (`frame --net resnet50 --width 1 --profile`); VGG16's `conv1_1` (a reduction of 27)
///   from 2.43–2.59 to 1.74–2.00 ms in a frame;
/// - at 192 against 64 (ResNet50's stem, 147, and its `128 → 512` 1×1 convs join): four
///   `--profile` rounds each put the stem at 1.60 against 1.79 ms at width 1 and 0.82
///   against 0.89 at width 2, and the whole frame 1.8% faster at both widths. Alone, with
///   its output hot, the stem was level at width 1 and 6% slower at width 2: the order
///   pays where the output is cold, as in a frame.
pub(crate) const STORE_BOUND_K: usize = 192;

/// Blocks narrower than this many columns keep the column-panel order whatever their
/// reduction: their output rows are too short to make streams (STORE_BOUND_K's reason),
/// and each column panel then stays in L1 across every row panel. MobileNetV2's
/// expansions on 14×14 and 7×7 (`96 → 576`, `160 → 960`: blocks of 196 and 49 columns,
/// 576 and 960 rows) went from 0.31–0.33 to 0.25 ms and 0.23 to 0.17 ms each, its 1×1
/// convs 7.6 to 7.1–7.3 ms a frame and the frame 10.0–10.1 to 9.5–9.6 ms at width 1,
/// 5.6–7.4 to 5.0–6.8 at width 2 (three pairs); SqueezeNet, GoogLeNet and ResNet50 level
/// (two pairs, within ±3%). The blocks STORE_BOUND_K's measurements were taken on (ResNet50's
/// stem, 416–432 columns, its `128 → 512` convs, 384–400) are wider and keep the row
/// order. (`frame --net NET --width W --profile`, builds taking turns; 2-core AMD EPYC
/// Zen 3 VM, AVX2.) On the 16-core x86-64 Linux machine (AVX-512; `frame --net NET
/// --width W`, three rounds, builds taking turns) the frames of all four nets were level or
/// faster at widths 1 and 2 (MobileNetV2 8.5–8.7 → 8.3–8.4 ms at width 1, GoogLeNet
/// 27.8–28.1 → 27.3–27.6) and level at 16.
pub(crate) const STORE_BOUND_COLS: usize = 256;

#[cfg(test)]
mod test;
