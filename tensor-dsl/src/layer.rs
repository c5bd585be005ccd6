//! Layer descriptors: what a layer computes, and the layer as placed in a net.

use std::fmt;

use crate::Shape;
use crate::infer::{self, Issue};

/// What a layer computes. Sizes are `(height, width)` pairs; every layer is batch 1.
///
/// The weight each kind gets (the paper's compile-time hint) is listed in the
/// [crate docs](crate#compile-time-hints-layer-weights).
///
/// It is `PartialEq` but not `Eq`: [`LayerKind::Clip`] and [`LayerKind::LeakyRelu`]
/// hold floats.
#[derive(Debug, Clone, PartialEq)]
pub enum LayerKind {
    /// 2-D convolution (no bias in the weight model), optionally grouped, optionally with a
    /// fused ReLU.
    Conv2d {
        /// Output channels `K`.
        out_channels: usize,
        /// Kernel `(R, S)`.
        kernel: (usize, usize),
        /// Stride `(sh, sw)`.
        stride: (usize, usize),
        /// Zero padding `(ph, pw)` on each side.
        padding: (usize, usize),
        /// Groups `g` (PyTorch's `groups`, ONNX's `group`): input and output channels are
        /// cut into `g` groups, and output group `i` reads input group `i` only. `1` is a
        /// plain convolution; `g` = input channels = output channels is a depthwise one.
        /// Both channel counts must be multiples of it.
        groups: usize,
        /// A ReLU fused into the layer (it is not a layer of its own).
        relu: bool,
    },
    /// Max pooling (floor mode unless `ceil`; padded positions are not values).
    MaxPool {
        /// Window `(R, S)`.
        kernel: (usize, usize),
        /// Stride `(sh, sw)`.
        stride: (usize, usize),
        /// Padding `(ph, pw)` before the first row and column; at most half the kernel.
        padding: (usize, usize),
        /// Padding `(ph, pw)` after the last row and column; below the kernel. Usually
        /// `padding`; ONNX's `SAME_UPPER` (YOLO's last pool) pads more at the end.
        padding_end: (usize, usize),
        /// PyTorch's and ONNX's `ceil_mode`: the output size rounds up, so a last window
        /// may hang past the end (it must still start inside the input or the padding
        /// before it); what hangs past is not a value either.
        ceil: bool,
    },
    /// Average pooling (as [`LayerKind::MaxPool`]; the mean of the window's in-bounds
    /// elements, padding excluded).
    AvgPool {
        /// Window `(R, S)`.
        kernel: (usize, usize),
        /// Stride `(sh, sw)`.
        stride: (usize, usize),
        /// Padding before, as for max pooling.
        padding: (usize, usize),
        /// Padding after, as for max pooling.
        padding_end: (usize, usize),
        /// Ceil mode, as for max pooling.
        ceil: bool,
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
    /// `min(max(x, min), max)`, element-wise: ReLU6 is `Clip { min: 0.0, max: 6.0 }`
    /// (MobileNet). A convolution's kernel applies it in its store when it reads the
    /// convolution alone, as it does a `Relu`.
    Clip {
        /// The lower bound.
        min: f32,
        /// The upper bound (not below `min`).
        max: f32,
    },
    /// `x` where `x ≥ 0`, else `slope · x`, element-wise (YOLO's leaky ReLU, `slope` 0.1).
    LeakyRelu {
        /// The factor of negative inputs (finite).
        slope: f32,
    },
    /// Batch normalisation, `(x − mean) / sqrt(var + eps) · γ + β` per channel, with the
    /// statistics and `γ`, `β` loaded as weights. The nets crate folds it into the
    /// preceding convolution when it loads weights, but it is a declared layer here.
    BatchNorm {
        /// The ε added to the variance: PyTorch's default 1e-5 ([`LayerKind::BN_EPS`]);
        /// GoogLeNet's convolutions use 1e-3.
        eps: f32,
    },
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
    /// Joins the outputs of the layers `from` (earlier layers, or [`INPUT`]) along the
    /// channels, in that order: GoogLeNet's inception and SqueezeNet's fire modules. They
    /// must have the same height and width. The layer reads `from` only, never the previous
    /// layer unless named, so it has no `from` of its own: its [`Layer::source`] is the
    /// first of the list.
    Concat {
        /// The layers joined, in channel order (at least one).
        from: Vec<String>,
    },
    /// Reshape `C×H×W → (C·H·W)×1×1`.
    Flatten,
    /// Softmax over all elements.
    Softmax,
}

impl LayerKind {
    /// A plain (ungrouped) convolution without fused activation: `out` channels of a
    /// `kernel` window, `stride`, `padding` on each side. The common case of
    /// [`LayerKind::Conv2d`], for builders and tests.
    ///
    /// ```
    /// # use taopipe_dsl::LayerKind;
    /// let k = LayerKind::conv(64, (3, 3), (1, 1), (1, 1));
    /// assert!(matches!(k, LayerKind::Conv2d { groups: 1, relu: false, .. }));
    /// ```
    pub fn conv(
        out: usize,
        kernel: (usize, usize),
        stride: (usize, usize),
        padding: (usize, usize),
    ) -> LayerKind {
        LayerKind::Conv2d {
            out_channels: out,
            kernel,
            stride,
            padding,
            groups: 1,
            relu: false,
        }
    }

    /// Max pooling in floor mode with the same padding on both sides.
    ///
    /// ```
    /// # use taopipe_dsl::LayerKind;
    /// let k = LayerKind::max_pool((3, 3), (2, 2), (1, 1));
    /// assert!(matches!(k, LayerKind::MaxPool { padding_end: (1, 1), ceil: false, .. }));
    /// ```
    pub fn max_pool(
        kernel: (usize, usize),
        stride: (usize, usize),
        padding: (usize, usize),
    ) -> LayerKind {
        LayerKind::MaxPool {
            kernel,
            stride,
            padding,
            padding_end: padding,
            ceil: false,
        }
    }

    /// Average pooling in floor mode with the same padding on both sides.
    pub fn avg_pool(
        kernel: (usize, usize),
        stride: (usize, usize),
        padding: (usize, usize),
    ) -> LayerKind {
        LayerKind::AvgPool {
            kernel,
            stride,
            padding,
            padding_end: padding,
            ceil: false,
        }
    }

    /// ReLU6, `Clip { min: 0.0, max: 6.0 }`.
    pub const RELU6: LayerKind = LayerKind::Clip { min: 0.0, max: 6.0 };

    /// PyTorch's default batch-norm ε.
    pub const BN_EPS: f32 = 1e-5;

    /// Batch normalisation with PyTorch's default ε.
    pub const BATCH_NORM: LayerKind = LayerKind::BatchNorm {
        eps: LayerKind::BN_EPS,
    };

    /// A short lowercase name: `conv`, `maxpool`, `avgpool`, `gap`, `fc`, `relu`, `clip`,
    /// `leakyrelu`, `batchnorm`, `add`, `concat`, `flatten`, `softmax`.
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
            LayerKind::Clip { .. } => "clip",
            LayerKind::LeakyRelu { .. } => "leakyrelu",
            LayerKind::BatchNorm { .. } => "batchnorm",
            LayerKind::ResidualAdd { .. } => "add",
            LayerKind::Concat { .. } => "concat",
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

    /// Whether this is an element-wise activation (`Relu`, `Clip`, `LeakyRelu`): what a
    /// convolution may apply in its store.
    ///
    /// ```
    /// # use taopipe_dsl::LayerKind;
    /// assert!(LayerKind::RELU6.is_activation());
    /// assert!(!LayerKind::BATCH_NORM.is_activation());
    /// ```
    pub fn is_activation(&self) -> bool {
        matches!(
            self,
            LayerKind::Relu | LayerKind::Clip { .. } | LayerKind::LeakyRelu { .. }
        )
    }

    /// Whether a layer of this kind opens a new pipeline [`Unit`](crate::Unit) when it
    /// reads the previous layer: `Conv2d`, `Fc`, `MaxPool`, `AvgPool`, `GlobalAvgPool`.
    ///
    /// ```
    /// # use taopipe_dsl::LayerKind;
    /// assert!(LayerKind::GlobalAvgPool.opens_unit());
    /// assert!(!LayerKind::BATCH_NORM.opens_unit());
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

    /// Output shape and weight on `input`, residual adds and concats excepted (their shape
    /// checks need the net; here they are element-wise).
    pub(crate) fn infer(&self, input: Shape) -> Result<(Shape, u64), Issue> {
        match *self {
            LayerKind::Conv2d {
                out_channels,
                kernel,
                stride,
                padding,
                groups,
                ..
            } => infer::conv(input, out_channels, kernel, stride, padding, groups),
            LayerKind::MaxPool {
                kernel,
                stride,
                padding,
                padding_end,
                ceil,
            }
            | LayerKind::AvgPool {
                kernel,
                stride,
                padding,
                padding_end,
                ceil,
            } => infer::pool(input, kernel, stride, (padding, padding_end), ceil),
            LayerKind::GlobalAvgPool => infer::global_avg_pool(input),
            LayerKind::Fc { out_features, .. } => infer::fc(input, out_features),
            LayerKind::Clip { min, max } => infer::clip(input, min, max),
            LayerKind::LeakyRelu { slope } => infer::leaky_relu(input, slope),
            LayerKind::Relu
            | LayerKind::ResidualAdd { .. }
            | LayerKind::Concat { .. }
            | LayerKind::Softmax => infer::elementwise(input),
            LayerKind::BatchNorm { eps } => infer::batch_norm(input, eps),
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
    /// `conv 64 3x3 s1 p1 +relu`, `conv 32 3x3 s1 p1 g32`, `maxpool 3x3 s2 ceil`,
    /// `fc 4096 +relu`, `add(conv2) +relu`, `concat(a, b)`, `clip 0..6`, …
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayerKind::Conv2d {
                out_channels,
                kernel,
                stride,
                padding,
                groups,
                relu,
            } => {
                write!(f, "conv {out_channels} {}x{} s", kernel.0, kernel.1)?;
                pair(f, *stride)?;
                write!(f, " p")?;
                pair(f, *padding)?;
                if *groups != 1 {
                    write!(f, " g{groups}")?;
                }
                if *relu {
                    write!(f, " +relu")?;
                }
                Ok(())
            }
            LayerKind::MaxPool {
                kernel,
                stride,
                padding,
                padding_end,
                ceil,
            }
            | LayerKind::AvgPool {
                kernel,
                stride,
                padding,
                padding_end,
                ceil,
            } => {
                write!(f, "{} {}x{} s", self.short_name(), kernel.0, kernel.1)?;
                pair(f, *stride)?;
                if *padding != (0, 0) || padding_end != padding {
                    write!(f, " p")?;
                    pair(f, *padding)?;
                }
                if padding_end != padding {
                    write!(f, " e")?;
                    pair(f, *padding_end)?;
                }
                if *ceil {
                    write!(f, " ceil")?;
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
            LayerKind::Clip { min, max } => write!(f, "clip {min}..{max}"),
            LayerKind::BatchNorm { eps } if *eps != LayerKind::BN_EPS => {
                write!(f, "batchnorm eps {eps}")
            }
            LayerKind::LeakyRelu { slope } => write!(f, "leakyrelu {slope}"),
            LayerKind::ResidualAdd { from, relu } => {
                write!(f, "add({from})")?;
                if *relu {
                    write!(f, " +relu")?;
                }
                Ok(())
            }
            LayerKind::Concat { from } => write!(f, "concat({})", from.join(", ")),
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
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    name: String,
    kind: LayerKind,
    input_from: Option<String>,
    source: Source,
    operands: Vec<Source>,
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
    pub(crate) operands: Vec<Source>,
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
            operands,
            input,
            output,
            weight,
        } = parts;
        Layer {
            name,
            kind,
            input_from,
            source,
            operands,
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
        match self.kind {
            LayerKind::ResidualAdd { .. } => self.operands.first().copied(),
            _ => None,
        }
    }

    /// The tensors it reads besides its input ([`Layer::source`]), resolved, in order:
    /// a residual add's shortcut, a concat's inputs after the first; empty for every other
    /// kind.
    pub fn operands(&self) -> &[Source] {
        &self.operands
    }

    /// Every tensor the layer at index `at` reads, resolved to its producer: its input
    /// ([`Source::resolve`]d), then its [`Layer::operands`].
    ///
    /// ```
    /// use taopipe_dsl::{net, Source};
    ///
    /// let net = net! { fire [8, 8, 8] =>
    ///     squeeze: conv(4, 1x1) relu,
    ///     e1:      conv(8, 1x1) relu from squeeze,
    ///     e3:      conv(8, 3x3, pad 1) relu from squeeze,
    ///     cat:     concat(e1, e3),
    /// }?;
    /// let reads: Vec<Source> = net.layers()[3].reads(3).collect();
    /// assert_eq!(reads, vec![Source::Layer(1), Source::Layer(2)]);
    /// assert_eq!(net.output().c, 16);
    /// # Ok::<(), taopipe_dsl::DslError>(())
    /// ```
    pub fn reads(&self, at: usize) -> impl Iterator<Item = Source> + '_ {
        std::iter::once(self.source.resolve(at)).chain(self.operands.iter().copied())
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
