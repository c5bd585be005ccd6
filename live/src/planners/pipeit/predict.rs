//! The per-layer time predictor: the single-core regression of Eq. 5 and the multi-core
//! model of Eq. 6–8, per core type, fitted by least squares from a [`Calibration`].

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::desc::{LayerDesc, Op, UnitDesc};
use super::lstsq::lstsq;
use taopipe_tuner::median;

/// The format of [`Calibration`] files this crate writes and reads.
///
/// Still 1 since [`Op::Depthwise`] joined: a file saved before has the same fields and
/// kinds of sample, so it loads and fits as it did. It has no depthwise samples, so
/// predicting a depthwise convolution from it fails with [`PredictError::NoModel`]; other
/// layers predict as before. (A file that names a kind this build does not know fails to
/// load with [`PredictError::Json`], naming the kind.)
pub const CALIBRATION_VERSION: u32 = 1;

/// One core type: a run of identical workers (a `taopipe_live::devices` device), fastest first
/// in [`MachineInfo::core_types`], so type 0 is the paper's *B*ig cluster.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CoreType {
    /// First worker.
    pub leader: usize,
    /// Workers (`H_B`, `H_s`).
    pub cores: usize,
    /// Their speed factor when calibrated (1.0 = full speed; emulation slows).
    pub speed: f64,
    /// Their topology cluster.
    pub cluster: usize,
}

impl CoreType {
    /// `cores` workers from `leader` at full speed, cluster 0.
    ///
    /// ```
    /// use taopipe_live::planners::pipeit::CoreType;
    /// assert_eq!(CoreType::new(4, 2).workers(), 4..6);
    /// ```
    pub fn new(leader: usize, cores: usize) -> CoreType {
        CoreType {
            leader,
            cores,
            speed: 1.0,
            cluster: 0,
        }
    }

    /// Its workers.
    pub fn workers(&self) -> std::ops::Range<usize> {
        self.leader..self.leader.saturating_add(self.cores)
    }
}

/// The machine a calibration was taken on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineInfo {
    /// Free text: CPU model, topology source, emulation.
    pub description: String,
    /// Workers of the runtime.
    pub workers: usize,
    /// The core types, fastest first.
    pub core_types: Vec<CoreType>,
}

/// One micro-benchmark measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// What was run (for people reading the file).
    pub name: String,
    /// The layer.
    pub desc: LayerDesc,
    /// Index into [`MachineInfo::core_types`].
    pub core_type: usize,
    /// Workers of that type it ran on.
    pub width: usize,
    /// Measured time (a median of repetitions), milliseconds.
    pub ms: f64,
}

/// Micro-benchmark samples and the machine they were taken on: what a user measures once per
/// device and saves as JSON.
///
/// ```
/// use taopipe_live::planners::pipeit::{Calibration, CoreType, MachineInfo};
///
/// let cal = Calibration::new(MachineInfo {
///     description: "test".into(),
///     workers: 2,
///     core_types: vec![CoreType::new(0, 2)],
/// });
/// let back = Calibration::from_json(&cal.to_json())?;
/// assert_eq!(back, cal);
/// assert!(Calibration::from_json("{").is_err());
/// # Ok::<(), taopipe_live::planners::pipeit::PredictError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// [`CALIBRATION_VERSION`] when written.
    pub version: u32,
    /// The machine.
    pub machine: MachineInfo,
    /// The measurements.
    pub samples: Vec<Sample>,
}

impl Calibration {
    /// No samples yet.
    pub fn new(machine: MachineInfo) -> Calibration {
        Calibration {
            version: CALIBRATION_VERSION,
            machine,
            samples: Vec::new(),
        }
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Reads JSON written by [`Calibration::to_json`].
    ///
    /// # Errors
    /// [`PredictError::Json`] for text that is not a calibration, [`PredictError::Version`]
    /// for another format version.
    pub fn from_json(text: &str) -> Result<Calibration, PredictError> {
        let cal: Calibration =
            serde_json::from_str(text).map_err(|e| PredictError::Json(e.to_string()))?;
        if cal.version != CALIBRATION_VERSION {
            return Err(PredictError::Version {
                found: cal.version,
                expected: CALIBRATION_VERSION,
            });
        }
        Ok(cal)
    }
}

/// Why a predictor could not be fitted or could not predict. Each variant names the value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PredictError {
    /// The calibration text is not valid.
    #[error("calibration JSON: {0}")]
    Json(String),
    /// The calibration file has another format version.
    #[error("calibration format version {found}, this build reads version {expected}")]
    Version {
        /// Version in the file.
        found: u32,
        /// Version this build reads.
        expected: u32,
    },
    /// A sample is unusable.
    #[error("calibration sample {index}: {reason}")]
    BadSample {
        /// Its index in [`Calibration::samples`].
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// A kind of layer has samples on a core type, but fewer than its terms.
    #[error("{op} on core type {core_type}: {got} single-core samples, the model has {need} terms")]
    TooFewSamples {
        /// The kind.
        op: Op,
        /// The core type.
        core_type: usize,
        /// Distinct single-core samples.
        got: usize,
        /// Terms of its regression.
        need: usize,
    },
    /// The samples do not determine the regression (e.g. one size never varies).
    #[error("{op} on core type {core_type}: the samples determine only {rank} of {terms} terms")]
    Singular {
        /// The kind.
        op: Op,
        /// The core type.
        core_type: usize,
        /// Independent terms.
        rank: usize,
        /// Terms of the regression.
        terms: usize,
    },
    /// A core type the predictor does not have.
    #[error("core type {core_type}: the calibration has {types} core types")]
    UnknownCoreType {
        /// Asked for.
        core_type: usize,
        /// Known.
        types: usize,
    },
    /// A prediction on 0 cores.
    #[error("width 0 on core type {core_type}: a layer needs at least one core")]
    ZeroWidth {
        /// The core type.
        core_type: usize,
    },
    /// The calibration has no single-core samples of this kind on this core type: its grid
    /// had none (a calibration saved before `depthwise` layers joined the default grid has
    /// none of them, so it still predicts VGG16, AlexNet or ResNet50 but not MobileNet).
    #[error(
        "no calibration samples of {op} layers on core type {core_type} (the calibration's \
         grid had none; calibrate again with this build's default grid)"
    )]
    NoModel {
        /// The kind.
        op: Op,
        /// The core type.
        core_type: usize,
    },
    /// A worker belongs to no core type of the predictor.
    #[error("worker {worker} of {workers} belongs to no calibrated core type")]
    UncoveredWorker {
        /// The worker.
        worker: usize,
        /// Workers asked for.
        workers: usize,
    },
    /// The calibration has no multi-core samples of this kind on this core type.
    #[error(
        "no multi-core calibration samples of {op} layers on core type {core_type} (asked for width {width})"
    )]
    NoMultiCoreModel {
        /// The kind.
        op: Op,
        /// The core type.
        core_type: usize,
        /// The width asked for.
        width: usize,
    },
}

/// The fitted model of one kind of layer on one core type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpModel {
    /// Eq. 5's `β` (one per term of [`LayerDesc::features`]), in ms.
    pub beta: Vec<f64>,
    /// The multi-core model; `None` without samples on 2 or more cores.
    pub multi: Option<MultiCore>,
    /// Single-core samples fitted.
    pub samples: usize,
    /// Multi-core samples fitted.
    pub multi_samples: usize,
}

impl OpModel {
    /// Eq. 5: the single-core time of `desc`, at least 0.
    pub fn single_ms(&self, desc: &LayerDesc) -> f64 {
        let t: f64 = self
            .beta
            .iter()
            .zip(desc.features())
            .map(|(b, f)| b * f)
            .sum();
        t.max(0.0)
    }
}

/// The multi-core model of one kind of layer on one core type (see the
/// [module docs](super#the-predictor)).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MultiCore {
    /// Eq. 6–8's `(α₁, α₂, α₃)`, ms.
    pub alpha: [f64; 3],
    /// `ρ`: the fraction of the single-core time that every thread repeats (our addition).
    pub repeated: f64,
}

impl MultiCore {
    /// Eq. 8 on our kernels: a layer of single-core time `t1` in `iters` equal chunks on
    /// `width` cores takes `ρ·T₁ + T_iter · ⌈iters / width⌉ + α₃` with
    /// `T_iter = ((1 − ρ)·T₁ − α₁) / iters + α₂`; at least 0.
    ///
    /// ```
    /// use taopipe_live::planners::pipeit::MultiCore;
    /// let m = MultiCore { alpha: [0.0, 0.0, 0.0], repeated: 0.0 };
    /// assert_eq!(m.ms(10.0, 5, 2), 6.0); // the busiest thread does 3 of 5 chunks
    /// let m = MultiCore { alpha: [0.0, 0.0, 0.5], repeated: 0.2 };
    /// assert_eq!(m.ms(10.0, 4, 4), 2.0 + 2.0 + 0.5);
    /// ```
    pub fn ms(&self, t1: f64, iters: u64, width: usize) -> f64 {
        let n = iters.max(1) as f64;
        let busiest = iters.max(1).div_ceil(width.max(1) as u64) as f64;
        let repeated = self.repeated * t1;
        let [a1, a2, a3] = self.alpha;
        (repeated + ((t1 - repeated - a1) / n + a2) * busiest + a3).max(0.0)
    }
}

/// Predicted layer times per core type and width (see the [module docs](super)).
///
/// ```
/// use taopipe_live::planners::pipeit::{Calibration, CoreType, LayerDesc, MachineInfo, Op, Predictor, Sample};
///
/// // A machine where a GEMM takes 1 ns per multiply-add plus 0.1 ms (noise-free).
/// let mut cal = Calibration::new(MachineInfo {
///     description: "synthetic".into(),
///     workers: 1,
///     core_types: vec![CoreType::new(0, 1)],
/// });
/// for (i, &(n, k, m)) in [(49, 9, 8), (196, 27, 16), (784, 64, 32), (3136, 144, 64), (49, 4608, 512),
///                          (12544, 27, 64), (196, 1152, 256), (784, 576, 128), (3136, 64, 256)].iter().enumerate() {
///     let desc = LayerDesc::new(Op::Gemm, n, k, m, 32);
///     let ms = 1e-6 * (n * k * m) as f64 + 0.1;
///     cal.samples.push(Sample { name: format!("s{i}"), desc, core_type: 0, width: 1, ms });
/// }
/// let p = Predictor::fit(&cal)?;
/// let layer = LayerDesc::new(Op::Gemm, 1000, 100, 100, 25);
/// assert!((p.layer_ms(&layer, 0, 1)? - 10.1).abs() < 1e-6);
/// # Ok::<(), taopipe_live::planners::pipeit::PredictError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Predictor {
    core_types: Vec<CoreType>,
    /// `models[type][Op::index]`.
    models: Vec<Vec<Option<OpModel>>>,
}

impl Predictor {
    /// Fits every kind of layer on every core type that the calibration has single-core
    /// samples of (Eq. 5), and its multi-core model (Eq. 6–8) where it has samples on 2 or
    /// more cores. Least squares on relative residuals; see the [module docs](super).
    ///
    /// # Errors
    /// [`PredictError::BadSample`] for a sample on an unknown core type, on 0 cores, with a
    /// time that is not finite and positive, or with sizes of 0 for a fitted kind;
    /// [`PredictError::TooFewSamples`] or [`PredictError::Singular`] when a kind's
    /// single-core samples cannot determine its terms.
    pub fn fit(cal: &Calibration) -> Result<Predictor, PredictError> {
        let types = cal.machine.core_types.len();
        for (index, s) in cal.samples.iter().enumerate() {
            let bad = |reason: String| Err(PredictError::BadSample { index, reason });
            if s.core_type >= types {
                return bad(format!("core type {} of {types} core types", s.core_type));
            }
            if s.width == 0 {
                return bad("width 0".into());
            }
            if !(s.ms.is_finite() && s.ms > 0.0) {
                return bad(format!("time {} ms (needs a finite time > 0)", s.ms));
            }
            if s.desc.op == Op::Free {
                return bad("a layer that runs no task cannot be calibrated".into());
            }
            if s.desc.n == 0 || s.desc.k == 0 || s.desc.m == 0 {
                return bad(format!("zero size in {}", s.desc));
            }
        }
        let mut models = Vec::with_capacity(types);
        for t in 0..types {
            let mut row = Vec::with_capacity(Op::FITTED.len());
            for op in Op::FITTED {
                row.push(fit_op(cal, op, t)?);
            }
            models.push(row);
        }
        Ok(Predictor {
            core_types: cal.machine.core_types.clone(),
            models,
        })
    }

    /// The core types, fastest first (as calibrated).
    pub fn core_types(&self) -> &[CoreType] {
        &self.core_types
    }

    /// The fitted model of `op` on `core_type`, if the calibration had samples of it.
    pub fn model(&self, op: Op, core_type: usize) -> Option<&OpModel> {
        self.models.get(core_type)?.get(op.index()?)?.as_ref()
    }

    /// The predicted time of one layer on `width` cores of `core_type`: Eq. 5 on one core,
    /// Eq. 8 on more; 0 for [`Op::Free`].
    ///
    /// # Errors
    /// An unknown core type, width 0, or a kind the calibration has no (multi-core)
    /// samples of.
    pub fn layer_ms(
        &self,
        desc: &LayerDesc,
        core_type: usize,
        width: usize,
    ) -> Result<f64, PredictError> {
        if core_type >= self.core_types.len() {
            return Err(PredictError::UnknownCoreType {
                core_type,
                types: self.core_types.len(),
            });
        }
        if width == 0 {
            return Err(PredictError::ZeroWidth { core_type });
        }
        if desc.op == Op::Free {
            return Ok(0.0);
        }
        let model = self
            .model(desc.op, core_type)
            .ok_or(PredictError::NoModel {
                op: desc.op,
                core_type,
            })?;
        let t1 = model.single_ms(desc);
        if width == 1 {
            return Ok(t1);
        }
        let multi = model.multi.ok_or(PredictError::NoMultiCoreModel {
            op: desc.op,
            core_type,
            width,
        })?;
        Ok(multi.ms(t1, desc.iters, width))
    }

    /// The predicted time of a pipeline unit: the sum over its layers (Eq. 9 within a unit).
    ///
    /// # Errors
    /// As [`Predictor::layer_ms`].
    pub fn unit_ms(
        &self,
        unit: &UnitDesc,
        core_type: usize,
        width: usize,
    ) -> Result<f64, PredictError> {
        unit.layers
            .iter()
            .try_fold(0.0, |sum, l| Ok(sum + self.layer_ms(l, core_type, width)?))
    }
}

/// Fits one kind on one core type; `None` without single-core samples of it.
fn fit_op(cal: &Calibration, op: Op, core_type: usize) -> Result<Option<OpModel>, PredictError> {
    // median time of each distinct (desc, width) on this type
    let mut by_point: HashMap<(LayerDesc, usize), Vec<f64>> = HashMap::new();
    for s in &cal.samples {
        if s.core_type == core_type && s.desc.op == op {
            by_point.entry((s.desc, s.width)).or_default().push(s.ms);
        }
    }
    let mut points: Vec<(LayerDesc, usize, f64)> = by_point
        .into_iter()
        .filter_map(|((d, w), v)| Some((d, w, median(&v)?)))
        .collect();
    // a fixed order, so the fit does not depend on the hash map's
    points.sort_by(|a, b| {
        (a.0.n, a.0.k, a.0.m, a.0.iters, a.1).cmp(&(b.0.n, b.0.k, b.0.m, b.0.iters, b.1))
    });
    let single: Vec<&(LayerDesc, usize, f64)> = points.iter().filter(|p| p.1 == 1).collect();
    if single.is_empty() {
        return Ok(None);
    }
    let terms = op.terms();
    if single.len() < terms {
        return Err(PredictError::TooFewSamples {
            op,
            core_type,
            got: single.len(),
            need: terms,
        });
    }
    // relative residuals: each row divided by its measured time
    let rows: Vec<Vec<f64>> = single
        .iter()
        .map(|(d, _, t)| d.features().iter().map(|f| f / t).collect())
        .collect();
    let ones = vec![1.0; rows.len()];
    let fit = lstsq(&rows, &ones).ok_or(PredictError::Singular {
        op,
        core_type,
        rank: 0,
        terms,
    })?;
    if fit.rank < terms {
        return Err(PredictError::Singular {
            op,
            core_type,
            rank: fit.rank,
            terms,
        });
    }
    let t1_of: HashMap<LayerDesc, f64> = single.iter().map(|(d, _, t)| (*d, *t)).collect();
    // Eq. 8 rearranged, with c = ⌈n/w⌉:
    // T_w − T₁·c/n = −α₁·c/n + α₂·c + α₃ + ρ·T₁·(1 − c/n)
    let mut rows = Vec::new();
    let mut targets = Vec::new();
    for (d, w, t) in points.iter().filter(|p| p.1 >= 2) {
        let Some(&t1) = t1_of.get(d) else { continue };
        let n = d.iters.max(1) as f64;
        let c = d.iters.max(1).div_ceil(*w as u64) as f64;
        rows.push(vec![-c / n / t, c / t, 1.0 / t, t1 * (1.0 - c / n) / t]);
        targets.push((t - t1 * c / n) / t);
    }
    let multi = if rows.is_empty() {
        None
    } else {
        lstsq(&rows, &targets).map(|s| MultiCore {
            alpha: [s.x[0], s.x[1], s.x[2]],
            repeated: s.x[3],
        })
    };
    Ok(Some(OpModel {
        beta: fit.x,
        multi,
        samples: single.len(),
        multi_samples: rows.len(),
    }))
}
