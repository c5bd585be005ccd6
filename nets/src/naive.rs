//! Straightforward reference implementations (test only), accumulating in f64 so that
//! they are a better reference than any f32 order.
//!
//! NaN and ±∞ propagate as in PyTorch, written independently of the kernels' rules in
//! [`crate::activation`]: ReLU, clip and leaky ReLU keep NaN (and `−0.0`), a max-pool
//! window with a NaN is NaN.

use crate::activation::Activation;
use crate::conv::{Conv2dParams, DepthwiseParams};
use crate::pool::{PoolKind, PoolParams};
use crate::tensor::Shape;

/// ReLU that keeps NaN and `−0.0`: `v` unless it is below zero.
pub(crate) fn relu(v: f32) -> f32 {
    if v >= 0.0 || v.is_nan() { v } else { 0.0 }
}

/// `act` of `v`: NaN stays NaN, else PyTorch's `clamp(v, min, max)` or `leaky_relu`.
pub(crate) fn activate(act: Activation, v: f32) -> f32 {
    match act {
        _ if v.is_nan() => v,
        Activation::None => v,
        Activation::Relu => relu(v),
        Activation::Clip { min, max } => {
            if v < min {
                min
            } else if v > max {
                max
            } else {
                v
            }
        }
        Activation::LeakyRelu { slope } => {
            if v < 0.0 {
                v * slope
            } else {
                v
            }
        }
    }
}

/// Direct 7-loop convolution (K, OH, OW, C, KH, KW; batch 1).
pub(crate) fn conv2d(p: &Conv2dParams, input: Shape, x: &[f32], w: &[f32], b: &[f32]) -> Vec<f32> {
    let out = p.out_shape(input).expect("valid geometry");
    let (kh, kw) = p.kernel;
    let mut y = vec![0.0; out.len()];
    for k in 0..out.c {
        for oy in 0..out.h {
            for ox in 0..out.w {
                let mut acc = f64::from(b[k]);
                for c in 0..input.c {
                    for ky in 0..kh {
                        for kx in 0..kw {
                            let iy = (oy * p.stride.0 + ky) as isize - p.padding.0 as isize;
                            let ix = (ox * p.stride.1 + kx) as isize - p.padding.1 as isize;
                            if iy < 0 || ix < 0 || iy >= input.h as isize || ix >= input.w as isize
                            {
                                continue;
                            }
                            let xv = x[input.index(c, iy as usize, ix as usize)];
                            acc += f64::from(w[((k * input.c + c) * kh + ky) * kw + kx])
                                * f64::from(xv);
                        }
                    }
                }
                let v = acc as f32;
                y[out.index(k, oy, ox)] = activate(p.act, v);
            }
        }
    }
    y
}

/// Depthwise convolution (channel multiplier 1), then the activation. Padding is zeros
/// multiplied in, as in PyTorch's padded input (so an infinite weight gives NaN there).
pub(crate) fn depthwise(
    p: &DepthwiseParams,
    input: Shape,
    x: &[f32],
    w: &[f32],
    b: &[f32],
) -> Vec<f32> {
    let out = p.out_shape(input).expect("valid geometry");
    let ((kh, kw), (sy, sx), (py, px)) = (p.kernel, p.stride, p.padding);
    let mut y = vec![0.0; out.len()];
    for c in 0..out.c {
        for oy in 0..out.h {
            for ox in 0..out.w {
                let mut acc = f64::from(b[c]);
                for ky in 0..kh {
                    for kx in 0..kw {
                        let iy = (oy * sy + ky) as isize - py as isize;
                        let ix = (ox * sx + kx) as isize - px as isize;
                        let inside =
                            iy >= 0 && ix >= 0 && iy < input.h as isize && ix < input.w as isize;
                        let xv = if inside {
                            x[input.index(c, iy as usize, ix as usize)]
                        } else {
                            0.0
                        };
                        acc += f64::from(w[(c * kh + ky) * kw + kx]) * f64::from(xv);
                    }
                }
                y[out.index(c, oy, ox)] = activate(p.act, acc as f32);
            }
        }
    }
    y
}

/// Direct pooling; padding excluded (max: ignored, avg: not counted).
pub(crate) fn pool(p: &PoolParams, input: Shape, x: &[f32]) -> Vec<f32> {
    let out = p.out_shape(input).expect("valid geometry");
    let mut y = vec![0.0; out.len()];
    for c in 0..out.c {
        for oy in 0..out.h {
            for ox in 0..out.w {
                let mut vals = Vec::new();
                for ky in 0..p.kernel {
                    for kx in 0..p.kernel {
                        let iy = (oy * p.stride + ky) as isize - p.padding as isize;
                        let ix = (ox * p.stride + kx) as isize - p.padding as isize;
                        if iy >= 0 && ix >= 0 && iy < input.h as isize && ix < input.w as isize {
                            vals.push(x[input.index(c, iy as usize, ix as usize)]);
                        }
                    }
                }
                y[out.index(c, oy, ox)] =
                    match p.kind {
                        // PyTorch's rule: `if (val > max || isnan(val)) max = val`.
                        PoolKind::Max => vals.iter().fold(f32::NEG_INFINITY, |m, &v| {
                            if v > m || v.is_nan() { v } else { m }
                        }),
                        PoolKind::Avg => {
                            (vals.iter().map(|&v| f64::from(v)).sum::<f64>() / vals.len() as f64)
                                as f32
                        }
                    };
            }
        }
    }
    y
}

/// `W x + b`.
pub(crate) fn linear(w: &[f32], b: &[f32], x: &[f32], relu: bool) -> Vec<f32> {
    b.iter()
        .enumerate()
        .map(|(r, &bias)| {
            let row = &w[r * x.len()..(r + 1) * x.len()];
            let v = (row
                .iter()
                .zip(x)
                .map(|(&a, &b)| f64::from(a) * f64::from(b))
                .sum::<f64>()
                + f64::from(bias)) as f32;
            if relu { self::relu(v) } else { v }
        })
        .collect()
}

/// Mean of each channel plane.
pub(crate) fn gap(input: Shape, x: &[f32]) -> Vec<f32> {
    x.chunks(input.plane())
        .map(|p| (p.iter().map(|&v| f64::from(v)).sum::<f64>() / p.len() as f64) as f32)
        .collect()
}

/// Softmax in f64.
pub(crate) fn softmax(x: &[f32]) -> Vec<f32> {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let e: Vec<f64> = x
        .iter()
        .map(|&v| (f64::from(v) - f64::from(max)).exp())
        .collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| (v / s) as f32).collect()
}
