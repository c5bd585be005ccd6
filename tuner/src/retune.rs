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
//! # Confirming the winner (a decision: the best of noisy trials is biased)
//! Live frames are noisy, and the best of many trials of a few frames each is biased
//! towards luck: the configuration that wins is often one whose frames happened to run
//! fast (on a shared 2-core VM, one VGG16 split measured 100 ms in one tuning and
//! 138–163 ms in others, and was served at 133 ms after winning at 100). So a search
//! ends by **confirming** its winner: the configuration whose latest measurement is the
//! fastest is measured again, until the fastest latest measurement is one taken this way
//! (at most [`CONFIRM_MAX`] measurements). A lucky winner regresses on its second
//! measurement and the next-fastest configuration, the one-stage candidate included, is
//! measured again in turn; a real winner costs one extra trial. The engine serves the
//! configuration with the fastest latest measurement, so it never serves something
//! slower than what it last measured of another configuration. The extra trials are logged
//! as [`Phase::Confirm`], with the rank of their first measurement.

use std::time::Instant;

use taopipe_dsl::Seeds;

use crate::{
    Configuration, Measure, MeasureError, Phase, PipeSearch, SearchError, SearchResult, StageTimes,
    StopReason, speed_key, worker_speeds,
};

/// Most measurements a confirmation takes (module docs).
pub const CONFIRM_MAX: usize = 3;

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
    let workers = search.workers();
    let speeds = worker_speeds(start.current, weights, start.per_worker_ms);
    let one = Configuration::contiguous_on(&[weights.len()], &search.places)?;
    let known = [(start.current.clone(), start.times.clone())];
    let c = max_stages.min(workers).min(weights.len());
    // A layout may leave no stage count of 2..=c a place for every stage.
    let searchable = (2..=c).any(|p| search.places.contiguous(p).is_ok());
    let found = if searchable {
        let seeds = Seeds::new(weights, c)?.with_key(speed_key(speeds, &search.places));
        search.run_warm(&seeds, measure, &known)?
    } else {
        SearchResult {
            best: start.current.clone(),
            best_times: start.times.clone(),
            trials: Vec::new(),
            tuning: std::time::Duration::ZERO,
            stopped: StopReason::Complete,
        }
    };
    if found.stopped == StopReason::Stopped {
        return Ok(found);
    }
    let began = Instant::now();
    let found = if found.trials.iter().any(|t| t.configuration == one) {
        found
    } else {
        match crate::measure::measure_checked(measure, &one) {
            Ok(times) => found.with_prior(one, times, began.elapsed()),
            Err(MeasureError::Stopped) => {
                return Ok(SearchResult {
                    stopped: StopReason::Stopped,
                    ..found
                });
            }
            Err(e) => return Err(e.into()),
        }
    };
    confirm(found, measure)
}

/// Confirms the winner of `found` (module docs): what a re-tune ends with, and the
/// engine's first tuning too. The extra measurements' time is added to `found.tuning`.
/// A search that was stopped ([`StopReason::Stopped`]) is returned as it is, and a stop
/// during the confirmation ends it there, the best chosen from the measurements taken.
///
/// ```
/// use std::time::Duration;
/// use taopipe_tuner::{Configuration, Measure, MeasureError, Phase, SearchResult, StageTimes};
/// use taopipe_tuner::{StopReason, Trial, confirm};
///
/// let (a, b) = (Configuration::contiguous(&[4], 2)?, Configuration::contiguous(&[1, 3], 2)?);
/// let trial = |c: &Configuration, ms: f64| Trial {
///     configuration: c.clone(), stage_ms: vec![ms], slowest_ms: ms, phase: Phase::Seed, rank: None,
/// };
/// // A lucky first measurement put `b` ahead, 4% faster than `a`.
/// let found = SearchResult {
///     best: b.clone(),
///     best_times: StageTimes::new(vec![9.8]),
///     trials: vec![trial(&a, 10.2), trial(&b, 9.8)],
///     tuning: Duration::ZERO,
///     stopped: StopReason::Complete,
/// };
/// // Measured again, `a` takes 10 ms and `b` 12: the second measurements decide.
/// struct Again(Configuration);
/// impl Measure for Again {
///     fn stage_times(&mut self, c: &Configuration) -> Result<StageTimes, MeasureError> {
///         let ms = if *c == self.0 { 10.0 } else { 12.0 };
///         Ok(StageTimes::new(vec![ms; c.stage_count()]))
///     }
/// }
/// let kept = confirm(found, &mut Again(a.clone()))?;
/// assert_eq!(kept.best, a);
/// assert_eq!(kept.trials.len(), 4); // `b` regressed, so `a` was measured again too
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// A failing measurement.
pub fn confirm<M: Measure + ?Sized>(
    mut found: SearchResult,
    measure: &mut M,
) -> Result<SearchResult, SearchError> {
    let began = Instant::now();
    // Each configuration's latest measurement, and whether it was taken here.
    let mut latest: Vec<(Configuration, StageTimes, bool)> = Vec::new();
    for t in &found.trials {
        let times = StageTimes::new(t.stage_ms.clone());
        match latest.iter_mut().find(|(c, ..)| *c == t.configuration) {
            Some(entry) => entry.1 = times,
            None => latest.push((t.configuration.clone(), times, false)),
        }
    }
    let fastest = |latest: &[(Configuration, StageTimes, bool)]| {
        (0..latest.len()).min_by(|&a, &b| {
            latest[a]
                .1
                .slowest_ms()
                .total_cmp(&latest[b].1.slowest_ms())
        })
    };
    if found.stopped == StopReason::Stopped {
        return Ok(found);
    }
    for _ in 0..CONFIRM_MAX {
        let Some(i) = fastest(&latest).filter(|&i| !latest[i].2) else {
            break;
        };
        let again = match crate::measure::measure_checked(measure, &latest[i].0) {
            Ok(again) => again,
            Err(MeasureError::Stopped) => {
                found.stopped = StopReason::Stopped;
                break;
            }
            Err(e) => return Err(e.into()),
        };
        let first = found
            .trials
            .iter()
            .find(|t| t.configuration == latest[i].0)
            .expect("every latest entry comes from a trial")
            .clone();
        found.trials.push(crate::Trial {
            stage_ms: again.stage_ms.clone(),
            slowest_ms: again.slowest_ms(),
            phase: Phase::Confirm,
            ..first
        });
        latest[i].1 = again;
        latest[i].2 = true;
    }
    if let Some(i) = fastest(&latest) {
        found.best = latest[i].0.clone();
        found.best_times = latest[i].1.clone();
    }
    found.tuning += began.elapsed();
    Ok(found)
}
