//! How the ranks of a gang share one convolution, packing each input block once.
//!
//! Ranks do not split the layer in fixed shares: they claim items of work as they get
//! free ([`TaskCtx::share`]), so a rank that starts late or runs slow (the OS or a
//! hypervisor took its core, a governor slowed it) takes fewer items instead of holding
//! the layer back. Which rank computes an item never changes its bits. Two schedules;
//! [`Schedule::choose`] takes the one whose busiest rank has the least work under an even
//! split (by whole blocks or whole weight panels), *private* unless *shared* wins by a
//! margin (`SHARED_MARGIN`):
//!
//! - **Private**: one item per block. The rank that claims it packs the block into its
//!   own scratch and computes every output channel of it. No waiting. Best when there are
//!   many blocks (the early, large layers).
//! - **Shared**: a block's packing units (direct: column panels; Winograd: input channels)
//!   are packed, in up to [`gang_items`] items, into a buffer the gang shares;
//!   then its weight panels, in as many groups, are multiplied by it. Two buffers
//!   alternate, so packing block `b + 1` shares a phase with computing block `b`: `blocks +
//!   1` phases in all. Best when there are few blocks (late layers: VGG16's `conv4`/`conv5`
//!   are one block each).
//!
//! With a CPU hog on the second of 2 cores, ResNet50 at width 2 went from 192 to 142–160
//! ms a frame when ranks began to claim items instead of taking even shares; with both
//! cores free, VGG16 went from 131 to 121 ms and AlexNet from 21.0 to 18.7 ms (2-core Zen 3
//! VM, `frame --width 2`, the mean of 3–4 runs' medians each). On 16 ranks the one shared
//! counter costs ResNet50 about 8% (README, "Against ONNX Runtime").
//!
//! Either way each input element is packed once per frame whatever the width, and each
//! output element is computed by the operations of [`Kernel::compute_chunks`], so the
//! result has its bits.
//!
//! [`Kernel::compute_chunks`]: crate::Kernel::compute_chunks

use std::ops::Range;

use taopipe_runtime::{Rect, SharedSlice, TaskCtx, split_range};

use super::Conv2d;
use crate::gemm::BlockEpilogue;
use crate::kernel::{Scratch, Workspace, gang_items};
use crate::simd::MatMut;

/// Which schedule a gang runs (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Schedule {
    /// Whole blocks per rank.
    Private,
    /// Every block packed together, then output channels per rank.
    Shared,
}

/// The fraction of the private schedule's busiest share that the shared one's must stay
/// under to be chosen (a decision, from a measurement). VGG16's `conv1_2` (Winograd, 19
/// blocks of 6 weight panels on 2 ranks: 10 blocks against 3 panels of 19, 60 against 57)
/// ran shared at 313–319 effective GFLOP/s on 2 workers against 230–233 on one; cut into
/// 28 blocks, which tie and so run private, at 482–511 (two interleaved report pairs on
/// the 2-core AVX-512 VM). A one-block layer on two ranks (VGG16's `conv5`, 86 panels:
/// 86 against 43) still runs shared.
const SHARED_MARGIN: (usize, usize) = (9, 10);

impl Schedule {
    /// The schedule whose busiest rank does the least: `ceil(blocks / w)` blocks, against
    /// `ceil(panels / w)` of the `panels` weight panels of every block. Shared is chosen only
    /// where its busiest rank does less than [`SHARED_MARGIN`] of the private one's: its
    /// phases end in waits that private blocks do not have.
    pub(crate) fn choose(blocks: usize, panels: usize, width: usize) -> Schedule {
        if width <= 1 {
            return Schedule::Private;
        }
        // Busiest rank's share of the layer, as a fraction scaled by blocks · panels.
        let private = blocks.div_ceil(width) * panels;
        let shared = panels.div_ceil(width) * blocks;
        let (num, den) = SHARED_MARGIN;
        if shared * den < private * num {
            Schedule::Shared
        } else {
            Schedule::Private
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
        let k = self.params.out_channels;
        let mr = self.kernels.mr;
        let blocks = self.engine.blocks();
        let panels = k.div_ceil(mr);
        match Schedule::choose(blocks, panels, width) {
            Schedule::Private => {
                let (packed, work) = self.scratch(k, scratch);
                ctx.share(
                    1,
                    |_| blocks,
                    |_, block| {
                        self.engine
                            .pack(self.kernels, inputs[0], block, packed, work);
                        self.compute_block(inputs, packed, block, 0..k, output, work);
                    },
                );
            }
            Schedule::Shared => {
                let items = gang_items(width);
                let groups = panels.min(items);
                let buffers = workspace.buffers(self.engine.packed_len());
                let work_len = self.engine.work_len(k).max(self.engine.pack_work_len());
                let work = scratch.take(work_len);
                let computes = |phase: usize| if phase > 0 { groups } else { 0 };
                let packs = |phase: usize| {
                    if phase < blocks {
                        self.engine.pack_units(phase).min(items)
                    } else {
                        0
                    }
                };
                // Phase p computes block p − 1 from one buffer while it packs block p into
                // the other: block p − 1 was packed in the phase before, and the buffer
                // block p overwrites was last read (by block p − 2) in the phase before.
                let len = |phase: usize| computes(phase) + packs(phase);
                ctx.share(blocks + 1, len, |phase, item| {
                    if item < computes(phase) {
                        let block = phase - 1;
                        let mine = split_range(panels, item, groups);
                        let channels = (mine.start * mr).min(k)..(mine.end * mr).min(k);
                        let packed = buffers[block % 2]
                            .read()
                            .expect("the block is packed: its packing phase finished");
                        self.compute_block(inputs, &packed, block, channels, output, work);
                    } else {
                        let block = phase;
                        let item = item - computes(phase);
                        let units = split_range(self.engine.pack_units(block), item, packs(phase));
                        let rect = self.engine.pack_rect(block, units.clone());
                        let mut claim = buffers[block % 2]
                            .write_rect(rect)
                            .expect("items pack disjoint units of a block");
                        let mut view = MatMut::from_rect(&mut claim);
                        self.engine.pack_part(
                            self.kernels,
                            inputs[0],
                            block,
                            units,
                            &mut view,
                            work,
                        );
                    }
                });
            }
        }
    }

    /// Packed-block and work memory for computing `channels` channels.
    fn scratch<'s>(
        &self,
        channels: usize,
        scratch: &'s mut Scratch,
    ) -> (&'s mut [f32], &'s mut [f32]) {
        let packed_len = self.engine.packed_len().next_multiple_of(16);
        let work_len = self
            .engine
            .work_len(channels)
            .max(self.engine.pack_work_len());
        scratch.take(packed_len + work_len).split_at_mut(packed_len)
    }

    /// Computes `channels` of packed block `block` into a claim of that tile of `output`.
    fn compute_block(
        &self,
        inputs: &[&[f32]],
        packed: &[f32],
        block: usize,
        channels: Range<usize>,
        output: &SharedSlice<f32>,
        work: &mut [f32],
    ) {
        let plane = self.out_shape.plane();
        let pixels = self.engine.block_pixels(block);
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
            relu: self.params.relu,
        };
        self.engine.compute(
            self.kernels,
            &self.blocking,
            packed,
            block,
            channels,
            &mut MatMut::from_rect(&mut claim),
            &epilogue,
            work,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_follow_the_busiest_rank() {
        // One rank: always private.
        assert_eq!(Schedule::choose(1, 86, 1), Schedule::Private);
        // Many blocks split evenly: private.
        assert_eq!(Schedule::choose(28, 11, 2), Schedule::Private);
        // VGG16 conv5 (one block) on 2 ranks: shared.
        assert_eq!(Schedule::choose(1, 86, 2), Schedule::Shared);
        // VGG16 conv1_2's 19 Winograd blocks of 6 panels on 2 ranks: 60 against 57 is
        // within the margin, so private.
        assert_eq!(Schedule::choose(19, 6, 2), Schedule::Private);
        // 3 blocks on 2 ranks: 2 blocks for the busiest against 43 of 86 panels.
        assert_eq!(Schedule::choose(3, 86, 2), Schedule::Shared);
        // 28 blocks of a 64-channel layer (11 panels) on 16 ranks: 2 blocks against 1 panel
        // of 11 each (2·11 = 22 against 1·28 = 28).
        assert_eq!(Schedule::choose(28, 11, 16), Schedule::Private);
    }
}
