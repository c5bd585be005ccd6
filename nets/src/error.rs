//! The crate's error type.

use thiserror::Error;

use crate::tensor::Shape;

/// A layer that cannot be built: bad hyperparameters, weights of the wrong size, or an
/// input shape that does not fit. Each variant names the offending value.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum KernelError {
    /// A buffer (weights, bias, tensor data) has the wrong number of elements.
    #[error("{what}: expected {expected} elements, got {got}")]
    BufferLen {
        /// Which buffer.
        what: &'static str,
        /// Elements the shape asks for.
        expected: usize,
        /// Elements given.
        got: usize,
    },
    /// The input's channel count is not the one the layer was declared with.
    #[error("{layer}: input {input} has {got} channels, the layer expects {expected}")]
    Channels {
        /// Layer kind.
        layer: &'static str,
        /// The input shape.
        input: Shape,
        /// Declared channels.
        expected: usize,
        /// Channels of the input.
        got: usize,
    },
    /// The window does not fit the (padded) input, or a size is zero.
    #[error("{layer}: {reason} (input {input})")]
    Geometry {
        /// Layer kind.
        layer: &'static str,
        /// The input shape.
        input: Shape,
        /// What is wrong.
        reason: String,
    },
    /// Two inputs of an elementwise layer differ in shape.
    #[error("{layer}: input shapes differ: {a} vs {b}")]
    ShapesDiffer {
        /// Layer kind.
        layer: &'static str,
        /// First input.
        a: Shape,
        /// Second input.
        b: Shape,
    },
    /// A forced algorithm that cannot run this layer.
    #[error("{layer}: algorithm {algo} does not apply: {reason}")]
    Algorithm {
        /// Layer kind.
        layer: &'static str,
        /// The algorithm asked for.
        algo: &'static str,
        /// Why not.
        reason: &'static str,
    },
    /// The kernels' instruction set cannot be used (`TAOPIPE_ISA`, or a forced path this
    /// CPU lacks).
    #[error(transparent)]
    Isa(#[from] crate::simd::IsaError),
}
