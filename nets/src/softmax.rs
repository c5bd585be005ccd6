//! Softmax over the whole (flattened) input, numerically stable: `exp(x − max) / Σ`. A
//! classifier's output is ~1000 values, so it is a single chunk.

use crate::kernel::{ChunkPlan, Kernel, Scratch, check_io};
use crate::reduce::sum;
use crate::tensor::Shape;

/// Softmax bound to its input shape (output: a vector of the same length).
#[derive(Clone, Debug)]
pub struct Softmax {
    in_shape: Shape,
    /// One chunk: the whole vector.
    chunks: ChunkPlan,
}

impl Softmax {
    /// A softmax over `in_shape.len()` values.
    pub fn new(in_shape: Shape) -> Softmax {
        Softmax {
            in_shape,
            chunks: ChunkPlan::new(1, in_shape.len(), 1, 1),
        }
    }
}

impl Kernel for Softmax {
    fn kind(&self) -> &'static str {
        "softmax"
    }
    fn in_shape(&self) -> Shape {
        self.in_shape
    }
    fn out_shape(&self) -> Shape {
        Shape::vector(self.in_shape.len())
    }
    fn flops(&self) -> u64 {
        4 * self.in_shape.len() as u64
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
        let n = self.chunk_range(chunk).len();
        check_io("softmax", inputs, 1, n, out.len(), n);
        let x = inputs[0];
        let max = x.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
        out.iter_mut()
            .zip(x)
            .for_each(|(o, &v)| *o = (v - max).exp());
        let total = sum(out);
        out.iter_mut().for_each(|o| *o /= total);
    }
}
