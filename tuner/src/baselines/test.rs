use std::collections::HashSet;

use taopipe_dsl::{SYNTH1, SYNTH2, Seeds};

use super::*;
use crate::{
    AllowedPlaces, Configuration, MeasureError, PlacePolicy, SimulatedPlatform, StageTimes,
};

/// Counts every measurement per configuration; times from the weights on symmetric workers.
struct Counting {
    sim: SimulatedPlatform,
    seen: Vec<Configuration>,
}

impl Measure for Counting {
    fn stage_times(&mut self, config: &Configuration) -> Result<StageTimes, MeasureError> {
        self.seen.push(config.clone());
        self.sim.stage_times(config)
    }
}

#[test]
fn exhaustive_visits_every_configuration_once() {
    for units in 1..=11 {
        for workers in 1..=6 {
            for max_stages in [2, 4, workers] {
                for policy in [PlacePolicy::Contiguous, PlacePolicy::EveryWidthSplit] {
                    let space = SearchSpace::new(units, workers, max_stages, policy);
                    let mut m = Counting {
                        sim: SimulatedPlatform::symmetric(vec![1.0; units], workers),
                        seen: Vec::new(),
                    };
                    let result = Exhaustive::new(space.clone()).run(&mut m);
                    let size = space.size();
                    if size == 0 {
                        assert!(matches!(result, Err(SearchError::NoStageCounts { .. })));
                        continue;
                    }
                    let result = result.expect("non-empty space");
                    let distinct: HashSet<&Configuration> = m.seen.iter().collect();
                    assert_eq!(m.seen.len() as u128, size, "{space:?}");
                    assert_eq!(distinct.len(), m.seen.len(), "{space:?}: measured twice");
                    assert_eq!(result.trials.len(), m.seen.len());
                    assert_eq!(result.stopped, StopReason::Complete);
                    // every configuration is valid and within the stage counts
                    for c in &m.seen {
                        c.validate(units, workers).expect("valid");
                        assert!(space.stage_counts().contains(&c.stage_count()));
                    }
                    // independent count: compositions × mappings, by enumeration
                    let by_enumeration: usize = space
                        .stage_counts()
                        .map(|p| {
                            crate::Compositions::new(units, p).count()
                                * policy.mappings(&AllowedPlaces::all(workers), p).len()
                        })
                        .sum();
                    assert_eq!(by_enumeration as u128, size);
                }
            }
        }
    }
}

#[test]
fn exhaustive_finds_the_dp_optimum() {
    for policy in [PlacePolicy::Contiguous, PlacePolicy::EveryWidthSplit] {
        let costs: Vec<f64> = SYNTH2.iter().map(|&w| w as f64).collect();
        let mut sim = SimulatedPlatform::asymmetric(costs, 2, 3, 0.5);
        let space = SearchSpace::new(SYNTH2.len(), 5, 5, policy);
        let result = Exhaustive::new(space).run(&mut sim).expect("runs");
        let (config, t) = sim.optimum(5, policy).expect("ok").expect("non-empty");
        assert_eq!(result.best_ms(), t);
        let again = sim.stage_times(&config).expect("valid").slowest_ms();
        assert_eq!(again, t);
    }
}

#[test]
fn random_walk_reaches_a_target_and_respects_its_budget() {
    let costs: Vec<f64> = SYNTH2.iter().map(|&w| w as f64).collect();
    let space = SearchSpace::new(SYNTH2.len(), 4, 4, PlacePolicy::Contiguous);
    let mut sim = SimulatedPlatform::symmetric(costs.clone(), 4);
    let optimum = Exhaustive::new(space.clone())
        .run(&mut sim)
        .expect("runs")
        .best_ms();

    // Table 5: stop at a target — here 10% above the optimum
    let target = optimum * 1.1;
    let mut sim = SimulatedPlatform::symmetric(costs.clone(), 4);
    let walk = RandomWalk {
        space: space.clone(),
        seed: 7,
        target_ms: Some(target),
        budget: 10_000,
    };
    let result = walk.run(&mut sim).expect("runs");
    assert_eq!(result.stopped, StopReason::Target);
    assert!(result.best_ms() <= target);
    let last = result.trials.last().expect("trials");
    assert!(last.slowest_ms <= target, "stops at the first hit");
    assert!(
        result.trials[..result.trials.len() - 1]
            .iter()
            .all(|t| t.slowest_ms > target)
    );
    assert_eq!(sim.measurements() as usize, result.trials.len());
    let distinct: HashSet<&Configuration> =
        result.trials.iter().map(|t| &t.configuration).collect();
    assert_eq!(distinct.len(), result.trials.len(), "never twice");
    println!(
        "random walk: target {target:.2} ms reached after {} of {} configurations",
        result.trials.len(),
        space.size()
    );

    // seeded: same seed, same walk
    let again = walk
        .run(&mut SimulatedPlatform::symmetric(costs.clone(), 4))
        .expect("runs");
    assert_eq!(again.trials, result.trials);

    // an unreachable target: the budget stops it
    let walk = RandomWalk {
        target_ms: Some(0.0),
        budget: 25,
        ..walk.clone()
    };
    let result = walk
        .run(&mut SimulatedPlatform::symmetric(costs.clone(), 4))
        .expect("runs");
    assert_eq!(result.stopped, StopReason::Budget);
    assert_eq!(result.trials.len(), 25);

    // a budget larger than the space: every configuration once, then it stops
    let small = SearchSpace::new(7, 4, 4, PlacePolicy::Contiguous);
    let walk = RandomWalk {
        space: small.clone(),
        seed: 1,
        target_ms: None,
        budget: 1_000,
    };
    let result = walk
        .run(&mut SimulatedPlatform::symmetric(vec![1.0; 7], 4))
        .expect("runs");
    assert_eq!(result.stopped, StopReason::Exhausted);
    assert_eq!(result.trials.len() as u128, small.size());

    let walk = RandomWalk { budget: 0, ..walk };
    assert!(
        walk.run(&mut SimulatedPlatform::symmetric(vec![1.0; 7], 4))
            .is_err()
    );
}

#[test]
fn no_hints_orders_by_layer_counts() {
    // Synth 1: by weights the 2-stage list starts [4,3] ([17,20]); by counts [3,4] ([3,4]
    // units, and [4,3] ties with it but sorts after lexicographically)
    let hinted = Seeds::new(&SYNTH1, 4).expect("seeds");
    let plain = count_seeds(SYNTH1.len(), 4).expect("seeds");
    let first = |s: &Seeds, p: usize| s.top_k(p, 1).expect("top").remove(0).composition;
    assert_eq!(first(&hinted, 2), vec![4, 3]);
    assert_eq!(first(&plain, 2), vec![3, 4]);
    assert_eq!(first(&hinted, 3), vec![3, 2, 2]);
    assert_eq!(first(&plain, 3), vec![2, 2, 3]);
    // the orders differ, and so does what Pipe-search measures
    let order = |s: &Seeds| -> Vec<Vec<usize>> {
        s.iter(3)
            .expect("iter")
            .map(|seed| seed.composition)
            .collect()
    };
    assert_ne!(order(&hinted), order(&plain));

    let costs: Vec<f64> = SYNTH1.iter().map(|&w| w as f64).collect();
    let search = PipeSearch::new(2, 4);
    let with = search
        .run(&hinted, &mut SimulatedPlatform::symmetric(costs.clone(), 4))
        .expect("runs");
    let without = pipe_search_without_hints(
        &search,
        SYNTH1.len(),
        4,
        &mut SimulatedPlatform::symmetric(costs, 4),
    )
    .expect("runs");
    let configs = |r: &SearchResult| -> Vec<Configuration> {
        r.trials.iter().map(|t| t.configuration.clone()).collect()
    };
    assert_ne!(configs(&with), configs(&without));
    assert_eq!(without.trials[0].configuration.composition(), vec![3, 4]);
    println!(
        "Synth 1, α = 2: with hints {} ({:.2} ms), without {} ({:.2} ms)",
        with.best,
        with.best_ms(),
        without.best,
        without.best_ms()
    );
    assert!(with.best_ms() <= without.best_ms());
}
