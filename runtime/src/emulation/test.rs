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
