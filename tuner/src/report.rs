//! The serialisable trial log and result of a search (JSON), and a human table.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{Configuration, SearchResult, StopReason, Trial};

/// The best configuration of a [`Report`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BestRecord {
    /// The configuration.
    pub configuration: Configuration,
    /// Milliseconds per stage.
    pub stage_ms: Vec<f64>,
    /// Its slowest stage.
    pub slowest_ms: f64,
}

/// A search's trial log and result, as written to JSON:
///
/// ```json
/// { "algorithm": "pipe-search", "alpha": 10,
///   "trials": [ { "configuration": { "stages": [ {"units": 3, "leader": 0, "width": 2}, … ] },
///                 "stage_ms": [ … ], "slowest_ms": 12.0, "phase": "seed", "rank": 1 }, … ],
///   "tuning_s": 0.0012, "stopped": "confidence",
///   "best": { "configuration": { … }, "stage_ms": [ … ], "slowest_ms": 11.1 } }
/// ```
///
/// ```
/// use taopipe_dsl::{Seeds, SYNTH1};
/// use taopipe_tuner::{PipeSearch, Report, SimulatedPlatform};
///
/// let costs: Vec<f64> = SYNTH1.iter().map(|&w| w as f64).collect();
/// let mut sim = SimulatedPlatform::symmetric(costs, 4);
/// let result = PipeSearch::new(2, 4).run(&Seeds::new(&SYNTH1, 4)?, &mut sim)?;
/// let report = Report::new("pipe-search", Some(2), &result);
/// let json = report.to_json()?;
/// assert_eq!(Report::from_json(&json)?, report);
/// println!("{report}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Which search (`"pipe-search"`, `"exhaustive"`, …).
    pub algorithm: String,
    /// α, for the searches that have one.
    pub alpha: Option<usize>,
    /// Every measured configuration, in order.
    pub trials: Vec<Trial>,
    /// Tuning time in seconds.
    pub tuning_s: f64,
    /// Why the search stopped.
    pub stopped: StopReason,
    /// The best configuration.
    pub best: BestRecord,
}

impl Report {
    /// The report of `result`.
    pub fn new(algorithm: &str, alpha: Option<usize>, result: &SearchResult) -> Self {
        Report {
            algorithm: algorithm.to_owned(),
            alpha,
            trials: result.trials.clone(),
            tuning_s: result.tuning.as_secs_f64(),
            stopped: result.stopped,
            best: BestRecord {
                configuration: result.best.clone(),
                stage_ms: result.best_times.stage_ms.clone(),
                slowest_ms: result.best_ms(),
            },
        }
    }

    /// Pretty-printed JSON.
    ///
    /// # Errors
    ///
    /// A non-finite time cannot be written as JSON.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self)
    }

    /// Reads a report back.
    ///
    /// # Errors
    ///
    /// Malformed JSON or missing fields.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }
}

impl fmt::Display for Report {
    /// One line per trial (`#`, phase, rank, configuration, slowest stage), the best marked
    /// with `*`, then a summary line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:>5}  {:<10} {:>5}  {:<32} {:>12}",
            "trial", "phase", "rank", "configuration", "slowest ms"
        )?;
        for (i, t) in self.trials.iter().enumerate() {
            let rank = t.rank.map_or_else(|| "-".to_owned(), |r| r.to_string());
            let mark = if t.configuration == self.best.configuration {
                "*"
            } else {
                ""
            };
            writeln!(
                f,
                "{:>5}  {:<10} {:>5}  {:<32} {:>12.3}{mark}",
                i + 1,
                format!("{:?}", t.phase).to_lowercase(),
                rank,
                t.configuration.to_string(),
                t.slowest_ms
            )?;
        }
        let alpha = self
            .alpha
            .map_or_else(String::new, |a| format!(" (α = {a})"));
        write!(
            f,
            "{}{alpha}: best {} at {:.3} ms after {} trials, {:.3} s, stopped: {:?}",
            self.algorithm,
            self.best.configuration,
            self.best.slowest_ms,
            self.trials.len(),
            self.tuning_s,
            self.stopped
        )
    }
}

#[cfg(test)]
mod test;
