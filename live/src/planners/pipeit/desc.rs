//! Layer descriptors: what the predictor knows of a layer — how it costs (its [`Op`]), the
//! GEMM-style sizes `N, K, M` of paper Eq. 3–4, and how many equal work items (chunks) the
//! runtime splits it into.

use std::fmt;

use serde::{Deserialize, Serialize};
use taopipe_dsl::{LayerKind, NetSpec, Source};
use taopipe_nets::{FC_CHUNKS, TARGET_CHUNKS};

/// How a layer is predicted: which regression of the [`Predictor`](super::Predictor) it
/// uses. See the [module docs](super#layer-descriptors) for the sizes of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// A convolution as an im2col GEMM: `N = Ho·Wo`, `K = R·S·C`, `M` output channels
    /// (Eq. 4), predicted by the 8-term model of Eq. 5.
    Gemm,
    /// A fully connected layer at batch 1 (a matrix-vector product): `N = 1`, `K` inputs,
    /// `M` outputs; Eq. 5 at `N = 1`, whose terms reduce to `K, M, KM, 1`.
    Gemv,
    /// Max/average pooling: `N` output plane, `K` window elements, `M` channels; terms
    /// `NKM` (window reads), `NM` (writes), `1`.
    Pool,
    /// A depthwise convolution (the nets crate's `DepthwiseConv2d`: a group per channel,
    /// as many outputs as inputs, MobileNet's): `N` output plane, `K = R·S` taps, `M`
    /// channels; terms as [`Op::Pool`] (`NKM` multiply-adds, `NM` outputs, `1`). It has no
    /// reduction across channels, so no GEMM: it is bound by memory as a pooling is, with
    /// a cost per tap of its own.
    Depthwise,
    /// Element-wise layers, copies and streaming reductions (a stand-alone activation, a
    /// batchnorm not folded, a residual add not fused, a concat, softmax, global average
    /// pooling): `N` plane, `K` values read per output value, `M` channels; terms as
    /// [`Op::Pool`].
    Elementwise,
    /// A layer that runs no task: a batchnorm folded into its convolution, an activation or
    /// a residual add fused into its producer's store, a flatten. Predicted 0 ms.
    Free,
}

impl Op {
    /// The kinds that have a fitted regression, in the order of [`Op::index`]. A kind added
    /// later goes last, so the indices of the others (a serialized
    /// [`Predictor`](super::Predictor)'s rows) do not move.
    pub const FITTED: [Op; 5] = [Op::Gemm, Op::Gemv, Op::Pool, Op::Elementwise, Op::Depthwise];

    /// Position in [`Op::FITTED`]; `None` for [`Op::Free`].
    pub fn index(self) -> Option<usize> {
        Op::FITTED.iter().position(|&o| o == self)
    }

    /// Number of regression terms (Eq. 5 has 8).
    ///
    /// ```
    /// use taopipe_live::planners::pipeit::Op;
    /// assert_eq!(Op::Gemm.terms(), 8);
    /// assert_eq!(Op::Gemv.terms(), 4);
    /// ```
    pub fn terms(self) -> usize {
        match self {
            Op::Gemm => 8,
            Op::Gemv => 4,
            Op::Pool | Op::Elementwise | Op::Depthwise => 3,
            Op::Free => 0,
        }
    }

    /// A short name: `gemm`, `gemv`, `pool`, `elementwise`, `depthwise`, `free`.
    pub fn name(self) -> &'static str {
        match self {
            Op::Gemm => "gemm",
            Op::Gemv => "gemv",
            Op::Pool => "pool",
            Op::Elementwise => "elementwise",
            Op::Depthwise => "depthwise",
            Op::Free => "free",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One layer as the predictor sees it.
///
/// ```
/// use taopipe_dsl::{NetSpec, Shape};
/// use taopipe_live::planners::pipeit::{describe_layers, Op};
///
/// let net = NetSpec::builder("n", Shape::new(64, 56, 56)).conv_relu("c", 128, 3, 2, 1).build()?;
/// let d = describe_layers(&net)[0];
/// // Eq. 3–4: Ho = Wo = (56 − 3 + 2)/2 + 1 = 28, N = 28·28, K = 3·3·64, M = 128
/// assert_eq!((d.op, d.n, d.k, d.m), (Op::Gemm, 784, 576, 128));
/// assert_eq!(d.iters, 32); // 128 channels in chunks of 4
/// # Ok::<(), taopipe_dsl::DslError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LayerDesc {
    /// How it is predicted.
    pub op: Op,
    /// `N` (rows of the GEMM's image matrix, or the kind's equivalent).
    pub n: u64,
    /// `K` (the inner dimension, or the kind's equivalent).
    pub k: u64,
    /// `M` (output channels or features).
    pub m: u64,
    /// Equal work items the kernel is split into (the paper's `n_iter`, Eq. 6–8): its
    /// chunk count, by the rule of the nets crate's `ChunkPlan`.
    pub iters: u64,
}

impl LayerDesc {
    /// A descriptor; `iters` is raised to 1.
    pub fn new(op: Op, n: u64, k: u64, m: u64, iters: u64) -> LayerDesc {
        LayerDesc {
            op,
            n,
            k,
            m,
            iters: iters.max(1),
        }
    }

    /// The regression terms of its [`Op`] (empty for [`Op::Free`]).
    ///
    /// ```
    /// use taopipe_live::planners::pipeit::{LayerDesc, Op};
    /// let d = LayerDesc::new(Op::Gemm, 2, 3, 5, 1);
    /// assert_eq!(d.features(), vec![2.0, 3.0, 5.0, 6.0, 15.0, 10.0, 30.0, 1.0]);
    /// ```
    pub fn features(&self) -> Vec<f64> {
        let (n, k, m) = (self.n as f64, self.k as f64, self.m as f64);
        match self.op {
            Op::Gemm => vec![n, k, m, n * k, k * m, n * m, n * k * m, 1.0],
            Op::Gemv => vec![k, m, k * m, 1.0],
            Op::Pool | Op::Elementwise | Op::Depthwise => vec![n * k * m, n * m, 1.0],
            Op::Free => Vec::new(),
        }
    }
}

impl fmt::Display for LayerDesc {
    /// `gemm N=784 K=576 M=128 (32 iters)`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} N={} K={} M={} ({} iters)",
            self.op, self.n, self.k, self.m, self.iters
        )
    }
}

/// One pipeline unit (`NetSpec::units`): its name and the descriptors of its layers. A
/// unit's prediction is the sum over its layers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitDesc {
    /// The unit's name (its first layer's).
    pub name: String,
    /// Its layers, in order.
    pub layers: Vec<LayerDesc>,
}

impl UnitDesc {
    /// Whether the unit holds a convolution run as a GEMM ([`Op::Gemm`]: a plain or grouped
    /// one).
    pub fn has_gemm(&self) -> bool {
        self.layers.iter().any(|l| l.op == Op::Gemm)
    }

    /// Whether the unit holds a convolution of any kind ([`Op::Gemm`] or
    /// [`Op::Depthwise`]): the units Table III averages over. Pipe-it counts MobileNet's
    /// depthwise convolutions ("Conv DW") among its 28 layers, so a unit of a depthwise
    /// convolution alone counts.
    ///
    /// ```
    /// use taopipe_dsl::{LayerKind, NetSpec, Shape};
    /// use taopipe_live::planners::pipeit::describe;
    ///
    /// let dw = LayerKind::Conv2d { out_channels: 32, kernel: (3, 3), stride: (1, 1),
    ///     padding: (1, 1), groups: 32, relu: true };
    /// let net = NetSpec::builder("n", Shape::new(32, 56, 56))
    ///     .layer("dw", dw)
    ///     .max_pool("pool", 2, 2)
    ///     .build()?;
    /// let units = describe(&net);
    /// assert!(units[0].has_conv() && !units[0].has_gemm());
    /// assert!(!units[1].has_conv());
    /// # Ok::<(), taopipe_dsl::DslError>(())
    /// ```
    pub fn has_conv(&self) -> bool {
        self.layers
            .iter()
            .any(|l| matches!(l.op, Op::Gemm | Op::Depthwise))
    }
}

/// Chunks of a layer of `channels` channels: at most [`TARGET_CHUNKS`] chunks of at least
/// `min_per` channels, rounded up to a multiple of `multiple` — the nets crate's
/// `ChunkPlan::new` (the facade checks the two agree on every layer of the zoo).
fn chunk_count(channels: usize, min_per: usize, multiple: usize) -> u64 {
    chunk_count_of(channels, min_per, multiple, TARGET_CHUNKS)
}

/// As [`chunk_count`], with at most `target` chunks ([`FC_CHUNKS`] for an FC layer).
fn chunk_count_of(channels: usize, min_per: usize, multiple: usize, target: usize) -> u64 {
    let channels = channels.max(1);
    let multiple = multiple.max(1);
    let per = channels.div_ceil(target.max(1)).max(min_per.max(1));
    let per = (per.div_ceil(multiple) * multiple).min(channels);
    channels.div_ceil(per) as u64
}

/// The descriptor of every layer of `net`, in order (see the
/// [module docs](super#layer-descriptors)).
pub fn describe_layers(net: &NetSpec) -> Vec<LayerDesc> {
    let layers = net.layers();
    let readers = net.reader_counts();
    // Whether layer j + 1 exists, is of the kind, reads layer j and is its only reader: the
    // nets crate then merges it into layer j when it builds the model.
    let absorbed = |j: usize, kind: fn(&LayerKind) -> bool| {
        layers.get(j + 1).is_some_and(|next| {
            kind(next.kind()) && next.source() == Source::Previous && readers[j] == 1
        })
    };
    let mut out = Vec::with_capacity(layers.len());
    let mut i = 0;
    while i < layers.len() {
        let layer = &layers[i];
        let (input, output) = (layer.input(), layer.output());
        let plane = |s: taopipe_dsl::Shape| (s.h * s.w) as u64;
        match layer.kind() {
            LayerKind::Conv2d {
                out_channels,
                kernel,
                groups,
                relu,
                ..
            } => {
                // The nets crate's `build_conv`: one group is a `Conv2d`, a group per channel
                // with as many outputs as inputs a `DepthwiseConv2d`, any other a
                // `GroupedConv2d` (a `Conv2d` per group; chunks of whole groups).
                let (c, m, g) = (input.c, *out_channels, (*groups).max(1));
                let taps = kernel.0 * kernel.1;
                out.push(if g == 1 {
                    LayerDesc::new(
                        Op::Gemm,
                        plane(output),
                        (taps * c) as u64,
                        m as u64,
                        chunk_count(m, 4, 4),
                    )
                } else if g == c && g == m {
                    LayerDesc::new(
                        Op::Depthwise,
                        plane(output),
                        taps as u64,
                        c as u64,
                        chunk_count(c, 1, 1),
                    )
                } else {
                    LayerDesc::new(
                        Op::Gemm,
                        plane(output),
                        (taps * c / g) as u64,
                        m as u64,
                        chunk_count(m, m / g, m / g),
                    )
                });
                // `Model::build_with`: a batchnorm that reads the conv alone is folded; then
                // a residual add right after goes into a plain conv's store (with its ReLU),
                // else an activation right after into any conv's store.
                let bn = absorbed(i, |k| matches!(k, LayerKind::BatchNorm { .. }));
                let last = if bn { i + 1 } else { i };
                let add = g == 1
                    && !*relu
                    && absorbed(last, |k| matches!(k, LayerKind::ResidualAdd { .. }));
                let act = !add && !*relu && absorbed(last, LayerKind::is_activation);
                let merged = usize::from(bn) + usize::from(add) + usize::from(act);
                out.extend((0..merged).map(|_| LayerDesc::new(Op::Free, 0, 0, 0, 1)));
                i += 1 + merged;
                continue;
            }
            LayerKind::Fc { out_features, relu } => {
                out.push(LayerDesc::new(
                    Op::Gemv,
                    1,
                    input.elements().unwrap_or(u64::MAX),
                    *out_features as u64,
                    chunk_count_of(*out_features, 1, 1, FC_CHUNKS),
                ));
                if !*relu && absorbed(i, |k| matches!(k, LayerKind::Relu)) {
                    out.push(LayerDesc::new(Op::Free, 0, 0, 0, 1));
                    i += 1;
                }
            }
            LayerKind::MaxPool { kernel, .. } | LayerKind::AvgPool { kernel, .. } => {
                out.push(LayerDesc::new(
                    Op::Pool,
                    plane(output),
                    (kernel.0 * kernel.1) as u64,
                    input.c as u64,
                    chunk_count(input.c, 1, 1),
                ));
            }
            // a streaming reduction: it reads each value once, as element-wise layers do
            LayerKind::GlobalAvgPool => out.push(LayerDesc::new(
                Op::Elementwise,
                1,
                plane(input),
                input.c as u64,
                chunk_count(input.c, 1, 1),
            )),
            LayerKind::Relu
            | LayerKind::Clip { .. }
            | LayerKind::LeakyRelu { .. }
            | LayerKind::BatchNorm { .. } => out.push(LayerDesc::new(
                Op::Elementwise,
                plane(input),
                1,
                input.c as u64,
                chunk_count(input.c, 1, 1),
            )),
            LayerKind::ResidualAdd { .. } => out.push(LayerDesc::new(
                Op::Elementwise,
                plane(input),
                2,
                input.c as u64,
                chunk_count(input.c, 1, 1),
            )),
            // a copy: each output value is one value read (of one of the inputs); chunks of
            // the output's channels (its input is only the first of the tensors joined)
            LayerKind::Concat { .. } => out.push(LayerDesc::new(
                Op::Elementwise,
                plane(output),
                1,
                output.c as u64,
                chunk_count(output.c, 1, 1),
            )),
            LayerKind::Softmax => out.push(LayerDesc::new(
                Op::Elementwise,
                input.elements().unwrap_or(u64::MAX),
                3,
                1,
                1,
            )),
            LayerKind::Flatten => out.push(LayerDesc::new(Op::Free, 0, 0, 0, 1)),
        }
        i += 1;
    }
    for c in joined_concats(net, &out) {
        out[c] = LayerDesc::new(Op::Free, 0, 0, 0, 1);
    }
    out
}

/// The concats the nets crate runs without a task (`taopipe_nets::memory_plan`, "Concats
/// without a copy"): every read a distinct task's tensor that the concat alone reads, no
/// part another concat's, and neither a part nor the concat the net's output. `descs` are
/// the layers' descriptors so far: a [`Op::Free`] layer is an alias, of its source for a
/// flatten and of the layer it was merged into (the one before it) otherwise; a merged
/// layer's other reads (a fused residual add's shortcut) are its producer's.
fn joined_concats(net: &NetSpec, descs: &[LayerDesc]) -> Vec<usize> {
    let layers = net.layers();
    let n = layers.len();
    // The layer whose task produces each layer's tensor (`None`: the input).
    let mut producer: Vec<Option<usize>> = Vec::with_capacity(n);
    for (i, layer) in layers.iter().enumerate() {
        let p = if descs[i].op != Op::Free {
            Some(i)
        } else if matches!(layer.kind(), LayerKind::Flatten) {
            match layer.source().resolve(i) {
                Source::Layer(j) => producer[j],
                _ => None,
            }
        } else {
            i.checked_sub(1).and_then(|j| producer[j])
        };
        producer.push(p);
    }
    let resolve = |s: Source| match s {
        Source::Layer(j) => producer[j],
        _ => None,
    };
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut reads: Vec<Vec<Option<usize>>> = vec![Vec::new(); n];
    for (i, layer) in layers.iter().enumerate() {
        let Some(task) = producer[i] else { continue };
        let is_concat = matches!(layer.kind(), LayerKind::Concat { .. });
        for source in layer.reads(i) {
            let p = resolve(source);
            if p == Some(task) && task != i {
                continue; // a merged layer reading the layer it was merged into
            }
            if is_concat {
                reads[i].push(p);
            }
            if let Some(p) = p
                && readers[p].last() != Some(&task)
            {
                readers[p].push(task);
            }
        }
    }
    let output = n.checked_sub(1).and_then(|last| producer[last]);
    (0..n)
        .filter(|&c| matches!(layers[c].kind(), LayerKind::Concat { .. }) && Some(c) != output)
        .filter(|&c| {
            let parts = &reads[c];
            let mut distinct: Vec<Option<usize>> = parts.clone();
            distinct.sort_unstable();
            distinct.dedup();
            distinct.len() == parts.len()
                && parts.iter().all(|&p| {
                    p.is_some_and(|p| {
                        !matches!(layers[p].kind(), LayerKind::Concat { .. })
                            && readers[p] == [c]
                            && Some(p) != output
                    })
                })
        })
        .collect()
}

/// The descriptor of every pipeline unit of `net`, in order: what a stage holds.
///
/// ```
/// use taopipe_dsl::{NetSpec, Shape};
/// use taopipe_live::planners::pipeit::{describe, Op};
///
/// let net = NetSpec::builder("n", Shape::new(3, 32, 32))
///     .conv("c1", 16, 3, 1, 1)
///     .batch_norm("bn1")
///     .relu("r1")
///     .max_pool("p1", 2, 2)
///     .fc("fc", 10)
///     .build()?;
/// let units = describe(&net);
/// assert_eq!(units.len(), 3);
/// // the batchnorm is folded and the ReLU fused into the conv: they cost nothing
/// let ops: Vec<Op> = units[0].layers.iter().map(|l| l.op).collect();
/// assert_eq!(ops, vec![Op::Gemm, Op::Free, Op::Free]);
/// assert_eq!(units[2].layers[0].k, 16 * 16 * 16);
/// # Ok::<(), taopipe_dsl::DslError>(())
/// ```
pub fn describe(net: &NetSpec) -> Vec<UnitDesc> {
    let layers = describe_layers(net);
    net.units()
        .iter()
        .map(|u| UnitDesc {
            name: u.name().to_string(),
            layers: layers[u.layers()].to_vec(),
        })
        .collect()
}
