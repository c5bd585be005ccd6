//! Measuring a configuration: the [`Measure`] trait, [`StageTimes`], and the [`Robust`]
//! wrapper (warm-up, repetitions, median, outlier rejection).

use crate::{ConfigError, Configuration, Samples, Stability};

/// The time of each stage of one configuration, in milliseconds, in pipeline order.
#[derive(Debug, Clone, PartialEq)]
pub struct StageTimes {
    /// Milliseconds per stage.
    pub stage_ms: Vec<f64>,
}

impl StageTimes {
    /// Wraps per-stage times.
    pub fn new(stage_ms: Vec<f64>) -> Self {
        StageTimes { stage_ms }
    }

    /// The slowest stage (the pipeline's bottleneck, `T_s` of Alg. 2); 0 with no stages.
    ///
    /// ```
    /// use taopipe_tuner::StageTimes;
    ///
    /// assert_eq!(StageTimes::new(vec![3.0, 7.5, 2.0]).slowest_ms(), 7.5);
    /// ```
    pub fn slowest_ms(&self) -> f64 {
        self.stage_ms.iter().copied().fold(0.0, f64::max)
    }
}

/// Something that can run a configuration and report its stage times: the live runtime,
/// the [`SimulatedPlatform`](crate::SimulatedPlatform), or a table in a test.
pub trait Measure {
    /// The time of each stage of `config`.
    ///
    /// # Errors
    ///
    /// A [`MeasureError`] if the configuration cannot be run or measured.
    fn stage_times(&mut self, config: &Configuration) -> Result<StageTimes, MeasureError>;

    /// The best slowest-stage time the search has measured so far, told before each new
    /// measurement: a measurer that samples may stop early once a trial clearly cannot
    /// beat it ([`Samples::with_bound`]). Ignored by default.
    fn set_best(&mut self, best_ms: f64) {
        let _ = best_ms;
    }
}

impl<M: Measure + ?Sized> Measure for &mut M {
    fn stage_times(&mut self, config: &Configuration) -> Result<StageTimes, MeasureError> {
        (**self).stage_times(config)
    }

    fn set_best(&mut self, best_ms: f64) {
        (**self).set_best(best_ms);
    }
}

/// Why a measurement failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MeasureError {
    /// The configuration does not fit the net or the platform.
    #[error("configuration does not fit: {0}")]
    Config(#[from] ConfigError),
    /// The measurer's own description is inconsistent (e.g. a worker speed of 0).
    #[error("invalid platform: {reason}")]
    Platform {
        /// What is wrong.
        reason: String,
    },
    /// The measurer has no time for this configuration (a table-backed measurer).
    #[error("no stage times known for configuration {configuration}")]
    Unknown {
        /// The configuration, displayed.
        configuration: String,
    },
    /// The measurer returned one time per stage for the wrong number of stages.
    #[error("configuration {configuration}: {got} stage times for {expected} stages")]
    StageCount {
        /// The configuration, displayed.
        configuration: String,
        /// Its stage count.
        expected: usize,
        /// Times returned.
        got: usize,
    },
    /// A stage time is negative, infinite or NaN.
    #[error("configuration {configuration}: stage {stage} took {value} ms")]
    BadTime {
        /// The configuration, displayed.
        configuration: String,
        /// The stage.
        stage: usize,
        /// The value returned.
        value: f64,
    },
    /// The measurement itself failed (the live measurer's errors).
    #[error("measurement failed: {reason}")]
    Failed {
        /// What went wrong.
        reason: String,
    },
    /// The measurer was asked to stop (an interrupt) before this configuration's
    /// measurement was complete. Not a failure: every search ends on it with the trials
    /// done before ([`StopReason::Stopped`](crate::StopReason::Stopped)), so an interrupt
    /// keeps minutes of measurements instead of throwing them away.
    #[error("stopped before the measurement was complete")]
    Stopped,
}

/// Measures `config` and checks the answer: one finite, non-negative time per stage.
pub(crate) fn measure_checked<M: Measure + ?Sized>(
    measure: &mut M,
    config: &Configuration,
) -> Result<StageTimes, MeasureError> {
    let times = measure.stage_times(config)?;
    if times.stage_ms.len() != config.stage_count() {
        return Err(MeasureError::StageCount {
            configuration: config.to_string(),
            expected: config.stage_count(),
            got: times.stage_ms.len(),
        });
    }
    if let Some((stage, &value)) = times
        .stage_ms
        .iter()
        .enumerate()
        .find(|(_, v)| !v.is_finite() || **v < 0.0)
    {
        return Err(MeasureError::BadTime {
            configuration: config.to_string(),
            stage,
            value,
        });
    }
    Ok(times)
}

/// How [`Robust`] measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RobustOptions {
    /// Runs before the first sample, thrown away (cold caches, page faults, frequency
    /// ramp-up).
    pub warmup: usize,
    /// Most samples taken (at least 1 is taken).
    pub repetitions: usize,
    /// Stop before `repetitions` once the slowest stage's median is stable within this
    /// relative tolerance after at least 3 samples ([`Stability`]'s rule); 0: always take
    /// every repetition.
    pub tolerance: f64,
    /// Samples farther than `mad_k · σ̂` from the median are dropped, where
    /// `σ̂ = 1.4826 · MAD` (the MAD scaled to estimate σ for normal data).
    pub mad_k: f64,
}

impl Default for RobustOptions {
    /// 1 warm-up run, 7 samples, `k = 3`, no early stop.
    fn default() -> Self {
        RobustOptions {
            warmup: 1,
            repetitions: 7,
            tolerance: 0.0,
            mad_k: 3.0,
        }
    }
}

/// A measurer that repeats another one: `warmup` runs thrown away, then up to
/// `repetitions` samples (fewer once stable, with a `tolerance`); for **each stage independently**, samples beyond `mad_k · 1.4826 · MAD` of the
/// median are dropped ([`median_without_outliers`]) and the median of the rest is the
/// stage's time. A per-stage median, so the reported stages need not come from one run.
///
/// ```
/// use taopipe_tuner::{Configuration, Measure, MeasureError, Robust, RobustOptions, StageTimes};
///
/// /// Every third run is disturbed by a noisy neighbour.
/// struct Flaky(u32);
/// impl Measure for Flaky {
///     fn stage_times(&mut self, _: &Configuration) -> Result<StageTimes, MeasureError> {
///         self.0 += 1;
///         let t = if self.0 % 3 == 0 { 50.0 } else { 10.0 + f64::from(self.0 % 2) * 0.1 };
///         Ok(StageTimes::new(vec![t, 5.0]))
///     }
/// }
///
/// let config = Configuration::contiguous(&[3, 4], 2)?;
/// let mut robust = Robust::new(Flaky(0), RobustOptions::default());
/// let times = robust.stage_times(&config)?;
/// assert!((times.stage_ms[0] - 10.0).abs() <= 0.1);
/// assert_eq!(robust.inner().0, 8); // 1 warm-up + 7 samples
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Robust<M> {
    inner: M,
    options: RobustOptions,
    best_ms: Option<f64>,
}

impl<M> Robust<M> {
    /// Wraps `inner`.
    pub fn new(inner: M, options: RobustOptions) -> Self {
        Robust {
            inner,
            options,
            best_ms: None,
        }
    }

    /// The wrapped measurer.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// The wrapped measurer, mutably.
    pub fn inner_mut(&mut self) -> &mut M {
        &mut self.inner
    }

    /// Unwraps.
    pub fn into_inner(self) -> M {
        self.inner
    }

    /// The options.
    pub fn options(&self) -> RobustOptions {
        self.options
    }
}

impl<M: Measure> Measure for Robust<M> {
    /// Races with the stable-median rule when a `tolerance` is set ([`Samples::with_bound`]).
    fn set_best(&mut self, best_ms: f64) {
        self.best_ms = Some(best_ms);
        self.inner.set_best(best_ms);
    }

    fn stage_times(&mut self, config: &Configuration) -> Result<StageTimes, MeasureError> {
        for _ in 0..self.options.warmup {
            measure_checked(&mut self.inner, config)?;
        }
        let rule = Stability::up_to(self.options.repetitions, self.options.tolerance);
        let bound = self.best_ms.take().filter(|_| self.options.tolerance > 0.0);
        let mut samples = Samples::new(config.stage_count()).with_bound(bound);
        while !samples.settled(&rule) {
            samples.push(&measure_checked(&mut self.inner, config)?.stage_ms);
        }
        Ok(samples.times(self.options.mad_k))
    }
}

/// The median of a sample set (the mean of the two middle values for an even count);
/// `None` when empty. NaNs sort last.
///
/// ```
/// use taopipe_tuner::median;
///
/// assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
/// assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
/// assert_eq!(median(&[]), None);
/// ```
pub fn median(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// The median of the samples left after dropping those farther than `k · 1.4826 · MAD`
/// from the median (MAD: the median absolute deviation from the median). With MAD = 0 (at
/// least half the samples equal the median) only the samples equal to the median stay.
/// `None` when empty.
///
/// ```
/// use taopipe_tuner::median_without_outliers;
///
/// // the 100 is dropped, the median of the other four is 10.15
/// let m = median_without_outliers(&[10.0, 10.2, 100.0, 10.1, 10.3], 3.0).unwrap();
/// assert!((m - 10.15).abs() < 1e-12);
/// ```
pub fn median_without_outliers(samples: &[f64], k: f64) -> Option<f64> {
    let med = median(samples)?;
    let deviations: Vec<f64> = samples.iter().map(|x| (x - med).abs()).collect();
    let mad = median(&deviations)?;
    let limit = k * 1.482_6 * mad;
    let kept: Vec<f64> = samples
        .iter()
        .copied()
        .filter(|x| (x - med).abs() <= limit)
        .collect();
    median(&kept).or(Some(med))
}

#[cfg(test)]
mod test;
