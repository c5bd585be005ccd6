//! The `--emulate` spec parser and the `--emulate-schedule` parser.

use std::collections::HashSet;
use std::sync::OnceLock;
use std::time::Duration;

use taopipe_runtime::{EmulationSchedule, EmulationSpec, MIN_SPEED, Topology};

use crate::check::message;

/// Runtimes a parsed spec is resolved against: one cluster of 3 workers (Table 1 then
/// splits it in halves) and two clusters of 2 and 3, so worker and cluster indices both
/// fall in and out of range.
fn topologies() -> &'static [Topology] {
    static TOPOLOGIES: OnceLock<Vec<Topology>> = OnceLock::new();
    TOPOLOGIES.get_or_init(|| {
        [&[3][..], &[2, 3]]
            .into_iter()
            .map(|sizes| Topology::virtual_clusters(sizes).expect("a valid virtual topology"))
            .collect()
    })
}

/// Parses the bytes (lossily as UTF-8) as an emulation spec. An accepted spec has items,
/// each target once and every speed in [`MIN_SPEED`, 1]; its text parses back to it; on
/// each test topology it resolves to one valid speed per worker, or to an error naming the
/// missing worker or cluster.
pub fn emulation_spec(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match text.parse::<EmulationSpec>() {
        Ok(spec) => check_spec(&spec),
        Err(error) => {
            message("EmulationSpec::from_str", &error);
        }
    }
}

/// The invariants of an accepted spec (see [`emulation_spec`]).
fn check_spec(spec: &EmulationSpec) {
    assert!(!spec.items().is_empty(), "a spec with no item");
    let mut targets = HashSet::new();
    for &(target, speed) in spec.items() {
        assert!(
            (MIN_SPEED..=1.0).contains(&speed),
            "speed {speed:?} accepted"
        );
        assert!(targets.insert(target), "{target} named twice");
    }
    let written = spec.to_string();
    assert_eq!(
        written.parse::<EmulationSpec>().as_ref(),
        Ok(spec),
        "`{written}` parses to another spec"
    );
    for topology in topologies() {
        match spec.resolve(topology) {
            Ok(speeds) => {
                assert_eq!(speeds.len(), topology.num_workers());
                assert!(
                    speeds.iter().all(|s| (MIN_SPEED..=1.0).contains(s)),
                    "{speeds:?}"
                );
            }
            Err(error) => {
                message("EmulationSpec::resolve", &error);
            }
        }
    }
}

/// Parses the bytes (lossily as UTF-8) as an emulation schedule. An accepted schedule has
/// steps at strictly increasing times, its text parses back to it, each step written alone
/// (`TIME:SPEC`, as errors quote it) parses back to that step (its time to within a
/// microsecond: milliseconds are written as decimals), and every step's spec holds as in
/// [`emulation_spec`]; validating it against the test topologies gives `Ok` or an error
/// with a message.
pub fn emulation_schedule(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let schedule = match text.parse::<EmulationSchedule>() {
        Ok(schedule) => schedule,
        Err(error) => {
            message("EmulationSchedule::from_str", &error);
            return;
        }
    };
    let steps = schedule.steps();
    assert!(!steps.is_empty(), "a schedule with no step");
    assert!(
        steps.windows(2).all(|w| w[0].at < w[1].at),
        "times not increasing"
    );
    let written = schedule.to_string();
    assert_eq!(
        written.parse::<EmulationSchedule>().as_ref(),
        Ok(&schedule),
        "`{written}` parses to another schedule"
    );
    for step in steps {
        let alone = step.to_string();
        let parsed = alone
            .parse::<EmulationSchedule>()
            .unwrap_or_else(|e| panic!("step `{alone}` alone does not parse: {e}"));
        let [again] = parsed.steps() else {
            panic!(
                "step `{alone}` alone parses to {} steps",
                parsed.steps().len()
            );
        };
        assert_eq!(again.spec, step.spec, "step `{alone}` changes its spec");
        assert!(
            close(again.at, step.at),
            "step `{alone}` at {:?} parses back at {:?}",
            step.at,
            again.at
        );
        if let Some(spec) = &step.spec {
            check_spec(spec);
        }
    }
    for topology in topologies() {
        if let Err(error) = schedule.validate(topology) {
            message("EmulationSchedule::validate", &error);
        }
    }
}

/// Whether two times agree to within a microsecond, or a part in 10¹² for long ones (a
/// time printed as decimal milliseconds goes through an `f64`).
fn close(a: Duration, b: Duration) -> bool {
    let (a, b) = (a.as_secs_f64(), b.as_secs_f64());
    (a - b).abs() <= 1e-6 + a.max(b) * 1e-12
}
