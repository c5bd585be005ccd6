//! The channel-lanes path: a direct convolution with the output channels in the vector
//! lanes, reading the input in place from a zero-padded copy, without im2col.
//!
//! ONNX Runtime's NCHWc kernels turn the GEMM around this way. A tile holds
//! [`Kernels::lanes_oc`] output channels (two vectors) by a few consecutive output pixels
//! (AVX2: 16 × 6). For each reduction step `(c, ky, kx)` it loads the two weight vectors
//! and broadcasts each pixel's input value `x[c, oy·sy + ky, ox·sx + kx]` (padded
//! coordinates) straight from the copy: the per-pixel offsets are fixed, so no column
//! matrix is ever written. The tile's outputs then leave transposed, a row of pixels per
//! channel, with the epilogue (bias, residual, activation) in [`crate::Epilogue`]'s
//! order.
//!
//! # Blocks
//! A block is a run of whole output rows whose padded input rows, all channels, fit the
//! cache budget ([`Blocking::column_bytes`]); packing a block copies those rows with their
//! zero borders, one unit per input channel. Every output element is one FMA chain over
//! the steps in order, whatever the block, the pixels of its tile or the channels computed
//! with it: results are bit-identical for every width and cut.
//!
//! # When it runs
//! [`ConvAlgo::choose`](super::ConvAlgo::choose) takes it on the AVX2 and AVX-512 paths
//! ([`chosen_on`]), where Winograd does not run ([`super::winograd::pays_off_beside_lanes`],
//! [`super::winograd::pays_off_avx512`]) and
//! [`pays_off`] says so. Against the direct
//! path (im2col and the GEMM) on a 2-core AMD EPYC Zen 3 VM (AVX2, best of many runs of
//! one layer alone, a scratch benchmark with ReLU): SqueezeNet's `16 → 64` 3×3 on 55×55
//! 0.603 ms (92.5 GFLOP/s) against 0.711 (78.4) and Winograd's 0.695; its `32 → 128` on
//! 27×27 0.565 against 0.660 and Winograd's 0.633; `48 → 192` and `64 → 256` on 13×13
//! 0.297 and 0.524 against 0.321 and 0.556; GoogLeNet's `16 → 32` on 28×28 0.079 against
//! 0.109, `24 → 64` on 14×14 0.058 against 0.077, `96 → 208` on 14×14 0.718 against
//! 0.828. Winograd still wins from 48 input channels on planes it tiles (`48 → 192` on
//! 27×27: 0.97 against 1.25 ms), and, with its vector transforms, from 32 on 27×27 and on
//! SqueezeNet's 13×13 planes (figures at [`super::winograd::MIN_IN_CHANNELS`] and
//! [`super::winograd::SMALL_PLANE_F4_CHANNELS`]).
//!
//! [`pays_off`] comes from the layers of frames (`frame --net NET --width 1 --profile`,
//! this path against the direct one, same VM): it lost where a tile has few steps at
//! stride 1 (VGG16's `conv1_1`, 27 steps: 3.71–3.79 ms against 2.81–2.88, and 4.54–4.75
//! against 3.61–3.95 with the vector store) but won on the 27-step stride-2 stems, where
//! im2col gathers every other column (with the vector store: MobileNetV2's 0.43–0.47
//! against 0.48–0.52, MobileNet V1's 0.42–0.46 against 0.46, SqueezeNet's 0.73–0.76
//! against 0.75–0.81; Tiny YOLOv2's stride-1 `3 → 16` on 416×416 also ran faster, 3.55
//! and 3.88 against 4.54 and 5.34, in a noisy minute, and is left to im2col by the rule);
//! it lost on 1×1 stride-2 convs (ResNet50's downsamples: 3.33,
//! 3.06 and 4.19 against 2.35, 2.50 and 2.61; their padded copy holds the skipped rows
//! and columns too, so it is cut into many blocks that each read all the weights) and
//! where the weights are large (ResNet50's `layer4.0.conv2`, 9.4 MB: 3.90 against 2.95;
//! GoogLeNet's `inception5b` `192 → 384` 3×3 on 7×7, 2.7 MB: 0.88 against 0.79; level on
//! `layer3.0.conv2`, 2.4 MB). It won on the stems (ResNet50's 7×7 2.85 against 3.43,
//! GoogLeNet's 2.91 against 3.26, AlexNet's 11×11 1.58 against 2.07) and on ResNet50's
//! `layer2.0.conv2` (`128 → 128` 3×3 stride 2, 590 KB of weights: 2.66 against 3.01).
//!
//! [`Kernels::lanes_oc`]: crate::simd::Kernels::lanes_oc

use std::ops::Range;

use super::direct::WIDE_BLOCKS;
use super::{Conv2dParams, Engine};
use crate::cache::Blocking;
use crate::gemm::BlockEpilogue;
use crate::simd::{Isa, Kernels, MatMut};
use crate::tensor::Shape;
use taopipe_runtime::{Rect, split_range};

/// Whether [`ConvAlgo::choose`](super::ConvAlgo::choose) takes this path on `isa` at all
/// (a decision, from measurements): on AVX2 (module docs) and AVX-512.
///
/// AVX-512 lost until its tile's transposed store stopped calling `array::map` out of line
/// (`simd/x86.rs`, `load_t_avx512`: 10% of the layer in `perf`): SqueezeNet's `16 → 64`
/// 3×3 on 55×55 alone (a scratch `Conv2d::compute_chunks` benchmark, best of runs) went
/// from 0.294 to 0.237 ms, 86% of the FMA peak, against 0.310 on the direct path, on a
/// 2-core AMD EPYC Zen 5 VM. There, in frames (`frame --net NET --width 1 --profile
/// --conv auto|direct|lanes|winograd`), it beat both the direct path and Winograd on all
/// of SqueezeNet's 3×3 expands (`32 → 128` on 27×27 0.23 ms against 0.25 and 0.28, `64
/// → 256` on 13×13 0.21 against 0.24 and 0.30) and on ResNet50's `layer2.0.conv2` (1.01
/// against 1.18), with Winograd beside it by [`super::winograd::pays_off_avx512`]:
/// SqueezeNet took 3.39–3.43 ms a frame against 3.70–3.74, the other zoo nets level
/// (three rounds each, builds taking turns). Before the fix, on the Xeon machines, it lost
/// in frames: SqueezeNet 9.2–9.5 ms against 8.2 on the 16-core one, 7.9–8.0 against
/// 6.3–6.5 on a 2-core VM. NEON is not measured (no aarch64 machine here): it keeps the
/// rule from before this path. `--conv lanes` (`BuildOptions::conv`) runs it on any path.
pub fn chosen_on(isa: Isa) -> bool {
    isa == Isa::Avx2 || isa == Isa::Avx512
}

/// Fewest output rows per block where the direct path's [`WIDE_BLOCKS`] applies here too
/// (a decision, from measurements): a plane of at least `WIDE_BLOCKS` times as many rows
/// is cut into at least `WIDE_BLOCKS` blocks, one per rank of a 16-wide gang, which then
/// runs it private. The stems (112 or 111 output rows) fitted two blocks in the cache
/// budget, four items with their two weight panels: ResNet50's 7×7 stem ran 1.9× faster at
/// width 16 than at width 1 (2.30 → 1.21 ms, `frame --net resnet50 --width 1|16
/// --profile`, 16-core x86-64 Linux machine); cut into 16 blocks, 0.33 ms at width 16.
/// Whole frames on that machine (`frame --net NET --width W --frames 60`, three rounds,
/// builds taking turns), at width 16: ResNet50 14.6–16.4 → 13.2–15.1 ms, GoogLeNet
/// 9.8–10.1 → 8.2–9.0, SqueezeNet 3.8–4.0 → 3.3–3.7, MobileNetV2 4.6–5.1 → 4.1–4.5,
/// MobileNet V1 3.5–3.9 → 3.2–3.4; at width 8 4–11% faster. On a 2-core AMD EPYC Zen 5
/// VM the same frames were level at width 1 and level to 1.5% slower at width 2
/// (MobileNet V1 2.83–2.85 → 2.88–2.89 ms, its stem 0.077–0.082 → 0.079–0.084). A
/// block's results do not depend on the cut (module docs); each block packs its kernel's
/// overlap rows again, a few rows of three channels on a stem.
pub(crate) const WIDE_BLOCK_ROWS: usize = 4;

/// Most reduction steps for the narrow tile (a decision, from measurements): an AVX-512
/// tile is 8 pixels (its transposed store in registers, `simd/x86.rs`,
/// `lanes_store_t_avx512`) up to this many steps, 10 beyond (the store through memory).
/// The store is a tile's fixed cost, which a short reduction pays in full, while 10 pixels
/// read each weight vector for 10 FMAs instead of 8. One conv alone (a scratch
/// `Conv2d::compute_chunks` loop, best of five 0.3 s runs, three rounds, builds taking
/// turns; 2-core AMD EPYC Zen 5 VM), 8 pixels against 10: SqueezeNet's stem (`3 → 64`
/// 3×3 stride 2, 27 steps) 0.213–0.219 ms against 0.263–0.264, MobileNet's (`3 → 32`)
/// 0.119–0.121 against 0.143–0.145, `16 → 64` on 55×55 (144) 0.219–0.226 against
/// 0.223–0.233, `32 → 128` on 27×27 (288) 0.204–0.208 against 0.206–0.217; but `48 → 192`
/// on 13×13 (432) 0.110–0.112 against 0.108–0.112, `64 → 256` on 13×13 (576)
/// 0.192–0.202 against 0.187–0.195 and `128 → 128` stride 2 on 56×56 (1152) 0.899–0.926
/// against 0.896–0.910. Paths with one tile width have it for both.
pub(crate) const SHORT_STEPS: usize = 320;

/// How far past a tile's first pixel, in floats, each of its output rows is prefetched
/// before the tile stores (a decision, from a measurement). A tile writes a few pixels
/// into each of its channels' rows: 32 rows on AVX-512, each in another output plane, too
/// many streams for the hardware prefetcher. In a frame the output lines are cold, and a
/// short reduction (a stem's 27 steps) leaves each store's read-for-ownership waiting on
/// memory. Alone, with 24 MB written between runs so that the output is cold as in a
/// frame (a scratch `Conv2d::compute_chunks` loop, median of 0.4 s of runs, three rounds
/// taking turns; 2-core AMD EPYC Zen 4 VM, AVX-512): SqueezeNet's stem (`3 → 64` 3×3
/// stride 2 on 224×224) 1.06–1.31 ms with no prefetch, 0.74–0.90 with 32 floats, 0.82–0.91
/// with 64 and 0.85–0.89 with 128; with the output hot, 0.61–0.68 against 0.61–0.71.
/// Layers with longer reductions were level within the VM's noise either way (`16 → 64`
/// 3×3 on 55×55, `64 → 256` on 13×13, ResNet50's 7×7 stem).
pub(crate) const STORE_AHEAD: usize = 32;

/// Fewest reduction steps (`C·kh·kw`) for [`pays_off`] at stride 1 (module docs: 27
/// lost, 144 won).
pub const MIN_STEPS: usize = 128;

/// Most bytes of weights for [`pays_off`] (module docs: 590 KB won, 1.8 MB and more lost
/// or tied).
pub const MAX_WEIGHT_BYTES: usize = 1 << 20;

/// Whether the channel-lanes path should run `p` where Winograd does not (module docs): a
/// kernel larger than 1×1 with at least [`MIN_STEPS`] steps or a stride above 1 (where
/// im2col gathers every other column), and at most [`MAX_WEIGHT_BYTES`] of weights.
pub fn pays_off(p: &Conv2dParams) -> bool {
    let (kh, kw) = p.kernel;
    let strided = p.stride.0 > 1 || p.stride.1 > 1;
    kh * kw > 1
        && (p.in_channels * kh * kw >= MIN_STEPS || strided)
        && p.weight_len() * std::mem::size_of::<f32>() <= MAX_WEIGHT_BYTES
}

/// One call of the channel-lanes kernel ([`Kernels::lanes_conv`]): output channels of a
/// run of pixels of one block.
///
/// [`Kernels::lanes_conv`]: crate::simd::Kernels::lanes_conv
#[derive(Clone, Debug)]
pub(crate) struct Call<'a> {
    /// The block's padded input: channel `c`'s rows from `c · channel_len` on, `wp` floats
    /// each, the first being padded row `top`.
    pub(crate) x: &'a [f32],
    /// Each reduction step's offset from a pixel's window in `x`, in `(c, ky, kx)` order.
    pub(crate) steps: &'a [u32],
    /// Weight panels of [`Kernels::lanes_oc`] channels from the one holding the first
    /// channel computed: step by step, a panel's channels at each.
    ///
    /// [`Kernels::lanes_oc`]: crate::simd::Kernels::lanes_oc
    pub(crate) weights: &'a [f32],
    /// Lanes of the first panel before the first channel computed.
    pub(crate) skip: usize,
    /// Output pixels computed (flat, `oy·ow + ox`).
    pub(crate) pixels: Range<usize>,
    /// Output row width.
    pub(crate) ow: usize,
    /// Stride `(sy, sx)`.
    pub(crate) stride: (usize, usize),
    /// Padded input row width.
    pub(crate) wp: usize,
    /// The padded input row `x` starts with.
    pub(crate) top: usize,
    /// Bias, residual and activation of the channels computed.
    pub(crate) epilogue: &'a BlockEpilogue<'a>,
}

impl Call<'_> {
    /// Where output pixel `p`'s window starts in [`Call::x`].
    pub(crate) fn base(&self, p: usize) -> usize {
        let (oy, ox) = (p / self.ow, p % self.ow);
        (oy * self.stride.0 - self.top) * self.wp + ox * self.stride.1
    }
}

/// Weights packed for the channel-lanes kernel, and the geometry of its blocks.
#[derive(Clone, Debug)]
pub(super) struct Lanes {
    p: Conv2dParams,
    input: Shape,
    output: Shape,
    /// Channels per weight panel ([`Kernels::lanes_oc`](crate::simd::Kernels::lanes_oc)).
    oc: usize,
    /// Padded row width, `W + 2·px`.
    wp: usize,
    /// Blocks of output rows.
    blocks: usize,
    /// Floats of one channel in a packed block: the largest block's padded rows.
    channel_len: usize,
    steps: Vec<u32>,
    weights: Vec<f32>,
}

impl Lanes {
    /// Packs OIHW `weights` into panels of `kernels.lanes_oc` channels and cuts the output
    /// rows into blocks whose padded input fits `blocking`'s budget.
    pub(super) fn new(
        p: Conv2dParams,
        input: Shape,
        output: Shape,
        weights: &[f32],
        kernels: &Kernels,
        blocking: &Blocking,
    ) -> Lanes {
        let (c, k) = (p.in_channels, p.out_channels);
        let ((kh, kw), (sy, _)) = (p.kernel, p.stride);
        let wp = input.w + 2 * p.padding.1;
        // Padded input rows of `rows` output rows, and the budget's most output rows.
        let in_rows = |rows: usize| (rows - 1) * sy + kh;
        let budget = blocking.column_bytes / 4;
        let most = (1..=output.h)
            .take_while(|&r| c * in_rows(r) * wp <= budget)
            .last()
            .unwrap_or(1);
        let blocks = super::block_count(output.h, most, 1);
        let blocks = if output.h >= WIDE_BLOCKS * WIDE_BLOCK_ROWS {
            blocks.max(WIDE_BLOCKS)
        } else {
            blocks
        };
        let channel_len = in_rows(output.h.div_ceil(blocks)) * wp;
        assert!(
            c * channel_len <= u32::MAX as usize,
            "conv lanes: a block of {c} × {channel_len} floats"
        );
        let steps = (0..c)
            .flat_map(|ci| {
                (0..kh).flat_map(move |ky| {
                    (0..kw).map(move |kx| (ci * channel_len + ky * wp + kx) as u32)
                })
            })
            .collect();
        let oc = kernels.lanes_oc;
        let kdim = c * kh * kw;
        let mut packed = vec![0.0; k.div_ceil(oc) * kdim * oc];
        for (o, filter) in weights.chunks_exact(kdim).enumerate() {
            let panel = &mut packed[o / oc * kdim * oc..][..kdim * oc];
            for (step, &w) in filter.iter().enumerate() {
                panel[step * oc + o % oc] = w;
            }
        }
        Lanes {
            p,
            input,
            output,
            oc,
            wp,
            blocks,
            channel_len,
            steps,
            weights: packed,
        }
    }

    /// Output rows of block `block`.
    fn rows(&self, block: usize) -> Range<usize> {
        split_range(self.output.h, block, self.blocks)
    }
}

impl Engine for Lanes {
    fn blocks(&self) -> usize {
        self.blocks
    }

    fn block_pixels(&self, block: usize) -> Range<usize> {
        let rows = self.rows(block);
        rows.start * self.output.w..rows.end * self.output.w
    }

    fn packed_len(&self) -> usize {
        self.p.in_channels * self.channel_len
    }

    fn work_len(&self, _channels: usize) -> usize {
        0
    }

    fn pack_units(&self, _block: usize) -> usize {
        self.p.in_channels
    }

    fn pack_rect(&self, _block: usize, units: Range<usize>) -> Rect {
        let len = self.channel_len;
        Rect::new(units.start * len, len, units.len(), len)
    }

    /// Copies channels `units`' padded input rows of block `block`, zeros in the padding.
    fn pack_part(
        &self,
        _kernels: &Kernels,
        x: &[f32],
        block: usize,
        units: Range<usize>,
        out: &mut MatMut<'_>,
        _work: &mut [f32],
    ) {
        let (h, w) = (self.input.h, self.input.w);
        let (py, px) = self.p.padding;
        let rows = self.rows(block);
        let top = rows.start * self.p.stride.0;
        let bottom = (rows.end - 1) * self.p.stride.0 + self.p.kernel.0;
        for (i, c) in units.enumerate() {
            let plane = &x[c * h * w..][..h * w];
            let dst = out.row_mut(i);
            for (r, row) in (top..bottom).zip(dst.chunks_exact_mut(self.wp)) {
                match r.checked_sub(py).filter(|&y| y < h) {
                    Some(y) => {
                        row[..px].fill(0.0);
                        row[px..px + w].copy_from_slice(&plane[y * w..][..w]);
                        row[px + w..].fill(0.0);
                    }
                    None => row.fill(0.0),
                }
            }
        }
    }

    fn compute(
        &self,
        kernels: &Kernels,
        _blocking: &Blocking,
        _x: &[f32],
        pixels: Range<usize>,
        packed: &[f32],
        block: usize,
        channels: Range<usize>,
        out: &mut MatMut<'_>,
        epilogue: &BlockEpilogue<'_>,
        _work: &mut [f32],
    ) {
        let panel = self.steps.len() * self.oc;
        let call = Call {
            x: &packed[..self.packed_len()],
            steps: &self.steps,
            weights: &self.weights[channels.start / self.oc * panel..],
            skip: channels.start % self.oc,
            pixels,
            ow: self.output.w,
            stride: self.p.stride,
            wp: self.wp,
            top: self.rows(block).start * self.p.stride.0,
            epilogue,
        };
        kernels.lanes_conv(&call, out);
    }

    fn packed_weights(&self) -> usize {
        self.weights.len()
    }

    fn channel_step(&self, _kernels: &Kernels) -> usize {
        self.oc
    }

    /// Output rows: a wide gang shares a block by rows as well as by weight panels
    /// (`gang.rs`, `Conv2d::compute_split`). A tile reads the packed block at its pixels'
    /// windows, so a run of rows needs no part of its own. With panels alone, SqueezeNet's
    /// `16 → 64` 3×3 on 55×55 (one block, two panels) ran on two of 16 ranks: 0.42 ms at
    /// width 16 against 0.40 at width 1 (`frame --net squeezenet1_1 --width 1|16
    /// --profile`, 16-core x86-64 Linux machine).
    fn column_units(&self, _kernels: &Kernels, block: usize) -> usize {
        self.rows(block).len()
    }

    fn unit_columns(
        &self,
        _kernels: &Kernels,
        block: usize,
        units: Range<usize>,
    ) -> (Range<usize>, usize) {
        let (first, ow) = (self.rows(block).start, self.output.w);
        ((first + units.start) * ow..(first + units.end) * ow, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::CacheSizes;

    fn lanes(p: Conv2dParams, input: Shape, l2: usize) -> Lanes {
        let kernels = Isa::Portable.kernels();
        let caches = CacheSizes {
            l1d: 32 << 10,
            l2,
            l3: 0,
        };
        let output = p.out_shape(input).unwrap();
        let weights = vec![1.0; p.weight_len()];
        Lanes::new(
            p,
            input,
            output,
            &weights,
            kernels,
            &Blocking::new(kernels, caches),
        )
    }

    #[test]
    fn blocks_fit_the_budget_and_cover_the_rows() {
        // 16 channels of 57 padded floats a row; 64 KiB of budget (half of L2) holds
        // 17 padded rows per channel: 15 output rows, so 55 rows take 4 blocks.
        let l = lanes(
            Conv2dParams::new(16, 64, 3, 1, 1),
            Shape::new(16, 55, 55),
            128 << 10,
        );
        assert_eq!(l.blocks, 4);
        assert!(l.packed_len() * 4 <= 64 << 10);
        let rows: Vec<_> = (0..l.blocks).map(|b| l.rows(b)).collect();
        assert_eq!(rows.first().unwrap().start, 0);
        assert_eq!(rows.last().unwrap().end, 55);
        assert!(rows.windows(2).all(|w| w[0].end == w[1].start));
        // A plane that fits is one block.
        let one = lanes(
            Conv2dParams::new(64, 256, 3, 1, 1),
            Shape::new(64, 13, 13),
            1 << 20,
        );
        assert_eq!(one.blocks, 1);
        assert_eq!(one.block_pixels(0), 0..169);
    }

    #[test]
    fn steps_and_bases_address_the_window() {
        // A 3×3 stride-2 conv padded by 1 on 9×9: padded rows 11 wide.
        let p = Conv2dParams::new(2, 5, 3, 2, 1);
        let l = lanes(p, Shape::new(2, 9, 9), 1 << 20);
        assert_eq!(l.wp, 11);
        assert_eq!(&l.steps[..4], &[0, 1, 2, 11]);
        assert_eq!(l.steps[9] as usize, l.channel_len);
        let e = BlockEpilogue {
            bias: &[],
            residual: Default::default(),
            act: Default::default(),
        };
        let call = Call {
            x: &[],
            steps: &l.steps,
            weights: &[],
            skip: 0,
            pixels: 0..25,
            ow: 5,
            stride: (2, 2),
            wp: 11,
            top: 2,
            epilogue: &e,
        };
        // Output (2, 3) reads padded rows from 4, columns from 6; the copy starts at row 2.
        assert_eq!(call.base(2 * 5 + 3), 2 * 11 + 6);
    }

    #[test]
    fn packing_copies_rows_with_zero_borders() {
        let p = Conv2dParams::new(1, 1, 3, 1, 1);
        let l = lanes(p, Shape::new(1, 2, 3), 1 << 20);
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let mut out = vec![9.0; l.packed_len()];
        let kernels = Isa::Portable.kernels();
        l.pack(kernels, &x, 0, &mut out, &mut []);
        #[rustfmt::skip]
        let want = [
            0.0, 0.0, 0.0, 0.0, 0.0,
            0.0, 1.0, 2.0, 3.0, 0.0,
            0.0, 4.0, 5.0, 6.0, 0.0,
            0.0, 0.0, 0.0, 0.0, 0.0,
        ];
        assert_eq!(out, want);
    }
}
