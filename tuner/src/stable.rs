//! When to stop repeating a measurement: the stable-median rule.
//!
//! # The rule (a decision: the paper repeats a fixed number of times)
//! Samples come in one at a time (a run of every stage, or one live frame). After each,
//! the slowest of the per-stage medians (`T_s`, what the search compares) is recomputed.
//! Measuring stops as soon as
//! - at least [`Stability::min`] samples are in **and** the last sample moved `T_s` by at
//!   most [`Stability::tolerance`] of its value (one more sample would not change the
//!   verdict of a comparison finer than that), or
//! - [`Stability::max`] samples are in.
//!
//! On a quiet machine a trial so costs `min` samples; noise buys more, up to `max`.
//!
//! **Racing** (a decision beyond the paper): given the best `T_s` the search has so far
//! ([`Samples::with_bound`]), a trial also stops after [`RACE_SAMPLES`] samples if its
//! `T_s` is more than [`RACE_MARGIN`] above that best. Such a trial cannot become the
//! best (Pipe-search only asks "better than `S_min`?"), and a search spends most of its
//! trials on such configurations. The margin is wide because two samples on a noisy
//! machine can be off by 15–30%.
//!
//! **Probing** (a decision beyond the paper, for measurers that stream frames through a
//! pipeline): a racing trial of `p ≥ 2` stages first sends **one frame through alone**
//! and asks [`Samples::probe_hopeless`]. A stage working alone is no slower than beside
//! its neighbours, which only add contention for caches and memory bandwidth, so if that
//! frame's slowest stage is already more than [`PROBE_MARGIN`] above the best, the trial
//! ends there, with the probe as its one sample: a floor under its true stage times, and
//! far above the best. Otherwise the trial goes on as usual, one frame dearer. Why: a
//! full trial costs `n + p − 1` frames that each take the slowest stage's time, and most
//! trials of a search are hopeless. On 16 cores, where Pipe-search tries 2 to 16 stages,
//! stage counts 9–16 took three quarters of VGG16's 84 s of tuning, filling deep
//! pipelines behind single-core stages of 40–70 ms. The margin is wider than
//! [`RACE_MARGIN`] because it rests on one frame, which may also meet cold caches.

use crate::{StageTimes, median, median_without_outliers};

/// Samples before a trial may be abandoned as hopeless (module docs).
pub const RACE_SAMPLES: usize = 2;
/// How far above the best so far a trial's `T_s` must be to be abandoned (module docs).
pub const RACE_MARGIN: f64 = 0.3;
/// How far above the best so far a probe frame's slowest stage must be to end its trial
/// (module docs).
pub const PROBE_MARGIN: f64 = 0.5;

/// The stable-median rule's settings (module docs).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Stability {
    /// Fewest samples.
    pub min: usize,
    /// Most samples.
    pub max: usize,
    /// Largest relative move of `T_s` by the last sample that counts as stable.
    pub tolerance: f64,
}

impl Default for Stability {
    /// 3 to 7 samples, stable within 2%.
    fn default() -> Self {
        Stability {
            min: 3,
            max: 7,
            tolerance: 0.02,
        }
    }
}

impl Stability {
    /// Up to `reps` samples (at least 1), stopping once stable within `tolerance` after
    /// 3 (fewer if `reps` is smaller); a `tolerance` of 0 takes all `reps`.
    ///
    /// ```
    /// use taopipe_tuner::Stability;
    ///
    /// assert_eq!(Stability::up_to(7, 0.05), Stability { min: 3, max: 7, tolerance: 0.05 });
    /// assert_eq!(Stability::up_to(5, 0.0), Stability::fixed(5));
    /// ```
    pub fn up_to(reps: usize, tolerance: f64) -> Self {
        let reps = reps.max(1);
        if tolerance > 0.0 {
            Stability {
                min: reps.min(3),
                max: reps,
                tolerance,
            }
        } else {
            Stability::fixed(reps)
        }
    }

    /// Exactly `n` samples (no early stop).
    pub fn fixed(n: usize) -> Self {
        Stability {
            min: n,
            max: n,
            tolerance: 0.0,
        }
    }
}

/// The samples of one measurement, per stage, and `T_s` after each.
///
/// ```
/// use taopipe_tuner::{Samples, Stability};
///
/// let rule = Stability::default();
/// let mut s = Samples::new(2);
/// s.push(&[10.0, 20.0]);
/// s.push(&[10.0, 21.0]);
/// assert!(!s.settled(&rule)); // fewer than 3 samples
/// s.push(&[10.0, 20.2]); // T_s: 20.0 → 20.5 → 20.2, moved by 1.5%
/// assert!(s.settled(&rule));
/// assert_eq!(s.times(3.0).stage_ms, vec![10.0, 20.2]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Samples {
    per_stage: Vec<Vec<f64>>,
    slowest: Vec<f64>,
    bound: Option<f64>,
}

impl Samples {
    /// No samples yet, for `stages` stages.
    pub fn new(stages: usize) -> Self {
        Samples {
            per_stage: vec![Vec::new(); stages],
            slowest: Vec::new(),
            bound: None,
        }
    }

    /// Races against `best_ms`, the best `T_s` so far (module docs).
    ///
    /// ```
    /// use taopipe_tuner::{Samples, Stability};
    ///
    /// let mut s = Samples::new(1).with_bound(Some(10.0));
    /// s.push(&[20.0]);
    /// s.push(&[21.0]);
    /// assert!(s.settled(&Stability::default())); // 2 samples, 105% above the best
    /// ```
    pub fn with_bound(mut self, best_ms: Option<f64>) -> Self {
        self.bound = best_ms.filter(|b| b.is_finite() && *b > 0.0);
        self
    }

    /// Whether these samples race against a best (a trial that may stop early, and may
    /// probe first: module docs).
    pub fn races(&self) -> bool {
        self.bound.is_some()
    }

    /// Whether a probe frame's stage times, taken with the frame alone in the pipeline,
    /// show the trial cannot win: its slowest stage is more than [`PROBE_MARGIN`] above the
    /// best (module docs). Always `false` without a bound.
    ///
    /// ```
    /// use taopipe_tuner::Samples;
    ///
    /// let s = Samples::new(2).with_bound(Some(10.0));
    /// assert!(s.probe_hopeless(&[4.0, 15.5])); // 55% above the best
    /// assert!(!s.probe_hopeless(&[4.0, 14.0])); // within the margin: measure it fully
    /// assert!(!Samples::new(2).probe_hopeless(&[4.0, 1e9])); // nothing to race against
    /// ```
    pub fn probe_hopeless(&self, stage_ms: &[f64]) -> bool {
        let slowest = stage_ms.iter().copied().fold(0.0, f64::max);
        self.bound
            .is_some_and(|b| slowest > b * (1.0 + PROBE_MARGIN))
    }

    /// Adds one sample (one time per stage; extra times are ignored).
    pub fn push(&mut self, stage_ms: &[f64]) {
        for (samples, &v) in self.per_stage.iter_mut().zip(stage_ms) {
            samples.push(v);
        }
        let slowest = self
            .per_stage
            .iter()
            .filter_map(|s| median(s))
            .fold(0.0, f64::max);
        self.slowest.push(slowest);
    }

    /// Samples taken.
    pub fn len(&self) -> usize {
        self.slowest.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.slowest.is_empty()
    }

    /// Whether `rule` says to stop (module docs).
    pub fn settled(&self, rule: &Stability) -> bool {
        let n = self.len();
        if n >= rule.max.max(1) {
            return true;
        }
        let hopeless = n >= RACE_SAMPLES.max(1)
            && self
                .bound
                .is_some_and(|b| self.slowest[n - 1] > b * (1.0 + RACE_MARGIN));
        if hopeless {
            return true;
        }
        if n < rule.min.max(2) {
            return false;
        }
        let (now, before) = (self.slowest[n - 1], self.slowest[n - 2]);
        (now - before).abs() <= rule.tolerance * now.abs()
    }

    /// Each stage's median after dropping samples beyond `mad_k` robust deviations
    /// ([`median_without_outliers`]); 0 for a stage without samples.
    pub fn times(&self, mad_k: f64) -> StageTimes {
        StageTimes::new(
            self.per_stage
                .iter()
                .map(|s| median_without_outliers(s, mad_k).unwrap_or(0.0))
                .collect(),
        )
    }
}

#[cfg(test)]
mod test;
