//! Shape inference and weights (the compile-time hints), as `const fn`s.
//!
//! One implementation serves both paths: the runtime builder ([`crate::NetSpecBuilder`])
//! and the compile-time check that `net!` expands to ([`crate::__private::ConstNet`]).
//! So a net the macro accepts at compile time is exactly a net the builder accepts.

use crate::Shape;

/// Why a layer does not fit its input (the caller adds names and turns it into a
/// [`crate::DslError`] or a compile-time panic message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Issue {
    /// A parameter that must be at least 1 is 0.
    Zero(&'static str),
    /// The window is larger than the padded input.
    KernelTooLarge,
    /// Pooling padding larger than half the kernel (before), or not below it (after).
    PoolPadding,
    /// Channels that are not a multiple of the convolution's groups.
    Groups,
    /// An activation's parameter that is not a number, or bounds in the wrong order.
    Parameter,
    /// A shape or weight overflows.
    Overflow,
}

/// `?` for `const fn` (the `Try` trait is not const).
macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return Err(e),
        }
    };
}

const fn mul(a: u64, b: usize) -> Result<u64, Issue> {
    match a.checked_mul(b as u64) {
        Some(v) => Ok(v),
        None => Err(Issue::Overflow),
    }
}

const fn elements(s: Shape) -> Result<u64, Issue> {
    match s.elements() {
        Some(v) => Ok(v),
        None => Err(Issue::Overflow),
    }
}

/// One spatial dimension of a sliding window: `(n + p₀ + p₁ − k) / s + 1`, rounded down, or
/// up in ceil mode, where a last window must still start before `n + p₀` (PyTorch's
/// `pooling_output_shape`, which ONNX Runtime follows).
const fn window_dim(
    n: usize,
    k: usize,
    s: usize,
    (p0, p1): (usize, usize),
    ceil: bool,
) -> Result<usize, Issue> {
    let padded = match n.checked_add(p0) {
        Some(v) => match v.checked_add(p1) {
            Some(v) => v,
            None => return Err(Issue::Overflow),
        },
        None => return Err(Issue::Overflow),
    };
    if k > padded {
        return Err(Issue::KernelTooLarge);
    }
    let span = padded - k;
    let mut out = if ceil { span.div_ceil(s) } else { span / s } + 1;
    if ceil && (out - 1) * s >= n + p0 {
        out -= 1;
    }
    Ok(out)
}

/// Output `(H, W)` of a sliding window over `input`, `padding` before and after.
const fn window(
    input: Shape,
    kernel: (usize, usize),
    stride: (usize, usize),
    (before, after): ((usize, usize), (usize, usize)),
    ceil: bool,
) -> Result<(usize, usize), Issue> {
    if kernel.0 == 0 || kernel.1 == 0 {
        return Err(Issue::Zero("kernel"));
    }
    if stride.0 == 0 || stride.1 == 0 {
        return Err(Issue::Zero("stride"));
    }
    let h = tri!(window_dim(
        input.h,
        kernel.0,
        stride.0,
        (before.0, after.0),
        ceil
    ));
    let w = tri!(window_dim(
        input.w,
        kernel.1,
        stride.1,
        (before.1, after.1),
        ceil
    ));
    Ok((h, w))
}

/// Conv2d: output shape and Eq. 1 weight `Ho·Wo·(C/g)·R·S·K` (output spatial size, see
/// crate docs; a group's output channels read only its `C/g` input channels).
pub(crate) const fn conv(
    input: Shape,
    out_channels: usize,
    kernel: (usize, usize),
    stride: (usize, usize),
    padding: (usize, usize),
    groups: usize,
) -> Result<(Shape, u64), Issue> {
    if out_channels == 0 {
        return Err(Issue::Zero("out_channels"));
    }
    if groups == 0 {
        return Err(Issue::Zero("groups"));
    }
    if !input.c.is_multiple_of(groups) || !out_channels.is_multiple_of(groups) {
        return Err(Issue::Groups);
    }
    let (h, w) = tri!(window(input, kernel, stride, (padding, padding), false));
    let output = Shape::new(out_channels, h, w);
    let mut weight = tri!(mul(h as u64, w));
    weight = tri!(mul(weight, input.c / groups));
    weight = tri!(mul(weight, kernel.0));
    weight = tri!(mul(weight, kernel.1));
    weight = tri!(mul(weight, out_channels));
    Ok((output, weight))
}

/// Max or average pooling: channels kept, weight = input size `H·W·C` (paper §2.1).
/// Padding before is at most half the kernel (PyTorch's rule), after it below the kernel,
/// so that every window holds an element of the input.
pub(crate) const fn pool(
    input: Shape,
    kernel: (usize, usize),
    stride: (usize, usize),
    padding: ((usize, usize), (usize, usize)),
    ceil: bool,
) -> Result<(Shape, u64), Issue> {
    let (h, w) = tri!(window(input, kernel, stride, padding, ceil));
    let (before, after) = padding;
    if before.0 > kernel.0 / 2
        || before.1 > kernel.1 / 2
        || after.0 >= kernel.0
        || after.1 >= kernel.1
    {
        return Err(Issue::PoolPadding);
    }
    Ok((Shape::new(input.c, h, w), tri!(elements(input))))
}

/// Clip: shape kept, weight = element count; `min ≤ max`, neither NaN.
pub(crate) const fn clip(input: Shape, min: f32, max: f32) -> Result<(Shape, u64), Issue> {
    if min.is_nan() || max.is_nan() || min > max {
        return Err(Issue::Parameter);
    }
    elementwise(input)
}

/// Batch normalisation: shape kept, weight = element count; a positive, finite ε.
pub(crate) const fn batch_norm(input: Shape, eps: f32) -> Result<(Shape, u64), Issue> {
    if !eps.is_finite() || eps <= 0.0 {
        return Err(Issue::Parameter);
    }
    elementwise(input)
}

/// Leaky ReLU: shape kept, weight = element count; a finite slope.
pub(crate) const fn leaky_relu(input: Shape, slope: f32) -> Result<(Shape, u64), Issue> {
    if !slope.is_finite() {
        return Err(Issue::Parameter);
    }
    elementwise(input)
}

/// Global average pooling: `C×1×1`, weight = input size.
pub(crate) const fn global_avg_pool(input: Shape) -> Result<(Shape, u64), Issue> {
    Ok((Shape::new(input.c, 1, 1), tri!(elements(input))))
}

/// Fully connected (flattens its input implicitly): `F×1×1`, Eq. 2 weight `H·W·C·F`.
pub(crate) const fn fc(input: Shape, out_features: usize) -> Result<(Shape, u64), Issue> {
    if out_features == 0 {
        return Err(Issue::Zero("out_features"));
    }
    let weight = tri!(mul(tri!(elements(input)), out_features));
    Ok((Shape::new(out_features, 1, 1), weight))
}

/// Element-wise layers (relu, batchnorm, softmax, residual add, and the copy of a concat):
/// shape kept, weight = element count.
pub(crate) const fn elementwise(input: Shape) -> Result<(Shape, u64), Issue> {
    Ok((input, tri!(elements(input))))
}

/// Flatten: `(C·H·W)×1×1`, weight 0 (a reshape, no arithmetic).
pub(crate) const fn flatten(input: Shape) -> Result<(Shape, u64), Issue> {
    let n = tri!(elements(input));
    if n > usize::MAX as u64 {
        return Err(Issue::Overflow);
    }
    Ok((Shape::new(n as usize, 1, 1), 0))
}
