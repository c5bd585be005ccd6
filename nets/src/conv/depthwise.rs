//! Depthwise convolution (PyTorch's `Conv2d(C, C, k, stride, padding, groups=C)`, one
//! filter per channel): MobileNet V1's and V2's 3×3 convs between their pointwise ones.
//!
//! Output channel `c` is `act(bias[c] + Σ_{ky,kx} w[c,0,ky,kx] · x[c, oy·sy + ky − py,
//! ox·sx + kx − px])`, zero outside the input; weights in PyTorch's `[C, 1, kh, kw]`
//! layout (so [`crate::fold_batchnorm`] folds a following batch norm into them as it does
//! for a conv's OIHW weights: `C` rows of `kh·kw`). Any kernel size, stride and symmetric
//! zero padding per axis.
//!
//! Two algorithms give the same bits ([`DepthwiseAlgo`]): **channel blocks**, the
//! default, and **plane by plane**, kept for A/B runs.
//!
//! # Channel blocks (the default)
//! A vector holds one pixel of as many channels as it has lanes (8 on AVX2 and
//! AVX-512, 4 on NEON and the portable path): a tap is then one vector of the channels'
//! weights times one input vector, with no shuffles, no edge cases at the plane's borders
//! and no scalar tails, however narrow the plane (MobileNet's 7×7 planes are 7 pixels
//! wide, less than an AVX-512 vector). Per group of `L` channels (`simd/template.rs`'s
//! `depthwise_blocked!`, compiled once per ISA), in the worker's [`Scratch`]:
//!
//! 1. **Pack.** The input rows a band of output rows reads are interleaved, `L` pixels of
//!    `L` channels at a time by an `L × L` transpose, into a *ring* of padded rows
//!    (`BlockGeometry::layout`): input row `iy` lives in slot `iy mod ring_rows`, so each
//!    input row is packed once even though `kh` output rows read it. The padding columns
//!    of the slots and a padded row of zeros (for the top and bottom padding) are zeroed
//!    once per call.
//! 2. **Band.** Each output row is computed in blocks of 8, 4, 2, 1 pixels whose
//!    accumulators stay in registers across every tap; rows narrower than `PAIR_BELOW`
//!    (16) go two at a time so a block still has 8 independent FMA chains. 3×3 kernels at
//!    column stride 1 and 2 (MobileNet's) have copies whose offsets are constants. The
//!    activation is applied as each vector is stored to a *staging* row.
//! 3. **Unpack.** The staged band is transposed back into the `L` channels' planes.
//!
//! Bands are as tall as keep the ring, the zero row and the staging rows within
//! `BLOCK_TILE_FLOATS` (24 KiB), so everything between the input's read and the output's
//! write stays in L1: the layer reads its input and writes its output once. The
//! weights are repacked at build, tap-major (`[tap][channel]`, padded with `MAX_LANES`
//! zeros) so a group's tap is one unaligned load. A rank takes whole groups of `L`
//! channels ([`Kernel::run_rank`] below), so only the layer's last group is a part
//! vector; its lanes past the last channel repeat that channel's input and are never
//! stored.
//!
//! Channel blocks replaced plane by plane as the default after the A/B table of
//! `cargo bench -p taopipe-nets --bench bench_main -- report-depthwise` (both algorithms
//! in the same rounds, bit-identical outputs checked): on a 2-core AMD EPYC (Zen 3, AVX2)
//! VM, MobileNet V2's depthwise convs went from 2.41 to 1.27 ms a frame at width 1 and
//! from 1.27 to 0.71 ms at width 2, V1's from 1.94 to 1.03 and from 1.02 to 0.57; the
//! 112×112 and 56×56 layers moved 19–29 GB/s on one core, 64–99% of the copy bandwidth
//! measured in the same run (about 29 GB/s), the 7×7 ones 12.4 (43%).
//! On the 16-core x86-64 Linux machine (Xeon, AVX-512) the same table gave 1.61 ms a
//! frame for V2 with 8 channels a vector against 2.80 plane by plane (AVX2's kernels,
//! `TAOPIPE_ISA=avx2`), but 3.38 with AVX-512's 16 (plane by plane 2.59). That AVX-512
//! kernel's transposes went through an out-of-line call (`simd/x86.rs`,
//! `load_t_avx512`); since that fix it wins on a 2-core AMD EPYC Zen 5 VM: V2's depthwise
//! convs 0.64 ms a frame at width 1 and 0.37 at width 2 against 0.78 and 0.45 with AVX2's
//! kernel (`TAOPIPE_ISA=avx2`), V1's 0.52 and 0.30 against 0.64 and 0.36.
//!
//! # Plane by plane
//! No reduction runs across channels, so there is no GEMM and no weight packing: each
//! output takes `kh·kw` multiply-adds over its own input plane, and the layer reads its
//! input and writes its output once. It is bound by memory, not by the FMA units; the
//! kernel touches each byte once and keeps the arithmetic in vector registers. Per
//! channel, in the worker's [`Scratch`] (no allocation per frame):
//!
//! 1. **Split.** The zero-padded input plane is copied into scratch, split into the
//!    stride's `sy · sx` *phases*: phase `(ry, q)` holds padded rows `ry + sy·r` and, of
//!    those, columns `q + sx·i`, as `R` rows of `pitch` floats (`Geometry`). Output
//!    pixel `(oy, ox)`'s tap `(ky, kx)` is then the float at `tap_offset(ky, kx) +
//!    oy·pitch + ox`, the offset the same for every pixel: each tap of a run of pixels is
//!    a contiguous run of floats, with no strided gathers at stride 2 and no clipping at
//!    the borders (the zeros are in the copy). The zero borders are written once per
//!    call ([`Kernel::compute_chunks`]); each channel overwrites the same interior. A
//!    column stride of 2 (MobileNet's) splits each input row into both phases in one
//!    vectorised pass (`split_pairs`): the V2 `96x112.s2` layer went from 6.5 to 9.4 GiB/s
//!    at width 1, `144x56.s2` from 5.2–5.6 to 5.9–6.4, `576x14.s2` level (criterion, two
//!    rounds taking turns with the per-phase `copy_runs` split; 2-core AVX2 EPYC VM under
//!    a load average of 6.0–6.4).
//! 2. **Taps.** The ISA's kernel ([`crate::Kernels`]' `depthwise`, compiled once per ISA
//!    path with its target features, as the max pools are: `channels`) computes runs of
//!    *flat* output indices `j = oy·pitch + ox` in blocks of `BLOCK_VECTORS` (8) vectors
//!    whose accumulators stay in registers across all taps: one load and one FMA per tap
//!    and vector (intrinsics from `simd/template.rs`; plain loops kept the accumulators on
//!    the stack).
//! 3. **Store.** Rows of at least `DIRECT_MIN_COLS` (64) floats are computed straight into
//!    the output, row by row, a last vector overlapping the one before where a row is
//!    not whole vectors. Narrower planes (MobileNet's 56×56 to 7×7) are computed as one
//!    run over the whole plane, `pitch − ow` garbage columns per row included, in whole
//!    vectors into scratch, then their rows are copied out: a 7×7 plane is 61 flat
//!    outputs, one block of 8 AVX2 vectors, instead of 7 rows of 7, each a scalar tail.
//!    The activation follows each row, or each plane, while it is in L1.
//!
//! # Float operations, and bits
//! Each output element is `bias`, then one multiply-add per tap in `(ky, kx)` order
//! (row-major over the kernel), then the activation ([`Activation::apply`]'s rules, NaN
//! kept). The SIMD paths fuse each multiply-add (one rounding, as `f32::mul_add`), the
//! portable path multiplies then adds (two roundings). Padding taps multiply a zero, as
//! PyTorch's padded input does (an infinite weight gives NaN there). The operations of an
//! element depend only on the layer and the ISA, never on the block, row, chunk or rank
//! that computes it, so the output is bit-identical for every width.
//!
//! # Speed of plane by plane
//! On a 16-core AVX-512 Xeon VM, idle (`cargo bench -p taopipe-nets --bench bench_main --
//! report`, its "Depthwise convolutions" table), MobileNet's layers on planes of 28×28 and
//! more moved 10.2–15.2 GB/s on one core (input, output and weights once), 37–56% of the
//! copy bandwidth measured in the same run (27.2 GB/s), and 1.70–2.08× that on two cores;
//! on 14×14 and 7×7 planes 5.7–8.7 GB/s (21–32%), where a channel is a few hundred floats
//! and its split, row copies and calls weigh as much as its taps. MobileNet V2's
//! depthwise convs took 2.30 ms a frame at width 1 and 1.26 at width 2, V1's 1.86 and
//! 0.98.
//!
//! # Chunks
//! Groups of whole channels ([`ChunkPlan`]: at most [`crate::TARGET_CHUNKS`], of one
//! channel or more each). A gang's ranks share runs of whole vectors of channels
//! (channel blocks) or of chunks (plane by plane); CoDL's splits compute any run of
//! chunks ([`Kernel::compute_chunks`]). A channel's bits never depend on which run or
//! group computes it.

use std::ops::Range;

use crate::activation::Activation;
use crate::error::KernelError;
use taopipe_runtime::{SharedSlice, TaskCtx, split_range};

use crate::kernel::{ChunkPlan, Kernel, Scratch, Workspace, check_io};
use crate::simd::{Isa, Kernels, MAX_LANES, copy_runs};
use crate::tensor::Shape;

/// Hyperparameters of a depthwise convolution (channel multiplier 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DepthwiseParams {
    /// Channels `C`, in and out.
    pub channels: usize,
    /// Kernel `(kh, kw)`.
    pub kernel: (usize, usize),
    /// Stride `(sy, sx)`.
    pub stride: (usize, usize),
    /// Zero padding `(py, px)`, on both sides of each axis.
    pub padding: (usize, usize),
    /// Applied to each output after the bias (fused into the store).
    pub act: Activation,
}

impl DepthwiseParams {
    /// A square `k×k` depthwise conv, the same stride and padding on both axes, no
    /// activation.
    pub const fn new(channels: usize, k: usize, stride: usize, padding: usize) -> Self {
        DepthwiseParams {
            channels,
            kernel: (k, k),
            stride: (stride, stride),
            padding: (padding, padding),
            act: Activation::None,
        }
    }

    /// The same with activation `act`.
    pub const fn with_act(mut self, act: Activation) -> Self {
        self.act = act;
        self
    }

    /// Output shape for `input`: `(H + 2py − kh) / sy + 1` (floor), likewise for W;
    /// channels unchanged.
    ///
    /// # Errors
    /// Zero sizes, a channel mismatch, or a kernel larger than the padded input.
    ///
    /// ```
    /// use taopipe_nets::{DepthwiseParams, Shape};
    /// let dw = DepthwiseParams::new(96, 3, 2, 1);
    /// assert_eq!(dw.out_shape(Shape::new(96, 112, 112))?, Shape::new(96, 56, 56));
    /// # Ok::<(), taopipe_nets::KernelError>(())
    /// ```
    pub fn out_shape(&self, input: Shape) -> Result<Shape, KernelError> {
        let geo = |reason: String| KernelError::Geometry {
            layer: "dwconv",
            input,
            reason,
        };
        let ((kh, kw), (sy, sx)) = (self.kernel, self.stride);
        if kh == 0 || kw == 0 || sy == 0 || sx == 0 || self.channels == 0 {
            return Err(geo(format!("zero size in {self:?}")));
        }
        if input.c != self.channels {
            return Err(KernelError::Channels {
                layer: "dwconv",
                input,
                expected: self.channels,
                got: input.c,
            });
        }
        if input.h == 0 || input.w == 0 {
            return Err(geo(format!("empty input plane {}×{}", input.h, input.w)));
        }
        let (oh, ow) =
            super::window_plane("dwconv", input, self.kernel, self.stride, self.padding)?;
        Ok(Shape::new(self.channels, oh, ow))
    }

    /// Weight elements, `C·kh·kw` (PyTorch's `[C, 1, kh, kw]`).
    pub const fn weight_len(&self) -> usize {
        self.channels * self.kernel.0 * self.kernel.1
    }
}

/// How a [`DepthwiseConv2d`] computes (module docs): both give the same bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DepthwiseAlgo {
    /// Channel blocks: a vector holds one pixel of as many channels as it has lanes, the
    /// input rows interleaved into scratch and the outputs turned back into planes.
    #[default]
    Blocked,
    /// Plane by plane: a vector holds pixels of one channel, its padded plane split into
    /// the stride's phases in scratch.
    Planes,
}

/// The scratch a group of channels takes in the channel-blocked kernel, at most (module
/// docs, "Channel blocks"): a band of output rows is as tall as keeps its ring of input
/// rows, the zero row and its staged outputs within this many floats (24 KiB), in L1.
pub(crate) const BLOCK_TILE_FLOATS: usize = 6 * 1024;

/// Output rows narrower than this many pixels are computed two at a time (3×3 kernels;
/// module docs).
pub(crate) const PAIR_BELOW: usize = 16;

/// The geometry of the channel-blocked kernel: the layer's shapes and hyperparameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockGeometry {
    /// The input plane, `(H, W)`.
    pub(crate) input: (usize, usize),
    /// The output plane, `(OH, OW)`.
    pub(crate) output: (usize, usize),
    /// `(kh, kw)`.
    pub(crate) kernel: (usize, usize),
    /// `(sy, sx)`.
    pub(crate) stride: (usize, usize),
    /// `(py, px)`.
    pub(crate) padding: (usize, usize),
}

/// Where the channel-blocked kernel's scratch lies, in floats ([`BlockGeometry::layout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockLayout {
    /// Pixels of a padded input row, `W + 2px`.
    pub(crate) pitch: usize,
    /// Output rows of a band (the last band may have fewer).
    pub(crate) band_rows: usize,
    /// Slots of the ring of input rows: those a band reads, at most.
    pub(crate) ring_rows: usize,
    /// The ring: `ring_rows` rows of `pitch` vectors.
    pub(crate) ring: usize,
    /// A padded row of zeros, for the rows of padding.
    pub(crate) zero: usize,
    /// A band's interleaved outputs, `band_rows · OW` vectors.
    pub(crate) staging: usize,
    /// The floats of it all.
    pub(crate) len: usize,
}

impl BlockGeometry {
    pub(crate) fn new(p: &DepthwiseParams, input: Shape, output: Shape) -> BlockGeometry {
        BlockGeometry {
            input: (input.h, input.w),
            output: (output.h, output.w),
            kernel: p.kernel,
            stride: p.stride,
            padding: p.padding,
        }
    }

    /// The scratch of a group of `lanes` channels: bands as tall as fit
    /// [`BLOCK_TILE_FLOATS`] (one row at least), then evened out over the output rows.
    pub(crate) fn layout(&self, lanes: usize) -> BlockLayout {
        let ((h, w), (oh, ow), (kh, _), (sy, _), (_, px)) = (
            self.input,
            self.output,
            self.kernel,
            self.stride,
            self.padding,
        );
        let pitch = w + 2 * px;
        let row = pitch * lanes;
        let ring_rows = |band: usize| ((band - 1) * sy + kh).min(h);
        let floats = |band: usize| (ring_rows(band) + 1) * row + band * ow * lanes;
        let mut band = 1;
        while band < oh && floats(band + 1) <= BLOCK_TILE_FLOATS {
            band += 1;
        }
        let band = oh.div_ceil(oh.div_ceil(band));
        let ring_rows = ring_rows(band);
        let zero = ring_rows * row;
        let staging = zero + row;
        BlockLayout {
            pitch,
            band_rows: band,
            ring_rows,
            ring: 0,
            zero,
            staging,
            len: staging + band * ow * lanes,
        }
    }

    /// The input rows `lo..hi` that output rows `rows` (not empty) read, clipped to the
    /// input (empty where they read padding only).
    pub(crate) fn rows_read(&self, rows: Range<usize>) -> (usize, usize) {
        let ((h, _), (kh, _), (sy, _), (py, _)) =
            (self.input, self.kernel, self.stride, self.padding);
        let lo = (rows.start * sy).saturating_sub(py).min(h);
        let hi = ((rows.end - 1) * sy + kh).saturating_sub(py).min(h);
        (lo, hi.max(lo))
    }
}

/// A run of channels for the ISA's channel-blocked kernel ([`crate::Kernels`]'s
/// `depthwise_blocked`): their input planes, weights and biases, and the layer's geometry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Blocked<'a> {
    /// The channels' input planes.
    pub(crate) x: &'a [f32],
    /// Channels in the run.
    pub(crate) channels: usize,
    /// Tap `t`'s weights of the run's channels from `t · weight_stride` on, tap by tap in
    /// `(ky, kx)` order, as many as the channels rounded up to whole vectors.
    pub(crate) weights: &'a [f32],
    /// Floats from one tap's weights to the next.
    pub(crate) weight_stride: usize,
    /// The run's biases, as many as its channels rounded up to whole vectors.
    pub(crate) bias: &'a [f32],
    /// The layer's shapes.
    pub(crate) geometry: &'a BlockGeometry,
    /// The activation of each output.
    pub(crate) act: Activation,
}

/// Vectors of accumulators in a block of the tap kernel ([`plane`]): 8 independent FMA
/// chains cover an FMA latency of 4 cycles on two ports, and with one load per FMA they
/// keep two load ports busy; 8 of AVX2's 16 registers, 8 of AVX-512's and NEON's 32.
pub(crate) const BLOCK_VECTORS: usize = 8;

/// What the tap kernel ([`plane`]) computes for one channel plane: output `(oy, ox)` of
/// `rows × cols` is flat index `j = oy·pitch + ox`, and
/// `act(bias + Σ_t weights[t] · src[taps[t] + j])`, taps in order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plane<'a> {
    /// The plane's zero-padded input, split into phases (`Geometry`).
    pub(crate) src: &'a [f32],
    /// Each tap's offset in `src` from a flat output index, in `(ky, kx)` order.
    pub(crate) taps: &'a [usize],
    /// The channel's weights, one per tap.
    pub(crate) weights: &'a [f32],
    /// The channel's bias.
    pub(crate) bias: f32,
    /// The activation of each output.
    pub(crate) act: Activation,
    /// Flat indices from one output row to the next (`cols` or more).
    pub(crate) pitch: usize,
    /// Output rows.
    pub(crate) rows: usize,
    /// Output columns.
    pub(crate) cols: usize,
}

impl Plane<'_> {
    /// Flat outputs of the whole plane, garbage columns included but after the last row.
    pub(crate) fn flat_len(&self) -> usize {
        (self.rows - 1) * self.pitch + self.cols
    }

    /// [`Plane::flat_len`] and [`SLACK`]: what the taps may read past each offset, and the
    /// scratch a plane narrower than a block is computed into.
    pub(crate) fn padded_len(&self) -> usize {
        self.flat_len() + SLACK
    }
}

/// Output rows at least this many floats wide are computed straight into the output, row
/// by row; narrower planes as one flat run into scratch, then copied out (module docs).
/// Rows of 112 gain from it and rows of 28 lose, on both x86 paths; rows of 56 measured
/// level. At width 1, criterion medians of two rounds, GiB/s, straight into the output
/// against the flat run (16-core AVX-512 Xeon VM, idle):
///
/// | layer (output rows) | AVX-512 | AVX2 |
/// |---|---|---|
/// | V2 `32x112.s1` (112) | 8.4, 10.2 against 7.6, 7.0 | 8.8, 8.8 against 6.8, 6.4 |
/// | V2 `144x56.s1` (56) | 7.4, 6.0 against 7.3, 7.3 | 7.6, 5.9 against 7.8, 8.0 |
/// | V2 `96x112.s2` (56) | 7.7, 9.5 against 8.2, 8.3 | 8.1, 8.0 against 9.0, 8.2 |
/// | V2 `192x28.s1` (28) | 4.3, 4.6 against 6.7, 8.4 | 4.5, 3.9 against 7.8, 7.9 |
pub(crate) const DIRECT_MIN_COLS: usize = 64;

/// Floats past a plane's flat outputs that the tap kernel may compute and read (garbage,
/// never stored into the output): a plane narrower than a block is computed in whole
/// vectors, up to the next multiple of the vector width (16 floats at most).
pub(crate) const SLACK: usize = crate::simd::MAX_LANES;

/// A run of channels for the ISA's kernel ([`crate::Kernels`]'s `depthwise`): their input
/// planes, weights and biases, and the layer's geometry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Channels<'a> {
    /// The channels' input planes, `in_plane` floats each.
    pub(crate) x: &'a [f32],
    /// Floats of an input plane.
    pub(crate) in_plane: usize,
    /// `geometry.taps.len()` weights per channel.
    pub(crate) weights: &'a [f32],
    /// One bias per channel.
    pub(crate) bias: &'a [f32],
    /// Where the split plane's phases lie and what the taps read.
    pub(crate) geometry: &'a Geometry,
    /// The activation of each output.
    pub(crate) act: Activation,
    /// Output rows.
    pub(crate) rows: usize,
    /// Output columns.
    pub(crate) cols: usize,
}

impl Channels<'_> {
    /// Channels in the run.
    pub(crate) fn len(&self) -> usize {
        self.bias.len()
    }

    /// Channel `c`'s plane for the tap kernel, on `split`.
    pub(crate) fn plane<'a>(&'a self, c: usize, split: &'a [f32]) -> Plane<'a> {
        let taps = self.geometry.taps.len();
        Plane {
            src: split,
            taps: &self.geometry.taps,
            weights: &self.weights[c * taps..(c + 1) * taps],
            bias: self.bias[c],
            act: self.act,
            pitch: self.geometry.pitch,
            rows: self.rows,
            cols: self.cols,
        }
    }
}

/// Every channel of `ch` into `dst` (a plane each): the channel's input split into
/// `split` (whose zero borders the caller wrote: every channel writes the same interior),
/// then [`plane`]. Inlined into each ISA's `#[target_feature]` function.
///
/// # Panics
/// If the slices are shorter than `ch` says (`Kernels::depthwise` checks them first).
#[inline(always)]
pub(crate) fn channels<const L: usize>(
    ch: &Channels<'_>,
    split: &mut [f32],
    wide: &mut [f32],
    dst: &mut [f32],
    mut run: impl FnMut(&Plane<'_>, usize, &mut [f32]),
) {
    let g = ch.geometry;
    let planes = ch.x.chunks_exact(ch.in_plane);
    for (c, (x, dst)) in planes
        .zip(dst.chunks_exact_mut(ch.rows * ch.cols))
        .enumerate()
    {
        if g.stride.1 == 2 {
            split_pairs(g, x, split);
        } else {
            for copy in &g.copies {
                let (to, from) = (&mut split[copy.dst..], &x[copy.src..]);
                let sx = g.stride.1;
                copy_runs(to, g.pitch, from, copy.src_step, copy.runs, copy.len, sx);
            }
        }
        plane::<L>(&ch.plane(c, split), dst, wide, &mut run);
    }
}

/// [`Geometry::copies`] for a column stride of 2, input row by input row: each row's
/// columns go to the two column phases of its padded row, even and odd padded columns
/// apart, in one pass that LLVM vectorises (two loads, shuffles, two stores on AVX2),
/// where `copy_runs` makes a pass per phase and picks 4 floats of 8 per step.
#[inline(always)]
fn split_pairs(g: &Geometry, x: &[f32], split: &mut [f32]) {
    let ((h, w), (py, px), sy) = (g.input, g.padding, g.stride.0);
    let phase = g.rows * g.pitch;
    for (iy, row) in x.chunks_exact(w).take(h).enumerate() {
        let (ry, r) = ((iy + py) % sy, (iy + py) / sy);
        let (even, odd) = split[2 * ry * phase..].split_at_mut(phase);
        let (even, odd) = (&mut even[r * g.pitch..], &mut odd[r * g.pitch..]);
        // Input column `ix` is padded column `ix + px`: phase `(ix + px) % 2`, entry
        // `(ix + px) / 2`. From the first column whose padded column is even, the input
        // comes in pairs (even, odd) of the same entry.
        let first = px % 2;
        if first == 1 {
            odd[px / 2] = row[0];
        }
        let at = (first + px) / 2;
        let pairs = (w - first) / 2;
        deinterleave(
            &row[first..first + 2 * pairs],
            &mut even[at..at + pairs],
            &mut odd[at..at + pairs],
        );
        if first + 2 * pairs < w {
            even[at + pairs] = row[w - 1];
        }
    }
}

/// `even[i] = src[2i]`, `odd[i] = src[2i + 1]`.
#[inline(always)]
fn deinterleave(src: &[f32], even: &mut [f32], odd: &mut [f32]) {
    let n = even.len().min(odd.len()).min(src.len() / 2);
    let (src, even, odd) = (&src[..2 * n], &mut even[..n], &mut odd[..n]);
    for i in 0..n {
        even[i] = src[2 * i];
        odd[i] = src[2 * i + 1];
    }
}

/// One channel plane into `dst` (`rows × cols`), a run of flat outputs at a time through
/// `run(p, base, out)`, which computes outputs `base..base + out.len()` before the
/// activation (the ISA's tap loop). Rows of at least [`DIRECT_MIN_COLS`] floats are
/// computed straight into `dst`; narrower planes as one run into `wide`
/// ([`Plane::padded_len`] floats of scratch), rounded up to whole `L`-float vectors, whose
/// rows are then copied out (module docs). The activation follows each row, or the plane,
/// while it is in L1. Inlined into each ISA's `#[target_feature]` function
/// (`simd/template.rs`), so its loops are compiled for the ISA.
///
/// # Panics
/// If `dst` or `wide` have the wrong lengths (`Kernels::depthwise` checks them first).
#[inline(always)]
pub(crate) fn plane<const L: usize>(
    p: &Plane<'_>,
    dst: &mut [f32],
    wide: &mut [f32],
    run: &mut impl FnMut(&Plane<'_>, usize, &mut [f32]),
) {
    if p.cols >= DIRECT_MIN_COLS {
        for (oy, row) in dst.chunks_exact_mut(p.cols).enumerate() {
            run(p, oy * p.pitch, row);
            activate(p.act, row);
        }
    } else {
        let wide = &mut wide[..p.flat_len().next_multiple_of(L)];
        run(p, 0, wide);
        copy_runs(dst, p.cols, wide, p.pitch, p.rows, p.cols, 1);
        activate(p.act, dst);
    }
}

/// The portable path's tap loop ([`plane`]'s `run`): blocks of `B` floats, then of `L`,
/// then a last block of `L` overlapping the one before (its elements get the same
/// operations again, so the same bits); only a run shorter than `L` is scalar. Each
/// product is added unfused (`mul_add` without hardware FMA is a library call).
///
/// Plain loops: LLVM vectorises them, but keeps a block's accumulators in memory, a load
/// and a store around every FMA (the SIMD paths use intrinsics for that reason,
/// `simd/template.rs`).
pub(crate) fn run_portable<const B: usize, const L: usize>(
    p: &Plane<'_>,
    base: usize,
    out: &mut [f32],
) {
    let n = out.len();
    let mut j = 0;
    while j + B <= n {
        block_portable::<B>(p, base + j, &mut out[j..j + B]);
        j += B;
    }
    while j + L <= n {
        block_portable::<L>(p, base + j, &mut out[j..j + L]);
        j += L;
    }
    if j < n {
        if n >= L {
            block_portable::<L>(p, base + n - L, &mut out[n - L..]);
        } else {
            for (i, o) in out.iter_mut().enumerate().skip(j) {
                block_portable::<1>(p, base + i, std::slice::from_mut(o));
            }
        }
    }
}

/// `N` flat outputs from `j` on into `out`, unfused multiply-adds.
#[inline(always)]
fn block_portable<const N: usize>(p: &Plane<'_>, j: usize, out: &mut [f32]) {
    let mut acc = [p.bias; N];
    for (&at, &w) in p.taps.iter().zip(p.weights) {
        for (a, &x) in acc.iter_mut().zip(&p.src[at + j..at + j + N]) {
            *a += w * x;
        }
    }
    out.copy_from_slice(&acc);
}

/// [`Activation::apply`] on every element, the activation matched once.
#[inline(always)]
fn activate(act: Activation, out: &mut [f32]) {
    match act {
        Activation::None => {}
        Activation::Relu => out.iter_mut().for_each(|v| *v = Activation::Relu.apply(*v)),
        Activation::Clip { min, max } => out
            .iter_mut()
            .for_each(|v| *v = Activation::Clip { min, max }.apply(*v)),
        Activation::LeakyRelu { slope } => out
            .iter_mut()
            .for_each(|v| *v = Activation::LeakyRelu { slope }.apply(*v)),
    }
}

/// Where each phase of a padded input plane sits in scratch and which part of it the input
/// fills (module docs). Phase `(ry, q)` (`ry < sy`, `q < sx`) starts at `(ry·sx + q) · R ·
/// pitch` and holds padded rows `ry + sy·r` (`r < R`), of each padded columns `q + sx·i`
/// (`i < pitch`). Entries outside the input are zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    /// Rows of a phase, `R = ⌈(H + 2py) / sy⌉`.
    pub(crate) rows: usize,
    /// Floats of a phase row, `⌈(W + 2px) / sx⌉`.
    pub(crate) pitch: usize,
    /// Phases: the stride `(sy, sx)`.
    pub(crate) stride: (usize, usize),
    /// The input plane, `(H, W)`.
    pub(crate) input: (usize, usize),
    /// The padding `(py, px)`.
    pub(crate) padding: (usize, usize),
    /// Each tap's offset from a flat output index, `(ky, kx)` order.
    pub(crate) taps: Vec<usize>,
    /// What each phase copies from an input plane (every `sx`-th float of a row).
    pub(crate) copies: Vec<PhaseCopy>,
}

/// The input rectangle one phase holds: `runs` runs of `len` floats, the run `i` from
/// `src + i·src_step` (every `sx`-th float) to `dst + i·pitch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PhaseCopy {
    pub(crate) dst: usize,
    pub(crate) src: usize,
    pub(crate) src_step: usize,
    pub(crate) runs: usize,
    pub(crate) len: usize,
}

impl Geometry {
    fn new(p: &DepthwiseParams, input: Shape) -> Geometry {
        let ((kh, kw), (sy, sx), (py, px)) = (p.kernel, p.stride, p.padding);
        let (h, w) = (input.h, input.w);
        let rows = (h + 2 * py).div_ceil(sy);
        let pitch = (w + 2 * px).div_ceil(sx);
        let phase = rows * pitch;
        let taps = (0..kh)
            .flat_map(|ky| (0..kw).map(move |kx| (ky, kx)))
            .map(|(ky, kx)| ((ky % sy) * sx + kx % sx) * phase + (ky / sy) * pitch + kx / sx)
            .collect();
        // The entries of `first..end` along an axis whose padded coordinate `q + s·i` lies
        // in the input `pad..pad + n`.
        let inside = |q: usize, s: usize, pad: usize, n: usize, end: usize| {
            let lo = pad.saturating_sub(q).div_ceil(s).min(end);
            let hi = (n + pad).saturating_sub(q).div_ceil(s).clamp(lo, end);
            lo..hi
        };
        let mut copies = Vec::with_capacity(sy * sx);
        for ry in 0..sy {
            let r = inside(ry, sy, py, h, rows);
            for q in 0..sx {
                let i = inside(q, sx, px, w, pitch);
                if r.is_empty() || i.is_empty() {
                    continue;
                }
                copies.push(PhaseCopy {
                    dst: (ry * sx + q) * phase + r.start * pitch + i.start,
                    src: (ry + sy * r.start - py) * w + q + sx * i.start - px,
                    src_step: sy * w,
                    runs: r.len(),
                    len: i.len(),
                });
            }
        }
        Geometry {
            rows,
            pitch,
            stride: (sy, sx),
            input: (h, w),
            padding: (py, px),
            taps,
            copies,
        }
    }

    /// Floats of the split plane, and the [`SLACK`] its taps may read past it.
    pub(crate) fn split_len(&self) -> usize {
        self.stride.0 * self.stride.1 * self.rows * self.pitch + SLACK
    }
}

/// A depthwise convolution layer bound to its input shape.
///
/// ```
/// use taopipe_nets::{Activation, DepthwiseConv2d, DepthwiseParams, Kernel, Scratch, Shape};
/// // Two channels of 3×3, a 3×3 box filter on each, padding 1, ReLU6.
/// let p = DepthwiseParams::new(2, 3, 1, 1).with_act(Activation::RELU6);
/// let input = Shape::new(2, 3, 3);
/// let dw = DepthwiseConv2d::new(p, input, vec![1.0; p.weight_len()], Some(vec![0.0, -1.0]))?;
/// let x: Vec<f32> = (0..input.len()).map(|i| if i < 9 { 1.0 } else { 0.5 }).collect();
/// let y = dw.forward(&[&x], &mut Scratch::new());
/// // Channel 0: a corner sums 4 ones, the centre 9 (clipped at 6).
/// assert_eq!((y[0], y[4]), (4.0, 6.0));
/// // Channel 1: the centre is 9 · 0.5 − 1.
/// assert_eq!(y[9 + 4], 3.5);
/// # Ok::<(), taopipe_nets::KernelError>(())
/// ```
#[derive(Clone, Debug)]
pub struct DepthwiseConv2d {
    params: DepthwiseParams,
    in_shape: Shape,
    out_shape: Shape,
    /// `[C, 1, kh, kw]`, as given.
    weights: Vec<f32>,
    /// One per channel, then `MAX_LANES` zeros: the channel-blocked kernel loads whole
    /// vectors of biases.
    bias: Vec<f32>,
    kernels: &'static Kernels,
    algo: DepthwiseAlgo,
    geometry: Geometry,
    blocks: BlockGeometry,
    /// Tap `t`'s weights of every channel from `t · (C + MAX_LANES)` on, zeros past `C`
    /// (the channel-blocked kernel's `[tap][channel]` order).
    tap_weights: Vec<f32>,
    chunks: ChunkPlan,
}

impl DepthwiseConv2d {
    /// A depthwise conv with `weights` in PyTorch's `[C, 1, kh, kw]` order and an optional
    /// bias (zeros when `None`), on [`Isa::current`].
    ///
    /// # Errors
    /// As [`DepthwiseParams::out_shape`], weights or bias of the wrong length, or a bad
    /// `TAOPIPE_ISA`.
    pub fn new(
        params: DepthwiseParams,
        input: Shape,
        weights: Vec<f32>,
        bias: Option<Vec<f32>>,
    ) -> Result<DepthwiseConv2d, KernelError> {
        let out_shape = params.out_shape(input)?;
        if weights.len() != params.weight_len() {
            return Err(KernelError::BufferLen {
                what: "dwconv weights",
                expected: params.weight_len(),
                got: weights.len(),
            });
        }
        let bias = bias.unwrap_or_else(|| vec![0.0; params.channels]);
        if bias.len() != params.channels {
            return Err(KernelError::BufferLen {
                what: "dwconv bias",
                expected: params.channels,
                got: bias.len(),
            });
        }
        let (c, taps) = (params.channels, params.kernel.0 * params.kernel.1);
        let stride = c + MAX_LANES;
        let mut tap_weights = vec![0.0; taps * stride];
        for (ch, w) in weights.chunks_exact(taps).enumerate() {
            for (t, &v) in w.iter().enumerate() {
                tap_weights[t * stride + ch] = v;
            }
        }
        let mut bias = bias;
        bias.resize(c + MAX_LANES, 0.0);
        Ok(DepthwiseConv2d {
            params,
            in_shape: input,
            out_shape,
            weights,
            bias,
            kernels: Isa::current()?.kernels(),
            algo: DepthwiseAlgo::default(),
            geometry: Geometry::new(&params, input),
            blocks: BlockGeometry::new(&params, input, out_shape),
            tap_weights,
            chunks: ChunkPlan::new(params.channels, out_shape.plane(), 1, 1),
        })
    }

    /// Runs on another ISA path (the same operations, fused multiply-adds on the SIMD
    /// paths: see the module docs).
    ///
    /// # Errors
    /// [`KernelError::Isa`] when this CPU cannot run it.
    ///
    /// ```
    /// use taopipe_nets::{DepthwiseConv2d, DepthwiseParams, Isa, Kernel, Scratch, Shape};
    /// let dw = DepthwiseConv2d::new(DepthwiseParams::new(1, 1, 1, 0), Shape::new(1, 1, 2), vec![2.0], None)?;
    /// let dw = dw.with_isa(Isa::Portable)?;
    /// assert_eq!(dw.forward(&[&[1.0, 3.0]], &mut Scratch::new()), vec![2.0, 6.0]);
    /// # Ok::<(), taopipe_nets::KernelError>(())
    /// ```
    pub fn with_isa(mut self, isa: Isa) -> Result<DepthwiseConv2d, KernelError> {
        self.kernels = isa.supported()?.kernels();
        Ok(self)
    }

    /// Computes by `algo` (the same bits either way: see the module docs).
    ///
    /// ```
    /// use taopipe_nets::{DepthwiseAlgo, DepthwiseConv2d, DepthwiseParams, Kernel, Scratch, Shape};
    /// let p = DepthwiseParams::new(3, 3, 2, 1);
    /// let input = Shape::new(3, 9, 9);
    /// let dw = DepthwiseConv2d::new(p, input, vec![0.5; p.weight_len()], None)?;
    /// let x: Vec<f32> = (0..input.len()).map(|i| i as f32).collect();
    /// let planes = dw.clone().with_algo(DepthwiseAlgo::Planes);
    /// assert_eq!(planes.algo(), DepthwiseAlgo::Planes);
    /// let (a, b) = (dw.forward(&[&x], &mut Scratch::new()), planes.forward(&[&x], &mut Scratch::new()));
    /// assert!(a.iter().zip(&b).all(|(a, b)| a.to_bits() == b.to_bits()));
    /// # Ok::<(), taopipe_nets::KernelError>(())
    /// ```
    pub fn with_algo(mut self, algo: DepthwiseAlgo) -> DepthwiseConv2d {
        self.algo = algo;
        self
    }

    /// How it computes.
    pub fn algo(&self) -> DepthwiseAlgo {
        self.algo
    }

    /// The hyperparameters.
    pub fn params(&self) -> &DepthwiseParams {
        &self.params
    }

    /// The ISA path in use.
    pub fn isa(&self) -> Isa {
        self.kernels.isa
    }

    /// Weights, `[C, 1, kh, kw]`.
    pub fn weights(&self) -> &[f32] {
        &self.weights
    }

    /// Bias, one per channel.
    pub fn bias(&self) -> &[f32] {
        &self.bias[..self.params.channels]
    }

    /// Channels of chunk `chunk`.
    pub fn chunk_channels(&self, chunk: usize) -> Range<usize> {
        self.chunks.channels_of(chunk)
    }
}

impl Kernel for DepthwiseConv2d {
    fn kind(&self) -> &'static str {
        "dwconv"
    }

    /// `dwconv 3x3/2`: kernel and stride.
    fn describe(&self) -> String {
        let ((kh, kw), (sy, _)) = (self.params.kernel, self.params.stride);
        format!("dwconv {kh}x{kw}/{sy}")
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

    /// The channels of `chunks` (module docs).
    fn compute_chunks(
        &self,
        inputs: &[&[f32]],
        chunks: Range<usize>,
        out: &mut [f32],
        scratch: &mut Scratch,
    ) {
        let want = self.output_range(chunks.clone()).len();
        check_io(self.kind(), inputs, 1, self.in_shape.len(), out.len(), want);
        if chunks.is_empty() {
            return;
        }
        let channels = self.chunks.channels_of(chunks.start).start
            ..self.chunks.channels_of(chunks.end - 1).end;
        self.compute_channels(inputs[0], channels, out, scratch);
    }

    /// The channel-blocked kernel: runs of whole vectors of channels, as many as the gang
    /// shares ([`Kernel::gang_items`]), instead of runs of chunks, so that a rank's run
    /// ends in a part vector only at the layer's last channel. Plane by plane, the default
    /// runs of chunks.
    fn run_rank(
        &self,
        ctx: &TaskCtx<'_>,
        inputs: &[&[f32]],
        output: &SharedSlice<f32>,
        _workspace: &Workspace,
        scratch: &mut Scratch,
    ) {
        let (c, plane) = (self.params.channels, self.out_shape.plane());
        let lanes = match self.algo {
            DepthwiseAlgo::Blocked => self.kernels.depthwise_lanes,
            DepthwiseAlgo::Planes => self.chunks.per,
        };
        check_io(self.kind(), inputs, 1, self.in_shape.len(), 0, 0);
        let groups = c.div_ceil(lanes);
        let items = groups.min(self.gang_items(ctx.width()));
        ctx.share(
            1,
            |_| items,
            |_, item| {
                let run = split_range(groups, item, items);
                let channels = run.start * lanes..(run.end * lanes).min(c);
                let mut out = output
                    .write(channels.start * plane..channels.end * plane)
                    .expect("the items of a layer write disjoint channels");
                self.compute_channels(inputs[0], channels, &mut out, scratch);
            },
        );
    }
}

impl DepthwiseConv2d {
    /// Channels `channels` of the output into `out`, by the layer's algorithm.
    fn compute_channels(
        &self,
        x: &[f32],
        channels: Range<usize>,
        out: &mut [f32],
        scratch: &mut Scratch,
    ) {
        let in_plane = self.in_shape.plane();
        let x = &x[channels.start * in_plane..channels.end * in_plane];
        match self.algo {
            DepthwiseAlgo::Blocked => {
                let stride = self.params.channels + MAX_LANES;
                let b = Blocked {
                    x,
                    channels: channels.len(),
                    weights: &self.tap_weights[channels.start..],
                    weight_stride: stride,
                    bias: &self.bias[channels.start..],
                    geometry: &self.blocks,
                    act: self.params.act,
                };
                let work = scratch.take(self.blocks.layout(self.kernels.depthwise_lanes).len);
                self.kernels.depthwise_blocked(&b, work, out);
            }
            DepthwiseAlgo::Planes => self.planes(x, channels, out, scratch),
        }
    }

    /// Zeroes the split plane's borders once, then computes channel by channel (module
    /// docs).
    fn planes(&self, x: &[f32], channels: Range<usize>, out: &mut [f32], scratch: &mut Scratch) {
        let g = &self.geometry;
        let (oh, ow) = (self.out_shape.h, self.out_shape.w);
        // The split plane (and the slack its taps may read past it), then a padded plane
        // of flat outputs.
        let (split_len, wide_len) = (g.split_len(), (oh - 1) * g.pitch + ow + SLACK);
        let (split, wide) = scratch
            .take(split_len.next_multiple_of(16) + wide_len)
            .split_at_mut(split_len.next_multiple_of(16));
        let split = &mut split[..split_len];
        split.fill(0.0);
        let (in_plane, taps) = (self.in_shape.plane(), g.taps.len());
        let ch = Channels {
            x,
            in_plane,
            weights: &self.weights[channels.start * taps..channels.end * taps],
            bias: &self.bias[channels],
            geometry: g,
            act: self.params.act,
            rows: oh,
            cols: ow,
        };
        self.kernels.depthwise(&ch, split, wide, out);
    }
}

#[cfg(test)]
mod test;
