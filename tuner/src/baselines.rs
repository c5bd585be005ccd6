//! The searches Pipe-search is compared against (paper §6.1–6.2): exhaustive search,
//! random walk, and Pipe-search without hints.

use std::time::Instant;

use taopipe_dsl::{Seeds, SplitMix64};

use crate::trial::Evaluator;
use crate::{Measure, Phase, PipeSearch, SearchError, SearchResult, SearchSpace, StopReason};

/// Exhaustive search: every configuration of the space measured exactly once, in the order
/// of [`SearchSpace::iter`]; the trial count equals [`SearchSpace::size`].
///
/// ```
/// use taopipe_tuner::{Exhaustive, PlacePolicy, SearchSpace, SimulatedPlatform};
///
/// let space = SearchSpace::new(7, 4, 4, PlacePolicy::EveryWidthSplit);
/// let mut sim = SimulatedPlatform::symmetric(vec![1.0, 4.0, 8.0, 4.0, 8.0, 8.0, 4.0], 4);
/// let result = Exhaustive::new(space.clone()).run(&mut sim)?;
/// assert_eq!(result.trials.len() as u128, space.size());
/// # Ok::<(), taopipe_tuner::SearchError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exhaustive {
    /// The space to enumerate.
    pub space: SearchSpace,
}

impl Exhaustive {
    /// Exhaustive search over `space`.
    pub fn new(space: SearchSpace) -> Self {
        Exhaustive { space }
    }

    /// Measures every configuration.
    ///
    /// # Errors
    ///
    /// [`SearchError::NoStageCounts`] for an empty space; a failed measurement.
    pub fn run<M: Measure + ?Sized>(&self, measure: &mut M) -> Result<SearchResult, SearchError> {
        let start = Instant::now();
        let mut eval = Evaluator::new();
        let walked = self
            .space
            .iter()
            .try_for_each(|config| {
                eval.visit(measure, config, Phase::Exhaustive, None)
                    .map(drop)
            })
            .map(|()| StopReason::Complete)
            .map_err(SearchError::from);
        eval.conclude(start.elapsed(), walked, no_stage_counts(&self.space))
    }
}

fn no_stage_counts(space: &SearchSpace) -> SearchError {
    SearchError::NoStageCounts {
        units: space.units,
        workers: space.workers(),
        max_stages: space.max_stages,
    }
}

/// Random walk (paper §6.2, Table 5): configurations drawn uniformly from the space
/// ([`SearchSpace::sample`]), seeded, never the same one twice, until one reaches
/// `target_ms` (the paper stops at a throughput of 0.9 frames/s) or `budget` trials were
/// measured, or the space is used up.
///
/// The paper does not define the walk's moves; independent uniform draws without
/// repetition are the unbiased reading (a draw already measured is redrawn without
/// counting a trial).
///
/// ```
/// use taopipe_tuner::{PlacePolicy, RandomWalk, SearchSpace, SimulatedPlatform, StopReason};
///
/// let space = SearchSpace::new(7, 4, 4, PlacePolicy::Contiguous);
/// let mut sim = SimulatedPlatform::symmetric(vec![1.0, 4.0, 8.0, 4.0, 8.0, 8.0, 4.0], 4);
/// let walk = RandomWalk { space, seed: 1, target_ms: Some(15.0), budget: 1000 };
/// let result = walk.run(&mut sim)?;
/// assert_eq!(result.stopped, StopReason::Target);
/// assert!(result.best_ms() <= 15.0);
/// # Ok::<(), taopipe_tuner::SearchError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RandomWalk {
    /// The space to draw from.
    pub space: SearchSpace,
    /// Seed of the SplitMix64 that draws.
    pub seed: u64,
    /// Stop once a configuration's slowest stage takes at most this long.
    pub target_ms: Option<f64>,
    /// Stop after this many trials.
    pub budget: usize,
}

impl RandomWalk {
    /// Runs the walk.
    ///
    /// # Errors
    ///
    /// [`SearchError::NoStageCounts`] for an empty space or a zero budget; a failed
    /// measurement.
    pub fn run<M: Measure + ?Sized>(&self, measure: &mut M) -> Result<SearchResult, SearchError> {
        let start = Instant::now();
        let mut rng = SplitMix64::new(self.seed);
        let mut eval = Evaluator::new();
        let size = self.space.size();
        let mut walk = || -> Result<StopReason, SearchError> {
            loop {
                if eval.len() >= self.budget {
                    return Ok(StopReason::Budget);
                }
                if eval.len() as u128 >= size {
                    return Ok(StopReason::Exhausted);
                }
                let Some(config) = self.space.sample(&mut rng) else {
                    return Ok(StopReason::Exhausted);
                };
                if eval.contains(&config) {
                    continue;
                }
                let (t, _) = eval.visit(measure, config, Phase::Random, None)?;
                if self.target_ms.is_some_and(|target| t <= target) {
                    return Ok(StopReason::Target);
                }
            }
        };
        let walked = walk();
        eval.conclude(start.elapsed(), walked, no_stage_counts(&self.space))
    }
}

/// The seeds of Pipe-search **without hints** (paper §6.2, Table 5): "we just balance the
/// number of layers per pipeline stage" — every unit weighs 1, so each stage count's list
/// is sorted by the CV of the unit *counts* (ties lexicographic).
///
/// # Errors
///
/// Never in practice (unit weights cannot overflow).
///
/// ```
/// use taopipe_tuner::count_seeds;
///
/// let seeds = count_seeds(7, 4)?;
/// assert_eq!(seeds.top_k(2, 2)?[0].composition, vec![3, 4]);
/// # Ok::<(), taopipe_dsl::DslError>(())
/// ```
pub fn count_seeds(units: usize, max_stages: usize) -> Result<Seeds, taopipe_dsl::DslError> {
    Seeds::new(&vec![1; units], max_stages)
}

/// Pipe-search without hints: [`PipeSearch::run`] over [`count_seeds`].
///
/// # Errors
///
/// As [`PipeSearch::run`].
pub fn pipe_search_without_hints<M: Measure + ?Sized>(
    search: &PipeSearch,
    units: usize,
    max_stages: usize,
    measure: &mut M,
) -> Result<SearchResult, SearchError> {
    search.run(&count_seeds(units, max_stages)?, measure)
}

#[cfg(test)]
mod test;
