//! `NetSpec`: a checked chain of layers, and the builder that checks it.

use std::collections::HashMap;
use std::fmt;

use crate::infer::Issue;
use crate::{DslError, Layer, LayerKind, Shape};

/// A net: its name, input shape and the ordered chain of layers with inferred shapes and
/// weights. Made by [`NetSpec::builder`] or the [`net!`](crate::net) macro; always valid.
///
/// Each layer is one pipeline unit (one moldable task in the runtime): a composition
/// (layers per stage) counts entries of [`NetSpec::layers`].
///
/// # Examples
///
/// ```
/// use taopipe_dsl::{NetSpec, Shape};
///
/// let net = NetSpec::builder("tiny", Shape::new(3, 32, 32))
///     .conv_relu("conv1", 16, 3, 1, 1)
///     .max_pool("pool1", 2, 2)
///     .fc("fc", 10)
///     .build()?;
/// assert_eq!(net.len(), 3);
/// assert_eq!(net.output(), Shape::new(10, 1, 1));
/// // Eq. 1: 32·32 (output H·W) · 3 (C) · 3·3 (R·S) · 16 (K)
/// assert_eq!(net.weights()[0], 32 * 32 * 3 * 9 * 16);
/// println!("{net}");
/// # Ok::<(), taopipe_dsl::DslError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetSpec {
    name: String,
    input: Shape,
    layers: Vec<Layer>,
}

impl NetSpec {
    /// Starts declaring a net called `name` on inputs of shape `input`.
    pub fn builder(name: impl Into<String>, input: Shape) -> NetSpecBuilder {
        NetSpecBuilder {
            name: name.into(),
            input,
            pending: Vec::new(),
        }
    }

    /// The net's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The input shape.
    pub fn input(&self) -> Shape {
        self.input
    }

    /// The output shape of the last layer.
    pub fn output(&self) -> Shape {
        self.layers.last().map_or(self.input, Layer::output)
    }

    /// The layers, in order.
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// The layer called `name`.
    pub fn layer(&self, name: &str) -> Option<&Layer> {
        self.layers.iter().find(|l| l.name() == name)
    }

    /// Number of layers (`M` in the paper).
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Always `false` (a built net has at least one layer); present for API symmetry.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// The compile-time hint of every layer, in order: the input of
    /// [`Seeds`](crate::Seeds) and [`SeedIter`](crate::SeedIter).
    pub fn weights(&self) -> Vec<u64> {
        self.layers.iter().map(Layer::weight).collect()
    }

    /// The sum of all weights, `None` if it overflows `u64`.
    pub fn total_weight(&self) -> Option<u64> {
        self.layers
            .iter()
            .try_fold(0u64, |acc, l| acc.checked_add(l.weight()))
    }
}

impl fmt::Display for NetSpec {
    /// A table: index, name, kind, `in → out`, weight.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kinds: Vec<String> = self.layers.iter().map(|l| l.kind().to_string()).collect();
        let name_w = self
            .layers
            .iter()
            .map(|l| l.name().len())
            .max()
            .unwrap_or(0)
            .max(4);
        let kind_w = kinds.iter().map(String::len).max().unwrap_or(0).max(4);
        let ins: Vec<String> = self.layers.iter().map(|l| l.input().to_string()).collect();
        let in_w = ins.iter().map(String::len).max().unwrap_or(0).max(2);
        writeln!(
            f,
            "net `{}`: input {}, {} layers",
            self.name,
            self.input,
            self.len()
        )?;
        writeln!(
            f,
            "{:>3}  {:<name_w$}  {:<kind_w$}  {:>in_w$}    {:<14}  {:>16}",
            "#", "name", "kind", "in", "out", "weight"
        )?;
        for (i, (l, kind)) in self.layers.iter().zip(&kinds).enumerate() {
            writeln!(
                f,
                "{:>3}  {:<name_w$}  {:<kind_w$}  {:>in_w$} -> {:<14}  {:>16}",
                i,
                l.name(),
                kind,
                ins[i],
                l.output().to_string(),
                l.weight()
            )?;
        }
        Ok(())
    }
}

/// Declares a net layer by layer; [`NetSpecBuilder::build`] infers and checks the shapes.
///
/// The methods only record; every check happens in `build`, which reports the first
/// problem as a [`DslError`] naming the layer. Square sizes take one number; use
/// [`NetSpecBuilder::layer`] with a [`LayerKind`] for rectangular ones.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct NetSpecBuilder {
    name: String,
    input: Shape,
    pending: Vec<(String, LayerKind)>,
}

impl NetSpecBuilder {
    /// Appends any layer.
    pub fn layer(mut self, name: impl Into<String>, kind: LayerKind) -> Self {
        self.pending.push((name.into(), kind));
        self
    }

    /// Square convolution `k×k`, stride `stride`, padding `pad`, no activation.
    pub fn conv(
        self,
        name: impl Into<String>,
        out: usize,
        k: usize,
        stride: usize,
        pad: usize,
    ) -> Self {
        self.conv_impl(name, out, k, stride, pad, false)
    }

    /// Square convolution with a fused ReLU.
    pub fn conv_relu(
        self,
        name: impl Into<String>,
        out: usize,
        k: usize,
        stride: usize,
        pad: usize,
    ) -> Self {
        self.conv_impl(name, out, k, stride, pad, true)
    }

    fn conv_impl(
        self,
        name: impl Into<String>,
        out: usize,
        k: usize,
        stride: usize,
        pad: usize,
        relu: bool,
    ) -> Self {
        self.layer(
            name,
            LayerKind::Conv2d {
                out_channels: out,
                kernel: (k, k),
                stride: (stride, stride),
                padding: (pad, pad),
                relu,
            },
        )
    }

    /// Square max pooling `k×k`, stride `s`, no padding.
    pub fn max_pool(self, name: impl Into<String>, k: usize, s: usize) -> Self {
        self.layer(
            name,
            LayerKind::MaxPool {
                kernel: (k, k),
                stride: (s, s),
                padding: (0, 0),
            },
        )
    }

    /// Square average pooling `k×k`, stride `s`, no padding.
    pub fn avg_pool(self, name: impl Into<String>, k: usize, s: usize) -> Self {
        self.layer(
            name,
            LayerKind::AvgPool {
                kernel: (k, k),
                stride: (s, s),
                padding: (0, 0),
            },
        )
    }

    /// Global average pooling.
    pub fn global_avg_pool(self, name: impl Into<String>) -> Self {
        self.layer(name, LayerKind::GlobalAvgPool)
    }

    /// Fully connected, `out` features, no activation (flattens implicitly).
    pub fn fc(self, name: impl Into<String>, out: usize) -> Self {
        self.layer(
            name,
            LayerKind::Fc {
                out_features: out,
                relu: false,
            },
        )
    }

    /// Fully connected with a fused ReLU.
    pub fn fc_relu(self, name: impl Into<String>, out: usize) -> Self {
        self.layer(
            name,
            LayerKind::Fc {
                out_features: out,
                relu: true,
            },
        )
    }

    /// A stand-alone ReLU.
    pub fn relu(self, name: impl Into<String>) -> Self {
        self.layer(name, LayerKind::Relu)
    }

    /// Batch normalisation.
    pub fn batch_norm(self, name: impl Into<String>) -> Self {
        self.layer(name, LayerKind::BatchNorm)
    }

    /// Residual add of the output of the earlier layer `from`.
    pub fn residual_add(self, name: impl Into<String>, from: impl Into<String>) -> Self {
        self.layer(name, LayerKind::ResidualAdd { from: from.into() })
    }

    /// Flatten.
    pub fn flatten(self, name: impl Into<String>) -> Self {
        self.layer(name, LayerKind::Flatten)
    }

    /// Softmax.
    pub fn softmax(self, name: impl Into<String>) -> Self {
        self.layer(name, LayerKind::Softmax)
    }

    /// Infers every shape and weight and checks the chain.
    ///
    /// # Errors
    ///
    /// The first problem, in declaration order: [`DslError::EmptyInput`],
    /// [`DslError::NoLayers`], [`DslError::EmptyName`], [`DslError::DuplicateName`],
    /// [`DslError::ZeroParameter`], [`DslError::KernelTooLarge`],
    /// [`DslError::PoolPaddingTooLarge`], [`DslError::UnknownResidualSource`],
    /// [`DslError::ResidualMismatch`], [`DslError::Overflow`].
    ///
    /// ```
    /// use taopipe_dsl::{DslError, NetSpec, Shape};
    ///
    /// let err = NetSpec::builder("bad", Shape::new(3, 4, 4))
    ///     .conv("c1", 8, 5, 1, 0)
    ///     .build()
    ///     .unwrap_err();
    /// assert!(matches!(err, DslError::KernelTooLarge { ref layer, .. } if layer == "c1"));
    /// assert!(err.to_string().contains("3x4x4"));
    /// ```
    pub fn build(self) -> Result<NetSpec, DslError> {
        let NetSpecBuilder {
            name: net,
            input,
            pending,
        } = self;
        if input.has_zero_dim() {
            return Err(DslError::EmptyInput { net, shape: input });
        }
        if pending.is_empty() {
            return Err(DslError::NoLayers { net });
        }
        let mut index: HashMap<String, usize> = HashMap::with_capacity(pending.len());
        let mut layers: Vec<Layer> = Vec::with_capacity(pending.len());
        let mut current = input;
        for (i, (name, kind)) in pending.into_iter().enumerate() {
            if name.is_empty() {
                return Err(DslError::EmptyName { net, index: i });
            }
            if let Some(&first) = index.get(&name) {
                return Err(DslError::DuplicateName { layer: name, first });
            }
            if let LayerKind::ResidualAdd { from } = &kind {
                let Some(&j) = index.get(from) else {
                    return Err(DslError::UnknownResidualSource {
                        layer: name,
                        from: from.clone(),
                    });
                };
                let from_shape = layers[j].output();
                if from_shape != current {
                    return Err(DslError::ResidualMismatch {
                        layer: name,
                        input: current,
                        from: from.clone(),
                        from_shape,
                    });
                }
            }
            let (output, weight) = match kind.infer(current) {
                Ok(v) => v,
                Err(issue) => return Err(issue_error(issue, name, &kind, current)),
            };
            index.insert(name.clone(), i);
            layers.push(Layer::new(name, kind, current, output, weight));
            current = output;
        }
        Ok(NetSpec {
            name: net,
            input,
            layers,
        })
    }
}

fn issue_error(issue: Issue, layer: String, kind: &LayerKind, input: Shape) -> DslError {
    let (kernel, padding) = kind.window();
    match issue {
        Issue::Zero(what) => DslError::ZeroParameter { layer, what, input },
        Issue::KernelTooLarge => DslError::KernelTooLarge {
            layer,
            input,
            kernel,
            padding,
        },
        Issue::PoolPadding => DslError::PoolPaddingTooLarge {
            layer,
            input,
            kernel,
            padding,
        },
        Issue::Overflow => DslError::Overflow { layer, input },
    }
}
