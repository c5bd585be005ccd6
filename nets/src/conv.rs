//! 2-D convolution (cross-correlation, PyTorch's `Conv2d`): any kernel, stride and zero
//! padding, bias, optional fused ReLU; weights in OIHW order.
//!
//! # Algorithms
//! [`ConvAlgo::choose`] takes the first case that applies, in this order (candle's
//! `conv2d` style: the cheapest special case first):
//!
//! 1. [`ConvAlgo::Pointwise`] — 1×1, stride 1, no padding: the input is the GEMM's right
//!    operand (`C × HW`, row-major), no im2col. Each column tile's `C` rows are contiguous
//!    runs of the input and are copied into a contiguous tile first: measured faster than
//!    handing the `gemm` crate a row stride of `H·W` floats.
//! 2. [`ConvAlgo::Im2col`] — everything else: im2col of a column tile into scratch, then
//!    one GEMM per tile and chunk.
//!
//! A third algorithm stays reachable through [`Conv2d::with_algo`] for A/B benchmarks:
//! [`ConvAlgo::Shifted`] (stride 1 only) pads the input once and sums, over the `kh·kw`
//! kernel taps, GEMMs `W_tap[K×C] · shift(padded)` where a shift is an offset into the
//! padded buffer (the output is computed on the padded width and the `kw − 1` extra columns
//! per row are dropped): no im2col, but `kh·kw` GEMMs with `k = C` each. Measured on the
//! VGG16/ResNet50 3×3 layers it lost to im2col on most layers (by ~10%, and by 2.5× on
//! VGG's first layer, `C = 3`), so it is not chosen.
//!
//! # Chunks
//! Chunks are groups of output channels (contiguous in CHW): `ceil(K / 32)` channels per
//! chunk, at least 4, rounded up to a multiple of 4, so at most 32 chunks. The measured
//! reason (README, "Kernels"): the `gemm` crate keeps ≈100 GFLOP/s down to 4 output rows
//! when its right operand is an L2-resident tile, and falls to ≈60 at 2 rows. Every GEMM
//! works on a column tile of ≈512 KiB of right operand, whose size depends on the layer
//! shape only. A rank computing several chunks prepares each tile (im2col, copy) once for
//! all of them; each chunk's GEMM calls are the same whatever the run.

use std::ops::Range;

use crate::error::KernelError;
use crate::gemm::{GemmImpl, MatMut, MatRef, sgemm};
use crate::kernel::{ChunkPlan, Kernel, Scratch, check_io};
use crate::tensor::Shape;

/// Floats of right-hand GEMM operand per column tile: 512 KiB, a quarter of this machine's
/// 2 MiB L2. Measured on the VGG16/ResNet50 layers with 128, 256 and 512 KiB: 512 KiB was
/// best or within noise for im2col (README, "Kernels").
const TILE_FLOATS: usize = 128 * 1024;

/// Fewest output channels in a chunk (and the multiple chunks are rounded to).
const MIN_CHANNELS_PER_CHUNK: usize = 4;

/// Hyperparameters of a convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Conv2dParams {
    /// Input channels `C`.
    pub in_channels: usize,
    /// Output channels `K`.
    pub out_channels: usize,
    /// Kernel `(kh, kw)`.
    pub kernel: (usize, usize),
    /// Stride `(sy, sx)`.
    pub stride: (usize, usize),
    /// Zero padding `(py, px)`, on both sides of each axis.
    pub padding: (usize, usize),
    /// Apply ReLU to the output (fused).
    pub relu: bool,
}

impl Conv2dParams {
    /// A square `k×k` conv, the same stride and padding on both axes, ReLU off.
    pub const fn new(
        in_channels: usize,
        out_channels: usize,
        k: usize,
        stride: usize,
        padding: usize,
    ) -> Self {
        Conv2dParams {
            in_channels,
            out_channels,
            kernel: (k, k),
            stride: (stride, stride),
            padding: (padding, padding),
            relu: false,
        }
    }

    /// The same with fused ReLU on or off.
    pub const fn with_relu(mut self, relu: bool) -> Self {
        self.relu = relu;
        self
    }

    /// Output shape for `input`: `(H + 2p − kh) / s + 1` (floor), likewise for W.
    ///
    /// # Errors
    /// Zero sizes, a channel mismatch, or a kernel larger than the padded input.
    ///
    /// ```
    /// use taopipe_nets::{Conv2dParams, Shape};
    /// let stem = Conv2dParams::new(3, 64, 7, 2, 3);
    /// assert_eq!(stem.out_shape(Shape::new(3, 224, 224))?, Shape::new(64, 112, 112));
    /// # Ok::<(), taopipe_nets::KernelError>(())
    /// ```
    pub fn out_shape(&self, input: Shape) -> Result<Shape, KernelError> {
        let geo = |reason: String| KernelError::Geometry {
            layer: "conv",
            input,
            reason,
        };
        let (kh, kw) = self.kernel;
        let ((sy, sx), (py, px)) = (self.stride, self.padding);
        if kh == 0
            || kw == 0
            || sy == 0
            || sx == 0
            || self.out_channels == 0
            || self.in_channels == 0
        {
            return Err(geo(format!("zero size in {self:?}")));
        }
        if input.c != self.in_channels {
            return Err(KernelError::Channels {
                layer: "conv",
                input,
                expected: self.in_channels,
                got: input.c,
            });
        }
        let (hp, wp) = (input.h + 2 * py, input.w + 2 * px);
        if hp < kh || wp < kw {
            return Err(geo(format!(
                "kernel {kh}×{kw} larger than padded input {hp}×{wp}"
            )));
        }
        Ok(Shape::new(
            self.out_channels,
            (hp - kh) / sy + 1,
            (wp - kw) / sx + 1,
        ))
    }

    /// Weight elements, `K·C·kh·kw`.
    pub const fn weight_len(&self) -> usize {
        self.out_channels * self.in_channels * self.kernel.0 * self.kernel.1
    }
}

/// How a [`Conv2d`] computes; see the module doc for the order [`ConvAlgo::choose`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvAlgo {
    /// 1×1, stride 1, no padding: plain GEMM on the input.
    Pointwise,
    /// Stride 1: one GEMM per kernel tap on shifted views of the padded input (A/B only:
    /// [`ConvAlgo::choose`] never picks it).
    Shifted,
    /// Any conv: im2col per column tile, then GEMM.
    Im2col,
}

impl ConvAlgo {
    /// Every algorithm.
    pub const ALL: [ConvAlgo; 3] = [ConvAlgo::Pointwise, ConvAlgo::Shifted, ConvAlgo::Im2col];

    /// The first special case that applies to `p` (module doc): pointwise, then im2col.
    pub fn choose(p: &Conv2dParams) -> ConvAlgo {
        if ConvAlgo::Pointwise.applies(p) {
            ConvAlgo::Pointwise
        } else {
            ConvAlgo::Im2col
        }
    }

    /// Whether the algorithm can run `p`.
    pub fn applies(self, p: &Conv2dParams) -> bool {
        match self {
            ConvAlgo::Pointwise => p.kernel == (1, 1) && p.stride == (1, 1) && p.padding == (0, 0),
            ConvAlgo::Shifted => p.stride == (1, 1),
            ConvAlgo::Im2col => true,
        }
    }

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            ConvAlgo::Pointwise => "pointwise",
            ConvAlgo::Shifted => "shifted",
            ConvAlgo::Im2col => "im2col",
        }
    }
}

/// A convolution layer bound to its input shape.
#[derive(Clone, Debug)]
pub struct Conv2d {
    params: Conv2dParams,
    in_shape: Shape,
    out_shape: Shape,
    /// OIHW.
    weights: Vec<f32>,
    bias: Vec<f32>,
    algo: ConvAlgo,
    gemm: GemmImpl,
    chunks: ChunkPlan,
    /// For [`ConvAlgo::Shifted`]: the weights as `[kh·kw][K][C]`.
    tap_weights: Vec<f32>,
}

impl Conv2d {
    /// A conv with `weights` in OIHW order and an optional bias (zeros when `None`), using
    /// [`ConvAlgo::choose`] and the default GEMM.
    ///
    /// # Errors
    /// As [`Conv2dParams::out_shape`], or weights/bias of the wrong length.
    ///
    /// ```
    /// use taopipe_nets::{Conv2d, Conv2dParams, Kernel, Scratch, Shape};
    /// // A 1×1 conv that sums two channels.
    /// let conv = Conv2d::new(Conv2dParams::new(2, 1, 1, 1, 0), Shape::new(2, 1, 2), vec![1.0, 1.0], None)?;
    /// let y = conv.forward(&[&[1.0, 2.0, 10.0, 20.0]], &mut Scratch::new());
    /// assert_eq!(y, vec![11.0, 22.0]);
    /// # Ok::<(), taopipe_nets::KernelError>(())
    /// ```
    pub fn new(
        params: Conv2dParams,
        in_shape: Shape,
        weights: Vec<f32>,
        bias: Option<Vec<f32>>,
    ) -> Result<Conv2d, KernelError> {
        let out_shape = params.out_shape(in_shape)?;
        if weights.len() != params.weight_len() {
            return Err(KernelError::BufferLen {
                what: "conv weights",
                expected: params.weight_len(),
                got: weights.len(),
            });
        }
        let bias = bias.unwrap_or_else(|| vec![0.0; params.out_channels]);
        if bias.len() != params.out_channels {
            return Err(KernelError::BufferLen {
                what: "conv bias",
                expected: params.out_channels,
                got: bias.len(),
            });
        }
        let chunks = ChunkPlan::new(
            params.out_channels,
            out_shape.plane(),
            MIN_CHANNELS_PER_CHUNK,
            MIN_CHANNELS_PER_CHUNK,
        );
        let mut conv = Conv2d {
            params,
            in_shape,
            out_shape,
            weights,
            bias,
            algo: ConvAlgo::Im2col,
            gemm: GemmImpl::default(),
            chunks,
            tap_weights: Vec::new(),
        };
        conv.set_algo(ConvAlgo::choose(&params));
        Ok(conv)
    }

    /// Forces an algorithm (A/B benchmarks, tests).
    ///
    /// # Errors
    /// [`KernelError::Algorithm`] when it does not apply to this layer.
    pub fn with_algo(mut self, algo: ConvAlgo) -> Result<Conv2d, KernelError> {
        if !algo.applies(&self.params) {
            return Err(KernelError::Algorithm {
                layer: "conv",
                algo: algo.name(),
                reason: match algo {
                    ConvAlgo::Pointwise => "needs a 1×1 kernel, stride 1, no padding",
                    _ => "needs stride 1",
                },
            });
        }
        self.set_algo(algo);
        Ok(self)
    }

    /// Uses another GEMM implementation.
    pub fn with_gemm(mut self, gemm: GemmImpl) -> Conv2d {
        self.gemm = gemm;
        self
    }

    fn set_algo(&mut self, algo: ConvAlgo) {
        self.algo = algo;
        self.tap_weights = if algo == ConvAlgo::Shifted {
            let p = &self.params;
            let (kh, kw) = p.kernel;
            let (k_out, c_in) = (p.out_channels, p.in_channels);
            let mut t = vec![0.0; self.weights.len()];
            for k in 0..k_out {
                for c in 0..c_in {
                    for tap in 0..kh * kw {
                        t[(tap * k_out + k) * c_in + c] =
                            self.weights[(k * c_in + c) * kh * kw + tap];
                    }
                }
            }
            t
        } else {
            Vec::new()
        };
    }

    /// The hyperparameters.
    pub fn params(&self) -> &Conv2dParams {
        &self.params
    }

    /// The algorithm in use.
    pub fn algo(&self) -> ConvAlgo {
        self.algo
    }

    /// The GEMM in use.
    pub fn gemm(&self) -> GemmImpl {
        self.gemm
    }

    /// Weights, OIHW.
    pub fn weights(&self) -> &[f32] {
        &self.weights
    }

    /// Bias, one per output channel.
    pub fn bias(&self) -> &[f32] {
        &self.bias
    }

    /// Output channels of each chunk.
    pub fn chunk_channels(&self, chunk: usize) -> Range<usize> {
        self.chunks.channels_of(chunk)
    }

    /// Adds the bias and applies ReLU to rows `channels` (relative row 0 = `channels.start`)
    /// of `out` (row stride `ld`), columns `cols`.
    fn epilogue(&self, out: &mut [f32], ld: usize, channels: Range<usize>, cols: Range<usize>) {
        for (row, k) in channels.enumerate() {
            let b = self.bias[k];
            let seg = &mut out[row * ld + cols.start..row * ld + cols.end];
            if self.params.relu {
                seg.iter_mut().for_each(|v| *v = (*v + b).max(0.0));
            } else {
                seg.iter_mut().for_each(|v| *v += b);
            }
        }
    }

    /// Column tiles of `total` columns for a right operand of `rows` rows.
    fn col_tile(rows: usize, total: usize) -> usize {
        let t = (TILE_FLOATS / rows.max(1)).max(16);
        let t = if t > 16 { t / 16 * 16 } else { t };
        t.min(total).max(1)
    }

    fn run_pointwise(
        &self,
        input: &[f32],
        chunks: Range<usize>,
        out: &mut [f32],
        scratch: &mut Scratch,
    ) {
        let c_in = self.params.in_channels;
        let hw = self.out_shape.plane();
        let tile = Conv2d::col_tile(c_in, hw);
        let packed = scratch.take(c_in * tile);
        let base = self.chunks.range(chunks.start).start;
        for j0 in (0..hw).step_by(tile) {
            let n = tile.min(hw - j0);
            // The tile's rows are contiguous runs of the input: a plain copy makes the GEMM
            // operand contiguous (measured faster than a row stride of H·W floats).
            for c in 0..c_in {
                packed[c * tile..c * tile + n]
                    .copy_from_slice(&input[c * hw + j0..c * hw + j0 + n]);
            }
            for chunk in chunks.clone() {
                let ch = self.chunks.channels_of(chunk);
                let o = self.chunks.range(chunk).start - base;
                sgemm(
                    self.gemm,
                    ch.len(),
                    n,
                    c_in,
                    MatRef {
                        data: &self.weights[ch.start * c_in..],
                        ld: c_in,
                    },
                    MatRef {
                        data: packed,
                        ld: tile,
                    },
                    MatMut {
                        data: &mut out[o + j0..],
                        ld: hw,
                    },
                    false,
                );
                self.epilogue(&mut out[o..], hw, ch, j0..j0 + n);
            }
        }
    }

    fn run_im2col(
        &self,
        input: &[f32],
        chunks: Range<usize>,
        out: &mut [f32],
        scratch: &mut Scratch,
    ) {
        let p = &self.params;
        let rows = p.in_channels * p.kernel.0 * p.kernel.1;
        let ohw = self.out_shape.plane();
        let tile = Conv2d::col_tile(rows, ohw);
        let col = scratch.take(rows * tile);
        let base = self.chunks.range(chunks.start).start;
        for j0 in (0..ohw).step_by(tile) {
            let n = tile.min(ohw - j0);
            self.im2col(input, j0..j0 + n, col, tile);
            for chunk in chunks.clone() {
                let ch = self.chunks.channels_of(chunk);
                let o = self.chunks.range(chunk).start - base;
                sgemm(
                    self.gemm,
                    ch.len(),
                    n,
                    rows,
                    MatRef {
                        data: &self.weights[ch.start * rows..],
                        ld: rows,
                    },
                    MatRef {
                        data: col,
                        ld: tile,
                    },
                    MatMut {
                        data: &mut out[o + j0..],
                        ld: ohw,
                    },
                    false,
                );
                self.epilogue(&mut out[o..], ohw, ch, j0..j0 + n);
            }
        }
    }

    /// Fills `col` (rows `(c, ky, kx)`, row stride `ld`) with the input values that output
    /// positions `cols` (flat `oy·OW + ox`) see; zeros for padding.
    fn im2col(&self, input: &[f32], cols: Range<usize>, col: &mut [f32], ld: usize) {
        let p = &self.params;
        let (kh, kw) = p.kernel;
        let ((sy, s), (py, pad)) = (p.stride, p.padding);
        let (h, w) = (self.in_shape.h, self.in_shape.w);
        let ow = self.out_shape.w;
        for c in 0..p.in_channels {
            let plane = &input[c * h * w..(c + 1) * h * w];
            for ky in 0..kh {
                for kx in 0..kw {
                    let r = (c * kh + ky) * kw + kx;
                    let dst = &mut col[r * ld..r * ld + cols.len()];
                    // Valid ox: 0 <= ox*s + kx - pad < w.
                    let x_lo = pad.saturating_sub(kx).div_ceil(s);
                    let x_hi = (w + pad).saturating_sub(kx).div_ceil(s).min(ow).max(x_lo);
                    let mut j = cols.start;
                    while j < cols.end {
                        let (oy, ox0) = (j / ow, j % ow);
                        let ox1 = ow.min(ox0 + cols.end - j);
                        let seg = &mut dst[j - cols.start..j - cols.start + (ox1 - ox0)];
                        let iy = (oy * sy + ky).checked_sub(py).filter(|&iy| iy < h);
                        match iy {
                            None => seg.fill(0.0),
                            Some(iy) => {
                                let row = &plane[iy * w..(iy + 1) * w];
                                let (a, b) = (x_lo.clamp(ox0, ox1), x_hi.clamp(ox0, ox1));
                                seg[..a - ox0].fill(0.0);
                                seg[b - ox0..].fill(0.0);
                                let mid = &mut seg[a - ox0..b - ox0];
                                // A segment may lie wholly in the right padding (a tile
                                // that starts in a row's last columns): nothing to copy,
                                // and its first input column may lie past the row.
                                if mid.is_empty() {
                                } else if s == 1 {
                                    let ix0 = a + kx - pad;
                                    mid.copy_from_slice(&row[ix0..ix0 + mid.len()]);
                                } else {
                                    for (d, ox) in mid.iter_mut().zip(a..b) {
                                        *d = row[ox * s + kx - pad];
                                    }
                                }
                            }
                        }
                        j += ox1 - ox0;
                    }
                }
            }
        }
    }

    fn run_shifted(
        &self,
        input: &[f32],
        chunks: Range<usize>,
        out: &mut [f32],
        scratch: &mut Scratch,
    ) {
        let p = &self.params;
        let (kh, kw) = p.kernel;
        let (c_in, k_out, (py, px)) = (p.in_channels, p.out_channels, p.padding);
        let (h, w) = (self.in_shape.h, self.in_shape.w);
        let (hp, wp) = (h + 2 * py, w + 2 * px);
        let (oh, ow) = (self.out_shape.h, self.out_shape.w);
        let ohw = oh * ow;
        // Output rows per tile, so that a tile's right operand is about TILE_FLOATS.
        let tile_rows = (TILE_FLOATS / (c_in * wp)).clamp(1, oh);
        let tile = tile_rows * wp;
        let padded_len = c_in * hp * wp + kw - 1;
        let acc_len = self.chunks.per * tile;
        let (padded, acc) = scratch.take(padded_len + acc_len).split_at_mut(padded_len);
        padded.fill(0.0);
        for c in 0..c_in {
            for y in 0..h {
                let dst = (c * hp + y + py) * wp + px;
                padded[dst..dst + w].copy_from_slice(&input[(c * h + y) * w..(c * h + y + 1) * w]);
            }
        }
        let base = self.chunks.range(chunks.start).start;
        for y0 in (0..oh).step_by(tile_rows) {
            let rows = tile_rows.min(oh - y0);
            let n = rows * wp;
            for chunk in chunks.clone() {
                let ch = self.chunks.channels_of(chunk);
                for tap in 0..kh * kw {
                    let (ky, kx) = (tap / kw, tap % kw);
                    let a0 = (tap * k_out + ch.start) * c_in;
                    sgemm(
                        self.gemm,
                        ch.len(),
                        n,
                        c_in,
                        MatRef {
                            data: &self.tap_weights[a0..],
                            ld: c_in,
                        },
                        MatRef {
                            data: &padded[(y0 + ky) * wp + kx..],
                            ld: hp * wp,
                        },
                        MatMut {
                            data: acc,
                            ld: tile,
                        },
                        tap > 0,
                    );
                }
                let o = self.chunks.range(chunk).start - base;
                for (row, k) in ch.clone().enumerate() {
                    let b = self.bias[k];
                    for y in 0..rows {
                        let src = &acc[row * tile + y * wp..row * tile + y * wp + ow];
                        let d0 = o + row * ohw + (y0 + y) * ow;
                        let dst = &mut out[d0..d0 + ow];
                        if p.relu {
                            dst.iter_mut()
                                .zip(src)
                                .for_each(|(d, &s)| *d = (s + b).max(0.0));
                        } else {
                            dst.iter_mut().zip(src).for_each(|(d, &s)| *d = s + b);
                        }
                    }
                }
            }
        }
    }
}

impl Kernel for Conv2d {
    fn kind(&self) -> &'static str {
        "conv"
    }

    fn in_shape(&self) -> Shape {
        self.in_shape
    }

    fn out_shape(&self) -> Shape {
        self.out_shape
    }

    fn flops(&self) -> u64 {
        2 * (self.params.weight_len() * self.out_shape.plane()) as u64
    }

    fn plan(&self) -> &ChunkPlan {
        &self.chunks
    }

    fn compute_chunk(
        &self,
        inputs: &[&[f32]],
        chunk: usize,
        out: &mut [f32],
        scratch: &mut Scratch,
    ) {
        self.compute_chunks(inputs, chunk..chunk + 1, out, scratch);
    }

    fn compute_chunks(
        &self,
        inputs: &[&[f32]],
        chunks: Range<usize>,
        out: &mut [f32],
        scratch: &mut Scratch,
    ) {
        let want = self.output_range(chunks.clone()).len();
        check_io("conv", inputs, 1, self.in_shape.len(), out.len(), want);
        if chunks.is_empty() {
            return;
        }
        match self.algo {
            ConvAlgo::Pointwise => self.run_pointwise(inputs[0], chunks, out, scratch),
            ConvAlgo::Shifted => self.run_shifted(inputs[0], chunks, out, scratch),
            ConvAlgo::Im2col => self.run_im2col(inputs[0], chunks, out, scratch),
        }
    }
}

#[cfg(test)]
mod test;
