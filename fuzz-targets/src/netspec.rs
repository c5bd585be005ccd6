//! The run-time `NetSpec` builder, on arbitrary layer lists, and the synthetic nets built
//! from arbitrary weight lists (with their memory limit).

use arbitrary::{Arbitrary, Unstructured};
use taopipe_dsl::{
    DslError, INPUT, LayerKind, NetSpec, SYNTH_MEMORY_LIMIT, Shape, Source, conv_net_with_weights,
    synth_net_bytes,
};

/// The most layers one input declares: enough for every rule (units, branches, residual
/// sources far back), few enough that one input stays fast.
const MAX_LAYERS: usize = 48;

/// The most weights of a synthetic net: its memory limit, not this, is what stops deep ones.
const MAX_SYNTH_LAYERS: usize = 64;

/// What one fuzz input declares: a net through the builder, or a synthetic net from a list
/// of weights.
#[derive(Debug, Arbitrary)]
pub enum NetCase {
    /// [`NetSpec::builder`] with these layers.
    Layers {
        /// The net's name.
        name: String,
        /// Its input shape `(C, H, W)`.
        input: (Dim, Dim, Dim),
        /// The layers, in order (cut at 48).
        layers: Vec<LayerCase>,
    },
    /// [`conv_net_with_weights`] with these weights (cut at 64).
    Synth(Vec<u64>),
}

/// A size: mostly small (0 to 16, where shapes fit and the checks for zero and for windows
/// larger than their input are met), sometimes any `usize` (where products overflow).
#[derive(Debug, Clone, Copy)]
pub struct Dim(pub usize);

impl<'a> Arbitrary<'a> for Dim {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let small = u8::arbitrary(u)?;
        Ok(Dim(if small < 240 {
            usize::from(small % 17)
        } else {
            usize::arbitrary(u)?
        }))
    }
}

/// A layer or source name: mostly one of a few (so sources and duplicates are met), the
/// net input's reserved name, the empty name, or any string.
#[derive(Debug, Clone, Arbitrary)]
pub enum NameCase {
    /// `l0` … `l7`.
    Short(u8),
    /// [`INPUT`].
    Input,
    /// The empty name.
    Empty,
    /// Any string.
    Any(String),
}

impl NameCase {
    fn name(&self) -> String {
        match self {
            NameCase::Short(i) => format!("l{}", i % 8),
            NameCase::Input => INPUT.to_string(),
            NameCase::Empty => String::new(),
            NameCase::Any(s) => s.clone(),
        }
    }
}

/// One layer: its name, what it computes, and where it reads from (`None`: the layer
/// before).
#[derive(Debug, Clone, Arbitrary)]
pub struct LayerCase {
    /// The layer's name.
    pub name: NameCase,
    /// What it computes.
    pub kind: KindCase,
    /// `layer_from`'s source, if any.
    pub from: Option<NameCase>,
}

/// [`LayerKind`] with [`Dim`] sizes and [`NameCase`] residual sources.
#[derive(Debug, Clone, Arbitrary)]
#[allow(missing_docs)] // variant for variant [`LayerKind`]'s, documented there
pub enum KindCase {
    Conv {
        out: Dim,
        kernel: (Dim, Dim),
        stride: (Dim, Dim),
        padding: (Dim, Dim),
        relu: bool,
    },
    MaxPool {
        kernel: (Dim, Dim),
        stride: (Dim, Dim),
        padding: (Dim, Dim),
    },
    AvgPool {
        kernel: (Dim, Dim),
        stride: (Dim, Dim),
        padding: (Dim, Dim),
    },
    GlobalAvgPool,
    Fc {
        out: Dim,
        relu: bool,
    },
    Relu,
    BatchNorm,
    Add {
        from: NameCase,
        relu: bool,
    },
    Flatten,
    Softmax,
}

impl KindCase {
    fn kind(&self) -> LayerKind {
        let pair = |(a, b): (Dim, Dim)| (a.0, b.0);
        match self {
            KindCase::Conv {
                out,
                kernel,
                stride,
                padding,
                relu,
            } => LayerKind::Conv2d {
                out_channels: out.0,
                kernel: pair(*kernel),
                stride: pair(*stride),
                padding: pair(*padding),
                groups: 1,
                relu: *relu,
            },
            KindCase::MaxPool {
                kernel,
                stride,
                padding,
            } => LayerKind::max_pool(pair(*kernel), pair(*stride), pair(*padding)),
            KindCase::AvgPool {
                kernel,
                stride,
                padding,
            } => LayerKind::avg_pool(pair(*kernel), pair(*stride), pair(*padding)),
            KindCase::GlobalAvgPool => LayerKind::GlobalAvgPool,
            KindCase::Fc { out, relu } => LayerKind::Fc {
                out_features: out.0,
                relu: *relu,
            },
            KindCase::Relu => LayerKind::Relu,
            KindCase::BatchNorm => LayerKind::BATCH_NORM,
            KindCase::Add { from, relu } => LayerKind::ResidualAdd {
                from: from.name(),
                relu: *relu,
            },
            KindCase::Flatten => LayerKind::Flatten,
            KindCase::Softmax => LayerKind::Softmax,
        }
    }
}

/// Reads a [`NetCase`] from the bytes and builds it. A built net holds together (each layer
/// reads its source's shape and outputs what its kind makes of it, residual operands
/// match, units partition the layers with summed weights) and declaring its own layers again builds the same net; a synthetic net
/// is refused exactly when its declared memory is over [`SYNTH_MEMORY_LIMIT`] (or the list
/// is empty or has a zero), and otherwise has one convolution per weight. Every error has a
/// message.
pub fn netspec(data: &[u8]) {
    let Ok(case) = NetCase::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    match case {
        NetCase::Layers {
            name,
            input,
            mut layers,
        } => {
            layers.truncate(MAX_LAYERS);
            let input = Shape::new(input.0.0, input.1.0, input.2.0);
            let mut builder = NetSpec::builder(name, input);
            for layer in &layers {
                let kind = layer.kind.kind();
                builder = match &layer.from {
                    None => builder.layer(layer.name.name(), kind),
                    Some(from) => builder.layer_from(layer.name.name(), kind, from.name()),
                };
            }
            match builder.build() {
                Ok(net) => {
                    check_net(&net);
                    assert_eq!(redeclared(&net).as_ref(), Ok(&net), "redeclared differs");
                }
                Err(error) => error_names_something(&error),
            }
        }
        NetCase::Synth(mut weights) => {
            weights.truncate(MAX_SYNTH_LAYERS);
            let fits = !weights.is_empty()
                && !weights.contains(&0)
                && synth_net_bytes(&weights).is_some_and(|b| b <= SYNTH_MEMORY_LIMIT);
            match conv_net_with_weights("synth", &weights) {
                Ok(net) => {
                    assert!(fits, "{weights:?} built, over the limit");
                    assert_eq!(net.len(), weights.len());
                    check_net(&net);
                }
                Err(error) => {
                    assert!(!fits, "{weights:?} refused within the limit: {error}");
                    error_names_something(&error);
                }
            }
        }
    }
}

/// A DSL error's message says something. (Names in it come from the program that declares
/// the net, not from a user's file, so their length is not checked.)
fn error_names_something(error: &DslError) {
    assert!(
        !error.to_string().trim().is_empty(),
        "blank message: {error:?}"
    );
}

/// The net declared again from its own layers (names, kinds, `from`s).
fn redeclared(net: &NetSpec) -> Result<NetSpec, DslError> {
    let mut builder = NetSpec::builder(net.name(), net.input());
    for layer in net.layers() {
        builder = match layer.input_from() {
            None => builder.layer(layer.name(), layer.kind().clone()),
            Some(from) => builder.layer_from(layer.name(), layer.kind().clone(), from),
        };
    }
    builder.build()
}

/// What a built net promises: every layer reads the tensor its source names with that
/// tensor's shape, outputs a non-empty shape that follows from its kind, residual operands
/// match, the units cut the layers into consecutive non-empty runs whose weights are the
/// sums of their layers', and the derived tables (`reader_counts`, `live_across`, the
/// printed table) agree with the layers.
fn check_net(net: &NetSpec) {
    let layers = net.layers();
    assert!(!layers.is_empty());
    assert!(!net.input().has_zero_dim());
    let output_of = |source: Source| match source {
        Source::Input => net.input(),
        Source::Layer(j) => layers[j].output(),
        Source::Previous => unreachable!("resolved"),
    };
    for (i, layer) in layers.iter().enumerate() {
        let source = layer.source().resolve(i);
        if let Source::Layer(j) = source {
            assert!(j < i, "layer {i} reads layer {j}");
        }
        assert_eq!(layer.input(), output_of(source), "layer {i}'s input");
        let (input, output) = (layer.input(), layer.output());
        assert!(!output.has_zero_dim(), "layer {i} outputs {output}");
        match layer.kind() {
            LayerKind::Relu
            | LayerKind::Clip { .. }
            | LayerKind::LeakyRelu { .. }
            | LayerKind::BatchNorm { .. }
            | LayerKind::Softmax => {
                assert_eq!(output, input)
            }
            LayerKind::Concat { from } => {
                assert_eq!(layer.operands().len() + 1, from.len());
                let channels: usize = layer.reads(i).map(|s| output_of(s).c).sum();
                assert_eq!(output, Shape::new(channels, input.h, input.w));
                for s in layer.reads(i) {
                    let o = output_of(s);
                    assert_eq!((o.h, o.w), (input.h, input.w), "layer {i}'s operand");
                }
            }
            LayerKind::ResidualAdd { .. } => {
                assert_eq!(output, input);
                let other = layer
                    .residual_source()
                    .expect("an add has a residual source");
                assert_eq!(
                    output_of(other.resolve(i)),
                    input,
                    "layer {i}'s residual operand"
                );
            }
            LayerKind::GlobalAvgPool => assert_eq!(output, Shape::new(input.c, 1, 1)),
            LayerKind::Fc { out_features, .. } => {
                assert_eq!(output, Shape::new(*out_features, 1, 1))
            }
            LayerKind::Flatten => {
                assert_eq!((output.h, output.w), (1, 1));
                assert_eq!(output.elements(), input.elements());
            }
            LayerKind::MaxPool { .. } | LayerKind::AvgPool { .. } => {
                assert_eq!(output.c, input.c)
            }
            LayerKind::Conv2d { out_channels, .. } => assert_eq!(output.c, *out_channels),
        }
        if !matches!(layer.kind(), LayerKind::ResidualAdd { .. }) {
            assert!(layer.residual_source().is_none());
        }
    }
    let units = net.units();
    assert_eq!(units.first().map(|u| u.layers().start), Some(0));
    assert_eq!(units.last().map(|u| u.layers().end), Some(layers.len()));
    for (k, unit) in units.iter().enumerate() {
        assert!(!unit.is_empty());
        if let Some(next) = units.get(k + 1) {
            assert_eq!(unit.layers().end, next.layers().start);
        }
        let sum = unit.layers().map(|i| layers[i].weight()).sum::<u64>();
        assert_eq!(unit.weight(), sum, "unit {k}'s weight");
        assert_eq!(unit.name(), layers[unit.layers().start].name());
        for i in unit.layers() {
            assert_eq!(net.unit_of(i), Some(k));
        }
    }
    assert_eq!(net.unit_of(layers.len()), None);
    let readers: usize = net.reader_counts().iter().sum();
    let edges = layers
        .iter()
        .enumerate()
        .flat_map(|(i, l)| l.reads(i))
        .filter(|s| matches!(s, Source::Layer(_)))
        .count();
    assert_eq!(readers, edges);
    for boundary in 0..=units.len() + 1 {
        let live = net.live_across(boundary);
        assert!(
            live.windows(2).all(|w| w[0] < w[1]),
            "live_across({boundary}) {live:?}"
        );
    }
    assert!(net.to_string().contains(net.name()));
}
