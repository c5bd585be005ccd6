//! Calibration for Pipe-it's per-layer time predictor
//! ([`taopipe_live::planners::pipeit`]): a grid of single-layer micro-benchmarks run with the real
//! kernels through the runtime on every core type at every width, and the measured time of
//! every unit of a net to check the predictions against (the paper's Table III).
//!
//! # What is measured, and decisions
//!
//! - **Core types** are [`devices`]: topology clusters split by
//!   current speed, fastest first, so type 0 is the paper's Big cluster. A core type of
//!   `c` workers is measured on the places `leader + w` for `w` in `1..=c` that the
//!   topology allows (a layout file may allow fewer widths).
//! - **The grid** ([`default_grid`]): 64 convolutions drawn (seeded, so the same on every
//!   run) from the paper's micro-benchmark sets widened to the zoo's ranges — inputs 7–224,
//!   kernels 1–11, 3–512 input and 16–2048 output channels, strides 1 and 2 — so `N`
//!   spans 49–50176, `K` 3–6272 and `M` 16–2048 as VGG16, AlexNet and ResNet50 do, with
//!   2·10⁵ to 2·10⁹ multiply-adds each (VGG16's largest layers have 1.85·10⁹); 14 fully
//!   connected layers of 1536–20000 inputs and 1000–4096 outputs (the paper: "various input
//!   tensor sizes and number of neurons (4096 and 1000)"), whose weights, 6–200 MB, miss
//!   the L2 cache as the zoo's do; 8 max/avg poolings (with and without padding), 3 global
//!   average poolings and 12 element-wise layers (ReLU, batchnorm, residual add) of several
//!   sizes and channel counts (the channel counts vary the chunk count, which Eq. 8 needs
//!   varied); 4 concats (a tensor joined to itself, 32–896 channels out), fitted with the
//!   element-wise layers; and 20 depthwise convolutions for
//!   [`Op::Depthwise`](super::Op::Depthwise), spanning MobileNet V1's and V2's: 3×3 at
//!   strides 1 and 2, 32–1024 channels, output planes 7×7 to 112×112, plus four 5×5 so that
//!   `K` varies. 125 layers in all. No grid layer has the sizes of a layer of a zoo net
//!   (any of `zoo::NAMES`), so the report measures prediction, not recall.
//! - **A measurement** is `taopipe_live::planners::mosaic::unit_times`: a unit alone on a place
//!   (`Model::stage_graph`), one `rt.run` per run, timed from the calling thread (so an
//!   emulated slow core's stall counts), the median of the repetitions; the first
//!   repetition warms caches and scratch and the median drops it. The grid's layers and a
//!   net's units are measured the same way.
//! - Weights are random ([`RandomWeights`], seeded) and the input a fixed pseudo-random
//!   frame: times do not depend on the values.
//! - Progress goes to a callback (the examples draw it with indicatif; this crate does
//!   not print).

use std::collections::HashSet;
use std::sync::Arc;

use crate::planners::pipeit::{
    Calibration, CoreType, LayerDesc, MachineInfo, Sample, UnitTime, describe_layers,
};
use taopipe_dsl::{DslError, INPUT, LayerKind, NetSpec, Shape, SplitMix64};
use taopipe_nets::{Model, ModelError, RandomWeights, zoo};
use taopipe_runtime::{Place, Runtime};

use crate::devices::devices;
use crate::planners::mosaic::{ProfileError, unit_times};

/// Why calibration or a measurement failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CalibrateError {
    /// Zero repetitions.
    #[error("repetitions must be at least 1, got {0}")]
    Repetitions(usize),
    /// The grid is empty.
    #[error("the micro-benchmark grid is empty")]
    EmptyGrid,
    /// The runtime allows no place on any core type.
    #[error("no allowed place on any core type of the {workers} workers")]
    NoPlaces {
        /// Workers of the runtime.
        workers: usize,
    },
    /// A benchmark layer does not fit its input.
    #[error("benchmark layer `{name}`: {source}")]
    Layer {
        /// The benchmark layer.
        name: String,
        /// Why (boxed: the DSL's error is large, and this enum is returned everywhere).
        #[source]
        source: Box<DslError>,
    },
    /// A model could not be built or run.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A measurement failed.
    #[error(transparent)]
    Profile(#[from] ProfileError),
}

/// One micro-benchmark: a single layer on an input of a given shape.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchLayer {
    /// A readable name, e.g. `conv 64>128 3x3/1 @56`.
    pub name: String,
    /// Its input.
    pub input: Shape,
    /// The layer.
    pub kind: LayerKind,
}

impl BenchLayer {
    /// The one-layer net that runs it.
    ///
    /// # Errors
    /// [`CalibrateError::Layer`] when the layer does not fit its input.
    pub fn spec(&self) -> Result<NetSpec, CalibrateError> {
        NetSpec::builder("bench", self.input)
            .layer("x", self.kind.clone())
            .build()
            .map_err(|source| CalibrateError::Layer {
                name: self.name.clone(),
                source: Box::new(source),
            })
    }
}

fn conv_layer(c: usize, i: usize, m: usize, f: usize, s: usize) -> BenchLayer {
    BenchLayer {
        name: format!("conv {c}>{m} {f}x{f}/{s} @{i}"),
        input: Shape::new(c, i, i),
        kind: LayerKind::Conv2d {
            out_channels: m,
            kernel: (f, f),
            stride: (s, s),
            padding: (f / 2, f / 2),
            groups: 1,
            relu: true,
        },
    }
}

/// The default micro-benchmark grid (see the module docs): 64 convolutions, 14 fully
/// connected layers, 11 poolings, 16 element-wise layers (4 of them concats) and 20
/// depthwise convolutions, 125 in all, none with the sizes of a layer of a zoo net.
///
/// ```
/// use taopipe_live::planners::pipeit::default_grid;
/// use taopipe_live::planners::pipeit::{describe_layers, Op};
///
/// let grid = default_grid();
/// assert_eq!(grid.len(), 64 + 14 + 11 + 16 + 20);
/// for b in &grid {
///     let d = describe_layers(&b.spec()?)[0];
///     assert_ne!(d.op, Op::Free, "{}", b.name);
///     if d.op == Op::Gemm {
///         assert!(d.n * d.k * d.m <= 2_000_000_000, "{}", b.name);
///     }
/// }
/// # Ok::<(), taopipe_live::planners::pipeit::CalibrateError>(())
/// ```
pub fn default_grid() -> Vec<BenchLayer> {
    const INPUTS: [usize; 6] = [7, 14, 28, 56, 112, 224];
    const KERNELS: [usize; 5] = [1, 3, 5, 7, 11];
    const IN_CHANNELS: [usize; 7] = [3, 16, 32, 64, 128, 256, 512];
    const OUT_CHANNELS: [usize; 9] = [16, 24, 64, 100, 128, 256, 512, 1024, 2048];
    const MAX_MACS: u64 = 2_000_000_000;
    const MIN_MACS: u64 = 200_000;
    const CONVS: usize = 64;
    let zoo = zoo_descriptors();
    let mut rng = SplitMix64::new(0x9e11);
    let mut pick = |set: &[usize]| set[rng.range(0, set.len() as u64 - 1) as usize];
    let mut grid: Vec<BenchLayer> = Vec::new();
    while grid.len() < CONVS {
        let (i, f, c, m) = (
            pick(&INPUTS),
            pick(&KERNELS),
            pick(&IN_CHANNELS),
            pick(&OUT_CHANNELS),
        );
        let s = if pick(&[1, 1, 1, 2]) == 2 && i >= 14 {
            2
        } else {
            1
        };
        if f > i {
            continue;
        }
        let o = ((i + 2 * (f / 2) - f) / s + 1) as u64;
        let macs = o * o * (f * f * c * m) as u64;
        let layer = conv_layer(c, i, m, f, s);
        if !(MIN_MACS..=MAX_MACS).contains(&macs)
            || grid.iter().any(|b| b.name == layer.name)
            || layer
                .spec()
                .is_ok_and(|spec| zoo.contains(&describe_layers(&spec)[0]))
        {
            continue;
        }
        grid.push(layer);
    }
    for k in [1536, 3072, 6144, 12288, 20000] {
        for m in [1000, 2500, 4096] {
            if k * m > 60_000_000 {
                continue; // 328 MB of weights; the others span the range
            }
            grid.push(BenchLayer {
                name: format!("fc {k}>{m}"),
                input: Shape::new(k, 1, 1),
                kind: LayerKind::Fc {
                    out_features: m,
                    relu: true,
                },
            });
        }
    }
    for (c, i, k, p, max) in [
        (64, 120, 3, 0, true),
        (24, 224, 2, 0, true),
        (128, 56, 2, 0, false),
        (256, 30, 3, 0, true),
        (10, 56, 3, 0, false),
        (384, 14, 2, 0, true),
        (32, 112, 3, 1, true),
        (128, 28, 3, 1, true),
    ] {
        let (kernel, stride, padding) = ((k, k), (2, 2), (p, p));
        grid.push(BenchLayer {
            name: format!(
                "{} {k}x{k}/2 pad {p} {c}@{i}",
                if max { "maxpool" } else { "avgpool" }
            ),
            input: Shape::new(c, i, i),
            kind: if max {
                LayerKind::max_pool(kernel, stride, padding)
            } else {
                LayerKind::avg_pool(kernel, stride, padding)
            },
        });
    }
    for (c, i) in [(1536, 7), (512, 14), (20, 28)] {
        grid.push(BenchLayer {
            name: format!("gap {c}@{i}"),
            input: Shape::new(c, i, i),
            kind: LayerKind::GlobalAvgPool,
        });
    }
    for (c, i) in [(64, 112), (192, 56), (12, 56), (768, 14)] {
        for (what, kind) in [
            ("relu", LayerKind::Relu),
            ("batchnorm", LayerKind::BATCH_NORM),
            (
                "add",
                LayerKind::ResidualAdd {
                    from: INPUT.to_string(),
                    relu: true,
                },
            ),
        ] {
            grid.push(BenchLayer {
                name: format!("{what} {c}@{i}"),
                input: Shape::new(c, i, i),
                kind,
            });
        }
    }
    // concats (GoogLeNet's and SqueezeNet's modules): the input joined to itself, 2c
    // channels out
    for (c, i) in [(16, 112), (64, 56), (256, 28), (448, 14)] {
        grid.push(BenchLayer {
            name: format!("concat 2x{c}@{i}"),
            input: Shape::new(c, i, i),
            kind: LayerKind::Concat {
                from: vec![INPUT.to_string(), INPUT.to_string()],
            },
        });
    }
    grid.extend(depthwise_grid());
    grid
}

/// The depthwise convolutions of the grid: MobileNet's 3×3 ones at strides 1 and 2, 32 to
/// 1024 channels, output planes 7 to 112, none of a zoo net's shape; and four 5×5 ones
/// (EfficientNet's), without which `K` would be 9 in every sample and the terms `NKM` and
/// `NM` of [`Op::Depthwise`](super::Op::Depthwise) could not be told apart. Most have
/// 32 chunks, as most of MobileNet's do; 50, 116 and 46 channels give 25, 29 and 23
/// (MobileNetV2's 144 channels give 29): with odd chunk counts among the even ones, Eq. 8's
/// `α₁` and `α₃` can be told apart on 2 cores.
fn depthwise_grid() -> Vec<BenchLayer> {
    let (k3, k5) = (3, 5);
    [
        (48, 112, k3, 1),
        (50, 56, k3, 1),
        (72, 56, k3, 1),
        (160, 28, k3, 1),
        (384, 28, k3, 1),
        (320, 14, k3, 1),
        (1024, 14, k3, 1),
        (768, 7, k3, 1),
        (32, 112, k3, 2),
        (116, 112, k3, 2),
        (46, 56, k3, 2),
        (288, 56, k3, 2),
        (240, 28, k3, 2),
        (448, 28, k3, 2),
        (640, 14, k3, 2),
        (896, 14, k3, 2),
        (64, 56, k5, 1),
        (240, 28, k5, 2),
        (480, 14, k5, 1),
        (672, 14, k5, 2),
    ]
    .into_iter()
    .map(|(c, i, f, s)| BenchLayer {
        name: format!("dwconv {c} {f}x{f}/{s} @{i}"),
        input: Shape::new(c, i, i),
        kind: LayerKind::Conv2d {
            out_channels: c,
            kernel: (f, f),
            stride: (s, s),
            padding: (f / 2, f / 2),
            groups: c,
            relu: true,
        },
    })
    .collect()
}

/// The descriptors of every layer of the zoo's nets (the grid avoids them).
fn zoo_descriptors() -> HashSet<LayerDesc> {
    zoo::NAMES
        .iter()
        .filter_map(|name| zoo::by_name(name)?.ok())
        .flat_map(|spec| describe_layers(&spec))
        .collect()
}

/// How [`calibrate`] measures.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrateOptions {
    /// Runs per layer and place; the median is kept (the first run warms up).
    pub repetitions: usize,
    /// Seed of the random weights.
    pub seed: u64,
    /// The layers to run.
    pub grid: Vec<BenchLayer>,
}

impl Default for CalibrateOptions {
    /// 7 repetitions, seed 1, [`default_grid`].
    fn default() -> Self {
        CalibrateOptions {
            repetitions: 7,
            seed: 1,
            grid: default_grid(),
        }
    }
}

/// The core types of `rt` as it runs now: its [`devices`],
/// fastest first.
pub fn core_types(rt: &Runtime) -> Vec<CoreType> {
    devices(rt)
        .iter()
        .map(|d| CoreType {
            leader: d.place.leader(),
            cores: d.place.width(),
            speed: d.speed,
            cluster: d.cluster,
        })
        .collect()
}

/// What a calibration records about the machine.
pub fn machine_info(rt: &Runtime) -> MachineInfo {
    let topology = rt.topology();
    let cpus: Vec<String> = topology.cpus().iter().map(|c| c.id.to_string()).collect();
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    MachineInfo {
        description: format!(
            "{model}; CPUs {} ({}); speeds {:?}",
            cpus.join(","),
            topology.source(),
            rt.speeds()
        ),
        workers: rt.num_workers(),
        core_types: core_types(rt),
    }
}

/// The places a core type is measured on: `leader + w`, `w` in `1..=cores`, where allowed.
fn places_of(rt: &Runtime, types: &[CoreType]) -> Vec<(usize, Place)> {
    types
        .iter()
        .enumerate()
        .flat_map(|(t, c)| (1..=c.cores).map(move |w| (t, Place::new(c.leader, w))))
        .filter(|(_, p)| rt.topology().is_allowed(*p))
        .collect()
}

/// A fixed pseudo-random input in [-1, 1).
fn input(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    (0..len)
        .map(|_| (rng.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
        .collect()
}

/// Runs the grid on every core type at every width and returns the samples, calling
/// `progress(done, total, layer name)` after each layer.
///
/// # Errors
/// Zero repetitions, an empty grid, no allowed place, a grid layer that does not fit its
/// input, or a failing run.
///
/// ```no_run
/// use taopipe_live::planners::pipeit::{calibrate, CalibrateOptions};
/// use taopipe_runtime::Runtime;
/// use taopipe_live::planners::pipeit::Predictor;
///
/// let rt = Runtime::new()?;
/// let cal = calibrate(&rt, &CalibrateOptions::default(), |done, total, name| {
///     eprintln!("{done}/{total} {name}");
/// })?;
/// std::fs::write("calibration.json", cal.to_json())?;
/// let predictor = Predictor::fit(&cal)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn calibrate(
    rt: &Runtime,
    options: &CalibrateOptions,
    mut progress: impl FnMut(usize, usize, &str),
) -> Result<Calibration, CalibrateError> {
    if options.repetitions == 0 {
        return Err(CalibrateError::Repetitions(0));
    }
    if options.grid.is_empty() {
        return Err(CalibrateError::EmptyGrid);
    }
    let machine = machine_info(rt);
    let places = places_of(rt, &machine.core_types);
    if places.is_empty() {
        return Err(CalibrateError::NoPlaces {
            workers: rt.num_workers(),
        });
    }
    let only: Vec<Place> = places.iter().map(|&(_, p)| p).collect();
    let mut cal = Calibration::new(machine);
    let weights = RandomWeights { seed: options.seed };
    for (done, bench) in options.grid.iter().enumerate() {
        let spec = bench.spec()?;
        let desc = describe_layers(&spec)[0];
        let model = Model::build(spec, &weights)?;
        let x = input(model.input_len(), options.seed);
        let times = unit_times(rt, &model, x, &only, options.repetitions)?;
        for (&(core_type, place), &ms) in places.iter().zip(&times[0]) {
            cal.samples.push(Sample {
                name: bench.name.clone(),
                desc,
                core_type,
                width: place.width(),
                ms,
            });
        }
        progress(done + 1, options.grid.len(), &bench.name);
    }
    Ok(cal)
}

/// Every unit of `model` alone on every core type of `rt` at every width (the places of
/// [`calibrate`]), the median of `repetitions` runs each, calling `progress(done, total,
/// place)` after each place.
///
/// # Errors
/// Zero repetitions, no allowed place, a wrong input length, or a failing run.
pub fn measure_units(
    rt: &Runtime,
    model: &Arc<Model>,
    input: Vec<f32>,
    repetitions: usize,
    mut progress: impl FnMut(usize, usize, Place),
) -> Result<Vec<UnitTime>, CalibrateError> {
    if repetitions == 0 {
        return Err(CalibrateError::Repetitions(0));
    }
    let places = places_of(rt, &core_types(rt));
    if places.is_empty() {
        return Err(CalibrateError::NoPlaces {
            workers: rt.num_workers(),
        });
    }
    let mut out = Vec::new();
    for (done, &(core_type, place)) in places.iter().enumerate() {
        let times = unit_times(rt, model, input.clone(), &[place], repetitions)?;
        out.extend(times.iter().enumerate().map(|(unit, t)| UnitTime {
            unit,
            core_type,
            width: place.width(),
            ms: t[0],
        }));
        progress(done + 1, places.len(), place);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::planners::pipeit::{Op, Predictor, accuracy, describe};
    use taopipe_dsl::Source;
    use taopipe_nets::{
        Activate, Activation, Add, Affine, Concat, Conv2d, Conv2dParams, DepthwiseConv2d,
        DepthwiseParams, GlobalAvgPool, GroupedConv2d, Kernel, Linear, Pool2d, Softmax,
        model::pool_params,
    };
    use taopipe_runtime::Topology;

    use std::collections::BTreeSet;

    use super::*;

    fn shape(s: Shape) -> taopipe_nets::Shape {
        taopipe_nets::Shape::new(s.c, s.h, s.w)
    }

    /// Zero weights: the kernels' chunk plans and the model's folding need only shapes.
    struct Zeros;

    impl taopipe_nets::Weights for Zeros {
        fn tensor(
            &self,
            _name: &str,
            shape: &[usize],
            _init: taopipe_nets::Init,
        ) -> Result<Vec<f32>, taopipe_nets::WeightError> {
            Ok(vec![0.0; shape.iter().product()])
        }
    }

    /// The kernel the nets crate builds for `layer` (index `i` of `spec`) run alone, without
    /// the layers it may absorb: what its descriptor's chunk count must match. `None` for a
    /// flatten, which runs no kernel.
    fn kernel_of(spec: &NetSpec, i: usize) -> Option<Box<dyn Kernel>> {
        let layer = &spec.layers()[i];
        let input = shape(layer.input());
        Some(match layer.kind() {
            LayerKind::Conv2d {
                out_channels,
                kernel,
                stride,
                padding,
                groups,
                ..
            } => {
                let p = Conv2dParams {
                    in_channels: input.c,
                    out_channels: *out_channels,
                    kernel: *kernel,
                    stride: *stride,
                    padding: *padding,
                    act: Activation::None,
                };
                let w = vec![0.0; p.weight_len() / groups];
                if *groups == 1 {
                    Box::new(Conv2d::new(p, input, w, None).expect("conv"))
                } else if *groups == input.c && *groups == *out_channels {
                    let d = DepthwiseParams {
                        channels: input.c,
                        kernel: *kernel,
                        stride: *stride,
                        padding: *padding,
                        act: Activation::None,
                    };
                    Box::new(DepthwiseConv2d::new(d, input, w, None).expect("dwconv"))
                } else {
                    Box::new(GroupedConv2d::new(p, *groups, input, w, None, None).expect("grouped"))
                }
            }
            // the chunk plan of an FC layer depends on its outputs only
            LayerKind::Fc { out_features, .. } => Box::new(
                Linear::new(
                    taopipe_nets::Shape::vector(3),
                    *out_features,
                    vec![0.0; 3 * out_features],
                    None,
                    false,
                )
                .expect("fc"),
            ),
            LayerKind::MaxPool { .. } | LayerKind::AvgPool { .. } => {
                Box::new(Pool2d::new(pool_params(layer).expect("a pool"), input).expect("pool"))
            }
            LayerKind::GlobalAvgPool => Box::new(GlobalAvgPool::new(input)),
            LayerKind::Relu => Box::new(Activate::new(input, Activation::Relu)),
            LayerKind::Clip { min, max } => Box::new(Activate::new(
                input,
                Activation::Clip {
                    min: *min,
                    max: *max,
                },
            )),
            LayerKind::LeakyRelu { slope } => Box::new(Activate::new(
                input,
                Activation::LeakyRelu { slope: *slope },
            )),
            LayerKind::BatchNorm { .. } => Box::new(
                Affine::new(input, vec![1.0; input.c], vec![0.0; input.c], false).expect("bn"),
            ),
            LayerKind::ResidualAdd { .. } => Box::new(Add::new(input, false)),
            LayerKind::Concat { .. } => {
                let shapes: Vec<taopipe_nets::Shape> = layer
                    .reads(i)
                    .map(|s| match s {
                        Source::Layer(j) => shape(spec.layers()[j].output()),
                        _ => shape(spec.input()),
                    })
                    .collect();
                Box::new(Concat::new(&shapes).expect("concat"))
            }
            LayerKind::Softmax => Box::new(Softmax::new(input)),
            LayerKind::Flatten => return None,
        })
    }

    /// Checks that `describe_layers(spec)` mirrors what the nets crate builds: a layer is
    /// [`Op::Free`] exactly where the built model runs no task for it (folded, fused,
    /// flatten), [`Op::Depthwise`] exactly where its kernel is a `dwconv`, and every
    /// other layer's chunk count (Eq. 8's `n_iter`) is its kernel's own. Returns the
    /// `layer kind/kernel kind` pairs of the layers that ran a task.
    fn check_mirrors(spec: &NetSpec) -> BTreeSet<String> {
        let name = spec.name();
        let model = Model::build(spec.clone(), &Zeros).expect("model");
        let descs = describe_layers(spec);
        assert_eq!(descs.len(), spec.len(), "{name}");
        let mut seen = BTreeSet::new();
        for (i, (layer, desc)) in spec.layers().iter().zip(&descs).enumerate() {
            let at = format!("{name} {}: {desc}", layer.name());
            assert_eq!(desc.op == Op::Free, !model.runs_task(i), "{at}");
            if desc.op == Op::Free {
                continue;
            }
            let kernel = kernel_of(spec, i).expect("a layer that runs a kernel");
            assert_eq!(desc.iters, kernel.chunks() as u64, "{at}");
            assert_eq!(
                desc.op == Op::Depthwise,
                kernel.kind() == "dwconv",
                "{at}: {}",
                kernel.kind()
            );
            seen.insert(format!("{}/{}", layer.kind().short_name(), kernel.kind()));
        }
        seen
    }

    /// The tuner describes layers without the nets crate; on every layer of every zoo net
    /// its descriptors must mirror what the nets crate builds ([`check_mirrors`]).
    #[test]
    fn descriptors_mirror_the_kernels_and_the_model_on_every_zoo_net() {
        let mut seen = BTreeSet::new();
        for name in zoo::NAMES {
            let spec = zoo::by_name(name).expect("a zoo net").expect("it builds");
            seen.extend(check_mirrors(&spec));
        }
        let seen: Vec<&str> = seen.iter().map(String::as_str).collect();
        assert_eq!(seen, ZOO_KINDS, "the kinds of layer the zoo runs as tasks");
    }

    /// The kinds of layer that run a task somewhere in the zoo, with their kernels: every
    /// activation, batchnorm and residual add of the zoo is folded or fused, and every
    /// concat's branches write its parts in place (`taopipe_nets::memory_plan`).
    const ZOO_KINDS: [&str; 5] = [
        "conv/conv",
        "conv/dwconv",
        "fc/fc",
        "gap/gap",
        "maxpool/maxpool",
    ];

    /// The same on a net with the kinds and fusions the zoo lacks: a grouped convolution
    /// with its batchnorm folded and a leaky ReLU fused, a ReLU6 fused into a depthwise
    /// conv, stand-alone clip, leaky ReLU and batchnorm, a residual add fused into a
    /// convolution read by a branch and one not fused (its conv has a ReLU of its own), an
    /// average pool in ceil mode.
    #[test]
    fn descriptors_mirror_the_kernels_and_the_model_beyond_the_zoo() {
        let dw = |c| LayerKind::Conv2d {
            out_channels: c,
            kernel: (3, 3),
            stride: (1, 1),
            padding: (1, 1),
            groups: c,
            relu: false,
        };
        let grouped = LayerKind::Conv2d {
            out_channels: 48,
            kernel: (3, 3),
            stride: (2, 2),
            padding: (1, 1),
            groups: 4,
            relu: false,
        };
        let spec = NetSpec::builder("beyond", Shape::new(16, 30, 30))
            .layer("grouped", grouped)
            .batch_norm("grouped_bn")
            .leaky_relu("grouped_leaky", 0.1)
            .layer("dw", dw(48))
            .layer("dw_clip", LayerKind::RELU6)
            .max_pool("pool", 2, 2)
            .clip("clip", -1.0, 1.0)
            .leaky_relu("leaky", 0.2)
            .batch_norm("bn")
            .layer("dw2", dw(48))
            .batch_norm("dw2_bn")
            .layer_from("side", LayerKind::conv(48, (1, 1), (1, 1), (0, 0)), "bn")
            .residual_add("add", "dw2_bn")
            .conv_relu("c", 48, 1, 1, 0)
            .residual_add_relu("add2", "add")
            .concat("cat", &["add2", "bn"])
            .layer(
                "avg",
                LayerKind::AvgPool {
                    kernel: (3, 3),
                    stride: (2, 2),
                    padding: (0, 0),
                    padding_end: (0, 0),
                    ceil: true,
                },
            )
            .fc("fc", 10)
            .relu("fc_relu")
            .softmax("sm")
            .build()
            .expect("net");
        let seen = check_mirrors(&spec);
        // The concat copies: `bn` has other readers (the zoo's concats join, above).
        for kind in [
            "concat/concat",
            "conv/conv",
            "clip/clip",
            "leakyrelu/leakyrelu",
            "batchnorm/affine",
        ] {
            assert!(seen.contains(kind), "{kind} not in {seen:?}");
        }
        let ops: Vec<Op> = describe_layers(&spec).iter().map(|d| d.op).collect();
        use Op::{Depthwise as D, Elementwise as E, Free as F, Gemm as G};
        #[rustfmt::skip]
        let want = vec![
            G, F, F,       // grouped conv, its bn folded, its leaky ReLU fused
            D, F,          // depthwise, ReLU6 fused
            Op::Pool, E, E, E, // stand-alone clip, leaky ReLU and batchnorm
            D, F,          // depthwise, bn folded (the add reads the bn, not the conv)
            G, F,          // a plain conv, the residual add after it fused into its store
            G, E,          // a conv with a ReLU of its own: the add after it is not fused
            E,             // the concat
            Op::Pool, Op::Gemv, F, E, // avg pool, fc with its ReLU fused, softmax
        ];
        assert_eq!(ops, want);
    }

    #[test]
    fn the_grid_holds_no_layer_of_the_zoo() {
        let zoo = zoo_descriptors();
        assert!(zoo.len() > 30);
        let mut grid = HashSet::new();
        for b in default_grid() {
            let d = describe_layers(&b.spec().expect("a grid layer"))[0];
            assert!(!zoo.contains(&d), "{} is a zoo layer", b.name);
            // and no two depthwise layers are one point of the regression (a relu and a
            // batchnorm of one shape are, by design: one element-wise kind)
            assert!(
                d.op != Op::Depthwise || grid.insert(d),
                "{} is another grid layer's {d}",
                b.name
            );
        }
    }

    #[test]
    fn a_small_calibration_fits_and_predicts() {
        let rt = Runtime::builder()
            .topology(Topology::symmetric(2).expect("topology"))
            .pin(false)
            .build()
            .expect("runtime");
        // 9 small convolutions and nothing else: enough for Eq. 5's 8 terms
        let grid: Vec<BenchLayer> = [
            (3, 28, 16, 3, 1),
            (16, 14, 32, 3, 1),
            (32, 14, 24, 1, 1),
            (8, 28, 64, 5, 2),
            (64, 7, 100, 3, 1),
            (16, 28, 16, 1, 1),
            (24, 14, 48, 3, 2),
            (48, 7, 16, 1, 1),
            (12, 28, 36, 3, 1),
        ]
        .iter()
        .map(|&(c, i, m, f, s)| conv_layer(c, i, m, f, s))
        .collect();
        let options = CalibrateOptions {
            repetitions: 3,
            seed: 1,
            grid,
        };
        let mut calls = 0;
        let cal = calibrate(&rt, &options, |done, total, _| {
            calls += 1;
            assert_eq!((done, total), (calls, 9));
        })
        .expect("calibration");
        assert_eq!(cal.machine.core_types.len(), 1);
        assert_eq!(cal.samples.len(), 9 * 2); // widths 1 and 2
        assert!(
            cal.samples
                .iter()
                .all(|s| s.ms > 0.0 && s.desc.op == Op::Gemm)
        );
        let predictor = Predictor::fit(&cal).expect("fit");
        // the units of a small net, measured the same way, against their predictions
        let spec = NetSpec::builder("n", Shape::new(8, 28, 28))
            .conv_relu("c1", 16, 3, 1, 1)
            .max_pool("p", 2, 2)
            .build()
            .expect("net");
        let model =
            Arc::new(Model::build(spec.clone(), &RandomWeights { seed: 2 }).expect("model"));
        let x = input(model.input_len(), 3);
        let measured = measure_units(&rt, &model, x, 3, |_, _, _| {}).expect("measured");
        assert_eq!(measured.len(), 2 * 2); // 2 units × widths 1, 2
        // the conv unit is predicted; the pool has no samples in this calibration
        let units = describe(&spec);
        let conv: Vec<UnitTime> = measured.iter().copied().filter(|m| m.unit == 0).collect();
        let acc = accuracy(&predictor, &units, &conv).expect("accuracy");
        assert_eq!(acc.rows.len(), 2);
        // (9 noisy samples for 8 terms: only the shape of the answer is checked here)
        assert!(
            acc.rows
                .iter()
                .all(|r| r.predicted_ms.is_finite() && r.predicted_ms >= 0.0)
        );
        assert!(acc.rows.iter().all(|r| r.measured_ms > 0.0 && r.gemm));
        assert!(accuracy(&predictor, &units, &measured).is_err());
    }

    #[test]
    fn bad_options_are_errors() {
        let rt = Runtime::builder()
            .topology(Topology::symmetric(1).expect("topology"))
            .pin(false)
            .build()
            .expect("runtime");
        let zero = CalibrateOptions {
            repetitions: 0,
            ..CalibrateOptions::default()
        };
        assert!(matches!(
            calibrate(&rt, &zero, |_, _, _| {}),
            Err(CalibrateError::Repetitions(0))
        ));
        let empty = CalibrateOptions {
            grid: Vec::new(),
            ..CalibrateOptions::default()
        };
        assert!(matches!(
            calibrate(&rt, &empty, |_, _, _| {}),
            Err(CalibrateError::EmptyGrid)
        ));
        let misfit = CalibrateOptions {
            grid: vec![BenchLayer {
                name: "pool 3x3 @2".into(),
                input: Shape::new(4, 2, 2),
                kind: LayerKind::max_pool((3, 3), (1, 1), (0, 0)),
            }],
            ..CalibrateOptions::default()
        };
        let e = calibrate(&rt, &misfit, |_, _, _| {}).expect_err("3x3 window on 2x2");
        assert!(
            e.to_string().contains("benchmark layer `pool 3x3 @2`"),
            "{e}"
        );
    }
}
