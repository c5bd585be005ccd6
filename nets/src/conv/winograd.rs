//! Winograd F(4×4, 3×3) for 3×3 stride-1 convolutions (Lavin & Gray 2016, interpolation
//! points 0, ±1, ±2, ∞).
//!
//! Each 4×4 output tile comes from a 6×6 input tile `d`: `Y = Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A`.
//! The 36 element-wise products, summed over input channels, are 36 GEMMs
//! `M_ξ[K × tiles] = U_ξ[K × C] · V_ξ[C × tiles]`: 36 multiplies per 16 outputs instead of
//! 144 (4×). The weights `U = G g Gᵀ` are transformed in f64 and packed, one [`PackedA`]
//! per ξ, at build; a block's input transform `V = Bᵀ d B` is packed straight into the
//! GEMM's column panels (tiles along the panel), and the output transform applies bias,
//! residual and ReLU as it stores.
//!
//! # Blocks
//! A block is whole rows of tiles, so its output is a contiguous run of each channel
//! plane. Rows per block: enough that the packed `V` of a block takes about half of L2,
//! but at least `4·NR` tiles (or the whole layer), since the GEMMs' `n` is the block's
//! tile count and a short `n` wastes the micro-kernel's columns; the rows are then shared
//! out evenly (`block_count` in the parent module).
//!
//! # Accuracy
//! The transforms' constants (up to 5 in `Bᵀ`, 8 in `Aᵀ`, 1/24 in `G`) amplify rounding:
//! measured against an f64 direct convolution the error stays below
//! [`ERROR_BOUND`]` · Σ|w·x|` per output (tested on random layers and on VGG16/ResNet50
//! shapes), about 5–10× the direct path's.
//!
//! # When it pays off
//! [`pays_off`]: at least [`MIN_CHANNELS`] input and output channels, and at least
//! [`MIN_TILES`] output tiles. With fewer channels the transforms (per input channel and
//! per output channel) cost more than the 4× saved in the GEMMs; with fewer tiles the
//! GEMMs' `n` (the tile count) is shorter than the micro-kernel's panel and most of its
//! columns are wasted: ResNet50's 7×7 layers (4 tiles) ran at 0.55× the direct path, the
//! 14×14 and 13×13 layers (16 tiles) at 2× (measured: README, "Kernels").

use std::ops::Range;

use super::{Conv2dParams, Engine, TwoStep};
use crate::activation;
use crate::cache::Blocking;
use crate::gemm::{BlockEpilogue, PackedA, gemm, packed_b_len};
use crate::simd::{Kernels, MatMut, Residual};
use crate::tensor::Shape;
use taopipe_runtime::{Rect, split_range};

/// Output tile side.
const M: usize = 4;
/// Input tile side.
const T: usize = 6;
/// Transform positions (`T²`).
const XI: usize = T * T;

/// Fewest input and output channels for [`pays_off`].
pub const MIN_CHANNELS: usize = 16;

/// Fewest 4×4 output tiles for [`pays_off`].
pub const MIN_TILES: usize = 16;

/// Bound on `|y − y_exact| / Σ|w·x|` per output (module docs).
pub const ERROR_BOUND: f64 = 2e-5;

/// Whether F(4×4, 3×3) can run `p`: a 3×3 kernel, stride 1, padding at most 1.
pub fn applies(p: &Conv2dParams) -> bool {
    p.kernel == (3, 3) && p.stride == (1, 1) && p.padding.0 <= 1 && p.padding.1 <= 1
}

/// Whether [`ConvAlgo::choose`](super::ConvAlgo::choose) picks it for `p` on `input`
/// (module docs).
pub fn pays_off(p: &Conv2dParams, input: Shape) -> bool {
    applies(p)
        && p.in_channels >= MIN_CHANNELS
        && p.out_channels >= MIN_CHANNELS
        && p.out_shape(input)
            .is_ok_and(|o| o.h.div_ceil(M) * o.w.div_ceil(M) >= MIN_TILES)
}

/// `G` (6×3).
const G: [[f64; 3]; T] = [
    [0.25, 0.0, 0.0],
    [-1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0],
    [-1.0 / 6.0, 1.0 / 6.0, -1.0 / 6.0],
    [1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0],
    [1.0 / 24.0, -1.0 / 12.0, 1.0 / 6.0],
    [0.0, 0.0, 1.0],
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
    /// Output channels per run of 36 GEMMs and output transforms (bounds the work memory).
    sub: usize,
    /// `U_ξ`, packed.
    weights: Vec<PackedA>,
}

impl Winograd {
    pub(super) fn new(
        p: Conv2dParams,
        input: Shape,
        output: Shape,
        weights: &[f32],
        kernels: &Kernels,
        blocking: &Blocking,
    ) -> Winograd {
        let (c, k) = (p.in_channels, p.out_channels);
        let (th, tw) = (output.h.div_ceil(M), output.w.div_ceil(M));
        let target = blocking.column_bytes / (XI * c * 4);
        let least = (4 * kernels.nr).div_ceil(tw);
        let blocks = super::block_count(th, (target / tw).max(least), least);
        // U[ξ][k][c] = (G g Gᵀ)[ξ] in f64.
        let mut u = vec![0.0f32; XI * k * c];
        for kk in 0..k {
            for cc in 0..c {
                let g = &weights[(kk * c + cc) * 9..(kk * c + cc + 1) * 9];
                for a in 0..T {
                    for b in 0..T {
                        let mut s = 0.0f64;
                        for i in 0..3 {
                            for j in 0..3 {
                                s += G[a][i] * f64::from(g[i * 3 + j]) * G[b][j];
                            }
                        }
                        u[((a * T + b) * k + kk) * c + cc] = s as f32;
                    }
                }
            }
        }
        let weights = (0..XI)
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
            },
            th,
            blocks,
            nr: kernels.nr,
            k,
            sub: (blocking.mc / 2).max(kernels.mr) / kernels.mr * kernels.mr,
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
        rows.start * M * ow..(rows.end * M).min(self.geo.oh) * ow
    }

    fn packed_len(&self) -> usize {
        let panels = (self.rows_per_block() * self.geo.tw).div_ceil(self.nr);
        XI * packed_b_len(self.geo.c, panels, self.nr)
    }

    fn work_len(&self, channels: usize) -> usize {
        let tiles = self.rows_per_block() * self.geo.tw;
        XI * channels.min(self.sub) * tiles.next_multiple_of(self.nr)
            + output_work_len(tiles, self.geo.tw)
    }

    fn pack_work_len(&self) -> usize {
        input_work_len(self.rows_per_block() * self.geo.tw, self.geo.tw)
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
            XI * panels,
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
            let (m, scratch) = work.split_at_mut(XI * n * ldm);
            let mut view = MatMut::from_slice(m, ldm, XI * n, ldm);
            self.gemms(kernels, blocking, packed, rows.len(), 0..XI, sub, &mut view);
            let e = BlockEpilogue {
                bias: &epilogue.bias[s0..s0 + n],
                residual: epilogue.residual.sub(s0, 0, n, out.cols()),
                relu: epilogue.relu,
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

/// The 36 GEMMs by `ξ`, each over every output channel, then the output transform by
/// channels: a gang shares a block's GEMMs so that each `V_ξ` and `U_ξ` is read by one
/// rank, where groups of output channels would each read all of `V`.
impl TwoStep for Winograd {
    fn products_len(&self) -> usize {
        XI * self.k * self.ldm(self.rows_per_block())
    }

    fn multiply_units(&self) -> usize {
        XI
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
pub(crate) fn input_work_len(tiles: usize, tw: usize) -> usize {
    strip_len(tw) + M * (tw + 1) + XI * tiles + T * tiles
}

/// A zero-padded input row: `4·tw + 2` values are read, rounded up to whole 4-float groups.
fn strip_len(tw: usize) -> usize {
    M * (tw + 2)
}

/// Floats of work memory [`output_block`] needs for `tiles` tiles in rows of `tw`.
pub(crate) fn output_work_len(tiles: usize, tw: usize) -> usize {
    M * T * tiles + M * tw
}

/// `out[k][t] = Bᵀ[k] · (x0[t], …, x5[t])`: the input transform along one axis, for
/// every tile at once (`out` is `6 × n`).
#[inline(always)]
fn bt_rows(x: [&[f32]; T], n: usize, out: &mut [f32]) {
    let x: [&[f32]; T] = std::array::from_fn(|i| &x[i][..n]);
    let (o0, rest) = out[..T * n].split_at_mut(n);
    let (o1, rest) = rest.split_at_mut(n);
    let (o2, rest) = rest.split_at_mut(n);
    let (o3, rest) = rest.split_at_mut(n);
    let (o4, o5) = rest.split_at_mut(n);
    for t in 0..n {
        let [x0, x1, x2, x3, x4, x5] = [x[0][t], x[1][t], x[2][t], x[3][t], x[4][t], x[5][t]];
        o0[t] = 4.0 * x0 - 5.0 * x2 + x4;
        o1[t] = (x4 + x3) - 4.0 * (x1 + x2);
        o2[t] = (x4 - x3) + 4.0 * (x1 - x2);
        o3[t] = (x4 - x2) + 2.0 * (x3 - x1);
        o4[t] = (x4 - x2) - 2.0 * (x3 - x1);
        o5[t] = 4.0 * x1 - 5.0 * x3 + x5;
    }
}

/// Packs the input transform `V = Bᵀ d B` of tile rows `rows` and input channels `channels`
/// into `out`: row `ξ·panels + p` of `out` is column panel `p` of `V_ξ` (`nr` tiles per
/// channel), restricted to these channels (column `(c − channels.start)·nr + lane`). Per channel and tile row, the six
/// input rows are copied into a zero-padded strip, transformed along x for every tile at
/// once (stride-4 windows), then along y (contiguous), then scattered into the panels.
/// A tile row's first two input rows are the previous one's last two: their x transforms
/// are copied, not redone. VGG16's Winograd layers at width 1 went from 98.2–101.8 to
/// 93.8–98.1 ms summed a frame (`frame --net vgg16 --width 1 --profile`, three rounds
/// taking turns with the build before, 2-core AVX-512 Xeon VM); at width 2 level.
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
    let tw = g.tw;
    let tiles = rows.len() * tw;
    let panels = tiles.div_ceil(nr);
    let plane = g.h * g.w;
    let (strip, rest) = work[..input_work_len(tiles, tw)].split_at_mut(strip_len(tw));
    let (phases, rest) = rest.split_at_mut(M * (tw + 1));
    let (r, v) = rest.split_at_mut(XI * tiles);
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
                // Input row `4·ty + i − py`, zero-padded: strip[k] = x[·][k − px].
                let iy = (ty * M + i).wrapping_sub(g.py);
                strip.fill(0.0);
                if iy < g.h {
                    let n = g.w.min(strip.len() - g.px);
                    strip[g.px..g.px + n].copy_from_slice(&xc[iy * g.w..iy * g.w + n]);
                }
                // The four phases of the stride-4 windows: phase q of tile t = strip[4t + q].
                let (p0, rest) = phases.split_at_mut(tw + 1);
                let (p1, rest) = rest.split_at_mut(tw + 1);
                let (p2, p3) = rest.split_at_mut(tw + 1);
                for (t, q) in strip.chunks_exact(M).take(tw + 1).enumerate() {
                    p0[t] = q[0];
                    p1[t] = q[1];
                    p2[t] = q[2];
                    p3[t] = q[3];
                }
                let window = [
                    &p0[..tw],
                    &p1[..tw],
                    &p2[..tw],
                    &p3[..tw],
                    &p0[1..],
                    &p1[1..],
                ];
                let mut o: [&mut [f32]; T] =
                    split6(&mut r[i * T * tiles..(i + 1) * T * tiles], tiles);
                for (jj, oj) in o.iter_mut().enumerate() {
                    let dst = &mut oj[ri * tw..(ri + 1) * tw];
                    bt_row(jj, window, dst);
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

/// Six `n`-long rows of `buf`, mutably.
#[inline(always)]
fn split6(buf: &mut [f32], n: usize) -> [&mut [f32]; T] {
    let (o0, rest) = buf[..T * n].split_at_mut(n);
    let (o1, rest) = rest.split_at_mut(n);
    let (o2, rest) = rest.split_at_mut(n);
    let (o3, rest) = rest.split_at_mut(n);
    let (o4, o5) = rest.split_at_mut(n);
    [o0, o1, o2, o3, o4, o5]
}

/// Row `k` of `Bᵀ` applied to six slices, into `out`.
#[inline(always)]
fn bt_row(k: usize, x: [&[f32]; T], out: &mut [f32]) {
    let n = out.len();
    let [x0, x1, x2, x3, x4, x5] = x.map(|s| &s[..n]);
    let it = out.iter_mut().enumerate();
    match k {
        0 => it.for_each(|(t, o)| *o = 4.0 * x0[t] - 5.0 * x2[t] + x4[t]),
        1 => it.for_each(|(t, o)| *o = (x4[t] + x3[t]) - 4.0 * (x1[t] + x2[t])),
        2 => it.for_each(|(t, o)| *o = (x4[t] - x3[t]) + 4.0 * (x1[t] - x2[t])),
        3 => it.for_each(|(t, o)| *o = (x4[t] - x2[t]) + 2.0 * (x3[t] - x1[t])),
        4 => it.for_each(|(t, o)| *o = (x4[t] - x2[t]) - 2.0 * (x3[t] - x1[t])),
        _ => it.for_each(|(t, o)| *o = 4.0 * x1[t] - 5.0 * x3[t] + x5[t]),
    }
}

/// The products `M_ξ` of a block's 36 GEMMs, as the output transform reads them: channel
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
/// four outputs of each tile into output rows.
#[inline(always)]
pub(crate) fn output_block(
    g: &Geometry,
    m: Products<'_>,
    n: usize,
    rows: Range<usize>,
    e: &BlockEpilogue<'_>,
    out: &mut MatMut<'_>,
    work: &mut [f32],
) {
    let tw = g.tw;
    let tiles = rows.len() * tw;
    let oy0 = rows.start * M;
    let (q, orow) = work[..output_work_len(tiles, tw)].split_at_mut(M * T * tiles);
    for ch in 0..n {
        let bias = e.bias[ch];
        let with_residual = |y: f32, r: f32| {
            let v = (y + bias) + r;
            if e.relu { activation::relu(v) } else { v }
        };
        let dst = out.row_mut(ch);
        // Along y for every tile of the block: q[ii][jj][t] = Aᵀ[ii] · m[·][jj][t].
        for jj in 0..T {
            let c: [&[f32]; T] = std::array::from_fn(|i| {
                let at = ((i * T + jj) * m.stride + ch) * m.ldm;
                &m.values[at..at + tiles]
            });
            for ii in 0..M {
                at_row(
                    ii,
                    c,
                    &mut q[(ii * T + jj) * tiles..(ii * T + jj + 1) * tiles],
                );
            }
        }
        // Along x, interleaving each tile's four outputs into the output rows.
        for (ri, ty) in rows.clone().enumerate() {
            for ii in 0..M {
                let oy = ty * M + ii;
                if oy >= g.oh {
                    break;
                }
                let c: [&[f32]; T] = std::array::from_fn(|jj| {
                    let at = (ii * T + jj) * tiles + ri * tw;
                    &q[at..at + tw]
                });
                let row = &mut orow[..M * tw];
                for (t, o) in row.chunks_exact_mut(M).enumerate() {
                    let [m0, m1, m2, m3, m4, m5] =
                        [c[0][t], c[1][t], c[2][t], c[3][t], c[4][t], c[5][t]];
                    o[0] = m0 + (m1 + m2) + (m3 + m4);
                    o[1] = (m1 - m2) + 2.0 * (m3 - m4);
                    o[2] = (m1 + m2) + 4.0 * (m3 + m4);
                    o[3] = (m1 - m2) + 8.0 * (m3 - m4) + m5;
                }
                let at = (oy - oy0) * g.ow;
                let d = &mut dst[at..at + g.ow];
                let y = &row[..g.ow];
                match e.residual {
                    Residual::From(r) => {
                        let r = &r.row(ch)[at..at + g.ow];
                        for ((d, &y), &r) in d.iter_mut().zip(y).zip(r) {
                            *d = with_residual(y, r);
                        }
                    }
                    // The output holds the residual: read each element, then overwrite it.
                    Residual::InPlace => d
                        .iter_mut()
                        .zip(y)
                        .for_each(|(d, &y)| *d = with_residual(y, *d)),
                    Residual::None if !e.relu => {
                        d.iter_mut().zip(y).for_each(|(d, &y)| *d = y + bias);
                    }
                    Residual::None => {
                        d.iter_mut()
                            .zip(y)
                            .for_each(|(d, &y)| *d = activation::relu(y + bias));
                    }
                }
            }
        }
    }
}

/// Row `k` of `Aᵀ` applied to six slices, into `out`.
#[inline(always)]
fn at_row(k: usize, m: [&[f32]; T], out: &mut [f32]) {
    let n = out.len();
    let [m0, m1, m2, m3, m4, m5] = m.map(|s| &s[..n]);
    let it = out.iter_mut().enumerate();
    match k {
        0 => it.for_each(|(t, o)| *o = m0[t] + (m1[t] + m2[t]) + (m3[t] + m4[t])),
        1 => it.for_each(|(t, o)| *o = (m1[t] - m2[t]) + 2.0 * (m3[t] - m4[t])),
        2 => it.for_each(|(t, o)| *o = (m1[t] + m2[t]) + 4.0 * (m3[t] + m4[t])),
        _ => it.for_each(|(t, o)| *o = (m1[t] - m2[t]) + 8.0 * (m3[t] - m4[t]) + m5[t]),
    }
}
