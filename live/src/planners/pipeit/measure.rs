//! Predicted stage times as a [`Measure`]: any tuner can search on the predictor instead of
//! the machine.

use super::desc::UnitDesc;
use super::predict::{CoreType, PredictError, Predictor};
use taopipe_tuner::{Configuration, Measure, MeasureError, StageTimes};

/// A [`Measure`] that predicts instead of running: a stage's time is the sum of its units'
/// predictions (Eq. 9) on its place's core type at the place's width.
///
/// A place whose workers are of more than one core type (the paper never builds one) is
/// predicted as Eq. 7 would: every thread does `⌈n_iter / width⌉` chunks, so the slowest
/// type's time at the full width bounds the stage; no cross-cluster penalty is added.
///
/// ```
/// use taopipe_dsl::{NetSpec, Shape};
/// use taopipe_tuner::{Configuration, Measure};
/// use taopipe_live::planners::pipeit::{describe, CoreType, PredictedMeasure, Predictor};
/// # use taopipe_live::planners::pipeit::{Calibration, LayerDesc, MachineInfo, Op, Sample};
/// # let mut cal = Calibration::new(MachineInfo { description: "doc".into(), workers: 2,
/// #     core_types: vec![CoreType::new(0, 1), CoreType::new(1, 1)] });
/// # for t in 0..2 { for (i, &(n, k, m)) in [(49, 9, 8), (196, 27, 16), (784, 64, 32), (3136, 144, 64),
/// #     (49, 4608, 512), (12544, 27, 64), (196, 1152, 256), (784, 576, 128), (3136, 64, 256)].iter().enumerate() {
/// #     let ms = (1 + t) as f64 * (1e-6 * (n * k * m) as f64 + 0.1);
/// #     cal.samples.push(Sample { name: format!("s{i}"), desc: LayerDesc::new(Op::Gemm, n, k, m, 32),
/// #         core_type: t, width: 1, ms });
/// # } }
/// // `cal`: GEMM samples of a machine whose worker 1 runs at half speed
/// let predictor = Predictor::fit(&cal)?;
/// let net = NetSpec::builder("n", Shape::new(16, 28, 28))
///     .conv_relu("c1", 16, 3, 1, 1)
///     .conv_relu("c2", 16, 3, 1, 1)
///     .build()?;
/// // two identical layers, one on each worker
/// let mut measure = PredictedMeasure::new(predictor.clone(), describe(&net), predictor.core_types())?;
/// let t = measure.stage_times(&Configuration::contiguous(&[1, 1], 2)?)?;
/// assert!((t.stage_ms[1] / t.stage_ms[0] - 2.0).abs() < 1e-9);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct PredictedMeasure {
    predictor: Predictor,
    units: Vec<UnitDesc>,
    /// The core type of each worker.
    worker_type: Vec<usize>,
    measurements: u64,
}

impl PredictedMeasure {
    /// Predicts configurations of a net of `units` on workers grouped into `core_types`
    /// (index = the predictor's core type; usually [`Predictor::core_types`]).
    ///
    /// # Errors
    /// [`PredictError::UnknownCoreType`] when there are more core types than the predictor
    /// knows. Workers in no core type are reported by [`Measure::stage_times`] when a stage
    /// uses one.
    pub fn new(
        predictor: Predictor,
        units: Vec<UnitDesc>,
        core_types: &[CoreType],
    ) -> Result<PredictedMeasure, PredictError> {
        let known = predictor.core_types().len();
        if core_types.len() > known {
            return Err(PredictError::UnknownCoreType {
                core_type: core_types.len() - 1,
                types: known,
            });
        }
        let workers = core_types
            .iter()
            .map(|c| c.leader.saturating_add(c.cores))
            .max()
            .unwrap_or(0);
        let mut worker_type = vec![usize::MAX; workers];
        for (t, c) in core_types.iter().enumerate() {
            for w in c.workers() {
                worker_type[w] = t;
            }
        }
        Ok(PredictedMeasure {
            predictor,
            units,
            worker_type,
            measurements: 0,
        })
    }

    /// The predictor.
    pub fn predictor(&self) -> &Predictor {
        &self.predictor
    }

    /// The units predicted.
    pub fn units(&self) -> &[UnitDesc] {
        &self.units
    }

    /// Calls of [`Measure::stage_times`] so far.
    pub fn measurements(&self) -> u64 {
        self.measurements
    }
}

impl Measure for PredictedMeasure {
    fn stage_times(&mut self, config: &Configuration) -> Result<StageTimes, MeasureError> {
        config.validate(self.units.len(), self.worker_type.len())?;
        self.measurements += 1;
        let mut stage_ms = Vec::with_capacity(config.stage_count());
        for (range, stage) in config.unit_ranges().into_iter().zip(config.stages()) {
            let mut types: Vec<usize> = stage.workers().map(|w| self.worker_type[w]).collect();
            types.sort_unstable();
            types.dedup();
            if types.contains(&usize::MAX) {
                return Err(MeasureError::Platform {
                    reason: format!(
                        "{config}: a worker of place {}+{} belongs to no core type",
                        stage.leader, stage.width
                    ),
                });
            }
            let mut slowest: f64 = 0.0;
            for t in types {
                let ms = self.units[range.clone()].iter().try_fold(0.0, |sum, u| {
                    Ok::<f64, PredictError>(sum + self.predictor.unit_ms(u, t, stage.width)?)
                });
                let ms = ms.map_err(|e| MeasureError::Failed {
                    reason: format!("{config}: {e}"),
                })?;
                slowest = slowest.max(ms);
            }
            stage_ms.push(slowest);
        }
        Ok(StageTimes::new(stage_ms))
    }
}
