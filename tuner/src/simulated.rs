//! A simulated platform: per-unit costs, per-worker speeds, clusters, a cross-cluster
//! penalty and sub-linear parallel speed-up; deterministic unless noise is asked for.

use taopipe_dsl::SplitMix64;

use crate::config::contiguous_places;
use crate::{Configuration, Measure, MeasureError, PlacePolicy, StageTimes};

/// The best of one stage count found by [`SimulatedPlatform::optimum`]'s dynamic program:
/// composition, places, slowest stage.
type Candidate = (Vec<usize>, Vec<(usize, usize)>, f64);

/// A platform model for tests and experiments.
///
/// The time of a stage holding units `a..b` on the workers of its place is
///
/// ```text
/// Σ unit_costs[a..b] / (min speed of the place's workers × width^parallel_efficiency)
///                    × (cross_cluster_penalty if the place spans more than one cluster)
/// ```
///
/// and, with `noise = Some((seed, σ))`, multiplied by `exp(σ·z)` with `z` standard normal
/// drawn from a SplitMix64 seeded with `seed` (a log-normal factor: always positive,
/// median 1, relative spread ≈ σ for small σ). Without noise the same configuration always
/// takes the same time. Every call of [`Measure::stage_times`] counts one measurement.
///
/// ```
/// use taopipe_tuner::{Configuration, Measure, SimulatedPlatform};
///
/// let mut sim = SimulatedPlatform::symmetric(vec![1.0, 4.0, 8.0, 4.0, 8.0, 8.0, 4.0], 4);
/// let t = sim.stage_times(&Configuration::contiguous(&[3, 2, 2], 4)?)?;
/// // [3,2,2] on 0+2, 2+1, 3+1: 13 / 2^0.9, 12, 12
/// assert!((t.stage_ms[0] - 13.0 / 2f64.powf(0.9)).abs() < 1e-12);
/// assert_eq!(t.slowest_ms(), 12.0);
/// assert_eq!(sim.measurements(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SimulatedPlatform {
    /// Milliseconds per unit on one worker of speed 1.
    pub unit_costs: Vec<f64>,
    /// Relative speed of each worker (> 0; 1 is nominal, 0.5 runs at half speed).
    pub worker_speed: Vec<f64>,
    /// Cluster of each worker (same length as `worker_speed`).
    pub cluster_of: Vec<usize>,
    /// Factor (≥ 1 in any sensible model) slowing a stage whose place spans two clusters.
    pub cross_cluster_penalty: f64,
    /// Width `w` gives a speed-up of `w^parallel_efficiency` (1: linear).
    pub parallel_efficiency: f64,
    /// `(seed, relative σ)` of a multiplicative log-normal noise; `None`: deterministic.
    pub noise: Option<(u64, f64)>,
    measurements: u64,
    rng: Option<SplitMix64>,
}

/// The governor settings of the paper's Table 1 (Jetson TX2), for
/// [`SimulatedPlatform::tx2`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tx2Governor {
    /// Setting 1: A57 performance, Denver performance (symmetric).
    Setting1,
    /// Setting 2: A57 performance, Denver powersave.
    Setting2,
    /// Setting 3: A57 powersave, Denver performance (the most asymmetric, §6.4).
    Setting3,
    /// Setting 4: A57 powersave, Denver powersave.
    Setting4,
}

/// Speed of a cluster at the "powersave" governor relative to "performance".
pub const POWERSAVE_SPEED: f64 = 0.5;
/// The cross-cluster penalty of the presets.
pub const PRESET_PENALTY: f64 = 1.25;
/// The parallel efficiency of the presets (`w^0.9` speed-up).
pub const PRESET_EFFICIENCY: f64 = 0.9;

impl SimulatedPlatform {
    /// A platform with the given costs, speeds and clusters; penalty 1 (none), efficiency
    /// [`PRESET_EFFICIENCY`], no noise. Inconsistent values are reported by
    /// [`Measure::stage_times`], not here.
    pub fn new(unit_costs: Vec<f64>, worker_speed: Vec<f64>, cluster_of: Vec<usize>) -> Self {
        SimulatedPlatform {
            unit_costs,
            worker_speed,
            cluster_of,
            cross_cluster_penalty: 1.0,
            parallel_efficiency: PRESET_EFFICIENCY,
            noise: None,
            measurements: 0,
            rng: None,
        }
    }

    /// `workers` workers of speed 1 in one cluster.
    pub fn symmetric(unit_costs: Vec<f64>, workers: usize) -> Self {
        SimulatedPlatform::new(unit_costs, vec![1.0; workers], vec![0; workers])
    }

    /// Two clusters: workers `0..fast` of speed 1 (cluster 0), then `slow` workers of speed
    /// `slow_speed` (cluster 1); cross-cluster penalty [`PRESET_PENALTY`].
    ///
    /// ```
    /// use taopipe_tuner::{POWERSAVE_SPEED, SimulatedPlatform};
    ///
    /// let sim = SimulatedPlatform::asymmetric(vec![1.0; 10], 4, 4, POWERSAVE_SPEED);
    /// assert_eq!(sim.worker_speed, vec![1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5]);
    /// assert_eq!(sim.cluster_of, vec![0, 0, 0, 0, 1, 1, 1, 1]);
    /// ```
    pub fn asymmetric(unit_costs: Vec<f64>, fast: usize, slow: usize, slow_speed: f64) -> Self {
        let mut speed = vec![1.0; fast];
        speed.extend(std::iter::repeat_n(slow_speed, slow));
        let mut cluster = vec![0; fast];
        cluster.extend(std::iter::repeat_n(1, slow));
        SimulatedPlatform::new(unit_costs, speed, cluster).with_penalty(PRESET_PENALTY)
    }

    /// The paper's 4-core testbed (§6.4): workers 0–1 the Denver cluster, 2–3 two A57
    /// cores, each cluster at speed 1 ("performance") or [`POWERSAVE_SPEED`]
    /// ("powersave") per Table 1; cross-cluster penalty [`PRESET_PENALTY`].
    ///
    /// ```
    /// use taopipe_tuner::{SimulatedPlatform, Tx2Governor};
    ///
    /// let sim = SimulatedPlatform::tx2(vec![1.0; 21], Tx2Governor::Setting3);
    /// assert_eq!(sim.worker_speed, vec![1.0, 1.0, 0.5, 0.5]); // Denver fast, A57 slow
    /// ```
    pub fn tx2(unit_costs: Vec<f64>, governor: Tx2Governor) -> Self {
        let (a57, denver) = match governor {
            Tx2Governor::Setting1 => (1.0, 1.0),
            Tx2Governor::Setting2 => (1.0, POWERSAVE_SPEED),
            Tx2Governor::Setting3 => (POWERSAVE_SPEED, 1.0),
            Tx2Governor::Setting4 => (POWERSAVE_SPEED, POWERSAVE_SPEED),
        };
        SimulatedPlatform::new(unit_costs, vec![denver, denver, a57, a57], vec![0, 0, 1, 1])
            .with_penalty(PRESET_PENALTY)
    }

    /// Sets the cross-cluster penalty.
    pub fn with_penalty(mut self, penalty: f64) -> Self {
        self.cross_cluster_penalty = penalty;
        self
    }

    /// Sets the parallel efficiency.
    pub fn with_efficiency(mut self, efficiency: f64) -> Self {
        self.parallel_efficiency = efficiency;
        self
    }

    /// Adds log-normal noise of relative spread `sigma`, seeded with `seed`.
    pub fn with_noise(mut self, seed: u64, sigma: f64) -> Self {
        self.noise = Some((seed, sigma));
        self.rng = Some(SplitMix64::new(seed));
        self
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.worker_speed.len()
    }

    /// Number of units.
    pub fn units(&self) -> usize {
        self.unit_costs.len()
    }

    /// How many times [`Measure::stage_times`] has been called successfully.
    pub fn measurements(&self) -> u64 {
        self.measurements
    }

    fn check(&self) -> Result<(), MeasureError> {
        let bad = |reason: String| Err(MeasureError::Platform { reason });
        if self.cluster_of.len() != self.worker_speed.len() {
            return bad(format!(
                "{} workers have speeds but {} have clusters",
                self.worker_speed.len(),
                self.cluster_of.len()
            ));
        }
        if let Some((w, s)) = self
            .worker_speed
            .iter()
            .enumerate()
            .find(|(_, s)| !(s.is_finite() && **s > 0.0))
        {
            return bad(format!("worker {w} has speed {s} (must be finite and > 0)"));
        }
        if let Some((u, c)) = self
            .unit_costs
            .iter()
            .enumerate()
            .find(|(_, c)| !(c.is_finite() && **c >= 0.0))
        {
            return bad(format!("unit {u} costs {c} ms (must be finite and >= 0)"));
        }
        if !(self.cross_cluster_penalty.is_finite() && self.cross_cluster_penalty > 0.0) {
            return bad(format!(
                "cross-cluster penalty {} (must be finite and > 0)",
                self.cross_cluster_penalty
            ));
        }
        if !self.parallel_efficiency.is_finite() {
            return bad(format!(
                "parallel efficiency {} (must be finite)",
                self.parallel_efficiency
            ));
        }
        Ok(())
    }

    /// The noiseless time of a stage of total unit cost `cost` on the workers
    /// `leader..leader + width` (checked by the caller).
    fn stage_ms(&self, cost: f64, leader: usize, width: usize) -> f64 {
        cost * self.place_factor(leader, width)
    }

    /// The speed-aware seed key for this platform's [`PlacePolicy::Contiguous`] places:
    /// stage `r` of `p` weighs its [`place_factor`](Self::place_factor). What a runtime
    /// that knows its cores' speeds can give Pipe-search (see
    /// [`SpeedScaled`](taopipe_dsl::SpeedScaled)); ignores noise, like the runtime would.
    pub fn speed_key(&self) -> taopipe_dsl::SpeedScaled {
        let sim = self.clone();
        taopipe_dsl::SpeedScaled::new(move |p, r| {
            contiguous_places(sim.workers(), p)
                .ok()
                .and_then(|places| places.get(r).copied())
                .map_or(1.0, |(leader, width)| sim.place_factor(leader, width))
        })
    }

    /// Milliseconds per unit of cost on the place: `penalty / (min speed × width^eff)`.
    ///
    /// # Panics
    /// If the place is outside the platform.
    pub fn place_factor(&self, leader: usize, width: usize) -> f64 {
        let place = leader..leader + width;
        let speed = self.worker_speed[place.clone()]
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let first = self.cluster_of[leader];
        let spans = self.cluster_of[place].iter().any(|&c| c != first);
        let penalty = if spans {
            self.cross_cluster_penalty
        } else {
            1.0
        };
        penalty / (speed * (width as f64).powf(self.parallel_efficiency))
    }

    fn noise_factor(&mut self) -> f64 {
        let Some((seed, sigma)) = self.noise else {
            return 1.0;
        };
        let rng = self.rng.get_or_insert_with(|| SplitMix64::new(seed));
        // Box–Muller with uniforms in (0, 1]
        let u1 = ((rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let u2 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (sigma * z).exp()
    }

    /// The exact best slowest-stage time over a search space, without measuring (nothing
    /// is counted), by dynamic programming over stages, units and workers — the ground
    /// truth that an exhaustive search over the same space finds, for spaces too large to
    /// enumerate. Returns a configuration reaching it (ties: the first found by the DP,
    /// not necessarily the exhaustive order's first) and its time; `None` when the space
    /// is empty. Ignores noise.
    ///
    /// # Errors
    ///
    /// [`MeasureError::Platform`] for an inconsistent platform.
    pub fn optimum(
        &self,
        max_stages: usize,
        policy: PlacePolicy,
    ) -> Result<Option<(Configuration, f64)>, MeasureError> {
        self.check()?;
        let m = self.units();
        let w = self.workers();
        let mut prefix = vec![0.0; m + 1];
        for (i, c) in self.unit_costs.iter().enumerate() {
            prefix[i + 1] = prefix[i] + c;
        }
        let top = max_stages.min(m).min(w);
        let found: Vec<Candidate> = match policy {
            PlacePolicy::Contiguous => (2..=top)
                .map(|p| {
                    let places = contiguous_places(w, p)?;
                    Ok(self.best_for_places(&prefix, &places))
                })
                .collect::<Result<_, MeasureError>>()?,
            PlacePolicy::EveryWidthSplit => self.best_for_width_splits(&prefix, top),
        };
        let mut best: Option<(Configuration, f64)> = None;
        for (composition, places, t) in found {
            if t.is_finite() && best.as_ref().is_none_or(|b| t < b.1) {
                let c = Configuration::with_places(&composition, &places, m, w)?;
                best = Some((c, t));
            }
        }
        Ok(best)
    }

    /// For every stage count `p` in `2..=top`, the best composition over every width split
    /// of all the workers: `f[s][i][j]` = best bottleneck of `s` stages holding units `0..i`
    /// on workers `0..j`, `O(top · M² · W²)`.
    fn best_for_width_splits(&self, prefix: &[f64], top: usize) -> Vec<Candidate> {
        let m = prefix.len() - 1;
        let w = self.workers();
        let idx = |i: usize, j: usize| i * (w + 1) + j;
        let size = (m + 1) * (w + 1);
        let mut f = vec![vec![f64::INFINITY; size]; top + 1];
        let mut arg = vec![vec![(0usize, 0usize); size]; top + 1];
        // factor[l][j]: the place l..j
        let factor: Vec<Vec<f64>> = (0..=w)
            .map(|l| {
                (0..=w)
                    .map(|j| {
                        if j > l {
                            self.place_factor(l, j - l)
                        } else {
                            0.0
                        }
                    })
                    .collect()
            })
            .collect();
        f[0][idx(0, 0)] = 0.0;
        for s in 1..=top {
            for i in s..=m {
                for j in s..=w {
                    let mut bestv = f64::INFINITY;
                    let mut besta = (0, 0);
                    for k in (s - 1)..i {
                        for l in (s - 1)..j {
                            let prev = f[s - 1][idx(k, l)];
                            if prev.is_infinite() {
                                continue;
                            }
                            let t = (prefix[i] - prefix[k]) * factor[l][j];
                            let v = prev.max(t);
                            if v < bestv {
                                bestv = v;
                                besta = (k, l);
                            }
                        }
                    }
                    f[s][idx(i, j)] = bestv;
                    arg[s][idx(i, j)] = besta;
                }
            }
        }
        (2..=top)
            .map(|p| {
                let mut composition = vec![0; p];
                let mut places = vec![(0, 0); p];
                let (mut i, mut j) = (m, w);
                for s in (1..=p).rev() {
                    let (k, l) = arg[s][idx(i, j)];
                    composition[s - 1] = i - k;
                    places[s - 1] = (l, j - l);
                    (i, j) = (k, l);
                }
                (composition, places, f[p][idx(m, w)])
            })
            .collect()
    }

    /// Min over compositions of the max stage time, the places fixed: `f[s][i]` = best
    /// bottleneck of the first `s` stages holding units `0..i`.
    fn best_for_places(&self, prefix: &[f64], places: &[(usize, usize)]) -> Candidate {
        let m = prefix.len() - 1;
        let p = places.len();
        let mut f = vec![vec![f64::INFINITY; m + 1]; p + 1];
        let mut arg = vec![vec![0usize; m + 1]; p + 1];
        f[0][0] = 0.0;
        for s in 1..=p {
            let (leader, width) = places[s - 1];
            // stage s-1 ends at i; at least s units before, at least p-s after
            for i in s..=m - (p - s) {
                for k in (s - 1)..i {
                    if f[s - 1][k].is_infinite() {
                        continue;
                    }
                    let t = self.stage_ms(prefix[i] - prefix[k], leader, width);
                    let v = f[s - 1][k].max(t);
                    if v < f[s][i] {
                        f[s][i] = v;
                        arg[s][i] = k;
                    }
                }
            }
        }
        let mut composition = vec![0; p];
        let mut i = m;
        for s in (1..=p).rev() {
            let k = arg[s][i];
            composition[s - 1] = i - k;
            i = k;
        }
        (composition, places.to_vec(), f[p][m])
    }
}

impl Measure for SimulatedPlatform {
    fn stage_times(&mut self, config: &Configuration) -> Result<StageTimes, MeasureError> {
        self.check()?;
        config.validate(self.units(), self.workers())?;
        let mut stage_ms = Vec::with_capacity(config.stage_count());
        for (range, s) in config.unit_ranges().into_iter().zip(config.stages()) {
            let cost: f64 = self.unit_costs[range].iter().sum();
            let t = self.stage_ms(cost, s.leader, s.width);
            stage_ms.push(t * self.noise_factor());
        }
        self.measurements += 1;
        Ok(StageTimes::new(stage_ms))
    }
}

#[cfg(test)]
mod test;
