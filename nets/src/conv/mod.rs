//! 2-D convolution (cross-correlation, PyTorch's `Conv2d`): any kernel, stride and zero
//! padding, bias, a fused activation ([`Activation`]: ReLU, clip/ReLU6, leaky ReLU) and,
//! optionally, a fused residual add; weights in OIHW order.
//!
//! # Algorithms
//! [`ConvAlgo::choose`] takes the first case that applies, in this order:
//!
//! 1. [`ConvAlgo::Winograd`] (F(4×4, 3×3)) or [`ConvAlgo::Winograd2`] (F(2×2, 3×3)) —
//!    3×3, stride 1, padding ≤ 1, enough channels and output tiles that the transforms pay
//!    off; F(2×2) on planes too small for F(4×4)'s tiles (see [`winograd`] for the rule and
//!    its measurements). [`ConvAlgo::Winograd5`] (F(2×2, 5×5)) likewise for 5×5, stride 1,
//!    padding ≤ 2.
//! 2. [`ConvAlgo::Lanes`] — a direct conv with the output channels in the vector lanes,
//!    reading a padded copy of the input in place: on the ISA paths where it measured
//!    faster ([`lanes::chosen_on`]: AVX2 and AVX-512), kernels larger than 1×1 with
//!    enough reduction steps and weights that stay in cache ([`lanes::pays_off`]); there
//!    Winograd runs by [`winograd::pays_off_beside_lanes`] (AVX2) and
//!    [`winograd::pays_off_avx512`].
//! 3. [`ConvAlgo::Direct`] — everything else: im2col into the micro-kernel's panels, then
//!    the blocked GEMM (a 1×1 stride-1 unpadded conv packs plain copies).
//!
//! All stay reachable through [`Conv2d::with_algo`] for A/B runs.
//!
//! # How a layer is cut
//! Weights are packed once, at build, for the layer's ISA ([`Conv2d::with_isa`]; default
//! [`Isa::current`]). The output pixels are cut into *blocks* (consecutive pixels of each
//! channel plane: a direct column block, or whole rows of Winograd tiles) fixed by the
//! layer's shape and the machine's caches. A block's input is packed (im2col'd, or
//! Winograd-transformed) once, then multiplied by the weights of any range of output
//! channels. Every output element is computed by the same float operations whichever
//! channels, blocks, rank or gang computes it, so results are bit-identical for every
//! width, place and pipeline.
//!
//! [`Kernel::compute_chunks`] computes output-channel chunks ([`ChunkPlan`]: at most 32, of
//! a multiple of 4 channels each) for all pixels, packing each block itself: what a CoDL split
//! or a single rank runs.

use std::ops::Range;

use crate::activation::Activation;
use crate::cache::{Blocking, CacheSizes};
use crate::error::KernelError;
use crate::gemm::BlockEpilogue;
use crate::kernel::{ChunkPlan, Kernel, Scratch, Workspace, WorkspaceLen};
use crate::simd::{Isa, Kernels, MatMut, MatRef, Residual};
use crate::tensor::Shape;
use taopipe_runtime::{Rect, SharedSlice, TaskCtx};

pub mod depthwise;
mod direct;
mod gang;
mod grouped;
pub mod lanes;
pub mod winograd;

pub use depthwise::{DepthwiseAlgo, DepthwiseConv2d, DepthwiseParams};
use direct::Direct;
pub use grouped::GroupedConv2d;
use lanes::Lanes;
use winograd::{Tile, Winograd};

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
    /// The activation applied to the output in the store (after the bias and a fused
    /// residual add), as [`Activation::apply`] does it.
    pub act: Activation,
}

impl Conv2dParams {
    /// A square `k×k` conv, the same stride and padding on both axes, no activation.
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
            act: Activation::None,
        }
    }

    /// The same with fused ReLU on or off (off: no activation at all).
    pub const fn with_relu(mut self, relu: bool) -> Self {
        self.act = Activation::relu_if(relu);
        self
    }

    /// The same with `act` fused into the store.
    ///
    /// ```
    /// use taopipe_nets::{Activation, Conv2dParams};
    /// let p = Conv2dParams::new(32, 32, 3, 1, 1).with_act(Activation::RELU6);
    /// assert_eq!(p.act, Activation::Clip { min: 0.0, max: 6.0 });
    /// assert_eq!(p.with_relu(true).act, Activation::Relu);
    /// ```
    pub const fn with_act(mut self, act: Activation) -> Self {
        self.act = act;
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
        let (sy, sx) = self.stride;
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
        let (oh, ow) = window_plane("conv", input, self.kernel, self.stride, self.padding)?;
        Ok(Shape::new(self.out_channels, oh, ow))
    }

    /// Weight elements, `K·C·kh·kw`.
    pub const fn weight_len(&self) -> usize {
        self.out_channels * self.in_channels * self.kernel.0 * self.kernel.1
    }
}

/// The output plane of a `kernel` window moved by `stride` over `input`'s plane, zero
/// padded by `padding` on both sides of each axis: `(H + 2py − kh) / sy + 1` (floor),
/// likewise for W. Sizes are nonzero (the caller checked).
///
/// # Errors
/// A kernel larger than the padded input, as `layer`'s [`KernelError::Geometry`].
pub(crate) fn window_plane(
    layer: &'static str,
    input: Shape,
    (kh, kw): (usize, usize),
    (sy, sx): (usize, usize),
    (py, px): (usize, usize),
) -> Result<(usize, usize), KernelError> {
    let (hp, wp) = (input.h + 2 * py, input.w + 2 * px);
    if hp < kh || wp < kw {
        return Err(KernelError::Geometry {
            layer,
            input,
            reason: format!("kernel {kh}×{kw} larger than padded input {hp}×{wp}"),
        });
    }
    Ok(((hp - kh) / sy + 1, (wp - kw) / sx + 1))
}

/// How a [`Conv2d`] computes; see the module doc for the order [`ConvAlgo::choose`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvAlgo {
    /// im2col into panels + blocked GEMM: any conv.
    Direct,
    /// Output channels in the vector lanes, the input read in place from a padded copy
    /// (`lanes.rs`): any conv.
    Lanes,
    /// Winograd F(4×4, 3×3): 3×3, stride 1, padding ≤ 1.
    Winograd,
    /// Winograd F(2×2, 3×3): where F(4×4) applies; chosen on small planes.
    Winograd2,
    /// Winograd F(2×2, 5×5): 5×5, stride 1, padding ≤ 2.
    Winograd5,
}

impl ConvAlgo {
    /// Every algorithm.
    pub const ALL: [ConvAlgo; 5] = [
        ConvAlgo::Winograd,
        ConvAlgo::Winograd2,
        ConvAlgo::Winograd5,
        ConvAlgo::Lanes,
        ConvAlgo::Direct,
    ];

    /// The first case that applies to `p` on `input` for the ISA path `isa` (module doc):
    /// the channel-lanes path only where [`lanes::chosen_on`] `isa`, and there Winograd
    /// by [`winograd::pays_off_beside_lanes`] (AVX2) or [`winograd::pays_off_avx512`].
    pub fn choose(p: &Conv2dParams, input: Shape, isa: Isa) -> ConvAlgo {
        let lanes = lanes::chosen_on(isa);
        let tile = match isa {
            Isa::Avx512 => winograd::pays_off_avx512(p, input),
            _ if lanes => winograd::pays_off_beside_lanes(p, input),
            _ => winograd::pays_off(p, input),
        };
        match tile {
            Some(Tile::F4) => ConvAlgo::Winograd,
            Some(Tile::F2) => ConvAlgo::Winograd2,
            Some(Tile::F2K5) => ConvAlgo::Winograd5,
            None if lanes && lanes::pays_off(p) => ConvAlgo::Lanes,
            None => ConvAlgo::Direct,
        }
    }

    /// Whether the algorithm can run `p`.
    pub fn applies(self, p: &Conv2dParams) -> bool {
        self.tile().is_none_or(|t| t.applies(p))
    }

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            ConvAlgo::Direct => "direct",
            ConvAlgo::Lanes => "lanes",
            ConvAlgo::Winograd => "winograd",
            ConvAlgo::Winograd2 => "winograd2",
            ConvAlgo::Winograd5 => "winograd5",
        }
    }

    /// The Winograd tiling, if the algorithm is one.
    pub fn tile(self) -> Option<Tile> {
        match self {
            ConvAlgo::Direct | ConvAlgo::Lanes => None,
            ConvAlgo::Winograd => Some(Tile::F4),
            ConvAlgo::Winograd2 => Some(Tile::F2),
            ConvAlgo::Winograd5 => Some(Tile::F2K5),
        }
    }
}

/// How many blocks cut `units` (column panels, rows of tiles) into blocks of at most
/// `most` units: as few as fit, then one more if that makes the count even and leaves at
/// least `least` units in every block; above [`WIDE_BLOCKS`](direct::WIDE_BLOCKS), a
/// multiple of it ([`wide_block_count`]). Block `b` is
/// [`split_range`](taopipe_runtime::split_range)`(units, b, blocks)`, so
/// blocks differ by at most one unit. Equal blocks, and an even count, keep the two ranks
/// of a gang equally busy under the private schedule: ResNet50's 56×56 planes were cut
/// into blocks of 1024, 1024, 1024 and 64 pixels, one rank got twice the other's work, and
/// its 1×1 convs ran only 1.47× faster on 2 workers than on 1.
pub(super) fn block_count(units: usize, most: usize, least: usize) -> usize {
    let blocks = units.div_ceil(most.max(1)).max(1);
    let blocks = if blocks > 1 && blocks % 2 == 1 && units / (blocks + 1) >= least.max(1) {
        blocks + 1
    } else {
        blocks
    };
    wide_block_count(units, blocks, least)
}

/// A count of more than [`WIDE_BLOCKS`](direct::WIDE_BLOCKS) blocks rounded to a multiple
/// of it (a decision, from a measurement): up where every block keeps at least `least`
/// units, else down. A 16-wide gang runs such a plane private, a rank per block as it gets
/// free, so 19 blocks take two rounds of blocks where 16 take one. VGG16's `conv1_2`
/// (Winograd, 56 rows of tiles in 19 blocks of 2 or 3, on a 2 MB L2 and on a 1 MB one) ran
/// at width 16 with its ranks busy from 2.43 to 4.43 ms, the three that took a second
/// block the longest, over a span of 4.43 ms (`frame --net vgg16 --width 16 --trace`, 20
/// frames, 16-core x86-64 Linux machine). In 16 blocks of 3 or 4 rows it ran alone at width
/// 1 in 18.9–19.5 ms against 19.6–19.8 (a scratch `Conv2d::compute_chunks` loop, best of
/// five 0.3 s runs, three rounds taking turns; 2-core AMD EPYC Zen 4 VM): fewer blocks
/// stream its transformed weights fewer times (it now takes 28 blocks of 2 rows:
/// `winograd::WIDE_BLOCK_TILE_ROWS`). Of the zoo only that layer and Tiny YOLOv2's first
/// conv (`3 → 16` on 416×416, 5408 column panels: 36 blocks → 48, level at width 1:
/// 2.26–2.27 ms both) change on that VM; at width 16 Tiny YOLOv2 ran 5.8–5.9 ms a frame
/// against 6.2 (`frame --net yolov2_tiny --width 16 --frames 40`, two rounds, one binary
/// switched by a scratch variable, 16-core x86-64 Linux machine).
fn wide_block_count(units: usize, blocks: usize, least: usize) -> usize {
    let wide = direct::WIDE_BLOCKS;
    if blocks <= wide || blocks.is_multiple_of(wide) {
        return blocks;
    }
    let up = blocks.next_multiple_of(wide);
    if units / up >= least.max(1) {
        up
    } else {
        blocks / wide * wide
    }
}

/// Fewest output channels in a chunk (and the multiple chunks are rounded to): small
/// enough that 16 workers share a 64-channel layer; a chunk that starts inside a weight
/// panel costs one short kernel call per block.
const MIN_CHANNELS_PER_CHUNK: usize = 4;

/// One algorithm's blocks: how it packs a block's input and multiplies it.
///
/// A block's packing is cut into *units* (direct: column panels; Winograd: input channels)
/// so that the ranks of a gang can pack one block together, each its own units, into a
/// shared buffer: units `u` write exactly [`Engine::pack_rect`]`(u)` of it.
pub(crate) trait Engine: Send + Sync + std::fmt::Debug {
    /// Blocks of the output plane.
    fn blocks(&self) -> usize;
    /// The pixels (flat, of each output channel plane) block `block` covers.
    fn block_pixels(&self, block: usize) -> Range<usize>;
    /// Floats of one packed block.
    fn packed_len(&self) -> usize;
    /// Floats of per-rank work memory `compute` needs for `channels` output channels.
    fn work_len(&self, channels: usize) -> usize;
    /// Floats of work memory `pack_part` needs.
    fn pack_work_len(&self) -> usize {
        0
    }
    /// Units the packing of block `block` splits into.
    fn pack_units(&self, block: usize) -> usize;
    /// Where units `units` of block `block` go in the packed buffer.
    fn pack_rect(&self, block: usize, units: Range<usize>) -> Rect;
    /// Packs units `units` of block `block` of input `x` into `out`, the view of
    /// `pack_rect(block, units)`.
    fn pack_part(
        &self,
        kernels: &Kernels,
        x: &[f32],
        block: usize,
        units: Range<usize>,
        out: &mut MatMut<'_>,
        work: &mut [f32],
    );
    /// Computes `channels` × the block's pixels into `out`; or those of column units, given
    /// `packed` from where [`Engine::unit_columns`] says their part starts. `pixels` are
    /// the pixels computed, `x` the layer's input (for an engine that reads it in place).
    #[allow(clippy::too_many_arguments)]
    fn compute(
        &self,
        kernels: &Kernels,
        blocking: &Blocking,
        x: &[f32],
        pixels: Range<usize>,
        packed: &[f32],
        block: usize,
        channels: Range<usize>,
        out: &mut MatMut<'_>,
        epilogue: &BlockEpilogue<'_>,
        work: &mut [f32],
    );
    /// Floats of packed weights held.
    fn packed_weights(&self) -> usize;

    /// Column units that `compute` of block `block` may be cut into, each unit's pixels
    /// computed alone from its part of the packed block ([`Engine::unit_columns`]); 1
    /// where it cannot be cut.
    fn column_units(&self, _kernels: &Kernels, _block: usize) -> usize {
        1
    }

    /// The pixels of column units `units` of block `block`, and where their part of the
    /// packed block starts.
    fn unit_columns(
        &self,
        _kernels: &Kernels,
        block: usize,
        _units: Range<usize>,
    ) -> (Range<usize>, usize) {
        (self.block_pixels(block), 0)
    }

    /// Output channels that one weight panel holds: gangs share a block's channels out in
    /// multiples of it.
    fn channel_step(&self, kernels: &Kernels) -> usize {
        kernels.mr
    }

    /// The engine's compute in two steps, if it has them (Winograd; `gang.rs` says why).
    fn two_step(&self) -> Option<&dyn TwoStep> {
        None
    }

    /// Whether `compute` reads the input in place: then `pack` writes only a block's short
    /// last panel, and only the column unit holding it reads the packed block.
    fn reads_in_place(&self) -> bool {
        false
    }

    /// Packs all of block `block` into `out` (`packed_len` floats), on this thread.
    fn pack(&self, kernels: &Kernels, x: &[f32], block: usize, out: &mut [f32], work: &mut [f32]) {
        let units = 0..self.pack_units(block);
        let r = self.pack_rect(block, units.clone());
        let mut view = MatMut::from_slice(&mut out[r.offset..], r.ld, r.rows, r.cols);
        self.pack_part(kernels, x, block, units, &mut view, work);
    }
}

/// An engine whose [`Engine::compute`] is a *multiply* step cut by units of its own
/// (Winograd: the 36 transform positions `ξ`, one GEMM each over every output channel),
/// whose products a *finish* step turns into output channels (Winograd: the output
/// transform). The two steps compute exactly what `compute` does, bit for bit.
pub(crate) trait TwoStep {
    /// Floats of one block's products.
    fn products_len(&self) -> usize;
    /// Units of a block's multiply step.
    fn multiply_units(&self) -> usize;
    /// Where units `units` of block `block` put their products.
    fn multiply_rect(&self, block: usize, units: Range<usize>) -> Rect;
    /// Multiplies units `units` of packed block `block` into `out`, the view of
    /// `multiply_rect(block, units)`.
    fn multiply(
        &self,
        kernels: &Kernels,
        blocking: &Blocking,
        packed: &[f32],
        block: usize,
        units: Range<usize>,
        out: &mut MatMut<'_>,
    );
    /// Turns block `block`'s `products` into output channels `channels` (`out`: those
    /// channels × the block's pixels), with the epilogue.
    fn finish(
        &self,
        kernels: &Kernels,
        products: &[f32],
        block: usize,
        channels: Range<usize>,
        out: &mut MatMut<'_>,
        epilogue: &BlockEpilogue<'_>,
    );
}

/// A convolution layer bound to its input shape.
#[derive(Debug)]
pub struct Conv2d {
    params: Conv2dParams,
    in_shape: Shape,
    out_shape: Shape,
    /// OIHW, as given (kept for [`Conv2d::with_algo`] / [`Conv2d::with_isa`] and tests).
    weights: Vec<f32>,
    bias: Vec<f32>,
    algo: ConvAlgo,
    kernels: &'static Kernels,
    blocking: Blocking,
    engine: Box<dyn Engine>,
    chunks: ChunkPlan,
    residual: bool,
}

impl Clone for Conv2d {
    fn clone(&self) -> Conv2d {
        Conv2d::build(
            self.params,
            self.in_shape,
            self.weights.clone(),
            self.bias.clone(),
            self.algo,
            self.kernels.isa,
        )
        .expect("a built conv rebuilds")
        .with_residual(self.residual)
    }
}

impl Conv2d {
    /// A conv with `weights` in OIHW order and an optional bias (zeros when `None`), using
    /// [`ConvAlgo::choose`] and [`Isa::current`].
    ///
    /// # Errors
    /// As [`Conv2dParams::out_shape`], weights/bias of the wrong length, or a bad
    /// `TAOPIPE_ISA`.
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
        let bias = bias.unwrap_or_else(|| vec![0.0; params.out_channels]);
        let isa = Isa::current().map_err(KernelError::Isa)?;
        Conv2d::build(
            params,
            in_shape,
            weights,
            bias,
            ConvAlgo::choose(&params, in_shape, isa),
            isa,
        )
    }

    /// A conv as [`Conv2d::new`] with the algorithm (default: [`ConvAlgo::choose`]) and the
    /// ISA given: the weights are packed once, for that path.
    ///
    /// # Errors
    /// As [`Conv2d::new`], or [`KernelError::Algorithm`] when `algo` does not apply.
    pub fn with_options(
        params: Conv2dParams,
        in_shape: Shape,
        weights: Vec<f32>,
        bias: Option<Vec<f32>>,
        algo: Option<ConvAlgo>,
        isa: Isa,
    ) -> Result<Conv2d, KernelError> {
        let bias = bias.unwrap_or_else(|| vec![0.0; params.out_channels]);
        let algo = match algo {
            Some(a) if !a.applies(&params) => {
                return Err(KernelError::Algorithm {
                    layer: "conv",
                    algo: a.name(),
                    reason: "needs a 3×3 kernel, stride 1 and padding at most 1",
                });
            }
            Some(a) => a,
            None => ConvAlgo::choose(&params, in_shape, isa),
        };
        Conv2d::build(params, in_shape, weights, bias, algo, isa)
    }

    fn build(
        params: Conv2dParams,
        in_shape: Shape,
        weights: Vec<f32>,
        bias: Vec<f32>,
        algo: ConvAlgo,
        isa: Isa,
    ) -> Result<Conv2d, KernelError> {
        let out_shape = params.out_shape(in_shape)?;
        if weights.len() != params.weight_len() {
            return Err(KernelError::BufferLen {
                what: "conv weights",
                expected: params.weight_len(),
                got: weights.len(),
            });
        }
        if bias.len() != params.out_channels {
            return Err(KernelError::BufferLen {
                what: "conv bias",
                expected: params.out_channels,
                got: bias.len(),
            });
        }
        isa.supported()?;
        let kernels = match algo {
            ConvAlgo::Direct => Direct::kernels(isa, &params, in_shape, out_shape.plane()),
            _ => isa.kernels(),
        };
        let blocking = Blocking::new(kernels, CacheSizes::get());
        let engine: Box<dyn Engine> = match (algo, algo.tile()) {
            (_, Some(tile)) => Box::new(Winograd::new(
                tile, params, in_shape, out_shape, &weights, kernels, &blocking,
            )),
            (ConvAlgo::Lanes, None) => Box::new(Lanes::new(
                params, in_shape, out_shape, &weights, kernels, &blocking,
            )),
            _ => Box::new(Direct::new(
                params, in_shape, out_shape, &weights, kernels, &blocking,
            )),
        };
        Ok(Conv2d {
            params,
            in_shape,
            out_shape,
            weights,
            bias,
            algo,
            kernels,
            blocking,
            engine,
            chunks: ChunkPlan::new(
                params.out_channels,
                out_shape.plane(),
                MIN_CHANNELS_PER_CHUNK,
                MIN_CHANNELS_PER_CHUNK,
            ),
            residual: false,
        })
    }

    /// Forces an algorithm (A/B benchmarks, tests, users who want the direct path).
    ///
    /// # Errors
    /// [`KernelError::Algorithm`] when it does not apply to this layer.
    pub fn with_algo(self, algo: ConvAlgo) -> Result<Conv2d, KernelError> {
        if !algo.applies(&self.params) {
            return Err(KernelError::Algorithm {
                layer: "conv",
                algo: algo.name(),
                reason: "needs a 3×3 kernel, stride 1 and padding at most 1",
            });
        }
        let residual = self.residual;
        Ok(Conv2d::build(
            self.params,
            self.in_shape,
            self.weights,
            self.bias,
            algo,
            self.kernels.isa,
        )?
        .with_residual(residual))
    }

    /// Runs on another ISA path (weights repacked for its micro-kernel).
    ///
    /// # Errors
    /// [`KernelError::Isa`] when this CPU cannot run it.
    pub fn with_isa(self, isa: Isa) -> Result<Conv2d, KernelError> {
        let residual = self.residual;
        Ok(Conv2d::build(
            self.params,
            self.in_shape,
            self.weights,
            self.bias,
            self.algo,
            isa,
        )?
        .with_residual(residual))
    }

    /// Fuses a residual add into the store: the layer takes a second input of its output
    /// shape and computes `act(conv(x) + bias + residual)`, the bits of the conv
    /// followed by an add (and the activation).
    pub fn with_residual(mut self, residual: bool) -> Conv2d {
        self.residual = residual;
        self
    }

    /// The hyperparameters.
    pub fn params(&self) -> &Conv2dParams {
        &self.params
    }

    /// The algorithm in use.
    pub fn algo(&self) -> ConvAlgo {
        self.algo
    }

    /// The ISA path in use.
    pub fn isa(&self) -> Isa {
        self.kernels.isa
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

    /// Blocks of output pixels (see the module doc).
    pub fn blocks(&self) -> usize {
        self.engine.blocks()
    }

    /// Packs every block of `x` once (timing experiments).
    #[doc(hidden)]
    pub fn pack_all(&self, x: &[f32], scratch: &mut Scratch) {
        let len = self.engine.packed_len().next_multiple_of(16);
        let (buf, work) = scratch
            .take(len + self.engine.pack_work_len())
            .split_at_mut(len);
        for b in 0..self.engine.blocks() {
            self.engine.pack(self.kernels, x, b, buf, work);
        }
    }

    /// Floats of weights packed for the micro-kernel (padding included).
    pub fn packed_weights(&self) -> usize {
        self.engine.packed_weights()
    }

    /// Checks the input count and lengths (a caller bug, not user input, when wrong): the
    /// residual may be left out where it can be read in place.
    fn check_inputs(&self, inputs: &[&[f32]]) {
        let least = self.arity() - usize::from(self.in_place_input());
        assert!(
            (least..=self.arity()).contains(&inputs.len()),
            "conv: expected {} inputs, got {}",
            self.arity(),
            inputs.len()
        );
        assert_eq!(inputs[0].len(), self.in_shape.len(), "conv: input length");
        if let Some(r) = inputs.get(1) {
            assert_eq!(r.len(), self.out_shape.len(), "conv: residual length");
        }
    }

    /// The residual the epilogue adds to `channels` × `pixels`: the second input's, the
    /// output's own (a residual conv run without that input), or none.
    fn residual_of<'a>(
        &self,
        inputs: &[&'a [f32]],
        channels: &Range<usize>,
        pixels: &Range<usize>,
    ) -> Residual<'a> {
        match inputs.get(1) {
            Some(r) => {
                let plane = self.out_shape.plane();
                let m = MatRef::from_slice(r, plane, r.len() / plane, plane);
                Residual::From(m.sub(channels.start, pixels.start, channels.len(), pixels.len()))
            }
            None if self.residual => Residual::InPlace,
            None => Residual::None,
        }
    }

    /// Computes output channels `channels` of every block into
    /// `out` (`channels.len()` rows of the output plane), packing each block into scratch.
    fn run_channels(
        &self,
        inputs: &[&[f32]],
        channels: Range<usize>,
        out: &mut [f32],
        scratch: &mut Scratch,
    ) {
        let plane = self.out_shape.plane();
        let packed_len = self.engine.packed_len().next_multiple_of(16);
        let work_len = self
            .engine
            .work_len(channels.len())
            .max(self.engine.pack_work_len());
        let (packed, work) = scratch.take(packed_len + work_len).split_at_mut(packed_len);
        let mut view = MatMut::from_slice(out, plane, channels.len(), plane);
        for block in 0..self.engine.blocks() {
            self.engine
                .pack(self.kernels, inputs[0], block, packed, work);
            let pixels = self.engine.block_pixels(block);
            let epilogue = BlockEpilogue {
                bias: &self.bias[channels.clone()],
                residual: self.residual_of(inputs, &channels, &pixels),
                act: self.params.act,
            };
            let mut tile = view.sub(0, pixels.start, channels.len(), pixels.len());
            self.engine.compute(
                self.kernels,
                &self.blocking,
                inputs[0],
                pixels.clone(),
                packed,
                block,
                channels.clone(),
                &mut tile,
                &epilogue,
                &mut work[..work_len],
            );
        }
    }
}

impl Kernel for Conv2d {
    fn kind(&self) -> &'static str {
        "conv"
    }

    /// `conv 3x3/1 winograd`: kernel, stride and algorithm.
    fn describe(&self) -> String {
        let (kh, kw) = self.params.kernel;
        let (stride, algo) = (self.params.stride.0, self.algo.name());
        format!("conv {kh}x{kw}/{stride} {algo}")
    }

    fn arity(&self) -> usize {
        1 + usize::from(self.residual)
    }

    /// A fused residual can be read from the output: Winograd's transforms and the
    /// channel-lanes tiles write the output only at the end; the direct path when the
    /// whole reduction is one `kc` block (otherwise C holds partial sums before the
    /// epilogue).
    fn in_place_input(&self) -> bool {
        self.residual
            && (self.algo != ConvAlgo::Direct || {
                let kdim = self.params.weight_len() / self.params.out_channels;
                kdim <= direct::reduction_block(&self.params, self.in_shape, &self.blocking)
            })
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

    fn run_rank(
        &self,
        ctx: &TaskCtx<'_>,
        inputs: &[&[f32]],
        output: &SharedSlice<f32>,
        workspace: &Workspace,
        scratch: &mut Scratch,
    ) {
        self.check_inputs(inputs);
        assert!(
            output.len() >= self.out_shape.len(),
            "conv: output buffer of {} floats for {}",
            output.len(),
            self.out_shape
        );
        self.run_gang(ctx, inputs, output, workspace, scratch);
    }

    fn workspace_len(&self) -> WorkspaceLen {
        WorkspaceLen {
            packed: self.engine.packed_len(),
            products: self.engine.two_step().map_or(0, TwoStep::products_len),
        }
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
        self.check_inputs(inputs);
        assert_eq!(
            out.len(),
            want,
            "conv: output slice has {} elements, the chunks have {want}",
            out.len()
        );
        if chunks.is_empty() {
            return;
        }
        let channels = self.chunks.channels_of(chunks.start).start
            ..self.chunks.channels_of(chunks.end - 1).end;
        self.run_channels(inputs, channels, out, scratch);
    }
}

#[cfg(test)]
mod test;
