//! Worker speeds: estimated from measured times, and turned into a seed key so that a
//! re-tune's CV-sorted lists are ranked for the speeds just measured.

use taopipe_dsl::SpeedScaled;

use crate::{AllowedPlaces, Configuration};

/// The speed-aware seed key for workers of relative speeds `speeds` (beyond the paper; see
/// [`SpeedScaled`]): stage `r` of `p` stages sits on the `r`-th of
/// [`places.contiguous(p)`](AllowedPlaces::contiguous) (the places Pipe-search gives it),
/// whose time per unit of weight is taken as `1 / (slowest worker's speed × width)`. With
/// equal speeds the seeds are the paper's.
///
/// ```
/// use taopipe_dsl::Seeds;
/// use taopipe_tuner::{AllowedPlaces, speed_key};
///
/// let key = speed_key(vec![1.0, 0.5], &AllowedPlaces::all(2));
/// let seeds = Seeds::new(&[1; 9], 2)?.with_key(key);
/// assert_eq!(seeds.top_k(2, 1)?[0].composition, vec![6, 3]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn speed_key(speeds: Vec<f64>, places: &AllowedPlaces) -> SpeedScaled {
    let places = places.clone();
    SpeedScaled::new(move |p, r| {
        let Some((leader, width)) = places
            .contiguous(p)
            .ok()
            .and_then(|places| places.get(r).copied())
            .filter(|&(leader, width)| leader + width <= speeds.len())
        else {
            return 1.0;
        };
        let slowest = speeds[leader..leader + width]
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        1.0 / (slowest * width as f64)
    })
}

/// Each worker's speed relative to the fastest, estimated while `config` ran: the worker
/// did `1/width` of its stage's unit weight (`weights`, per unit) in `per_worker_ms` per
/// frame. A worker with no time (idle, or outside every stage) counts as fastest.
///
/// The live engine passes each worker's busy time per frame, which tells the two workers
/// of a one-stage configuration apart; from stage times alone (every worker of a stage
/// given its stage's time) the workers of one stage get one speed.
///
/// ```
/// use taopipe_tuner::{Configuration, worker_speeds};
///
/// // 6 units of weight 1 split 3 + 3 on two workers; worker 1 took twice as long.
/// let config = Configuration::contiguous(&[3, 3], 2)?;
/// assert_eq!(worker_speeds(&config, &[1; 6], &[30.0, 60.0]), vec![1.0, 0.5]);
/// # Ok::<(), taopipe_tuner::ConfigError>(())
/// ```
pub fn worker_speeds(config: &Configuration, weights: &[u64], per_worker_ms: &[f64]) -> Vec<f64> {
    let mut rate = vec![f64::NAN; per_worker_ms.len()];
    for (range, (leader, width)) in config.unit_ranges().into_iter().zip(config.places()) {
        let share = weights[range].iter().map(|&w| w as f64).sum::<f64>() / width as f64;
        for w in leader..(leader + width).min(rate.len()) {
            if per_worker_ms[w] > 0.0 && per_worker_ms[w].is_finite() {
                rate[w] = share / per_worker_ms[w];
            }
        }
    }
    let fastest = rate
        .iter()
        .copied()
        .filter(|r| r.is_finite())
        .fold(0.0, f64::max);
    rate.iter()
        .map(|&r| {
            if r.is_finite() && fastest > 0.0 {
                r / fastest
            } else {
                1.0
            }
        })
        .collect()
}
