//! Fully connected layer `y = W·x + b` (PyTorch `Linear`; `W` is `out × in`, row-major),
//! optional fused ReLU. The input is the previous activation flattened in CHW order (what
//! `torch.flatten(x, 1)` gives).
//!
//! FC at batch 1 is a matrix-vector product: memory-bound, so it is a row-wise dot product
//! (the 16-lane accumulators of `reduce.rs`) rather than a GEMM. Chunks: groups of
//! output features, at most 32 (`ceil(out / 32)` features each).

use crate::error::KernelError;
use crate::kernel::{ChunkPlan, Kernel, Scratch, check_io};
use crate::reduce::dot;
use crate::tensor::Shape;

/// A fully connected layer.
#[derive(Clone, Debug)]
pub struct Linear {
    in_shape: Shape,
    out_features: usize,
    weights: Vec<f32>,
    bias: Vec<f32>,
    relu: bool,
    chunks: ChunkPlan,
}

impl Linear {
    /// `out_features × in_shape.len()` weights (row-major) and an optional bias.
    ///
    /// # Errors
    /// Weights or bias of the wrong length, or a zero size.
    ///
    /// ```
    /// use taopipe_nets::{Kernel, Linear, Scratch, Shape};
    /// let fc = Linear::new(Shape::vector(2), 1, vec![2.0, 3.0], Some(vec![1.0]), false)?;
    /// assert_eq!(fc.forward(&[&[1.0, 1.0]], &mut Scratch::new()), vec![6.0]);
    /// # Ok::<(), taopipe_nets::KernelError>(())
    /// ```
    pub fn new(
        in_shape: Shape,
        out_features: usize,
        weights: Vec<f32>,
        bias: Option<Vec<f32>>,
        relu: bool,
    ) -> Result<Linear, KernelError> {
        let n_in = in_shape.len();
        if n_in == 0 || out_features == 0 {
            return Err(KernelError::Geometry {
                layer: "fc",
                input: in_shape,
                reason: format!("zero size: {n_in} inputs, {out_features} outputs"),
            });
        }
        if weights.len() != n_in * out_features {
            return Err(KernelError::BufferLen {
                what: "fc weights",
                expected: n_in * out_features,
                got: weights.len(),
            });
        }
        let bias = bias.unwrap_or_else(|| vec![0.0; out_features]);
        if bias.len() != out_features {
            return Err(KernelError::BufferLen {
                what: "fc bias",
                expected: out_features,
                got: bias.len(),
            });
        }
        Ok(Linear {
            in_shape,
            out_features,
            weights,
            bias,
            relu,
            chunks: ChunkPlan::new(out_features, 1, 1, 1),
        })
    }

    /// Weights, `out × in` row-major.
    pub fn weights(&self) -> &[f32] {
        &self.weights
    }

    /// Bias.
    pub fn bias(&self) -> &[f32] {
        &self.bias
    }
}

impl Kernel for Linear {
    fn kind(&self) -> &'static str {
        "fc"
    }

    fn in_shape(&self) -> Shape {
        self.in_shape
    }

    fn out_shape(&self) -> Shape {
        Shape::vector(self.out_features)
    }

    fn flops(&self) -> u64 {
        2 * self.weights.len() as u64
    }

    fn plan(&self) -> &ChunkPlan {
        &self.chunks
    }

    fn compute_chunk(
        &self,
        inputs: &[&[f32]],
        chunk: usize,
        out: &mut [f32],
        _scratch: &mut Scratch,
    ) {
        let rows = self.chunks.range(chunk);
        check_io("fc", inputs, 1, self.in_shape.len(), out.len(), rows.len());
        let x = inputs[0];
        let n = x.len();
        for (o, r) in out.iter_mut().zip(rows) {
            let y = dot(&self.weights[r * n..(r + 1) * n], x) + self.bias[r];
            *o = if self.relu { y.max(0.0) } else { y };
        }
    }
}

#[cfg(test)]
mod test;
