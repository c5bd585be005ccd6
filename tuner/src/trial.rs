//! What every search returns: the trial log ([`Trial`]), the [`SearchResult`], why the
//! search stopped, its errors, and the measurement cache that makes sure no configuration
//! is measured twice.

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use taopipe_dsl::DslError;

use crate::measure::measure_checked;
use crate::{ConfigError, Configuration, Measure, MeasureError, StageTimes};

/// Which part of which search measured a configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Pipe-search, before phase 1: the seed (first of the CV-sorted list) of every stage
    /// count, measured to initialise `S_min` (Alg. 2 line 1).
    Seed,
    /// Pipe-search phase 1 (Alg. 2 lines 2–16): every stage count in turn.
    Explore,
    /// Pipe-search phase 2 (lines 17–30): the stage count of `S_min`.
    Focus,
    /// The exhaustive baseline.
    Exhaustive,
    /// The random-walk baseline.
    Random,
    /// A candidate measured before the search, outside it: the one-stage configuration
    /// (every unit on all workers, layer-parallel) that an engine always considers
    /// ([`SearchResult::with_prior`]).
    Prior,
    /// A re-tune's starting point: the configuration that was serving, timed on the live
    /// frames that showed the change (not measured again; [`PipeSearch::run_warm`](crate::PipeSearch::run_warm)).
    Current,
    /// A second measurement of a configuration already measured, confirming a search's
    /// winner ([`confirm`](crate::confirm)); the trial keeps its first measurement's rank.
    Confirm,
}

/// One measured configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// What was run.
    pub configuration: Configuration,
    /// Milliseconds per stage.
    pub stage_ms: Vec<f64>,
    /// The slowest stage (`T_s`).
    pub slowest_ms: f64,
    /// Who measured it.
    pub phase: Phase,
    /// Pipe-search: the position of the configuration in its stage count's CV-sorted list,
    /// **1-based** as in the paper's tables (rank 1 = the seed). `None` for the baselines.
    pub rank: Option<usize>,
}

/// Why a search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// α trials in a row without improvement (Pipe-search phase 2).
    Confidence,
    /// The list being searched ran out (Pipe-search phase 2), or every configuration of the
    /// space was visited (random walk).
    Exhausted,
    /// Every configuration was measured (exhaustive).
    Complete,
    /// The target slowest-stage time was reached (random walk).
    Target,
    /// The trial budget was spent (random walk).
    Budget,
    /// A measurement reported [`MeasureError::Stopped`] (an interrupt): the search ended
    /// between two trials, and its trials are the ones done before. The best is the best
    /// of those, not of a finished search.
    Stopped,
}

/// The outcome of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    /// The configuration with the least slowest-stage time (`S_min`).
    pub best: Configuration,
    /// Its stage times.
    pub best_times: StageTimes,
    /// Every configuration measured, in order, each exactly once.
    pub trials: Vec<Trial>,
    /// Wall-clock time of the whole search (measurements included).
    pub tuning: Duration,
    /// Why it stopped.
    pub stopped: StopReason,
}

impl SearchResult {
    /// The best slowest-stage time.
    pub fn best_ms(&self) -> f64 {
        self.best_times.slowest_ms()
    }

    /// The trial that measured [`SearchResult::best`].
    pub fn best_trial(&self) -> Option<&Trial> {
        self.trials.iter().find(|t| t.configuration == self.best)
    }

    /// This result with a candidate measured before the search (`times` of `config`, taking
    /// `took`): logged as the first trial ([`Phase::Prior`]), and the best if strictly
    /// faster than the search's best, so a search never ends on something slower than a
    /// configuration it was shown. A prior the search measured itself is not logged twice.
    ///
    /// ```
    /// use std::time::Duration;
    /// use taopipe_tuner::{Configuration, SearchResult, StageTimes, StopReason};
    ///
    /// let two = Configuration::contiguous(&[3, 3], 2)?;
    /// let one = Configuration::contiguous(&[6], 2)?;
    /// let found = SearchResult {
    ///     best: two.clone(),
    ///     best_times: StageTimes::new(vec![5.0, 7.0]),
    ///     trials: Vec::new(), // (the search's trials)
    ///     tuning: Duration::ZERO,
    ///     stopped: StopReason::Confidence,
    /// };
    /// let chosen = found.with_prior(one.clone(), StageTimes::new(vec![6.0]), Duration::ZERO);
    /// assert_eq!(chosen.best, one);
    /// assert_eq!(chosen.trials[0].configuration, one);
    /// # Ok::<(), taopipe_tuner::ConfigError>(())
    /// ```
    pub fn with_prior(mut self, config: Configuration, times: StageTimes, took: Duration) -> Self {
        self.tuning += took;
        if self.trials.iter().any(|t| t.configuration == config) {
            return self;
        }
        let slowest_ms = times.slowest_ms();
        if slowest_ms < self.best_ms() {
            self.best = config.clone();
            self.best_times = times.clone();
        }
        self.trials.insert(
            0,
            Trial {
                configuration: config,
                stage_ms: times.stage_ms,
                slowest_ms,
                phase: Phase::Prior,
                rank: None,
            },
        );
        self
    }
}

/// Why a search could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// Seeds could not be produced.
    #[error("seeds: {0}")]
    Dsl(#[from] DslError),
    /// A measurement failed.
    #[error(transparent)]
    Measure(#[from] MeasureError),
    /// A configuration could not be built.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// No stage count in `2..=C` fits the units and the workers (or, under a layout, has
    /// an allowed place for every stage).
    #[error(
        "no stage count to search: {units} units, {workers} workers, C = {max_stages} (each stage needs a unit, a worker and an allowed place)"
    )]
    NoStageCounts {
        /// Units of the net.
        units: usize,
        /// Workers of the platform.
        workers: usize,
        /// The largest stage count asked for.
        max_stages: usize,
    },
}

/// The measurements of one search: each configuration is measured once, then answered
/// from the cache; the trial log keeps the order of first measurement.
#[derive(Debug)]
pub(crate) struct Evaluator {
    seen: HashMap<Configuration, usize>,
    trials: Vec<Trial>,
    best: Option<usize>,
}

impl Evaluator {
    pub(crate) fn new() -> Self {
        Evaluator {
            seen: HashMap::new(),
            trials: Vec::new(),
            best: None,
        }
    }

    /// The slowest-stage time of `config`, measured now unless already known, and whether
    /// it is a strict improvement over the best so far (which it then becomes).
    pub(crate) fn visit<M: Measure + ?Sized>(
        &mut self,
        measure: &mut M,
        config: Configuration,
        phase: Phase,
        rank: Option<usize>,
    ) -> Result<(f64, bool), MeasureError> {
        let index = match self.seen.get(&config) {
            Some(&i) => i,
            None => {
                if let Some(b) = self.best {
                    measure.set_best(self.trials[b].slowest_ms);
                }
                let times = measure_checked(measure, &config)?;
                let slowest_ms = times.slowest_ms();
                let i = self.trials.len();
                self.seen.insert(config.clone(), i);
                self.trials.push(Trial {
                    configuration: config,
                    stage_ms: times.stage_ms,
                    slowest_ms,
                    phase,
                    rank,
                });
                i
            }
        };
        let t = self.trials[index].slowest_ms;
        let improved = self.best.is_none_or(|b| t < self.trials[b].slowest_ms);
        if improved {
            self.best = Some(index);
        }
        Ok((t, improved))
    }

    /// Logs `config` as known to take `times` (measured elsewhere, e.g. while serving)
    /// without measuring it; it competes for the best like any trial.
    pub(crate) fn know(&mut self, config: Configuration, times: &StageTimes, phase: Phase) {
        if self.seen.contains_key(&config) {
            return;
        }
        let slowest_ms = times.slowest_ms();
        let i = self.trials.len();
        self.seen.insert(config.clone(), i);
        self.trials.push(Trial {
            configuration: config,
            stage_ms: times.stage_ms.clone(),
            slowest_ms,
            phase,
            rank: None,
        });
        if self
            .best
            .is_none_or(|b| slowest_ms < self.trials[b].slowest_ms)
        {
            self.best = Some(i);
        }
    }

    /// Number of configurations measured.
    pub(crate) fn len(&self) -> usize {
        self.trials.len()
    }

    /// Whether `config` was measured already.
    pub(crate) fn contains(&self, config: &Configuration) -> bool {
        self.seen.contains_key(config)
    }

    /// The stage count of the fastest configuration so far among those of `counts` stages
    /// (a re-tune's known one-stage configuration can be the best, but has no list).
    pub(crate) fn best_stage_count(&self, counts: &[usize]) -> Option<usize> {
        self.trials
            .iter()
            .filter(|t| counts.contains(&t.configuration.stage_count()))
            .min_by(|a, b| a.slowest_ms.total_cmp(&b.slowest_ms))
            .map(|t| t.configuration.stage_count())
    }

    /// The result of a search whose walk ended with `walked`: its stop reason, or a
    /// measurement that reported [`MeasureError::Stopped`], which ends the search with the
    /// trials done before it ([`StopReason::Stopped`]) rather than failing it. With no
    /// trial at all: `empty` after a walk, the stop itself after a stop.
    pub(crate) fn conclude(
        self,
        tuning: Duration,
        walked: Result<StopReason, SearchError>,
        empty: SearchError,
    ) -> Result<SearchResult, SearchError> {
        let stopped = match walked {
            Ok(reason) => reason,
            Err(SearchError::Measure(MeasureError::Stopped)) if self.len() > 0 => {
                StopReason::Stopped
            }
            Err(e) => return Err(e),
        };
        self.finish(tuning, stopped).ok_or(empty)
    }

    /// The result; `None` when nothing was measured.
    pub(crate) fn finish(self, tuning: Duration, stopped: StopReason) -> Option<SearchResult> {
        let b = self.best?;
        let best = self.trials[b].configuration.clone();
        let best_times = StageTimes::new(self.trials[b].stage_ms.clone());
        Some(SearchResult {
            best,
            best_times,
            trials: self.trials,
            tuning,
            stopped,
        })
    }
}
