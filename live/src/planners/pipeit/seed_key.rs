//! Pipe-it's predictions as the sort key of Pipe-search's seeds: seeds ranked by predicted
//! stage *times* instead of stage weights.

use std::ops::Range;

use taopipe_dsl::StageKey;

use super::desc::UnitDesc;
use super::predict::{PredictError, Predictor};
use taopipe_tuner::AllowedPlaces;

/// A [`StageKey`] from the predictor: the key of a stage is its predicted time (Eq. 9, in
/// whole nanoseconds) times its weight, the time on the place Pipe-search gives it —
/// stage `r` of `p` on [`places.contiguous(p)`](AllowedPlaces::contiguous)`[r]` (the
/// contiguous runs, or under a layout the widest allowed place in each), predicted as
/// [`PredictedMeasure`](super::PredictedMeasure) does (a place over two core types at the
/// slower one's time). Where times are proportional to weights (`t = k·s`) this is the
/// DSL's `SpeedScaled` key `k·s²`, whose least sum balances the stages' times; `t²` would
/// not (it favours a heavier stage on the faster place). Stage counts outside
/// `2..=workers` (those Pipe-search seeds), or with no allowed places, fall back to the
/// paper's key, `weight²`.
///
/// ```
/// use taopipe_dsl::{NetSpec, Seeds, Shape};
/// use taopipe_live::planners::pipeit::{describe, SeedKey};
/// # use taopipe_live::planners::pipeit::{Calibration, CoreType, LayerDesc, MachineInfo, Op, Predictor, Sample};
/// # let mut cal = Calibration::new(MachineInfo { description: "doc".into(), workers: 2,
/// #     core_types: vec![CoreType::new(0, 1), CoreType::new(1, 1)] });
/// # for t in 0..2 { for (i, &(n, k, m)) in [(49, 9, 8), (196, 27, 16), (784, 64, 32), (3136, 144, 64),
/// #     (49, 4608, 512), (12544, 27, 64), (196, 1152, 256), (784, 576, 128), (3136, 64, 256)].iter().enumerate() {
/// #     let ms = (1 + 2 * t) as f64 * 1e-6 * (n * k * m) as f64;
/// #     cal.samples.push(Sample { name: format!("s{i}"), desc: LayerDesc::new(Op::Gemm, n, k, m, 32),
/// #         core_type: t, width: 1, ms });
/// # } }
/// // `cal`: a machine whose worker 1 is 3× slower than worker 0
/// let predictor = Predictor::fit(&cal)?;
/// let mut b = NetSpec::builder("eight", Shape::new(16, 28, 28));
/// for i in 0..8 {
///     b = b.conv_relu(format!("c{i}"), 16, 3, 1, 1);
/// }
/// let net = b.build()?;
/// let key = SeedKey::new(predictor, describe(&net), &taopipe_tuner::AllowedPlaces::all(2))?;
/// let seeds = Seeds::from_net(&net, 2)?.with_key(key);
/// assert_eq!(seeds.top_k(2, 1)?[0].composition, vec![6, 2]); // 6 units ≈ 3 × 2 units
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SeedKey {
    /// `prefix[p − 2][r][u]`: predicted ns of units `0..u` as stage `r` of `p` stages.
    prefix: Vec<Vec<Vec<u128>>>,
}

impl SeedKey {
    /// Predicts every unit on every place of 2 to `workers` contiguous stages on `places`.
    ///
    /// # Errors
    /// [`PredictError::UncoveredWorker`] for a worker in no core type of the predictor, or
    /// a prediction that fails ([`Predictor::unit_ms`]).
    pub fn new(
        predictor: Predictor,
        units: Vec<UnitDesc>,
        places: &AllowedPlaces,
    ) -> Result<SeedKey, PredictError> {
        let workers = places.workers();
        let mut worker_type = vec![None; workers];
        for (t, c) in predictor.core_types().iter().enumerate() {
            for w in c.workers().filter(|&w| w < workers) {
                worker_type[w] = Some(t);
            }
        }
        let mut prefix = Vec::with_capacity(workers);
        for p in 2..=workers {
            let placed = places.contiguous(p).unwrap_or_default();
            let mut per_stage = Vec::with_capacity(p);
            for (leader, width) in placed {
                // Only the workers of a stage's place need a core type: under a layout
                // some workers are in no place (and no device).
                let stage_types = &worker_type[leader..leader + width];
                if let Some(i) = stage_types.iter().position(Option::is_none) {
                    let worker = leader + i;
                    return Err(PredictError::UncoveredWorker { worker, workers });
                }
                let mut types: Vec<usize> = stage_types.iter().flatten().copied().collect();
                types.sort_unstable();
                types.dedup();
                let mut sums = Vec::with_capacity(units.len() + 1);
                let mut total: u128 = 0;
                sums.push(total);
                for unit in &units {
                    let mut slowest: f64 = 0.0;
                    for &t in &types {
                        slowest = slowest.max(predictor.unit_ms(unit, t, width)?);
                    }
                    total = total.saturating_add((slowest * 1e6).round() as u128);
                    sums.push(total);
                }
                per_stage.push(sums);
            }
            prefix.push(per_stage);
        }
        Ok(SeedKey { prefix })
    }
}

impl StageKey for SeedKey {
    fn key(&self, stages: usize, stage: usize, layers: Range<usize>, weight: u64) -> u128 {
        let sums = stages
            .checked_sub(2)
            .and_then(|p| self.prefix.get(p))
            .and_then(|s| s.get(stage));
        match sums {
            Some(sums) if layers.start <= layers.end && layers.end < sums.len() => {
                let t = sums[layers.end] - sums[layers.start];
                t.saturating_mul(u128::from(weight))
            }
            _ => u128::from(weight) * u128::from(weight),
        }
    }
}
