//! Pipe-search, the paper's Algorithm 2, line by line.
//!
//! ```text
//!  1: S_min = S[0], seed which yielded minimum execution time for slowest stage
//!  2: for PS_count in [2..C] do
//!  3:   p ← PS_count
//!  4:   c ← 0
//!  5:   while γ < α do
//!  6:     t ← execute(S[p][c])
//!  7:     T_s ← max(t)
//!  8:     if T_s > T_s[S_min] then γ++                        (9)
//! 10:     else S_min ← S[p][c]; γ ← 0                          (11, 12)
//! 14:     visited[p] ← c++
//! 16: end for
//! 17: p ← PS_count(S_min)
//! 18: c ← visited[p]
//! 19: γ ← 0
//! 20: while γ < α do   … lines 21–28 as 6–13 …
//! 29:   c++
//! 31: return S_min
//! ```
//!
//! # Where the paper is vague, and what we do
//!
//! * **`S[p][c]`** is the `c`-th composition (0-based here; the trial log's `rank` is
//!   `c + 1`) of the units into `p` stages in ascending CV order of the stage weights — a
//!   lazy [`SeedIter`](taopipe_dsl::SeedIter) over the net's *unit* weights, ties broken
//!   lexicographically. It is placed on the workers by [`PlacePolicy::Contiguous`]
//!   (one mapping per stage count): the paper searches layer distributions, not places.
//!   Under a layout ([`AllowedPlaces`]) each stage takes the widest allowed place inside
//!   its run, and a stage count whose runs hold no allowed place is not searched.
//! * **Line 1, "the seed which yielded minimum"**: before phase 1 we measure the seed
//!   `S[p][0]` of every stage count `p = 2..=C`, in order (phase [`Phase::Seed`]);
//!   `S_min` is the one with the least `T_s`, the earliest on ties.
//! * **Phase 1 revisits the seeds**: the loop for `p` starts at `c = 0`, the seed already
//!   measured; the cached time is used (no second measurement) and the step counts like
//!   any other in the γ rule.
//! * **Ties are not improvements.** Line 8 reads "`T_s > T_s[S_min]` ⇒ γ++, else new
//!   minimum", which would treat a tie as a new minimum and reset γ. We require `T_s <
//!   T_s[S_min]` to replace `S_min` and reset γ: with a deterministic measurer many
//!   compositions share the bottleneck stage and tie exactly, and resetting γ on each tie
//!   walks the whole plateau. (It also keeps the seed, already `S_min`, from "improving"
//!   on itself when phase 1 revisits it.)
//! * **γ starts at 0 for every stage count in phase 1.** The listing never initialises γ
//!   and resets it only at line 19; taken literally, once γ reaches α for `p = 2` the loops
//!   of `p = 3..C` would never run. The text says phase 1 "tests at least α search points
//!   around the seeds for each value of PS_count", so γ is reset at line 4.
//! * **Line 14 / 18, where phase 2 resumes**: `visited[p]` holds the number of positions
//!   of `S[p]` phase 1 stepped through, so phase 2 continues at the first position phase 1
//!   did not reach (the literal post-increment would step onto the last visited one again).
//! * **α larger than a list / an exhausted list**: a loop also ends when `S[p]` has no
//!   position `c` left. In phase 1 the search goes on with the next stage count; in phase 2
//!   it stops ([`StopReason::Exhausted`]).
//! * **α = 0** runs no loop at all: the result is the best seed, the paper's "offline"
//!   approach of §6.4.
//! * **C** is clamped to the workers (each stage needs one) and to the units.
//! * **Never twice**: every measurement goes through a cache; the trial log lists each
//!   configuration once, in order of first measurement.

use std::time::Instant;

use taopipe_dsl::{SeedIter, Seeds};

use crate::trial::Evaluator;
use crate::{AllowedPlaces, Configuration, Measure, Phase, SearchError, SearchResult, StopReason};

/// Pipe-search (Alg. 2) with confidence `alpha` on `workers` workers.
///
/// ```
/// use taopipe_dsl::{Seeds, SYNTH1};
/// use taopipe_tuner::{PipeSearch, SimulatedPlatform};
///
/// let costs: Vec<f64> = SYNTH1.iter().map(|&w| w as f64).collect();
/// let mut sim = SimulatedPlatform::symmetric(costs, 4);
/// let seeds = Seeds::new(&SYNTH1, 4)?;
/// let result = PipeSearch::new(3, 4).run(&seeds, &mut sim)?;
/// println!("best {} in {} trials", result.best, result.trials.len());
/// assert_eq!(sim.measurements() as usize, result.trials.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipeSearch {
    /// Trials without improvement before a loop gives up (α).
    pub alpha: usize,
    /// The places of the platform; stages are placed by
    /// [`PlacePolicy::Contiguous`](crate::PlacePolicy::Contiguous) on them.
    pub places: AllowedPlaces,
}

/// One stage count's CV-sorted list `S[p]`, read lazily, with the next position `c` and
/// the places of its stages.
struct SortedList {
    stages: usize,
    iter: SeedIter,
    next: usize,
    places: Vec<(usize, usize)>,
}

impl SortedList {
    /// `S[p][c]` for the next `c`, placed; `None` when the list is exhausted.
    fn next(&mut self, workers: usize) -> Result<Option<(Configuration, usize)>, SearchError> {
        let Some(seed) = self.iter.next() else {
            return Ok(None);
        };
        let c = self.next;
        self.next += 1;
        let units = self.iter.layers();
        let config = Configuration::with_places(&seed.composition, &self.places, units, workers)?;
        Ok(Some((config, c)))
    }
}

impl PipeSearch {
    /// Pipe-search with confidence `alpha` on `workers` workers (every contiguous run
    /// allowed).
    pub fn new(alpha: usize, workers: usize) -> Self {
        PipeSearch::on(alpha, AllowedPlaces::all(workers))
    }

    /// Pipe-search with confidence `alpha` on `places` (e.g. a layout file's).
    pub fn on(alpha: usize, places: AllowedPlaces) -> Self {
        PipeSearch { alpha, places }
    }

    /// Workers of the platform.
    pub fn workers(&self) -> usize {
        self.places.workers()
    }

    /// Runs Alg. 2 over the seeds (`S`, one CV-sorted list per stage count
    /// `2..=min(C, units, workers)`), measuring with `measure`.
    ///
    /// # Errors
    ///
    /// [`SearchError::NoStageCounts`] when fewer than 2 stages fit; a failed measurement.
    pub fn run<M: Measure + ?Sized>(
        &self,
        seeds: &Seeds,
        measure: &mut M,
    ) -> Result<SearchResult, SearchError> {
        self.run_warm(seeds, measure, &[])
    }

    /// Alg. 2 started warm, for a re-tune: the configurations in `known` (typically the one
    /// serving, with the stage times it showed on live frames) are logged first
    /// ([`Phase::Current`]) without being measured, and count as `S_min` candidates from
    /// the start, so the search only replaces them with something measured faster. Pass
    /// seeds ranked for the speeds just measured ([`speed_key`](crate::speed_key)).
    ///
    /// ```
    /// use taopipe_dsl::{Seeds, SYNTH1};
    /// use taopipe_tuner::{Configuration, Measure, Phase, PipeSearch, SimulatedPlatform};
    ///
    /// let costs: Vec<f64> = SYNTH1.iter().map(|&w| w as f64).collect();
    /// let mut sim = SimulatedPlatform::symmetric(costs, 2);
    /// let serving = Configuration::contiguous(&[SYNTH1.len()], 2)?;
    /// let times = sim.stage_times(&serving)?;
    /// let found = PipeSearch::new(3, 2).run_warm(&Seeds::new(&SYNTH1, 2)?, &mut sim, &[(serving, times)])?;
    /// assert_eq!(found.trials[0].phase, Phase::Current);
    /// assert_eq!(sim.measurements() as usize, found.trials.len()); // 1 before + the search's
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn run_warm<M: Measure + ?Sized>(
        &self,
        seeds: &Seeds,
        measure: &mut M,
        known: &[(Configuration, crate::StageTimes)],
    ) -> Result<SearchResult, SearchError> {
        let start = Instant::now();
        let units = seeds.weights().len();
        let counts = seeds.stage_counts();
        let workers = self.workers();
        let no_stage_counts = SearchError::NoStageCounts {
            units,
            workers,
            max_stages: *counts.end(),
        };
        let max_stages = (*counts.end()).min(workers);
        // Stage counts whose runs hold no allowed place are not searched (module docs).
        let mut lists: Vec<SortedList> = (2..=max_stages)
            .filter_map(|p| Some((p, self.places.contiguous(p).ok()?)))
            .map(|(p, places)| {
                Ok(SortedList {
                    stages: p,
                    iter: seeds.iter(p)?,
                    next: 0,
                    places,
                })
            })
            .collect::<Result<_, SearchError>>()?;
        if lists.is_empty() {
            return Err(no_stage_counts);
        }
        let mut eval = Evaluator::new();
        for (config, times) in known {
            eval.know(config.clone(), times, Phase::Current);
        }
        let walked = self.walk(&mut lists, &mut eval, measure, &no_stage_counts);
        eval.conclude(start.elapsed(), walked, no_stage_counts)
    }

    /// Alg. 2 itself over `lists`, measuring into `eval`; why it stopped.
    fn walk<M: Measure + ?Sized>(
        &self,
        lists: &mut [SortedList],
        eval: &mut Evaluator,
        measure: &mut M,
        no_stage_counts: &SearchError,
    ) -> Result<StopReason, SearchError> {
        let workers = self.workers();
        // Line 1: S_min ← the best of the seeds S[p][0].
        let mut seeds_of: Vec<Option<Configuration>> = Vec::with_capacity(lists.len());
        for list in lists.iter_mut() {
            let seed = list.next(workers)?;
            if let Some((config, c)) = &seed {
                eval.visit(measure, config.clone(), Phase::Seed, Some(c + 1))?;
            }
            seeds_of.push(seed.map(|(config, _)| config));
        }

        // Lines 2–16: phase 1 over every stage count.
        for (list, seed) in lists.iter_mut().zip(seeds_of) {
            let mut gamma = 0; // reset per stage count (see the module docs)
            let mut pending = seed; // S[p][0], measured already
            while gamma < self.alpha {
                let (config, c) = match pending.take() {
                    Some(config) => (config, 0),
                    None => match list.next(workers)? {
                        Some(next) => next,
                        None => break, // S[p] exhausted
                    },
                };
                let (_, improved) = eval.visit(measure, config, Phase::Explore, Some(c + 1))?;
                if improved {
                    gamma = 0;
                } else {
                    gamma += 1;
                }
            }
            // visited[p] = list.next: the first position phase 1 did not reach (a seed that
            // the loop never stepped onto, α = 0, was still measured by line 1).
        }

        // Lines 17–30: phase 2 on the stage count of S_min.
        let searched: Vec<usize> = lists.iter().map(|l| l.stages).collect();
        let p = eval.best_stage_count(&searched).unwrap_or(searched[0]);
        let list = lists
            .iter_mut()
            .find(|l| l.stages == p)
            .ok_or_else(|| no_stage_counts.clone())?;
        let mut gamma = 0;
        let mut stopped = StopReason::Confidence;
        while gamma < self.alpha {
            let Some((config, c)) = list.next(workers)? else {
                stopped = StopReason::Exhausted;
                break;
            };
            let (_, improved) = eval.visit(measure, config, Phase::Focus, Some(c + 1))?;
            if improved {
                gamma = 0;
            } else {
                gamma += 1;
            }
        }
        Ok(stopped)
    }
}

#[cfg(test)]
mod test;
