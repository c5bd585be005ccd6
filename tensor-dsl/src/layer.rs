//! Layer descriptors: what a layer computes, and the layer as placed in a net.

use std::fmt;

use crate::Shape;
use crate::infer::{self, Issue};

/// What a layer computes. Sizes are `(height, width)` pairs; every layer is batch 1.
///
/// The weight each kind gets (the paper's compile-time hint) is listed in the
/// [crate docs](crate#compile-time-hints-layer-weights).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LayerKind {
    /// 2-D convolution (groups = 1, no bias in the weight model), optionally with a fused ReLU.
    Conv2d {
        /// Output channels `K`.
        out_channels: usize,
        /// Kernel `(R, S)`.
        kernel: (usize, usize),
        /// Stride `(sh, sw)`.
        stride: (usize, usize),
        /// Zero padding `(ph, pw)` on each side.
        padding: (usize, usize),
        /// A ReLU fused into the layer (it is not a layer of its own).
        relu: bool,
    },
    /// Max pooling (floor mode; padding at most half the kernel).
    MaxPool {
        /// Window `(R, S)`.
        kernel: (usize, usize),
        /// Stride `(sh, sw)`.
        stride: (usize, usize),
        /// Padding `(ph, pw)`.
        padding: (usize, usize),
    },
    /// Average pooling (floor mode; padding at most half the kernel).
    AvgPool {
        /// Window `(R, S)`.
        kernel: (usize, usize),
        /// Stride `(sh, sw)`.
        stride: (usize, usize),
        /// Padding `(ph, pw)`.
        padding: (usize, usize),
    },
    /// Average over the whole `H×W` plane: `C×H×W → C×1×1`.
    GlobalAvgPool,
    /// Fully connected layer. It flattens its input implicitly (`C×H×W → F×1×1`), so no
    /// `Flatten` layer is needed before it.
    Fc {
        /// Output features `F`.
        out_features: usize,
        /// A ReLU fused into the layer.
        relu: bool,
    },
    /// A stand-alone ReLU (prefer the fused flag of `Conv2d`/`Fc`).
    Relu,
    /// Batch normalisation. The nets crate folds it into the preceding convolution when it
    /// loads weights, but it is a declared layer here.
    BatchNorm,
    /// Adds the output of an earlier layer, named `from`, to the layer's input (the
    /// previous layer's output, or its [`Source`]), optionally followed by a fused ReLU
    /// (ResNet's `out = relu(bn3 + shortcut)`). Both operands must have the same shape.
    /// `from` may be [`INPUT`] (the net input).
    ResidualAdd {
        /// Name of the earlier layer whose output is added (or [`INPUT`]).
        from: String,
        /// A ReLU fused into the layer, applied after the addition.
        relu: bool,
    },
    /// Reshape `C×H×W → (C·H·W)×1×1`.
    Flatten,
    /// Softmax over all elements.
    Softmax,
}

impl LayerKind {
    /// A short lowercase name: `conv`, `maxpool`, `avgpool`, `gap`, `fc`, `relu`,
    /// `batchnorm`, `add`, `flatten`, `softmax`.
    ///
    /// ```
    /// # use taopipe_dsl::LayerKind;
    /// assert_eq!(LayerKind::GlobalAvgPool.short_name(), "gap");
    /// ```
    pub fn short_name(&self) -> &'static str {
        match self {
            LayerKind::Conv2d { .. } => "conv",
            LayerKind::MaxPool { .. } => "maxpool",
            LayerKind::AvgPool { .. } => "avgpool",
            LayerKind::GlobalAvgPool => "gap",
            LayerKind::Fc { .. } => "fc",
            LayerKind::Relu => "relu",
            LayerKind::BatchNorm => "batchnorm",
            LayerKind::ResidualAdd { .. } => "add",
            LayerKind::Flatten => "flatten",
            LayerKind::Softmax => "softmax",
        }
    }

    /// Whether a ReLU is fused into this layer (conv, FC or residual add with the flag set).
    ///
    /// ```
    /// # use taopipe_dsl::LayerKind;
    /// assert!(LayerKind::Fc { out_features: 10, relu: true }.fused_relu());
    /// assert!(LayerKind::ResidualAdd { from: "c1".into(), relu: true }.fused_relu());
    /// assert!(!LayerKind::Relu.fused_relu());
    /// ```
    pub fn fused_relu(&self) -> bool {
        matches!(
            self,
            LayerKind::Conv2d { relu: true, .. }
                | LayerKind::Fc { relu: true, .. }
                | LayerKind::ResidualAdd { relu: true, .. }
        )
    }

    /// Whether a layer of this kind opens a new pipeline [`Unit`](crate::Unit) when it
    /// reads the previous layer: `Conv2d`, `Fc`, `MaxPool`, `AvgPool`, `GlobalAvgPool`.
    ///
    /// ```
    /// # use taopipe_dsl::LayerKind;
    /// assert!(LayerKind::GlobalAvgPool.opens_unit());
    /// assert!(!LayerKind::BatchNorm.opens_unit());
    /// ```
    pub fn opens_unit(&self) -> bool {
        matches!(
            self,
            LayerKind::Conv2d { .. }
                | LayerKind::Fc { .. }
                | LayerKind::MaxPool { .. }
                | LayerKind::AvgPool { .. }
                | LayerKind::GlobalAvgPool
        )
    }

    /// Output shape and weight on `input`, residual adds excepted (their shape check needs
    /// the net; here they are element-wise).
    pub(crate) fn infer(&self, input: Shape) -> Result<(Shape, u64), Issue> {
        match *self {
            LayerKind::Conv2d {
                out_channels,
                kernel,
                stride,
                padding,
                ..
            } => infer::conv(input, out_channels, kernel, stride, padding),
            LayerKind::MaxPool {
                kernel,
                stride,
                padding,
            }
            | LayerKind::AvgPool {
                kernel,
                stride,
                padding,
            } => infer::pool(input, kernel, stride, padding),
            LayerKind::GlobalAvgPool => infer::global_avg_pool(input),
            LayerKind::Fc { out_features, .. } => infer::fc(input, out_features),
            LayerKind::Relu
            | LayerKind::BatchNorm
            | LayerKind::ResidualAdd { .. }
            | LayerKind::Softmax => infer::elementwise(input),
            LayerKind::Flatten => infer::flatten(input),
        }
    }

    /// `(kernel, padding)` of windowed kinds, for error messages.
    pub(crate) fn window(&self) -> ((usize, usize), (usize, usize)) {
        match *self {
            LayerKind::Conv2d {
                kernel, padding, ..
            }
            | LayerKind::MaxPool {
                kernel, padding, ..
            }
            | LayerKind::AvgPool {
                kernel, padding, ..
            } => (kernel, padding),
            _ => ((1, 1), (0, 0)),
        }
    }
}

fn pair(f: &mut fmt::Formatter<'_>, (a, b): (usize, usize)) -> fmt::Result {
    if a == b {
        write!(f, "{a}")
    } else {
        write!(f, "{a}x{b}")
    }
}

impl fmt::Display for LayerKind {
    /// `conv 64 3x3 s1 p1 +relu`, `maxpool 2x2 s2`, `fc 4096 +relu`, `add(conv2) +relu`, …
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayerKind::Conv2d {
                out_channels,
                kernel,
                stride,
                padding,
                relu,
            } => {
                write!(f, "conv {out_channels} {}x{} s", kernel.0, kernel.1)?;
                pair(f, *stride)?;
                write!(f, " p")?;
                pair(f, *padding)?;
                if *relu {
                    write!(f, " +relu")?;
                }
                Ok(())
            }
            LayerKind::MaxPool {
                kernel,
                stride,
                padding,
            }
            | LayerKind::AvgPool {
                kernel,
                stride,
                padding,
            } => {
                write!(f, "{} {}x{} s", self.short_name(), kernel.0, kernel.1)?;
                pair(f, *stride)?;
                if *padding != (0, 0) {
                    write!(f, " p")?;
                    pair(f, *padding)?;
                }
                Ok(())
            }
            LayerKind::Fc { out_features, relu } => {
                write!(f, "fc {out_features}")?;
                if *relu {
                    write!(f, " +relu")?;
                }
                Ok(())
            }
            LayerKind::ResidualAdd { from, relu } => {
                write!(f, "add({from})")?;
                if *relu {
                    write!(f, " +relu")?;
                }
                Ok(())
            }
            other => f.write_str(other.short_name()),
        }
    }
}

/// The reserved source name for the net input: `layer_from(name, kind, INPUT)` (or
/// `from input` in [`net!`](crate::net)) makes a layer read the net's input, and
/// `add(input)` adds it. No layer may be named `input`.
pub const INPUT: &str = "input";

/// Where a tensor a layer reads comes from, resolved by [`crate::NetSpecBuilder::build`]
/// so that executors need not look names up.
///
/// The order is `Previous < Input < Layer(0) < Layer(1) < …` (used to sort
/// [`crate::NetSpec::live_across`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// The previous layer's output (the net input for the first layer): the default.
    Previous,
    /// The net input ([`INPUT`]).
    Input,
    /// The output of the earlier layer with this index.
    Layer(usize),
}

impl Source {
    /// The concrete producer for the layer at index `at`: `Previous` becomes
    /// `Layer(at - 1)`, or `Input` when `at == 0`; `Input` and `Layer` are kept.
    ///
    /// ```
    /// # use taopipe_dsl::Source;
    /// assert_eq!(Source::Previous.resolve(0), Source::Input);
    /// assert_eq!(Source::Previous.resolve(5), Source::Layer(4));
    /// assert_eq!(Source::Layer(2).resolve(5), Source::Layer(2));
    /// ```
    pub fn resolve(self, at: usize) -> Source {
        match self {
            Source::Previous => at.checked_sub(1).map_or(Source::Input, Source::Layer),
            other => other,
        }
    }
}

impl fmt::Display for Source {
    /// `previous`, `input`, `#3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Previous => f.write_str("previous"),
            Source::Input => f.write_str(INPUT),
            Source::Layer(i) => write!(f, "#{i}"),
        }
    }
}

/// A layer as placed in a [`crate::NetSpec`]: its name, kind, input source, inferred
/// shapes and weight.
///
/// Only [`crate::NetSpecBuilder::build`] makes these, so `input`, `output`, `weight` and
/// the resolved sources are always consistent with `kind` and the net.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Layer {
    name: String,
    kind: LayerKind,
    input_from: Option<String>,
    source: Source,
    residual: Option<Source>,
    input: Shape,
    output: Shape,
    weight: u64,
}

/// The parts of a [`Layer`], for [`Layer::new`].
pub(crate) struct LayerParts {
    pub(crate) name: String,
    pub(crate) kind: LayerKind,
    pub(crate) input_from: Option<String>,
    pub(crate) source: Source,
    pub(crate) residual: Option<Source>,
    pub(crate) input: Shape,
    pub(crate) output: Shape,
    pub(crate) weight: u64,
}

impl Layer {
    pub(crate) fn new(parts: LayerParts) -> Self {
        let LayerParts {
            name,
            kind,
            input_from,
            source,
            residual,
            input,
            output,
            weight,
        } = parts;
        Layer {
            name,
            kind,
            input_from,
            source,
            residual,
            input,
            output,
            weight,
        }
    }

    /// The layer's name (unique in its net; torchvision-style names load weights by name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What it computes.
    pub fn kind(&self) -> &LayerKind {
        &self.kind
    }

    /// The name of the layer (or [`INPUT`]) it reads, as declared; `None` = the previous
    /// layer (the default).
    pub fn input_from(&self) -> Option<&str> {
        self.input_from.as_deref()
    }

    /// Where its input comes from, resolved: [`Source::Previous`] unless declared with a
    /// `from`, then [`Source::Input`] or [`Source::Layer`] (an earlier index).
    pub fn source(&self) -> Source {
        self.source
    }

    /// For a [`LayerKind::ResidualAdd`], where the added tensor comes from, resolved
    /// ([`Source::Input`] or [`Source::Layer`]); `None` for every other kind.
    pub fn residual_source(&self) -> Option<Source> {
        self.residual
    }

    /// Whether this layer starts a new pipeline [`Unit`](crate::Unit) (unless it is the
    /// first layer, which always does): a [`LayerKind::opens_unit`] kind reading the
    /// previous layer ([`Source::Previous`]).
    pub fn opens_unit(&self) -> bool {
        self.source == Source::Previous && self.kind.opens_unit()
    }

    /// Its input shape (the output shape of its [`Source`]).
    pub fn input(&self) -> Shape {
        self.input
    }

    /// Its output shape.
    pub fn output(&self) -> Shape {
        self.output
    }

    /// Its compile-time weight (paper Eq. 1 / Eq. 2 / input size; see the crate docs).
    pub fn weight(&self) -> u64 {
        self.weight
    }
}
