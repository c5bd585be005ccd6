//! Frame latencies: one distribution type and one quantile definition for every report
//! (pipelines, switch mode, the layer-parallel baseline, the planners), so tables that
//! put them side by side compare like with like.

use std::time::Duration;

use hdrhistogram::Histogram;

/// Latencies from 1 µs to an hour, kept to 3 significant digits (hdrhistogram), without
/// storing the samples.
///
/// **The quantile** ([`Latencies::quantile_ms`]) is hdrhistogram's `value_at_quantile`:
/// the smallest recorded value such that at least a fraction `q` of the samples are at or
/// below it, to 3 significant digits (nearest rank, `ceil(q·n)`-th smallest).
///
/// ```
/// use std::time::Duration;
/// use taopipe_runtime::Latencies;
///
/// let mut l = Latencies::new();
/// for ms in [5, 1, 4, 2, 3] {
///     l.record(Duration::from_millis(ms));
/// }
/// assert_eq!(l.len(), 5);
/// assert!((l.quantile_ms(0.5) - 3.0).abs() < 0.01);
/// assert!((l.quantile_ms(1.0) - 5.0).abs() < 0.01);
/// ```
#[derive(Debug, Clone)]
pub struct Latencies {
    us: Histogram<u64>,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies::new()
    }
}

impl PartialEq for Latencies {
    fn eq(&self, other: &Self) -> bool {
        self.us == other.us
    }
}

impl Latencies {
    /// No samples yet.
    pub fn new() -> Latencies {
        Latencies {
            us: Histogram::new_with_bounds(1, 3_600_000_000, 3)
                .expect("constant histogram bounds are valid"),
        }
    }

    /// Adds one sample (clamped to 1 µs .. 1 h).
    pub fn record(&mut self, d: Duration) {
        self.us.saturating_record(d.as_micros().max(1) as u64);
    }

    /// Forgets every sample, keeping the histogram's memory: a long run that reports its
    /// latency per minute reuses one histogram instead of allocating one a minute.
    ///
    /// ```
    /// use std::time::Duration;
    /// use taopipe_runtime::Latencies;
    ///
    /// let mut l = Latencies::new();
    /// l.record(Duration::from_millis(5));
    /// l.reset();
    /// assert!(l.is_empty());
    /// assert_eq!(l, Latencies::new());
    /// ```
    pub fn reset(&mut self) {
        self.us.reset();
    }

    /// Samples recorded.
    pub fn len(&self) -> u64 {
        self.us.len()
    }

    /// Whether none was recorded.
    pub fn is_empty(&self) -> bool {
        self.us.is_empty()
    }

    /// The `q` quantile (`q` in 0..=1, clamped) in ms, by the definition in the type's
    /// docs; 0 without samples.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        if self.is_empty() {
            return 0.0;
        }
        self.us.value_at_quantile(q.clamp(0.0, 1.0)) as f64 / 1e3
    }

    /// The mean in ms (to the histogram's precision); 0 without samples.
    pub fn mean_ms(&self) -> f64 {
        self.us.mean() / 1e3
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank_to_three_digits() {
        let mut l = Latencies::new();
        assert_eq!(l.quantile_ms(0.5), 0.0);
        for ms in [5.0, 1.0, 4.0, 2.0, 3.0] {
            l.record(Duration::from_secs_f64(ms / 1e3));
        }
        // ceil(q·5)-th smallest: 0.2 → 1st, 0.21 → 2nd, 0.5 → 3rd, 0.99 → 5th.
        for (q, want) in [
            (0.0, 1.0),
            (0.2, 1.0),
            (0.21, 2.0),
            (0.5, 3.0),
            (0.99, 5.0),
            (1.0, 5.0),
        ] {
            let got = l.quantile_ms(q);
            assert!(
                (got - want).abs() <= want * 1e-3,
                "q = {q}: {got} vs {want}"
            );
        }
        assert!((l.mean_ms() - 3.0).abs() < 3e-3);
        l.record(Duration::from_secs(7200)); // past the bound: clamped, not lost
        assert_eq!(l.len(), 6);
    }
}
