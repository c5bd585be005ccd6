use super::*;
use crate::ConfigError;

fn synth1_costs() -> Vec<f64> {
    vec![1.0, 4.0, 8.0, 4.0, 8.0, 8.0, 4.0]
}

#[test]
fn stage_time_formula_by_hand() {
    // workers 0,1 speed 1 (cluster 0); 2,3 speed 0.5 (cluster 1); penalty 1.25, eff 0.9
    let mut sim = SimulatedPlatform::asymmetric(synth1_costs(), 2, 2, 0.5);
    // [3,2,2] on 0+2, 2+1, 3+1: 13 / 2^0.9; 12 / 0.5; 12 / 0.5
    let c = Configuration::contiguous(&[3, 2, 2], 4).expect("valid");
    let t = sim.stage_times(&c).expect("measures");
    assert!((t.stage_ms[0] - 13.0 / 2f64.powf(0.9)).abs() < 1e-12);
    assert_eq!(t.stage_ms[1], 24.0);
    assert_eq!(t.stage_ms[2], 24.0);
    // a place spanning both clusters: the slowest worker and the penalty
    // [4,3] on 0+3, 3+1: 17 / (0.5 · 3^0.9) · 1.25; 20 / 0.5
    let c = Configuration::with_places(&[4, 3], &[(0, 3), (3, 1)], 7, 4).expect("valid");
    let t = sim.stage_times(&c).expect("measures");
    assert!((t.stage_ms[0] - 17.0 / (0.5 * 3f64.powf(0.9)) * 1.25).abs() < 1e-12);
    assert_eq!(t.stage_ms[1], 40.0);
    assert_eq!(t.slowest_ms(), 40.0);
    assert_eq!(sim.measurements(), 2);
    // deterministic without noise
    assert_eq!(sim.stage_times(&c).expect("measures"), t);
}

#[test]
fn presets() {
    let s = SimulatedPlatform::symmetric(synth1_costs(), 3);
    assert_eq!(s.worker_speed, vec![1.0; 3]);
    assert_eq!(s.cluster_of, vec![0; 3]);
    let t = |g| SimulatedPlatform::tx2(synth1_costs(), g).worker_speed;
    assert_eq!(t(Tx2Governor::Setting1), vec![1.0, 1.0, 1.0, 1.0]);
    assert_eq!(t(Tx2Governor::Setting2), vec![0.5, 0.5, 1.0, 1.0]);
    assert_eq!(t(Tx2Governor::Setting3), vec![1.0, 1.0, 0.5, 0.5]);
    assert_eq!(t(Tx2Governor::Setting4), vec![0.5, 0.5, 0.5, 0.5]);
    let tx2 = SimulatedPlatform::tx2(synth1_costs(), Tx2Governor::Setting1);
    assert_eq!(tx2.cluster_of, vec![0, 0, 1, 1]);
    assert_eq!(tx2.cross_cluster_penalty, PRESET_PENALTY);
}

#[test]
fn noise_is_seeded_and_relative() {
    let c = Configuration::contiguous(&[3, 4], 2).expect("valid");
    let run = |seed| {
        let mut sim = SimulatedPlatform::symmetric(synth1_costs(), 2).with_noise(seed, 0.1);
        (0..50)
            .map(|_| sim.stage_times(&c).expect("ok").stage_ms[0])
            .collect::<Vec<f64>>()
    };
    let a = run(1);
    assert_eq!(a, run(1));
    assert_ne!(a, run(2));
    let exact = 13.0; // [3,4] on 0+1, 1+1
    assert!(a.iter().all(|&x| x > 0.0));
    assert!(a.iter().any(|&x| x != exact));
    let mean_log = a.iter().map(|x| (x / exact).ln()).sum::<f64>() / a.len() as f64;
    assert!(mean_log.abs() < 0.05, "{mean_log}");
    // setting the field directly (without with_noise) also works
    let mut sim = SimulatedPlatform::symmetric(synth1_costs(), 2);
    sim.noise = Some((1, 0.1));
    assert_eq!(sim.stage_times(&c).expect("ok").stage_ms[0], a[0]);
}

#[test]
fn bad_platforms_and_configurations_are_errors() {
    let c = Configuration::contiguous(&[3, 4], 2).expect("valid");
    let mut sim = SimulatedPlatform::new(synth1_costs(), vec![1.0, 0.0], vec![0, 0]);
    let e = sim.stage_times(&c).expect_err("speed 0");
    assert!(e.to_string().contains("worker 1 has speed 0"), "{e}");
    let mut sim = SimulatedPlatform::new(synth1_costs(), vec![1.0, 1.0], vec![0]);
    assert!(matches!(
        sim.stage_times(&c),
        Err(MeasureError::Platform { .. })
    ));
    let mut sim = SimulatedPlatform::new(vec![1.0, f64::NAN], vec![1.0, 1.0], vec![0, 0]);
    assert!(matches!(
        sim.stage_times(&Configuration::contiguous(&[1, 1], 2).expect("ok")),
        Err(MeasureError::Platform { .. })
    ));
    let mut sim = SimulatedPlatform::symmetric(synth1_costs(), 2).with_penalty(f64::INFINITY);
    assert!(sim.stage_times(&c).is_err());
    let mut sim = SimulatedPlatform::symmetric(synth1_costs(), 2).with_efficiency(f64::NAN);
    assert!(sim.stage_times(&c).is_err());
    // a configuration for another net or platform
    let mut sim = SimulatedPlatform::symmetric(synth1_costs(), 2);
    let other = Configuration::contiguous(&[3, 3], 2).expect("valid");
    assert!(matches!(
        sim.stage_times(&other),
        Err(MeasureError::Config(ConfigError::UnitCount { .. }))
    ));
    let wide = Configuration::contiguous(&[3, 4], 3).expect("valid");
    assert!(matches!(
        sim.stage_times(&wide),
        Err(MeasureError::Config(ConfigError::OutsidePlatform { .. }))
    ));
    assert_eq!(sim.measurements(), 0);
}

#[test]
fn optimum_equals_exhaustive_on_small_spaces() {
    use crate::{Exhaustive, SearchSpace};
    for (units, workers) in [(5, 3), (7, 4), (9, 5), (10, 6)] {
        let costs: Vec<f64> = (0..units).map(|i| ((i * 7 + 3) % 11 + 1) as f64).collect();
        for fast in 1..workers {
            let mut sim = SimulatedPlatform::asymmetric(costs.clone(), fast, workers - fast, 0.6);
            for policy in [PlacePolicy::Contiguous, PlacePolicy::EveryWidthSplit] {
                for max_stages in 2..=workers {
                    let space = SearchSpace::new(units, workers, max_stages, policy);
                    let truth = Exhaustive::new(space.clone()).run(&mut sim).expect("runs");
                    let (c, t) = sim
                        .optimum(max_stages, policy)
                        .expect("ok")
                        .expect("non-empty");
                    assert_eq!(t, truth.best_ms(), "{space:?}");
                    assert!(space.stage_counts().contains(&c.stage_count()));
                    assert_eq!(sim.stage_times(&c).expect("valid").slowest_ms(), t);
                }
            }
        }
    }
    let sim = SimulatedPlatform::symmetric(vec![1.0; 5], 1);
    assert_eq!(sim.optimum(4, PlacePolicy::Contiguous), Ok(None));
}
