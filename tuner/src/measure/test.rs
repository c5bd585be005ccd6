use super::*;
use crate::SimulatedPlatform;

#[test]
fn median_odd_even_and_nan() {
    assert_eq!(median(&[5.0]), Some(5.0));
    assert_eq!(median(&[9.0, 1.0, 5.0]), Some(5.0));
    assert_eq!(median(&[9.0, 1.0, 5.0, 7.0]), Some(6.0));
    assert_eq!(median(&[]), None);
    // NaN sorts last and does not panic
    assert_eq!(median(&[f64::NAN, 1.0, 2.0]), Some(2.0));
}

#[test]
fn outliers_beyond_k_mad_are_dropped() {
    // median 10, |dev| = 0, .5, .5, 1, 1, 30 → MAD 0.75, σ̂ ≈ 1.11; k = 3 keeps |dev| ≤ 3.34
    let s = [10.0, 9.5, 10.5, 9.0, 11.0, 40.0, 10.0];
    assert_eq!(median(&s), Some(10.0));
    assert_eq!(median_without_outliers(&s, 3.0), Some(10.0));
    // the mean would be pulled far off
    let mean = s.iter().sum::<f64>() / s.len() as f64;
    assert!(mean > 14.0);
    // an outlier on the low side shifts the plain median of an even set, not the robust one
    let s = [10.0, 10.2, 9.8, 0.1];
    assert!((median(&s).unwrap_or(0.0) - 9.9).abs() < 1e-12);
    let robust = median_without_outliers(&s, 3.0).unwrap_or(0.0);
    assert!((robust - 10.0).abs() < 1e-12, "{robust}");
    // MAD = 0: only the samples equal to the median stay
    assert_eq!(
        median_without_outliers(&[3.0, 3.0, 3.0, 100.0], 3.0),
        Some(3.0)
    );
    // a huge k keeps everything
    assert_eq!(median_without_outliers(&s, 1e9), median(&s));
    assert_eq!(median_without_outliers(&[], 3.0), None);
}

/// Returns a fixed sequence of times for stage 0 (stage 1 fixed), counting calls.
struct Script {
    values: Vec<f64>,
    calls: usize,
}

impl Measure for Script {
    fn stage_times(&mut self, _: &Configuration) -> Result<StageTimes, MeasureError> {
        let v = self.values[self.calls % self.values.len()];
        self.calls += 1;
        Ok(StageTimes::new(vec![v, 2.0]))
    }
}

#[test]
fn robust_discards_warmup_and_rejects_spikes() {
    let config = Configuration::contiguous(&[2, 2], 2).expect("valid");
    // a cold first run (1000), then 5 samples with one spike (90)
    let script = Script {
        values: vec![1000.0, 10.0, 11.0, 90.0, 10.5, 9.5],
        calls: 0,
    };
    let options = RobustOptions {
        tolerance: 0.0,
        warmup: 1,
        repetitions: 5,
        mad_k: 3.0,
    };
    let mut robust = Robust::new(script, options);
    let t = robust.stage_times(&config).expect("measures");
    assert_eq!(robust.inner().calls, 6);
    // kept: 10, 11, 10.5, 9.5 → median 10.25
    assert!((t.stage_ms[0] - 10.25).abs() < 1e-12, "{:?}", t.stage_ms);
    assert_eq!(t.stage_ms[1], 2.0);

    // without the warm-up the cold run is one more sample, rejected as well
    let mut robust = Robust::new(
        Script {
            values: vec![1000.0, 10.0, 11.0, 90.0, 10.5, 9.5],
            calls: 0,
        },
        RobustOptions {
            tolerance: 0.0,
            warmup: 0,
            repetitions: 6,
            mad_k: 3.0,
        },
    );
    let t = robust.stage_times(&config).expect("measures");
    assert!((t.stage_ms[0] - 10.25).abs() < 1e-12, "{:?}", t.stage_ms);

    // repetitions 0 still takes one sample
    let mut robust = Robust::new(
        Script {
            values: vec![4.0],
            calls: 0,
        },
        RobustOptions {
            tolerance: 0.0,
            warmup: 0,
            repetitions: 0,
            mad_k: 3.0,
        },
    );
    assert_eq!(
        robust.stage_times(&config).expect("measures").stage_ms,
        vec![4.0, 2.0]
    );
    assert_eq!(robust.into_inner().calls, 1);
}

#[test]
fn robust_tames_a_noisy_platform() {
    // 20% log-normal noise: single samples stray far, the robust median of 15 stays close
    let costs = vec![3.0, 1.0, 4.0, 1.0, 5.0];
    let config = Configuration::contiguous(&[2, 3], 2).expect("valid");
    let exact = SimulatedPlatform::symmetric(costs.clone(), 2)
        .stage_times(&config)
        .expect("measures");
    let mut single = SimulatedPlatform::symmetric(costs.clone(), 2).with_noise(11, 0.2);
    let mut robust = Robust::new(
        SimulatedPlatform::symmetric(costs, 2).with_noise(11, 0.2),
        RobustOptions {
            tolerance: 0.0,
            warmup: 0,
            repetitions: 15,
            mad_k: 3.0,
        },
    );
    let err = |t: &StageTimes| (t.slowest_ms() / exact.slowest_ms() - 1.0).abs();
    let mut worst_single = 0.0f64;
    let mut worst_robust = 0.0f64;
    for _ in 0..20 {
        worst_single = worst_single.max(err(&single.stage_times(&config).expect("ok")));
        worst_robust = worst_robust.max(err(&robust.stage_times(&config).expect("ok")));
    }
    assert!(worst_robust < 0.15, "robust error {worst_robust}");
    assert!(
        worst_single > worst_robust,
        "{worst_single} vs {worst_robust}"
    );
    assert_eq!(robust.inner().measurements(), 20 * 15);
}

#[test]
fn errors_pass_through() {
    struct Fails;
    impl Measure for Fails {
        fn stage_times(&mut self, _: &Configuration) -> Result<StageTimes, MeasureError> {
            Err(MeasureError::Failed {
                reason: "no".into(),
            })
        }
    }
    let config = Configuration::contiguous(&[2, 2], 2).expect("valid");
    let mut robust = Robust::new(Fails, RobustOptions::default());
    assert!(robust.stage_times(&config).is_err());
    assert_eq!(StageTimes::new(vec![]).slowest_ms(), 0.0);
}
