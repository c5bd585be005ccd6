//! `NetSpec`: a checked list of layers grouped into pipeline units, and the builder that
//! checks it.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

use crate::infer::Issue;
use crate::layer::{INPUT, LayerParts};
use crate::{DslError, Layer, LayerKind, Shape, Source};

/// A pipeline unit: a run of consecutive layers that a pipeline never cuts (one moldable
/// task in the runtime). A composition (units per stage) counts units.
///
/// **The unit rule.** A new unit starts at every `Conv2d`, `Fc`, `MaxPool`, `AvgPool` and
/// `GlobalAvgPool` layer whose source is the previous layer ([`Source::Previous`]); every
/// other layer — `Relu`, `Clip`, `LeakyRelu`, `BatchNorm`, `ResidualAdd`, `Concat`,
/// `Flatten`, `Softmax`, and any layer with an explicit `from` (a branch, such as ResNet's
/// downsample convolution) — joins the current unit. The first layer always starts a unit. So VGG16 has 21 units, AlexNet 11
/// and ResNet50 52 (with each block's downsample declared after its `bn3`, using `from`,
/// the third unit of the block holds `conv3`, `bn3`, the downsample conv and bn and the add).
///
/// Residual and `from` edges may cross unit boundaries; [`NetSpec::live_across`] lists the
/// tensors a stage boundary must forward.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Unit {
    name: String,
    layers: Range<usize>,
    weight: u64,
}

impl Unit {
    /// The name of its first layer.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The indices of its layers in [`NetSpec::layers`] (never empty).
    pub fn layers(&self) -> Range<usize> {
        self.layers.clone()
    }

    /// The number of its layers.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Always `false` (a unit has at least one layer); present for API symmetry.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// The sum of its layers' weights (checked when the net is built).
    pub fn weight(&self) -> u64 {
        self.weight
    }
}

/// A net: its name, input shape, the ordered layers with their resolved sources, inferred
/// shapes and weights, and the pipeline [`Unit`]s they form. Made by [`NetSpec::builder`]
/// or the [`net!`](crate::net) macro; always valid.
///
/// A layer reads the previous layer's output unless declared with a `from` (a branch); a
/// pipeline is cut only between [units](Unit), and a composition (units per stage) counts
/// entries of [`NetSpec::units`].
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
#[derive(Debug, Clone, PartialEq)]
pub struct NetSpec {
    name: String,
    input: Shape,
    layers: Vec<Layer>,
    units: Vec<Unit>,
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

    /// How many layers read each layer's output (a layer's input and each of its
    /// [`Layer::operands`] count once each); what decides whether a layer can be folded
    /// into or fused with the one before it.
    ///
    /// ```
    /// use taopipe_dsl::{NetSpec, Shape};
    ///
    /// let net = NetSpec::builder("n", Shape::new(3, 8, 8))
    ///     .conv("c1", 4, 3, 1, 1)
    ///     .conv("c2", 4, 3, 1, 1)
    ///     .residual_add_relu("add", "c1")
    ///     .build()?;
    /// assert_eq!(net.reader_counts(), vec![2, 1, 0]);
    /// # Ok::<(), taopipe_dsl::DslError>(())
    /// ```
    pub fn reader_counts(&self) -> Vec<usize> {
        let mut readers = vec![0; self.len()];
        for (i, layer) in self.layers.iter().enumerate() {
            for source in layer.reads(i) {
                if let Source::Layer(j) = source {
                    readers[j] += 1;
                }
            }
        }
        readers
    }

    /// Number of layers (`M` in the paper).
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Always `false` (a built net has at least one layer); present for API symmetry.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// The compile-time hint of every layer, in order (see [`NetSpec::unit_weights`] for
    /// what a pipeline splits).
    pub fn weights(&self) -> Vec<u64> {
        self.layers.iter().map(Layer::weight).collect()
    }

    /// The pipeline units, in order (see [`Unit`] for the rule that forms them).
    pub fn units(&self) -> &[Unit] {
        &self.units
    }

    /// The weight of every unit, in order: the input of [`Seeds::from_net`](crate::Seeds::from_net).
    pub fn unit_weights(&self) -> Vec<u64> {
        self.units.iter().map(Unit::weight).collect()
    }

    /// The index of the unit holding layer `layer`, `None` if out of range.
    pub fn unit_of(&self, layer: usize) -> Option<usize> {
        if layer >= self.layers.len() {
            return None;
        }
        Some(self.units.partition_point(|u| u.layers.end <= layer))
    }

    /// The tensors that a pipeline stage boundary before unit `boundary` must forward:
    /// every producer ([`Source::Input`] for the net input, [`Source::Layer`] for a layer)
    /// whose output is read — as input or as an operand (a residual, a concat's input) —
    /// by a layer of unit `boundary` or later, but that was produced before unit
    /// `boundary`. Sorted, without
    /// repeats; the ordinary previous-layer edge is included (it is the last layer of unit
    /// `boundary - 1`, or the net input for `boundary == 0`).
    ///
    /// At `boundary == units().len()` (the end of the net) this is the net output, the last
    /// layer; beyond, it is empty.
    ///
    /// ```
    /// use taopipe_dsl::{net, Source};
    ///
    /// let net = net! { res [8, 8, 8] =>
    ///     c1: conv(8, 3x3, pad 1) relu,   // unit 0
    ///     c2: conv(8, 3x3, pad 1),        // unit 1
    ///     bn: batchnorm,
    ///     add: add(input) relu,           // the shortcut from the net input
    /// }?;
    /// assert_eq!(net.units().len(), 2);
    /// assert_eq!(net.live_across(0), vec![Source::Input]);
    /// assert_eq!(net.live_across(1), vec![Source::Input, Source::Layer(0)]);
    /// assert_eq!(net.live_across(2), vec![Source::Layer(3)]);
    /// # Ok::<(), taopipe_dsl::DslError>(())
    /// ```
    pub fn live_across(&self, boundary: usize) -> Vec<Source> {
        let n = self.units.len();
        if boundary > n {
            return Vec::new();
        }
        let Some(start) = self.units.get(boundary).map(|u| u.layers.start) else {
            return self
                .layers
                .len()
                .checked_sub(1)
                .map(Source::Layer)
                .into_iter()
                .collect();
        };
        let produced_before = |s: Source| match s {
            Source::Input => true,
            Source::Layer(j) => j < start,
            Source::Previous => false,
        };
        let mut live: Vec<Source> = self.layers[start..]
            .iter()
            .enumerate()
            .flat_map(|(k, l)| l.reads(start + k))
            .filter(|&s| produced_before(s))
            .collect();
        live.sort_unstable();
        live.dedup();
        live
    }

    /// The sum of all weights, `None` if it overflows `u64`.
    pub fn total_weight(&self) -> Option<u64> {
        self.layers
            .iter()
            .try_fold(0u64, |acc, l| acc.checked_add(l.weight()))
    }
}

impl fmt::Display for NetSpec {
    /// A table: index, unit, name, kind (and `from` source), `in → out`, weight.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kinds: Vec<String> = self
            .layers
            .iter()
            .map(|l| match l.input_from() {
                Some(from) => format!("{} from {from}", l.kind()),
                None => l.kind().to_string(),
            })
            .collect();
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
            "net `{}`: input {}, {} layers, {} units",
            self.name,
            self.input,
            self.len(),
            self.units.len()
        )?;
        writeln!(
            f,
            "{:>3}  {:>4}  {:<name_w$}  {:<kind_w$}  {:>in_w$}    {:<14}  {:>16}",
            "#", "unit", "name", "kind", "in", "out", "weight"
        )?;
        for (i, (l, kind)) in self.layers.iter().zip(&kinds).enumerate() {
            let unit = self.unit_of(i).map_or_else(String::new, |u| u.to_string());
            writeln!(
                f,
                "{:>3}  {:>4}  {:<name_w$}  {:<kind_w$}  {:>in_w$} -> {:<14}  {:>16}",
                i,
                unit,
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
/// [`NetSpecBuilder::layer`] with a [`LayerKind`] for rectangular ones. Every layer reads
/// the previous layer's output, except those added with [`NetSpecBuilder::layer_from`].
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct NetSpecBuilder {
    name: String,
    input: Shape,
    pending: Vec<Pending>,
}

#[derive(Debug, Clone)]
struct Pending {
    name: String,
    kind: LayerKind,
    from: Option<String>,
}

impl NetSpecBuilder {
    /// Appends any layer, reading the previous layer's output (the net input for the first).
    pub fn layer(mut self, name: impl Into<String>, kind: LayerKind) -> Self {
        self.pending.push(Pending {
            name: name.into(),
            kind,
            from: None,
        });
        self
    }

    /// Appends any layer, reading the output of the earlier layer named `from`, or the net
    /// input if `from` is [`INPUT`](crate::INPUT) (`"input"`), instead of the previous
    /// layer's (a branch, such as ResNet's downsample shortcut).
    ///
    /// A layer added this way never starts a pipeline [`Unit`]: it joins the current one.
    ///
    /// ```
    /// use taopipe_dsl::{LayerKind, NetSpec, Shape, Source};
    ///
    /// let net = NetSpec::builder("branch", Shape::new(4, 8, 8))
    ///     .conv("a", 8, 3, 1, 1)
    ///     .layer_from("b", LayerKind::GlobalAvgPool, "input")
    ///     .build()?;
    /// assert_eq!(net.layers()[1].source(), Source::Input);
    /// assert_eq!(net.layers()[1].input(), Shape::new(4, 8, 8));
    /// assert_eq!(net.output(), Shape::new(4, 1, 1));
    /// assert_eq!(net.units().len(), 1);
    /// # Ok::<(), taopipe_dsl::DslError>(())
    /// ```
    pub fn layer_from(
        mut self,
        name: impl Into<String>,
        kind: LayerKind,
        from: impl Into<String>,
    ) -> Self {
        self.pending.push(Pending {
            name: name.into(),
            kind,
            from: Some(from.into()),
        });
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
                groups: 1,
                relu,
            },
        )
    }

    /// Square max pooling `k×k`, stride `s`, no padding.
    pub fn max_pool(self, name: impl Into<String>, k: usize, s: usize) -> Self {
        self.layer(name, LayerKind::max_pool((k, k), (s, s), (0, 0)))
    }

    /// Square average pooling `k×k`, stride `s`, no padding.
    pub fn avg_pool(self, name: impl Into<String>, k: usize, s: usize) -> Self {
        self.layer(name, LayerKind::avg_pool((k, k), (s, s), (0, 0)))
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

    /// `min(max(x, min), max)` ([`LayerKind::Clip`]; ReLU6 is `clip(name, 0.0, 6.0)`).
    pub fn clip(self, name: impl Into<String>, min: f32, max: f32) -> Self {
        self.layer(name, LayerKind::Clip { min, max })
    }

    /// Leaky ReLU with `slope` for negative inputs ([`LayerKind::LeakyRelu`]).
    pub fn leaky_relu(self, name: impl Into<String>, slope: f32) -> Self {
        self.layer(name, LayerKind::LeakyRelu { slope })
    }

    /// The outputs of the layers `from` joined along the channels ([`LayerKind::Concat`]).
    ///
    /// ```
    /// use taopipe_dsl::{NetSpec, Shape};
    ///
    /// let net = NetSpec::builder("fire", Shape::new(8, 16, 16))
    ///     .conv_relu("squeeze", 4, 1, 1, 0)
    ///     .layer_from("e1", taopipe_dsl::LayerKind::conv(8, (1, 1), (1, 1), (0, 0)), "squeeze")
    ///     .layer_from("e3", taopipe_dsl::LayerKind::conv(8, (3, 3), (1, 1), (1, 1)), "squeeze")
    ///     .concat("cat", &["e1", "e3"])
    ///     .build()?;
    /// assert_eq!(net.output(), Shape::new(16, 16, 16));
    /// assert_eq!(net.units().len(), 1); // the module is one pipeline unit
    /// # Ok::<(), taopipe_dsl::DslError>(())
    /// ```
    pub fn concat(self, name: impl Into<String>, from: &[&str]) -> Self {
        let from = from.iter().map(|f| f.to_string()).collect();
        self.layer(name, LayerKind::Concat { from })
    }

    /// Batch normalisation with PyTorch's default ε (1e-5).
    pub fn batch_norm(self, name: impl Into<String>) -> Self {
        self.layer(name, LayerKind::BATCH_NORM)
    }

    /// Residual add of the output of the earlier layer `from` (or [`INPUT`](crate::INPUT)).
    pub fn residual_add(self, name: impl Into<String>, from: impl Into<String>) -> Self {
        self.layer(
            name,
            LayerKind::ResidualAdd {
                from: from.into(),
                relu: false,
            },
        )
    }

    /// Residual add followed by a fused ReLU (ResNet's block output).
    pub fn residual_add_relu(self, name: impl Into<String>, from: impl Into<String>) -> Self {
        self.layer(
            name,
            LayerKind::ResidualAdd {
                from: from.into(),
                relu: true,
            },
        )
    }

    /// Flatten.
    pub fn flatten(self, name: impl Into<String>) -> Self {
        self.layer(name, LayerKind::Flatten)
    }

    /// Softmax.
    pub fn softmax(self, name: impl Into<String>) -> Self {
        self.layer(name, LayerKind::Softmax)
    }

    /// Infers every shape and weight, resolves the sources, checks the net and forms its
    /// pipeline [`Unit`]s.
    ///
    /// # Errors
    ///
    /// The first problem, in declaration order: [`DslError::EmptyInput`],
    /// [`DslError::NoLayers`], [`DslError::EmptyName`], [`DslError::ReservedName`],
    /// [`DslError::DuplicateName`], [`DslError::UnknownSource`],
    /// [`DslError::ZeroParameter`], [`DslError::KernelTooLarge`],
    /// [`DslError::PoolPaddingTooLarge`], [`DslError::Groups`],
    /// [`DslError::BadParameter`], [`DslError::ConcatMismatch`],
    /// [`DslError::UnknownResidualSource`],
    /// [`DslError::ResidualMismatch`], [`DslError::Overflow`] (also when a unit's weight
    /// overflows; it names the layer that makes it overflow).
    ///
    /// ```
    /// use taopipe_dsl::{DslError, LayerKind, NetSpec, Shape};
    ///
    /// let err = NetSpec::builder("bad", Shape::new(3, 4, 4))
    ///     .conv("c1", 8, 5, 1, 0)
    ///     .build()
    ///     .unwrap_err();
    /// assert!(matches!(err, DslError::KernelTooLarge { ref layer, .. } if layer == "c1"));
    /// assert!(err.to_string().contains("3x4x4"));
    ///
    /// let err = NetSpec::builder("bad", Shape::new(3, 4, 4))
    ///     .layer_from("c1", LayerKind::Relu, "c2")
    ///     .build()
    ///     .unwrap_err();
    /// assert!(matches!(err, DslError::UnknownSource { ref layer, ref from } if layer == "c1" && from == "c2"));
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
        for (i, Pending { name, kind, from }) in pending.into_iter().enumerate() {
            if name.is_empty() {
                return Err(DslError::EmptyName { net, index: i });
            }
            if name == INPUT {
                return Err(DslError::ReservedName { net, index: i });
            }
            if let Some(&first) = index.get(&name) {
                return Err(DslError::DuplicateName { layer: name, first });
            }
            // `input`, or an earlier layer: (source, its output shape)
            let resolve = |n: &str| -> Option<(Source, Shape)> {
                if n == INPUT {
                    Some((Source::Input, input))
                } else {
                    index
                        .get(n)
                        .map(|&j| (Source::Layer(j), layers[j].output()))
                }
            };
            let (source, layer_input) = match (&from, &kind) {
                (_, LayerKind::Concat { from: joined }) => {
                    let Some(first) = joined.first() else {
                        return Err(DslError::ZeroParameter {
                            layer: name,
                            what: "concat inputs",
                            input: current,
                        });
                    };
                    match resolve(first) {
                        Some(v) => v,
                        None => {
                            return Err(DslError::UnknownSource {
                                layer: name,
                                from: first.clone(),
                            });
                        }
                    }
                }
                (None, _) => (Source::Previous, current),
                (Some(f), _) => match resolve(f) {
                    Some(v) => v,
                    None => {
                        return Err(DslError::UnknownSource {
                            layer: name,
                            from: f.clone(),
                        });
                    }
                },
            };
            let mut operands = Vec::new();
            let mut layer_output = None;
            if let LayerKind::ResidualAdd { from: add_from, .. } = &kind {
                let Some((add_source, from_shape)) = resolve(add_from) else {
                    return Err(DslError::UnknownResidualSource {
                        layer: name,
                        from: add_from.clone(),
                    });
                };
                if from_shape != layer_input {
                    return Err(DslError::ResidualMismatch {
                        layer: name,
                        input: layer_input,
                        from: add_from.clone(),
                        from_shape,
                    });
                }
                operands.push(add_source);
            }
            if let LayerKind::Concat { from: joined } = &kind {
                let mut channels = layer_input.c;
                for other in &joined[1..] {
                    let Some((other_source, other_shape)) = resolve(other) else {
                        return Err(DslError::UnknownSource {
                            layer: name,
                            from: other.clone(),
                        });
                    };
                    if (other_shape.h, other_shape.w) != (layer_input.h, layer_input.w) {
                        return Err(DslError::ConcatMismatch {
                            layer: name,
                            from: other.clone(),
                            from_shape: other_shape,
                            plane: (layer_input.h, layer_input.w),
                        });
                    }
                    channels =
                        channels
                            .checked_add(other_shape.c)
                            .ok_or_else(|| DslError::Overflow {
                                layer: name.clone(),
                                input: layer_input,
                            })?;
                    operands.push(other_source);
                }
                layer_output = Some(Shape::new(channels, layer_input.h, layer_input.w));
            }
            let (output, weight) = match layer_output {
                // A concat copies every element of its output once.
                Some(out) => match out.elements() {
                    Some(n) => (out, n),
                    None => {
                        return Err(DslError::Overflow {
                            layer: name,
                            input: layer_input,
                        });
                    }
                },
                None => match kind.infer(layer_input) {
                    Ok(v) => v,
                    Err(issue) => return Err(issue_error(issue, name, &kind, layer_input)),
                },
            };
            index.insert(name.clone(), i);
            layers.push(Layer::new(LayerParts {
                name,
                kind,
                input_from: from,
                source,
                operands,
                input: layer_input,
                output,
                weight,
            }));
            current = output;
        }
        let units = units_of(&layers)?;
        Ok(NetSpec {
            name: net,
            input,
            layers,
            units,
        })
    }
}

/// Groups the layers into units (the rule on [`Unit`]), summing their weights.
fn units_of(layers: &[Layer]) -> Result<Vec<Unit>, DslError> {
    let mut units: Vec<Unit> = Vec::new();
    for (i, l) in layers.iter().enumerate() {
        match units.last_mut() {
            Some(unit) if !l.opens_unit() => {
                unit.layers.end = i + 1;
                unit.weight =
                    unit.weight
                        .checked_add(l.weight())
                        .ok_or_else(|| DslError::Overflow {
                            layer: l.name().to_string(),
                            input: l.input(),
                        })?;
            }
            _ => units.push(Unit {
                name: l.name().to_string(),
                layers: i..i + 1,
                weight: l.weight(),
            }),
        }
    }
    Ok(units)
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
            kernel,
            padding,
            padding_end: match kind {
                LayerKind::MaxPool { padding_end, .. } | LayerKind::AvgPool { padding_end, .. } => {
                    *padding_end
                }
                _ => padding,
            },
        },
        Issue::Groups => DslError::Groups {
            layer,
            input,
            groups: match kind {
                LayerKind::Conv2d { groups, .. } => *groups,
                _ => 1,
            },
            out_channels: match kind {
                LayerKind::Conv2d { out_channels, .. } => *out_channels,
                _ => input.c,
            },
        },
        Issue::Parameter => DslError::BadParameter {
            layer,
            kind: kind.to_string(),
            reason: match kind {
                LayerKind::Clip { .. } => "the bounds must be numbers, min not above max",
                LayerKind::BatchNorm { .. } => "eps must be positive and finite",
                _ => "the slope must be finite",
            },
        },
        Issue::Overflow => DslError::Overflow { layer, input },
    }
}
