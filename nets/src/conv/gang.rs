//! How the ranks of a gang share one convolution.
//!
//! Ranks do not split the layer in fixed shares: they claim items of work as they get
//! free ([`TaskCtx::share`]), so a rank that starts late or runs slow (the OS or a
//! hypervisor took its core, a governor slowed it) takes fewer items instead of holding
//! the layer back. Which rank computes an item never changes its bits. Four schedules;
//! [`Schedule::choose`] takes the one whose busiest rank has the least work under an even
//! split (by whole blocks or whole weight panels), *private* unless *shared* wins by a
//! margin (`SHARED_MARGIN`), *unpacked* in place of shared where the GEMM reads its input
//! in place, and *replicated* in place of shared where packing is cheap:
//!
//! - **Private**: one item per block (for a pair, per group of a block's output channels:
//!   [`private_groups`]). The rank that claims it packs the block into its own scratch,
//!   unless it holds it already, and computes the item's output channels of it. No
//!   waiting. Best when there are many blocks (the early, large layers).
//! - **Shared**: a block's packing units (direct: column panels; Winograd: input channels)
//!   are packed, in up to [`gang_items`] items, into a buffer the gang shares;
//!   then its weight panels, in as many groups, are multiplied by it (a direct block
//!   with many columns also by chunks of columns: [`Conv2d::compute_split`]). Two buffers
//!   alternate, so packing block `b + 1` shares a phase with computing block `b`: `blocks +
//!   1` phases in all. Best when there are few blocks (late layers: VGG16's `conv4`/`conv5`
//!   are one block each).
//!
//! - **Unpacked**: where the shared schedule would win but the GEMM reads its input in
//!   place (`direct.rs`'s few-channel pointwise convs), so that a block's pack is only its
//!   short last panel. Its items are the shared schedule's compute items (groups of output
//!   channels by chunks of columns, [`Conv2d::compute_split`]) in one phase, with no
//!   shared buffer: each reads its columns from the input, and the item whose chunk ends
//!   the block packs that panel into its own scratch first. The shared schedule spent a
//!   phase, and the wait at its end, on that one panel; the replicated schedule made
//!   every rank read the whole input. SqueezeNet's 13×13 squeezes at width 2 took 5–9%
//!   less of their ranks' time, summed (`frame --net squeezenet1_1 --width 2 --trace`,
//!   300 frames, two rounds taking turns, 2-core AMD EPYC Zen 4 VM): `384 → 48` 0.066 →
//!   0.059–0.060 ms, `512 → 64` 0.149–0.151 → 0.142–0.143; the others level.
//!
//! - **Replicated**: where the shared schedule would win but packing a block is cheap
//!   against multiplying it ([`Schedule::choose`]'s rule), every rank packs each block into
//!   its own scratch, then ranks claim groups of its output channels, two per rank. Each
//!   rank then reads a block that its own core wrote and its L2 holds, instead of half of
//!   one from the other core. ResNet50's one-block direct layers at width 2, alone
//!   (`cargo bench -p taopipe-nets --bench bench_main -- "conv/w2/rn.l(3.c1|3.c2.s2|4.c1|4.c2)$"`),
//!   went from 0.42, 1.15, 0.40 and 0.99 ms to 0.35, 0.91, 0.36 and 0.91, and the whole
//!   frame from 27.0–28.8 to 26.1–27.5 ms (`frame --net resnet50 --width 2`, six
//!   interleaved runs each on a 2-core AVX-512 Xeon VM). A Winograd block's transform
//!   costs too much to do twice: replicated, ResNet50's 28×28 and 14×14 Winograd layers
//!   went from 0.57 and 0.69 to 0.75 and 0.80 ms (`--profile`), so two-step engines stay
//!   shared. It holds up under a CPU hog on the second core too: no phase waits for the
//!   slow rank's share of a pack. ResNet50 at width 2 with `taskset -c 1 sh -c 'while :;
//!   do :; done'` running took 100.0–102.4 ms a frame before this session's schedule
//!   changes (ede1023) and 80.7–88.0 after (fcb4f60), three interleaved runs each.
//!
//!   Winograd computes in two steps ([`TwoStep`]): its 36 GEMMs, shared out by transform
//!   position `ξ` (each over every output channel), into a products buffer the gang shares;
//!   then, one phase later, its output transform by groups of output channels: `blocks +
//!   2` phases. Groups of output channels doing all 36 GEMMs each read all of the packed
//!   block, once per group: 8 groups on 2 ranks read ResNet50's 14×14 `V` (1.2 MB) 8 times.
//!   Shared by `ξ`, each `V_ξ` and `U_ξ` is read once; at width 2 the 14×14 layers went
//!   from 0.96–0.99 to 0.77–0.89 ms and the 28×28 ones from 0.70–0.73 to 0.59–0.68
//!   (`frame --net resnet50 --width 2 --profile`, 2-core AVX-512 Xeon VM).
//!
//! With a CPU hog on the second of 2 cores, ResNet50 at width 2 went from 192 to 142–160
//! ms a frame when ranks began to claim items instead of taking even shares; with both
//! cores free, VGG16 went from 131 to 121 ms and AlexNet from 21.0 to 18.7 ms (2-core Zen 3
//! VM, `frame --width 2`, the mean of 3–4 runs' medians each). On 16 ranks the one shared
//! counter costs ResNet50 about 8% (`docs/kernel-log.md`, "Against ONNX
//! Runtime").
//!
//! Private and shared pack each input element once per frame whatever the width;
//! replicated packs it once per rank, a trade the issue that asked for one pack a frame
//! did not foresee, taken only where it measured faster. Every schedule computes each
//! output element by the operations of [`Kernel::compute_chunks`], so the result has its
//! bits.
//!
//! [`Kernel::compute_chunks`]: crate::Kernel::compute_chunks
//! [`TwoStep`]: super::TwoStep

use std::ops::Range;

use taopipe_runtime::{Rect, SharedSlice, TaskCtx, split_range};

use super::Conv2d;
use crate::gemm::BlockEpilogue;
use crate::kernel::{Scratch, Workspace, gang_items};
use crate::simd::MatMut;

/// Which schedule a gang runs (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Schedule {
    /// Whole blocks per rank.
    Private,
    /// Every block packed together, then output channels per rank.
    Shared,
    /// Every rank packs each block itself, then output channels per rank.
    Replicated,
    /// The input read in place: groups of output channels by chunks of columns, with
    /// nothing packed but a block's short last panel, by the item that multiplies it.
    Unpacked,
}

/// What packing one block costs against multiplying it, for [`Schedule::choose`]: `None`
/// where a block cannot be packed by every rank (a two-step engine).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PackCost {
    /// Floats a block's pack writes.
    pub(crate) packed: usize,
    /// FLOPs of a block's GEMMs.
    pub(crate) flops: u64,
    /// The GEMM reads the input in place ([`Schedule::Unpacked`]).
    pub(crate) in_place: bool,
}

/// What writing one packed float costs, in FLOPs of the GEMM at its rate (a decision,
/// from a measurement): ResNet50's `256 → 256` stride-2 3×3 im2col packed 0.52 M floats
/// in 222–237 µs where its 231 MFLOP took 1.13 ms, about 90 FLOPs a float; a 1×1 conv's
/// pack, a copy, about 40 (2-core AVX-512 Xeon VM, scratch timers around the steps).
const PACK_FLOPS: u64 = 64;

/// The fraction of the private schedule's busiest share that the shared one's must stay
/// under to be chosen (a decision, from a measurement). VGG16's `conv1_2` (Winograd, 19
/// blocks of 6 weight panels on 2 ranks: 10 blocks against 3 panels of 19, 60 against 57)
/// ran shared at 313–319 effective GFLOP/s on 2 workers against 230–233 on one; cut into
/// 28 blocks, which tie and so run private, at 482–511 (two interleaved report pairs on
/// the 2-core AVX-512 VM). A one-block layer on two ranks (VGG16's `conv5`, 86 panels:
/// 86 against 43) still runs shared.
const SHARED_MARGIN: (usize, usize) = (9, 10);

/// Groups of output channels per rank in the replicated schedule (a decision, from a
/// measurement), where they split the weight panels evenly ([`replicated_groups`]). Each
/// group reads the whole packed block again; one group per rank leaves a late rank's
/// share to it alone. Two and one measured level in ResNet50 frames at width 2
/// (27.3–28.3 against 26.8–28.4 ms, three runs each); four took its one-block layers from
/// −1% to +7% of two's time alone (the bench in the module docs).
const REPLICATED_GROUPS_PER_RANK: usize = 2;

/// Groups of output channels for the replicated schedule of `panels` weight panels on
/// `width` ranks: of the counts whose busiest rank holds the fewest panels when the
/// groups are dealt out evenly (`ceil(panels / g)` panels a group, `ceil(g / width)`
/// groups a rank), the nearest to [`REPLICATED_GROUPS_PER_RANK`] a rank, the larger on a
/// tie (more items to balance a late rank with). Four groups of SqueezeNet's six 32-channel
/// panels (`48 → 192` 3×3 on 13×13, channel lanes) were 2, 2, 1 and 1 panels: the pair's
/// busiest rank took 4 of 6, and at width 2 the layer ran only 1.48× faster than at width
/// 1 (0.079 against 0.117 ms, `bench/peers/run.sh --layers`); six groups of one panel
/// leave each rank 3.
pub(crate) fn replicated_groups(panels: usize, width: usize) -> usize {
    let want = REPLICATED_GROUPS_PER_RANK * width;
    let busiest = |g: usize| panels.div_ceil(g) * g.div_ceil(width);
    (1..=panels.max(1))
        .min_by_key(|&g| (busiest(g), g.abs_diff(want), std::cmp::Reverse(g)))
        .unwrap_or(1)
}

/// Output-channel groups each block of a private schedule is cut into, so that a pair
/// (rank 0 claiming from the front of the items, rank 1 from the back: [`TaskCtx::share`])
/// has at least [`gang_items`] items to balance with (a decision, from a measurement).
/// Items run block by block, so each rank works through the groups of its own end's
/// blocks and packs another block only where the two meet: at most one extra pack a rank.
///
/// With whole blocks, a layer of two blocks had no item to hand over, and the rank whose
/// core ran slower (its caches, the hypervisor, a neighbour) held the layer. In traces of
/// SqueezeNet at width 2 (`frame --trace`, 100 frames), its 27×27 `32 → 128` 1×1 conv
/// ended 44 µs apart on the two ranks of a 99 µs layer, and 5 µs apart of 61 µs with 4
/// groups; the `32 → 128` Winograd conv beside it 54 µs apart of 351, then 21 of 335.
/// Frames at width 2 with both cores free stayed level: SqueezeNet, MobileNetV2,
/// ResNet50, GoogLeNet and AlexNet within ±1% (tenth percentiles, five or six rounds
/// taking turns). With a CPU hog on the second core (`taskset -c 1 sh -c 'while :; do :;
/// done'`), which time-slices the second rank in and out, frames swung ±40% between
/// rounds; over eight rounds each SqueezeNet went from 27.0 to 26.0 ms and MobileNetV2
/// from 34.9 to 32.7 (medians of the rounds' tenth percentiles; 2-core AMD EPYC Zen 3
/// VM). Wider gangs all claim from the front, so groups of one block would go to
/// different ranks that each pack it: they keep whole blocks.
pub(crate) fn private_groups(blocks: usize, width: usize) -> usize {
    if width == 2 {
        gang_items(width).div_ceil(blocks.max(1))
    } else {
        1
    }
}

impl Schedule {
    /// The schedule whose busiest rank does the least: `ceil(blocks / w)` blocks, against
    /// `ceil(panels / w)` of the `panels` weight panels of every block. Shared is chosen only
    /// where its busiest rank does less than [`SHARED_MARGIN`] of the private one's: its
    /// phases end in waits that private blocks do not have.
    ///
    /// Where shared wins, unpacked replaces it if the engine reads its input in place; else
    /// replicated replaces it if the `w − 1` packs of a block that it adds cost at most half
    /// of the block's GEMMs (`pack` and [`PACK_FLOPS`]): at width 2 every one-block direct
    /// layer of ResNet50 and AlexNet, at 16 none. It must also have
    /// a group of output channels for every rank ([`replicated_groups`]): its items are
    /// whole weight panels, where the shared schedule cuts a block by columns too
    /// ([`Conv2d::compute_split`]). At width 16 SqueezeNet's channel-lanes 3×3 expands of
    /// 4 to 8 panels (cheap padded copies) ran replicated on 4 to 8 ranks: `32 → 128` on
    /// 27×27 took 169 µs at width 16 against 426 at width 1 (`frame --trace`, 16-core
    /// x86-64 Linux machine), its other 12 ranks idle; shared, 81 µs. SqueezeNet's frames
    /// went from 1.76–1.79 to 1.65–1.66 ms at width 16 and from 2.50–2.53 to 2.09–2.31 at
    /// width 8 (`frame --width W`, three and two rounds, the builds taking turns), the
    /// other nets level. A pair always has a group a rank where replicated wins, so width
    /// 2 is unchanged.
    pub(crate) fn choose(
        blocks: usize,
        panels: usize,
        width: usize,
        pack: Option<PackCost>,
    ) -> Schedule {
        if width <= 1 {
            return Schedule::Private;
        }
        // Busiest rank's share of the layer, as a fraction scaled by blocks · panels.
        let private = blocks.div_ceil(width) * panels;
        let shared = panels.div_ceil(width) * blocks;
        let (num, den) = SHARED_MARGIN;
        if shared * den >= private * num {
            return Schedule::Private;
        }
        let repeated = |p: PackCost| (width as u64 - 1) * p.packed as u64 * PACK_FLOPS;
        match pack {
            Some(p) if p.in_place => Schedule::Unpacked,
            Some(p) if 2 * repeated(p) <= p.flops && replicated_groups(panels, width) >= width => {
                Schedule::Replicated
            }
            _ => Schedule::Shared,
        }
    }
}

impl Conv2d {
    /// The rank's part of the layer (see [`crate::Kernel::run_rank`] and the module docs).
    pub(super) fn run_gang(
        &self,
        ctx: &TaskCtx<'_>,
        inputs: &[&[f32]],
        output: &SharedSlice<f32>,
        workspace: &Workspace,
        scratch: &mut Scratch,
    ) {
        let width = ctx.width();
        let panels = self.params.out_channels.div_ceil(self.channel_step());
        match Schedule::choose(self.engine.blocks(), panels, width, self.pack_cost()) {
            Schedule::Private => {
                let groups = private_groups(self.engine.blocks(), width);
                self.run_owned(ctx, inputs, output, scratch, groups);
            }
            Schedule::Shared => self.run_shared(ctx, inputs, output, workspace, scratch),
            Schedule::Replicated => {
                let groups = replicated_groups(panels, width);
                self.run_owned(ctx, inputs, output, scratch, groups);
            }
            Schedule::Unpacked => self.run_unpacked(ctx, inputs, output, scratch),
        }
    }

    /// Output channels per weight panel, the unit that ranks share channels out in.
    pub(super) fn channel_step(&self) -> usize {
        self.engine.channel_step(self.kernels)
    }

    /// What packing a block costs against its GEMMs, where every rank may pack it.
    pub(crate) fn pack_cost(&self) -> Option<PackCost> {
        self.engine.two_step().is_none().then(|| PackCost {
            packed: self.engine.packed_len(),
            flops: crate::Kernel::flops(self) / self.engine.blocks() as u64,
            in_place: self.engine.reads_in_place(),
        })
    }

    /// The private and replicated schedules (module docs): items are (block, one of
    /// `groups` groups of output channels), block by block in one phase; private is one
    /// group a block. No item waits for another rank: each packs what it multiplies into
    /// its own scratch, when it claims an item of a block it does not hold.
    fn run_owned(
        &self,
        ctx: &TaskCtx<'_>,
        inputs: &[&[f32]],
        output: &SharedSlice<f32>,
        scratch: &mut Scratch,
        groups: usize,
    ) {
        let k = self.params.out_channels;
        let blocks = self.engine.blocks();
        let groups = groups.min(k.div_ceil(self.channel_step()));
        let (packed, work) = self.scratch(k, scratch);
        let mut holds = None;
        ctx.share(
            1,
            |_| blocks * groups,
            |_, item| {
                let (block, group) = (item / groups, item % groups);
                if holds != Some(block) {
                    self.engine
                        .pack(self.kernels, inputs[0], block, packed, work);
                    holds = Some(block);
                }
                let channels = self.group_channels(group, groups);
                let pixels = self.engine.block_pixels(block);
                self.compute_block(inputs, packed, block, pixels, channels, output, work);
            },
        );
    }

    /// The unpacked schedule (module docs): items are (block, group of output channels,
    /// chunk of column units) as [`Conv2d::compute_split`] cuts each block, block by block
    /// in one phase. An item reads its whole column panels from the input; the one whose
    /// chunk ends the block packs the block's short last panel into its own scratch first.
    fn run_unpacked(
        &self,
        ctx: &TaskCtx<'_>,
        inputs: &[&[f32]],
        output: &SharedSlice<f32>,
        scratch: &mut Scratch,
    ) {
        let k = self.params.out_channels;
        let items = gang_items(ctx.width());
        let blocks = self.engine.blocks();
        let block_items = |block: usize| {
            let (groups, chunks) = self.compute_split(block, items);
            groups * chunks
        };
        let (packed, work) = self.scratch(k, scratch);
        ctx.share(
            1,
            |_| (0..blocks).map(block_items).sum(),
            |_, item| {
                let (mut block, mut item) = (0, item);
                let split = loop {
                    let split = self.compute_split(block, items);
                    if item < split.0 * split.1 {
                        break split;
                    }
                    item -= split.0 * split.1;
                    block += 1;
                };
                let (channels, pixels, at) = self.split_item(block, split, item);
                if pixels.end == self.engine.block_pixels(block).end {
                    self.engine
                        .pack(self.kernels, inputs[0], block, packed, work);
                }
                let packed = &packed[at..];
                self.compute_block(inputs, packed, block, pixels, channels, output, work);
            },
        );
    }

    /// Compute item `item` of block `block` cut into `(groups, chunks)`
    /// ([`Conv2d::compute_split`]): its output channels, its pixels, and where their part
    /// of the packed block starts.
    fn split_item(
        &self,
        block: usize,
        (groups, chunks): (usize, usize),
        item: usize,
    ) -> (Range<usize>, Range<usize>, usize) {
        let channels = self.group_channels(item / chunks, groups);
        let units = self.engine.column_units(self.kernels, block);
        let units = split_range(units, item % chunks, chunks);
        let (pixels, at) = self.engine.unit_columns(self.kernels, block, units);
        (channels, pixels, at)
    }

    /// The output channels of group `group` of `groups`, in whole weight panels.
    fn group_channels(&self, group: usize, groups: usize) -> Range<usize> {
        let (k, mr) = (self.params.out_channels, self.channel_step());
        let mine = split_range(k.div_ceil(mr), group, groups);
        (mine.start * mr).min(k)..(mine.end * mr).min(k)
    }

    /// The shared schedule (module docs): phase `p` packs block `p` and computes block
    /// `p − 1`; a two-step engine multiplies block `p − 1` and finishes block `p − 2`.
    fn run_shared(
        &self,
        ctx: &TaskCtx<'_>,
        inputs: &[&[f32]],
        output: &SharedSlice<f32>,
        workspace: &Workspace,
        scratch: &mut Scratch,
    ) {
        let k = self.params.out_channels;
        let blocks = self.engine.blocks();
        let panels = k.div_ceil(self.channel_step());
        let items = gang_items(ctx.width());
        let groups = panels.min(items);
        // A two-step engine, with the pair its products alternate in.
        let two = self
            .engine
            .two_step()
            .map(|t| (t, workspace.products(t.products_len())));
        // Phases from packing a block to writing its output.
        let lag = if two.is_some() { 2 } else { 1 };
        let multiplies = two.map_or(0, |(t, _)| t.multiply_units().min(items));
        let buffers = workspace.buffers(self.engine.packed_len());
        let work = scratch.take(self.work_len(k));
        // The block a step `behind` phases after packing works on in `phase`, if any.
        let block_at =
            |phase: usize, behind: usize| phase.checked_sub(behind).filter(|&b| b < blocks);
        // Each block's compute items: groups of output channels by chunks of its columns.
        let split = |block: usize| match two {
            Some(_) => (groups, 1),
            None => self.compute_split(block, items),
        };
        let outputs = |phase: usize| {
            block_at(phase, lag).map_or(0, |b| {
                let (groups, chunks) = split(b);
                groups * chunks
            })
        };
        let multiplied = |phase: usize| {
            block_at(phase, 1)
                .filter(|_| two.is_some())
                .map_or(0, |_| multiplies)
        };
        let packs =
            |phase: usize| block_at(phase, 0).map_or(0, |b| self.engine.pack_units(b).min(items));
        // Block b's packed buffer is written in phase b and read in phase b + 1; its
        // products (two steps) are written in phase b + 1 and read in phase b + 2. Each
        // alternates between two buffers, so a buffer is never written in the phase that
        // reads it.
        let len = |phase: usize| outputs(phase) + multiplied(phase) + packs(phase);
        ctx.share(blocks + lag, len, |phase, item| {
            let writes = outputs(phase);
            if item < writes {
                let block = phase - lag;
                match two {
                    Some((two, products)) => {
                        let channels = self.group_channels(item, groups);
                        let pixels = self.engine.block_pixels(block);
                        let products = products[block % 2]
                            .read()
                            .expect("the block is multiplied: its multiply phase finished");
                        let (kernels, block_products) = (self.kernels, &*products);
                        self.write_block(inputs, pixels, channels, output, |channels, out, e| {
                            two.finish(kernels, block_products, block, channels, out, e);
                        });
                    }
                    None => {
                        let (channels, pixels, at) = self.split_item(block, split(block), item);
                        let packed = buffers[block % 2]
                            .read()
                            .expect("the block is packed: its packing phase finished");
                        let packed = &packed[at..];
                        self.compute_block(inputs, packed, block, pixels, channels, output, work);
                    }
                }
                return;
            }
            let item = item - writes;
            if let Some((two, products)) = two
                && item < multiplied(phase)
            {
                let block = phase - 1;
                let units = split_range(two.multiply_units(), item, multiplies);
                let packed = buffers[block % 2]
                    .read()
                    .expect("the block is packed: its packing phase finished");
                let mut claim = products[block % 2]
                    .write_rect(two.multiply_rect(block, units.clone()))
                    .expect("items multiply disjoint units of a block");
                let mut view = MatMut::from_rect(&mut claim);
                two.multiply(
                    self.kernels,
                    &self.blocking,
                    &packed,
                    block,
                    units,
                    &mut view,
                );
                return;
            }
            let block = phase;
            let item = item - multiplied(phase);
            let units = split_range(self.engine.pack_units(block), item, packs(phase));
            let rect = self.engine.pack_rect(block, units.clone());
            let mut claim = buffers[block % 2]
                .write_rect(rect)
                .expect("items pack disjoint units of a block");
            let mut view = MatMut::from_rect(&mut claim);
            self.engine
                .pack_part(self.kernels, inputs[0], block, units, &mut view, work);
        });
    }

    /// How the compute phase of shared block `block` splits into about `items` items:
    /// (groups of output channels, chunks of its column units), `groups · chunks` items.
    /// An item reads its chunk of the packed block, which other ranks packed, and its
    /// group's weights. The split taken makes as many items as it can up to `items`, then
    /// the fewest such reads in all, `groups · packed + chunks · weights` floats (ties to
    /// fewer chunks). Groups alone made every rank of a wide gang read all of a block with
    /// many columns and few output channels (ResNet50's `512 → 128` 1×1 on 28×28: 885 KB
    /// of packed block for 16 KB of weights, per rank and block, at width 16). On the
    /// 16-core x86-64 Linux machine, best of four interleaved rounds of `TAOPIPE_BENCH_WIDTHS=16
    /// cargo bench -p taopipe-nets --bench bench_main -- conv/w16/` per layer, groups alone
    /// against this split: that conv 0.41 → 0.26 ms, the 56×56 stride-2 3×3 0.97 → 0.75,
    /// the 28×28 `128 → 512` 1×1 0.24 → 0.22, `layer3`'s first 1×1 0.46 → 0.41, AlexNet's
    /// `conv2` 1.33 → 1.10 and `conv4` 0.87 → 0.68; the other layers within that
    /// machine's noise (±10%). A margin (split only where it cut the reads by a quarter)
    /// measured no better. On a 2-core Zen 4 VM (1 MB L2), widths 1 and 2 split nothing
    /// in ResNet50, AlexNet or VGG16.
    pub(crate) fn compute_split(&self, block: usize, items: usize) -> (usize, usize) {
        let panels = self.params.out_channels.div_ceil(self.channel_step());
        let units = self.engine.column_units(self.kernels, block);
        let (packed, weights) = (self.engine.packed_len(), self.engine.packed_weights());
        (1..=units.clamp(1, items))
            .map(|chunks| (panels.min(items.div_ceil(chunks)), chunks))
            .min_by_key(|&(groups, chunks)| {
                let reads = groups * packed + chunks * weights;
                (std::cmp::Reverse((groups * chunks).min(items)), reads)
            })
            .expect("one chunk at least")
    }

    /// Packed-block and work memory for computing `channels` channels.
    fn scratch<'s>(
        &self,
        channels: usize,
        scratch: &'s mut Scratch,
    ) -> (&'s mut [f32], &'s mut [f32]) {
        let packed_len = self.engine.packed_len().next_multiple_of(16);
        scratch
            .take(packed_len + self.work_len(channels))
            .split_at_mut(packed_len)
    }

    /// Work memory for packing a block and for computing `channels` channels of it.
    fn work_len(&self, channels: usize) -> usize {
        self.engine
            .work_len(channels)
            .max(self.engine.pack_work_len())
    }

    /// Computes `channels` × `pixels` of block `block` (all of its pixels, or those of
    /// column units whose part of the packed block `packed` starts with) into a claim of
    /// that tile of `output`.
    #[allow(clippy::too_many_arguments)]
    fn compute_block(
        &self,
        inputs: &[&[f32]],
        packed: &[f32],
        block: usize,
        pixels: Range<usize>,
        channels: Range<usize>,
        output: &SharedSlice<f32>,
        work: &mut [f32],
    ) {
        let x = inputs[0];
        self.write_block(
            inputs,
            pixels.clone(),
            channels,
            output,
            |channels, out, epilogue| {
                let (kernels, blocking) = (self.kernels, &self.blocking);
                self.engine.compute(
                    kernels, blocking, x, pixels, packed, block, channels, out, epilogue, work,
                );
            },
        );
    }

    /// Claims the tile of `output` that `channels` × `pixels` cover and hands it to
    /// `write` with the layer's epilogue for it.
    fn write_block(
        &self,
        inputs: &[&[f32]],
        pixels: Range<usize>,
        channels: Range<usize>,
        output: &SharedSlice<f32>,
        write: impl FnOnce(Range<usize>, &mut MatMut<'_>, &BlockEpilogue<'_>),
    ) {
        let plane = self.out_shape.plane();
        let rect = Rect::new(
            channels.start * plane + pixels.start,
            plane,
            channels.len(),
            pixels.len(),
        );
        let mut claim = output
            .write_rect(rect)
            .expect("ranks write disjoint tiles of a layer");
        let epilogue = BlockEpilogue {
            bias: &self.bias[channels.clone()],
            residual: self.residual_of(inputs, &channels, &pixels),
            act: self.params.act,
        };
        write(channels, &mut MatMut::from_rect(&mut claim), &epilogue);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_follow_the_busiest_rank() {
        let choose = |blocks, panels, width| Schedule::choose(blocks, panels, width, None);
        // One rank: always private.
        assert_eq!(choose(1, 86, 1), Schedule::Private);
        // Many blocks split evenly: private.
        assert_eq!(choose(28, 11, 2), Schedule::Private);
        // VGG16 conv5 (one Winograd block) on 2 ranks: shared.
        assert_eq!(choose(1, 86, 2), Schedule::Shared);
        // VGG16 conv1_2's 19 Winograd blocks of 6 panels on 2 ranks: 60 against 57 is
        // within the margin, so private.
        assert_eq!(choose(19, 6, 2), Schedule::Private);
        // 3 blocks on 2 ranks: 2 blocks for the busiest against 43 of 86 panels.
        assert_eq!(choose(3, 86, 2), Schedule::Shared);
        // 28 blocks of a 64-channel layer (11 panels) on 16 ranks: 2 blocks against 1 panel
        // of 11 each (2·11 = 22 against 1·28 = 28).
        assert_eq!(choose(28, 11, 16), Schedule::Private);
    }

    #[test]
    fn packs_are_replicated_while_they_cost_at_most_half_the_gemms() {
        // ResNet50's 256 → 256 stride-2 3×3 on 2 ranks: 7 panels of 2304 rows packed, 231
        // MFLOP (1 · 516 096 · 64 = 33 M, under half).
        let pack = Some(PackCost {
            packed: 2304 * 7 * 32,
            flops: 231_211_008,
            in_place: false,
        });
        assert_eq!(Schedule::choose(1, 22, 2, pack), Schedule::Replicated);
        // On 4 ranks 3 · 33 M is still under 116 M; on 5, 4 · 33 M is not.
        assert_eq!(Schedule::choose(1, 22, 4, pack), Schedule::Replicated);
        assert_eq!(Schedule::choose(1, 22, 5, pack), Schedule::Shared);
        // Never where private wins, nor for a two-step engine.
        assert_eq!(Schedule::choose(28, 11, 2, pack), Schedule::Private);
        assert_eq!(Schedule::choose(1, 1, 2, pack), Schedule::Private);
        assert_eq!(Schedule::choose(1, 22, 2, None), Schedule::Shared);
    }

    #[test]
    fn replicated_only_where_every_rank_gets_a_group() {
        // A cheap pack (a channel-lanes padded copy) of a one-block layer of 4 panels:
        // replicated on a pair, shared on 16 ranks, where 4 groups would leave 12 idle.
        let pack = Some(PackCost {
            packed: 26_912,
            flops: 1_000_000_000,
            in_place: false,
        });
        assert_eq!(Schedule::choose(1, 4, 2, pack), Schedule::Replicated);
        assert_eq!(Schedule::choose(1, 4, 4, pack), Schedule::Replicated);
        assert_eq!(Schedule::choose(1, 4, 16, pack), Schedule::Shared);
        // 16 panels give 16 ranks a group each.
        assert_eq!(Schedule::choose(1, 16, 16, pack), Schedule::Replicated);
        // Every pair that replicated before still does (a group a rank whenever it wins).
        for panels in 2..=64 {
            assert!(replicated_groups(panels, 2) >= 2, "{panels} panels");
        }
    }
}
