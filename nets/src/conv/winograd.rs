//! Winograd F(m×m, r×r) for stride-1 convolutions (Lavin & Gray 2016): for 3×3 kernels
//! [`Tile::F4`] (interpolation points 0, ±1, ±2, ∞) and [`Tile::F2`] (0, ±1, ∞); for 5×5
//! kernels [`Tile::F2K5`] (0, ±1, ±2, ∞, as F(4×4, 3×3)).
//!
//! Each m×m output tile comes from a t×t input tile `d` (`t = m + r − 1`):
//! `Y = Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A`. The t² element-wise products, summed over input
//! channels, are t² GEMMs `M_ξ[K × tiles] = U_ξ[K × C] · V_ξ[C × tiles]`: F(4×4) does 36
//! multiplies per 16 outputs instead of 144 (4×), F(2×2) 16 per 4 instead of 36 (2.25×),
//! F(2×2, 5×5) 36 per 4 instead of 100 (2.8×).
//! The weights `U = G g Gᵀ` are transformed in f64 and packed, one [`PackedA`] per ξ, at
//! build; a block's input transform `V = Bᵀ d B` is packed straight into the GEMM's column
//! panels (tiles along the panel), and the output transform applies bias, residual and
//! the activation as it stores. Every tiling runs the same code, generic over `m` and `t`.
//! The input transform `Bᵀ` depends only on the points, so F(2×2, 5×5) shares F(4×4,
//! 3×3)'s; its `Aᵀ` is F(4×4)'s first two rows, the point at ∞ moved to the second.
//!
//! # Blocks
//! A block is whole rows of tiles, so its output is a contiguous run of each channel
//! plane. Rows per block: enough that the packed `V` of a block takes about half of L2,
//! but at least `4·NR` tiles (or the whole layer), since the GEMMs' `n` is the block's
//! tile count and a short `n` wastes the micro-kernel's columns; the rows are then shared
//! out evenly (`block_count` in the parent module). A plane that fits one block is still
//! cut in two where its transformed weights are small ([`SPLIT_WEIGHT_BLOCKS`]).
//!
//! # Accuracy
//! The transforms' constants (up to 5 in `Bᵀ`, 8 in `Aᵀ`, 1/24 in `G` for F(4×4); 1 and
//! 1/2 for F(2×2); 5, 2 and 2/3 for F(2×2, 5×5)) amplify rounding: measured against an f64
//! direct convolution the error stays below [`ERROR_BOUND`]` · Σ|w·x|` per output for all
//! three (tested on random layers and on VGG16, ResNet50 and AlexNet shapes), about 5–10×
//! the direct path's for F(4×4). On AlexNet's `conv2` shape (`64 → 192`, 27×27, random
//! weights) the worst output was 9e-7 of its `Σ|w·x|` with F(2×2, 5×5), 2e-7 with the
//! direct path; on the same shape with a 3×3 kernel, 1.7e-6 with F(4×4).
//!
//! # When it pays off, and which tiling
//! [`pays_off`]: at least [`MIN_CHANNELS`] input and output channels (where the
//! channel-lanes path runs, [`MIN_IN_CHANNELS`] input channels), then F(4×4) if it
//! makes at least [`MIN_TILES`] output tiles (one AVX-512 panel), else F(2×2) if that
//! does (with at least [`MIN_CHANNELS_F2`] input channels), else the direct path; for a
//! 5×5 kernel, F(2×2, 5×5) if it makes [`MIN_TILES`].
//! AlexNet's `conv2` (`64 → 192` on 27×27, 196 tiles) took 4.43–4.53 ms a frame on the
//! direct path and 2.98–3.05 with F(2×2, 5×5) at width 1 (its runs of output channels cut
//! to fit the cache, `run_channels`), and AlexNet's frame went from 21.7 to 19.6 ms at
//! width 1 and from 13.0 to 12.5 at width 2 (medians of 10 and 14 rounds of `frame
//! --serve` builds taking turns, 2-core Zen 4 VM; level, 12.2 ms, in 5 rounds where its
//! two cores shared no L3). ONNX Runtime's direct kernel takes 4.05 ms there
//! (`bench/peers/ort_profile.py alexnet 1 30`).
//!
//! - With fewer channels the transforms (per input channel and per output channel) cost
//!   more than the multiplies saved in the GEMMs.
//! - With few tiles the GEMMs' `n` (the tile count) is short, and the transformed weights
//!   (t² · K · C floats, 1.8× the direct path's for F(2×2), 4× for F(4×4)) are read once
//!   per frame for little work: the layer waits on memory. A 14×14 or 13×13 plane makes 16
//!   tiles of F(4×4) and 49 of F(2×2). With F(2×2), VGG16's three 14×14 layers went from
//!   4.0–4.5 to 3.5–3.9 ms each, ResNet50's five 14×14 `256 → 256` layers from 1.17–1.21
//!   to 0.99–1.05 ms, and AlexNet's 13×13 layers from 1.30/1.77/1.24 to 1.18/1.54/1.08 ms
//!   (`frame --width 1 --profile`, 2-core AVX-512 Xeon VM, builds taking turns). The gain
//!   is the weights' trip from memory: with them hot in cache, run over and over alone,
//!   F(4×4) stays the faster there (VGG16's 14×14 layers at 372–401 effective GFLOP/s
//!   against F(2×2)'s 285–291, ResNet50's at 292 against 238: `cargo bench -p taopipe-nets
//!   --bench bench_main -- report`), so the rule suits a frame, whose weights do not stay
//!   in cache from one frame to the next, not a layer run alone. On 28×28
//!   (49 tiles of F(4×4)) F(4×4) stays faster: VGG16's `512 → 512` layer took 9.4 ms with
//!   F(4×4) and 13.4 with F(2×2) (`cargo bench -p taopipe-nets --bench bench_main --
//!   conv/w1/vgg.conv4_2`). A 7×7 plane (ResNet50's layer4, 16 tiles of F(2×2)) stays on the
//!   direct path: F(2×2) took 1.66–1.70 ms there, direct 1.58–1.62.

use std::ops::Range;

use super::{Conv2dParams, Engine, TwoStep};
use crate::activation::with_activation;
use crate::cache::Blocking;
use crate::gemm::{BlockEpilogue, PackedA, gemm, packed_b_len};
use crate::simd::{Kernels, MatMut, Residual};
use crate::tensor::Shape;
use taopipe_runtime::{Rect, split_range};

/// A tiling F(m×m, r×r): the output tile side `m`, the kernel side `r`, and with them the
/// input tile side `t = m + r − 1` and the `t²` transform positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tile {
    /// F(2×2, 3×3) (points 0, ±1): 16 GEMMs per 4 outputs, 2.25× fewer multiplies than
    /// direct, with 16/36 of F(4×4)'s transformed weights.
    F2,
    /// F(4×4, 3×3) (points 0, ±1, ±2): 36 GEMMs per 16 outputs, 4× fewer multiplies.
    F4,
    /// F(2×2, 5×5) (points 0, ±1, ±2, as F(4×4, 3×3), whose `Bᵀ` it shares): 36 GEMMs per
    /// 4 outputs, 2.8× fewer multiplies than direct's 100.
    F2K5,
}

impl Tile {
    /// Output tile side `m`.
    pub const fn m(self) -> usize {
        match self {
            Tile::F2 | Tile::F2K5 => 2,
            Tile::F4 => 4,
        }
    }

    /// Kernel side `r`.
    pub const fn r(self) -> usize {
        match self {
            Tile::F2 | Tile::F4 => 3,
            Tile::F2K5 => 5,
        }
    }

    /// Input tile side `m + r − 1`.
    pub const fn t(self) -> usize {
        self.m() + self.r() - 1
    }

    /// Transform positions `ξ` (GEMMs per block): `t²`.
    pub const fn positions(self) -> usize {
        self.t() * self.t()
    }

    /// Output tiles of an `oh × ow` plane.
    pub const fn tiles(self, oh: usize, ow: usize) -> usize {
        oh.div_ceil(self.m()) * ow.div_ceil(self.m())
    }

    /// Whether the tiling can run `p`: an `r×r` kernel, stride 1, padding at most `r / 2`.
    pub fn applies(self, p: &Conv2dParams) -> bool {
        let (r, most) = (self.r(), self.r() / 2);
        p.kernel == (r, r) && p.stride == (1, 1) && p.padding.0 <= most && p.padding.1 <= most
    }

    /// `G[a][i]` (`t × r`).
    fn g(self, a: usize, i: usize) -> f64 {
        match self {
            Tile::F2 => G2[a][i],
            Tile::F4 => G4[a][i],
            Tile::F2K5 => G2K5[a][i],
        }
    }
}

/// Fewest input and output channels for [`pays_off`].
pub const MIN_CHANNELS: usize = 16;

/// Fewest input channels for Winograd where the channel-lanes path runs
/// ([`ConvAlgo::choose`](super::ConvAlgo::choose), a decision from measurements): with
/// fewer, the transforms cost more than they save against it (`lanes.rs`, whose
/// docs give the figures): SqueezeNet's `16 → 64` on 55×55 and `32 → 128` on 27×27 ran
/// F(4×4) in 0.695 and 0.633 ms against 0.603 and 0.565, GoogLeNet's `32 → 96` on 28×28
/// in 0.520 against 0.455; from 48 Winograd wins (`48 → 192` on 27×27 0.97 against 1.25,
/// `64 → 128` 0.91 against 1.13; 2-core AMD EPYC Zen 3 VM, AVX2, one layer alone).
pub const MIN_IN_CHANNELS: usize = 48;

/// Fewest input channels for F(2×2, 3×3) (a decision, from measurements): its transforms
/// and its 16 short GEMMs cost more than they save on a shallow reduction. SqueezeNet 1.1's
/// 13×13 expand convs (`48 → 192`, `64 → 256`) took 0.341 and 0.334 ms a frame on the
/// direct path against 0.380 and 0.385 with F(2×2) (`48`) and were level at `64` (0.585
/// against 0.591) at width 1 on the 2-core Zen 3 VM (with this rule, three more rounds:
/// 0.33–0.34 against 0.36–0.39 at width 1, 0.19–0.20 against 0.20–0.25 at width 2, the
/// `64` ones level); on the 16-core x86-64 Linux machine
/// (AVX-512) the direct path took 0.24–0.30 and 0.39–0.53 ms against 0.30–0.50 and
/// 0.47–0.72, three rounds (`frame --net squeezenet1_1 --profile --conv direct|auto`). The
/// layers F(2×2) was chosen for (VGG16's, ResNet50's and AlexNet's 13×13 and 14×14 convs,
/// 192 input channels or more, above) keep it; GoogLeNet's (96 to 160) too, unmeasured.
pub const MIN_CHANNELS_F2: usize = 96;

/// Fewest output tiles for [`pays_off`], in the tiling it picks (module docs).
pub const MIN_TILES: usize = 32;

/// A plane that fits one block is cut into two blocks of tile rows where its transformed
/// weights `U` take at most this many column blocks' budgets (4: twice L2, as the budget
/// is half of it), a decision from a measurement. Two blocks run private at width 2, each
/// rank transforming and multiplying its own rows, where one block runs shared and hands
/// its transformed input and its products from core to core. ResNet50's 28×28 `128 → 128`
/// layers (`U` 2.4 MB, 7 tile rows cut in 4 and 3) went from 0.59–0.73 to 0.49–0.52 ms
/// each at width 2 and from 0.91–1.01 to 0.96–1.06 at width 1 (`frame --net resnet50
/// --profile`, four interleaved runs each, 2-core AVX-512 Xeon VM with 2 MB of L2 per
/// core). Where `U` is large, reading it once per block costs more than that: VGG16's
/// 28×28 layers (`U` 19 and 38 MB), cut the same way, summed 2.0 ms less a frame at width
/// 2 and 2.0 ms more at width 1, so they stay whole.
pub const SPLIT_WEIGHT_BLOCKS: usize = 4;

/// Output channels per run of a block's GEMMs and output transforms (a decision, from a
/// measurement): half of `mc`, the GEMM's row block, but no more than the `c` input
/// channels rounded up to whole `mr`-row panels. A run's products take `t²·run` rows of
/// tiles, its packed input `t²·c`, which the blocks are sized to fit the cache budget; an
/// expanding layer's products outgrew them. AlexNet's `conv2` (F(2×2, 5×5), `64 → 192`, two
/// blocks of 7 tile rows: 3.5 MB of products in one run of 192 channels) went from
/// 3.15–3.24 to 2.98–3.05 ms a frame at width 1 and 1.90–2.03 to 1.75–1.91 at width 2;
/// VGG16's `conv2_1` (`64 → 128`) from 4.49–4.98 to 4.32–4.33 at width 2 and its `conv3_1`
/// (`128 → 256`) from 4.30–5.15 to 3.95–4.22, both level at width 1, as were its `conv4_1`
/// and AlexNet's `conv3` (`frame --profile`, two to five rounds taking turns, 2-core Zen 4
/// VM with 1 MB of L2). ResNet50's 3×3 convs keep their channel count: its runs do not
/// change.
fn run_channels(mc: usize, c: usize, mr: usize) -> usize {
    let run = (mc / 2).min(c.next_multiple_of(mr));
    run.max(mr) / mr * mr
}

/// Bound on `|y − y_exact| / Σ|w·x|` per output (module docs).
pub const ERROR_BOUND: f64 = 2e-5;

/// The tiling [`ConvAlgo::choose`](super::ConvAlgo::choose) picks for `p` on `input`, if
/// Winograd pays off there: for a 3×3 kernel F(4×4) where it makes at least
/// [`MIN_TILES`] tiles, else F(2×2) where that does; for a 5×5 kernel F(2×2, 5×5) where it
/// does (module docs).
pub fn pays_off(p: &Conv2dParams, input: Shape) -> Option<Tile> {
    if p.in_channels < MIN_CHANNELS || p.out_channels < MIN_CHANNELS {
        return None;
    }
    let o = p.out_shape(input).ok()?;
    [Tile::F4, Tile::F2, Tile::F2K5]
        .into_iter()
        .filter(|t| t.applies(p))
        .filter(|&t| t != Tile::F2 || p.in_channels >= MIN_CHANNELS_F2)
        .find(|t| t.tiles(o.h, o.w) >= MIN_TILES)
}

/// `G` of F(4×4, 3×3) (6×3).
const G4: [[f64; 3]; 6] = [
    [0.25, 0.0, 0.0],
    [-1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0],
    [-1.0 / 6.0, 1.0 / 6.0, -1.0 / 6.0],
    [1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0],
    [1.0 / 24.0, -1.0 / 12.0, 1.0 / 6.0],
    [0.0, 0.0, 1.0],
];

/// `G` of F(2×2, 3×3) (4×3).
const G2: [[f64; 3]; 4] = [
    [1.0, 0.0, 0.0],
    [0.5, 0.5, 0.5],
    [0.5, -0.5, 0.5],
    [0.0, 0.0, 1.0],
];

/// `G` of F(2×2, 5×5) (6×5): row `i` is `(1, p, p², p³, p⁴) / f` at point `p` of 0, 1, −1,
/// 2, −2 with F(4×4, 3×3)'s scale `f` (4, −6, −6, 24, 24), then the point at ∞.
const G2K5: [[f64; 5]; 6] = [
    [0.25, 0.0, 0.0, 0.0, 0.0],
    [-1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0],
    [-1.0 / 6.0, 1.0 / 6.0, -1.0 / 6.0, 1.0 / 6.0, -1.0 / 6.0],
    [1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0, 1.0 / 3.0, 2.0 / 3.0],
    [1.0 / 24.0, -1.0 / 12.0, 1.0 / 6.0, -1.0 / 3.0, 2.0 / 3.0],
    [0.0, 0.0, 0.0, 0.0, 1.0],
];

/// The block geometry shared by the transforms.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    pub(crate) c: usize,
    pub(crate) h: usize,
    pub(crate) w: usize,
    pub(crate) oh: usize,
    pub(crate) ow: usize,
    pub(crate) py: usize,
    pub(crate) px: usize,
    /// Tiles per row.
    pub(crate) tw: usize,
    pub(crate) tile: Tile,
}

/// A layer's transformed weights and blocking.
#[derive(Clone, Debug)]
pub(super) struct Winograd {
    geo: Geometry,
    th: usize,
    /// Blocks of tile rows ([`super::block_count`]).
    blocks: usize,
    nr: usize,
    /// Output channels.
    k: usize,
    /// Output channels per run of GEMMs and output transforms ([`run_channels`]).
    sub: usize,
    /// `U_ξ`, packed.
    weights: Vec<PackedA>,
}

impl Winograd {
    pub(super) fn new(
        tile: Tile,
        p: Conv2dParams,
        input: Shape,
        output: Shape,
        weights: &[f32],
        kernels: &Kernels,
        blocking: &Blocking,
    ) -> Winograd {
        let (c, k) = (p.in_channels, p.out_channels);
        let (t, xi) = (tile.t(), tile.positions());
        let (th, tw) = (output.h.div_ceil(tile.m()), output.w.div_ceil(tile.m()));
        let target = blocking.column_bytes / (xi * c * 4);
        let least = (4 * kernels.nr).div_ceil(tw);
        let blocks = super::block_count(th, (target / tw).max(least), least);
        // A one-block plane with small transformed weights is cut in two, so the ranks of a
        // pair each get a private block ([`SPLIT_WEIGHT_BLOCKS`]).
        let small = xi * k * c * 4 <= SPLIT_WEIGHT_BLOCKS * blocking.column_bytes;
        let blocks = if blocks == 1 && th >= 2 && small {
            2
        } else {
            blocks
        };
        // U[ξ][k][c] = (G g Gᵀ)[ξ] in f64.
        let r = tile.r();
        let mut u = vec![0.0f32; xi * k * c];
        for kk in 0..k {
            for cc in 0..c {
                let g = &weights[(kk * c + cc) * r * r..(kk * c + cc + 1) * r * r];
                for a in 0..t {
                    for b in 0..t {
                        let mut s = 0.0f64;
                        for i in 0..r {
                            for j in 0..r {
                                s += tile.g(a, i) * f64::from(g[i * r + j]) * tile.g(b, j);
                            }
                        }
                        u[((a * t + b) * k + kk) * c + cc] = s as f32;
                    }
                }
            }
        }
        let weights = (0..xi)
            .map(|xi| {
                PackedA::from_rows(
                    kernels.mr,
                    blocking.kc,
                    k,
                    c,
                    &u[xi * k * c..(xi + 1) * k * c],
                )
            })
            .collect();
        Winograd {
            geo: Geometry {
                c,
                h: input.h,
                w: input.w,
                oh: output.h,
                ow: output.w,
                py: p.padding.0,
                px: p.padding.1,
                tw,
                tile,
            },
            th,
            blocks,
            nr: kernels.nr,
            k,
            sub: run_channels(blocking.mc, c, kernels.mr),
            weights,
        }
    }

    fn block_tiles(&self, block: usize) -> Range<usize> {
        split_range(self.th, block, self.blocks)
    }

    /// Floats per row of products for `rows` tile rows: whole panels.
    fn ldm(&self, rows: usize) -> usize {
        (rows * self.geo.tw).next_multiple_of(self.nr)
    }

    /// The GEMMs `M_ξ = U_ξ · V_ξ` of packed block `packed` (`rows` tile rows, rows of
    /// [`Winograd::ldm`] floats) for each `ξ` of `xis`, restricted to output channels
    /// `channels`: `channels.len()` rows of `out` per `ξ`, in order.
    ///
    /// A short last panel of one vector of tiles computes those alone, by the narrow
    /// kernel; any other computes the whole panel (its lanes past the last tile hold
    /// products of zero lanes and are never read). With AVX-512's 32-wide panels the
    /// block of a 14×14 or 13×13 layer is 16 tiles, half a panel: ResNet50's layer3 3×3
    /// convs went from 1.41–1.45 to 1.26–1.29 ms and AlexNet's `conv3`–`conv5` from
    /// 1.52, 2.00 and 1.35 to 1.36, 1.81 and 1.23 (`frame --width 1 --profile`, means of
    /// four rounds taking turns with the build before, 2-core AVX-512 Xeon VM). Other
    /// short panels stay whole: 17 tiles (16 by the narrow kernel, one by the lane
    /// kernel) took layer2's 3×3 convs from 0.96–0.99 to 1.02–1.04 ms, and 2 tiles (the
    /// lane kernel) left layer1's level.
    #[allow(clippy::too_many_arguments)]
    fn gemms(
        &self,
        kernels: &Kernels,
        blocking: &Blocking,
        packed: &[f32],
        rows: usize,
        xis: Range<usize>,
        channels: Range<usize>,
        out: &mut MatMut<'_>,
    ) {
        let (tiles, ldm) = (rows * self.geo.tw, self.ldm(rows));
        let cols = match kernels.narrow_cols() {
            Some(one) if tiles % self.nr == one => tiles,
            _ => ldm,
        };
        let per_xi = packed_b_len(self.geo.c, ldm / self.nr, self.nr);
        let n = channels.len();
        for (i, xi) in xis.enumerate() {
            let mut view = out.sub(i * n, 0, n, cols);
            let v = &packed[xi * per_xi..(xi + 1) * per_xi];
            gemm(
                kernels,
                blocking,
                &self.weights[xi],
                channels.clone(),
                v,
                &mut view,
                None,
            );
        }
    }

    /// Transform positions: GEMMs per block.
    fn xi(&self) -> usize {
        self.geo.tile.positions()
    }

    /// Tile rows of the largest block (what the buffers are sized for).
    fn rows_per_block(&self) -> usize {
        self.th.div_ceil(self.blocks)
    }
}

impl Engine for Winograd {
    fn blocks(&self) -> usize {
        self.blocks
    }

    fn block_pixels(&self, block: usize) -> Range<usize> {
        let rows = self.block_tiles(block);
        let ow = self.geo.ow;
        let m = self.geo.tile.m();
        rows.start * m * ow..(rows.end * m).min(self.geo.oh) * ow
    }

    fn packed_len(&self) -> usize {
        let panels = (self.rows_per_block() * self.geo.tw).div_ceil(self.nr);
        self.xi() * packed_b_len(self.geo.c, panels, self.nr)
    }

    fn work_len(&self, channels: usize) -> usize {
        let tiles = self.rows_per_block() * self.geo.tw;
        self.xi() * channels.min(self.sub) * tiles.next_multiple_of(self.nr)
            + output_work_len(self.geo.tile, tiles, self.geo.tw)
    }

    fn pack_work_len(&self) -> usize {
        input_work_len(
            self.geo.tile,
            self.rows_per_block() * self.geo.tw,
            self.geo.tw,
        )
    }

    fn pack_units(&self, _block: usize) -> usize {
        self.geo.c
    }

    fn pack_rect(&self, block: usize, units: Range<usize>) -> Rect {
        let panels = (self.block_tiles(block).len() * self.geo.tw).div_ceil(self.nr);
        let ld = self.geo.c * self.nr;
        Rect::new(
            units.start * self.nr,
            ld,
            self.xi() * panels,
            units.len() * self.nr,
        )
    }

    fn pack_part(
        &self,
        kernels: &Kernels,
        x: &[f32],
        block: usize,
        units: Range<usize>,
        out: &mut MatMut<'_>,
        work: &mut [f32],
    ) {
        let rows = self.block_tiles(block);
        kernels.winograd_input(&self.geo, x, rows, units, out, work);
    }

    fn compute(
        &self,
        kernels: &Kernels,
        blocking: &Blocking,
        _x: &[f32],
        _pixels: Range<usize>,
        packed: &[f32],
        block: usize,
        channels: Range<usize>,
        out: &mut MatMut<'_>,
        epilogue: &BlockEpilogue<'_>,
        work: &mut [f32],
    ) {
        let rows = self.block_tiles(block);
        let ldm = self.ldm(rows.len());
        for s0 in (0..channels.len()).step_by(self.sub) {
            let n = self.sub.min(channels.len() - s0);
            let sub = channels.start + s0..channels.start + s0 + n;
            let xi = self.xi();
            let (m, scratch) = work.split_at_mut(xi * n * ldm);
            let mut view = MatMut::from_slice(m, ldm, xi * n, ldm);
            self.gemms(kernels, blocking, packed, rows.len(), 0..xi, sub, &mut view);
            let e = BlockEpilogue {
                bias: &epilogue.bias[s0..s0 + n],
                residual: epilogue.residual.sub(s0, 0, n, out.cols()),
                act: epilogue.act,
            };
            let mut dst = out.sub(s0, 0, n, out.cols());
            let m = Products {
                values: m,
                ldm,
                stride: n,
            };
            kernels.winograd_output(&self.geo, m, n, rows.clone(), &e, &mut dst, scratch);
        }
    }

    fn packed_weights(&self) -> usize {
        self.weights.iter().map(PackedA::len).sum()
    }

    fn two_step(&self) -> Option<&dyn TwoStep> {
        Some(self)
    }
}

/// The GEMMs by `ξ`, each over every output channel, then the output transform by
/// channels: a gang shares a block's GEMMs so that each `V_ξ` and `U_ξ` is read by one
/// rank, where groups of output channels would each read all of `V`.
impl TwoStep for Winograd {
    fn products_len(&self) -> usize {
        self.xi() * self.k * self.ldm(self.rows_per_block())
    }

    fn multiply_units(&self) -> usize {
        self.xi()
    }

    fn multiply_rect(&self, block: usize, units: Range<usize>) -> Rect {
        let ldm = self.ldm(self.block_tiles(block).len());
        Rect::new(units.start * self.k * ldm, ldm, units.len() * self.k, ldm)
    }

    fn multiply(
        &self,
        kernels: &Kernels,
        blocking: &Blocking,
        packed: &[f32],
        block: usize,
        units: Range<usize>,
        out: &mut MatMut<'_>,
    ) {
        let rows = self.block_tiles(block).len();
        self.gemms(kernels, blocking, packed, rows, units, 0..self.k, out);
    }

    fn finish(
        &self,
        kernels: &Kernels,
        products: &[f32],
        block: usize,
        channels: Range<usize>,
        out: &mut MatMut<'_>,
        epilogue: &BlockEpilogue<'_>,
        work: &mut [f32],
    ) {
        let rows = self.block_tiles(block);
        let ldm = self.ldm(rows.len());
        let m = Products {
            values: &products[channels.start * ldm..],
            ldm,
            stride: self.k,
        };
        let n = channels.len();
        kernels.winograd_output(&self.geo, m, n, rows, epilogue, out, work);
    }
}

/// Floats of work memory [`input_block`] needs for `tiles` tiles in rows of `tw`.
pub(crate) fn input_work_len(tile: Tile, tiles: usize, tw: usize) -> usize {
    let (m, t) = (tile.m(), tile.t());
    // (Four phases and six `bt_rows` rows whatever `m`.)
    strip_len(m, tw) + 4 * phase_len(tw) + t * t * tiles + 6 * tiles
}

/// A zero-padded input row: `m·(tw − 1) + t` values are read (`t − m` is 2 for a 3×3
/// kernel, 4 for 5×5), rounded up to whole `m`-float groups.
fn strip_len(m: usize, tw: usize) -> usize {
    m * (tw + 2)
}

/// Floats of one phase of a strip: a window's column `j < t` is entry `t_i + j / m` of
/// phase `j mod m`, and `j / m` is at most 2 (F(2×2, 5×5)'s `5 / 2`).
fn phase_len(tw: usize) -> usize {
    tw + 2
}

/// Floats of work memory [`output_block`] needs for `tiles` tiles in rows of `tw`.
pub(crate) fn output_work_len(tile: Tile, tiles: usize, tw: usize) -> usize {
    let (m, t) = (tile.m(), tile.t());
    let padded = tw.next_multiple_of(crate::simd::MAX_LANES);
    // The products' padding, four rows of outputs, one interleaved row.
    m * t * tiles + padded + 4 * padded + m * padded
}

/// `row[m·t + k] = xs[k·n + t]` for every tile `t < n` and output `k < m`: each tile's `m`
/// outputs side by side, from tile `from` on. The portable path's interleave, and every
/// path's tail.
#[inline(always)]
pub(crate) fn interleave_from(xs: &[f32], m: usize, n: usize, from: usize, row: &mut [f32]) {
    for (k, xk) in xs[..m * n].chunks_exact(n).enumerate() {
        for (t, &x) in xk.iter().enumerate().skip(from) {
            row[m * t + k] = x;
        }
    }
}

/// [`interleave_from`] from tile 0 for an ISA: whole steps of `lanes` tiles by `step(xs,
/// row, t)` where `m` is 2 or 4, the rest float by float. `step` may read tiles `t..t +
/// lanes` of each of the `m` rows of `xs` (`n` floats apart) and write `row[m·t..m·(t +
/// lanes)]`: this checks that those lie inside the slices, and calls it only for `t +
/// lanes <= n`.
#[inline(always)]
pub(crate) fn interleave_steps(
    xs: &[f32],
    m: usize,
    n: usize,
    row: &mut [f32],
    lanes: usize,
    mut step: impl FnMut(&[f32], &mut [f32], usize),
) {
    assert!(
        xs.len() >= m * n && row.len() >= m * n,
        "interleave: short buffers"
    );
    let whole = if m == 2 || m == 4 { n - n % lanes } else { 0 };
    for t in (0..whole).step_by(lanes) {
        step(xs, row, t);
    }
    interleave_from(xs, m, n, whole, row);
}

/// Row `k` of `Aᵀ` for `k < M` applied to `T` rows of `n` tiles, into rows `k` of `n`
/// floats of `out` (four rows; the first `M` are written).
#[inline(always)]
fn at_rows<const M: usize, const T: usize>(x: [&[f32]; T], n: usize, out: &mut [f32]) {
    let [x0, x1, x2, x3, x4, x5] = wide(x);
    let (x0, x1, x2, x3, x4, x5) = (&x0[..n], &x1[..n], &x2[..n], &x3[..n], &x4[..n], &x5[..n]);
    let [o0, o1, o2, o3] = split_rows::<4>(out, n);
    let (o0, o1, o2, o3) = (&mut o0[..n], &mut o1[..n], &mut o2[..n], &mut o3[..n]);
    for t in 0..n {
        let col = [x0[t], x1[t], x2[t], x3[t], x4[t], x5[t]];
        o0[t] = at::<M, T>(0, col);
        o1[t] = at::<M, T>(1, col);
        if M == 4 {
            o2[t] = at::<M, T>(2, col);
            o3[t] = at::<M, T>(3, col);
        }
    }
}

/// Row `k` of `Bᵀ` (`T × T`, `T` = 6 or 4) applied to one column `x` of an input tile
/// (its first `T` values: see [`wide`]).
#[inline(always)]
fn bt<const T: usize>(k: usize, x: [f32; 6]) -> f32 {
    match (T, k) {
        (6, 0) => 4.0 * x[0] - 5.0 * x[2] + x[4],
        (6, 1) => (x[4] + x[3]) - 4.0 * (x[1] + x[2]),
        (6, 2) => (x[4] - x[3]) + 4.0 * (x[1] - x[2]),
        (6, 3) => (x[4] - x[2]) + 2.0 * (x[3] - x[1]),
        (6, 4) => (x[4] - x[2]) - 2.0 * (x[3] - x[1]),
        (6, _) => 4.0 * x[1] - 5.0 * x[3] + x[5],
        (_, 0) => x[0] - x[2],
        (_, 1) => x[1] + x[2],
        (_, 2) => x[2] - x[1],
        _ => x[1] - x[3],
    }
}

/// Row `k` of `Aᵀ` (`M × T`) applied to one column `m` of a tile's products (its first `T`
/// values). F(2×2, 5×5)'s two rows are F(4×4, 3×3)'s first two, but that the point at ∞
/// now adds to the last row.
#[inline(always)]
fn at<const M: usize, const T: usize>(k: usize, m: [f32; 6]) -> f32 {
    match (M, T, k) {
        (_, 6, 0) => m[0] + (m[1] + m[2]) + (m[3] + m[4]),
        (2, 6, _) => (m[1] - m[2]) + 2.0 * (m[3] - m[4]) + m[5],
        (_, 6, 1) => (m[1] - m[2]) + 2.0 * (m[3] - m[4]),
        (_, 6, 2) => (m[1] + m[2]) + 4.0 * (m[3] + m[4]),
        (_, 6, _) => (m[1] - m[2]) + 8.0 * (m[3] - m[4]) + m[5],
        (_, _, 0) => m[0] + (m[1] + m[2]),
        _ => (m[1] - m[2]) - m[3],
    }
}

/// `T ≤ 6` slices as six, the last repeated: the transforms' loops read six named slices
/// (each cut to the loop's length there) whatever `T`, and a `T < 6` formula never reads
/// the repeats.
#[inline(always)]
fn wide<const T: usize>(x: [&[f32]; T]) -> [&[f32]; 6] {
    std::array::from_fn(|i| x[i.min(T - 1)])
}

/// `out[t] = f(K, (x0[t], …))` for every `t`: one row of a transform over many tiles,
/// with the row `K` a constant so each row is its own straight-line loop. `for_each`, not
/// a `for` loop: with `for`, F(4×4)'s input transform ran about 15% slower
/// (`conv/w1/vgg.conv1_2` 16.0 against 14.2 ms in `cargo bench -p taopipe-nets`).
#[inline(always)]
fn row_k<const K: usize>(f: impl Fn(usize, [f32; 6]) -> f32, x: [&[f32]; 6], out: &mut [f32]) {
    let n = out.len();
    let [x0, x1, x2, x3, x4, x5] = x;
    let (x0, x1, x2, x3, x4, x5) = (&x0[..n], &x1[..n], &x2[..n], &x3[..n], &x4[..n], &x5[..n]);
    out.iter_mut()
        .enumerate()
        .for_each(|(t, o)| *o = f(K, [x0[t], x1[t], x2[t], x3[t], x4[t], x5[t]]));
}

/// Row `k` of a transform (`f`: [`bt`] or [`at`]) applied to `T` slices, into `out`.
#[inline(always)]
fn transform_row<const T: usize>(
    f: impl Fn(usize, [f32; 6]) -> f32,
    k: usize,
    x: [&[f32]; T],
    out: &mut [f32],
) {
    let x = wide(x);
    match k {
        0 => row_k::<0>(f, x, out),
        1 => row_k::<1>(f, x, out),
        2 => row_k::<2>(f, x, out),
        3 => row_k::<3>(f, x, out),
        4 => row_k::<4>(f, x, out),
        _ => row_k::<5>(f, x, out),
    }
}

/// `out[k][t] = Bᵀ[k] · (x0[t], …)`: the input transform along one axis, for every tile
/// at once, in one pass (`out` holds six rows of `n`; the first `T` are written).
#[inline(always)]
fn bt_rows<const T: usize>(x: [&[f32]; T], n: usize, out: &mut [f32]) {
    let [x0, x1, x2, x3, x4, x5] = wide(x);
    let (x0, x1, x2, x3, x4, x5) = (&x0[..n], &x1[..n], &x2[..n], &x3[..n], &x4[..n], &x5[..n]);
    let [o0, o1, o2, o3, o4, o5] = split_rows::<6>(out, n);
    let (o0, o1, o2) = (&mut o0[..n], &mut o1[..n], &mut o2[..n]);
    let (o3, o4, o5) = (&mut o3[..n], &mut o4[..n], &mut o5[..n]);
    for t in 0..n {
        let col = [x0[t], x1[t], x2[t], x3[t], x4[t], x5[t]];
        o0[t] = bt::<T>(0, col);
        o1[t] = bt::<T>(1, col);
        o2[t] = bt::<T>(2, col);
        o3[t] = bt::<T>(3, col);
        if T == 6 {
            o4[t] = bt::<T>(4, col);
            o5[t] = bt::<T>(5, col);
        }
    }
}

/// The first `N` rows of `n` floats of `buf`, mutably.
#[inline(always)]
fn split_rows<const N: usize>(buf: &mut [f32], n: usize) -> [&mut [f32]; N] {
    let mut rest = &mut buf[..N * n];
    std::array::from_fn(|_| {
        let (row, tail) = std::mem::take(&mut rest).split_at_mut(n);
        rest = tail;
        row
    })
}

/// Packs the input transform `V = Bᵀ d B` of tile rows `rows` and input channels `channels`
/// into `out`: row `ξ·panels + p` of `out` is column panel `p` of `V_ξ` (`nr` tiles per
/// channel), restricted to these channels (column `(c − channels.start)·nr + lane`). Per
/// channel and tile row, the `m + 2` input rows are copied into a zero-padded strip,
/// transformed along x for every tile at once (stride-`m` windows), then along y
/// (contiguous), then scattered into the panels. A tile row's first two input rows are the
/// previous one's last two: their x transforms are copied, not redone. VGG16's Winograd
/// layers at width 1 went from 98.2–101.8 to 93.8–98.1 ms summed a frame (`frame --net
/// vgg16 --width 1 --profile`, three rounds taking turns with the build before, 2-core
/// AVX-512 Xeon VM); at width 2 level.
#[inline(always)]
pub(crate) fn input_block(
    g: &Geometry,
    x: &[f32],
    rows: Range<usize>,
    channels: Range<usize>,
    nr: usize,
    out: &mut MatMut<'_>,
    work: &mut [f32],
) {
    match g.tile {
        Tile::F2 => input_tiles::<2, 4>(g, x, rows, channels, nr, out, work),
        Tile::F4 => input_tiles::<4, 6>(g, x, rows, channels, nr, out, work),
        Tile::F2K5 => input_tiles::<2, 6>(g, x, rows, channels, nr, out, work),
    }
}

/// [`input_block`] for output tiles of side `M` (input tiles of side `T = M + 2`).
#[inline(always)]
fn input_tiles<const M: usize, const T: usize>(
    g: &Geometry,
    x: &[f32],
    rows: Range<usize>,
    channels: Range<usize>,
    nr: usize,
    out: &mut MatMut<'_>,
    work: &mut [f32],
) {
    let tw = g.tw;
    let tiles = rows.len() * tw;
    let panels = tiles.div_ceil(nr);
    let plane = g.h * g.w;
    let work = &mut work[..input_work_len(g.tile, tiles, tw)];
    let (strip, rest) = work.split_at_mut(strip_len(M, tw));
    let (phases, rest) = rest.split_at_mut(4 * phase_len(tw));
    let (r, v) = rest.split_at_mut(T * T * tiles);
    for c in channels.clone() {
        let xc = &x[c * plane..(c + 1) * plane];
        let lane0 = (c - channels.start) * nr;
        // Along x, tile row by tile row: r[i][jj][tile] = Bᵀ[jj] · (window of the tile in
        // its input row i).
        for (ri, ty) in rows.clone().enumerate() {
            for i in 0..T {
                // Tiles overlap by `T − M` rows: this tile row's first two input rows are
                // the last two of the one above, already transformed along x.
                if ri > 0 && i < T - M {
                    for jj in 0..T {
                        let from = ((i + M) * T + jj) * tiles + (ri - 1) * tw;
                        let to = (i * T + jj) * tiles + ri * tw;
                        r.copy_within(from..from + tw, to);
                    }
                    continue;
                }
                // Input row `M·ty + i − py`, zero-padded: strip[k] = x[·][k − px].
                let iy = (ty * M + i).wrapping_sub(g.py);
                strip.fill(0.0);
                if iy < g.h {
                    let n = g.w.min(strip.len() - g.px);
                    strip[g.px..g.px + n].copy_from_slice(&xc[iy * g.w..iy * g.w + n]);
                }
                // The M phases of the stride-M windows: phase q of tile t = strip[M·t + q].
                let pl = phase_len(tw);
                let [p0, p1, p2, p3] = split_rows::<4>(phases, pl);
                let (p0, p1) = (&mut p0[..pl], &mut p1[..pl]);
                let (p2, p3) = (&mut p2[..pl], &mut p3[..pl]);
                for (t, q) in strip.chunks_exact(M).take(pl).enumerate() {
                    p0[t] = q[0];
                    p1[t] = q[1];
                    if M == 4 {
                        p2[t] = q[2];
                        p3[t] = q[3];
                    }
                }
                let ph = [&*p0, &*p1, &*p2, &*p3];
                // Column j of tile t's window is strip[M·t + j]: phase j % M, one tile on
                // per M columns.
                let window: [&[f32]; T] = std::array::from_fn(|j| &ph[j % M][j / M..j / M + tw]);
                let mut o = split_rows::<T>(&mut r[i * T * tiles..(i + 1) * T * tiles], tiles);
                for (jj, oj) in o.iter_mut().enumerate() {
                    let dst = &mut oj[ri * tw..(ri + 1) * tw];
                    transform_row(bt::<T>, jj, window, dst);
                }
            }
        }
        // Along y for every tile of the block at once, then into the panels.
        for jj in 0..T {
            let col: [&[f32]; T] =
                std::array::from_fn(|i| &r[(i * T + jj) * tiles..(i * T + jj + 1) * tiles]);
            bt_rows(col, tiles, v);
            for ii in 0..T {
                let xi = ii * T + jj;
                let vals = &v[ii * tiles..(ii + 1) * tiles];
                let full = tiles / nr;
                out.copy_rows(xi * panels..xi * panels + full, lane0, vals, nr, nr);
                let tail = tiles - full * nr;
                if tail > 0 {
                    let last = out.row_mut(xi * panels + full);
                    last[lane0..lane0 + tail].copy_from_slice(&vals[full * nr..]);
                    // Lanes past the last tile are zero (computed, then dropped).
                    last[lane0 + tail..lane0 + nr].fill(0.0);
                }
            }
        }
    }
}

/// The products `M_ξ` of a block's GEMMs, as the output transform reads them: channel
/// `k`'s tiles under `ξ` are the row at `(ξ·stride + k)·ldm`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Products<'a> {
    pub(crate) values: &'a [f32],
    /// Floats from one row of tiles to the next (whole panels).
    pub(crate) ldm: usize,
    /// Rows from one `ξ` to the next: the channels multiplied together.
    pub(crate) stride: usize,
}

/// Applies the output transform `Y = Aᵀ m A` to the first `n` channels of `m` of tile rows
/// `rows`, then the epilogue, into `out` (`n` channels × the block's pixels). Per
/// channel and tile row: along y for every tile at once, then along x, interleaving the
/// `m` outputs of each tile into output rows by `interleave(xs, m, n, row)`: an ISA's
/// [`interleave_from`] from tile 0.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn output_block(
    g: &Geometry,
    m: Products<'_>,
    n: usize,
    rows: Range<usize>,
    e: &BlockEpilogue<'_>,
    out: &mut MatMut<'_>,
    work: &mut [f32],
    interleave: impl Fn(&[f32], usize, usize, &mut [f32]),
) {
    match g.tile {
        Tile::F2 => output_tiles::<2, 4>(g, m, n, rows, e, out, work, interleave),
        Tile::F4 => output_tiles::<4, 6>(g, m, n, rows, e, out, work, interleave),
        Tile::F2K5 => output_tiles::<2, 6>(g, m, n, rows, e, out, work, interleave),
    }
}

/// [`output_block`] for output tiles of side `M` (products of side `T = M + 2`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn output_tiles<const M: usize, const T: usize>(
    g: &Geometry,
    m: Products<'_>,
    n: usize,
    rows: Range<usize>,
    e: &BlockEpilogue<'_>,
    out: &mut MatMut<'_>,
    work: &mut [f32],
    interleave: impl Fn(&[f32], usize, usize, &mut [f32]),
) {
    let tw = g.tw;
    let tiles = rows.len() * tw;
    let oy0 = rows.start * M;
    let work = &mut work[..output_work_len(g.tile, tiles, tw)];
    // Rows of whole vectors, from the products on: each step's loads then read whole
    // stores of the step before, which the store buffer hands on (a tail stored float by
    // float stalled them: `perf annotate` put a third of the output transform's time on
    // one load). The lanes past `tw` transform values of the next row (or stale ones past
    // the last), never written to the output.
    let padded = tw.next_multiple_of(crate::simd::MAX_LANES);
    let (q, rest) = work.split_at_mut(M * T * tiles + padded);
    let (xs, orow) = rest.split_at_mut(4 * padded);
    for ch in 0..n {
        let bias = e.bias[ch];
        let dst = out.row_mut(ch);
        // Along y for every tile of the block: q[ii][jj][t] = Aᵀ[ii] · m[·][jj][t].
        for jj in 0..T {
            let c: [&[f32]; T] = std::array::from_fn(|i| {
                let at = ((i * T + jj) * m.stride + ch) * m.ldm;
                &m.values[at..at + tiles]
            });
            for ii in 0..M {
                let dst = &mut q[(ii * T + jj) * tiles..(ii * T + jj + 1) * tiles];
                transform_row(at::<M, T>, ii, c, dst);
            }
        }
        // Along x, interleaving each tile's M outputs into the output rows.
        for (ri, ty) in rows.clone().enumerate() {
            for ii in 0..M {
                let oy = ty * M + ii;
                if oy >= g.oh {
                    break;
                }
                let c: [&[f32]; T] = std::array::from_fn(|jj| {
                    let at = (ii * T + jj) * tiles + ri * tw;
                    &q[at..at + padded]
                });
                // Each of the M outputs for every tile at once, then side by side. One loop
                // computing a tile's M outputs and storing them together compiled to
                // scalar code, half of the output transform's time.
                at_rows::<M, T>(c, padded, xs);
                let row = &mut orow[..M * padded];
                interleave(&xs[..M * padded], M, padded, row);
                let at = (oy - oy0) * g.ow;
                let d = &mut dst[at..at + g.ow];
                let y = &row[..g.ow];
                // One match on the activation per row: each arm's loop vectorises.
                match e.residual {
                    Residual::From(r) => {
                        let r = &r.row(ch)[at..at + g.ow];
                        with_activation!(e.act, |act| {
                            for ((d, &y), &r) in d.iter_mut().zip(y).zip(r) {
                                *d = act((y + bias) + r);
                            }
                        });
                    }
                    // The output holds the residual: read each element, then overwrite it.
                    Residual::InPlace => with_activation!(e.act, |act| {
                        d.iter_mut()
                            .zip(y)
                            .for_each(|(d, &y)| *d = act((y + bias) + *d));
                    }),
                    Residual::None => with_activation!(e.act, |act| {
                        d.iter_mut().zip(y).for_each(|(d, &y)| *d = act(y + bias));
                    }),
                }
            }
        }
    }
}
