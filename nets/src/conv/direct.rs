//! The direct path: im2col straight into the micro-kernel's column panels, then the
//! blocked GEMM with the weights packed at build.
//!
//! A column block is a run of consecutive output pixels (flat `oy·OW + ox`): whole panels
//! of `NR` (the last may be short), as many as fit the cache budget, shared out evenly
//! between the blocks (`block_count` in the parent module). Packing it writes, for each
//! panel of `NR` pixels, the `C·kh·kw` rows of the im2col matrix restricted to those pixels: row `(c, ky, kx)`
//! holds `x[c, oy·sy + ky − py, ox·sx + kx − px]`, zero in the padding and past the last
//! pixel. A 1×1 stride-1 unpadded conv ("pointwise") packs plain copies of input rows.

use std::ops::Range;

use super::{Conv2dParams, Engine};
use crate::cache::Blocking;
use crate::gemm::{BlockEpilogue, PackedA, gemm, packed_b_len};
use crate::simd::{Kernels, MatMut, copy_runs, zero_runs};
use crate::tensor::Shape;
use taopipe_runtime::{Rect, split_range};

/// Weights packed for the GEMM, and the geometry the packing needs.
#[derive(Clone, Debug)]
pub(super) struct Direct {
    p: Conv2dParams,
    input: Shape,
    output: Shape,
    kdim: usize,
    nr: usize,
    /// Column blocks ([`super::block_count`]).
    blocks: usize,
    weights: PackedA,
}

/// A run of consecutive pixels of one output row, inside a panel.
#[derive(Clone, Copy)]
struct Segment {
    /// Column of the panel where it starts.
    at: usize,
    oy: usize,
    ox: usize,
    len: usize,
}

/// The segments of a panel's `width` pixels from `(oy, ox)` on, in order.
#[derive(Clone)]
struct Segments {
    at: usize,
    width: usize,
    oy: usize,
    ox: usize,
    ow: usize,
}

impl Iterator for Segments {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        if self.at >= self.width {
            return None;
        }
        let len = (self.ow - self.ox).min(self.width - self.at);
        let s = Segment {
            at: self.at,
            oy: self.oy,
            ox: self.ox,
            len,
        };
        self.at += len;
        self.oy += 1;
        self.ox = 0;
        Some(s)
    }
}

impl Direct {
    /// Packs `weights` (OIHW) for `kernels`.
    pub(super) fn new(
        p: Conv2dParams,
        input: Shape,
        output: Shape,
        weights: &[f32],
        kernels: &Kernels,
        blocking: &Blocking,
    ) -> Direct {
        let kdim = p.in_channels * p.kernel.0 * p.kernel.1;
        // Whole blocks in L2 where the weights are the smaller operand (`cache.rs`). In the
        // report (`cargo bench -p taopipe-nets -- report`, two runs each, AVX-512 Xeon VM)
        // ResNet50's 56×56 → 28×28 stride-2 3×3 conv went from 178 to 273 GFLOP/s at
        // width 2 and the 28×28 `512 → 128` 1×1 from 216 to 288; capping every layer
        // also slowed the deep 7×7 and 14×14 ones (VGG16's conv5 at width 2: 260 → 237),
        // whose weights are the larger operand.
        let columns = if p.out_channels < output.plane() {
            blocking.whole_columns(kdim, kernels.nr)
        } else {
            blocking.columns(kdim, kernels.nr)
        };
        let most = columns / kernels.nr;
        Direct {
            p,
            input,
            output,
            kdim,
            nr: kernels.nr,
            blocks: super::block_count(output.plane().div_ceil(kernels.nr), most, 1),
            weights: PackedA::from_rows(kernels.mr, blocking.kc, p.out_channels, kdim, weights),
        }
    }

    fn is_pointwise(&self) -> bool {
        self.p.kernel == (1, 1) && self.p.stride == (1, 1) && self.p.padding == (0, 0)
    }

    /// Packs the pixels `cols` (starting on a panel) into `out`.
    fn pack_columns(&self, x: &[f32], cols: Range<usize>, out: &mut [f32]) {
        let (nr, kdim) = (self.nr, self.kdim);
        let (h, w) = (self.input.h, self.input.w);
        let plane = h * w;
        for (pi, j0) in cols.clone().step_by(nr).enumerate() {
            let panel = &mut out[pi * kdim * nr..(pi + 1) * kdim * nr];
            let width = nr.min(cols.end - j0);
            if self.is_pointwise() {
                let channels = self.p.in_channels;
                copy_runs(panel, nr, &x[j0..], plane, channels, width, 1);
                zero_runs(&mut panel[width..], nr, channels, nr - width);
                continue;
            }
            let segments = Segments {
                at: 0,
                width,
                oy: j0 / self.output.w,
                ox: j0 % self.output.w,
                ow: self.output.w,
            };
            let (kh, kw) = self.p.kernel;
            let ((sy, sx), (py, px)) = (self.p.stride, self.p.padding);
            let taps = kh * kw;
            let channels = self.p.in_channels;
            if width < nr {
                for row in panel.chunks_exact_mut(nr) {
                    row[width..].fill(0.0);
                }
            }
            // Each (tap, segment) fixes the input row and columns for every channel: work
            // them out once, then run down the channels (rows `c·taps + tap`).
            for ky in 0..kh {
                for kx in 0..kw {
                    let tap = ky * kw + kx;
                    for s in segments.clone() {
                        let iy = (s.oy * sy + ky).wrapping_sub(py);
                        // Row `c·taps + tap` for every channel `c`, from column `s.at`.
                        let dst = &mut panel[tap * nr + s.at..];
                        let step = taps * nr;
                        if iy >= h {
                            zero_runs(dst, step, channels, s.len);
                            continue;
                        }
                        // Pixels whose input column `ox·sx + kx − px` lies in 0..w.
                        let (lo, hi) = if sx == 1 {
                            (px.saturating_sub(kx), (w + px).saturating_sub(kx))
                        } else {
                            (
                                px.saturating_sub(kx).div_ceil(sx),
                                (w + px).saturating_sub(kx).div_ceil(sx),
                            )
                        };
                        let lo = lo.clamp(s.ox, s.ox + s.len);
                        let hi = hi.clamp(lo, s.ox + s.len);
                        let (zlo, mid) = (lo - s.ox, hi - lo);
                        zero_runs(dst, step, channels, zlo);
                        zero_runs(&mut dst[zlo + mid..], step, channels, s.len - zlo - mid);
                        if mid > 0 {
                            let first = iy * w + lo * sx + kx - px;
                            copy_runs(&mut dst[zlo..], step, &x[first..], plane, channels, mid, sx);
                        }
                    }
                }
            }
        }
    }
}

impl Engine for Direct {
    fn blocks(&self) -> usize {
        self.blocks
    }

    fn block_pixels(&self, block: usize) -> Range<usize> {
        let plane = self.output.plane();
        let panels = split_range(plane.div_ceil(self.nr), block, self.blocks);
        panels.start * self.nr..(panels.end * self.nr).min(plane)
    }

    fn packed_len(&self) -> usize {
        let panels = self.output.plane().div_ceil(self.nr).div_ceil(self.blocks);
        packed_b_len(self.kdim, panels, self.nr)
    }

    fn work_len(&self, _channels: usize) -> usize {
        0
    }

    fn pack_units(&self, block: usize) -> usize {
        self.block_pixels(block).len().div_ceil(self.nr)
    }

    fn pack_rect(&self, _block: usize, units: Range<usize>) -> Rect {
        let panel = self.kdim * self.nr;
        Rect::row(units.start * panel, units.len() * panel)
    }

    fn pack_part(
        &self,
        _: &Kernels,
        x: &[f32],
        block: usize,
        units: Range<usize>,
        out: &mut MatMut<'_>,
        _: &mut [f32],
    ) {
        let pixels = self.block_pixels(block);
        let first = pixels.start + units.start * self.nr;
        let cols = first..(pixels.start + units.end * self.nr).min(pixels.end);
        self.pack_columns(x, cols, out.row_mut(0));
    }

    fn compute(
        &self,
        kernels: &Kernels,
        blocking: &Blocking,
        packed: &[f32],
        _block: usize,
        channels: Range<usize>,
        out: &mut MatMut<'_>,
        epilogue: &BlockEpilogue<'_>,
        _work: &mut [f32],
    ) {
        gemm(
            kernels,
            blocking,
            &self.weights,
            channels,
            packed,
            out,
            Some(epilogue),
        );
    }

    fn packed_weights(&self) -> usize {
        self.weights.len()
    }
}
