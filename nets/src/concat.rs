//! [`Concat`]: tensors of the same plane joined along the channels, in order (GoogLeNet's
//! inception and SqueezeNet's fire modules).
//!
//! In a model, most concats run no task at all: where every input is a task's tensor that
//! only the concat reads, each branch writes straight into its part of the concat's buffer
//! ([`crate::memory_plan`], "Concats without a copy"). This kernel runs the others, and
//! copies: each branch writes its own buffer and the concat copies every element once
//! into its output, as ONNX Runtime's `Concat` does. Chunks are groups of whole output
//! channels (at most [`crate::TARGET_CHUNKS`]), each copying the runs of the inputs it
//! covers, so a copy is one `memcpy` per (chunk, input) and the result is the same at every
//! width (a copy has no rounding).

use crate::error::KernelError;
use crate::kernel::{ChunkPlan, Kernel, Scratch};
use crate::tensor::Shape;

/// The most tensors one [`Concat`] joins: a layer's inputs are held on the stack while its
/// task runs, so that a frame allocates nothing (`model.rs`). GoogLeNet joins four.
pub const MAX_CONCAT_INPUTS: usize = 16;

/// Tensors of one plane joined along the channels.
///
/// ```
/// use taopipe_nets::{Concat, Kernel, Scratch, Shape};
/// let cat = Concat::new(&[Shape::new(1, 2, 2), Shape::new(2, 2, 2)])?;
/// assert_eq!(cat.out_shape(), Shape::new(3, 2, 2));
/// let (a, b) = (vec![1.0; 4], vec![2.0; 8]);
/// let y = cat.forward(&[&a, &b], &mut Scratch::new());
/// assert_eq!(y, [vec![1.0; 4], vec![2.0; 8]].concat());
/// # Ok::<(), taopipe_nets::KernelError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Concat {
    inputs: Vec<Shape>,
    out: Shape,
    chunks: ChunkPlan,
}

impl Concat {
    /// A concat of tensors of these shapes, in order.
    ///
    /// # Errors
    /// No inputs, more than [`MAX_CONCAT_INPUTS`], or planes that differ (the first
    /// input's and the odd one's shapes named).
    pub fn new(inputs: &[Shape]) -> Result<Concat, KernelError> {
        let Some(&first) = inputs.first() else {
            return Err(KernelError::Geometry {
                layer: "concat",
                input: Shape::new(0, 0, 0),
                reason: "no inputs".into(),
            });
        };
        if inputs.len() > MAX_CONCAT_INPUTS {
            return Err(KernelError::Geometry {
                layer: "concat",
                input: first,
                reason: format!(
                    "{} inputs, more than the {MAX_CONCAT_INPUTS} a concat takes",
                    inputs.len()
                ),
            });
        }
        if let Some(odd) = inputs.iter().find(|s| (s.h, s.w) != (first.h, first.w)) {
            return Err(KernelError::Geometry {
                layer: "concat",
                input: first,
                reason: format!("input {odd} has another plane than the first, {first}"),
            });
        }
        let out = Shape::new(inputs.iter().map(|s| s.c).sum(), first.h, first.w);
        Ok(Concat {
            inputs: inputs.to_vec(),
            out,
            chunks: ChunkPlan::new(out.c, out.plane(), 1, 1),
        })
    }
}

impl Kernel for Concat {
    fn kind(&self) -> &'static str {
        "concat"
    }

    fn arity(&self) -> usize {
        self.inputs.len()
    }

    /// The first input's shape (the others differ in channels).
    fn in_shape(&self) -> Shape {
        self.inputs[0]
    }

    fn out_shape(&self) -> Shape {
        self.out
    }

    /// One operation per element copied, as the DSL weighs it.
    fn flops(&self) -> u64 {
        self.out.len() as u64
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
        assert_eq!(
            inputs.len(),
            self.inputs.len(),
            "concat: expected {} inputs",
            self.inputs.len()
        );
        let range = self.chunks.range(chunk);
        assert_eq!(
            out.len(),
            range.len(),
            "concat: output slice of {} for a chunk of {}",
            out.len(),
            range.len()
        );
        // Input `i` covers the output's flat range `at..at + len`; copy its overlap.
        let mut at = 0;
        for (x, shape) in inputs.iter().zip(&self.inputs) {
            assert_eq!(
                x.len(),
                shape.len(),
                "concat: input of {} values for {shape}",
                x.len()
            );
            let (lo, hi) = (range.start.max(at), range.end.min(at + x.len()));
            if lo < hi {
                out[lo - range.start..hi - range.start].copy_from_slice(&x[lo - at..hi - at]);
            }
            at += x.len();
        }
    }
}

#[cfg(test)]
mod test;
