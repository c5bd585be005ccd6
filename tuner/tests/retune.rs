//! Watching and re-tuning on the simulated platform, with a schedule of worker speeds and
//! ±5% noise on every frame (deterministic: a seeded generator). After each change of
//! speeds the watch reports a change, and the warm re-tune reaches a configuration within
//! 5% of the exhaustive optimum for the new speeds; noise alone never triggers one.

use taopipe_dsl::{SYNTH2, SYNTH3};
use taopipe_tuner::{
    Configuration, Measure, MeasureError, PipeSearch, PlacePolicy, Samples, SimulatedPlatform,
    Stability, StageTimes, WarmStart, Watch, WatchOptions, retune,
};

/// α of every re-tune (the engine's default `retune_alpha`).
const ALPHA: usize = 1;

/// A platform serving frames: each frame's stage times are the simulator's (noise-free)
/// times, each times a factor drawn uniformly from [0.95, 1.05].
struct Served {
    sim: SimulatedPlatform,
    rng: u64,
    frames: u64,
}

impl Served {
    fn frame(&mut self, config: &Configuration) -> StageTimes {
        self.frames += 1;
        let mut t = self.sim.stage_times(config).expect("fits");
        for v in &mut t.stage_ms {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let u = (self.rng >> 11) as f64 / (1u64 << 53) as f64;
            *v *= 0.95 + 0.1 * u;
        }
        t
    }

    /// The best time for the current speeds: the exhaustive optimum of 2..=C stages, or
    /// one stage on every worker if that is faster.
    fn optimum(&self, units: usize) -> f64 {
        let workers = self.sim.worker_speed.len();
        let mut sim = self.sim.clone();
        let one = Configuration::contiguous(&[units], workers).expect("one stage");
        let one_ms = sim.stage_times(&one).expect("fits").slowest_ms();
        let (_, multi) = sim
            .optimum(workers, PlacePolicy::Contiguous)
            .expect("valid")
            .expect("some");
        one_ms.min(multi)
    }

    fn true_ms(&self, config: &Configuration) -> f64 {
        self.sim
            .clone()
            .stage_times(config)
            .expect("fits")
            .slowest_ms()
    }
}

/// Trials measured on served frames, repeated until the median is stable.
impl Measure for Served {
    fn stage_times(&mut self, config: &Configuration) -> Result<StageTimes, MeasureError> {
        let mut samples = Samples::new(config.stage_count());
        while !samples.settled(&Stability::default()) {
            samples.push(&self.frame(config).stage_ms);
        }
        Ok(samples.times(3.0))
    }
}

/// Serves `frames` frames of `config`, re-tuning on every change the watch reports;
/// returns how many re-tunes ran.
fn serve(
    served: &mut Served,
    weights: &[u64],
    config: &mut Configuration,
    watch: &mut Watch,
    frames: usize,
) -> usize {
    let workers = served.sim.worker_speed.len();
    let mut retunes = 0;
    for _ in 0..frames {
        let times = served.frame(config);
        if watch.observe(&times.stage_ms).is_none() {
            continue;
        }
        retunes += 1;
        // (The window was cleared by the change; its frames were the ones just seen.)
        let window = served.frame(config);
        let per_worker_ms = per_worker(served, config, weights);
        let start = WarmStart {
            current: config,
            times: &window,
            per_worker_ms: &per_worker_ms,
        };
        let found = retune(
            &PipeSearch::new(ALPHA, workers),
            weights,
            workers,
            start,
            served,
        )
        .expect("re-tune");
        *config = found.best.clone();
        *watch = Watch::new(WatchOptions::default(), Some(&found.best_times));
    }
    retunes
}

/// What the live engine reads from the runtime's busy counters: each worker's own time per
/// frame for its share of its stage (a gang's fast worker finishes early and waits).
fn per_worker(served: &Served, config: &Configuration, weights: &[u64]) -> Vec<f64> {
    let sim = &served.sim;
    let mut ms = vec![0.0; sim.worker_speed.len()];
    for (range, (leader, width)) in config.unit_ranges().into_iter().zip(config.places()) {
        let work: f64 = weights[range].iter().map(|&w| w as f64).sum();
        let share = work / (width as f64).powf(sim.parallel_efficiency);
        for (ms, speed) in ms[leader..leader + width]
            .iter_mut()
            .zip(&sim.worker_speed[leader..leader + width])
        {
            *ms = share / speed;
        }
    }
    ms
}

fn schedule_test(weights: &[u64]) {
    let units = weights.len();
    let workers = 4;
    let costs: Vec<f64> = weights.iter().map(|&w| w as f64).collect();
    let mut served = Served {
        sim: SimulatedPlatform::new(costs, vec![1.0; workers], vec![0, 0, 1, 1]),
        rng: 0x2545_f491_4f6c_dd1d,
        frames: 0,
    };
    // Start from the one-stage configuration: the first change of speeds finds it stale.
    let mut config = Configuration::contiguous(&[units], workers).expect("one stage");
    let mut watch = Watch::new(WatchOptions::default(), None);
    assert_eq!(
        serve(&mut served, weights, &mut config, &mut watch, 2000),
        0,
        "±5% noise alone re-tuned"
    );
    let schedule: [&[f64]; 4] = [
        &[1.0, 1.0, 0.5, 0.5],  // cluster 1 at powersave
        &[0.5, 1.0, 1.0, 1.0],  // worker 0 slowed, cluster 1 back
        &[1.0, 1.0, 1.0, 0.25], // worker 3 throttled hard
        &[1.0, 1.0, 1.0, 1.0],  // all back
    ];
    for speeds in schedule {
        served.sim.worker_speed = speeds.to_vec();
        let before = served.frames;
        let retunes = serve(&mut served, weights, &mut config, &mut watch, 600);
        let (got, best) = (served.true_ms(&config), served.optimum(units));
        assert!(retunes >= 1, "speeds {speeds:?}: no re-tune");
        assert!(
            got <= best * 1.05,
            "speeds {speeds:?}: re-tuned to {config} at {got:.2} ms, optimum {best:.2} ms \
             ({retunes} re-tunes, {} frames)",
            served.frames - before
        );
        // Settled: the same speeds and noise for long after trigger nothing more.
        assert_eq!(
            serve(&mut served, weights, &mut config, &mut watch, 1000),
            0,
            "speeds {speeds:?}: re-tuned again without a change"
        );
    }
}

#[test]
fn each_change_of_speeds_is_followed_by_a_re_tune_near_the_optimum_synth2() {
    schedule_test(&SYNTH2);
}

#[test]
fn each_change_of_speeds_is_followed_by_a_re_tune_near_the_optimum_synth3() {
    schedule_test(&SYNTH3);
}
