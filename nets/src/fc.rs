//! Fully connected layer `y = W·x + b` (PyTorch `Linear`; `W` is `out × in`, row-major),
//! optional fused ReLU. The input is the previous activation flattened in CHW order (what
//! `torch.flatten(x, 1)` gives).
//!
//! FC at batch 1 is a matrix-vector product, bound by memory bandwidth: every weight is read
//! once per frame and used once (VGG16's `fc6` alone is 411 MB). So it is not a GEMM but
//! the ISA's row-dot kernel ([`Kernels::dot_rows`]): four rows at a time sharing the loads
//! of `x`, which stays in L1/L2, while the rows stream from memory. Its speed is reported
//! in GB/s against a copy bandwidth measured in the same run
//! (`cargo bench -p taopipe-nets -- report`). Chunks: groups of output features, at most
//! 32 (`ceil(out / 32)` features each); a row's sum does not depend on its chunk.

use crate::activation::relu;
use crate::error::KernelError;
use crate::kernel::{ChunkPlan, Kernel, Scratch, check_io};
use crate::simd::{Isa, Kernels};
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
    kernels: &'static Kernels,
}

impl Linear {
    /// `out_features × in_shape.len()` weights (row-major) and an optional bias.
    ///
    /// # Errors
    /// Weights or bias of the wrong length, a zero size, or a bad `TAOPIPE_ISA`.
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
            kernels: Isa::current()?.kernels(),
        })
    }

    /// Runs on another ISA path.
    ///
    /// # Errors
    /// [`KernelError::Isa`] when this CPU cannot run it.
    pub fn with_isa(mut self, isa: Isa) -> Result<Linear, KernelError> {
        self.kernels = isa.supported()?.kernels();
        Ok(self)
    }

    /// The ISA path in use.
    pub fn isa(&self) -> Isa {
        self.kernels.isa
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
        self.kernels
            .dot_rows(&self.weights[rows.start * n..rows.end * n], x, out);
        for (o, b) in out.iter_mut().zip(&self.bias[rows]) {
            let y = *o + b;
            *o = if self.relu { relu(y) } else { y };
        }
    }
}

#[cfg(test)]
mod test;
