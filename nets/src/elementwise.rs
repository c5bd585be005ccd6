//! Elementwise layers: an activation [`Activate`] (ReLU, clip/ReLU6, leaky ReLU), residual
//! [`Add`] (optionally followed by ReLU), and the per-channel affine [`Affine`]
//! `y = a[c]·x + b[c]` (batch norm when it is not folded into a conv; see
//! [`crate::batchnorm`]).
//!
//! Chunks: groups of whole channels, at most 32 (`ceil(C / 32)` channels each).

use crate::activation::{Activation, relu, with_activation};
use crate::batchnorm::BatchNorm;
use crate::error::KernelError;
use crate::kernel::{ChunkPlan, Kernel, Scratch, check_io};
use crate::tensor::Shape;

fn channel_chunks(shape: Shape) -> ChunkPlan {
    ChunkPlan::new(shape.c, shape.plane(), 1, 1)
}

/// `y = act(x)`, by the rules of [`Activation::apply`], bit for bit: NaN propagates as in
/// PyTorch (ReLU: `0` where `x < 0`, else `x` itself, so NaN stays NaN, −∞ becomes 0 and
/// `−0.0` stays `−0.0`). A conv fuses its activation into its store with the same bits
/// ([`crate::Conv2dParams::act`]); this layer runs the ones that could not be fused.
///
/// ```
/// use taopipe_nets::{Activate, Activation, Kernel, Scratch, Shape};
/// let relu6 = Activate::new(Shape::new(1, 1, 4), Activation::RELU6);
/// let y = relu6.forward(&[&[-1.0, 3.0, 7.5, f32::NAN]], &mut Scratch::new());
/// assert_eq!(&y[..3], &[0.0, 3.0, 6.0]);
/// assert!(y[3].is_nan());
/// assert_eq!(relu6.kind(), "clip");
/// ```
#[derive(Clone, Debug)]
pub struct Activate {
    shape: Shape,
    act: Activation,
    chunks: ChunkPlan,
}

impl Activate {
    /// `act` over tensors of `shape`.
    pub fn new(shape: Shape, act: Activation) -> Activate {
        Activate {
            shape,
            act,
            chunks: channel_chunks(shape),
        }
    }

    /// A ReLU over tensors of `shape`.
    pub fn relu(shape: Shape) -> Activate {
        Activate::new(shape, Activation::Relu)
    }

    /// The activation it applies.
    pub fn act(&self) -> Activation {
        self.act
    }
}

impl Kernel for Activate {
    /// `relu`, `clip` or `leakyrelu` (the spec's names), `identity` for
    /// [`Activation::None`].
    fn kind(&self) -> &'static str {
        match self.act {
            Activation::None => "identity",
            Activation::Relu => "relu",
            Activation::Clip { .. } => "clip",
            Activation::LeakyRelu { .. } => "leakyrelu",
        }
    }
    fn in_shape(&self) -> Shape {
        self.shape
    }
    fn out_shape(&self) -> Shape {
        self.shape
    }
    fn flops(&self) -> u64 {
        self.shape.len() as u64
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
        let r = self.chunks.range(chunk);
        check_io(self.kind(), inputs, 1, self.shape.len(), out.len(), r.len());
        // One match for the chunk: each arm's loop vectorises for its activation.
        with_activation!(self.act, |act| {
            out.iter_mut()
                .zip(&inputs[0][r])
                .for_each(|(o, &x)| *o = act(x));
        });
    }
}

/// Residual add `y = a + b`, then ReLU if `relu` (ResNet's block output). Arity 2.
#[derive(Clone, Debug)]
pub struct Add {
    shape: Shape,
    relu: bool,
    chunks: ChunkPlan,
}

impl Add {
    /// An add of two tensors of `shape`.
    pub fn new(shape: Shape, relu: bool) -> Add {
        Add {
            shape,
            relu,
            chunks: channel_chunks(shape),
        }
    }

    /// An add of two inputs whose shapes must agree.
    ///
    /// # Errors
    /// [`KernelError::ShapesDiffer`].
    pub fn checked(a: Shape, b: Shape, relu: bool) -> Result<Add, KernelError> {
        if a != b {
            return Err(KernelError::ShapesDiffer { layer: "add", a, b });
        }
        Ok(Add::new(a, relu))
    }
}

impl Kernel for Add {
    fn kind(&self) -> &'static str {
        "add"
    }
    fn arity(&self) -> usize {
        2
    }
    fn in_shape(&self) -> Shape {
        self.shape
    }
    fn out_shape(&self) -> Shape {
        self.shape
    }
    fn flops(&self) -> u64 {
        self.shape.len() as u64 * if self.relu { 2 } else { 1 }
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
        let r = self.chunks.range(chunk);
        check_io("add", inputs, 2, self.shape.len(), out.len(), r.len());
        let (a, b) = (&inputs[0][r.clone()], &inputs[1][r]);
        if self.relu {
            out.iter_mut()
                .zip(a.iter().zip(b))
                .for_each(|(o, (&x, &y))| *o = relu(x + y));
        } else {
            out.iter_mut()
                .zip(a.iter().zip(b))
                .for_each(|(o, (&x, &y))| *o = x + y);
        }
    }
}

/// Per-channel affine `y = scale[c]·x + shift[c]`, then ReLU if `relu`.
#[derive(Clone, Debug)]
pub struct Affine {
    shape: Shape,
    scale: Vec<f32>,
    shift: Vec<f32>,
    relu: bool,
    chunks: ChunkPlan,
}

impl Affine {
    /// An affine map with one `scale` and `shift` per channel.
    ///
    /// # Errors
    /// `scale` or `shift` not of length `shape.c`.
    pub fn new(
        shape: Shape,
        scale: Vec<f32>,
        shift: Vec<f32>,
        relu: bool,
    ) -> Result<Affine, KernelError> {
        for (what, v) in [("affine scale", &scale), ("affine shift", &shift)] {
            if v.len() != shape.c {
                return Err(KernelError::BufferLen {
                    what,
                    expected: shape.c,
                    got: v.len(),
                });
            }
        }
        Ok(Affine {
            shape,
            scale,
            shift,
            relu,
            chunks: channel_chunks(shape),
        })
    }

    /// Inference-time batch norm as an affine layer (when it is not folded).
    ///
    /// # Errors
    /// As [`BatchNorm::affine`], or a channel mismatch.
    pub fn from_batchnorm(shape: Shape, bn: &BatchNorm, relu: bool) -> Result<Affine, KernelError> {
        let (scale, shift) = bn.affine()?;
        Affine::new(shape, scale, shift, relu)
    }
}

impl Kernel for Affine {
    fn kind(&self) -> &'static str {
        "affine"
    }
    fn in_shape(&self) -> Shape {
        self.shape
    }
    fn out_shape(&self) -> Shape {
        self.shape
    }
    fn flops(&self) -> u64 {
        2 * self.shape.len() as u64
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
        let r = self.chunks.range(chunk);
        check_io("affine", inputs, 1, self.shape.len(), out.len(), r.len());
        let plane = self.shape.plane();
        let channels = self.chunks.channels_of(chunk);
        let x = &inputs[0][r];
        for (i, c) in channels.enumerate() {
            let (a, b) = (self.scale[c], self.shift[c]);
            let (src, dst) = (
                &x[i * plane..(i + 1) * plane],
                &mut out[i * plane..(i + 1) * plane],
            );
            if self.relu {
                dst.iter_mut()
                    .zip(src)
                    .for_each(|(o, &v)| *o = relu(a * v + b));
            } else {
                dst.iter_mut().zip(src).for_each(|(o, &v)| *o = a * v + b);
            }
        }
    }
}

#[cfg(test)]
mod test;
