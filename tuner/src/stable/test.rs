use super::*;

#[test]
fn a_quiet_measurement_stops_at_the_minimum() {
    let rule = Stability::default();
    let mut s = Samples::new(1);
    for _ in 0..3 {
        assert!(!s.settled(&rule));
        s.push(&[5.0]);
    }
    assert!(s.settled(&rule));
}

#[test]
fn noise_buys_samples_up_to_the_maximum() {
    let rule = Stability::default();
    let mut s = Samples::new(1);
    let noisy = [5.0, 9.0, 5.0, 9.0, 5.0, 9.0, 5.0, 9.0];
    let mut taken = 0;
    for v in noisy {
        if s.settled(&rule) {
            break;
        }
        s.push(&[v]);
        taken += 1;
    }
    assert_eq!(taken, rule.max);
}

#[test]
fn a_fixed_rule_takes_exactly_its_count() {
    let rule = Stability::fixed(4);
    let mut s = Samples::new(2);
    for i in 0..4 {
        assert!(!s.settled(&rule), "stopped after {i}");
        s.push(&[1.0, 1.0]);
    }
    assert!(s.settled(&rule));
}

#[test]
fn times_are_per_stage_medians_without_outliers() {
    let mut s = Samples::new(2);
    for v in [
        [1.0, 10.0],
        [1.1, 10.0],
        [50.0, 10.2],
        [1.0, 10.1],
        [1.05, 10.0],
    ] {
        s.push(&v);
    }
    let t = s.times(3.0);
    assert!((t.stage_ms[0] - 1.025).abs() < 1e-12, "{:?}", t.stage_ms);
    assert_eq!(t.stage_ms[1], 10.0);
}

#[test]
fn a_hopeless_trial_stops_after_two_samples_and_a_close_one_does_not() {
    let rule = Stability::default();
    let mut hopeless = Samples::new(1).with_bound(Some(10.0));
    hopeless.push(&[14.0]);
    assert!(
        !hopeless.settled(&rule),
        "one sample is not enough to give up"
    );
    hopeless.push(&[13.5]);
    assert!(hopeless.settled(&rule), "13.75 is more than 30% above 10");
    let mut close = Samples::new(1).with_bound(Some(10.0));
    close.push(&[12.5]);
    close.push(&[12.9]);
    assert!(
        !close.settled(&rule),
        "12.7 is within 30% of 10: measure on"
    );
}

#[test]
fn a_racing_measurement_asks_before_its_first_sample_without_panicking() {
    // `Robust` asks whether to stop before it has taken a sample; with a bound set that
    // indexed the empty sample list (isolated and pipelined tuning panicked on their
    // second trial).
    let s = Samples::new(2).with_bound(Some(10.0));
    assert!(!s.settled(&Stability::default()));
}
