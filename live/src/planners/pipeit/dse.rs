//! The design space of Pipe-it pipelines (Eq. 1–2) and its exploration (Alg. 1–3) on a
//! time matrix `T` (one predicted time per unit and stage configuration `(type, count)`).

use std::collections::HashSet;
use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Serialize};
use taopipe_dsl::composition_count;

use super::desc::UnitDesc;
use super::predict::{CoreType, PredictError, Predictor};
use taopipe_tuner::{Compositions, ConfigError, Configuration};

/// A pipeline stage's core configuration `P_i = (core_type, core_count)`, displayed
/// `T0x4` (type 0 — the paper's `B` — four cores).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StageKind {
    /// The core type (0 = fastest).
    pub core_type: usize,
    /// Cores of that type (≥ 1).
    pub cores: usize,
}

impl StageKind {
    /// `cores` cores of `core_type`.
    pub fn new(core_type: usize, cores: usize) -> StageKind {
        StageKind { core_type, cores }
    }
}

impl fmt::Display for StageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "T{}x{}", self.core_type, self.cores)
    }
}

/// Why a time matrix or a plan could not be made. Each variant names the value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DseError {
    /// A net needs at least one unit.
    #[error("the net has no units")]
    NoUnits,
    /// Every core type needs at least one core, and there must be one type.
    #[error("core counts {cores:?}: every core type needs at least one core")]
    NoCores {
        /// Cores per type given.
        cores: Vec<usize>,
    },
    /// A time is negative, infinite or NaN.
    #[error("unit {unit} on {kind}: time {value} ms")]
    BadTime {
        /// The unit.
        unit: usize,
        /// The stage configuration.
        kind: StageKind,
        /// The value.
        value: f64,
    },
    /// The core types given to [`plan`] do not match the matrix.
    #[error("the time matrix is for core counts {matrix:?}, the core types have {given:?}")]
    CoreTypes {
        /// Cores per type of the matrix.
        matrix: Vec<usize>,
        /// Cores per type given.
        given: Vec<usize>,
    },
    /// A prediction failed.
    #[error(transparent)]
    Predict(#[from] PredictError),
    /// The plan does not form a valid configuration (core types that overlap).
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// The time matrix `T` of §VI-A: the time of every unit on every stage configuration
/// `(type, count)`, `count` in `1..=cores[type]`.
///
/// ```
/// use taopipe_live::planners::pipeit::{StageKind, TimeMatrix};
///
/// // 3 units; type 0 twice as fast as type 1, linear speed-up
/// let t = TimeMatrix::from_fn(3, &[2, 2], |u, k| {
///     (u + 1) as f64 * (k.core_type + 1) as f64 / k.cores as f64
/// })?;
/// assert_eq!(t.ms(2, StageKind::new(1, 2)), Some(3.0));
/// assert_eq!(t.stage_ms(0..3, StageKind::new(0, 1)), Some(6.0)); // Eq. 9
/// assert_eq!(t.ms(0, StageKind::new(0, 3)), None);
/// # Ok::<(), taopipe_live::planners::pipeit::DseError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TimeMatrix {
    units: usize,
    cores: Vec<usize>,
    /// First slot of each type; slot of `(t, c)` = `offsets[t] + c − 1`.
    offsets: Vec<usize>,
    /// `ms[slot · units + unit]`.
    ms: Vec<f64>,
}

impl TimeMatrix {
    /// `f(unit, kind)` for every unit and stage configuration.
    ///
    /// # Errors
    /// [`DseError::NoUnits`], [`DseError::NoCores`], or [`DseError::BadTime`] for a value
    /// that is not finite and ≥ 0.
    pub fn from_fn(
        units: usize,
        cores: &[usize],
        mut f: impl FnMut(usize, StageKind) -> f64,
    ) -> Result<TimeMatrix, DseError> {
        TimeMatrix::try_from_fn(units, cores, |u, k| Ok::<f64, DseError>(f(u, k)))
    }

    /// The predicted times of `units` (Eq. 5–9 through [`Predictor::unit_ms`]).
    ///
    /// # Errors
    /// As [`TimeMatrix::from_fn`], and [`DseError::Predict`] when a prediction fails.
    pub fn predict(
        predictor: &Predictor,
        units: &[UnitDesc],
        cores: &[usize],
    ) -> Result<TimeMatrix, DseError> {
        TimeMatrix::try_from_fn(units.len(), cores, |u, k| {
            Ok(predictor.unit_ms(&units[u], k.core_type, k.cores)?)
        })
    }

    fn try_from_fn(
        units: usize,
        cores: &[usize],
        mut f: impl FnMut(usize, StageKind) -> Result<f64, DseError>,
    ) -> Result<TimeMatrix, DseError> {
        if units == 0 {
            return Err(DseError::NoUnits);
        }
        if cores.is_empty() || cores.contains(&0) {
            return Err(DseError::NoCores {
                cores: cores.to_vec(),
            });
        }
        let mut offsets = Vec::with_capacity(cores.len());
        let mut slots = 0;
        for &c in cores {
            offsets.push(slots);
            slots += c;
        }
        let mut ms = Vec::with_capacity(slots * units);
        for (t, &c) in cores.iter().enumerate() {
            for count in 1..=c {
                let kind = StageKind::new(t, count);
                for unit in 0..units {
                    let value = f(unit, kind)?;
                    if !(value.is_finite() && value >= 0.0) {
                        return Err(DseError::BadTime { unit, kind, value });
                    }
                    ms.push(value);
                }
            }
        }
        Ok(TimeMatrix {
            units,
            cores: cores.to_vec(),
            offsets,
            ms,
        })
    }

    /// Units of the net (`W`).
    pub fn units(&self) -> usize {
        self.units
    }

    /// Cores of each type (`H_B, H_s, …`).
    pub fn cores(&self) -> &[usize] {
        &self.cores
    }

    fn slot(&self, kind: StageKind) -> Option<usize> {
        let cores = *self.cores.get(kind.core_type)?;
        (kind.cores >= 1 && kind.cores <= cores)
            .then(|| self.offsets[kind.core_type] + kind.cores - 1)
    }

    /// `T^{P}_{l}`: the time of `unit` on `kind`; `None` out of range.
    pub fn ms(&self, unit: usize, kind: StageKind) -> Option<f64> {
        let slot = self.slot(kind)?;
        (unit < self.units).then(|| self.ms[slot * self.units + unit])
    }

    /// Eq. 9, `T^{P}_{L}`: the time of the units `units` on `kind`, summed in unit order (0
    /// for an empty range); `None` out of range.
    pub fn stage_ms(&self, units: Range<usize>, kind: StageKind) -> Option<f64> {
        let slot = self.slot(kind)?;
        if units.end > self.units {
            return None;
        }
        Some(self.sum(slot, units))
    }

    fn sum(&self, slot: usize, units: Range<usize>) -> f64 {
        let row = &self.ms[slot * self.units..(slot + 1) * self.units];
        row[units].iter().fold(0.0, |a, &t| a + t)
    }

    fn kind_ms(&self, units: Range<usize>, kind: StageKind) -> f64 {
        // kinds inside the algorithms come from the matrix's own cores
        self.slot(kind)
            .map_or(f64::INFINITY, |s| self.sum(s, units))
    }

    /// The time of each stage of `pipeline` holding `counts` consecutive units each.
    fn stage_times(&self, pipeline: &[StageKind], counts: &[usize]) -> Vec<f64> {
        let mut start = 0;
        pipeline
            .iter()
            .zip(counts)
            .map(|(&kind, &n)| {
                let t = self.kind_ms(start..start + n, kind);
                start += n;
                t
            })
            .collect()
    }
}

/// Alg. 1, `find_split`: splits the consecutive units `units` between the adjacent stages
/// `first` and `second`. All units start on `first`; its last unit moves to `second` while
/// the move is *helpful*, and the first move that is not ends the flow. Returns the
/// boundary: `first` keeps `units.start..boundary`, `second` gets `boundary..units.end`.
///
/// Decision: "helpful" is the paper's own definition of better, Eq. 11 on the pair — the
/// move lowers the slower of the two stages. Alg. 1 as printed moves only while `first`
/// *stays* slower after the move (`T_new^{P_i} > T_new^{P_{i+1}}`), which keeps the unit at
/// the crossing upstream even when moving it balances the pair (six 2 ms units on two equal
/// cores: 8 | 4 instead of 6 | 6), against the text's "the best split between two adjacent
/// pipeline stages". With positive times the pair's bottleneck falls and then rises as
/// units flow, so this split is the best one for the pair (tests check it against brute
/// force); on random paper-like nets the printed test left plans 41 % above the optimum on
/// average, this one 12 %.
///
/// ```
/// use taopipe_live::planners::pipeit::{find_split, StageKind, TimeMatrix};
///
/// // 4 units of 1 ms on type 0, 2 ms on type 1
/// let t = TimeMatrix::from_fn(4, &[1, 1], |_, k| (k.core_type + 1) as f64)?;
/// let b = find_split(&t, 0..4, StageKind::new(0, 1), StageKind::new(1, 1));
/// assert_eq!(b, 3); // 3 ms | 2 ms; moving one more would give 2 | 4
/// # Ok::<(), taopipe_live::planners::pipeit::DseError>(())
/// ```
pub fn find_split(
    matrix: &TimeMatrix,
    units: Range<usize>,
    first: StageKind,
    second: StageKind,
) -> usize {
    let pair = |b: usize| {
        matrix
            .kind_ms(units.start..b, first)
            .max(matrix.kind_ms(b..units.end, second))
    };
    let mut boundary = units.end;
    let mut current = pair(boundary);
    while boundary > units.start {
        let moved = pair(boundary - 1);
        if moved < current {
            boundary -= 1; // moving the unit helps
            current = moved;
        } else {
            break; // further flow would not
        }
    }
    boundary
}

/// Alg. 2, `work_flow`: the units per stage of `pipeline` (0 for a stage that gets none).
/// All units start on the first stage; [`find_split`] rebalances each adjacent pair in
/// turn, sweep after sweep, until a sweep changes nothing.
///
/// Decision: should the sweeps ever cycle (a state repeats without being stable), the
/// allocation with the smallest bottleneck among those visited is returned.
///
/// ```
/// use taopipe_live::planners::pipeit::{work_flow, StageKind, TimeMatrix};
///
/// // 7 units of 2 ms on one core
/// let t = TimeMatrix::from_fn(7, &[3], |_, k| 2.0 / k.cores as f64)?;
/// let p = [StageKind::new(0, 1), StageKind::new(0, 1), StageKind::new(0, 1)];
/// assert_eq!(work_flow(&t, &p), vec![3, 2, 2]);
/// # Ok::<(), taopipe_live::planners::pipeit::DseError>(())
/// ```
pub fn work_flow(matrix: &TimeMatrix, pipeline: &[StageKind]) -> Vec<usize> {
    let p = pipeline.len();
    if p == 0 {
        return Vec::new();
    }
    let mut counts = vec![0; p];
    counts[0] = matrix.units();
    let mut seen: HashSet<Vec<usize>> = HashSet::new();
    let mut visited: Vec<Vec<usize>> = vec![counts.clone()];
    seen.insert(counts.clone());
    loop {
        let old = counts.clone();
        let mut start = 0;
        for i in 0..p - 1 {
            let end = start + counts[i] + counts[i + 1];
            let b = find_split(matrix, start..end, pipeline[i], pipeline[i + 1]);
            counts[i] = b - start;
            counts[i + 1] = end - b;
            start = b;
        }
        if counts == old {
            return counts;
        }
        if !seen.insert(counts.clone()) {
            return visited
                .into_iter()
                .min_by(|a, b| {
                    bottleneck(&matrix.stage_times(pipeline, a))
                        .total_cmp(&bottleneck(&matrix.stage_times(pipeline, b)))
                })
                .unwrap_or(counts);
        }
        visited.push(counts.clone());
    }
}

fn bottleneck(stage_ms: &[f64]) -> f64 {
    stage_ms.iter().copied().fold(0.0, f64::max)
}

/// One step of the exploration, for reports and tests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "step")]
pub enum DseStep {
    /// [`work_flow`] ran on `pipeline` and allocated `counts` units per stage.
    WorkFlow {
        /// The pipeline.
        pipeline: Vec<StageKind>,
        /// Units per stage (0: none).
        counts: Vec<usize>,
        /// Predicted time of each stage.
        stage_ms: Vec<f64>,
    },
    /// Eq. 12 was checked for merging stages `at` and `at + 1`.
    Merge {
        /// Index of the first of the two stages.
        at: usize,
        /// The merged stage.
        merged: StageKind,
        /// `T^{P'}_{L_i ∪ L_{i+1}}`.
        merged_ms: f64,
        /// `max(T^{P_i}_{L_i}, T^{P_{i+1}}_{L_{i+1}})`.
        separate_ms: f64,
        /// Whether Eq. 12 held and the stages were merged.
        accepted: bool,
    },
}

/// The result of Alg. 3 before empty stages are dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeResult {
    /// The pipeline `P` (stages in order; types non-decreasing).
    pub pipeline: Vec<StageKind>,
    /// Units per stage, `L` (0 for a stage that gets none).
    pub counts: Vec<usize>,
    /// Every work-flow and merge step, in order.
    pub trace: Vec<DseStep>,
}

/// Alg. 3, `merge_stage`: starts from one single-core stage per core (types in order,
/// fastest first), allocates with [`work_flow`], then, type after type, merges adjacent
/// stages of that type while Eq. 12 holds, reallocating after every merge.
///
/// Decision on the loop of Alg. 3: a merge that Eq. 12 refuses ends the growth of *that*
/// stage and the loop goes on with the next pair of the same type (the paper: "no further
/// merging of the involved stages … will be helpful"); a successful merge tries the merged
/// stage with its next neighbour. This is what the paper's ResNet50 example does: its big
/// cluster grows one stage to `B4`, and its small cluster ends as `s2-s2`, which a loop
/// that stopped at the first refusal could not reach.
pub fn merge_stage(matrix: &TimeMatrix) -> MergeResult {
    let mut pipeline: Vec<StageKind> = matrix
        .cores()
        .iter()
        .enumerate()
        .flat_map(|(t, &c)| std::iter::repeat_n(StageKind::new(t, 1), c))
        .collect();
    let mut trace = Vec::new();
    let mut counts = work_flow(matrix, &pipeline);
    trace.push(DseStep::WorkFlow {
        pipeline: pipeline.clone(),
        counts: counts.clone(),
        stage_ms: matrix.stage_times(&pipeline, &counts),
    });
    for t in 0..matrix.cores().len() {
        let Some(mut i) = pipeline.iter().position(|k| k.core_type == t) else {
            continue;
        };
        while i + 1 < pipeline.len() && pipeline[i + 1].core_type == t {
            let start: usize = counts[..i].iter().sum();
            let (a, b) = (counts[i], counts[i + 1]);
            let merged = StageKind::new(t, pipeline[i].cores + pipeline[i + 1].cores);
            let merged_ms = matrix.kind_ms(start..start + a + b, merged);
            let separate_ms = matrix
                .kind_ms(start..start + a, pipeline[i])
                .max(matrix.kind_ms(start + a..start + a + b, pipeline[i + 1]));
            let accepted = merged_ms < separate_ms; // Eq. 12
            trace.push(DseStep::Merge {
                at: i,
                merged,
                merged_ms,
                separate_ms,
                accepted,
            });
            if accepted {
                pipeline[i] = merged;
                pipeline.remove(i + 1);
                counts = work_flow(matrix, &pipeline);
                trace.push(DseStep::WorkFlow {
                    pipeline: pipeline.clone(),
                    counts: counts.clone(),
                    stage_ms: matrix.stage_times(&pipeline, &counts),
                });
            } else {
                i += 1;
            }
        }
    }
    MergeResult {
        pipeline,
        counts,
        trace,
    }
}

/// A Pipe-it pipeline: the stages that hold units, their units and predicted times, and
/// the [`Configuration`] that runs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The stages' core configurations (stages Alg. 3 left empty are dropped, their cores
    /// idle).
    pub pipeline: Vec<StageKind>,
    /// Units per stage.
    pub composition: Vec<usize>,
    /// Predicted time of each stage, Eq. 9.
    pub stage_ms: Vec<f64>,
    /// The configuration: stage `i` on the next `cores` workers of its core type, in
    /// pipeline order from the type's leader.
    pub configuration: Configuration,
    /// How Alg. 3 got there.
    pub trace: Vec<DseStep>,
}

impl Plan {
    /// The slowest stage (Eq. 11's denominator), ms.
    pub fn bottleneck_ms(&self) -> f64 {
        bottleneck(&self.stage_ms)
    }

    /// Predicted frames per second, Eq. 11.
    pub fn throughput(&self) -> f64 {
        1e3 / self.bottleneck_ms()
    }

    /// `T0x4-T1x2-T1x2`.
    pub fn pipeline_string(&self) -> String {
        let names: Vec<String> = self.pipeline.iter().map(StageKind::to_string).collect();
        names.join("-")
    }
}

/// Pipe-it's design-space exploration: [`merge_stage`] on `matrix`, then the stages that
/// hold units as a [`Configuration`] on the workers of `core_types` (which must have the
/// matrix's core counts).
///
/// ```
/// use taopipe_live::planners::pipeit::{plan, CoreType, StageKind, TimeMatrix};
///
/// // 8 equal units; type 1 is 3× slower; perfect speed-up within a type
/// let t = TimeMatrix::from_fn(8, &[2, 2], |_, k| [1.0, 3.0][k.core_type] / k.cores as f64)?;
/// let p = plan(&t, &[CoreType::new(0, 2), CoreType::new(2, 2)])?;
/// assert_eq!(p.pipeline[0], StageKind::new(0, 2));
/// assert_eq!(p.configuration.stages()[0].workers(), 0..2);
/// assert!(p.bottleneck_ms() < 8.0 / 2.0); // better than the big cores alone
/// # Ok::<(), taopipe_live::planners::pipeit::DseError>(())
/// ```
///
/// # Errors
/// [`DseError::CoreTypes`] when `core_types` do not match the matrix; [`DseError::Config`]
/// when their workers overlap.
pub fn plan(matrix: &TimeMatrix, core_types: &[CoreType]) -> Result<Plan, DseError> {
    let given: Vec<usize> = core_types.iter().map(|c| c.cores).collect();
    if given != matrix.cores() {
        return Err(DseError::CoreTypes {
            matrix: matrix.cores().to_vec(),
            given,
        });
    }
    let MergeResult {
        pipeline,
        counts,
        trace,
    } = merge_stage(matrix);
    let kept: Vec<(StageKind, usize)> = pipeline
        .into_iter()
        .zip(counts)
        .filter(|&(_, n)| n > 0)
        .collect();
    let mut used = vec![0usize; core_types.len()];
    let mut places = Vec::with_capacity(kept.len());
    for (kind, _) in &kept {
        let leader = core_types[kind.core_type].leader + used[kind.core_type];
        used[kind.core_type] += kind.cores;
        places.push((leader, kind.cores));
    }
    let workers = core_types
        .iter()
        .map(|c| c.leader.saturating_add(c.cores))
        .max()
        .unwrap_or(0);
    let pipeline: Vec<StageKind> = kept.iter().map(|k| k.0).collect();
    let composition: Vec<usize> = kept.iter().map(|k| k.1).collect();
    let configuration = Configuration::with_places(&composition, &places, matrix.units(), workers)?;
    let stage_ms = matrix.stage_times(&pipeline, &composition);
    Ok(Plan {
        pipeline,
        composition,
        stage_ms,
        configuration,
        trace,
    })
}

/// Eq. 1, generalised to any number of core types: the pipelines of `stages` stages, each
/// stage on cores of one type, types in order (fastest first), **every** type holding at
/// least one stage: `Σ Π_t C(H_t − 1, p_t − 1)` over `p_1 + … + p_T = stages`,
/// `1 ≤ p_t ≤ H_t`. 0 when a type has no cores. Saturates at `u128::MAX`.
///
/// ```
/// use taopipe_live::planners::pipeit::pipeline_count;
/// // the paper's 4 big + 4 small cores: 64 pipelines of 2 to 8 stages
/// assert_eq!((2..=8).map(|p| pipeline_count(&[4, 4], p)).sum::<u128>(), 64);
/// ```
pub fn pipeline_count(cores: &[usize], stages: usize) -> u128 {
    // ways[s]: pipelines of s stages on the types seen so far
    let mut ways = vec![0u128; stages + 1];
    ways[0] = 1;
    for &c in cores {
        let mut next = vec![0u128; stages + 1];
        for (s, &w) in ways.iter().enumerate() {
            if w == 0 {
                continue;
            }
            for pt in 1..=c.min(stages - s) {
                let n = composition_count(c, pt).unwrap_or(u128::MAX);
                next[s + pt] = next[s + pt].saturating_add(w.saturating_mul(n));
            }
        }
        ways = next;
    }
    ways[stages]
}

/// Eq. 2: the design points of a net of `units` units (`W`): every pipeline of Eq. 1 with
/// `2 ≤ p ≤ H` stages times every way to cut the units into `p` non-empty runs,
/// `Σ_p C(W − 1, p − 1) · C_p`. Saturates at `u128::MAX`.
///
/// The paper quotes 5,379,616 design points for MobileNet's 28 layers on 4 + 4 cores; the
/// formula as printed gives that for `W = 29` (4,272,048 for `W = 28`).
///
/// ```
/// use taopipe_live::planners::pipeit::design_points;
/// assert_eq!(design_points(29, &[4, 4]), 5_379_616);
/// ```
pub fn design_points(units: usize, cores: &[usize]) -> u128 {
    let h: usize = cores.iter().sum();
    (2..=h)
        .map(|p| {
            composition_count(units, p)
                .unwrap_or(u128::MAX)
                .saturating_mul(pipeline_count(cores, p))
        })
        .fold(0, u128::saturating_add)
}

/// Every pipeline counted by [`pipeline_count`]`(cores, stages)`: for each type in order,
/// a composition of its cores into its stages.
///
/// ```
/// use taopipe_live::planners::pipeit::{pipelines, StageKind};
/// let all = pipelines(&[2, 1], 2);
/// assert_eq!(all, vec![vec![StageKind::new(0, 2), StageKind::new(1, 1)]]);
/// ```
pub fn pipelines(cores: &[usize], stages: usize) -> Vec<Vec<StageKind>> {
    let mut out = Vec::new();
    let mut current = Vec::new();
    extend(cores, 0, stages, &mut current, &mut out);
    out
}

fn extend(
    cores: &[usize],
    t: usize,
    left: usize,
    current: &mut Vec<StageKind>,
    out: &mut Vec<Vec<StageKind>>,
) {
    if t == cores.len() {
        if left == 0 {
            out.push(current.clone());
        }
        return;
    }
    let rest = cores.len() - t - 1; // each later type needs a stage
    for pt in 1..=cores[t].min(left.saturating_sub(rest)) {
        for widths in Compositions::new(cores[t], pt) {
            let len = current.len();
            current.extend(widths.iter().map(|&w| StageKind::new(t, w)));
            extend(cores, t + 1, left - pt, current, out);
            current.truncate(len);
        }
    }
}
