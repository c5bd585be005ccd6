//! How the ranks of a gang share one convolution, packing each input block once.
//!
//! Two schedules; [`Schedule::choose`] takes the one whose busiest rank has the least work
//! (by whole blocks or whole weight panels), *private* on a tie:
//!
//! - **Private**: rank `r` takes blocks `split_range(blocks, r, w)`, packs each into its own
//!   scratch and computes every output channel of it. No synchronisation. Best when there
//!   are many blocks (the early, large layers).
//! - **Shared**: for each block in turn, every rank packs its share of the block's units
//!   (direct: column panels; Winograd: input channels) into a buffer the gang shares, waits
//!   at the gang's barrier, then computes its own output channels (a run of `MR`-row weight
//!   panels) over the whole block. Two buffers alternate, so one barrier per block
//!   suffices: a rank writes block `b + 2`'s buffer only after the barrier of block `b + 1`,
//!   which every rank reaches after it has finished reading block `b`. Best when there are
//!   few blocks (late layers: VGG16's `conv4`/`conv5` are one block each).
//!
//! Either way each input element is packed once per frame whatever the width, and each
//! output element is computed by the operations of [`Kernel::compute_chunks`], so the
//! result has its bits.

use std::ops::Range;

use taopipe_runtime::{Rect, SharedSlice, TaskCtx, split_range};

use super::Conv2d;
use super::direct::residual_view;
use crate::gemm::BlockEpilogue;
use crate::kernel::{Scratch, Workspace};
use crate::simd::MatMut;

/// Which schedule a gang runs (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Schedule {
    /// Whole blocks per rank.
    Private,
    /// Every block packed together, then output channels per rank.
    Shared,
}

impl Schedule {
    /// The schedule whose busiest rank does the least: `ceil(blocks / w)` blocks, against
    /// `ceil(panels / w)` of the `panels` weight panels of every block.
    pub(crate) fn choose(blocks: usize, panels: usize, width: usize) -> Schedule {
        if width <= 1 {
            return Schedule::Private;
        }
        // Busiest rank's share of the layer, as a fraction scaled by blocks · panels.
        let private = blocks.div_ceil(width) * panels;
        let shared = panels.div_ceil(width) * blocks;
        if private <= shared {
            Schedule::Private
        } else {
            Schedule::Shared
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
        let (rank, width) = (ctx.rank(), ctx.width());
        let k = self.params.out_channels;
        let mr = self.kernels.mr;
        let blocks = self.engine.blocks();
        match Schedule::choose(blocks, k.div_ceil(mr), width) {
            Schedule::Private => {
                let (packed, work) = self.scratch(k, scratch);
                for block in split_range(blocks, rank, width) {
                    self.engine
                        .pack(self.kernels, inputs[0], block, packed, work);
                    self.compute_block(inputs, packed, block, 0..k, output, work);
                }
            }
            Schedule::Shared => {
                let panels = split_range(k.div_ceil(mr), rank, width);
                let channels = (panels.start * mr).min(k)..(panels.end * mr).min(k);
                let buffers = workspace.buffers(self.engine.packed_len());
                let work_len = self
                    .engine
                    .work_len(channels.len())
                    .max(self.engine.pack_work_len());
                let work = scratch.take(work_len);
                for block in 0..blocks {
                    let buffer = &buffers[block % 2];
                    let units = split_range(self.engine.pack_units(block), rank, width);
                    if !units.is_empty() {
                        let rect = self.engine.pack_rect(block, units.clone());
                        let mut claim = buffer
                            .write_rect(rect)
                            .expect("ranks pack disjoint units of a block");
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
                    ctx.barrier();
                    if !channels.is_empty() {
                        let packed = buffer
                            .read()
                            .expect("the block is packed: every rank passed the barrier");
                        self.compute_block(inputs, &packed, block, channels.clone(), output, work);
                    }
                }
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
            residual: residual_view(inputs.get(1).copied(), plane, &channels, &pixels),
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
        // 3 blocks on 2 ranks: 2 blocks for the busiest against 43 of 86 panels.
        assert_eq!(Schedule::choose(3, 86, 2), Schedule::Shared);
        // 28 blocks of a 64-channel layer (11 panels) on 16 ranks: 2 blocks against 1 panel
        // of 11 each (2·11 = 22 against 1·28 = 28).
        assert_eq!(Schedule::choose(28, 11, 16), Schedule::Private);
    }
}
