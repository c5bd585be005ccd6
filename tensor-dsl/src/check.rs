//! The compile-time half of `net!`: a `const` shape checker.
//!
//! `net!` expands, when the input shape is made of literals, to an inline `const { … }`
//! block that replays the declaration through [`ConstNet`]. `ConstNet` calls the same
//! `const fn`s the runtime builder uses (`infer.rs`), and on a problem panics with a
//! message naming the net, the layer and the shapes. A panic during constant evaluation
//! is a compile error (E0080), so a net that does not fit does not build.
//!
//! Nothing here is meant to be called by hand; it is public only for the macro.

use crate::infer::{self, Issue};
use crate::layer::INPUT;
use crate::{LayerKind, Shape};

/// One layer kind with `Copy` data, buildable in `const` context (the macro's view of a
/// [`LayerKind`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ConstKind {
    /// See [`LayerKind::Conv2d`].
    Conv {
        /// Output channels.
        out: usize,
        /// Kernel.
        kernel: (usize, usize),
        /// Stride.
        stride: (usize, usize),
        /// Padding.
        padding: (usize, usize),
        /// Groups.
        groups: usize,
        /// Fused ReLU.
        relu: bool,
    },
    /// See [`LayerKind::MaxPool`].
    MaxPool {
        /// Window.
        kernel: (usize, usize),
        /// Stride.
        stride: (usize, usize),
        /// Padding before.
        padding: (usize, usize),
        /// Padding after.
        padding_end: (usize, usize),
        /// Ceil mode.
        ceil: bool,
    },
    /// See [`LayerKind::AvgPool`].
    AvgPool {
        /// Window.
        kernel: (usize, usize),
        /// Stride.
        stride: (usize, usize),
        /// Padding before.
        padding: (usize, usize),
        /// Padding after.
        padding_end: (usize, usize),
        /// Ceil mode.
        ceil: bool,
    },
    /// See [`LayerKind::GlobalAvgPool`].
    GlobalAvgPool,
    /// See [`LayerKind::Fc`].
    Fc {
        /// Output features.
        out: usize,
        /// Fused ReLU.
        relu: bool,
    },
    /// See [`LayerKind::Relu`].
    Relu,
    /// See [`LayerKind::Clip`].
    Clip {
        /// Lower bound.
        min: f32,
        /// Upper bound.
        max: f32,
    },
    /// See [`LayerKind::LeakyRelu`].
    LeakyRelu {
        /// Factor of negative inputs.
        slope: f32,
    },
    /// See [`LayerKind::Concat`].
    Concat {
        /// The layers joined, in channel order.
        from: &'static [&'static str],
    },
    /// See [`LayerKind::BatchNorm`].
    BatchNorm {
        /// The ε added to the variance.
        eps: f32,
    },
    /// See [`LayerKind::ResidualAdd`].
    Add {
        /// The earlier layer (or `input`) whose output is added.
        from: &'static str,
        /// Fused ReLU.
        relu: bool,
    },
    /// See [`LayerKind::Flatten`].
    Flatten,
    /// See [`LayerKind::Softmax`].
    Softmax,
}

impl ConstKind {
    /// The runtime descriptor.
    pub fn to_kind(self) -> LayerKind {
        match self {
            ConstKind::Conv {
                out,
                kernel,
                stride,
                padding,
                groups,
                relu,
            } => LayerKind::Conv2d {
                out_channels: out,
                kernel,
                stride,
                padding,
                groups,
                relu,
            },
            ConstKind::MaxPool {
                kernel,
                stride,
                padding,
                padding_end,
                ceil,
            } => LayerKind::MaxPool {
                kernel,
                stride,
                padding,
                padding_end,
                ceil,
            },
            ConstKind::AvgPool {
                kernel,
                stride,
                padding,
                padding_end,
                ceil,
            } => LayerKind::AvgPool {
                kernel,
                stride,
                padding,
                padding_end,
                ceil,
            },
            ConstKind::GlobalAvgPool => LayerKind::GlobalAvgPool,
            ConstKind::Fc { out, relu } => LayerKind::Fc {
                out_features: out,
                relu,
            },
            ConstKind::Relu => LayerKind::Relu,
            ConstKind::Clip { min, max } => LayerKind::Clip { min, max },
            ConstKind::LeakyRelu { slope } => LayerKind::LeakyRelu { slope },
            ConstKind::Concat { from } => LayerKind::Concat {
                from: from.iter().map(|f| f.to_string()).collect(),
            },
            ConstKind::BatchNorm { eps } => LayerKind::BatchNorm { eps },
            ConstKind::Add { from, relu } => LayerKind::ResidualAdd {
                from: from.to_string(),
                relu,
            },
            ConstKind::Flatten => LayerKind::Flatten,
            ConstKind::Softmax => LayerKind::Softmax,
        }
    }
}

/// Parses a size token of `net!` (`stringify!`-ed): `3` → `(3, 3)`, `3x5` → `(3, 5)`.
///
/// Panics (a compile error when called in `const`) on anything else.
pub const fn dims(s: &str) -> (usize, usize) {
    let b = s.as_bytes();
    let mut i = 0;
    let mut first = 0usize;
    let mut second = 0usize;
    let mut in_second = false;
    let mut digits = 0usize;
    while i < b.len() {
        let c = b[i];
        if c == b'x' && !in_second && digits > 0 {
            in_second = true;
            digits = 0;
        } else if c == b'_' {
            // digit separator, as in Rust literals
        } else if c.is_ascii_digit() {
            let d = (c - b'0') as usize;
            let slot = if in_second { second } else { first };
            let next = match slot.checked_mul(10) {
                Some(v) => v.checked_add(d),
                None => None,
            };
            let Some(next) = next else {
                fail_token("is too large", s)
            };
            if in_second {
                second = next;
            } else {
                first = next;
            }
            digits += 1;
        } else {
            fail_token("is not a size: write N or NxM (e.g. 3 or 3x3)", s);
        }
        i += 1;
    }
    if digits == 0 {
        fail_token("is not a size: write N or NxM (e.g. 3 or 3x3)", s);
    }
    if in_second {
        (first, second)
    } else {
        (first, first)
    }
}

const fn fail_token(what: &str, token: &str) -> ! {
    let mut m = Msg::new();
    m = m.s("net!: `").s(token).s("` ").s(what);
    m.panic()
}

/// A fixed-capacity message buffer, so `const` panics can name layers and shapes.
struct Msg {
    buf: [u8; 320],
    len: usize,
}

impl Msg {
    const fn new() -> Self {
        Msg {
            buf: [0; 320],
            len: 0,
        }
    }

    /// Appends `s` (whole, or nothing more once full: names are ASCII-ish identifiers).
    const fn s(mut self, s: &str) -> Self {
        let b = s.as_bytes();
        if self.len + b.len() > self.buf.len() {
            return self;
        }
        let mut i = 0;
        while i < b.len() {
            self.buf[self.len] = b[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    const fn n(mut self, mut v: usize) -> Self {
        let mut digits = [0u8; 20];
        let mut k = 0;
        loop {
            digits[k] = b'0' + (v % 10) as u8;
            k += 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        if self.len + k > self.buf.len() {
            return self;
        }
        while k > 0 {
            k -= 1;
            self.buf[self.len] = digits[k];
            self.len += 1;
        }
        self
    }

    const fn pair(self, p: (usize, usize)) -> Self {
        self.n(p.0).s("x").n(p.1)
    }

    const fn shape(self, s: Shape) -> Self {
        self.n(s.c).s("x").n(s.h).s("x").n(s.w)
    }

    const fn panic(self) -> ! {
        let (used, _) = self.buf.split_at(self.len);
        match core::str::from_utf8(used) {
            Ok(text) => panic!("{}", text),
            Err(_) => panic!("net!: a layer does not fit its input"),
        }
    }
}

/// The `const` replay of a `net!` declaration with `N` layers.
#[derive(Debug, Clone, Copy)]
pub struct ConstNet<const N: usize> {
    net: &'static str,
    names: [&'static str; N],
    outputs: [Shape; N],
    len: usize,
    input: Shape,
    current: Shape,
}

const fn same_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl<const N: usize> ConstNet<N> {
    /// Starts the replay; panics if a dimension is zero.
    pub const fn new(net: &'static str, c: usize, h: usize, w: usize) -> Self {
        let input = Shape::new(c, h, w);
        if input.has_zero_dim() {
            Msg::new()
                .s("net!: net `")
                .s(net)
                .s("`: input shape ")
                .shape(input)
                .s(" has a zero dimension")
                .panic()
        }
        ConstNet {
            net,
            names: [""; N],
            outputs: [Shape::new(0, 0, 0); N],
            len: 0,
            input,
            current: input,
        }
    }

    /// The running output shape.
    pub const fn output(&self) -> Shape {
        self.current
    }

    const fn find(&self, name: &str) -> Option<usize> {
        let mut i = 0;
        while i < self.len {
            if same_str(self.names[i], name) {
                return Some(i);
            }
            i += 1;
        }
        None
    }

    /// The output shape of `name`: `input` (the net input) or an earlier layer.
    const fn source(&self, name: &str) -> Option<Shape> {
        if same_str(name, INPUT) {
            return Some(self.input);
        }
        match self.find(name) {
            Some(j) => Some(self.outputs[j]),
            None => None,
        }
    }

    const fn head(&self, name: &str) -> Msg {
        Msg::new()
            .s("net!: layer `")
            .s(name)
            .s("` of net `")
            .s(self.net)
            .s("`: ")
    }

    /// The first input of a concat, once every input is known to be an earlier layer (or
    /// `input`) of the same height and width as the first.
    const fn concat_input(&self, name: &str, joined: &[&str]) -> Shape {
        let mut first = Shape::new(0, 0, 0);
        let mut i = 0;
        while i < joined.len() {
            let Some(shape) = self.source(joined[i]) else {
                self.head(name)
                    .s("concat input `")
                    .s(joined[i])
                    .s("` is not an earlier layer (nor `input`)")
                    .panic()
            };
            if i == 0 {
                first = shape;
            } else if shape.h != first.h || shape.w != first.w {
                self.head(name)
                    .s("concat of `")
                    .s(joined[0])
                    .s("` (")
                    .shape(first)
                    .s(") and `")
                    .s(joined[i])
                    .s("` (")
                    .shape(shape)
                    .s("): heights and widths differ")
                    .panic()
            }
            i += 1;
        }
        first
    }

    /// A concat's output: `first`'s plane, the channels of every input summed.
    const fn concat_output(&self, joined: &[&str], first: Shape) -> Shape {
        let mut channels = 0usize;
        let mut i = 0;
        while i < joined.len() {
            if let Some(shape) = self.source(joined[i]) {
                channels = match channels.checked_add(shape.c) {
                    Some(c) => c,
                    None => usize::MAX,
                };
            }
            i += 1;
        }
        Shape::new(channels, first.h, first.w)
    }

    /// Checks one layer, reading the previous layer's output or, with `from`, the output
    /// of the earlier layer (or `input`) so named, and appends it; panics with a message
    /// naming the layer on a problem.
    pub const fn push(
        mut self,
        name: &'static str,
        kind: ConstKind,
        from: Option<&'static str>,
    ) -> Self {
        if self.len >= N {
            self.head(name)
                .s("more layers than counted (macro bug)")
                .panic()
        }
        if same_str(name, INPUT) {
            self.head(name)
                .s("the name `input` is reserved for the net input")
                .panic()
        }
        if self.find(name).is_some() {
            self.head(name).s("the name is used twice").panic()
        }
        let input = match (from, kind) {
            (_, ConstKind::Concat { from: joined }) => {
                if joined.is_empty() {
                    self.head(name)
                        .s("a concat needs at least one input")
                        .panic()
                }
                self.concat_input(name, joined)
            }
            (None, _) => self.current,
            (Some(from), _) => match self.source(from) {
                Some(shape) => shape,
                None => self
                    .head(name)
                    .s("input source `")
                    .s(from)
                    .s("` is not an earlier layer (nor `input`)")
                    .panic(),
            },
        };
        let (result, kernel, padding) = match kind {
            ConstKind::Conv {
                out,
                kernel,
                stride,
                padding,
                groups,
                ..
            } => (
                infer::conv(input, out, kernel, stride, padding, groups),
                kernel,
                padding,
            ),
            ConstKind::MaxPool {
                kernel,
                stride,
                padding,
                padding_end,
                ceil,
            }
            | ConstKind::AvgPool {
                kernel,
                stride,
                padding,
                padding_end,
                ceil,
            } => (
                infer::pool(input, kernel, stride, (padding, padding_end), ceil),
                kernel,
                padding,
            ),
            ConstKind::Clip { min, max } => (infer::clip(input, min, max), (1, 1), (0, 0)),
            ConstKind::LeakyRelu { slope } => (infer::leaky_relu(input, slope), (1, 1), (0, 0)),
            ConstKind::Concat { from: joined } => (
                infer::elementwise(self.concat_output(joined, input)),
                (1, 1),
                (0, 0),
            ),
            ConstKind::GlobalAvgPool => (infer::global_avg_pool(input), (1, 1), (0, 0)),
            ConstKind::Fc { out, .. } => (infer::fc(input, out), (1, 1), (0, 0)),
            ConstKind::BatchNorm { eps } => (infer::batch_norm(input, eps), (1, 1), (0, 0)),
            ConstKind::Relu | ConstKind::Softmax => (infer::elementwise(input), (1, 1), (0, 0)),
            ConstKind::Add { from, .. } => {
                let Some(other) = self.source(from) else {
                    self.head(name)
                        .s("residual source `")
                        .s(from)
                        .s("` is not an earlier layer (nor `input`)")
                        .panic()
                };
                if !other.same_as(&input) {
                    self.head(name)
                        .s("residual add of input ")
                        .shape(input)
                        .s(" and output ")
                        .shape(other)
                        .s(" of `")
                        .s(from)
                        .s("`: shapes differ")
                        .panic()
                }
                (infer::elementwise(input), (1, 1), (0, 0))
            }
            ConstKind::Flatten => (infer::flatten(input), (1, 1), (0, 0)),
        };
        let output = match result {
            Ok((output, _weight)) => output,
            Err(Issue::Zero(what)) => self
                .head(name)
                .s(what)
                .s(" must be at least 1 (input ")
                .shape(input)
                .s(")")
                .panic(),
            Err(Issue::KernelTooLarge) => self
                .head(name)
                .s("kernel ")
                .pair(kernel)
                .s(" with padding ")
                .pair(padding)
                .s(" does not fit input ")
                .shape(input)
                .panic(),
            Err(Issue::PoolPadding) => self
                .head(name)
                .s("pooling padding ")
                .pair(padding)
                .s(" before, or its padding after, does not suit kernel ")
                .pair(kernel)
                .s(" (before: at most half the kernel; after: below it)")
                .panic(),
            Err(Issue::Groups) => self
                .head(name)
                .s("the groups do not divide the input channels of ")
                .shape(input)
                .s(" and the output channels")
                .panic(),
            Err(Issue::Parameter) => self
                .head(name)
                .s("a clip's bounds must be numbers, min not above max; a leaky ReLU's slope finite; a batchnorm's eps positive")
                .panic(),
            Err(Issue::Overflow) => self
                .head(name)
                .s("output shape or weight overflows (input ")
                .shape(input)
                .s(")")
                .panic(),
        };
        self.names[self.len] = name;
        self.outputs[self.len] = output;
        self.len += 1;
        self.current = output;
        self
    }
}
