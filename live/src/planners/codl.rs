//! CoDL (Jia et al., *CoDL: CPU-GPU co-execution for DL inference on mobile devices*,
//! MobiSys '22) as a planner: every layer split between two devices by output channels, in a
//! ratio a latency predictor chooses, with operator chains where they are predicted faster.
//!
//! The paper's two processors are a CPU and a GPU; here they are two [devices](crate::devices)
//! of the runtime (fastest first: [`device_pair`]), e.g. worker 0 at full speed and worker 1
//! emulated at `powersave`. Memory is shared, so there is no data transformation or mapping
//! to pay; what a split costs is the exchange before each layer that reads the other side's
//! output (a synchronisation, and the cache lines moving across). How a layer or chain is
//! split, and why only by output channels, is in [`taopipe_nets::SplitPlan`]'s module docs.
//!
//! # Profile
//! [`Profile::measure`] times every pipeline unit alone on each device ([`Model::stage_graph`],
//! warm-up runs, then the median of `reps`), then split at the speed-proportional ratio
//! `t_b / (t_a + t_b)` (its *split factor*: measured over predicted from the alone times),
//! and the cost of one exchange. The split factor is the paper's concurrency awareness in
//! measured form: both sides of a split convolution build the whole im2col tile, and both
//! compete for memory bandwidth, so a split runs slower than its shares of the alone times
//! (VGG16 here: 1.05–1.2 for most convolutions). Decision: the
//! exchange is timed as a task on `a` that runs 300 µs (longer than the runtime's idle spin,
//! so the other side has parked, as a side that finished its part early does) followed by an
//! empty task on `b` and back, against the same pair on `a` alone — the wake-up and hand-over,
//! an upper bound like the paper's 1 ms pre-sync bound (§5.1).
//!
//! # Predictor
//! The paper learns per-kernel block times (§5.2); here every unit was measured on each
//! device, so the predictor only has to split those times. Decision:
//! - a unit's side `a` takes `t_a · f · k` and side `b` takes `t_b · (1 − f) · k`, where `f`
//!   is the share of the unit's work `a` computes (its layers' shares of output elements
//!   after rounding to the chunk grid, weighted by the layers' FLOPs) and `k` its split
//!   factor (1 when `f` is 0 or 1: one device alone);
//! - the two sides run independently until an exchange (a unit with a layer that waits on the
//!   other place, [`taopipe_nets::LayerSplit::exchange`]), where the slower one is waited for
//!   and the measured exchange cost is paid once:
//!   `T = Σ over exchange-delimited runs of units of max(Σ t_a·f·k, Σ t_b·(1−f)·k) + exchanges · t_sync`.
//!
//! A chain or unit predicted on its own (during the search) also pays one exchange on entry
//! when it is split and is not the first unit (its input came from the previous chain).
//!
//! # Plan (the paper's §4.1 and Algorithm 1)
//! 1. Base plan: each unit alone gets the ratio of least predicted time among `k / n`,
//!    `k = 0..=n`, `n` the chunk count of its heaviest layer (0 and 1 run it on one device).
//! 2. Chains: from a head unit, for each ratio of the head's grid within `± delta` of its
//!    base ratio, the chain grows unit by unit while adding a unit does not make it slower
//!    than the chain so far plus that unit on its own (the paper's stop rule). Decision: the
//!    chain kept is the one with the largest total gain over the base plans of its units (the
//!    paper compares per-step gains); with no gain the head stays alone at its base ratio.
//!    The next head is the unit after the chain kept.
//! 3. The whole plan is predicted with its real exchanges; running everything on `a` or on
//!    `b` alone is kept instead if that is predicted faster.
//!
//! # Run
//! [`CodlPlan::run`] streams frames one at a time (CoDL is not a pipeline): a fresh frame,
//! its split graph, run, next. [`run_frames`] does the same for any per-frame graph (the layer-parallel baseline, for
//! one) so that both are measured alike.
//!
//! ```
//! use taopipe_live::planners::codl::{self, CodlOptions, Profile};
//! use taopipe_nets::{Model, RandomWeights, zoo};
//! use taopipe_runtime::{EmulationSpec, Runtime, Topology};
//!
//! let rt = Runtime::builder().topology(Topology::symmetric(2)?).pin(false).build()?;
//! rt.emulate(&"w1=powersave".parse::<EmulationSpec>()?)?;
//! let model = Model::build(zoo::synth1()?, &RandomWeights { seed: 1 })?;
//! let input = vec![0.5; model.input_len()];
//! let (a, b) = codl::device_pair(&rt)?;
//! let options = CodlOptions { warmup: 0, reps: 1, ..CodlOptions::default() };
//! let profile = Profile::measure(&rt, &model, &input, a, b, &options)?;
//! let plan = codl::plan(&model, &profile, &options)?;
//! println!("{plan}");
//! let stats = plan.run(&rt, &model, &input, 3)?;
//! assert_eq!(stats.latency.len(), 3);
//! assert_eq!(plan.forward(&rt, &model, &input)?, model.forward(&rt, input, a)?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::ops::Range;
use std::time::{Duration, Instant};

use taopipe_nets::{Chain, Frame, Model, ModelError, SplitError, SplitPlan};
use taopipe_runtime::{Latencies, Place, Runtime, RuntimeError, Task, TaskGraph};
use taopipe_tuner::median;

use crate::devices::devices;
use crate::planners::mosaic::{ProfileError, unit_times};

/// How long the task before a probed exchange runs: longer than the runtime's idle spin
/// (100 µs), so the other side has parked.
const SYNC_PROBE_BUSY: Duration = Duration::from_micros(300);

/// Why CoDL could not profile, plan or run. Every variant names the bad value.
#[derive(Debug, thiserror::Error)]
pub enum CodlError {
    /// Fewer than two devices.
    #[error(
        "CoDL splits layers between two devices, the runtime has {found} (on a symmetric \
         machine emulate one slower, e.g. `w1=powersave`)"
    )]
    Devices {
        /// Devices found.
        found: usize,
    },
    /// An option out of range.
    #[error("option `{name}` = {value}: {reason}")]
    Option {
        /// The option.
        name: &'static str,
        /// Its value.
        value: String,
        /// What it must be.
        reason: &'static str,
    },
    /// A profile of another net.
    #[error("the profile has {got} units, net `{net}` has {expected}")]
    Profile {
        /// The net.
        net: String,
        /// Its units.
        expected: usize,
        /// The profile's.
        got: usize,
    },
    /// A split the nets crate refused.
    #[error(transparent)]
    Split(#[from] SplitError),
    /// Profiling the units failed.
    #[error(transparent)]
    Measure(#[from] ProfileError),
    /// A frame or layer failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The runtime failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

/// Knobs of the profile and the chain search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CodlOptions {
    /// Untimed runs of each unit on each device before the timed ones.
    pub warmup: usize,
    /// Timed runs of each unit on each device; the median is kept (≥ 1).
    pub reps: usize,
    /// How far from a chain head's base ratio the chain search looks (the paper's δ = 0.3).
    pub delta: f64,
    /// Exchanges timed to estimate one (≥ 1).
    pub sync_probes: usize,
}

impl Default for CodlOptions {
    fn default() -> Self {
        CodlOptions {
            warmup: 1,
            reps: 3,
            delta: 0.3,
            sync_probes: 50,
        }
    }
}

impl CodlOptions {
    fn check(&self) -> Result<(), CodlError> {
        let bad = |name, value: String, reason| {
            Err(CodlError::Option {
                name,
                value,
                reason,
            })
        };
        if self.reps == 0 {
            return bad("reps", "0".into(), "at least one timed run is needed");
        }
        if self.sync_probes == 0 {
            return bad("sync_probes", "0".into(), "at least one exchange is timed");
        }
        if !(0.0..=1.0).contains(&self.delta) {
            return bad("delta", self.delta.to_string(), "a ratio window in [0, 1]");
        }
        Ok(())
    }
}

/// The two devices CoDL splits between: the two fastest of [`devices`].
///
/// # Errors
/// [`CodlError::Devices`] when the runtime has a single device (all workers alike).
pub fn device_pair(rt: &Runtime) -> Result<(Place, Place), CodlError> {
    match devices(rt)[..] {
        [a, b, ..] => Ok((a.place, b.place)),
        ref d => Err(CodlError::Devices { found: d.len() }),
    }
}

/// What the predictor knows: every unit's time alone on each device, and one exchange's.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Device `a` (gets the first chunks of a split layer).
    pub a: Place,
    /// Device `b`.
    pub b: Place,
    /// Milliseconds of each unit alone on `a`.
    pub unit_ms_a: Vec<f64>,
    /// Milliseconds of each unit alone on `b`.
    pub unit_ms_b: Vec<f64>,
    /// Per unit: its time split at the speed-proportional ratio, over the time the two
    /// sides' shares of `unit_ms_a` and `unit_ms_b` predict (1 where it cannot be split).
    pub split_factor: Vec<f64>,
    /// Milliseconds one exchange costs.
    pub sync_ms: f64,
}

impl Profile {
    /// Measures `model` on `a` and `b` (see the module docs).
    ///
    /// # Errors
    /// Bad options, a wrong input length, or a failing layer.
    pub fn measure(
        rt: &Runtime,
        model: &Model,
        input: &[f32],
        a: Place,
        b: Place,
        options: &CodlOptions,
    ) -> Result<Profile, CodlError> {
        options.check()?;
        if a.overlaps(b) {
            return Err(SplitError::Overlap { a, b }.into());
        }
        let frame = model.frame(input.to_vec())?;
        rt.run(model.graph(&frame, |_| a))?;
        let units = model.spec().units().len();
        // the first run of each unit warms up; the median of warm-up + reps drops it
        let table = unit_times(
            rt,
            model,
            input.to_vec(),
            &[a, b],
            options.warmup + options.reps,
        )?;
        let (unit_ms_a, unit_ms_b): (Vec<f64>, Vec<f64>) =
            table.iter().map(|row| (row[0], row[1])).unzip();
        let mut split_factor = Vec::with_capacity(units);
        for u in 0..units {
            let (ta, tb) = (unit_ms_a[u], unit_ms_b[u]);
            let ratio = if ta + tb > 0.0 { tb / (ta + tb) } else { 0.5 };
            let split = model.split_plan(a, b, &[Chain::new(u..u + 1, ratio)])?;
            let f = share_of(&split, model.unit_layers(u..u + 1)).unwrap_or(1.0);
            let parts = f64::max(ta * f, tb * (1.0 - f));
            if f <= 0.0 || f >= 1.0 || parts <= 0.0 {
                split_factor.push(1.0);
                continue;
            }
            let mut times = Vec::new();
            for rep in 0..options.warmup + options.reps {
                let graph = model.split_graph(&frame, &split);
                let start = Instant::now();
                rt.run(graph)?;
                if rep >= options.warmup {
                    times.push(start.elapsed().as_secs_f64() * 1e3);
                }
            }
            split_factor.push(median(&times).unwrap_or(parts) / parts);
        }
        Ok(Profile {
            a,
            b,
            unit_ms_a,
            unit_ms_b,
            split_factor,
            sync_ms: exchange_ms(rt, a, b, options.sync_probes)?,
        })
    }

    fn check(&self, model: &Model) -> Result<(), CodlError> {
        let expected = model.spec().units().len();
        for got in [
            self.unit_ms_a.len(),
            self.unit_ms_b.len(),
            self.split_factor.len(),
        ] {
            if got != expected {
                return Err(CodlError::Profile {
                    net: model.spec().name().to_string(),
                    expected,
                    got,
                });
            }
        }
        Ok(())
    }
}

/// One exchange: a busy task on `a`, then an empty one on the parked `b` and back, less the
/// same on `a` alone (median of five rounds of `probes` each).
fn exchange_ms(rt: &Runtime, a: Place, b: Place, probes: usize) -> Result<f64, CodlError> {
    let chain = |other: Place| {
        let mut graph = TaskGraph::with_capacity(2 * probes, 2 * probes);
        let mut previous = None;
        for _ in 0..probes {
            let busy = graph.add(
                Task::new("codl-sync", |_| {
                    let start = Instant::now();
                    while start.elapsed() < SYNC_PROBE_BUSY {
                        std::hint::spin_loop();
                    }
                })
                .on(a),
            );
            let hop = graph.add(Task::new("codl-sync", |_| {}).on(other));
            if let Some(p) = previous {
                graph.make_edge(p, busy);
            }
            graph.make_edge(busy, hop);
            previous = Some(hop);
        }
        graph
    };
    let mut samples = Vec::new();
    for _ in 0..5 {
        let mut ms = [0.0; 2];
        for (i, other) in [b, a].into_iter().enumerate() {
            let graph = chain(other);
            let start = Instant::now();
            rt.run(graph)?;
            ms[i] = start.elapsed().as_secs_f64() * 1e3;
        }
        samples.push(((ms[0] - ms[1]) / probes as f64).max(0.0));
    }
    Ok(median(&samples).unwrap_or(0.0))
}

/// `a`'s share of the work of layers `layers` in `split`: their shares of output elements,
/// weighted by FLOPs (plain mean where they have none); `None` when none is in the plan.
fn share_of(split: &SplitPlan, layers: Range<usize>) -> Option<f64> {
    let parts: Vec<(f64, f64)> = layers
        .filter_map(|i| split.layer(i))
        .map(|l| (l.flops as f64, l.share_a))
        .collect();
    if parts.is_empty() {
        return None;
    }
    let flops: f64 = parts.iter().map(|p| p.0).sum();
    Some(if flops > 0.0 {
        parts.iter().map(|(f, s)| f * s).sum::<f64>() / flops
    } else {
        parts.iter().map(|p| p.1).sum::<f64>() / parts.len() as f64
    })
}

/// The predicted milliseconds of one frame through `split`'s units (module docs).
///
/// # Panics
/// If `profile` has fewer units than the plan covers (a caller bug: [`plan`] checks it).
pub fn predict(model: &Model, profile: &Profile, split: &SplitPlan) -> f64 {
    let (mut total, mut run_a, mut run_b) = (0.0, 0.0, 0.0);
    for u in split.units() {
        let layers = model.unit_layers(u..u + 1);
        let Some(f) = share_of(split, layers.clone()) else {
            continue;
        };
        if layers
            .clone()
            .any(|i| split.layer(i).is_some_and(|l| l.exchange))
        {
            total += f64::max(run_a, run_b) + profile.sync_ms;
            (run_a, run_b) = (0.0, 0.0);
        }
        let k = if f > 0.0 && f < 1.0 {
            profile.split_factor[u]
        } else {
            1.0
        };
        run_a += profile.unit_ms_a[u] * f * k;
        run_b += profile.unit_ms_b[u] * (1.0 - f) * k;
    }
    total + f64::max(run_a, run_b)
}

/// A chain of the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedChain {
    /// Its units.
    pub units: Range<usize>,
    /// The ratio asked for (`a`'s share of each layer's output channels).
    pub ratio: f64,
    /// `a`'s share of the chain's work after rounding to the chunk grid (FLOP-weighted).
    pub share_a: f64,
    /// Its predicted milliseconds on its own (module docs).
    pub predicted_ms: f64,
}

/// A CoDL plan: chains with their ratios, the split they make, the predicted latency.
#[derive(Debug, Clone)]
pub struct CodlPlan {
    split: SplitPlan,
    chains: Vec<PlannedChain>,
    unit_names: Vec<String>,
    predicted_ms: f64,
}

impl CodlPlan {
    /// The split of every layer.
    pub fn split(&self) -> &SplitPlan {
        &self.split
    }

    /// The chains, in order.
    pub fn chains(&self) -> &[PlannedChain] {
        &self.chains
    }

    /// Predicted milliseconds per frame.
    pub fn predicted_ms(&self) -> f64 {
        self.predicted_ms
    }

    /// `a`'s share of the whole net's work (FLOP-weighted).
    pub fn share_a(&self) -> f64 {
        let layers = self.split.layers();
        share_of(&self.split, 0..layers.last().map_or(0, |l| l.layer + 1)).unwrap_or(0.0)
    }

    /// Runs one frame and returns the net's output.
    ///
    /// # Errors
    /// A wrong input length, or a failing layer.
    pub fn forward(
        &self,
        rt: &Runtime,
        model: &Model,
        input: &[f32],
    ) -> Result<Vec<f32>, CodlError> {
        let frame = model.frame(input.to_vec())?;
        rt.run(model.split_graph(&frame, &self.split))?;
        Ok(frame.output())
    }

    /// Streams `frames` frames one at a time through the plan.
    ///
    /// # Errors
    /// `frames == 0`, a wrong input length, or a failing layer.
    pub fn run(
        &self,
        rt: &Runtime,
        model: &Model,
        input: &[f32],
        frames: usize,
    ) -> Result<FrameStats, CodlError> {
        run_frames(rt, model, input, frames, |f| {
            model.split_graph(f, &self.split)
        })
    }
}

impl fmt::Display for CodlPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "CoDL plan: a = {}, b = {}, {} chains, {} exchanges, a's share {:.2}, predicted {:.2} ms",
            self.split.a(),
            self.split.b(),
            self.chains.len(),
            self.split.exchanges(),
            self.share_a(),
            self.predicted_ms
        )?;
        writeln!(
            f,
            "{:>8}  {:<32} {:>6} {:>8} {:>9}",
            "units", "first..last", "ratio", "a share", "pred ms"
        )?;
        for c in &self.chains {
            let names = format!(
                "{}..{}",
                self.unit_names[c.units.start],
                self.unit_names[c.units.end - 1]
            );
            writeln!(
                f,
                "{:>8}  {:<32} {:>6.2} {:>8.2} {:>9.2}",
                format!("{}..{}", c.units.start, c.units.end),
                names,
                c.ratio,
                c.share_a,
                c.predicted_ms
            )?;
        }
        Ok(())
    }
}

/// Ratios `k / n` of unit `u`'s grid: `n` is the chunk count of its heaviest layer.
fn grid(model: &Model, split: &SplitPlan, u: usize) -> Vec<f64> {
    let n = model
        .unit_layers(u..u + 1)
        .filter_map(|i| split.layer(i))
        .max_by_key(|l| l.flops)
        .map_or(1, |l| l.chunks_a.len() + l.chunks_b.len());
    (0..=n).map(|k| k as f64 / n as f64).collect()
}

/// Plans and predicts chains on their own, remembering nothing but the model and profile.
struct Planner<'m> {
    model: &'m Model,
    profile: &'m Profile,
}

impl Planner<'_> {
    fn split(&self, chains: &[Chain]) -> Result<SplitPlan, SplitError> {
        self.model
            .split_plan(self.profile.a, self.profile.b, chains)
    }

    /// A chain predicted on its own: its split, and its time with one exchange on entry
    /// when it is split and does not start the net.
    fn alone(&self, units: Range<usize>, ratio: f64) -> Result<(SplitPlan, f64), SplitError> {
        let split = self.split(&[Chain::new(units.clone(), ratio)])?;
        let mut ms = predict(self.model, self.profile, &split);
        let head = share_of(&split, self.model.unit_layers(units.start..units.start + 1));
        if units.start > 0 && head.is_some_and(|f| f > 0.0 && f < 1.0) {
            ms += self.profile.sync_ms;
        }
        Ok((split, ms))
    }
}

/// Plans `model` from `profile` (module docs: base ratios, chain search, the whole plan).
///
/// # Errors
/// Bad options, or a profile of another net.
pub fn plan(
    model: &Model,
    profile: &Profile,
    options: &CodlOptions,
) -> Result<CodlPlan, CodlError> {
    options.check()?;
    profile.check(model)?;
    let planner = Planner { model, profile };
    let units = model.spec().units().len();
    // 1. Base plan: each unit on its own.
    let mut base: Vec<(f64, f64)> = Vec::with_capacity(units);
    for u in 0..units {
        let probe = planner.split(&[Chain::new(u..u + 1, 0.5)])?;
        let mut best = (0.0, f64::INFINITY);
        for ratio in grid(model, &probe, u) {
            let (_, ms) = planner.alone(u..u + 1, ratio)?;
            if ms < best.1 {
                best = (ratio, ms);
            }
        }
        base.push(best);
    }
    // 2. Chains (Algorithm 1, keeping the largest total gain).
    let mut chains: Vec<PlannedChain> = Vec::new();
    let mut head = 0;
    while head < units {
        let (head_ratio, head_ms) = base[head];
        let mut best = (head..head + 1, head_ratio, head_ms, 0.0);
        let probe = planner.split(&[Chain::new(head..head + 1, head_ratio)])?;
        for ratio in grid(model, &probe, head)
            .into_iter()
            .filter(|r| (r - head_ratio).abs() <= options.delta + 1e-9)
        {
            let (_, mut chain_ms) = planner.alone(head..head + 1, ratio)?;
            let mut base_ms = head_ms;
            let mut end = head + 1;
            while end < units {
                let (_, longer_ms) = planner.alone(head..end + 1, ratio)?;
                if longer_ms > chain_ms + base[end].1 {
                    break;
                }
                (chain_ms, base_ms, end) = (longer_ms, base_ms + base[end].1, end + 1);
                let gain = base_ms - chain_ms;
                // A gain lost in rounding is no gain.
                if gain > best.3 + 1e-9 * base_ms {
                    best = (head..end, ratio, chain_ms, gain);
                }
            }
        }
        let (range, ratio, ms, _) = best;
        head = range.end;
        chains.push(PlannedChain {
            units: range,
            ratio,
            share_a: 0.0,
            predicted_ms: ms,
        });
    }
    // 3. The whole plan, or one device alone if that is predicted faster.
    let as_chains = |c: &[PlannedChain]| -> Vec<Chain> {
        c.iter()
            .map(|c| Chain::new(c.units.clone(), c.ratio))
            .collect()
    };
    let mut split = planner.split(&as_chains(&chains))?;
    let mut predicted_ms = predict(model, profile, &split);
    for ratio in [1.0, 0.0] {
        let (alone, ms) = planner.alone(0..units, ratio)?;
        if ms < predicted_ms {
            chains = vec![PlannedChain {
                units: 0..units,
                ratio,
                share_a: 0.0,
                predicted_ms: ms,
            }];
            (split, predicted_ms) = (alone, ms);
        }
    }
    for c in &mut chains {
        c.share_a = share_of(&split, model.unit_layers(c.units.clone())).unwrap_or(0.0);
    }
    Ok(CodlPlan {
        split,
        chains,
        unit_names: model
            .spec()
            .units()
            .iter()
            .map(|u| u.name().to_string())
            .collect(),
        predicted_ms,
    })
}

/// Latencies of frames run one at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameStats {
    /// Each frame, from allocating its buffers to its last layer.
    pub latency: Latencies,
    /// Each frame's graph alone (what [`predict`] predicts).
    pub graph: Latencies,
    /// Seconds the whole run took.
    pub wall_s: f64,
}

impl FrameStats {
    /// The `q`-quantile of the latencies in ms ([`Latencies::quantile_ms`]).
    pub fn quantile_ms(&self, q: f64) -> f64 {
        self.latency.quantile_ms(q)
    }

    /// The `q`-quantile of the graph times in ms (the latency less the frame's buffer
    /// allocation), comparable with switch-mode and pipeline latencies.
    pub fn graph_quantile_ms(&self, q: f64) -> f64 {
        self.graph.quantile_ms(q)
    }

    /// The median of the graph times.
    pub fn graph_p50_ms(&self) -> f64 {
        self.graph_quantile_ms(0.5)
    }

    /// Median latency.
    pub fn p50_ms(&self) -> f64 {
        self.quantile_ms(0.5)
    }

    /// 99th-percentile latency.
    pub fn p99_ms(&self) -> f64 {
        self.quantile_ms(0.99)
    }

    /// Frames per second.
    pub fn throughput_fps(&self) -> f64 {
        if self.wall_s > 0.0 {
            self.latency.len() as f64 / self.wall_s
        } else {
            0.0
        }
    }
}

/// Runs `frames` frames of `input` one at a time, each through the graph `graph_of` makes
/// for it.
///
/// # Errors
/// `frames == 0`, a wrong input length, or a failing layer.
pub fn run_frames(
    rt: &Runtime,
    model: &Model,
    input: &[f32],
    frames: usize,
    mut graph_of: impl FnMut(&Frame) -> TaskGraph,
) -> Result<FrameStats, CodlError> {
    if frames == 0 {
        return Err(CodlError::Option {
            name: "frames",
            value: "0".into(),
            reason: "at least one frame",
        });
    }
    let (mut latency, mut graph_only) = (Latencies::new(), Latencies::new());
    let start = Instant::now();
    for _ in 0..frames {
        let t = Instant::now();
        let frame = model.frame(input.to_vec())?;
        let graph = graph_of(&frame);
        let g = Instant::now();
        rt.run(graph)?;
        graph_only.record(g.elapsed());
        latency.record(t.elapsed());
    }
    Ok(FrameStats {
        latency,
        graph: graph_only,
        wall_s: start.elapsed().as_secs_f64(),
    })
}
