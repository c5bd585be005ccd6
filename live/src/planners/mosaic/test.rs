use super::*;

/// A chain whose cuts all carry `bytes`.
fn chain(exec: &[&[f64]], bytes: u64) -> Problem {
    let units = exec
        .iter()
        .enumerate()
        .map(|(i, t)| UnitCosts::new(format!("u{i}"), t.to_vec(), bytes, bytes))
        .collect();
    Problem::new(units, exec[0].len())
}

fn flat(ms: f64) -> TransferModel {
    TransferModel::new(ms, 0.0).expect("finite")
}

#[test]
fn each_unit_goes_where_it_is_fast_when_cuts_are_free() {
    let mut p = chain(&[&[1.0, 10.0], &[10.0, 1.0], &[2.0, 3.0]], 8);
    p.host = None;
    let plan = p.solve().expect("plan");
    assert_eq!(plan.ranges(), vec![(0..1, 0), (1..2, 1), (2..3, 0)]);
    assert_eq!(plan.device_of_units(), vec![0, 1, 0]);
    assert_eq!((plan.latency_ms, plan.transfer_ms), (4.0, 0.0));
}

#[test]
fn an_expensive_way_back_to_the_host_keeps_the_net_on_it() {
    // split: 1 + 0.5 + 1 + T(1→0) ; all on 0: 11 ; all on 1: 0.5 + 11 + T(1→0)
    let mut p = chain(&[&[1.0, 10.0], &[10.0, 1.0]], 8);
    p.transfer[0][1] = flat(0.5);
    p.transfer[1][0] = flat(5.0);
    let plan = p.solve().expect("plan");
    assert_eq!(plan.ranges(), vec![(0..1, 0), (1..2, 1)]);
    assert_eq!(plan.latency_ms, 7.5);
    assert_eq!(plan.slices[1].transfer_in_ms, 0.5);
    assert_eq!(plan.transfer_out_ms, 5.0);
    p.transfer[1][0] = flat(10.0);
    let plan = p.solve().expect("plan");
    assert_eq!(plan.ranges(), vec![(0..2, 0)]);
    assert_eq!(plan.latency_ms, 11.0);
    // without a host the output stays where it is made
    p.host = None;
    assert_eq!(p.solve().expect("plan").latency_ms, 2.5);
}

#[test]
fn bytes_scale_the_transfer() {
    // T(0→1) = 1 ms per 1000 bytes: a cut of 4000 bytes costs more than it saves,
    // a cut of 1000 bytes does not
    let mut p = chain(&[&[1.0, 10.0], &[4.5, 1.0]], 4000);
    p.host = None;
    p.transfer[0][1] = TransferModel::new(0.0, 1e-3).expect("finite");
    assert_eq!(p.solve().expect("plan").ranges(), vec![(0..2, 0)]);
    p.units[0].out_bytes = 1000;
    p.units[1].in_bytes = 1000;
    let plan = p.solve().expect("plan");
    assert_eq!(plan.ranges(), vec![(0..1, 0), (1..2, 1)]);
    assert!((plan.latency_ms - 3.0).abs() < 1e-12);
}

#[test]
fn a_unit_too_big_for_the_fast_device_moves() {
    let mut p = chain(&[&[1.0, 2.0], &[1.0, 2.0], &[1.0, 2.0]], 8);
    p.units[1].memory_bytes = 100;
    p.device_memory = vec![99, 100];
    let plan = p.solve().expect("plan");
    assert_eq!(plan.ranges(), vec![(0..1, 0), (1..2, 1), (2..3, 0)]);
    // an infinite time means the same
    p.device_memory = vec![UNLIMITED; 2];
    p.units[2].exec_ms[0] = f64::INFINITY;
    let plan = p.solve().expect("plan");
    assert_eq!(plan.ranges(), vec![(0..2, 0), (2..3, 1)]);
}

#[test]
fn a_unit_that_fits_nowhere_is_named() {
    let mut p = chain(&[&[1.0, 2.0], &[1.0, 2.0]], 8);
    p.units[1].memory_bytes = 500;
    p.device_memory = vec![100, 200];
    let err = p.solve().expect_err("infeasible");
    assert!(
        matches!(err, MosaicError::Infeasible { index: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("unit `u1` (#1)"), "{err}");
    assert!(err.to_string().contains("500 bytes"), "{err}");
}

#[test]
fn ties_keep_the_whole_net_on_device_0() {
    let p = chain(&[&[1.0, 1.0, 1.0], &[2.0, 2.0, 2.0]], 8);
    let plan = p.solve().expect("plan");
    assert_eq!(plan.ranges(), vec![(0..2, 0)]);
    // equal cost either way round: the last slice starting earliest wins
    let mut p = chain(&[&[1.0, 2.0], &[2.0, 1.0]], 8);
    p.host = None;
    p.transfer[0][1] = flat(1.0);
    p.transfer[1][0] = flat(1.0);
    assert_eq!(p.solve().expect("plan").ranges(), vec![(0..2, 0)]);
}

#[test]
fn one_device_gives_one_slice() {
    let p = chain(&[&[3.0], &[4.0], &[5.0]], 8);
    let plan = p.solve().expect("plan");
    assert_eq!(plan.ranges(), vec![(0..3, 0)]);
    assert_eq!(
        plan.to_string(),
        "[0..3)@0: 12.000 ms (exec 12.000, transfer 0.000)"
    );
}

#[test]
fn bad_problems_name_the_bad_value() {
    let mut p = chain(&[&[1.0, 2.0], &[1.0, 2.0]], 8);
    p.units[1].in_bytes = 9;
    assert!(
        matches!(p.solve(), Err(MosaicError::CutBytes { in_bytes: 9, .. })),
        "{:?}",
        p.solve()
    );
    let mut p = chain(&[&[1.0, 2.0], &[1.0, f64::NAN]], 8);
    assert!(matches!(
        p.solve(),
        Err(MosaicError::BadTime { device: 1, .. })
    ));
    p.units[1].exec_ms = vec![1.0];
    assert!(matches!(
        p.solve(),
        Err(MosaicError::TimesPerDevice { got: 1, .. })
    ));
    let mut p = chain(&[&[1.0, 2.0]], 8);
    p.host = Some(2);
    assert!(matches!(
        p.solve(),
        Err(MosaicError::NoSuchHost { host: 2, .. })
    ));
    p.host = None;
    p.transfer.pop();
    assert!(matches!(p.solve(), Err(MosaicError::TransferShape { .. })));
    assert!(matches!(
        Problem::new(Vec::new(), 2).solve(),
        Err(MosaicError::NoUnits)
    ));
}

#[test]
fn evaluate_checks_the_slicing() {
    let p = chain(&[&[1.0, 2.0], &[1.0, 2.0], &[1.0, 2.0]], 8);
    assert!(p.evaluate(&[(0..1, 0), (2..3, 1)]).is_err());
    assert!(p.evaluate(&[(0..1, 0), (1..2, 1)]).is_err());
    assert!(p.evaluate(&[(0..3, 2)]).is_err());
    assert!(p.evaluate(&[(0..2, 0), (2..4, 1)]).is_err());
    // neighbouring slices on one device cost what their merge costs
    let split = p.evaluate(&[(0..1, 1), (1..3, 1)]).expect("plan");
    let merged = p.evaluate(&[(0..3, 1)]).expect("plan");
    assert_eq!(split.latency_ms, merged.latency_ms);
}

#[test]
fn fit_recovers_a_line_and_refuses_what_it_cannot_fit() {
    let exact: Vec<(u64, f64)> = [0u64, 10, 10, 1000, 5000]
        .iter()
        .map(|&b| (b, 0.2 + 0.003 * b as f64))
        .collect();
    let m = TransferModel::fit(&exact).expect("fit");
    assert!((m.intercept_ms - 0.2).abs() < 1e-9 && (m.ms_per_byte - 0.003).abs() < 1e-12);
    assert!(matches!(
        TransferModel::fit(&[(5, 1.0), (5, 2.0)]),
        Err(MosaicError::TooFewSizes {
            sizes: 1,
            samples: 2
        })
    ));
    assert!(matches!(
        TransferModel::fit(&[(5, 1.0), (6, f64::NAN)]),
        Err(MosaicError::BadSample { bytes: 6, .. })
    ));
    // negative predictions are clamped
    let m = TransferModel::fit(&[(0, -1.0), (10, -0.5)]).expect("fit");
    assert_eq!(m.predict_ms(0), 0.0);
}

#[test]
fn the_fit_has_the_least_squared_error() {
    // noisy samples: moving either coefficient away from the fit raises the error
    let samples: Vec<(u64, f64)> = (0..20u64)
        .map(|i| {
            let b = i * 1000 + (i * i) % 7;
            let noise = ((i * 7919) % 13) as f64 / 13.0 - 0.5;
            (b, 0.1 + 2e-4 * b as f64 + noise)
        })
        .collect();
    let m = TransferModel::fit(&samples).expect("fit");
    let sse = |a: f64, s: f64| -> f64 {
        samples
            .iter()
            .map(|&(b, y)| (a + s * b as f64 - y).powi(2))
            .sum()
    };
    let at = sse(m.intercept_ms, m.ms_per_byte);
    for (da, ds) in [(1e-3, 0.0), (-1e-3, 0.0), (0.0, 1e-7), (0.0, -1e-7)] {
        assert!(sse(m.intercept_ms + da, m.ms_per_byte + ds) > at);
    }
}
