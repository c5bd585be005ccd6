//! The report of every planner run on the same machine state (the `compare` tool).

use serde::Serialize;

use super::{Latency, MachineReport};

/// Every planner on one net under the same conditions (same runtime, same emulated speeds,
/// same frames), one row each in the order run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareReport {
    /// The net's name.
    pub net: String,
    /// The workers, their speeds and devices before the first planner.
    #[serde(flatten)]
    pub machine: MachineReport,
    /// Frames each planner's plan ran for its measured columns.
    pub frames: u64,
    /// Pipe-search's confidence α (its stopping rule: trials without improvement).
    pub alpha: usize,
    /// One row per planner.
    pub rows: Vec<PlannerRow>,
    /// Whether a stop (an interrupt) cut the planners short: the planner it came during has
    /// a row `interrupted`, and no later planner ran.
    pub partial: bool,
}

/// One planner's plan, what it predicted and what it measured.
///
/// A row is made by [`PlannerRow::ran`] from the measured stream, then given its
/// prediction ([`PlannerRow::predicting_stages`] or [`PlannerRow::predicting_frame`]) and
/// its planning cost ([`PlannerRow::planned`]); or by [`PlannerRow::skipped`] or
/// [`PlannerRow::failed`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannerRow {
    /// The planner (`pipe-it`, `pipe-search`, `mosaic`, …).
    pub planner: String,
    /// How its plan runs frames: `pipeline`, `switch` (one frame at a time, run after
    /// run), `split` (one frame at a time, layers split between two devices),
    /// `layer-parallel`; `-` when it did not run, `FAILED` when it failed.
    pub mode: String,
    /// The plan, in the planner's own notation.
    pub configuration: String,
    /// Frames per second the planner predicted for its plan.
    pub predicted_fps: Option<f64>,
    /// Frames per second measured over the stream.
    pub measured_fps: Option<f64>,
    /// Latency per frame the planner predicted, ms.
    pub predicted_latency_ms: Option<f64>,
    /// Median measured latency per frame, ms.
    pub measured_latency_ms: Option<f64>,
    /// 99th-percentile measured latency per frame, ms.
    pub measured_latency_p99_ms: Option<f64>,
    /// Planning or tuning time, s, including the profiling or calibration it needed.
    pub plan_s: f64,
    /// Configurations measured while planning.
    pub trials: usize,
    /// Why a planner did not run, or what to know about its row.
    pub note: Option<String>,
    /// Why the planner failed (its error chain).
    pub error: Option<String>,
}

impl PlannerRow {
    /// The row of `planner`'s plan (`configuration`, run in `mode`) that measured `fps`
    /// frames per second and `latency`; no prediction, no planning time, no trials yet.
    pub fn ran(
        planner: &str,
        mode: &str,
        configuration: String,
        fps: f64,
        latency: Latency,
    ) -> PlannerRow {
        PlannerRow {
            mode: mode.into(),
            configuration,
            measured_fps: Some(fps),
            measured_latency_ms: Some(latency.p50),
            measured_latency_p99_ms: Some(latency.p99),
            note: None,
            ..PlannerRow::skipped(planner, String::new())
        }
    }

    /// With a pipeline's predicted stage times, ms: frames leave at the pace of the
    /// slowest stage, and a frame crosses every stage (`1 / max`, `Σ`).
    pub fn predicting_stages(self, stage_ms: &[f64]) -> PlannerRow {
        let slowest = stage_ms.iter().copied().fold(0.0, f64::max);
        PlannerRow {
            predicted_fps: Some(1e3 / slowest),
            predicted_latency_ms: Some(stage_ms.iter().sum()),
            ..self
        }
    }

    /// With the predicted time of one frame, ms, of a plan that runs one frame at a time:
    /// that is its latency, and its throughput is the inverse.
    pub fn predicting_frame(self, frame_ms: f64) -> PlannerRow {
        PlannerRow {
            predicted_fps: Some(1e3 / frame_ms),
            predicted_latency_ms: Some(frame_ms),
            ..self
        }
    }

    /// With the time planning took, s, and the configurations it measured.
    pub fn planned(self, plan_s: f64, trials: usize) -> PlannerRow {
        PlannerRow {
            plan_s,
            trials,
            ..self
        }
    }

    /// The row of a planner that did not run, and why (`interrupted`, or why it cannot
    /// run on this machine).
    pub fn skipped(planner: &str, why: String) -> PlannerRow {
        PlannerRow {
            planner: planner.into(),
            mode: "-".into(),
            configuration: "-".into(),
            predicted_fps: None,
            measured_fps: None,
            predicted_latency_ms: None,
            measured_latency_ms: None,
            measured_latency_p99_ms: None,
            plan_s: 0.0,
            trials: 0,
            note: Some(why),
            error: None,
        }
    }

    /// The row of a planner that failed, with its error (the whole chain, as one line).
    pub fn failed(planner: &str, error: String) -> PlannerRow {
        PlannerRow {
            mode: "FAILED".into(),
            note: None,
            error: Some(error),
            ..PlannerRow::skipped(planner, String::new())
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    const LATENCY: Latency = Latency {
        p50: 40.0,
        p99: 45.0,
    };

    #[test]
    fn a_pipeline_predicts_the_pace_of_its_slowest_stage_and_the_sum_as_latency() {
        let row = PlannerRow::ran("pipe-it", "pipeline", "8,13".into(), 24.0, LATENCY)
            .predicting_stages(&[20.0, 40.0, 10.0])
            .planned(1.5, 3);
        assert_eq!(row.predicted_fps, Some(25.0));
        assert_eq!(row.predicted_latency_ms, Some(70.0));
        assert_eq!(
            (
                row.measured_fps,
                row.measured_latency_ms,
                row.measured_latency_p99_ms
            ),
            (Some(24.0), Some(40.0), Some(45.0))
        );
        assert_eq!((row.plan_s, row.trials), (1.5, 3));
        assert_eq!((row.note, row.error), (None, None));
    }

    #[test]
    fn a_plan_of_one_frame_at_a_time_predicts_throughput_as_the_inverse_latency() {
        let row = PlannerRow::ran("mosaic", "switch", "0..21@0+2".into(), 9.0, LATENCY)
            .predicting_frame(100.0);
        assert_eq!(row.predicted_fps, Some(10.0));
        assert_eq!(row.predicted_latency_ms, Some(100.0));
    }

    #[test]
    fn skipped_and_failed_rows_measure_nothing() {
        let skipped = PlannerRow::skipped("codl", "one device".into());
        assert_eq!(
            (skipped.mode.as_str(), skipped.note.as_deref()),
            ("-", Some("one device"))
        );
        let failed = PlannerRow::failed("pipe-it", "the calibration x: bad".into());
        assert_eq!(failed.mode, "FAILED");
        assert_eq!((&failed.note, failed.measured_fps), (&None, None));
        let json = serde_json::to_value(&failed).expect("JSON");
        assert!(json["error"].is_string() && json["measured_fps"].is_null());
    }
}
