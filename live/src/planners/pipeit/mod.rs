//! **Pipe-it** (Wang et al., TCAD 2020) as a planner: per-layer time prediction from layer
//! descriptors (Eq. 3–8), the design space of pipelines over core types (Eq. 1–2), and the
//! design-space exploration `find_split` / `work_flow` / `merge_stage` (Alg. 1–3).
//!
//! ```
//! use taopipe_dsl::{NetSpec, Shape};
//! use taopipe_live::planners::pipeit::{describe, plan, CoreType, Predictor, TimeMatrix};
//! # use taopipe_live::planners::pipeit::{Calibration, LayerDesc, MachineInfo, Op, Sample};
//! # let mut cal = Calibration::new(MachineInfo { description: "doc".into(), workers: 4,
//! #     core_types: vec![CoreType::new(0, 2), CoreType::new(2, 2)] });
//! # for t in 0..2 { for w in 1..=2u64 {
//! #   for (i, &(n, k, m)) in [(49, 9, 8), (196, 27, 16), (784, 64, 32), (3136, 144, 64), (49, 4608, 512),
//! #       (12544, 27, 64), (196, 1152, 256), (784, 576, 128), (3136, 64, 256)].iter().enumerate() {
//! #     let single = (1 + 2 * t) as f64 * (1e-6 * (n * k * m) as f64 + 0.05);
//! #     let iters: u64 = [2, 4, 8, 16, 32, 32, 32, 32, 32][i];
//! #     let ms = if w == 1 { single } else { single / iters as f64 * iters.div_ceil(w) as f64 + 0.01 };
//! #     cal.samples.push(Sample { name: format!("s{i}"), desc: LayerDesc::new(Op::Gemm, n, k, m, iters),
//! #         core_type: t, width: w as usize, ms });
//! # } } }
//! // `cal`: micro-benchmarks of a machine with 2 big cores (type 0) and 2 three times
//! // slower ones (type 1), e.g. from `taopipe_live::planners::pipeit`
//! let predictor = Predictor::fit(&cal)?;
//! let net = NetSpec::builder("n", Shape::new(3, 64, 64))
//!     .conv_relu("c1", 32, 3, 1, 1)
//!     .conv_relu("c2", 32, 3, 1, 1)
//!     .max_pool("p1", 2, 2)
//!     .conv_relu("c3", 64, 3, 1, 1)
//!     .conv_relu("c4", 64, 3, 1, 1)
//!     .conv_relu("c5", 64, 3, 1, 1)
//!     .build()?;
//! let units: Vec<_> = describe(&net).into_iter().filter(|u| u.has_gemm()).collect();
//! # let net = NetSpec::builder("n", Shape::new(3, 64, 64)).conv_relu("c1", 32, 3, 1, 1)
//! #     .conv_relu("c2", 32, 3, 1, 1).conv_relu("c3", 64, 3, 1, 1).conv_relu("c4", 64, 3, 1, 1)
//! #     .conv_relu("c5", 64, 3, 1, 1).build()?;
//! # let units = describe(&net);
//! let cores: Vec<usize> = predictor.core_types().iter().map(|c| c.cores).collect();
//! let matrix = TimeMatrix::predict(&predictor, &units, &cores)?;
//! let p = plan(&matrix, predictor.core_types())?;
//! println!("{}: {} ({:.2} ms per frame)", p.pipeline_string(), p.configuration, p.bottleneck_ms());
//! assert_eq!(p.pipeline[0].core_type, 0); // the big cores take the first units
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Core types
//!
//! The paper has two core types, Big and small. Here a core type is an index `0..types`
//! into [`MachineInfo::core_types`]: the facade's `taopipe_live::devices` (topology clusters
//! split by current speed, fastest first), so type 0 is the paper's `B`. A stage's workers
//! are all of one type ([`StageKind`]), and types appear in pipeline order fastest first,
//! as in the paper's §IV-B.
//!
//! # Layer descriptors
//!
//! A stage holds pipeline **units** (`NetSpec::units`); a unit's prediction is the sum over
//! its layers ([`describe`]). Each layer becomes a [`LayerDesc`]: an [`Op`], three sizes
//! `N, K, M` and the number of chunks `n_iter` the kernel is split into.
//!
//! | layer | op | N | K | M |
//! |---|---|---|---|---|
//! | conv (Eq. 3–4) | `gemm` | `Ho·Wo` | `R·S·C` | out channels |
//! | grouped conv (`g` groups, not depthwise) | `gemm` | `Ho·Wo` | `R·S·C/g` | out channels |
//! | depthwise conv (`g` = in = out channels) | `depthwise` | `Ho·Wo` | `R·S` | channels |
//! | fc | `gemv` | 1 | inputs | outputs |
//! | max/avg pool | `pool` | `Ho·Wo` | `R·S` | channels |
//! | global avg pool | `elementwise` | 1 | `H·W` | channels |
//! | relu, clip (ReLU6), leaky relu, batchnorm | `elementwise` | `H·W` | 1 | channels |
//! | residual add | `elementwise` | `H·W` | 2 | channels |
//! | concat | `elementwise` | `H·W` | 1 | output channels |
//! | softmax | `elementwise` | elements | 3 (max, sum, scale) | 1 |
//! | folded batchnorm, fused activation or residual add, flatten | `free` | – | – | – |
//!
//! Decisions where the paper is silent or does otherwise:
//! - The paper predicts convolutions, and FC layers "with the regression-based model";
//!   pooling and element-wise layers are "part of the previous convolutional layer". We
//!   predict every layer that runs a task, each kind with its own regression: `gemm` with
//!   Eq. 5's 8 terms; `gemv` with Eq. 5 at `N = 1`, which leaves the terms `K, M, KM, 1`
//!   (the paper observes time linear in the input size for a given output size); `pool`,
//!   `depthwise` and `elementwise` with `NKM` (values read, or multiply-adds), `NM`
//!   (values written) and a constant.
//! - The paper runs MobileNet's depthwise convolutions ("Conv DW") through the GEMM model
//!   like the others. Ours run a kernel of their own (the nets crate's `DepthwiseConv2d`),
//!   with no GEMM and no reduction across channels: `K = R·S` is 9 and `N·K·M` a few
//!   million multiply-adds, far below the GEMM samples, and the time is memory-bound, so
//!   they get a regression of their own (`depthwise`), fitted on depthwise samples of the
//!   grid. A grouped convolution that is not depthwise runs a GEMM per group and is
//!   described as one GEMM of the whole layer's `N` and `M` with `K = R·S·C/g` (the same
//!   multiply-adds); none of the zoo's nets has one.
//! - Layers the nets crate merges at load time cost nothing (`free`), by the rules of
//!   `Model::build_with`: a batchnorm right after a convolution that only it reads is
//!   folded into the weights (any groups); then a residual add right after a plain
//!   (one-group) convolution without a ReLU of its own goes into its store, else an
//!   activation (ReLU, clip, leaky ReLU) right after any convolution (a ReLU after an FC
//!   layer); `flatten` is a reshape. [`describe_layers`] applies the same rules, and a
//!   test checks it against the layers the built model runs, on every net of the zoo.
//! - `n_iter` is the kernel's chunk count (the nets crate's `ChunkPlan` rule: at most 32
//!   chunks of whole channels, 128 for FC; ≥ 4 channels per chunk for conv, whole groups
//!   for a grouped conv, output channels for a concat), not `N / ts`: our kernels split
//!   output channels, not image-matrix rows.
//!
//! # The predictor
//!
//! Per core type and kind, Eq. 5 is fitted by least squares on the single-core samples
//! ([`Predictor::fit`]). Residuals are **relative** (each sample's row is divided by its
//! measured time), because Table III reports relative errors and layer times span four
//! orders of magnitude; plain least squares would fit the big layers and miss the small
//! ones by 100 %. Repeated samples of one layer and width count once, at their median.
//!
//! On `w ≥ 2` cores Eq. 6–8 become, with `c = ⌈n_iter / w⌉` chunks on the busiest thread
//! (the runtime gives each rank a contiguous run of chunks, the first ranks one more):
//!
//! ```text
//! T_w = ρ·T₁ + T_iter · c + α₃,   T_iter = ((1 − ρ)·T₁ − α₁) / n_iter + α₂
//! ```
//!
//! which is Eq. 8 with `⌈⌉` instead of `n_iter / H` and one term of ours, `ρ`: the
//! fraction of the single-core time that every thread repeats or cannot share. Eq. 8
//! assumes all of a layer divides into its iterations, as ARM-CL's kernels (im2col
//! included) do; our convolutions repeat each column tile's im2col on every rank (the nets
//! crate's `conv.rs`), and cores share memory bandwidth. On a 4 + 4-core calibration (a
//! 16-core Xeon, 4 workers emulated at 0.4× speed) the multi-core GEMM samples were fitted
//! to 24–25 % mean relative error without `ρ` and to 16–18 % with it (fitted `ρ ≈ 0.15`);
//! `ρ = 0` is the paper's model.
//!
//! `α₁, α₂, α₃, ρ` per core type and kind ([`MultiCore`]) are fitted on the multi-core
//! samples, with `T₁` the *measured* single-core time of the same layer (the paper models
//! `T_iter` "from the single-threaded execution time"); predictions use Eq. 5's `T₁`. On
//! one core Eq. 5 is used as is. A term the samples cannot tell apart from the others is
//! dropped (its coefficient is 0): on a 2-core machine every even chunk count gives
//! `c / n_iter = ½`, which the constant `α₃` already spans, so `α₁` is not identifiable
//! there. Predictions below 0 are raised to 0.

//! # The design-space exploration
//!
//! [`find_split`], [`work_flow`] and [`merge_stage`] follow Alg. 1–3 on a [`TimeMatrix`];
//! [`plan`] turns the result into a [`Configuration`](taopipe_tuner::Configuration), dropping the
//! stages that got no units (their cores stay idle, as in the paper's example where the last
//! two single-core stages get nothing until stages merge). See each function for the
//! decisions taken: Alg. 1 moves a unit when that lowers the pair's bottleneck (its printed
//! test stops one unit early); Alg. 3's `break` ends the growth of one stage, not of the
//! cluster. [`PredictedMeasure`] gives any tuner predicted stage
//! times, and [`SeedKey`] ranks Pipe-search's seeds by them. [`pipeline_count`] and [`design_points`] are Eq. 1 and Eq. 2.
//!
//! [`CalibrationReport`] puts a fitted predictor, its in-sample error and its accuracy on
//! real nets into one `Serialize` struct (what `calibrate --json` writes).

mod accuracy;
mod calibrate;
mod desc;
mod dse;
mod lstsq;
mod measure;
mod predict;
mod report;
mod seed_key;

pub use accuracy::{Accuracy, AccuracyCell, AccuracyRow, ErrorStats, UnitTime, accuracy};
pub use calibrate::{
    BenchLayer, CalibrateError, CalibrateOptions, calibrate, core_types, default_grid,
    machine_info, measure_units,
};
pub use desc::{LayerDesc, Op, UnitDesc, describe, describe_layers};
pub use dse::{
    DseError, DseStep, MergeResult, Plan, StageKind, TimeMatrix, design_points, find_split,
    merge_stage, pipeline_count, pipelines, plan, work_flow,
};
pub use measure::PredictedMeasure;
pub use predict::{
    CALIBRATION_VERSION, Calibration, CoreType, MachineInfo, MultiCore, OpModel, PredictError,
    Predictor, Sample,
};
pub use report::{CalibrationReport, FitReport, NetAccuracy};
pub use seed_key::SeedKey;

#[cfg(test)]
mod test;
