//! The direct path: im2col straight into the micro-kernel's column panels, then the
//! blocked GEMM with the weights packed at build.
//!
//! A column block is a run of consecutive output pixels (flat `oy·OW + ox`): whole panels
//! of `NR` (the last may be short), as many as fit the cache budget, shared out evenly
//! between the blocks (`block_count` in the parent module). Packing it writes, for each
//! panel of `NR` pixels, the `C·kh·kw` rows of the im2col matrix restricted to those pixels: row `(c, ky, kx)`
//! holds `x[c, oy·sy + ky − py, ox·sx + kx − px]`, zero in the padding and past the last
//! pixel. A 1×1 stride-1 unpadded conv ("pointwise") packs plain copies of input rows,
//! channel by channel (`Direct::pack_pointwise`).

use std::ops::Range;

use super::{Conv2dParams, Engine};
use crate::cache::Blocking;
use crate::gemm::{
    BlockEpilogue, PackedA, STORE_BOUND_K, gemm, gemm_in_place, joins_tail, packed_b_len,
};
use crate::simd::{Isa, Kernels, MatMut, copy_runs, zero_runs};
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
    /// The GEMM reads the input in place (`reads_in_place`).
    in_place: bool,
}

/// Most output channels of a pointwise conv whose GEMM reads its whole column panels
/// straight from the input, a channel plane per row of B, instead of from a pack (a
/// decision, from a measurement); a block's short last panel is still packed. The pack
/// copies every input value once whatever the output channels, and with few of them it is
/// a large part of the layer: `perf` put the pack (`raw_runs`) at 22% of a `144 → 24` 1×1
/// conv on 56×56 (MobileNetV2's `features.3` projection) alone, its GEMM at 73%. A scratch
/// benchmark with a 6 × 16 AVX2 tile read B in place at these speeds against the layer
/// as built then (2-core AMD EPYC Zen 3 VM, best of 300 runs): `144 → 24` on 56×56 0.260
/// against 0.299 ms, `32 → 16` on 112×112 0.182 against 0.236, `96 → 24` on 56×56 0.172
/// against 0.207, `192 → 32` on 28×28 0.113 against 0.140, SqueezeNet's `128 → 16` on
/// 55×55 0.161 against 0.222 and `256 → 32` on 27×27 0.160 against 0.176; with more output
/// channels the pack is shared by more rows and wins (`960 → 160` on 7×7 0.176 against
/// 0.174, `576 → 96` on 14×14 0.247 against 0.262 but 0.234 packed by the same loop).
/// In frames (`frame --net NET --width W --frames 100 --profile`, five rounds, builds
/// taking turns, same VM): MobileNetV2's six projections of at most 32 channels summed
/// 1.16–1.25 ms a frame before, 0.95–1.04 after at width 1 (one round of the slow state
/// left out: 2.30 before), its frame 9.1–9.5 → 8.8–9.3 ms; SqueezeNet's four squeezes
/// of 16 and 32 channels 0.62–0.67 → 0.54–0.63, its frame level. Such a GEMM runs in the
/// column-panel order whatever its reduction (`gemm.rs`): row-panel order summed the
/// projections at 1.02–1.13 ms.
pub(super) const IN_PLACE_MAX_CHANNELS: usize = 32;

/// Most output channels of a pointwise conv that reads a small input in place (at most
/// [`IN_PLACE_SMALL_INPUT`] floats), where [`IN_PLACE_MAX_CHANNELS`] is the rule for any
/// input (a decision, from a measurement). A pack shared by up to 64 rows still costs
/// more than it saves on inputs that fit L2 a few times over; on larger ones, read in
/// place, each column panel's rows come from as many planes as the reduction has, too
/// many streams for the prefetcher. Alone (a scratch `Conv2d::forward` benchmark, best
/// of runs, fastest of three rounds taking turns; 2-core AMD EPYC Zen 3 VM, AVX2) in
/// place against packed:
/// `256 → 36` on 28×28 0.161 against 0.192 ms, `192 → 64` on 28×28 0.214 against 0.232,
/// `64 → 64` on 56×56 0.317 against 0.333, `192 → 64` on 14×14 0.052 against 0.058,
/// `480 → 64` 0.140 against 0.144, SqueezeNet's `256 → 48`, `384 → 48` and `512 → 64` on
/// 13×13 0.047, 0.076 and 0.129 against 0.053, 0.079 and 0.136; level within 1.5% for
/// `384 → 64` on 13×13 and 14×14 and `832 → 48` on 7×7; but `256 → 64` on 56×56 (3.2 MB of
/// input) 1.298 against 1.235, so it stays packed. In frames (`frame --width 1 --profile`,
/// fastest of three rounds each) the layers it moved went 3–16% faster: ResNet50's
/// `layer1.0.conv1` 0.332 → 0.299 ms, GoogLeNet's `conv2` 0.335 → 0.303 and its
/// `inception3a` 1×1 branch 0.242 → 0.208, MobileNetV2's `features.7` projection 0.064 →
/// 0.057, SqueezeNet's `features.9` squeeze 0.055 → 0.050; whole frames level within the
/// VM's ±1%.
pub(super) const IN_PLACE_SMALL_MAX_CHANNELS: usize = 64;

/// Most output channels of a pointwise conv that reads a small input in place where its
/// reduction is at least [`STORE_BOUND_K`] long (a decision, from measurements). Read in
/// place, the GEMM runs column panel by column panel and stores a tile into every output
/// row for each panel: with a short reduction those stores are most of its work, in as
/// many streams as output channels (`STORE_BOUND_K`'s reason). With the reductions in
/// blocks that fit L1d ([`Blocking::kc_in_place`]), alone as for
/// [`IN_PLACE_SMALL_MAX_CHANNELS`] (fastest of three rounds) in place against packed:
/// MobileNetV2's `576 → 96` and `384 → 96` on 14×14 0.2344 against 0.2479 ms and 0.1574
/// against 0.1619, GoogLeNet's `192 → 96` on 28×28 0.3144 against 0.3286, `480 → 96` and
/// `512 → 112` on 14×14 0.1955 against 0.2043 and 0.2458 against 0.2519; with 128 channels
/// level to 2% faster on 13×13 to 28×28 planes, but `960 → 160` and `960 → 320` on 7×7 2%
/// and 4% slower. In frames (`frame --width 1 --profile`, fastest of three rounds, the
/// rules taking turns) MobileNetV2's `features.11` to `13` projections went 3–7% faster,
/// GoogLeNet's `inception3a` and `4a` 3×3 reduces 10% and 5%. MobileNetV2's `16 → 96`
/// expansion on 112×112 ran 7% faster alone in place but 10–12% slower in frames, in four
/// rounds (0.71–0.80 against 0.65–0.68 ms), and the depthwise conv after it too: a
/// reduction of 16 is the store-bound case.
pub(super) const IN_PLACE_DEEP_MAX_CHANNELS: usize = 96;

/// Largest input, in floats (1 MiB), that [`IN_PLACE_SMALL_MAX_CHANNELS`] and
/// [`IN_PLACE_DEEP_MAX_CHANNELS`] apply to.
pub(super) const IN_PLACE_SMALL_INPUT: usize = 1 << 18;

/// Whether a conv's GEMM reads its input in place ([`IN_PLACE_MAX_CHANNELS`],
/// [`IN_PLACE_SMALL_MAX_CHANNELS`], [`IN_PLACE_DEEP_MAX_CHANNELS`]).
fn reads_in_place(p: &Conv2dParams, input: Shape) -> bool {
    let k = p.out_channels;
    let small = input.len() <= IN_PLACE_SMALL_INPUT;
    let deep = p.in_channels >= STORE_BOUND_K;
    is_pointwise(p)
        && (k <= IN_PLACE_MAX_CHANNELS
            || (small && k <= IN_PLACE_SMALL_MAX_CHANNELS)
            || (small && deep && k <= IN_PLACE_DEEP_MAX_CHANNELS))
}

/// The weights' reduction block: [`Blocking::kc_in_place`] where the GEMM reads its input
/// in place, else [`Blocking::kc_for`].
pub(super) fn reduction_block(p: &Conv2dParams, input: Shape, blocking: &Blocking) -> usize {
    let kdim = p.in_channels * p.kernel.0 * p.kernel.1;
    if reads_in_place(p, input) {
        blocking.kc_in_place(kdim)
    } else {
        blocking.kc_for(kdim)
    }
}

/// Output planes (in pixels) on which the direct path's long reductions keep the taller
/// GEMM tile ([`Direct::kernels`], a decision from measurements): 13×13 and 14×14, more
/// than two 48-column panels and less than one [`crate::gemm::STORE_BOUND_COLS`] block.
/// On a 2-core AMD EPYC Zen 5 VM (1 MB of L2 a core; `frame --net NET --width 1 --profile`,
/// two rounds taking turns, the faster of each layer), 12 × 32 against 8 × 48: SqueezeNet's
/// `512 → 1000` classifier on 13×13 0.708 against 0.777 ms (alone, a scratch
/// `Conv2d::compute_chunks` benchmark: 0.69–0.71 against 0.78) and its 13×13 squeezes
/// 0.019–0.050 against 0.021–0.054, ResNet50's 14×14 `layer3` 1×1 convs 0.399–0.420
/// against 0.417–0.439 and its `layer3.0.conv2` 1.011 against 1.054, GoogLeNet's
/// `inception4` 1×1 convs 0.023–0.216 against 0.025–0.226. The 7×7 planes kept 8 × 48:
/// 12 × 32 cost ResNet50's `layer4` convs 8–11% (0.956–0.979 → 1.054–1.066 ms for its
/// 3×3 ones) and GoogLeNet's `inception5` ones 7–21%; so did 28×28 and 56×56 (ResNet50's
/// `layer1` and `layer2` 1×1 convs 4–10%).
pub(super) const NARROW_TILE_COLS: Range<usize> = 97..256;

/// Fewest column panels in each half of a one-block plane cut in two (a decision, from a
/// measurement). ResNet50's first `64 → 64` 1×1 conv fits one block of 98 panels; shared
/// by a gang of two it ran 1.07× faster than on one rank, 0.165–0.169 ms a frame at width
/// 2. Cut into two private blocks, 0.101–0.102 (`frame --net resnet50 --width 2
/// --profile`, two interleaved runs each, 2-core AVX-512 Xeon VM). Planes of 25 panels
/// (its `128 → 512` 1×1 convs at 28×28), cut in 13 and 12, measured level with one block
/// replicated (`gang.rs`), so they stay whole. (That `64 → 64` conv now has
/// [`WIDE_BLOCKS`] blocks; this cut still serves planes of 32 to 63 panels.)
pub(super) const HALF_BLOCK_PANELS: usize = 16;

/// Fewest blocks of a plane of at least `WIDE_BLOCKS` times [`Direct::wide_block_panels`]
/// column panels (a decision, from measurements): one block per rank of a 16-wide gang,
/// which then runs the layer private, each rank multiplying what it packed. Planes that fit fewer blocks in the
/// cache budget ran on fewer ranks, or shared, each rank reading blocks that the others
/// packed. On a 16-core x86-64 Linux machine (`frame --width W --profile`, builds taking
/// turns):
/// - VGG16's `conv1_1` (3 input channels, 1568 panels, 6 blocks before) went from
///   0.83–0.96 to 0.37–0.52 ms a frame at width 16;
/// - ResNet50's `256 → 64` 1×1 convs on 56×56 (66 panels, 4 blocks before, shared at width
///   16) from 0.49–0.53 to 0.15–0.17 ms, its `layer2.0.conv1` from 0.68 to 0.23;
/// - whole frames, medians of rounds taking turns: ResNet50 at width 16 19.5 → 18.7 ms
///   with the stem and `conv1_1` cut (planes of 256 panels on; six rounds), then 19.4 →
///   17.8 with pointwise planes of 64 on (five rounds), 23.0 → 20.8 at width 8 (three).
///
/// The weights of these layers are small (at most 128 KB), so the extra blocks' passes over
/// them cost nothing measurable at widths 1 and 2 on the 2-core AVX-512 Xeon VM: the
/// ResNet50 layers concerned summed 21.7 and 21.7 ms a frame at width 1, 12.0 and 11.9 at
/// width 2 (two `--profile` rounds each), and ResNet50 frames at width 2 took 27.4 and
/// 27.5 ms (six rounds). Planes of 28×28 (17–25 panels) stay as they are: cut in two they
/// ran slower at width 2.
///
/// It applies before [`HALF_BLOCK_PANELS`]' cut. The other way round, a plane that fit one
/// block where L2 holds 2 MB (ResNet50's `64 → 64` and `64 → 256` 1×1 convs on 56×56) was
/// cut in two only, and the `64 → 64` ran at width 16 in 0.20–0.48 ms, against 0.26 at
/// width 1. With 16 blocks it took 0.11–0.14 ms, and the `64 → 256` with its residual
/// 0.19–0.44 against 0.41–0.69 (16-core x86-64 Linux machine, `TAOPIPE_BENCH_WIDTHS=16
/// cargo bench -p taopipe-nets --bench bench_main -- "conv/w16/rn.l1.c(1.first|3.ds)$"`,
/// three rounds, the builds taking turns).
pub(super) const WIDE_BLOCKS: usize = 16;

/// Fewest column panels per block of a pointwise conv where [`WIDE_BLOCKS`] applies.
pub(super) const WIDE_BLOCK_PANELS: usize = 4;

/// Whether `p` is a 1×1 stride-1 unpadded conv, whose pack copies plain input rows.
fn is_pointwise(p: &Conv2dParams) -> bool {
    p.kernel == (1, 1) && p.stride == (1, 1) && p.padding == (0, 0)
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
        let panels = output.plane().div_ceil(kernels.nr);
        let blocks = super::block_count(panels, most, 1);
        // A plane that fits one block but holds two of `HALF_BLOCK_PANELS` panels is cut in
        // two, so the ranks of a pair each get a private block (`HALF_BLOCK_PANELS`).
        let blocks = if panels >= WIDE_BLOCKS * Self::wide_block_panels(&p) {
            blocks.max(WIDE_BLOCKS)
        } else if blocks == 1 && panels >= 2 * HALF_BLOCK_PANELS {
            2
        } else {
            blocks
        };
        Direct {
            p,
            input,
            output,
            kdim,
            nr: kernels.nr,
            blocks,
            in_place: reads_in_place(&p, input),
            weights: PackedA::from_rows(
                kernels.mr,
                reduction_block(&p, input, blocking),
                p.out_channels,
                kdim,
                weights,
            ),
        }
    }

    /// The micro-kernel table for `p` on `input`, whose output plane is `cols` pixels.
    ///
    /// Above [`STORE_BOUND_K`] the GEMM runs column panel by column panel, streaming the
    /// block's weights past each: a wider tile ([`Isa::wide_kernels`], 8 × 48 on AVX-512)
    /// reads them a third fewer times. At or below it the GEMM runs row panel by row
    /// panel, streaming the packed pixels past each weight panel: a taller tile
    /// ([`Isa::kernels`], 12 × 32) reads those fewer times. Measured on a 2-core AVX-512
    /// Xeon VM (`frame --net resnet50 --profile`, five interleaved runs each): with 8 × 48
    /// on the direct layers whose reduction is over 192, ResNet50's layers summed 53.3 →
    /// 51.0 ms a frame at width 1 and 29.6 → 28.3 at width 2, its 7×7 stage gaining most
    /// (a 3×3 conv there 1.81 → 1.70 ms at width 1); AlexNet's `5×5` conv went 2.92 →
    /// 2.82 ms. ResNet50's stem (a reduction of 147 over 112×112 pixels) went the other
    /// way with 8 × 48, 1.73 → 1.85 ms. The Winograd GEMMs keep 12 × 32: 8 × 48 slowed
    /// ResNet50's 28×28 and 14×14 Winograd layers by a fifth or more (0.97 → 1.22 and
    /// 1.20 → 1.46 ms each).
    ///
    /// A GEMM that reads its input in place runs column panel by column panel whatever
    /// its reduction ([`crate::gemm::gemm_in_place`]), so it takes the wide tile too (a
    /// decision, from measurements): the few output channels of such convs (16 to 96)
    /// are whole 8-row panels more often than 12-row ones (16 = 12 + 4 leaves a 4-row
    /// tile of 8 accumulators). Alone with the input hot (a scratch
    /// `Conv2d::compute_chunks` loop, median of 0.4 s of runs, two rounds; 2-core AMD EPYC
    /// Zen 4 VM), 12 × 32 against 8 × 48: SqueezeNet's `128 → 16` on 55×55 0.135–0.139
    /// against 0.129–0.130 ms, `64 → 16` 0.067–0.068 against 0.065–0.074, `16 → 64`
    /// 0.070 against 0.068; MobileNetV2's `96 → 24` on 56×56 0.144–0.147 against
    /// 0.140–0.141, `144 → 24` 0.221–0.223 against 0.218–0.220, `32 → 16` on 112×112
    /// 0.163 against 0.148; `32 → 128` and `256 → 32` on 27×27 level. In frames (`frame
    /// --width 1 --frames 100 --profile`, the builds taking turns) SqueezeNet's 55×55 and
    /// 27×27 squeezes and 55×55 expands went 4–9% faster over ten rounds (`features_4`'s
    /// squeeze 0.142 → 0.133 ms; its layers summed 7.05 → 7.00 ms); MobileNetV2 (eight
    /// rounds) and GoogLeNet (six) stayed level, their layers within ±4%.
    ///
    /// Planes of [`NARROW_TILE_COLS`] keep the taller tile whatever the reduction.
    pub(super) fn kernels(
        isa: Isa,
        p: &Conv2dParams,
        input: Shape,
        cols: usize,
    ) -> &'static Kernels {
        let kdim = p.in_channels * p.kernel.0 * p.kernel.1;
        let by_columns = kdim > STORE_BOUND_K || reads_in_place(p, input);
        if by_columns && !NARROW_TILE_COLS.contains(&cols) {
            isa.wide_kernels()
        } else {
            isa.kernels()
        }
    }

    fn is_pointwise(&self) -> bool {
        is_pointwise(&self.p)
    }

    /// Fewest column panels per block where [`WIDE_BLOCKS`] applies: [`WIDE_BLOCK_PANELS`]
    /// for a pointwise conv, whose pack copies rows; [`HALF_BLOCK_PANELS`] for the others,
    /// whose blocks each pack the kernel's overlap rows again. AlexNet's `conv1` (11×11
    /// stride 4, 64 panels) cut into 16 blocks ran 4–7% slower at widths 1 and 2 (1.10 →
    /// 1.15 and 0.57 → 0.61 ms, `frame --net alexnet --profile`, three rounds taking turns).
    fn wide_block_panels(p: &Conv2dParams) -> usize {
        if is_pointwise(p) {
            WIDE_BLOCK_PANELS
        } else {
            HALF_BLOCK_PANELS
        }
    }

    /// Packs input channels `channels` (all of them but for a gathered pack) of the pixels
    /// `cols` (starting on a panel) into `out`, the view of their [`Engine::pack_rect`];
    /// `work` holds [`Engine::pack_work_len`] floats. A short last panel is zero-padded to
    /// `NR` columns where `pad` is set: the GEMM reads the padding, except where it joins that
    /// panel to the one before ([`joins_tail`]). Skipping it there spares ResNet50's 7×7
    /// layers most of a second panel's writes (47 zero columns of every row for 1 pixel).
    fn pack_columns(
        &self,
        x: &[f32],
        cols: Range<usize>,
        channels: Range<usize>,
        out: &mut MatMut<'_>,
        work: &mut [f32],
        pad: bool,
    ) {
        if cols.is_empty() || channels.is_empty() {
            return;
        }
        if self.is_pointwise() {
            self.pack_pointwise(x, cols, out.row_mut(0), pad);
            return;
        }
        let windowed = self.is_windowed().then(|| {
            let window = self.window(&cols);
            let split = &mut work[..window.len(self.p.in_channels)];
            self.split_rows(x, &window, split);
            (window, &*split)
        });
        let nr = self.nr;
        for (pi, j0) in cols.clone().step_by(nr).enumerate() {
            let panel = out.row_mut(pi);
            let width = nr.min(cols.end - j0);
            if width < nr && pad {
                for row in panel.chunks_exact_mut(nr) {
                    row[width..].fill(0.0);
                }
            }
            let segments = Segments {
                at: 0,
                width,
                oy: j0 / self.output.w,
                ox: j0 % self.output.w,
                ow: self.output.w,
            };
            match &windowed {
                Some((window, split)) => self.pack_windowed(window, split, segments, panel),
                None => self.pack_gathered(x, segments, channels.clone(), panel),
            }
        }
    }

    /// A pointwise conv's pack: channel by channel, each input row's pixels `cols` into
    /// that channel's row of every whole panel, then the short last panel zero-padded.
    /// Channel by channel reads the input in order; panel by panel read one run of each
    /// channel plane in turn, each a page or more from the last (a 56×56 plane is 12 KiB),
    /// so a panel of 256 channels touched 256 pages. ResNet50's `256 → 64` 1×1 conv on
    /// 56×56 went from 800–825 to 762–784 µs at width 1 and 394–408 to 380–389 at width 2
    /// (`cargo bench -p taopipe-nets --bench bench_main -- conv/w./rn.l1.c1`, two rounds
    /// taking turns with the build before); ResNet50's 1×1 stride-1 convs summed a frame
    /// went from 22.8–23.8 to 22.7–23.6 ms at width 1 and 12.8–13.6 to 12.6–13.2 at width
    /// 2 (`frame --net resnet50 --profile`, eight rounds each, 2-core AVX-512 Xeon VM).
    fn pack_pointwise(&self, x: &[f32], cols: Range<usize>, out: &mut [f32], pad: bool) {
        let (nr, kdim, plane) = (self.nr, self.kdim, self.input.plane());
        let full = cols.len() / nr;
        let panel = kdim * nr;
        // Read in place, the whole panels need no copy.
        if !self.in_place {
            for c in 0..kdim {
                let src = &x[c * plane + cols.start..];
                copy_runs(&mut out[c * nr..], panel, src, nr, full, nr, 1);
            }
        }
        let width = cols.len() - full * nr;
        if width > 0 {
            let last = &mut out[full * panel..(full + 1) * panel];
            let j0 = cols.start + full * nr;
            copy_runs(last, nr, &x[j0..], plane, kdim, width, 1);
            if pad {
                zero_runs(&mut last[width..], nr, kdim, nr - width);
            }
        }
    }

    /// Whether the pack goes through a [`Window`] (its docs): convs of at most
    /// [`WINDOW_MAX_CHANNELS`] input channels but pointwise ones, which copy plain rows.
    fn is_windowed(&self) -> bool {
        !self.is_pointwise() && self.p.in_channels <= WINDOW_MAX_CHANNELS
    }

    /// Whether the pack gathers straight from the input (neither pointwise nor windowed):
    /// its units are then input channels ([`GATHER_UNITS`]).
    fn gathers(&self) -> bool {
        !self.is_pointwise() && !self.is_windowed()
    }

    /// Pack units of a gathered pack: a run of input channels each.
    fn gather_units(&self) -> usize {
        self.p.in_channels.min(GATHER_UNITS)
    }

    /// The input channels of pack units `units` of a gathered pack.
    fn unit_channels(&self, units: Range<usize>) -> Range<usize> {
        let (c, n) = (self.p.in_channels, self.gather_units());
        if units.is_empty() {
            return 0..0;
        }
        split_range(c, units.start, n).start..split_range(c, units.end - 1, n).end
    }

    /// Column panels of the largest block (what the buffers are sized for).
    fn panels_per_block(&self) -> usize {
        self.output.plane().div_ceil(self.nr).div_ceil(self.blocks)
    }

    /// The panel's rows, one contiguous run of the window per (channel, tap, segment).
    fn pack_windowed(&self, window: &Window, split: &[f32], segments: Segments, panel: &mut [f32]) {
        let ((kh, kw), (sy, sx), nr) = (self.p.kernel, self.p.stride, self.nr);
        let taps = kh * kw;
        for s in segments {
            for c in 0..self.p.in_channels {
                for ky in 0..kh {
                    for kx in 0..kw {
                        let from = window.at(c, s.oy * sy + ky, kx % sx) + s.ox + kx / sx;
                        let row = (c * taps + ky * kw + kx) * nr + s.at;
                        panel[row..row + s.len].copy_from_slice(&split[from..from + s.len]);
                    }
                }
            }
        }
    }

    /// The rows of input channels `channels` of a panel (`panel` holds just those) straight
    /// from `x`: each (tap, segment) fixes the input row and columns for every channel,
    /// worked out once, then runs down the channels (rows `c·taps + tap`, `c` counted from
    /// the first of `channels`), zero in the padding.
    fn pack_gathered(
        &self,
        x: &[f32],
        segments: Segments,
        channels: Range<usize>,
        panel: &mut [f32],
    ) {
        let (h, w) = (self.input.h, self.input.w);
        let (kh, kw) = self.p.kernel;
        let ((sy, sx), (py, px)) = (self.p.stride, self.p.padding);
        let x = &x[channels.start * h * w..];
        let (taps, channels, nr) = (kh * kw, channels.len(), self.nr);
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
                        copy_runs(&mut dst[zlo..], step, &x[first..], h * w, channels, mid, sx);
                    }
                }
            }
        }
    }

    /// The window of input rows that the pixels `cols` read, for [`Direct::pack_columns`].
    fn window(&self, cols: &Range<usize>) -> Window {
        let ((kh, _), (sy, sx)) = (self.p.kernel, self.p.stride);
        let ow = self.output.w;
        let (oy0, oy1) = (cols.start / ow, (cols.end - 1) / ow);
        let (rows, phase) = (
            (oy1 - oy0) * sy + kh,
            (self.input.w + 2 * self.p.padding.1).div_ceil(sx),
        );
        Window {
            top: oy0 * sy,
            rows,
            phases: sx,
            phase,
        }
    }

    /// Copies the window's rows of `x` into `split`, zero-padded and split by column
    /// phase (see [`Window`]).
    fn split_rows(&self, x: &[f32], window: &Window, split: &mut [f32]) {
        let (h, w) = (self.input.h, self.input.w);
        let ((py, px), sx) = (self.p.padding, self.p.stride.1);
        for c in 0..self.p.in_channels {
            for r in 0..window.rows {
                let dst = &mut split[window.at(c, window.top + r, 0)..][..sx * window.phase];
                let iy = (window.top + r).wrapping_sub(py);
                if iy >= h {
                    dst.fill(0.0);
                    continue;
                }
                let src = &x[c * h * w + iy * w..][..w];
                for (q, phase) in dst.chunks_exact_mut(window.phase).enumerate() {
                    // Phase entry `i` is padded column `q + sx·i`, input column
                    // `q + sx·i − px`: inside the row for `i` in `lo..hi`.
                    let lo = px.saturating_sub(q).div_ceil(sx);
                    let hi = (w + px).saturating_sub(q).div_ceil(sx).max(lo);
                    phase[..lo].fill(0.0);
                    phase[hi..].fill(0.0);
                    if hi > lo {
                        copy_runs(
                            &mut phase[lo..hi],
                            0,
                            &src[q + sx * lo - px..],
                            0,
                            1,
                            hi - lo,
                            sx,
                        );
                    }
                }
            }
        }
    }
}

/// Pack units of a gathered pack (a decision, from a measurement): runs of input
/// channels, each covering every column panel of the block, so that a gang of up to
/// [`crate::kernel::gang_items`]'s 16 items shares the pack of a block of a panel or two.
/// By column panels, ResNet50's 7×7 3×3 convs (49 pixels: one panel and a joined tail)
/// were packed by at most two of a shared gang's ranks while the others waited, and
/// every rank then read the packed block from those ranks' caches: on a 16-core x86-64
/// Linux machine they ran 2.6× faster at width 16 than at width 1 (`frame --net
/// resnet50 --width 1|16 --profile`). By input channels, the best of four `--profile`
/// rounds at width 16 went from 1.00–1.09 to 0.44–0.55 ms each, the stride-2 3×3 convs
/// from 4.15 to 2.62 ms summed (second best of four), and six rounds of `frame --net
/// resnet50 --width 16 --frames 30`, builds taking turns, from medians of 17.3–20.1 ms
/// (median 18.8) to 14.8–21.8 (17.05). Widths 1 and 2, which replicate or own such
/// blocks, were level on a 2-core VM.
const GATHER_UNITS: usize = 16;

/// Convs with at most this many input channels pack through a [`Window`].
const WINDOW_MAX_CHANNELS: usize = 4;

/// The input rows a pack reads, zero-padded and split by column phase. For channel `c`
/// and padded row `top + r`, phase `q` holds padded columns `q + sx·i`, `phase` floats
/// from [`Window::at`]. Output pixel `(oy, ox)`'s tap `(ky, kx)` is then entry
/// `ox + kx / sx` of phase `kx mod sx` of padded row `oy·sy + ky`, so the tap's pixels
/// along an output row are one contiguous run whatever the stride and padding: no
/// zeroing or clipping per run, no gathering at a stride.
///
/// It pays where the input has few channels, the first conv of a net: there each
/// (tap, segment) of the gathered pack runs down only 3 channels, and its per-run
/// clipping dominated. A pack's time, best of 30 (scratch loop over `Conv2d::pack_all`,
/// 2-core AVX-512 VM): ResNet50's stem 0.70–0.93 → 0.28 ms (the whole conv 2.2–2.4 →
/// 1.71), AlexNet's `conv1` 0.47 → 0.25 (1.33 → 1.10), VGG16's `conv1_1` 0.34–0.40 →
/// 0.19. With 128 to 512 channels the split copy and the run per channel cost more
/// than they save (ResNet50's stride-2 3×3 convs 0.12–0.30 → 0.22–0.48 ms), so those
/// gather straight from the input.
struct Window {
    /// First padded input row.
    top: usize,
    rows: usize,
    /// Column phases: the conv's column stride.
    phases: usize,
    /// Floats of one phase of a row.
    phase: usize,
}

impl Window {
    /// Where phase `q` of padded row `row` of channel `c` starts.
    fn at(&self, c: usize, row: usize, q: usize) -> usize {
        c * self.channel() + ((row - self.top) * self.phases + q) * self.phase
    }

    /// Floats of one channel.
    fn channel(&self) -> usize {
        self.rows * self.phases * self.phase
    }

    /// Floats of the window of `channels` channels.
    fn len(&self, channels: usize) -> usize {
        channels * self.channel()
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
        packed_b_len(self.kdim, self.panels_per_block(), self.nr)
    }

    fn work_len(&self, _channels: usize) -> usize {
        0
    }

    /// The largest [`Window`] a pack reads: a block's pixels span at most
    /// `(pixels − 1) / OW + 2` output rows.
    fn pack_work_len(&self) -> usize {
        if !self.is_windowed() {
            return 0;
        }
        let most = (self.panels_per_block() * self.nr).min(self.output.plane());
        let rows = ((most - 1) / self.output.w + 2).min(self.output.h);
        self.window(&(0..(rows - 1) * self.output.w + 1))
            .len(self.p.in_channels)
    }

    /// Column panels, or input channels for a gathered pack ([`GATHER_UNITS`]).
    fn pack_units(&self, block: usize) -> usize {
        if self.gathers() {
            self.gather_units()
        } else {
            self.block_pixels(block).len().div_ceil(self.nr)
        }
    }

    /// The units' whole panels (one rect row for a pointwise pack, which copies across
    /// them, else one per panel), or, for a gathered pack, the units' channels' rows of
    /// every panel of the block, one rect row per panel.
    fn pack_rect(&self, block: usize, units: Range<usize>) -> Rect {
        let panel = self.kdim * self.nr;
        if self.gathers() {
            let rows = self.kdim / self.p.in_channels * self.nr;
            let channels = self.unit_channels(units);
            let panels = self.block_pixels(block).len().div_ceil(self.nr);
            Rect::new(channels.start * rows, panel, panels, channels.len() * rows)
        } else if self.is_pointwise() {
            Rect::row(units.start * panel, units.len() * panel)
        } else {
            Rect::new(units.start * panel, panel, units.len(), panel)
        }
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
        let pixels = self.block_pixels(block);
        // Read in place, a short last panel is multiplied alone.
        let pad = self.in_place || !joins_tail(kernels, pixels.len());
        if self.gathers() {
            let channels = self.unit_channels(units);
            self.pack_columns(x, pixels, channels, out, work, pad);
        } else {
            let first = pixels.start + units.start * self.nr;
            let cols = first..(pixels.start + units.end * self.nr).min(pixels.end);
            self.pack_columns(x, cols, 0..self.p.in_channels, out, work, pad);
        }
    }

    /// Read in place ([`reads_in_place`]), the whole panels of `pixels` come from
    /// `x`, a row of B per input channel plane, and a short last panel from `packed`.
    fn compute(
        &self,
        kernels: &Kernels,
        blocking: &Blocking,
        x: &[f32],
        pixels: Range<usize>,
        packed: &[f32],
        _block: usize,
        channels: Range<usize>,
        out: &mut MatMut<'_>,
        epilogue: &BlockEpilogue<'_>,
        _work: &mut [f32],
    ) {
        let w = &self.weights;
        if !self.in_place {
            gemm(kernels, blocking, w, channels, packed, out, Some(epilogue));
            return;
        }
        let (rows, whole) = (channels.len(), pixels.len() / self.nr * self.nr);
        let tail = pixels.len() - whole;
        let part = |cols: Range<usize>| BlockEpilogue {
            residual: epilogue.residual.sub(0, cols.start, rows, cols.len()),
            ..*epilogue
        };
        if whole > 0 {
            let (b, ldb) = (&x[pixels.start..], self.input.plane());
            let mut head = out.sub(0, 0, rows, whole);
            let e = part(0..whole);
            gemm_in_place(
                kernels,
                blocking,
                w,
                channels.clone(),
                b,
                ldb,
                &mut head,
                Some(&e),
            );
        }
        if tail > 0 {
            let mut last = out.sub(0, whole, rows, tail);
            let (b, e) = (&packed[whole * self.kdim..], part(whole..pixels.len()));
            gemm(kernels, blocking, w, channels, b, &mut last, Some(&e));
        }
    }

    fn packed_weights(&self) -> usize {
        self.weights.len()
    }

    fn reads_in_place(&self) -> bool {
        self.in_place
    }

    /// The GEMM's passes over the block's column panels: its panels, a short last one
    /// joined to the one before ([`joins_tail`]) counted with it, so that a unit never
    /// holds a lone unpadded tail.
    fn column_units(&self, kernels: &Kernels, block: usize) -> usize {
        let cols = self.block_pixels(block).len();
        cols.div_ceil(self.nr) - usize::from(joins_tail(kernels, cols))
    }

    fn unit_columns(
        &self,
        kernels: &Kernels,
        block: usize,
        units: Range<usize>,
    ) -> (Range<usize>, usize) {
        let pixels = self.block_pixels(block);
        let end = if units.end == self.column_units(kernels, block) {
            pixels.end
        } else {
            pixels.start + units.end * self.nr
        };
        let start = units.start * self.nr;
        (pixels.start + start..end, start * self.kdim)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::CacheSizes;

    /// Only pointwise convs of at most [`IN_PLACE_MAX_CHANNELS`] output channels, or of at
    /// most [`IN_PLACE_SMALL_MAX_CHANNELS`] on an input of at most [`IN_PLACE_SMALL_INPUT`]
    /// floats, or of at most [`IN_PLACE_DEEP_MAX_CHANNELS`] on such an input with a
    /// reduction of at least [`STORE_BOUND_K`], read their input in place (the bits either
    /// way: `gemm`'s and `simd`'s tests, and
    /// `conv::test::gangs_of_every_width_are_bit_identical`).
    #[test]
    fn few_channel_pointwise_convs_read_their_input_in_place() {
        let kernels = Isa::Portable.kernels();
        let blocking = Blocking::new(kernels, CacheSizes::DEFAULT);
        let small = Shape::new(8, 10, 10);
        // The largest input of 8 channels that is still small, and one row more.
        let rows = IN_PLACE_SMALL_INPUT / (8 * 64);
        let (fits, over) = (Shape::new(8, rows, 64), Shape::new(8, rows + 1, 64));
        let pointwise = |k| Conv2dParams::new(8, k, 1, 1, 0);
        // Reductions of `STORE_BOUND_K` and one less, on inputs as above.
        let (deep, shallow) = (
            |k| Conv2dParams::new(STORE_BOUND_K, k, 1, 1, 0),
            |k| Conv2dParams::new(STORE_BOUND_K - 1, k, 1, 1, 0),
        );
        let deep_rows = IN_PLACE_SMALL_INPUT / STORE_BOUND_K;
        let (deep_fits, deep_over) = (
            Shape::new(STORE_BOUND_K, deep_rows, 1),
            Shape::new(STORE_BOUND_K, deep_rows + 1, 1),
        );
        let deep_small = Shape::new(STORE_BOUND_K, 10, 10);
        let shallow_small = Shape::new(STORE_BOUND_K - 1, 10, 10);
        for (p, input, want) in [
            (pointwise(IN_PLACE_MAX_CHANNELS), over, true),
            (pointwise(IN_PLACE_MAX_CHANNELS + 1), small, true),
            (pointwise(IN_PLACE_MAX_CHANNELS + 1), over, false),
            (pointwise(IN_PLACE_SMALL_MAX_CHANNELS), fits, true),
            (pointwise(IN_PLACE_SMALL_MAX_CHANNELS + 1), small, false),
            (deep(IN_PLACE_DEEP_MAX_CHANNELS), deep_fits, true),
            (deep(IN_PLACE_DEEP_MAX_CHANNELS + 1), deep_small, false),
            (deep(IN_PLACE_DEEP_MAX_CHANNELS), deep_over, false),
            (shallow(IN_PLACE_DEEP_MAX_CHANNELS), shallow_small, false),
            (Conv2dParams::new(8, 16, 3, 1, 1), small, false),
            (Conv2dParams::new(8, 16, 1, 2, 0), small, false),
        ] {
            let output = p.out_shape(input).unwrap();
            let w = vec![0.5; p.weight_len()];
            let d = Direct::new(p, input, output, &w, kernels, &blocking);
            assert_eq!(d.in_place, want, "{p:?} on {input:?}");
        }
    }
}
