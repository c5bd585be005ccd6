use super::*;

fn options() -> WatchOptions {
    WatchOptions::default()
}

/// A watch past its unwatched first frame.
fn warm(expected: Option<&StageTimes>) -> Watch {
    let mut watch = Watch::new(options(), expected);
    assert_eq!(
        watch.observe(&[1e6, 1e6]),
        None,
        "the first frame is not watched"
    );
    watch
}

#[test]
fn the_first_window_becomes_the_reference() {
    let mut watch = warm(None);
    for _ in 0..8 {
        assert_eq!(watch.observe(&[10.0, 5.0]), None);
        assert!(watch.reference().is_none());
    }
    assert_eq!(watch.observe(&[10.0, 5.0]), None);
    assert_eq!(watch.reference(), Some(&[10.0, 5.0][..]));
}

#[test]
fn a_change_shorter_than_half_the_window_is_ignored() {
    let mut watch = warm(None);
    for _ in 0..9 {
        watch.observe(&[10.0, 5.0]);
    }
    for _ in 0..4 {
        assert_eq!(watch.observe(&[30.0, 5.0]), None);
    }
    for _ in 0..9 {
        assert_eq!(watch.observe(&[10.0, 5.0]), None);
    }
}

#[test]
fn a_sustained_change_is_reported_after_half_the_window_plus_one() {
    let mut watch = warm(None);
    for _ in 0..9 {
        watch.observe(&[10.0, 5.0]);
    }
    let frames = (1..=9).find(|_| watch.observe(&[10.0, 9.0]).is_some());
    assert_eq!(frames, Some(5));
}

#[test]
fn speeding_up_counts_too() {
    let mut watch = warm(None);
    for _ in 0..9 {
        watch.observe(&[10.0, 5.0]);
    }
    let change = (0..9)
        .find_map(|_| watch.observe(&[5.0, 5.0]))
        .expect("a change");
    assert_eq!((change.stage, change.was_ms, change.now_ms), (0, 10.0, 5.0));
}

#[test]
fn a_first_window_unlike_the_trial_is_a_change() {
    let trial = StageTimes::new(vec![10.0, 5.0]);
    let mut watch = warm(Some(&trial));
    let change = (0..9).find_map(|_| watch.observe(&[10.0, 8.0])); // +60%
    assert_eq!(change.map(|c| c.stage), Some(1));
    // Within twice the threshold of the trial: no change, and the window becomes the
    // reference, against which the threshold itself counts.
    let mut watch = warm(Some(&trial));
    for _ in 0..9 {
        assert_eq!(watch.observe(&[10.5, 6.2]), None); // +24%
    }
    assert_eq!(watch.reference(), Some(&[10.5, 6.2][..]));
    let change = (0..9).find_map(|_| watch.observe(&[10.5, 8.0])); // +29%
    assert_eq!(change.map(|c| c.stage), Some(1));
}

#[test]
fn noise_within_five_percent_never_triggers() {
    let mut watch = warm(None);
    let mut x = 0x1234_5678_u64;
    for _ in 0..10_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let u = (x >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
        let noise = 0.95 + 0.1 * u;
        assert_eq!(watch.observe(&[10.0 * noise, 6.0 / noise]), None);
    }
}
