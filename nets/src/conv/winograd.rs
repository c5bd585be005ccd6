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
//! # Transforms
//! Both transforms are vector code, one template for every ISA (`crate::simd`'s
//! `winograd.rs`): a vector of tiles side by side in a tile row at a time, in registers,
//! every sum in the order of the scalar formulas they replaced (the outputs of VGG16,
//! ResNet50, GoogLeNet and AlexNet kept their bits). The scalar versions swept each
//! transform over a whole block a row of a buffer at a time; on SqueezeNet's `16 → 64`
//! layer `perf record` put more time in them than in the GEMMs. With the vector ones, one
//! layer alone (ReLU, best of six rounds taking turns, 2-core AMD EPYC Zen 3 VM, AVX2):
//! F(4×4) on `64 → 64` 56×56 1.41 ms against 1.67, `128 → 128` 28×28 1.26 against 1.60,
//! `256 → 256` 14×14 1.19 against 1.54, `32 → 128` 27×27 0.48 against 0.62; in frames at
//! width 1 (tenth-percentile frame, four to six rounds taking turns with 1d9f1a8, `frame
//! --net NET --width 1`): VGG16 167.5 ms against 178.9, ResNet50 85.5 against 87.8,
//! GoogLeNet 27.0 against 27.7.
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
//! channel-lanes path runs, [`pays_off_beside_lanes`] on AVX2: [`MIN_IN_CHANNELS`] input
//! channels, and F(4×4) instead of F(2×2) on 13×13 and 14×14 planes; [`pays_off_avx512`]
//! on AVX-512: [`MIN_IN_CHANNELS`] and [`MIN_WORK_AVX512`]), then F(4×4) if it
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

use super::direct::WIDE_BLOCKS;
use super::{Conv2dParams, Engine, TwoStep};
use crate::cache::Blocking;
use crate::gemm::{BlockEpilogue, PackedA, gemm, packed_b_len};
use crate::simd::{Kernels, MatMut};
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
/// ([`ConvAlgo::choose`](super::ConvAlgo::choose) through [`pays_off_beside_lanes`], a
/// decision from measurements): with fewer, the transforms cost more than they save
/// against it (`lanes.rs`, whose docs give its figures). SqueezeNet's `16 → 64` on 55×55
/// ran level (F(4×4) 0.61–0.67 ms against 0.63–0.68 for channel lanes), its `32 → 128` on
/// 27×27 faster (0.50–0.52 against 0.58–0.64; `frame --net squeezenet1_1 --width 1
/// --profile --conv winograd|auto`, three rounds each taking turns, 2-core AMD EPYC Zen 3
/// VM, AVX2, with the vector transforms of `crate::simd`'s `winograd.rs`). Before those
/// transforms the threshold was 48: `32 → 128` then took 0.633 ms alone against 0.565.
pub const MIN_IN_CHANNELS: usize = 32;

/// Fewest input channels for F(4×4) on a plane of fewer than [`MIN_TILES`] tiles (but at
/// least half that: 13×13 and 14×14) where the channel-lanes path runs
/// ([`pays_off_beside_lanes`], a decision from measurements). With the vector transforms
/// F(4×4) beat F(2×2) on every such layer measured, its transformed weights read from
/// memory each frame notwithstanding (`frame --net NET --width 1 --profile`, `--conv
/// winograd` against `auto`, fastest of three rounds taking turns, 2-core AMD EPYC Zen 3
/// VM): VGG16's `512 → 512` 14×14 convs (38 MB) 4.5–4.9 ms against 7.8–7.9, ResNet50's
/// `256 → 256` 1.29–1.34 against 1.69–1.77, AlexNet's 13×13 convs 1.76, 2.38 and 1.60
/// against 2.40, 3.52 and 2.25, GoogLeNet's 14×14 ones 0.56–1.04 against 0.62–1.43, Tiny
/// YOLOv2's `conv8` (`1024 → 1024`, 151 MB) 16.3 against 24.8. It beat channel lanes on
/// SqueezeNet's 13×13 expands (`48 → 192` 0.31–0.33 against 0.32–0.34, `64 → 256`
/// 0.45–0.49 against 0.56–0.61) but lost on GoogLeNet's `32 → 64` and `32 → 128` on 14×14
/// (0.156 and 0.270 ms against 0.093 and 0.188): a 13×13 or 14×14 plane fills half the
/// vectors of the transforms (4 tiles a row, 8 lanes), which a deep reduction repays.
/// A 7×7 plane (4 tiles) stays with [`pays_off`]'s choice: ResNet50's `layer4` 3×3 convs
/// took 3.9–4.0 ms with F(4×4) against 2.8 on the direct path. On the 16-core x86-64 Linux
/// machine (AVX-512: 16 lanes, a quarter filled on such planes) F(4×4) ran level with
/// F(2×2) on AlexNet's 13×13 convs (1.55, 2.07 and 1.44 ms against 1.56, 2.11 and 1.46)
/// and lost on GoogLeNet's 14×14 ones (`inception4a` 1.12 against 0.53), so the rule
/// stays with the lanes path (AVX2).
pub const SMALL_PLANE_F4_CHANNELS: usize = 48;

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
/// Where the channel-lanes path runs, all of them now take F(4×4)
/// ([`SMALL_PLANE_F4_CHANNELS`]).
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

/// Most rows of tiles in a block of a plane that the cache budget cuts into at least 16
/// blocks (`WIDE_BLOCKS`; a decision, from measurements): a 16-wide gang runs such a plane
/// private, and smaller blocks let a rank that runs slow (a neighbour, the hypervisor)
/// leave more of them to the others. VGG16's `conv1_2` (56 rows of tiles) was 16 blocks of
/// 3 or 4 rows (`super::block_count`); in 28 of 2 rows, at width 16 (`frame --net vgg16
/// --width 16 --frames 20 --profile`, one binary switched by a scratch variable, 16-core
/// x86-64 Linux machine) it took 2.11–2.26 ms against 2.20–2.82 in four rounds on a quiet
/// host and 2.64–2.90 against 3.66–4.95 in two on a busy one; the frames were level
/// (17.4–19.2 against 16.1–18.8 ms). Alone at width 1 (a scratch `Conv2d::compute_chunks`
/// loop, best of five 0.3 s runs, three rounds taking turns; 2-core AMD EPYC Zen 4 VM) it
/// ran in 19.6–20.1 ms against 19.6–20.3, at width 2 (`frame --profile`, three rounds)
/// in 11.9–13.3 against 13.5–16.0. Planes of fewer blocks keep theirs: `conv2_1` and
/// `conv2_2` (28 rows of tiles in 6 blocks, shared at width 16) in 14 blocks ran at width
/// 16 in 0.87–1.49 and 1.43–1.78 ms against 0.89–0.96 and 1.39–1.57 on the quiet host,
/// though in 1.23–1.75 and 2.12–2.24 against 2.01–3.59 and 3.42–6.42 on the busy one.
pub const WIDE_BLOCK_TILE_ROWS: usize = 2;

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

/// [`pays_off`] where the channel-lanes path runs
/// ([`ConvAlgo::choose`](super::ConvAlgo::choose)): only from [`MIN_IN_CHANNELS`] input
/// channels; there F(4×4) instead of F(2×2) or of no tiling on a plane where it makes
/// from half of [`MIN_TILES`] tiles, from [`SMALL_PLANE_F4_CHANNELS`] input channels.
pub fn pays_off_beside_lanes(p: &Conv2dParams, input: Shape) -> Option<Tile> {
    if p.in_channels < MIN_IN_CHANNELS {
        return None;
    }
    let f4 = Tile::F4;
    let small_plane_f4 = || {
        p.out_shape(input).is_ok_and(|o| {
            f4.applies(p)
                && p.in_channels >= SMALL_PLANE_F4_CHANNELS
                && p.out_channels >= MIN_CHANNELS
                && f4.tiles(o.h, o.w) >= MIN_TILES / 2
        })
    };
    match pays_off(p, input) {
        Some(Tile::F2) | None if small_plane_f4() => Some(f4),
        tile => tile,
    }
}

/// Fewest input channels times output tiles (in the tiling [`pays_off`] picks) for
/// Winograd on the AVX-512 path ([`pays_off_avx512`], a decision from measurements).
/// There the channel-lanes path runs at 86–90% of the FMA peak and the GEMMs of 16-lane
/// vectors outrun the transforms, so a shallow reduction on a small plane no longer
/// repays them: on a 2-core AMD EPYC Zen 5 VM (`frame --net NET --width 1 --profile
/// --conv auto|direct|lanes|winograd`, per layer) SqueezeNet's `32 → 128` on 27×27 (32 ×
/// 49 tiles) took 0.28 ms with F(4×4) against 0.23 with channel lanes, GoogLeNet's `32 →
/// 96` on 28×28 0.21–0.23 against 0.19; with more work Winograd still won: Tiny YOLOv2's
/// `32 → 64` on 208×208 1.42 against 1.70, ResNet50's `64 → 64` on 56×56 0.70 against
/// 0.94, GoogLeNet's `96 → 128` on 28×28 0.51–0.54 against 0.71 and its `96 → 208` on
/// 14×14 with F(2×2) 0.26 against 0.33.
pub const MIN_WORK_AVX512: usize = 2048;

/// [`pays_off`] on the AVX-512 path, where the channel-lanes path runs beside it
/// ([`ConvAlgo::choose`](super::ConvAlgo::choose)): from [`MIN_IN_CHANNELS`] input
/// channels and [`MIN_WORK_AVX512`]. Unlike [`pays_off_beside_lanes`] it keeps F(2×2) on
/// 13×13 and 14×14 planes: on the Zen 5 VM F(4×4) lost there on GoogLeNet's `inception4`
/// convs (0.35–0.62 ms against 0.26–0.55) and ResNet50's `layer3` ones (0.81–0.84 against
/// 0.74–0.83); it won only VGG16's `512 → 512`, by 0.2 ms over three layers (2.39–2.42
/// against 2.56–2.62), which this rule leaves to F(2×2).
pub fn pays_off_avx512(p: &Conv2dParams, input: Shape) -> Option<Tile> {
    if p.in_channels < MIN_IN_CHANNELS {
        return None;
    }
    let o = p.out_shape(input).ok()?;
    pays_off(p, input).filter(|t| p.in_channels * t.tiles(o.h, o.w) >= MIN_WORK_AVX512)
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
        } else if blocks >= WIDE_BLOCKS {
            blocks.max(th / WIDE_BLOCK_TILE_ROWS)
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
            let m = &mut work[..xi * n * ldm];
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
            kernels.winograd_output(&self.geo, m, n, rows.clone(), &e, &mut dst);
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
    ) {
        let rows = self.block_tiles(block);
        let ldm = self.ldm(rows.len());
        let m = Products {
            values: &products[channels.start * ldm..],
            ldm,
            stride: self.k,
        };
        let n = channels.len();
        kernels.winograd_output(&self.geo, m, n, rows, epilogue, out);
    }
}

/// Floats of work memory the input transform (`crate::simd`'s `winograd_input!`) needs
/// for `tiles` tiles in rows of `tw`: a zero-padded input row, the `m` phases of each
/// input row of the block, then a row of tiles per `ξ`, a vector longer.
pub(crate) fn input_work_len(tile: Tile, tiles: usize, tw: usize) -> usize {
    let (m, t) = (tile.m(), tile.t());
    let rows = tiles.div_ceil(tw);
    (m * rows + t - m + 1) * m * phase_len(tw) + t * t * (tiles + crate::simd::MAX_LANES)
}

/// Floats of one phase of an input row: a window's column `j < t` is entry `t_i + j / m`
/// of phase `j mod m`, `j / m` is at most 2 (F(2×2, 5×5)'s `5 / 2`), and a vector of
/// tiles is read from each.
pub(crate) fn phase_len(tw: usize) -> usize {
    tw + 2 + crate::simd::MAX_LANES
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
