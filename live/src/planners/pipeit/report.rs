//! The report of a calibration: the fitted predictor, how well it fits its own grid, and
//! how well it predicts the units of real nets (the `calibrate` tool's `--json`).

use serde::Serialize;

use super::accuracy::{Accuracy, ErrorStats};
use super::desc::Op;
use super::dse::Plan;
use super::predict::{Calibration, MachineInfo, MultiCore, Predictor};

/// A calibrated predictor and its accuracy: the machine it was calibrated on, each fitted
/// model with its in-sample error, and, per net checked, the errors on its units (Table
/// III) and the pipeline planned from the predictions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationReport {
    /// The machine the calibration was taken on.
    pub machine: MachineInfo,
    /// One entry per core type and kind of layer that has a fitted model, core types in
    /// order, kinds in [`Op::FITTED`] order.
    pub fit: Vec<FitReport>,
    /// The nets checked against measurements (empty when none was).
    pub nets: Vec<NetAccuracy>,
}

/// One fitted model of the predictor (one core type, one kind of layer).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FitReport {
    /// The core type (0 = the fastest).
    pub core_type: usize,
    /// The kind of layer.
    pub op: Op,
    /// Eq. 5's coefficients on one core (ms per term; [`Op::terms`] of them).
    pub beta: Vec<f64>,
    /// The multi-core model (Eq. 6–8), if the calibration had samples on 2 or more cores.
    pub multi_core: Option<MultiCore>,
    /// Single-core samples it was fitted on.
    pub samples: usize,
    /// Multi-core samples it was fitted on.
    pub multi_samples: usize,
    /// Mean and largest |error| % of its predictions of the calibration's own samples of
    /// this core type and kind, at every width (in-sample: how well the model's form fits,
    /// not how well it predicts other layers); `None` if none could be predicted.
    pub grid_error: Option<ErrorStats>,
}

/// The predictor against one net's measured units.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NetAccuracy {
    /// The net's name.
    pub net: String,
    /// Predictions against measurements, per unit and per (core type, width).
    pub accuracy: Accuracy,
    /// The pipeline Pipe-it plans for the net from the predictions.
    pub plan: Plan,
}

impl CalibrationReport {
    /// The report of `predictor`, fitted on `cal`, before any net is checked (push those
    /// to [`CalibrationReport::nets`]).
    pub fn new(cal: &Calibration, predictor: &Predictor) -> CalibrationReport {
        let fit = (0..predictor.core_types().len())
            .flat_map(|t| Op::FITTED.into_iter().map(move |op| (t, op)))
            .filter_map(|(core_type, op)| {
                let model = predictor.model(op, core_type)?;
                Some(FitReport {
                    core_type,
                    op,
                    beta: model.beta.clone(),
                    multi_core: model.multi,
                    samples: model.samples,
                    multi_samples: model.multi_samples,
                    grid_error: grid_error(cal, predictor, core_type, op),
                })
            })
            .collect();
        CalibrationReport {
            machine: cal.machine.clone(),
            fit,
            nets: Vec::new(),
        }
    }
}

/// [`FitReport::grid_error`].
fn grid_error(
    cal: &Calibration,
    predictor: &Predictor,
    core_type: usize,
    op: Op,
) -> Option<ErrorStats> {
    let errors: Vec<f64> = cal
        .samples
        .iter()
        .filter(|s| s.core_type == core_type && s.desc.op == op)
        .filter_map(|s| {
            let predicted = predictor.layer_ms(&s.desc, s.core_type, s.width).ok()?;
            Some((predicted - s.ms) / s.ms * 100.0)
        })
        .collect();
    (!errors.is_empty()).then(|| ErrorStats::of_errors(errors.into_iter()))
}
