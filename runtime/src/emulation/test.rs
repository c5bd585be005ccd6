use super::*;

#[test]
fn presets_numbers_and_targets_parse() {
    let spec: EmulationSpec = "performance, powersave".parse().expect("positional");
    assert_eq!(
        spec.items(),
        &[(Target::Cluster(0), 1.0), (Target::Cluster(1), POWERSAVE)]
    );
    let spec: EmulationSpec = "w3=0.25,c1=performance,all=0.9".parse().expect("targets");
    assert_eq!(
        spec.items(),
        &[
            (Target::Worker(3), 0.25),
            (Target::Cluster(1), 1.0),
            (Target::All, 0.9)
        ]
    );
}

#[test]
fn table1_settings_follow_the_paper() {
    // Setting 2: A57 (cluster 0) performance, Denver (cluster 1) powersave.
    let two = EmulationSpec::table1(2).expect("setting 2");
    assert_eq!(
        two.items(),
        &[
            (Target::Table1Cluster(0), 1.0),
            (Target::Table1Cluster(1), POWERSAVE)
        ]
    );
    assert_eq!("table1:2".parse::<EmulationSpec>().expect("parses"), two);
    let four = EmulationSpec::table1(4).expect("setting 4");
    assert!(four.items().iter().all(|&(_, s)| s == POWERSAVE));
    assert!(matches!(EmulationSpec::table1(5), Err(EmulationError::BadTable1(n)) if n == "5"));
}

#[test]
fn bad_specs_name_the_bad_value() {
    let cases = [
        ("fast", "`fast`"),
        ("1.5", "1.5"),
        ("0", "0"),
        ("x1=0.5", "`x1`"),
        ("c=0.5", "`c`"),
        ("table1:9", "table1:9"),
        ("table1:two", "table1:two"),
        ("", "empty"),
    ];
    for (spec, needle) in cases {
        let err = spec.parse::<EmulationSpec>().expect_err(spec).to_string();
        assert!(
            err.contains(needle),
            "spec {spec:?}: error {err:?} should name {needle:?}"
        );
    }
}

#[test]
fn resolve_maps_targets_to_workers() {
    let topo = Topology::virtual_clusters(&[2, 3]).expect("topology");
    let speeds = "c1=0.5,w0=0.25"
        .parse::<EmulationSpec>()
        .expect("spec")
        .resolve(&topo)
        .expect("fits");
    assert_eq!(speeds, vec![0.25, 1.0, 0.5, 0.5, 0.5]);
    // Table 1 on two clusters uses the clusters...
    let speeds = EmulationSpec::table1(3)
        .expect("3")
        .resolve(&topo)
        .expect("fits");
    assert_eq!(speeds, vec![0.5, 0.5, 1.0, 1.0, 1.0]);
    // ...and on one cluster its two halves.
    let one = Topology::symmetric(4).expect("topology");
    assert_eq!(
        EmulationSpec::table1(2)
            .expect("2")
            .resolve(&one)
            .expect("fits"),
        vec![1.0, 1.0, 0.5, 0.5]
    );
    let err = "c2=0.5"
        .parse::<EmulationSpec>()
        .expect("spec")
        .resolve(&topo)
        .expect_err("no cluster 2");
    assert_eq!(
        err,
        EmulationError::NoSuchCluster {
            cluster: 2,
            clusters: 2
        }
    );
    let err = "w9=0.5"
        .parse::<EmulationSpec>()
        .expect("spec")
        .resolve(&topo)
        .expect_err("no worker 9");
    assert_eq!(
        err,
        EmulationError::NoSuchWorker {
            worker: 9,
            workers: 5
        }
    );
}

#[test]
fn stall_waits_in_proportion_to_the_slowdown() {
    let speeds = Speeds::new(2);
    speeds.set_all(&[1.0, 0.5]);
    let start = Instant::now();
    speeds.stall(0, Duration::from_millis(20));
    assert!(
        start.elapsed() < Duration::from_millis(20),
        "full speed never stalls"
    );
    let start = Instant::now();
    speeds.stall(1, Duration::from_millis(20));
    // Half speed: 20 ms of work costs 20 ms more. A lower bound only: waiting can run long.
    assert!(start.elapsed() >= Duration::from_millis(20));
}

#[test]
fn speeds_too_small_to_emulate_are_rejected_naming_the_value() {
    // `c0=1e-30` used to parse, then panic a worker in its stall ("cannot convert float
    // seconds to Duration") and hang the run.
    for (spec, shown) in [
        ("c0=1e-30", "1e-30"),
        ("w1=1e-300", "1e-300"),
        ("w0=0.0009", "0.0009"),
        ("w0=5e-324", "5e-324"),
        ("all=NaN", "NaN"),
        ("all=inf", "inf"),
        ("all=-0.5", "-0.5"),
    ] {
        let err = spec.parse::<EmulationSpec>().expect_err(spec);
        assert!(
            matches!(err, EmulationError::OutOfRange(_)),
            "{spec}: {err:?}"
        );
        let message = err.to_string();
        assert!(message.contains(shown), "{spec}: {message}");
        assert!(message.contains("[0.001, 1]"), "{spec}: {message}");
        assert!(message.len() < 100, "{spec}: {message}");
    }
    let slowest = format!("w0={MIN_SPEED}");
    let spec: EmulationSpec = slowest.parse().expect("the lower bound itself is allowed");
    assert_eq!(spec.items(), &[(Target::Worker(0), MIN_SPEED)]);
    assert!(EmulationSpec::uniform(1e-30).is_err());
}

#[test]
fn set_cluster_speed_has_the_same_lower_bound() {
    let rt = crate::Runtime::builder()
        .workers(1)
        .build()
        .expect("runtime");
    let err = rt.set_cluster_speed(0, 1e-30).expect_err("too slow");
    assert_eq!(err, crate::RuntimeError::BadSpeed(1e-30));
    assert!(err.to_string().contains("1e-30"), "{err}");
    rt.set_cluster_speed(0, MIN_SPEED).expect("the lower bound");
    assert_eq!(rt.speeds(), vec![MIN_SPEED]);
}

#[test]
fn stall_time_saturates_instead_of_panicking() {
    let second = Duration::from_secs(1);
    assert_eq!(stall_for(second, 1e-30), Duration::MAX);
    assert_eq!(stall_for(Duration::MAX, 0.5), Duration::MAX);
    assert_eq!(stall_for(second, 1.0), Duration::ZERO);
    assert_eq!(stall_for(second, f64::NAN), Duration::ZERO);
    assert_eq!(stall_for(Duration::ZERO, 0.0), Duration::ZERO);
    assert_eq!(stall_for(second, 0.5), second);
    let slowest = stall_for(second, MIN_SPEED);
    assert!((slowest.as_secs_f64() - 999.0).abs() < 1e-6, "{slowest:?}");
}

#[test]
fn a_target_named_twice_is_rejected() {
    for (spec, target, named) in [
        ("w0=0.5,w0=0.3", Target::Worker(0), "w0"),
        ("w0=0.5,w0=0.5", Target::Worker(0), "w0"),
        ("0.5,c0=0.3", Target::Cluster(0), "c0"),
        ("c1=0.5, 0.5, 0.25", Target::Cluster(1), "c1"),
        ("all=1,w2=0.5,all=0.5", Target::All, "all"),
        ("table1:2,table1:3", Target::Table1Cluster(0), "A57"),
    ] {
        let err = spec.parse::<EmulationSpec>().expect_err(spec);
        assert_eq!(err, EmulationError::Repeated(target), "{spec}");
        assert!(err.to_string().contains(named), "{spec}: {err}");
    }
    // Different targets that overlap still apply in order.
    for spec in [
        "all=0.5,w1=1",
        "c0=0.5,w0=0.25",
        "table1:3,c0=0.25",
        "0.5,0.25,w0=1",
    ] {
        spec.parse::<EmulationSpec>()
            .unwrap_or_else(|e| panic!("{spec}: {e}"));
    }
}

#[test]
fn bad_specs_quote_long_tokens_shortened() {
    let long = "9".repeat(10_000_000);
    for spec in [
        format!("w0=x{long}"),
        format!("x{long}=0.5"),
        format!("w{long}=0.5"),
        format!("table1:{long}"),
    ] {
        let err = spec.parse::<EmulationSpec>().expect_err("bad spec");
        let message = err.to_string();
        assert!(
            message.len() < 200,
            "{} bytes: {message:.200}",
            message.len()
        );
        assert!(message.contains("bytes in all"), "{message}");
    }
}
