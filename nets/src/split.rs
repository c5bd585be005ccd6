//! One layer, or a chain of consecutive layers, with its output split between two places in
//! a given ratio: CoDL's co-execution (Jia et al., MobiSys '22, §4) on a shared-memory CPU,
//! where the two "processors" are two places of the runtime.
//!
//! # Output channels only
//! A split gives place `a` the first chunks of each layer's [`ChunkPlan`](crate::ChunkPlan)
//! and place `b` the rest. A chunk is computed by the same float operations whichever place
//! runs it, so a split output is bit-identical to a single-place run for every ratio.
//!
//! CoDL also splits along H (output rows). The direct path would allow it bit-identically
//! at any row (each output is one FMA chain over its window, whatever block it falls in),
//! but Winograd layers only at multiples of their tile side (4 or 2 rows), where the
//! slab's tiles are the whole layer's (`tests/split.rs` checks both), and a slab needs its
//! input rows and padding copied and the layer's weights held a second time. Output channels already
//! give every ratio CoDL needs, so H is not offered.
//!
//! # Chains
//! With an output-channel split, a layer that mixes channels (convolution, fully connected,
//! softmax) needs all of its input: both sides wait for each other before it, an
//! *exchange*. Layers that keep channels apart (max/avg pooling, activations, affine,
//! residual add, global average pooling, depthwise convolution: [`CHANNEL_LOCAL`]) need only the channels they compute. A
//! [`Chain`] is a run of consecutive pipeline units split with one ratio. Inside a chain, a
//! tensor whose every reader is a channel-local layer of the same chain is *interior*: each
//! side reads only what it wrote itself, so its edges stay on their side. Decision: this is
//! what "exchange only at chain ends" means here — no exchange between a layer and the
//! channel-local layers after it in its chain (a convolution and its pooling, a block's last
//! convolutions and their residual add), one before every channel-mixing layer.
//!
//! Kernels read whole input tensors, and a [`SharedSlice`] cannot be read while another
//! task writes part of it, so the two sides of an interior tensor live in two buffers:
//! place `a` writes the frame's, place `b` a private one. After a split graph
//! [`Frame::layer_output`] of an interior layer therefore holds only `a`'s channels; every
//! other layer's output, and the net's, is complete. A layer that reads its residual in
//! place (see [`crate::memory_plan`]) is never interior: both of its sides must write where
//! the residual is, the frame's buffer. (Its shortcut is not interior either: a conv reads
//! it.)
//!
//! # Ratios on the chunk grid
//! A ratio `r ∈ [0, 1]` is `a`'s share of a layer's output channels, rounded to the nearest
//! cut between two of its chunks (no channel and all channels are always cuts). Layers
//! joined by interior edges share one cut, on the grid of all their chunk sizes (their least
//! common multiple).

use std::ops::Range;
use std::sync::Arc;

use taopipe_dsl::Source;
use taopipe_runtime::{Place, SharedSlice, Task, TaskGraph, TaskId, split_range};

use crate::Kernel;
use crate::frame::{Frame, TensorBuf};
use crate::model::{Model, compute_chunks};

/// Kernel kinds whose output channel `c` reads only input channel `c`: a chain passes their
/// input to them without an exchange.
pub const CHANNEL_LOCAL: [&str; 9] = [
    "maxpool",
    "avgpool",
    "relu",
    "clip",
    "leakyrelu",
    "affine",
    "add",
    "gap",
    "dwconv",
];

/// Why a split plan could not be made. Every variant names the bad value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SplitError {
    /// A ratio that is not a number in `[0, 1]`.
    #[error("chain {chain} (units {units:?}): split ratio {ratio} is not a number in [0, 1]")]
    Ratio {
        /// The chain's index.
        chain: usize,
        /// Its units.
        units: Range<usize>,
        /// The ratio given.
        ratio: f64,
    },
    /// The two places share workers.
    #[error("places {a} and {b} share workers: the two sides of a split need their own")]
    Overlap {
        /// Place `a`.
        a: Place,
        /// Place `b`.
        b: Place,
    },
    /// No chain at all.
    #[error("a split plan needs at least one chain")]
    NoChains,
    /// A chain that is empty, out of range, or does not start where the previous one ended.
    #[error(
        "chain {chain} covers units {units:?}: expected a non-empty range starting at unit \
         {expected} within the net's {count} units"
    )]
    Units {
        /// The chain's index.
        chain: usize,
        /// Its units.
        units: Range<usize>,
        /// Where it should start (the previous chain's end; any unit for the first).
        expected: usize,
        /// Units of the net.
        count: usize,
    },
}

/// Consecutive pipeline units whose layers are split with one ratio: `ratio` is the share of
/// each layer's output channels that place `a` computes.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    /// The units ([`taopipe_dsl::NetSpec::units`]).
    pub units: Range<usize>,
    /// Place `a`'s share, in `[0, 1]`.
    pub ratio: f64,
}

impl Chain {
    /// A chain of `units` at `ratio`.
    pub fn new(units: Range<usize>, ratio: f64) -> Chain {
        Chain { units, ratio }
    }
}

/// How one layer of a [`SplitPlan`] is split.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerSplit {
    /// The layer's index in the spec.
    pub layer: usize,
    /// Its kernel kind.
    pub kind: &'static str,
    /// The chunks place `a` computes (a prefix of the plan, maybe empty).
    pub chunks_a: Range<usize>,
    /// The chunks place `b` computes (the rest).
    pub chunks_b: Range<usize>,
    /// `a`'s share of the output elements, after rounding to the chunk grid.
    pub share_a: f64,
    /// Floating-point operations of the whole layer.
    pub flops: u64,
    /// Whether its tensor is interior (each side reads only its own part; see module docs).
    pub interior: bool,
    /// Whether a task of this layer waits on one of the other place.
    pub exchange: bool,
}

/// Where each layer of a run of units goes: made by [`Model::split_plan`], run by
/// [`Model::split_graph`].
#[derive(Debug, Clone, PartialEq)]
pub struct SplitPlan {
    net: String,
    layer_count: usize,
    a: Place,
    b: Place,
    chains: Vec<Chain>,
    layers: Vec<LayerSplit>,
    /// Layer index → position in `layers`.
    index: Vec<Option<usize>>,
}

impl SplitPlan {
    /// Place `a` (the first chunks of every layer).
    pub fn a(&self) -> Place {
        self.a
    }

    /// Place `b` (the last chunks).
    pub fn b(&self) -> Place {
        self.b
    }

    /// The chains, in order.
    pub fn chains(&self) -> &[Chain] {
        &self.chains
    }

    /// The units the plan covers.
    pub fn units(&self) -> Range<usize> {
        let first = self.chains.first().map_or(0, |c| c.units.start);
        first..self.chains.last().map_or(first, |c| c.units.end)
    }

    /// Every layer that runs a task, in order.
    pub fn layers(&self) -> &[LayerSplit] {
        &self.layers
    }

    /// The split of layer `index`, `None` for a layer outside the plan or without a task.
    pub fn layer(&self, index: usize) -> Option<&LayerSplit> {
        self.index
            .get(index)
            .copied()
            .flatten()
            .map(|i| &self.layers[i])
    }

    /// Layers with an exchange (a task waiting on the other place).
    pub fn exchanges(&self) -> usize {
        self.layers.iter().filter(|l| l.exchange).count()
    }
}

/// The two sides of a split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    A = 0,
    B = 1,
}

impl Side {
    const BOTH: [Side; 2] = [Side::A, Side::B];

    fn other(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }

    fn chunks(self, split: &LayerSplit) -> &Range<usize> {
        match self {
            Side::A => &split.chunks_a,
            Side::B => &split.chunks_b,
        }
    }
}

/// The cut nearest to `ratio · channels` among multiples of `step` and `channels` itself
/// (ties to the smaller).
fn quantise(ratio: f64, channels: usize, step: usize) -> usize {
    let target = ratio * channels as f64;
    let step = step.max(1);
    let below = ((target / step as f64).floor() as usize * step).min(channels);
    let above = (below + step).min(channels);
    if (above as f64 - target).abs() < (target - below as f64).abs() {
        above
    } else {
        below
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The root of `i`'s group (union-find, halving the path on the way).
fn find(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

/// Whether `reader` keeps the channels of its input `producer` apart, channel for channel.
fn channel_local(producer: &dyn Kernel, reader: &dyn Kernel) -> bool {
    let (p, r) = (producer.plan(), reader.plan());
    CHANNEL_LOCAL.contains(&reader.kind())
        && reader.in_shape() == producer.out_shape()
        && p.channels == producer.out_shape().c
        && r.channels == p.channels
}

impl Model {
    /// Splits the layers of consecutive `chains` of units between places `a` and `b` (see
    /// the module docs for what a chain shares and how ratios are rounded).
    ///
    /// # Errors
    /// A ratio outside `[0, 1]` (or NaN), overlapping places, no chains, or chains that are
    /// empty, out of range or not consecutive.
    ///
    /// ```
    /// use taopipe_dsl::net;
    /// use taopipe_nets::{Chain, Model, RandomWeights};
    /// use taopipe_runtime::Place;
    /// let spec = net! { tiny [3, 8, 8] =>
    ///     conv1: conv(32, 3x3, pad 1) relu,
    ///     pool1: maxpool(2x2, stride 2),
    ///     fc: fc(10),
    /// }?;
    /// let model = Model::build(spec, &RandomWeights { seed: 1 })?;
    /// let (a, b) = (Place::new(0, 1), Place::new(1, 1));
    /// // conv1 and pool1 in one chain: pool1 reads only the channels its side computed.
    /// let plan = model.split_plan(a, b, &[Chain::new(0..2, 0.5), Chain::new(2..3, 0.5)])?;
    /// assert!(plan.layer(0).unwrap().interior);
    /// assert_eq!(plan.exchanges(), 1); // only fc waits on the other side
    /// let err = model.split_plan(a, b, &[Chain::new(0..3, 1.5)]).unwrap_err();
    /// assert!(err.to_string().contains("1.5"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn split_plan(
        &self,
        a: Place,
        b: Place,
        chains: &[Chain],
    ) -> Result<SplitPlan, SplitError> {
        if a.overlaps(b) {
            return Err(SplitError::Overlap { a, b });
        }
        let units = self.spec().units();
        let mut chain_of_unit = vec![None; units.len()];
        let mut expected = chains.first().ok_or(SplitError::NoChains)?.units.start;
        for (k, chain) in chains.iter().enumerate() {
            let u = &chain.units;
            if u.is_empty() || u.start != expected || u.end > units.len() {
                return Err(SplitError::Units {
                    chain: k,
                    units: u.clone(),
                    expected,
                    count: units.len(),
                });
            }
            if !(0.0..=1.0).contains(&chain.ratio) {
                return Err(SplitError::Ratio {
                    chain: k,
                    units: u.clone(),
                    ratio: chain.ratio,
                });
            }
            chain_of_unit[u.clone()].fill(Some(k));
            expected = u.end;
        }
        let n = self.spec().len();
        let range = self.unit_layers(chains[0].units.start..expected);
        let chain_of = |layer: usize| -> Option<usize> {
            if range.contains(&layer) {
                self.spec().unit_of(layer).and_then(|u| chain_of_unit[u])
            } else {
                None
            }
        };
        let kernel = |i: usize| self.run_step(i).map(|(k, _)| &**k);
        let inputs = |i: usize| self.run_step(i).map_or(&[][..], |(_, s)| s);
        let mut readers: Vec<Vec<usize>> = vec![Vec::new(); n];
        for reader in 0..n {
            for &source in inputs(reader) {
                if let Source::Layer(j) = source {
                    readers[j].push(reader);
                }
            }
        }
        let output = self.output_producer();
        let interior: Vec<bool> = (0..n)
            .map(|p| {
                let (Some(chain), Some(kp)) = (chain_of(p), kernel(p)) else {
                    return false;
                };
                Some(p) != output
                    && !self.in_place(p)
                    && !self.is_part(p)
                    && !readers[p].is_empty()
                    && readers[p].iter().all(|&r| {
                        chain_of(r) == Some(chain)
                            && kernel(r).is_some_and(|kr| channel_local(kp, kr))
                    })
            })
            .collect();
        // Interior edges join layers into groups that share one cut.
        let mut parent: Vec<usize> = (0..n).collect();
        for p in (0..n).filter(|&p| interior[p]) {
            for &r in &readers[p] {
                let (x, y) = (find(&mut parent, p), find(&mut parent, r));
                parent[x] = y;
            }
        }
        let mut step = vec![1usize; n];
        for i in range.clone() {
            if let Some(k) = kernel(i) {
                let root = find(&mut parent, i);
                let per = k.plan().per;
                step[root] = step[root] / gcd(step[root], per) * per;
            }
        }
        let mut layers: Vec<LayerSplit> = Vec::new();
        let mut index = vec![None; n];
        for i in range.clone() {
            let (Some(k), Some(chain)) = (kernel(i), chain_of(i)) else {
                continue;
            };
            let plan = k.plan();
            let root = find(&mut parent, i);
            let cut = quantise(chains[chain].ratio, plan.channels, step[root]);
            let cut = if cut == plan.channels {
                plan.count()
            } else {
                cut / plan.per
            };
            let out_len = k.out_shape().len();
            index[i] = Some(layers.len());
            layers.push(LayerSplit {
                layer: i,
                kind: k.kind(),
                chunks_a: 0..cut,
                chunks_b: cut..plan.count(),
                share_a: k.output_range(0..cut).len() as f64 / out_len.max(1) as f64,
                flops: k.flops(),
                interior: interior[i],
                exchange: false,
            });
        }
        // An exchange: a side waits on a producer's other side.
        for l in 0..layers.len() {
            let reader = &layers[l];
            let exchange = Side::BOTH.iter().any(|&side| {
                !side.chunks(reader).is_empty()
                    && inputs(reader.layer).iter().any(|&source| match source {
                        // A joined concat's tensor comes from the producers of its parts.
                        Source::Layer(j) => self.producing(j).any(|j| {
                            index[j].is_some_and(|p| {
                                !layers[p].interior && !side.other().chunks(&layers[p]).is_empty()
                            })
                        }),
                        _ => false,
                    })
            });
            layers[l].exchange = exchange;
        }
        Ok(SplitPlan {
            net: self.spec().name().to_string(),
            layer_count: n,
            a,
            b,
            chains: chains.to_vec(),
            layers,
            index,
        })
    }

    /// The task graph of one frame run by `plan`: for each layer, a task on place `a` for
    /// its first chunks and one on `b` for the rest (none for an empty side), each splitting
    /// its chunks among the workers of its place. A reader of an interior tensor waits on
    /// its own side only (`b`'s part in a buffer of this graph's own); every other reader
    /// waits on both sides of its producer. As with [`Model::stage_graph`], layers before
    /// the plan's units must have run.
    ///
    /// # Panics
    /// If `plan` was made by another model (a caller bug).
    ///
    /// ```
    /// use taopipe_nets::{Chain, Model, RandomWeights, zoo};
    /// use taopipe_runtime::{Place, Runtime};
    /// let model = Model::build(zoo::synth1()?, &RandomWeights { seed: 1 })?;
    /// let rt = Runtime::builder().workers(2).build()?;
    /// let units = model.spec().units().len();
    /// let plan = model.split_plan(Place::new(0, 1), Place::new(1, 1), &[Chain::new(0..units, 0.6)])?;
    /// let x = vec![0.5; model.input_len()];
    /// let whole = model.forward(&rt, x.clone(), Place::new(0, 1))?;
    /// for _ in 0..2 {
    ///     let frame = model.frame(x.clone())?;
    ///     rt.run(model.split_graph(&frame, &plan))?;
    ///     assert_eq!(frame.output(), whole); // to the bit
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn split_graph(&self, frame: &Frame, plan: &SplitPlan) -> TaskGraph {
        assert!(
            plan.net == self.spec().name() && plan.layer_count == self.spec().len(),
            "a split plan of net `{}` ({} layers) used with `{}` ({} layers)",
            plan.net,
            plan.layer_count,
            self.spec().name(),
            self.spec().len()
        );
        let mut graph = TaskGraph::with_capacity(2 * plan.layers.len(), 4 * plan.layers.len());
        let mut ids: Vec<[Option<TaskId>; 2]> = vec![[None; 2]; plan.layer_count];
        // b's part of each interior tensor (module docs). Fresh per frame, like the frame's
        // own buffers: a buffer costs its first-touch page faults at most (≈ 0.2 ms per MiB
        // here, nothing where the allocator recycles a freed frame's pages).
        let private_b: Vec<Option<Arc<SharedSlice<f32>>>> = (0..plan.layer_count)
            .map(|i| {
                let split = plan.layer(i)?;
                let (kernel, _) = self.run_step(i)?;
                (split.interior && !split.chunks_b.is_empty())
                    .then(|| Arc::new(SharedSlice::zeroed(kernel.out_shape().len())))
            })
            .collect();
        for split in &plan.layers {
            let i = split.layer;
            let (kernel, inputs) = self
                .run_step(i)
                .expect("a plan's layers run tasks in the model it was made for");
            for half in Side::BOTH {
                let chunks = half.chunks(split).clone();
                if chunks.is_empty() {
                    continue;
                }
                let buffer = |source: Source| match source {
                    Source::Layer(j)
                        if half == Side::B && plan.layer(j).is_some_and(|s| s.interior) =>
                    {
                        TensorBuf {
                            buffer: private_b[j]
                                .clone()
                                .expect("b has an interior producer's part wherever it reads one"),
                            len: frame.buffer(source).len,
                        }
                    }
                    other => frame.buffer(other).clone(),
                };
                let sources = self
                    .task_inputs(i, inputs)
                    .iter()
                    .map(|&s| buffer(s))
                    .collect();
                let place = [plan.a, plan.b][half as usize];
                let output = buffer(Source::Layer(i)).buffer;
                let task = side_task(kernel.clone(), sources, output, chunks)
                    .on(place)
                    .hint(((half as u64 + 1) << 32) | i as u64);
                let id = graph.add(task);
                let read = inputs.iter().filter_map(|&source| match source {
                    Source::Layer(j) => Some(j),
                    _ => None,
                });
                for j in read.flat_map(|j| self.producing(j)) {
                    let interior = plan.layer(j).is_some_and(|s| s.interior);
                    for (s, producer) in ids[j].iter().enumerate() {
                        if let Some(producer) = producer
                            && (!interior || s == half as usize)
                        {
                            graph.make_edge(*producer, id);
                        }
                    }
                }
                // Both halves of the layers the memory plan orders before this one.
                let after = self.memory_after(i).iter().flat_map(|&j| self.producing(j));
                for before in after.flat_map(|j| ids[j]).flatten() {
                    graph.make_edge(before, id);
                }
                ids[i][half as usize] = Some(id);
            }
        }
        graph
    }
}

/// One side of a split layer: the ranks of its place share `chunks`, each reading the
/// inputs whole and writing its own run of chunks.
fn side_task(
    kernel: Arc<dyn Kernel>,
    inputs: Vec<TensorBuf>,
    output: Arc<SharedSlice<f32>>,
    chunks: Range<usize>,
) -> Task {
    Task::new(kernel.kind(), move |ctx| {
        let mine = split_range(chunks.len(), ctx.rank(), ctx.width());
        if mine.is_empty() {
            return;
        }
        let mine = chunks.start + mine.start..chunks.start + mine.end;
        compute_chunks(&*kernel, &inputs, &output, mine);
    })
}
