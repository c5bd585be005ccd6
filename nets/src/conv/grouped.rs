//! [`GroupedConv2d`]: a convolution whose channels are cut into groups, output group `i`
//! reading input group `i` only (PyTorch's `groups`, ONNX's `group`), between a plain
//! convolution (one group) and a depthwise one ([`super::DepthwiseConv2d`], a group per
//! channel).
//!
//! It runs one [`Conv2d`] per group: a group's input channels are contiguous planes of the
//! input, and its output channels contiguous planes of the output, so each group is an
//! ordinary convolution on slices, with the packed weights, the algorithm choice and the
//! epilogue of any other. Chunks are whole groups (as many as fit [`crate::TARGET_CHUNKS`]),
//! each computed by its group's convolution chunk by chunk, so the bits do not depend on
//! the width. None of the zoo nets has one (AlexNet's original two groups are one in
//! torchvision's); ONNX models may.

use super::{Conv2d, Conv2dParams, ConvAlgo};
use crate::error::KernelError;
use crate::kernel::{ChunkPlan, Kernel, Scratch};
use crate::simd::Isa;
use crate::tensor::Shape;

/// A grouped convolution: `groups` convolutions of `C/g → K/g` channels side by side.
///
/// ```
/// use taopipe_nets::{Conv2dParams, GroupedConv2d, Kernel, Scratch, Shape};
/// // 4 → 2 channels in 2 groups: output 0 sums inputs 0 and 1, output 1 inputs 2 and 3.
/// let p = Conv2dParams::new(4, 2, 1, 1, 0);
/// let conv = GroupedConv2d::new(p, 2, Shape::new(4, 1, 1), vec![1.0; 4], None, None)?;
/// assert_eq!(conv.forward(&[&[1.0, 2.0, 10.0, 20.0]], &mut Scratch::new()), vec![3.0, 30.0]);
/// # Ok::<(), taopipe_nets::KernelError>(())
/// ```
#[derive(Debug, Clone)]
pub struct GroupedConv2d {
    params: Conv2dParams,
    groups: Vec<Conv2d>,
    in_shape: Shape,
    out_shape: Shape,
    chunks: ChunkPlan,
}

impl GroupedConv2d {
    /// `params` for the whole layer (all `C` input and `K` output channels), weights
    /// `[K, C/g, kh, kw]` (PyTorch's layout) and an optional bias of `K`; `algo` and `isa`
    /// as for [`Conv2d::with_options`] (`None`: [`Isa::current`]).
    ///
    /// # Errors
    /// Groups that do not divide both channel counts, and every error of
    /// [`Conv2d::with_options`] for one group.
    pub fn new(
        params: Conv2dParams,
        groups: usize,
        in_shape: Shape,
        weights: Vec<f32>,
        bias: Option<Vec<f32>>,
        algo: Option<ConvAlgo>,
    ) -> Result<GroupedConv2d, KernelError> {
        GroupedConv2d::with_isa(
            params,
            groups,
            in_shape,
            weights,
            bias,
            algo,
            Isa::current()?,
        )
    }

    /// As [`GroupedConv2d::new`] on the ISA path `isa`.
    ///
    /// # Errors
    /// As [`GroupedConv2d::new`].
    pub fn with_isa(
        params: Conv2dParams,
        groups: usize,
        in_shape: Shape,
        weights: Vec<f32>,
        bias: Option<Vec<f32>>,
        algo: Option<ConvAlgo>,
        isa: Isa,
    ) -> Result<GroupedConv2d, KernelError> {
        let (c, k) = (params.in_channels, params.out_channels);
        if groups == 0 || c % groups != 0 || k % groups != 0 {
            return Err(KernelError::Geometry {
                layer: "conv",
                input: in_shape,
                reason: format!("{groups} groups do not divide {c} input and {k} output channels"),
            });
        }
        let out_shape = params.out_shape(in_shape)?;
        let group = Conv2dParams {
            in_channels: c / groups,
            out_channels: k / groups,
            ..params
        };
        let per_weights = group.weight_len();
        if weights.len() != per_weights * groups {
            return Err(KernelError::BufferLen {
                what: "grouped conv weights",
                expected: per_weights * groups,
                got: weights.len(),
            });
        }
        let bias = bias.unwrap_or_else(|| vec![0.0; k]);
        if bias.len() != k {
            return Err(KernelError::BufferLen {
                what: "grouped conv bias",
                expected: k,
                got: bias.len(),
            });
        }
        let group_input = Shape::new(c / groups, in_shape.h, in_shape.w);
        let convs = (0..groups)
            .map(|g| {
                let w = weights[g * per_weights..(g + 1) * per_weights].to_vec();
                let b = bias[g * group.out_channels..(g + 1) * group.out_channels].to_vec();
                Conv2d::with_options(group, group_input, w, Some(b), algo, isa)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let per = k / groups;
        Ok(GroupedConv2d {
            params,
            groups: convs,
            in_shape,
            out_shape,
            chunks: ChunkPlan::new(k, out_shape.plane(), per, per),
        })
    }

    /// The whole layer's hyperparameters.
    pub fn params(&self) -> &Conv2dParams {
        &self.params
    }

    /// The number of groups.
    pub fn groups(&self) -> usize {
        self.groups.len()
    }
}

impl Kernel for GroupedConv2d {
    fn kind(&self) -> &'static str {
        "conv"
    }

    fn describe(&self) -> String {
        format!("{} g{}", self.groups[0].describe(), self.groups.len())
    }

    fn in_shape(&self) -> Shape {
        self.in_shape
    }

    fn out_shape(&self) -> Shape {
        self.out_shape
    }

    fn flops(&self) -> u64 {
        self.groups.iter().map(|g| g.flops()).sum()
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
        let x = inputs[0];
        assert_eq!(
            x.len(),
            self.in_shape.len(),
            "grouped conv: input of {} values for {}",
            x.len(),
            self.in_shape
        );
        let range = self.chunks.range(chunk);
        assert_eq!(
            out.len(),
            range.len(),
            "grouped conv: output of {} for a chunk of {}",
            out.len(),
            range.len()
        );
        let (group_in, group_out) = (
            x.len() / self.groups.len(),
            self.out_shape.len() / self.groups.len(),
        );
        for g in range.start / group_out..range.end / group_out {
            let conv = &self.groups[g];
            let y = &mut out[g * group_out - range.start..(g + 1) * group_out - range.start];
            conv.compute_chunks(
                &[&x[g * group_in..(g + 1) * group_in]],
                0..conv.chunks(),
                y,
                scratch,
            );
        }
    }
}

#[cfg(test)]
mod test;
