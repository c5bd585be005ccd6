//! MOSAIC's inference workload profiler on the live runtime: what the device-level planners
//! need, measured — every unit's time alone on every device, the cost of handing tensors
//! from one device to another (fitted to [`TransferModel`]s), and every unit's tensor bytes
//! and memory from the net — assembled into a ready MOSAIC [`Problem`]. A plan runs in
//! switch mode ([`Profile::switch`] → [`crate::planners::armcoup::Switch`]: one frame at a time, slice
//! after slice), to check its prediction against the real thing.
//!
//! # What is measured, and decisions
//!
//! - **Unit times**: each unit alone as [`Model::stage_graph`] on the device's whole place
//!   (its full width), one `rt.run` per unit, the median of `repetitions`. Units run in
//!   chain order, one device after the other, so a unit's input was just written by the
//!   same device — the "no cut" case the transfer costs are measured against. The first
//!   repetition warms buffers and scratch; the median drops it.
//! - **Transfers**: a buffer of `bytes` is written by a task on the source device's place,
//!   then a task on the destination's place copies it (`cross`); the same copy of a buffer
//!   the destination wrote itself is the reference (`local`). Devices here share one
//!   memory, and a unit's own time already includes reading its input once, so what a cut
//!   adds is the **excess** `cross − local` (the data sits in the other core's caches).
//!   Both are timed around `rt.run` from the calling thread, so an emulated slow device's
//!   stall counts. The excess is fitted per ordered pair with least squares over every
//!   size and repetition ([`TransferModel::fit`]; predictions clamp at 0, since on one
//!   memory the excess is often within noise). Same device: zero.
//! - **Bytes of a cut**: the `f32` tensors live across it ([`NetSpec::live_across`]:
//!   residual operands included), 4 bytes per value; the net input before unit 0 and the
//!   net output after the last.
//! - **Memory of a unit**: its declared parameters (conv `K·C·R·S + K`, fc `F·C·H·W + F`,
//!   batchnorm `4·C`) plus the output buffers of its layers that run a task, 4 bytes per
//!   value. CPU devices of one memory have no budget unless one is given
//!   ([`ProfileOptions::memory_budgets`]).

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::planners::mosaic::{MosaicError, Plan, Problem, TransferModel, UnitCosts};
use taopipe_dsl::{LayerKind, NetSpec, Shape, Source};
use taopipe_nets::{Model, ModelError};
use taopipe_runtime::{Place, Runtime, RuntimeError, SharedSlice};
use taopipe_tuner::median;

use crate::devices::Device;
use crate::planners::armcoup::{Switch, SwitchError, SwitchRun};

/// Bytes per tensor value (`f32`).
const VALUE_BYTES: u64 = 4;

/// Why profiling or a slice run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// No devices to profile.
    #[error("profiling needs at least one device")]
    NoDevices,
    /// Zero repetitions.
    #[error("repetitions must be at least 1, got {0}")]
    Repetitions(usize),
    /// Transfer sizes that cannot give a line.
    #[error("transfer sizes {0:?}: give at least two distinct sizes of at least 4 bytes")]
    TransferSizes(Vec<u64>),
    /// Not one memory budget per device.
    #[error("{got} memory budgets for {devices} devices")]
    Budgets {
        /// Budgets given.
        got: usize,
        /// Devices.
        devices: usize,
    },
    /// A plan naming a device the list does not have.
    #[error("plan slice {slice} is on device {device}, but there are {devices} devices")]
    NoSuchDevice {
        /// The slice.
        slice: usize,
        /// Its device.
        device: usize,
        /// Devices known.
        devices: usize,
    },
    /// Building a frame or running a net failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A runtime graph failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The measured problem is not valid (or has no plan).
    #[error(transparent)]
    Mosaic(#[from] MosaicError),
    /// The plan is not a valid switch-mode plan.
    #[error(transparent)]
    Switch(#[from] SwitchError),
}

/// How much to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileOptions {
    /// Runs per unit and device, and per transfer sample (median / least squares).
    pub repetitions: usize,
    /// Buffer sizes of the transfer samples, bytes (at least two distinct).
    pub transfer_sizes: Vec<u64>,
    /// Memory budget per device, bytes; empty: no limits.
    pub memory_budgets: Vec<u64>,
    /// The device the net's input comes from and its output goes to ([`Problem::host`]).
    pub host: Option<usize>,
}

impl Default for ProfileOptions {
    /// 3 repetitions; 64 KiB, 1 MiB, 4 MiB and 16 MiB transfers (VGG16's largest cut is
    /// 12.25 MiB); no memory limits; device 0 as the host.
    fn default() -> Self {
        ProfileOptions {
            repetitions: 3,
            transfer_sizes: vec![64 << 10, 1 << 20, 4 << 20, 16 << 20],
            memory_budgets: Vec::new(),
            host: Some(0),
        }
    }
}

/// One measured transfer: copying `bytes` on device `to`, last written on `from`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransferSample {
    /// The device that wrote the buffer.
    pub from: usize,
    /// The device that copied it.
    pub to: usize,
    /// Its size.
    pub bytes: u64,
    /// The copy of a buffer `from` wrote, ms.
    pub cross_ms: f64,
    /// The same copy of a buffer `to` wrote itself, ms.
    pub local_ms: f64,
}

impl TransferSample {
    /// What the cut adds: `cross − local` (may be negative: noise).
    pub fn excess_ms(&self) -> f64 {
        self.cross_ms - self.local_ms
    }
}

/// A profiled net: the devices, the MOSAIC problem built from the measurements, and the
/// raw transfer samples behind its transfer models.
#[derive(Debug, Clone)]
pub struct Profile {
    /// The devices, in the problem's order.
    pub devices: Vec<Device>,
    /// Ready to [`solve`](Problem::solve).
    pub problem: Problem,
    /// Every transfer sample.
    pub transfers: Vec<TransferSample>,
    /// How long profiling took.
    pub took: Duration,
}

impl Profile {
    /// The unit × device table of measured times, ms.
    pub fn exec_ms(&self) -> Vec<Vec<f64>> {
        self.problem
            .units
            .iter()
            .map(|u| u.exec_ms.clone())
            .collect()
    }

    /// A plan in switch mode on its devices' places (each slice at its device's current
    /// speed).
    ///
    /// # Errors
    /// A slice on a device this profile does not have, or a plan that does not cover
    /// `model`'s units.
    pub fn switch(&self, model: Arc<Model>, plan: &Plan) -> Result<Switch, ProfileError> {
        let runs = slice_places(plan, &self.devices)?
            .into_iter()
            .map(|(units, place)| SwitchRun {
                units,
                place,
                speed: 1.0,
            })
            .collect();
        Ok(Switch::new(model, runs)?)
    }
}

/// Profiles `model` on `devices` of `rt` (see the module docs) and builds its MOSAIC
/// problem. `input` is the frame the units run on.
///
/// ```
/// use taopipe_live::devices::devices;
/// use taopipe_dsl::net;
/// use taopipe_nets::{Model, RandomWeights};
/// use std::sync::Arc;
/// use taopipe_live::planners::mosaic::{ProfileOptions, profile};
/// use taopipe_runtime::{EmulationSpec, Place, Runtime, Topology};
///
/// let spec = net! { tiny [3, 16, 16] =>
///     c1: conv(8, 3x3, pad 1) relu,
///     p1: maxpool(2x2, stride 2),
///     fc: fc(10),
/// }?;
/// let model = Model::build(spec, &RandomWeights { seed: 1 })?;
/// let rt = Runtime::builder().topology(Topology::symmetric(2)?).pin(false).build()?;
/// rt.emulate(&"w1=powersave".parse::<EmulationSpec>()?)?;
/// let options = ProfileOptions { transfer_sizes: vec![4096, 65536], ..ProfileOptions::default() };
/// let input = vec![0.5; model.input_len()];
/// let profiled = profile(&rt, &model, input.clone(), &devices(&rt), &options)?;
/// assert_eq!(profiled.exec_ms().len(), 3); // units × devices
/// let plan = profiled.problem.solve()?;
/// let reference = model.forward(&rt, input.clone(), Place::new(0, 1))?;
/// let model = Arc::new(model);
/// let frames = (0..2).map(|_| model.frame(input.clone()).expect("input length"));
/// let mut outputs = Vec::new();
/// let stats = profiled.switch(model.clone(), &plan)?.run(&rt, frames, |_, f| outputs.push(f.output()))?;
/// assert_eq!(stats.frames, 2);
/// assert!(outputs.iter().all(|o| *o == reference));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// No devices, zero repetitions, fewer than two transfer sizes, budgets not one per
/// device, a wrong input length, a failing graph, or a problem without a plan
/// ([`MosaicError`]: a unit that fits no device).
pub fn profile(
    rt: &Runtime,
    model: &Model,
    input: Vec<f32>,
    devices: &[Device],
    options: &ProfileOptions,
) -> Result<Profile, ProfileError> {
    let start = Instant::now();
    let mut sizes = options.transfer_sizes.clone();
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.len() < 2 || sizes[0] < VALUE_BYTES {
        return Err(ProfileError::TransferSizes(options.transfer_sizes.clone()));
    }
    if !options.memory_budgets.is_empty() && options.memory_budgets.len() != devices.len() {
        return Err(ProfileError::Budgets {
            got: options.memory_budgets.len(),
            devices: devices.len(),
        });
    }
    let places: Vec<Place> = devices.iter().map(|d| d.place).collect();
    let exec = unit_times(rt, model, input, &places, options.repetitions)?;
    let transfers = transfer_samples(rt, &places, &sizes, options.repetitions)?;
    let cuts = cut_bytes(model.spec());
    let memory = unit_memory(model);
    let units = model
        .spec()
        .units()
        .iter()
        .enumerate()
        .map(|(u, unit)| UnitCosts {
            name: unit.name().to_string(),
            exec_ms: exec[u].clone(),
            in_bytes: cuts[u],
            out_bytes: cuts[u + 1],
            memory_bytes: memory[u],
        })
        .collect();
    let mut problem = Problem::new(units, devices.len());
    problem.transfer = fit_transfers(&transfers, devices.len())?;
    problem.host = options.host;
    if !options.memory_budgets.is_empty() {
        problem.device_memory = options.memory_budgets.clone();
    }
    problem.validate()?;
    Ok(Profile {
        devices: devices.to_vec(),
        problem,
        transfers,
        took: start.elapsed(),
    })
}

/// Every unit's time alone on every place (full width), ms, `[unit][place]`: the median of
/// `repetitions` runs in chain order (see the module docs).
///
/// # Errors
/// No places, zero repetitions, a wrong input length, or a failing graph.
pub fn unit_times(
    rt: &Runtime,
    model: &Model,
    input: Vec<f32>,
    places: &[Place],
    repetitions: usize,
) -> Result<Vec<Vec<f64>>, ProfileError> {
    if places.is_empty() {
        return Err(ProfileError::NoDevices);
    }
    if repetitions == 0 {
        return Err(ProfileError::Repetitions(repetitions));
    }
    let units = model.spec().units().len();
    let frame = model.frame(input)?;
    let mut samples = vec![vec![Vec::with_capacity(repetitions); places.len()]; units];
    for _ in 0..repetitions {
        for (d, &place) in places.iter().enumerate() {
            for (u, unit) in samples.iter_mut().enumerate() {
                let graph = model.stage_graph(&frame, u..u + 1, place);
                let t = Instant::now();
                rt.run(graph)?;
                unit[d].push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    Ok(samples
        .iter()
        .map(|per_place| {
            per_place
                .iter()
                .map(|s| median(s).unwrap_or(f64::NAN))
                .collect()
        })
        .collect())
}

/// Transfer samples between every ordered pair of distinct places, `repetitions` per size
/// (after one unrecorded warm-up), `cross` and `local` interleaved (see the module docs).
/// Sizes are rounded down to whole `f32`s.
///
/// # Errors
/// Zero repetitions, or a failing graph.
pub fn transfer_samples(
    rt: &Runtime,
    places: &[Place],
    sizes: &[u64],
    repetitions: usize,
) -> Result<Vec<TransferSample>, ProfileError> {
    if repetitions == 0 {
        return Err(ProfileError::Repetitions(repetitions));
    }
    let mut samples = Vec::new();
    for (from, &source) in places.iter().enumerate() {
        for (to, &dest) in places.iter().enumerate().filter(|&(to, _)| to != from) {
            for &bytes in sizes {
                let len = usize::try_from(bytes / VALUE_BYTES)
                    .unwrap_or(usize::MAX)
                    .max(1);
                let src = Arc::new(SharedSlice::<f32>::zeroed(len));
                let dst = Arc::new(SharedSlice::<f32>::zeroed(len));
                for rep in 0..=repetitions {
                    fill(rt, &src, source, rep)?;
                    let cross_ms = copy(rt, &src, &dst, dest)?;
                    fill(rt, &src, dest, rep)?;
                    let local_ms = copy(rt, &src, &dst, dest)?;
                    if rep > 0 {
                        samples.push(TransferSample {
                            from,
                            to,
                            bytes: len as u64 * VALUE_BYTES,
                            cross_ms,
                            local_ms,
                        });
                    }
                }
            }
        }
    }
    Ok(samples)
}

/// Writes every value of `buf` on `place`, each rank its share.
fn fill(
    rt: &Runtime,
    buf: &Arc<SharedSlice<f32>>,
    place: Place,
    salt: usize,
) -> Result<(), RuntimeError> {
    let buf = buf.clone();
    rt.run_on(place, move |ctx| {
        let mine = ctx.split(buf.len());
        let start = mine.start;
        let mut out = buf.write(mine).expect("ranks write disjoint shares");
        for (i, v) in out.iter_mut().enumerate() {
            *v = ((start + i + salt) % 1024) as f32;
        }
    })
}

/// Copies `src` into `dst` on `place`, each rank its share; the time of the whole run, ms.
fn copy(
    rt: &Runtime,
    src: &Arc<SharedSlice<f32>>,
    dst: &Arc<SharedSlice<f32>>,
    place: Place,
) -> Result<f64, RuntimeError> {
    let (src, dst) = (src.clone(), dst.clone());
    let t = Instant::now();
    rt.run_on(place, move |ctx| {
        let mine = ctx.split(src.len());
        let from = src.read().expect("nobody writes the source now");
        let mut to = dst
            .write(mine.clone())
            .expect("ranks write disjoint shares");
        to.copy_from_slice(&from[mine]);
    })?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// One [`TransferModel`] per ordered pair of `devices` devices, fitted to the samples'
/// excess (zero on the diagonal and for pairs without samples).
///
/// # Errors
/// A pair whose samples have fewer than two sizes, or a time that is not finite.
pub fn fit_transfers(
    samples: &[TransferSample],
    devices: usize,
) -> Result<Vec<Vec<TransferModel>>, MosaicError> {
    let mut models = vec![vec![TransferModel::ZERO; devices]; devices];
    for (from, row) in models.iter_mut().enumerate() {
        for (to, model) in row.iter_mut().enumerate().filter(|&(to, _)| to != from) {
            let points: Vec<(u64, f64)> = samples
                .iter()
                .filter(|s| s.from == from && s.to == to)
                .map(|s| (s.bytes, s.excess_ms()))
                .collect();
            if !points.is_empty() {
                *model = TransferModel::fit(&points)?;
            }
        }
    }
    Ok(models)
}

/// Bytes live across the cut before each unit, and after the last (`units + 1` entries;
/// see the module docs).
pub fn cut_bytes(spec: &NetSpec) -> Vec<u64> {
    (0..=spec.units().len())
        .map(|boundary| {
            spec.live_across(boundary)
                .into_iter()
                .map(|source| match source {
                    Source::Layer(j) => bytes_of(spec.layers()[j].output()),
                    Source::Input | Source::Previous => bytes_of(spec.input()),
                })
                .fold(0, u64::saturating_add)
        })
        .collect()
}

/// Memory each unit needs: parameters and its own output buffers (see the module docs).
pub fn unit_memory(model: &Model) -> Vec<u64> {
    let spec = model.spec();
    spec.units()
        .iter()
        .map(|unit| {
            unit.layers()
                .map(|i| {
                    let layer = &spec.layers()[i];
                    let buffer = if model.runs_task(i) {
                        bytes_of(layer.output())
                    } else {
                        0
                    };
                    parameters(layer.kind(), layer.input())
                        .saturating_mul(VALUE_BYTES)
                        .saturating_add(buffer)
                })
                .fold(0, u64::saturating_add)
        })
        .collect()
}

/// Declared parameters of a layer reading `input`.
fn parameters(kind: &LayerKind, input: Shape) -> u64 {
    let input_len = input.elements().unwrap_or(u64::MAX);
    let c = input.c as u64;
    match kind {
        LayerKind::Conv2d {
            out_channels,
            kernel: (r, s),
            ..
        } => {
            let k = *out_channels as u64;
            k.saturating_mul(c)
                .saturating_mul((r * s) as u64)
                .saturating_add(k)
        }
        LayerKind::Fc { out_features, .. } => {
            let f = *out_features as u64;
            f.saturating_mul(input_len).saturating_add(f)
        }
        LayerKind::BatchNorm { .. } => 4 * c,
        _ => 0,
    }
}

fn bytes_of(shape: Shape) -> u64 {
    shape
        .elements()
        .map_or(u64::MAX, |n| n.saturating_mul(VALUE_BYTES))
}

/// A plan's slices on the places of `devices` (the plan's device `i` is `devices[i]`).
///
/// # Errors
/// A slice on a device the list does not have.
fn slice_places(
    plan: &Plan,
    devices: &[Device],
) -> Result<Vec<(Range<usize>, Place)>, ProfileError> {
    plan.slices
        .iter()
        .enumerate()
        .map(|(slice, s)| {
            let device = devices.get(s.device).ok_or(ProfileError::NoSuchDevice {
                slice,
                device: s.device,
                devices: devices.len(),
            })?;
            Ok((s.units.clone(), device.place))
        })
        .collect()
}
