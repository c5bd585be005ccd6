//! CNN kernels as moldable layers of taopipe-runtime, and the model zoo.
//!
//! Every layer implements [`Kernel`]: its output is cut into a fixed list of contiguous
//! *chunks* chosen from the layer's shape only, so rank `r` of a gang of `w` workers
//! computes chunks `split_range(chunks, r, w)` and the result is bit-identical for every
//! width. Kernels are pure functions on slices and never start threads; parallelism comes
//! from the runtime that calls them.
//!
//! ```
//! use taopipe_nets::{Conv2d, Conv2dParams, Kernel, Scratch, Shape};
//! let input = Shape::new(3, 8, 8);
//! let p = Conv2dParams::new(3, 16, 3, 1, 1).with_relu(true);
//! let conv = Conv2d::new(p, input, vec![0.1; p.weight_len()], None)?;
//! let x = vec![1.0; input.len()];
//! // Two "ranks", each computing its own chunks into its own part of the output.
//! let mut out = vec![0.0; conv.out_shape().len()];
//! let mut scratch = Scratch::new();
//! for rank in 0..2 {
//!     let chunks = conv.rank_chunks(rank, 2);
//!     let range = conv.output_range(chunks.clone());
//!     conv.compute_chunks(&[&x], chunks, &mut out[range], &mut scratch);
//! }
//! assert_eq!(out, conv.forward(&[&x], &mut scratch));
//! # Ok::<(), taopipe_nets::KernelError>(())
//! ```
#![deny(missing_docs)]
// Tests may unwrap (the workspace warns on `unwrap_used` for library code).
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod activation;
pub mod batchnorm;
pub mod cache;
pub mod concat;
pub mod conv;
pub mod elementwise;
mod error;
pub mod fc;
pub mod frame;
pub mod gap;
pub mod gemm;
pub mod kernel;
mod layer_times;
pub mod memory_plan;
pub mod model;
#[cfg(test)]
mod naive;
pub mod onnx;
pub mod pool;
pub mod probe;
mod reduce;
pub mod simd;
pub mod softmax;
mod split;
pub mod tensor;
#[cfg(test)]
mod test_util;
pub mod weights;
pub mod zoo;

pub use crate::activation::Activation;
pub use crate::batchnorm::{BatchNorm, fold_batchnorm};
pub use crate::concat::{Concat, MAX_CONCAT_INPUTS};
pub use crate::conv::{
    Conv2d, Conv2dParams, ConvAlgo, DepthwiseAlgo, DepthwiseConv2d, DepthwiseParams, GroupedConv2d,
};
pub use crate::elementwise::{Activate, Add, Affine};
pub use crate::error::KernelError;
pub use crate::fc::{FC_CHUNKS, Linear};
pub use crate::frame::Frame;
pub use crate::gap::GlobalAvgPool;
pub use crate::kernel::{
    ChunkPlan, ITEMS_PER_RANK, Kernel, MAX_ITEMS, Scratch, TARGET_CHUNKS, Workspace, WorkspaceLen,
    gang_items,
};
pub use crate::layer_times::LayerTime;
pub use crate::model::{BuildOptions, Model, ModelError, torch_name};
pub use crate::pool::{Pool2d, PoolKind, PoolParams};
pub use crate::simd::{Epilogue, Isa, IsaError, Kernels, MatMut, MatRef, Residual};
pub use crate::softmax::Softmax;
pub use crate::split::{CHANNEL_LOCAL, Chain, LayerSplit, SplitError, SplitPlan};
pub use crate::tensor::{Shape, Tensor};
pub use crate::weights::{Init, RandomWeights, SafetensorsFile, WeightError, Weights};
