//! A warm re-tune: what the engine runs when the watch reports a change.
//!
//! It starts from the configuration that was serving, with the stage times it showed on
//! the live frames that revealed the change (logged as [`Phase::Current`], not measured
//! again), and from the worker speeds those frames imply ([`worker_speeds`]). The seed
//! lists are re-ranked for those speeds ([`speed_key`]), so the search's first trials are
//! already balanced for the new conditions, and Pipe-search (Alg. 2) runs from there. The
//! one-stage configuration stays a candidate ([`SearchResult::with_prior`]), so a re-tune
//! never ends on something slower than a configuration it measured.
//!
//! # Confirming the winner (a decision: noise can swap near-ties)
//! Live frames are noisy, and a trial's median of a few frames can put a configuration a
//! few percent slower ahead of the true best. So the finalists, every trial within
//! [`CONFIRM_MARGIN`] of the best (at most [`CONFIRM_MAX`] of them, the best included),
//! are measured once more, and each is ranked by the mean of its two measurements. The
//! extra trials are logged with the phase of their first measurement.

use std::time::Instant;

use taopipe_dsl::Seeds;

use crate::{
    Configuration, Measure, PipeSearch, SearchError, SearchResult, StageTimes, speed_key,
    worker_speeds,
};

/// Finalists are the trials within this fraction of the best time.
pub const CONFIRM_MARGIN: f64 = 0.05;
/// At most this many finalists are measured again.
pub const CONFIRM_MAX: usize = 2;

/// Where a re-tune starts.
#[derive(Debug, Clone, PartialEq)]
pub struct WarmStart<'a> {
    /// The configuration serving when the change was seen.
    pub current: &'a Configuration,
    /// Its stage times over the frames that showed the change.
    pub times: &'a StageTimes,
    /// Each worker's busy time per frame over those frames (or each worker's stage time).
    pub per_worker_ms: &'a [f64],
}

/// Re-tunes warm (module docs): Pipe-search with confidence `search.alpha` over seeds of
/// unit `weights` (at most `max_stages` stages), ranked for the speeds `start` implies.
///
/// ```
/// use taopipe_dsl::SYNTH1;
/// use taopipe_tuner::{Configuration, Measure, PipeSearch, SimulatedPlatform, WarmStart, retune};
///
/// let costs: Vec<f64> = SYNTH1.iter().map(|&w| w as f64).collect();
/// let mut sim = SimulatedPlatform::symmetric(costs, 2);
/// let half = SYNTH1.len() / 2;
/// let serving = Configuration::contiguous(&[half, SYNTH1.len() - half], 2)?;
/// sim.worker_speed[1] = 0.5; // the second core slows down
/// let times = sim.stage_times(&serving)?;
/// let per_worker_ms = times.stage_ms.clone(); // one worker per stage
/// let start = WarmStart { current: &serving, times: &times, per_worker_ms: &per_worker_ms };
/// let found = retune(&PipeSearch::new(3, 2), &SYNTH1, 2, start, &mut sim)?;
/// assert!(found.best_ms() < times.slowest_ms());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// Seeds that cannot be made, a failing measurement.
pub fn retune<M: Measure + ?Sized>(
    search: &PipeSearch,
    weights: &[u64],
    max_stages: usize,
    start: WarmStart<'_>,
    measure: &mut M,
) -> Result<SearchResult, SearchError> {
    let workers = search.workers;
    let speeds = worker_speeds(start.current, weights, start.per_worker_ms);
    let one = Configuration::contiguous(&[weights.len()], workers)?;
    let known = [(start.current.clone(), start.times.clone())];
    let c = max_stages.min(workers).min(weights.len());
    let found = if c >= 2 {
        let seeds = Seeds::new(weights, c)?.with_key(speed_key(speeds));
        search.run_warm(&seeds, measure, &known)?
    } else {
        SearchResult {
            best: start.current.clone(),
            best_times: start.times.clone(),
            trials: Vec::new(),
            tuning: std::time::Duration::ZERO,
            stopped: crate::StopReason::Complete,
        }
    };
    let began = Instant::now();
    let found = if found.trials.iter().any(|t| t.configuration == one) {
        found
    } else {
        let times = crate::measure::measure_checked(measure, &one)?;
        found.with_prior(one, times, began.elapsed())
    };
    confirm(found, measure)
}

/// Measures the finalists again and keeps the best mean (module docs).
fn confirm<M: Measure + ?Sized>(
    mut found: SearchResult,
    measure: &mut M,
) -> Result<SearchResult, SearchError> {
    let began = Instant::now();
    let limit = found.best_ms() * (1.0 + CONFIRM_MARGIN);
    let mut finalists: Vec<usize> = (0..found.trials.len())
        .filter(|&i| found.trials[i].slowest_ms <= limit)
        .collect();
    if finalists.len() < 2 {
        return Ok(found);
    }
    finalists.sort_by(|&a, &b| {
        found.trials[a]
            .slowest_ms
            .total_cmp(&found.trials[b].slowest_ms)
    });
    finalists.truncate(CONFIRM_MAX);
    let mut best: Option<(f64, Configuration, StageTimes)> = None;
    for i in finalists {
        let trial = &found.trials[i];
        let again = crate::measure::measure_checked(measure, &trial.configuration)?;
        let mean = (trial.slowest_ms + again.slowest_ms()) / 2.0;
        let times = StageTimes::new(
            trial
                .stage_ms
                .iter()
                .zip(&again.stage_ms)
                .map(|(a, b)| (a + b) / 2.0)
                .collect(),
        );
        if best.as_ref().is_none_or(|b| mean < b.0) {
            best = Some((mean, trial.configuration.clone(), times));
        }
    }
    if let Some((_, config, times)) = best {
        found.best = config;
        found.best_times = times;
    }
    found.tuning += began.elapsed();
    Ok(found)
}
