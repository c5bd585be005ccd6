use std::collections::HashSet;

use proptest::prelude::*;
use taopipe_dsl::{SYNTH1, Seeds, SplitMix64};

use super::*;
use crate::{
    Compositions, Exhaustive, Measure, MeasureError, PipeSearch, PlacePolicy, RandomWalk,
    SearchError, SearchSpace, SimulatedPlatform, StageTimes,
};

/// XiTAO's `0 1` / `1` / `1` layout: width 1 only, on 2 workers.
fn width_one(workers: usize) -> AllowedPlaces {
    AllowedPlaces::new(vec![vec![1]; workers]).expect("a legal layout")
}

/// Measures on a simulated platform, failing the test on a place the layout forbids.
struct OnlyAllowed {
    sim: SimulatedPlatform,
    places: AllowedPlaces,
}

impl Measure for OnlyAllowed {
    fn stage_times(&mut self, config: &Configuration) -> Result<StageTimes, MeasureError> {
        self.places.check(config).expect("an allowed configuration");
        self.sim.stage_times(config)
    }
}

#[test]
fn width_one_layout_places_every_stage_on_one_worker() {
    let places = width_one(2);
    assert!(!places.allows_every_run());
    assert_eq!(places.contiguous(1), Ok(vec![(0, 1)]));
    assert_eq!(places.contiguous(2), Ok(vec![(0, 1), (1, 1)]));
    let one = Configuration::contiguous_on(&[5], &places).expect("one stage");
    places.check(&one).expect("allowed");
    // What the runtime rejected before the fix: the one-stage configuration on 0+2.
    let wide = Configuration::contiguous(&[5], 2).expect("valid without a layout");
    let e = places.check(&wide).expect_err("0+2 is not allowed");
    assert_eq!(
        e,
        ConfigError::PlaceNotAllowed {
            stage: 0,
            leader: 0,
            width: 2,
            allowed: vec![1]
        }
    );
    assert!(
        e.to_string().contains("0+2") && e.to_string().contains("[1]"),
        "{e}"
    );
}

#[test]
fn bad_widths_are_named_and_full_lists_mean_every_run() {
    let e = AllowedPlaces::new(vec![vec![1, 3], vec![1]]).expect_err("3 past the end");
    assert_eq!(
        e,
        ConfigError::LayoutWidth {
            leader: 0,
            width: 3,
            workers: 2
        }
    );
    assert!(e.to_string().contains("width 3"), "{e}");
    assert!(AllowedPlaces::new(vec![vec![0], vec![1]]).is_err());
    let full = AllowedPlaces::new(vec![vec![2, 1, 1], vec![1]]).expect("legal");
    assert_eq!(full, AllowedPlaces::all(2));
    assert_eq!(full.widths(0), vec![1, 2]);
}

#[test]
fn widest_place_in_a_run_prefers_the_lowest_leader() {
    let places = AllowedPlaces::new(vec![vec![2], vec![1], vec![1, 2], vec![1]]).expect("legal");
    assert_eq!(places.widest_in(0..4), Some((0, 2)));
    assert_eq!(places.widest_in(1..4), Some((2, 2)));
    assert_eq!(places.widest_in(0..1), None, "leader 0 needs 2 workers");
    assert_eq!(
        places.contiguous(4),
        Err(ConfigError::NoAllowedPlace {
            stage: 0,
            leader: 0,
            width: 1
        })
    );
    assert_eq!(PlacePolicy::Contiguous.mapping_count(&places, 4), 0);
}

#[test]
fn searches_on_a_width_one_layout_measure_allowed_places_only() {
    let costs: Vec<f64> = SYNTH1.iter().map(|&w| w as f64).collect();
    let places = width_one(3);
    let measure = |places: &AllowedPlaces| OnlyAllowed {
        sim: SimulatedPlatform::symmetric(costs.clone(), 3),
        places: places.clone(),
    };
    let seeds = Seeds::new(&SYNTH1, 3).expect("seeds");
    let found = PipeSearch::on(2, places.clone())
        .run(&seeds, &mut measure(&places))
        .expect("runs");
    assert!(!found.trials.is_empty());
    for policy in [PlacePolicy::Contiguous, PlacePolicy::EveryWidthSplit] {
        let space = SearchSpace::on(SYNTH1.len(), places.clone(), 3, policy);
        let all = Exhaustive::new(space.clone())
            .run(&mut measure(&places))
            .expect("runs");
        assert_eq!(all.trials.len() as u128, space.size());
        let walk = RandomWalk {
            space,
            seed: 3,
            target_ms: None,
            budget: 20,
        };
        walk.run(&mut measure(&places)).expect("runs");
    }
}

#[test]
fn a_layout_with_no_two_stage_mapping_has_nothing_to_search() {
    // Leaders 0 and 1 may only lead places that reach the last worker: one stage only.
    let places = AllowedPlaces::new(vec![vec![3], vec![2], vec![1]]).expect("legal");
    assert_eq!(places.contiguous(1), Ok(vec![(0, 3)]));
    let space = SearchSpace::on(SYNTH1.len(), places.clone(), 3, PlacePolicy::Contiguous);
    assert_eq!(space.size(), 0);
    let costs: Vec<f64> = SYNTH1.iter().map(|&w| w as f64).collect();
    let found = PipeSearch::on(2, places).run(
        &Seeds::new(&SYNTH1, 3).expect("seeds"),
        &mut SimulatedPlatform::symmetric(costs, 3),
    );
    assert!(
        matches!(found, Err(SearchError::NoStageCounts { .. })),
        "{found:?}"
    );
}

/// A random legal layout: each leader a non-empty random subset of the widths that fit.
fn layout() -> impl Strategy<Value = AllowedPlaces> {
    (1usize..7)
        .prop_flat_map(|n| {
            (0..n)
                .map(|leader| proptest::collection::vec(1..=n - leader, 1..4))
                .collect::<Vec<_>>()
        })
        .prop_map(|widths| AllowedPlaces::new(widths).expect("widths that fit"))
}

proptest! {
    /// Under any layout the mappings are allowed, distinct and as many as counted;
    /// EveryWidthSplit's are exactly the worker compositions whose places are allowed, and
    /// Contiguous's stages lie inside the runs of `contiguous_places`.
    #[test]
    fn mappings_keep_to_any_layout(places in layout()) {
        let n = places.workers();
        for p in 0..=n + 1 {
            for policy in [PlacePolicy::Contiguous, PlacePolicy::EveryWidthSplit] {
                let maps = policy.mappings(&places, p);
                prop_assert_eq!(maps.len() as u128, policy.mapping_count(&places, p));
                let distinct: HashSet<_> = maps.iter().collect();
                prop_assert_eq!(distinct.len(), maps.len());
                for m in &maps {
                    let config = Configuration::with_places(&vec![1; p], m, p, n).expect("valid");
                    prop_assert!(places.check(&config).is_ok(), "{}", config);
                }
            }
            let splits: Vec<Vec<(usize, usize)>> = Compositions::new(n, p)
                .map(|widths| {
                    let mut leader = 0;
                    widths.iter().map(|&w| { leader += w; (leader - w, w) }).collect::<Vec<_>>()
                })
                .filter(|m| m.iter().all(|&(l, w)| places.allows(l, w)))
                .collect();
            prop_assert_eq!(PlacePolicy::EveryWidthSplit.mappings(&places, p), splits);
            if let (Ok(runs), Ok(placed)) = (contiguous_places(n, p), places.contiguous(p)) {
                for ((l, w), (pl, pw)) in runs.into_iter().zip(placed) {
                    prop_assert!(pl >= l && pl + pw <= l + w);
                }
            }
        }
    }

    /// A search space under any layout enumerates `size()` allowed configurations, and its
    /// draws are among them.
    #[test]
    fn search_spaces_keep_to_any_layout(places in layout(), units in 1usize..6, seed in 0u64..50) {
        for policy in [PlacePolicy::Contiguous, PlacePolicy::EveryWidthSplit] {
            let space = SearchSpace::on(units, places.clone(), places.workers(), policy);
            let all: Vec<Configuration> = space.iter().collect();
            prop_assert_eq!(all.len() as u128, space.size());
            for c in &all {
                prop_assert!(places.check(c).is_ok(), "{}", c);
            }
            let mut rng = SplitMix64::new(seed);
            match space.sample(&mut rng) {
                Some(c) => prop_assert!(all.contains(&c), "{} not in the space", c),
                None => prop_assert!(all.is_empty()),
            }
        }
    }
}
