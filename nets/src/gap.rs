//! Global average pooling: `C×H×W → C×1×1`, the mean of each channel plane (ResNet's
//! `AdaptiveAvgPool2d(1)`). Chunks: groups of channels, at most 32.

use crate::kernel::{ChunkPlan, Kernel, Scratch, check_io};
use crate::reduce::sum;
use crate::tensor::Shape;

/// Global average pooling bound to its input shape.
#[derive(Clone, Debug)]
pub struct GlobalAvgPool {
    in_shape: Shape,
    chunks: ChunkPlan,
}

impl GlobalAvgPool {
    /// A global average pool over `in_shape`.
    pub fn new(in_shape: Shape) -> GlobalAvgPool {
        GlobalAvgPool {
            in_shape,
            chunks: ChunkPlan::new(in_shape.c, 1, 1, 1),
        }
    }
}

impl Kernel for GlobalAvgPool {
    fn kind(&self) -> &'static str {
        "gap"
    }
    fn in_shape(&self) -> Shape {
        self.in_shape
    }
    fn out_shape(&self) -> Shape {
        Shape::vector(self.in_shape.c)
    }
    fn flops(&self) -> u64 {
        self.in_shape.len() as u64
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
        check_io("gap", inputs, 1, self.in_shape.len(), out.len(), r.len());
        let plane = self.in_shape.plane();
        for (o, c) in out.iter_mut().zip(r) {
            *o = sum(&inputs[0][c * plane..(c + 1) * plane]) / plane as f32;
        }
    }
}
