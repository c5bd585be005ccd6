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
//! [`FC_CHUNKS`] (`ceil(out / FC_CHUNKS)` features each), each its own item in a gang; a
//! row's sum does not depend on its chunk.

use crate::activation::relu;
use crate::error::KernelError;
use crate::kernel::{ChunkPlan, Kernel, Scratch, check_io};
use crate::simd::{Isa, Kernels};
use crate::tensor::Shape;

/// Chunks of an FC layer (a decision, from a measurement), each its own item in a gang,
/// claimed as a rank gets free. An FC layer streams its weights from memory, so how fast a
/// rank goes depends on what the other cores read at the time. With 32 chunks in 16
/// items, one a rank, the last rank of a 16-wide gang ended VGG16's `fc6` 1.6 ms after
/// the first, a third of the layer's 4.8 ms (16-core x86-64 Linux machine, every rank's
/// start and end traced). With 128: the FC layers' sum went from medians of 1.72 to 1.59
/// ms a frame in AlexNet and 4.77 to 4.19 in VGG16 at width 16 (`frame --width 16
/// --profile`, six rounds, the builds taking turns, same machine), level at width 2 on a
/// 2-core VM (AlexNet 7.56 against 7.37 ms, four rounds). An item is still a megabyte or
/// more of weights in the zoo's big FC layers, so its claim costs nothing against it.
pub const FC_CHUNKS: usize = 128;

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
            chunks: ChunkPlan::targeting(out_features, 1, 1, 1, FC_CHUNKS),
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

    /// Every chunk its own item ([`FC_CHUNKS`]).
    fn gang_items(&self, _width: usize) -> usize {
        self.chunks.count()
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
