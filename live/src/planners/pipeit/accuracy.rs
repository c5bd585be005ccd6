//! Prediction error against measured unit times, per core type and width: the paper's
//! Table III for our nets.

use serde::{Deserialize, Serialize};

use super::desc::UnitDesc;
use super::predict::{PredictError, Predictor};

/// One measured unit time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UnitTime {
    /// Index of the unit in the net.
    pub unit: usize,
    /// Core type it ran on.
    pub core_type: usize,
    /// Cores of that type.
    pub width: usize,
    /// Measured time (a median), ms.
    pub ms: f64,
}

/// One unit's prediction next to its measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccuracyRow {
    /// Index of the unit.
    pub unit: usize,
    /// Its name.
    pub name: String,
    /// Whether it holds a convolution, depthwise ones included ([`UnitDesc::has_conv`]).
    pub gemm: bool,
    /// Core type.
    pub core_type: usize,
    /// Width.
    pub width: usize,
    /// Measured, ms.
    pub measured_ms: f64,
    /// Predicted, ms.
    pub predicted_ms: f64,
    /// `(predicted − measured) / measured`, in %.
    pub error_pct: f64,
}

/// Mean and largest |error| of a set of rows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ErrorStats {
    /// Rows.
    pub count: usize,
    /// Mean |error|, %.
    pub mean_abs_pct: f64,
    /// Largest |error|, %.
    pub max_abs_pct: f64,
}

impl ErrorStats {
    fn of<'a>(rows: impl Iterator<Item = &'a AccuracyRow>) -> ErrorStats {
        ErrorStats::of_errors(rows.map(|r| r.error_pct))
    }

    /// Of errors in % (their sign ignored).
    pub(crate) fn of_errors(errors: impl Iterator<Item = f64>) -> ErrorStats {
        let (mut count, mut sum, mut max) = (0usize, 0.0f64, 0.0f64);
        for e in errors {
            count += 1;
            sum += e.abs();
            max = max.max(e.abs());
        }
        ErrorStats {
            count,
            mean_abs_pct: if count == 0 { 0.0 } else { sum / count as f64 },
            max_abs_pct: max,
        }
    }
}

/// The errors of one (core type, width): over the units that hold a convolution (Table
/// III's "GEMM execution time … averaged across all convolutional layers"; a depthwise
/// convolution counts, as MobileNet's "Conv DW" layers do in the paper) and over all.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AccuracyCell {
    /// Core type.
    pub core_type: usize,
    /// Width.
    pub width: usize,
    /// Units holding a convolution ([`UnitDesc::has_conv`]).
    pub gemm: ErrorStats,
    /// All units.
    pub all: ErrorStats,
}

/// Predictions against measurements of one net.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Accuracy {
    /// One row per measurement, in the order given.
    pub rows: Vec<AccuracyRow>,
    /// One cell per (core type, width) measured, ascending.
    pub cells: Vec<AccuracyCell>,
}

/// Predicts every measured unit time and summarises the errors.
///
/// # Errors
/// A prediction that fails ([`Predictor::unit_ms`]), or
/// [`PredictError::BadSample`] for a measurement of a unit index out of range or with a
/// time that is not finite and positive (the index is the measurement's).
///
/// ```
/// use taopipe_live::planners::pipeit::{accuracy, LayerDesc, Op, UnitDesc, UnitTime};
/// # use taopipe_live::planners::pipeit::{Calibration, CoreType, MachineInfo, Predictor, Sample};
/// # let mut cal = Calibration::new(MachineInfo { description: "doc".into(), workers: 1,
/// #     core_types: vec![CoreType::new(0, 1)] });
/// # for (i, &(n, k, m)) in [(49, 9, 8), (196, 27, 16), (784, 64, 32), (3136, 144, 64),
/// #     (49, 4608, 512), (12544, 27, 64), (196, 1152, 256), (784, 576, 128), (3136, 64, 256)].iter().enumerate() {
/// #     cal.samples.push(Sample { name: format!("s{i}"), desc: LayerDesc::new(Op::Gemm, n, k, m, 32),
/// #         core_type: 0, width: 1, ms: 1e-6 * (n * k * m) as f64 + 0.1 });
/// # }
/// # let predictor = Predictor::fit(&cal)?;
/// // `predictor`: 1 ns per multiply-add + 0.1 ms
/// let units = vec![UnitDesc { name: "c".into(), layers: vec![LayerDesc::new(Op::Gemm, 1000, 100, 100, 25)] }];
/// let measured = [UnitTime { unit: 0, core_type: 0, width: 1, ms: 10.1 * 1.1 }];
/// let acc = accuracy(&predictor, &units, &measured)?;
/// assert!((acc.rows[0].error_pct + 100.0 / 11.0).abs() < 1e-6); // 10 % slower than predicted
/// assert_eq!(acc.cells[0].gemm.count, 1);
/// # Ok::<(), taopipe_live::planners::pipeit::PredictError>(())
/// ```
pub fn accuracy(
    predictor: &Predictor,
    units: &[UnitDesc],
    measured: &[UnitTime],
) -> Result<Accuracy, PredictError> {
    let mut rows = Vec::with_capacity(measured.len());
    for (index, m) in measured.iter().enumerate() {
        let Some(unit) = units.get(m.unit) else {
            return Err(PredictError::BadSample {
                index,
                reason: format!("unit {} of a net of {} units", m.unit, units.len()),
            });
        };
        if !(m.ms.is_finite() && m.ms > 0.0) {
            return Err(PredictError::BadSample {
                index,
                reason: format!("time {} ms (needs a finite time > 0)", m.ms),
            });
        }
        let predicted_ms = predictor.unit_ms(unit, m.core_type, m.width)?;
        rows.push(AccuracyRow {
            unit: m.unit,
            name: unit.name.clone(),
            gemm: unit.has_conv(),
            core_type: m.core_type,
            width: m.width,
            measured_ms: m.ms,
            predicted_ms,
            error_pct: (predicted_ms - m.ms) / m.ms * 100.0,
        });
    }
    let mut keys: Vec<(usize, usize)> = rows.iter().map(|r| (r.core_type, r.width)).collect();
    keys.sort_unstable();
    keys.dedup();
    let cells = keys
        .into_iter()
        .map(|(core_type, width)| {
            let here = || {
                rows.iter()
                    .filter(move |r| r.core_type == core_type && r.width == width)
            };
            AccuracyCell {
                core_type,
                width,
                gemm: ErrorStats::of(here().filter(|r| r.gemm)),
                all: ErrorStats::of(here()),
            }
        })
        .collect();
    Ok(Accuracy { rows, cells })
}
