//! A net ready to run: a [`NetSpec`] plus [`Weights`] becomes one kernel per layer, and a
//! frame becomes a graph of moldable tasks, one per kernel, each computing its rank's
//! chunks of the layer's output.
//!
//! Building a model also does what an inference engine does at load time:
//! - a `batchnorm` right after a convolution whose raw output nothing else reads is folded
//!   into the convolution's weights and bias;
//! - a `relu` right after a convolution or fully connected layer (or after a folded
//!   batchnorm) whose output nothing else reads is fused into that layer;
//! - a residual `add` right after a convolution (or its folded batchnorm) whose output
//!   nothing else reads is fused into the convolution's store, with the add's ReLU: the
//!   convolution takes the other operand as a second input. The result has the bits of
//!   the unfused chain (`(conv + bias) + residual`, then ReLU);
//! - `flatten` is a no-op on a CHW buffer.
//!
//! Those layers keep their place in the spec (and in pipeline units) but run no task: they
//! alias the tensor of the layer they were merged into.
//!
//! Parameter names are torchvision's: a layer named `layer1_0_conv1` reads
//! `layer1.0.conv1.weight` (`_` stands for `.`; torchvision's module names have no
//! underscores). A convolution has a bias unless a batchnorm follows it — as in
//! torchvision, where convolutions feeding a batchnorm are built with `bias=False`.

use std::cell::RefCell;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use taopipe_dsl::{Layer, LayerKind, NetSpec, Source};
use taopipe_runtime::{
    Place, PreparedGraph, Runtime, RuntimeError, SharedSlice, Task, TaskGraph, TaskId,
};

use crate::frame::{Buffers, Frame, FramePool, MAX_GRAPHS, TensorBuf};
use crate::memory_plan::{MemoryPlan, PlanStep};
use crate::weights::{Init, WeightError, Weights};
use crate::{
    Activate, Activation, Add, Affine, BatchNorm, Concat, Conv2d, Conv2dParams, ConvAlgo,
    DepthwiseConv2d, DepthwiseParams, GlobalAvgPool, GroupedConv2d, Isa, Kernel, KernelError,
    Linear, MAX_CONCAT_INPUTS, Pool2d, PoolParams, Scratch, Shape, Softmax, Workspace,
    fold_batchnorm,
};

/// How [`Model::build_with`] builds the kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BuildOptions {
    /// The instruction-set path; `None`: [`Isa::current`] (`TAOPIPE_ISA`, else the best
    /// this CPU has).
    pub isa: Option<Isa>,
    /// Every convolution with this algorithm where it applies, the others as
    /// [`ConvAlgo::choose`] picks; `None`: every one as it picks. For A/B runs, and for
    /// users who want a direct conv's rounding (`Some(ConvAlgo::Direct)`: no Winograd,
    /// whose error is bounded in [`crate::conv::winograd`], but larger).
    pub conv: Option<ConvAlgo>,
    /// Give every layer an output buffer of its own, so that [`Frame::layer_output`] has
    /// every layer's tensor after the frame ran. By default layers take over the buffers
    /// of tensors already read (see [`crate::memory_plan`]), which keeps a frame's
    /// activations few and warm in cache, and branches write their parts of a concat in
    /// place.
    pub keep_outputs: bool,
}

/// PyTorch's default batchnorm ε (a `batchnorm` layer says its own: [`LayerKind::BatchNorm`]).
pub const BN_EPS: f32 = LayerKind::BN_EPS;

/// Why a model could not be built or run. Every variant names the layer.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A parameter tensor could not be had.
    #[error("layer `{layer}`: {source}")]
    Weight {
        /// The layer.
        layer: String,
        /// What went wrong.
        #[source]
        source: WeightError,
    },
    /// The kernel refused its parameters.
    #[error("layer `{layer}`: {source}")]
    Kernel {
        /// The layer.
        layer: String,
        /// What went wrong.
        #[source]
        source: KernelError,
    },
    /// The layer uses something the kernels do not implement.
    #[error("layer `{layer}`: {reason}")]
    Unsupported {
        /// The layer.
        layer: String,
        /// What is missing.
        reason: String,
    },
    /// The input has the wrong number of values.
    #[error("net `{net}` takes {expected} input values ({shape}), got {got}")]
    Input {
        /// The net.
        net: String,
        /// Values it takes.
        expected: usize,
        /// Its input shape.
        shape: String,
        /// Values given.
        got: usize,
    },
    /// The runtime failed (a task panicked, or it shut down).
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

/// What one layer of the spec does at run time.
#[derive(Debug)]
enum Step {
    /// A kernel reading these (resolved) sources.
    Run {
        kernel: Arc<dyn Kernel>,
        inputs: Vec<Source>,
    },
    /// No task: the layer's tensor is this source's tensor (folded, fused, flatten).
    Alias(Source),
}

/// A built net: its spec, one step per layer, and the buffers of finished frames.
#[derive(Debug)]
pub struct Model {
    spec: NetSpec,
    steps: Vec<Step>,
    /// Which buffer holds each layer's tensor, and what each layer waits for.
    memory: Arc<MemoryPlan>,
    pool: Arc<FramePool>,
}

thread_local! {
    /// Each worker's scratch (im2col tiles), reused across layers and frames (and by the
    /// split halves of `split.rs`).
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::new());
}

fn shape(s: taopipe_dsl::Shape) -> Shape {
    Shape::new(s.c, s.h, s.w)
}

/// torchvision's parameter name: `layer1_0_conv1` + `weight` → `layer1.0.conv1.weight`.
pub fn torch_name(layer: &str, param: &str) -> String {
    format!("{}.{param}", layer.replace('_', "."))
}

/// Loads one parameter tensor, naming the layer in errors.
fn load(
    weights: &dyn Weights,
    layer: &Layer,
    param: &str,
    shape: &[usize],
    init: Init,
) -> Result<Vec<f32>, ModelError> {
    weights
        .tensor(&torch_name(layer.name(), param), shape, init)
        .map_err(|source| ModelError::Weight {
            layer: layer.name().to_string(),
            source,
        })
}

fn load_batchnorm(
    weights: &dyn Weights,
    layer: &Layer,
    channels: usize,
) -> Result<BatchNorm, ModelError> {
    let c = [channels];
    Ok(BatchNorm {
        gamma: load(
            weights,
            layer,
            "weight",
            &c,
            Init::Between {
                low: 0.5,
                high: 1.5,
            },
        )?,
        beta: load(weights, layer, "bias", &c, Init::Uniform { bound: 0.1 })?,
        mean: load(
            weights,
            layer,
            "running_mean",
            &c,
            Init::Uniform { bound: 0.1 },
        )?,
        var: load(
            weights,
            layer,
            "running_var",
            &c,
            Init::Between {
                low: 0.5,
                high: 1.5,
            },
        )?,
        eps: match layer.kind() {
            LayerKind::BatchNorm { eps } => *eps,
            _ => BN_EPS,
        },
    })
}

fn square(layer: &Layer, what: &str, (a, b): (usize, usize)) -> Result<usize, ModelError> {
    if a == b {
        Ok(a)
    } else {
        Err(ModelError::Unsupported {
            layer: layer.name().to_string(),
            reason: format!("{what} {a}x{b}: the kernels take the same {what} on both axes"),
        })
    }
}

impl Model {
    /// Builds every kernel, loading parameters by torchvision name, with the default
    /// [`BuildOptions`].
    ///
    /// # Errors
    /// A missing or mis-shaped tensor, or a layer the kernels do not implement, named.
    pub fn build(spec: NetSpec, weights: &dyn Weights) -> Result<Model, ModelError> {
        Model::build_with(spec, weights, &BuildOptions::default())
    }

    /// Builds every kernel as `options` say.
    ///
    /// # Errors
    /// As [`Model::build`], and a bad `TAOPIPE_ISA` or an ISA this CPU cannot run.
    ///
    /// ```
    /// use taopipe_nets::{BuildOptions, Model, RandomWeights, zoo};
    /// let spec = zoo::by_name("synth1").expect("a zoo net")?;
    /// use taopipe_nets::ConvAlgo;
    /// let direct = BuildOptions { conv: Some(ConvAlgo::Direct), ..BuildOptions::default() };
    /// let model = Model::build_with(spec, &RandomWeights { seed: 1 }, &direct)?;
    /// assert!(model.flops() > 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build_with(
        spec: NetSpec,
        weights: &dyn Weights,
        options: &BuildOptions,
    ) -> Result<Model, ModelError> {
        let isa = match options.isa {
            Some(isa) => isa,
            None => Isa::current().map_err(|e| ModelError::Kernel {
                layer: spec.name().to_string(),
                source: e.into(),
            })?,
        };
        let readers = spec.reader_counts();
        let layers = spec.layers();
        let mut steps: Vec<Step> = Vec::with_capacity(layers.len());
        let mut i = 0;
        while i < layers.len() {
            let layer = &layers[i];
            let source = resolve(&steps, layer.source().resolve(i));
            // Layers this one absorbs: a batchnorm, then a relu, that read it alone.
            let absorbs = |j: usize, kind: fn(&LayerKind) -> bool| {
                layers.get(j + 1).is_some_and(|next| {
                    kind(next.kind()) && next.source() == Source::Previous && readers[j] == 1
                })
            };
            let kernel: Arc<dyn Kernel> = match layer.kind() {
                LayerKind::Conv2d {
                    out_channels,
                    kernel,
                    stride,
                    padding,
                    groups,
                    relu,
                } => {
                    let bn =
                        absorbs(i, |k| matches!(k, LayerKind::BatchNorm { .. })).then_some(i + 1);
                    let last = bn.unwrap_or(i);
                    // A residual add right after (ResNet's block output) goes into the store
                    // of a plain convolution.
                    let add = (*groups == 1 && !*relu)
                        .then_some(last + 1)
                        .filter(|_| absorbs(last, |k| matches!(k, LayerKind::ResidualAdd { .. })));
                    let residual = add.map(|a| {
                        let other = layers[a].residual_source().unwrap_or(Source::Input);
                        resolve(&steps, other.resolve(a))
                    });
                    // Else an activation right after (ReLU, MobileNet's ReLU6, YOLO's leaky).
                    let fused = (add.is_none() && !*relu)
                        .then_some(last + 1)
                        .filter(|_| absorbs(last, LayerKind::is_activation));
                    let act = if *relu || add.is_some_and(|a| layers[a].kind().fused_relu()) {
                        Activation::Relu
                    } else {
                        fused.map_or(Activation::None, |a| activation(layers[a].kind()))
                    };
                    let conv = build_conv(
                        weights,
                        layer,
                        ConvShape {
                            out_channels: *out_channels,
                            kernel: *kernel,
                            stride: *stride,
                            padding: *padding,
                            groups: *groups,
                            act,
                        },
                        bn.map(|b| &layers[b]),
                        (isa, options.conv),
                        residual.is_some(),
                    )?;
                    steps.push(Step::Run {
                        kernel: conv,
                        inputs: std::iter::once(source).chain(residual).collect(),
                    });
                    let merged = usize::from(bn.is_some())
                        + usize::from(fused.is_some())
                        + usize::from(add.is_some());
                    steps.extend((0..merged).map(|_| Step::Alias(Source::Layer(i))));
                    i += 1 + merged;
                    continue;
                }
                LayerKind::Fc { out_features, relu } => {
                    let fuse_relu = !*relu && absorbs(i, |k| matches!(k, LayerKind::Relu));
                    let n_in = layer.input().elements().unwrap_or(0) as usize;
                    let w = load(
                        weights,
                        layer,
                        "weight",
                        &[*out_features, n_in],
                        Init::He { fan_in: n_in },
                    )?;
                    let bound = 1.0 / (n_in.max(1) as f32).sqrt();
                    let b = load(
                        weights,
                        layer,
                        "bias",
                        &[*out_features],
                        Init::Uniform { bound },
                    )?;
                    let fc = Linear::new(
                        shape(layer.input()),
                        *out_features,
                        w,
                        Some(b),
                        *relu || fuse_relu,
                    )
                    .and_then(|fc| fc.with_isa(isa))
                    .map_err(kernel_error(layer))?;
                    steps.push(Step::Run {
                        kernel: Arc::new(fc),
                        inputs: vec![source],
                    });
                    if fuse_relu {
                        steps.push(Step::Alias(Source::Layer(i)));
                        i += 1;
                    }
                    i += 1;
                    continue;
                }
                LayerKind::MaxPool { .. } | LayerKind::AvgPool { .. } => Arc::new(
                    Pool2d::new(pool_params(layer)?, shape(layer.input()))
                        .map_err(kernel_error(layer))?,
                ),
                LayerKind::GlobalAvgPool => Arc::new(GlobalAvgPool::new(shape(layer.input()))),
                LayerKind::Relu | LayerKind::Clip { .. } | LayerKind::LeakyRelu { .. } => Arc::new(
                    Activate::new(shape(layer.input()), activation(layer.kind())),
                ),
                LayerKind::BatchNorm { .. } => {
                    let bn = load_batchnorm(weights, layer, layer.input().c)?;
                    let (scale, shift) = bn.affine().map_err(kernel_error(layer))?;
                    Arc::new(
                        Affine::new(shape(layer.input()), scale, shift, false)
                            .map_err(kernel_error(layer))?,
                    )
                }
                LayerKind::ResidualAdd { relu, .. } => {
                    let other = layer
                        .residual_source()
                        .map(|s| resolve(&steps, s.resolve(i)))
                        .unwrap_or(Source::Input);
                    steps.push(Step::Run {
                        kernel: Arc::new(Add::new(shape(layer.input()), *relu)),
                        inputs: vec![source, other],
                    });
                    i += 1;
                    continue;
                }
                LayerKind::Flatten => {
                    steps.push(Step::Alias(source));
                    i += 1;
                    continue;
                }
                LayerKind::Softmax => Arc::new(Softmax::new(shape(layer.input()))),
                LayerKind::Concat { .. } => {
                    let shapes: Vec<Shape> = layer
                        .reads(i)
                        .map(|s| match s {
                            Source::Layer(j) => shape(layers[j].output()),
                            _ => shape(spec.input()),
                        })
                        .collect();
                    let concat = Concat::new(&shapes).map_err(kernel_error(layer))?;
                    steps.push(Step::Run {
                        kernel: Arc::new(concat),
                        inputs: layer.reads(i).map(|s| resolve(&steps, s)).collect(),
                    });
                    i += 1;
                    continue;
                }
            };
            steps.push(Step::Run {
                kernel,
                inputs: vec![source],
            });
            i += 1;
        }
        let memory = Arc::new(memory_plan(
            &steps,
            shape(spec.input()).len(),
            !options.keep_outputs,
        ));
        Ok(Model {
            spec,
            steps,
            memory,
            pool: Arc::new(FramePool::default()),
        })
    }

    /// The net this model runs.
    pub fn spec(&self) -> &NetSpec {
        &self.spec
    }

    /// Values of one input frame.
    pub fn input_len(&self) -> usize {
        shape(self.spec.input()).len()
    }

    /// Whether layer `index` runs a task (false for folded, fused and flatten layers, and
    /// for a concat whose inputs' producers write its parts in place: see
    /// [`crate::memory_plan`]).
    pub fn runs_task(&self, index: usize) -> bool {
        self.run_step(index).is_some()
    }

    /// The kernel and resolved input sources of layer `index`; `None` for a layer that runs
    /// no task (folded, fused, flatten, a joined concat) or is out of range. `split.rs`
    /// builds its tasks from these.
    pub(crate) fn run_step(&self, index: usize) -> Option<(&Arc<dyn Kernel>, &[Source])> {
        match self.steps.get(index) {
            Some(Step::Run { kernel, inputs }) if !self.memory.joined(index) => {
                Some((kernel, inputs))
            }
            _ => None,
        }
    }

    /// The layers whose tasks produce layer `index`'s tensor, for a graph's edges: the
    /// producers of a joined concat's parts, else the layer itself.
    pub(crate) fn producing(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        let parts = self.memory.parts(index);
        let own = parts.is_empty().then_some(index);
        parts.iter().copied().chain(own)
    }

    /// Whether layer `index`'s tensor is a part of a joined concat's (see
    /// [`crate::memory_plan`]): its task writes it into the concat's buffer.
    pub(crate) fn is_part(&self, index: usize) -> bool {
        self.memory.part_of(index).is_some()
    }

    /// Layers the memory plan orders before layer `index` (see [`crate::memory_plan`]):
    /// every graph of the model adds them as edges.
    pub(crate) fn memory_after(&self, index: usize) -> &[usize] {
        self.memory.after(index)
    }

    /// Whether layer `index` reads its residual from its own output: a conv with a fused
    /// residual add that writes over its shortcut's buffer, being its last reader (see
    /// [`crate::memory_plan`]). Its task gets every input but that last one.
    ///
    /// ```
    /// use taopipe_nets::{Model, RandomWeights, zoo};
    /// let model = Model::build(zoo::resnet50()?, &RandomWeights { seed: 1 })?;
    /// let convs = (0..model.spec().len()).filter(|&i| model.in_place(i)).count();
    /// assert!(convs > 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn in_place(&self, index: usize) -> bool {
        index < self.steps.len() && self.memory.in_place(index)
    }

    /// How many layers read their residual in place ([`Model::in_place`]).
    pub fn in_place_layers(&self) -> usize {
        (0..self.steps.len()).filter(|&i| self.in_place(i)).count()
    }

    /// How many concats run no task, their inputs' producers writing their parts of its
    /// buffer in place (see [`crate::memory_plan`]).
    ///
    /// ```
    /// use taopipe_nets::{BuildOptions, Model, RandomWeights, zoo};
    /// let spec = zoo::by_name("squeezenet1_1").expect("a zoo net")?;
    /// let model = Model::build(spec.clone(), &RandomWeights { seed: 1 })?;
    /// assert_eq!(model.joined_concats(), 8); // one per fire module
    /// // With a buffer per layer, each concat copies.
    /// let keep = BuildOptions { keep_outputs: true, ..BuildOptions::default() };
    /// let kept = Model::build_with(spec, &RandomWeights { seed: 1 }, &keep)?;
    /// assert_eq!(kept.joined_concats(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn joined_concats(&self) -> usize {
        (0..self.steps.len())
            .filter(|&i| self.memory.joined(i))
            .count()
    }

    /// The inputs layer `index`'s task is given, of its sources `inputs`: all but an
    /// in-place residual.
    pub(crate) fn task_inputs<'s>(&self, index: usize, inputs: &'s [Source]) -> &'s [Source] {
        &inputs[..inputs.len() - usize::from(self.in_place(index))]
    }

    /// The layer whose task writes the net's output (the last layer, or the one it aliases);
    /// `None` when the output is the input itself.
    pub(crate) fn output_producer(&self) -> Option<usize> {
        match resolve(&self.steps, Source::Layer(self.steps.len().checked_sub(1)?)) {
            Source::Layer(j) => Some(j),
            _ => None,
        }
    }

    /// Floating-point operations of one frame (multiply-add = 2).
    pub fn flops(&self) -> u64 {
        (0..self.steps.len())
            .filter_map(|i| self.run_step(i))
            .map(|(kernel, _)| kernel.flops())
            .sum()
    }

    /// A frame holding `input`, in buffers from the model's pool (see [`Frame`]).
    ///
    /// # Errors
    /// An input of the wrong length.
    pub fn frame(&self, input: Vec<f32>) -> Result<Frame, ModelError> {
        self.frame_from(&input)
    }

    /// A frame holding a copy of `input`. Once the pool holds a finished frame's buffers,
    /// this allocates nothing.
    ///
    /// # Errors
    /// An input of the wrong length.
    pub fn frame_from(&self, input: &[f32]) -> Result<Frame, ModelError> {
        if input.len() != self.input_len() {
            return Err(ModelError::Input {
                net: self.spec.name().to_string(),
                expected: self.input_len(),
                shape: self.spec.input().to_string(),
                got: input.len(),
            });
        }
        let buffers = self.pooled_buffers();
        buffers
            .input
            .buffer
            .write(0..input.len())
            .expect("a pooled frame's buffers are idle")
            .copy_from_slice(input);
        Ok(Frame::new(buffers, self.pool.clone()))
    }

    /// Floats one frame's buffers hold at most: the input, the memory plan's output
    /// buffers and the shared workspace's buffers ([`Model::workspace_floats`], allocated
    /// only if a gang uses them). What a frame in flight costs in memory.
    ///
    /// ```
    /// use taopipe_nets::{BuildOptions, Model, RandomWeights, zoo};
    /// let spec = zoo::by_name("alexnet").expect("a zoo net")?;
    /// let shared = Model::build(spec.clone(), &RandomWeights { seed: 1 })?;
    /// let keep = BuildOptions { keep_outputs: true, ..BuildOptions::default() };
    /// let kept = Model::build_with(spec, &RandomWeights { seed: 1 }, &keep)?;
    /// assert!(shared.frame_floats() < kept.frame_floats());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn frame_floats(&self) -> usize {
        self.input_len() + self.memory.sizes().iter().sum::<usize>() + self.workspace_floats()
    }

    /// Floats of a frame's shared workspace ([`Workspace`]): each of its two pairs is
    /// allocated by the first gang that runs a layer's shared schedule with it, so a frame
    /// run at width 1 never holds them.
    pub fn workspace_floats(&self) -> usize {
        self.memory.workspace_len().floats()
    }

    /// Buffer sets of finished frames waiting in the pool (at most
    /// [`MAX_POOLED`](crate::frame::MAX_POOLED), or the frames of the last
    /// [`reserve_frames`](Model::reserve_frames) if more).
    pub fn pooled_frames(&self) -> usize {
        self.pool.len()
    }

    /// Fills the pool to `frames` buffer sets and prepares on each the graph of every
    /// stage, given as (units, place) as for [`run_stage`](Model::run_stage), and, if a
    /// stage is wider than one worker, the gangs' workspace ([`Workspace::allocate`]).
    /// From now on the pool keeps that many sets, and each set that many graphs, if more
    /// than [`MAX_POOLED`](crate::frame::MAX_POOLED) and [`MAX_GRAPHS`], and drops the
    /// free sets beyond (`crate::frame`'s docs). With `frames` the pipeline's
    /// [`max_in_flight`](taopipe_runtime::Pipeline::max_in_flight), no frame of the
    /// pipeline ever allocates, however deep it is and however the stages' timing falls.
    ///
    /// ```
    /// # use taopipe_nets::{Model, RandomWeights, zoo};
    /// # use taopipe_runtime::{Place, Runtime};
    /// let spec = zoo::by_name("alexnet").unwrap().unwrap();
    /// let model = Model::build(spec, &RandomWeights { seed: 1 })?;
    /// let rt = Runtime::builder().workers(2).build()?;
    /// let cut = model.spec().units().len() / 2;
    /// let stages = [(0..cut, Place::new(0, 1)), (cut..model.spec().units().len(), Place::new(1, 1))];
    /// model.reserve_frames(&rt, 4, &stages)?;
    /// assert_eq!(model.pooled_frames(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// A stage's graph that the runtime refuses (a place outside it).
    pub fn reserve_frames(
        &self,
        rt: &Runtime,
        frames: usize,
        stages: &[(Range<usize>, Place)],
    ) -> Result<(), RuntimeError> {
        self.pool.fit(frames, stages.len());
        let held: Vec<Frame> = (0..frames)
            .map(|_| Frame::new(self.pooled_buffers(), self.pool.clone()))
            .collect();
        let gangs = stages.iter().any(|(_, place)| place.width() > 1);
        for frame in &held {
            for (units, place) in stages {
                self.prepared_layers(rt, frame, self.unit_layers(units.clone()), *place)?;
            }
            if gangs {
                frame.workspace().allocate();
            }
        }
        Ok(())
    }

    /// A free buffer set from the pool, else a new one.
    fn pooled_buffers(&self) -> Buffers {
        self.pool.take().unwrap_or_else(|| self.buffers())
    }

    /// New buffers for a frame: the input, the output buffers of the memory plan (each
    /// layer's tensor in its planned buffer; aliases share their producer's), and the
    /// workspace the layers share.
    fn buffers(&self) -> Buffers {
        let input = Arc::new(SharedSlice::zeroed(self.input_len()));
        let shared: Vec<Arc<SharedSlice<f32>>> = self
            .memory
            .sizes()
            .iter()
            .map(|&len| Arc::new(SharedSlice::zeroed(len)))
            .collect();
        let outputs = (0..self.steps.len())
            .map(|i| {
                let buffer = self.memory.buffer(i).map_or(&input, |b| &shared[b]);
                let len = self.memory.len(i);
                // A part of a joined concat: its window of the concat's buffer.
                let buffer = if self.is_part(i) {
                    let at = self.memory.offset(i);
                    Arc::new(buffer.window(at..at + len))
                } else {
                    buffer.clone()
                };
                TensorBuf { buffer, len }
            })
            .collect();
        Buffers {
            input: TensorBuf {
                buffer: input,
                len: self.input_len(),
            },
            outputs,
            workspace: Arc::new(Workspace::with_len(self.memory.workspace_len())),
            memory: self.memory.clone(),
            graphs: Mutex::new(Vec::with_capacity(MAX_GRAPHS)),
        }
    }

    /// The task graph of one frame: a moldable task per kernel layer, on `place_of(layer)`,
    /// with an edge from each producer to each reader. Task types are the kernel kinds
    /// (`conv`, `fc`, …) and the hint is the layer index, so the trace table keeps one row
    /// per layer.
    pub fn graph(&self, frame: &Frame, place_of: impl Fn(usize) -> Place) -> TaskGraph {
        self.layers_graph(frame, 0..self.steps.len(), place_of)
    }

    /// The layers of pipeline units `units` (see [`NetSpec::units`]).
    ///
    /// # Panics
    /// If `units` is empty or out of range (a configuration bug, not user input).
    pub fn unit_layers(&self, units: Range<usize>) -> Range<usize> {
        let all = self.spec.units();
        assert!(
            !units.is_empty() && units.end <= all.len(),
            "units {units:?} of {}",
            all.len()
        );
        all[units.start].layers().start..all[units.end - 1].layers().end
    }

    /// The graph of one pipeline stage for one frame: the layers of units `units`, all on
    /// `place`. Layers before the stage must have run (an earlier stage did them); their
    /// outputs, including tensors a residual edge carries across the stage boundary, are
    /// in `frame` already.
    pub fn stage_graph(&self, frame: &Frame, units: Range<usize>, place: Place) -> TaskGraph {
        self.layers_graph(frame, self.unit_layers(units), |_| place)
    }

    fn layers_graph(
        &self,
        frame: &Frame,
        layers: Range<usize>,
        place_of: impl Fn(usize) -> Place,
    ) -> TaskGraph {
        let mut graph = TaskGraph::with_capacity(layers.len(), layers.len() * 2);
        let mut ids: Vec<Option<TaskId>> = vec![None; self.steps.len()];
        for i in layers {
            let Some((kernel, inputs)) = self.run_step(i) else {
                continue;
            };
            let sources: Vec<TensorBuf> = self
                .task_inputs(i, inputs)
                .iter()
                .map(|&s| frame.buffer(s).clone())
                .collect();
            let task = layer_task(
                kernel.clone(),
                sources,
                frame.output_buffer(i).buffer.clone(),
                frame.workspace().clone(),
            )
            .on(place_of(i))
            .hint(i as u64);
            let id = graph.add(task);
            // Layers outside the range ran before this graph: no edge needed.
            let producers = inputs.iter().filter_map(|source| match source {
                Source::Layer(j) => Some(*j),
                _ => None,
            });
            let before = producers.chain(self.memory.after(i).iter().copied());
            for j in before.flat_map(|j| self.producing(j)) {
                if let Some(before) = ids[j] {
                    graph.make_edge(before, id);
                }
            }
            ids[i] = Some(id);
        }
        graph
    }

    /// Runs one frame with every layer on `place` and returns the last layer's output.
    ///
    /// # Errors
    /// A wrong input length; a task's panic; a place the runtime does not allow.
    pub fn forward(
        &self,
        rt: &Runtime,
        input: Vec<f32>,
        place: Place,
    ) -> Result<Vec<f32>, ModelError> {
        let frame = self.frame_from(&input)?;
        self.run(rt, &frame, place)?;
        Ok(frame.output())
    }

    /// Runs every layer of `frame` on `place`, through a graph prepared once per frame
    /// buffers, place and runtime (see [`crate::frame`]): once the model's pool and the
    /// frames' graphs are warm, a frame allocates nothing.
    ///
    /// # Errors
    /// A task's panic; a place the runtime does not allow; `frame` already running.
    ///
    /// ```
    /// use taopipe_nets::{Model, RandomWeights, zoo};
    /// use taopipe_runtime::{Place, Runtime};
    /// let model = Model::build(zoo::by_name("synth1").expect("zoo net")?, &RandomWeights { seed: 1 })?;
    /// let rt = Runtime::builder().workers(2).build()?;
    /// let x = vec![0.5; model.input_len()];
    /// let mut y = vec![0.0; model.output_len()];
    /// for _ in 0..3 {
    ///     let frame = model.frame_from(&x)?;
    ///     model.run(&rt, &frame, Place::new(0, 2))?;
    ///     frame.output_into(&mut y);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run(&self, rt: &Runtime, frame: &Frame, place: Place) -> Result<(), RuntimeError> {
        self.run_layers(rt, frame, 0..self.steps.len(), place)
    }

    /// Runs the layers of pipeline units `units` of `frame` on `place` (a pipeline stage),
    /// through a prepared graph as [`Model::run`]. Earlier units must have run.
    ///
    /// # Errors
    /// As [`Model::run`].
    pub fn run_stage(
        &self,
        rt: &Runtime,
        frame: &Frame,
        units: Range<usize>,
        place: Place,
    ) -> Result<(), RuntimeError> {
        self.run_layers(rt, frame, self.unit_layers(units), place)
    }

    fn run_layers(
        &self,
        rt: &Runtime,
        frame: &Frame,
        layers: Range<usize>,
        place: Place,
    ) -> Result<(), RuntimeError> {
        let graph = self.prepared_layers(rt, frame, layers, place)?;
        rt.run_prepared(&graph)
    }

    /// The graph of `layers` on `place`, prepared once for `frame`'s buffers.
    fn prepared_layers(
        &self,
        rt: &Runtime,
        frame: &Frame,
        layers: Range<usize>,
        place: Place,
    ) -> Result<Arc<PreparedGraph>, RuntimeError> {
        frame.prepared(rt, layers.clone(), place, || {
            self.layers_graph(frame, layers.clone(), |_| place)
        })
    }

    /// Values of one output frame.
    pub fn output_len(&self) -> usize {
        shape(self.spec.output()).len()
    }
}

/// The memory plan of `steps` (see [`crate::memory_plan`]).
fn memory_plan(steps: &[Step], input_len: usize, share: bool) -> MemoryPlan {
    let plan_steps: Vec<PlanStep<'_>> = steps
        .iter()
        .map(|step| match step {
            Step::Run { kernel, inputs } if kernel.kind() == "concat" => PlanStep::Concat {
                len: kernel.out_shape().len(),
                reads: inputs,
            },
            Step::Run { kernel, inputs } => PlanStep::Task {
                len: kernel.out_shape().len(),
                reads: inputs,
                workspace: kernel.workspace_len(),
                in_place: kernel.in_place_input(),
            },
            Step::Alias(source) => PlanStep::Alias(resolve(steps, *source)),
        })
        .collect();
    MemoryPlan::new(&plan_steps, input_len, share)
}

/// Follows aliases to the step that produces the tensor.
fn resolve(steps: &[Step], source: Source) -> Source {
    match source {
        Source::Layer(j) => match &steps[j] {
            Step::Alias(s) => resolve(steps, *s),
            Step::Run { .. } => source,
        },
        other => other,
    }
}

fn kernel_error(layer: &Layer) -> impl Fn(KernelError) -> ModelError + '_ {
    move |source| ModelError::Kernel {
        layer: layer.name().to_string(),
        source,
    }
}

/// A conv layer's hyperparameters from the spec.
struct ConvShape {
    out_channels: usize,
    kernel: (usize, usize),
    stride: (usize, usize),
    padding: (usize, usize),
    groups: usize,
    act: Activation,
}

/// The pool a `MaxPool` or `AvgPool` layer declares, as [`Pool2d`] takes it.
///
/// # Errors
/// [`ModelError::Unsupported`] for another kind of layer, or for a kernel, stride or
/// padding that differs between the axes (the kernels take one per pool).
///
/// ```
/// use taopipe_dsl::net;
/// use taopipe_nets::{PoolParams, model::pool_params};
/// let spec = net! { p [8, 9, 9] => pool: maxpool(3x3, stride 2) ceil }.unwrap();
/// assert_eq!(pool_params(&spec.layers()[0])?, PoolParams::max(3, 2, 0).with_ceil(true));
/// # Ok::<(), taopipe_nets::ModelError>(())
/// ```
pub fn pool_params(layer: &Layer) -> Result<PoolParams, ModelError> {
    let (LayerKind::MaxPool {
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
    }) = *layer.kind()
    else {
        return Err(ModelError::Unsupported {
            layer: layer.name().to_string(),
            reason: "not a pool".into(),
        });
    };
    let max = matches!(layer.kind(), LayerKind::MaxPool { .. });
    let (k, s, p, e) = (
        square(layer, "kernel", kernel)?,
        square(layer, "stride", stride)?,
        square(layer, "padding", padding)?,
        square(layer, "padding after", padding_end)?,
    );
    let params = if max {
        PoolParams::max(k, s, p)
    } else {
        PoolParams::avg(k, s, p)
    };
    Ok(params.with_padding_end(e).with_ceil(ceil))
}

/// What an element-wise activation layer computes, as the kernels' [`Activation`].
fn activation(kind: &LayerKind) -> Activation {
    match *kind {
        LayerKind::Relu => Activation::Relu,
        LayerKind::Clip { min, max } => Activation::Clip { min, max },
        LayerKind::LeakyRelu { slope } => Activation::LeakyRelu { slope },
        _ => Activation::None,
    }
}

/// A convolution's kernel: its weights (`[K, C/g, kh, kw]`) and bias loaded, the batchnorm
/// `bn` folded in; a plain convolution (one group), a depthwise one (a group per channel,
/// as many outputs as inputs: MobileNet's) or a grouped one (any other). Only a plain one
/// takes a fused `residual`.
fn build_conv(
    weights: &dyn Weights,
    layer: &Layer,
    shape_of: ConvShape,
    bn: Option<&Layer>,
    (isa, algo): (Isa, Option<ConvAlgo>),
    residual: bool,
) -> Result<Arc<dyn Kernel>, ModelError> {
    let ConvShape {
        out_channels,
        kernel,
        stride,
        padding,
        groups,
        act,
    } = shape_of;
    let c = layer.input().c;
    let fan_in = c / groups * kernel.0 * kernel.1;
    let w = load(
        weights,
        layer,
        "weight",
        &[out_channels, c / groups, kernel.0, kernel.1],
        Init::He { fan_in },
    )?;
    let (w, b) = match bn {
        Some(bn_layer) => {
            let bn = load_batchnorm(weights, bn_layer, out_channels)?;
            fold_batchnorm(&w, None, &bn).map_err(kernel_error(bn_layer))?
        }
        None => {
            let bound = 1.0 / (fan_in.max(1) as f32).sqrt();
            (
                w,
                load(
                    weights,
                    layer,
                    "bias",
                    &[out_channels],
                    Init::Uniform { bound },
                )?,
            )
        }
    };
    let input = shape(layer.input());
    let params = Conv2dParams {
        in_channels: c,
        out_channels,
        kernel,
        stride,
        padding,
        act,
    };
    let kernel: Arc<dyn Kernel> = if groups == 1 {
        let algo = algo.filter(|a| a.applies(&params));
        Arc::new(
            Conv2d::with_options(params, input, w, Some(b), algo, isa)
                .map_err(kernel_error(layer))?
                .with_residual(residual),
        )
    } else if groups == c && groups == out_channels {
        let p = DepthwiseParams {
            channels: c,
            kernel,
            stride,
            padding,
            act,
        };
        Arc::new(
            DepthwiseConv2d::new(p, input, w, Some(b))
                .and_then(|d| d.with_isa(isa))
                .map_err(kernel_error(layer))?,
        )
    } else {
        Arc::new(
            GroupedConv2d::with_isa(params, groups, input, w, Some(b), algo, isa)
                .map_err(kernel_error(layer))?,
        )
    };
    Ok(kernel)
}

/// The moldable task of one layer: each rank reads the inputs whole and writes its chunks.
fn layer_task(
    kernel: Arc<dyn Kernel>,
    inputs: Vec<TensorBuf>,
    output: Arc<SharedSlice<f32>>,
    workspace: Arc<Workspace>,
) -> Task {
    Task::new(kernel.kind(), move |ctx| {
        with_inputs(&inputs, |views| {
            SCRATCH.with(|s| {
                kernel.run_rank(ctx, views, &output, &workspace, &mut s.borrow_mut());
            });
        });
    })
}

/// Runs `f` on views of `inputs`' tensors (at most [`MAX_CONCAT_INPUTS`]: the kernels'
/// arities), each its tensor's length of a buffer that may be longer, without allocating:
/// the guards and the views are arrays on the stack.
fn with_inputs<R>(inputs: &[TensorBuf], f: impl FnOnce(&[&[f32]]) -> R) -> R {
    assert!(
        inputs.len() <= MAX_CONCAT_INPUTS,
        "a layer takes at most {MAX_CONCAT_INPUTS} inputs, not {}",
        inputs.len()
    );
    let mut guards: [Option<taopipe_runtime::ReadGuard<'_, f32>>; MAX_CONCAT_INPUTS] =
        Default::default();
    for (guard, t) in guards.iter_mut().zip(inputs) {
        *guard = Some(
            t.buffer
                .read()
                .expect("inputs are complete: their producers precede this task"),
        );
    }
    let mut views: [&[f32]; MAX_CONCAT_INPUTS] = [&[]; MAX_CONCAT_INPUTS];
    for ((view, guard), t) in views.iter_mut().zip(&guards).zip(inputs) {
        if let Some(g) = guard {
            *view = &g[..t.len];
        }
    }
    f(&views[..inputs.len()])
}

/// Computes the chunks `chunks` of a layer on the calling worker: reads the inputs whole
/// and writes exactly those chunks of `output` (every task of every place writes disjoint
/// chunks), with the worker's scratch.
pub(crate) fn compute_chunks(
    kernel: &dyn Kernel,
    inputs: &[TensorBuf],
    output: &SharedSlice<f32>,
    chunks: Range<usize>,
) {
    with_inputs(inputs, |views| {
        let mut out = output
            .write(kernel.output_range(chunks.clone()))
            .expect("tasks write disjoint chunks");
        SCRATCH.with(|s| kernel.compute_chunks(views, chunks, &mut out, &mut s.borrow_mut()));
    });
}
