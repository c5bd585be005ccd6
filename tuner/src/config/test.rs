use std::collections::HashSet;

use proptest::prelude::*;
use taopipe_dsl::{SplitMix64, composition_count};

use super::*;

fn stage(layers: usize, leader: usize, width: usize) -> StageConfig {
    StageConfig {
        layers,
        leader,
        width,
    }
}

#[test]
fn display_matches_the_documented_form() {
    let c =
        Configuration::with_places(&[6, 5, 10], &[(0, 1), (1, 1), (2, 2)], 21, 4).expect("valid");
    assert_eq!(c.to_string(), "[6,5,10]@{0+1,1+1,2+2}");
    assert_eq!(c.unit_ranges(), vec![0..6, 6..11, 11..21]);
    assert_eq!(c.places(), vec![(0, 1), (1, 1), (2, 2)]);
    assert_eq!(c.units(), 21);
}

#[test]
fn validation_names_the_bad_value() {
    let e = Configuration::new(vec![], 3, 4).expect_err("no stages");
    assert_eq!(e, ConfigError::NoStages);

    let e = Configuration::new(vec![stage(3, 0, 1), stage(0, 1, 1)], 3, 4).expect_err("empty");
    assert_eq!(e, ConfigError::EmptyStage { stage: 1 });

    let e = Configuration::new(vec![stage(3, 0, 1), stage(2, 1, 1)], 6, 4).expect_err("sum");
    assert_eq!(
        e,
        ConfigError::UnitCount {
            composition: vec![3, 2],
            covered: 5,
            units: 6
        }
    );
    assert!(
        e.to_string().contains("[3, 2]") && e.to_string().contains('6'),
        "{e}"
    );

    let e = Configuration::new(vec![stage(3, 0, 0), stage(2, 1, 1)], 5, 4).expect_err("width");
    assert_eq!(e, ConfigError::ZeroWidth { stage: 0 });

    let e = Configuration::new(vec![stage(3, 0, 2), stage(2, 3, 2)], 5, 4).expect_err("range");
    assert_eq!(
        e,
        ConfigError::OutsidePlatform {
            stage: 1,
            leader: 3,
            width: 2,
            workers: 4
        }
    );
    assert_eq!(
        e.to_string(),
        "stage 1: place 3+2 reaches past the 4 workers"
    );

    let e = Configuration::new(vec![stage(3, usize::MAX, 2), stage(2, 0, 1)], 5, 4)
        .expect_err("overflowing place");
    assert!(matches!(e, ConfigError::OutsidePlatform { stage: 0, .. }));

    let e = Configuration::new(vec![stage(3, 0, 2), stage(2, 1, 2)], 5, 4).expect_err("overlap");
    assert_eq!(
        e,
        ConfigError::Overlap {
            first: 0,
            second: 1,
            worker: 1
        }
    );

    let e = Configuration::with_places(&[3, 2], &[(0, 1)], 5, 4).expect_err("places");
    assert_eq!(
        e,
        ConfigError::PlaceCount {
            places: 1,
            stages: 2
        }
    );

    let e = Configuration::contiguous(&[1, 1, 1], 2).expect_err("too many stages");
    assert_eq!(
        e,
        ConfigError::TooManyStages {
            stages: 3,
            workers: 2
        }
    );

    // places need not cover every worker, nor be in stage order
    Configuration::new(vec![stage(3, 2, 1), stage(2, 0, 1)], 5, 4).expect("valid");
}

#[test]
fn contiguous_places_split_like_split_range() {
    assert_eq!(contiguous_places(4, 3), Ok(vec![(0, 2), (2, 1), (3, 1)]));
    assert_eq!(
        contiguous_places(4, 4),
        Ok(vec![(0, 1), (1, 1), (2, 1), (3, 1)])
    );
    assert_eq!(contiguous_places(4, 2), Ok(vec![(0, 2), (2, 2)]));
    assert_eq!(contiguous_places(8, 3), Ok(vec![(0, 3), (3, 3), (6, 2)]));
    assert!(contiguous_places(4, 0).is_err());
    assert!(contiguous_places(4, 5).is_err());
    for workers in 1..=17 {
        for p in 1..=workers {
            let places = contiguous_places(workers, p).expect("fits");
            let widths: Vec<usize> = places.iter().map(|&(_, w)| w).collect();
            assert_eq!(widths.iter().sum::<usize>(), workers);
            let (min, max) = (widths.iter().min(), widths.iter().max());
            assert!(max.zip(min).is_some_and(|(a, b)| a - b <= 1), "{widths:?}");
            // wider stages first
            assert!(widths.windows(2).all(|w| w[0] >= w[1]), "{widths:?}");
        }
    }
}

#[test]
fn compositions_are_all_distinct_and_lexicographic() {
    for n in 0..=12 {
        for k in 0..=n + 1 {
            let all: Vec<Vec<usize>> = Compositions::new(n, k).collect();
            let expected = if k == 0 {
                0
            } else {
                composition_count(n, k).expect("small")
            };
            assert_eq!(all.len() as u128, expected, "n={n} k={k}");
            assert!(
                all.iter()
                    .all(|c| c.len() == k && c.iter().sum::<usize>() == n)
            );
            assert!(all.iter().all(|c| c.iter().all(|&x| x >= 1)));
            assert!(all.windows(2).all(|w| w[0] < w[1]), "n={n} k={k}");
        }
    }
}

#[test]
fn mappings_match_their_count_and_are_valid() {
    for workers in 1..=9 {
        for p in 0..=workers + 1 {
            for policy in [PlacePolicy::Contiguous, PlacePolicy::EveryWidthSplit] {
                let maps = policy.mappings(&AllowedPlaces::all(workers), p);
                assert_eq!(
                    maps.len() as u128,
                    policy.mapping_count(&AllowedPlaces::all(workers), p)
                );
                let distinct: HashSet<_> = maps.iter().collect();
                assert_eq!(distinct.len(), maps.len());
                for places in &maps {
                    let comp = vec![1; p];
                    Configuration::with_places(&comp, places, p, workers).expect("valid");
                }
            }
        }
    }
    // the Contiguous mapping is one of the width splits
    let all = PlacePolicy::EveryWidthSplit.mappings(&AllowedPlaces::all(7), 3);
    assert!(all.contains(&contiguous_places(7, 3).expect("fits")));
}

#[test]
fn space_size_closed_form_by_hand() {
    // VGG16 on 4 cores (paper §6.1 counts 1970 with its own reading of Eq. 4; with
    // contiguous places the compositions are C(20,1) + C(20,2) + C(20,3))
    assert_eq!(space_size(21, 4, 2..=4, PlacePolicy::Contiguous), 1350);
    // each p: C(20,p-1) × C(3,p-1)
    assert_eq!(
        space_size(21, 4, 2..=4, PlacePolicy::EveryWidthSplit),
        20 * 3 + 190 * 3 + 1140
    );
    assert_eq!(space_size(3, 4, 2..=4, PlacePolicy::Contiguous), 2 + 1);
    assert_eq!(space_size(7, 1, 2..=4, PlacePolicy::Contiguous), 0);
    // saturates instead of overflowing
    assert_eq!(
        space_size(200, 200, 2..=200, PlacePolicy::EveryWidthSplit),
        u128::MAX
    );
}

#[test]
fn sampling_is_valid_and_covers_a_small_space() {
    for policy in [PlacePolicy::Contiguous, PlacePolicy::EveryWidthSplit] {
        let space = SearchSpace::new(6, 4, 4, policy);
        let all: HashSet<Configuration> = space.iter().collect();
        let mut rng = SplitMix64::new(3);
        let mut counts = std::collections::HashMap::new();
        let draws = 200 * all.len();
        for _ in 0..draws {
            let c = space.sample(&mut rng).expect("non-empty");
            assert!(all.contains(&c), "{c} not in the space");
            *counts.entry(c).or_insert(0usize) += 1;
        }
        assert_eq!(
            counts.len(),
            all.len(),
            "{policy:?}: every configuration drawn"
        );
        // uniform: every count within 40% of the mean 200
        assert!(
            counts.values().all(|&n| (120..=280).contains(&n)),
            "{counts:?}"
        );
    }
    assert_eq!(
        SearchSpace::new(1, 4, 4, PlacePolicy::Contiguous).sample(&mut SplitMix64::new(1)),
        None
    );
}

proptest! {
    /// A configuration built from any composition and width split of the workers is valid,
    /// and breaking one field is caught.
    #[test]
    fn valid_configurations_round_trip(
        comp in proptest::collection::vec(1usize..6, 1..6),
        extra in 0usize..5,
        bump in 0usize..6,
    ) {
        let p = comp.len();
        let workers = p + extra;
        let units: usize = comp.iter().sum();
        let places = contiguous_places(workers, p).expect("fits");
        let c = Configuration::with_places(&comp, &places, units, workers).expect("valid");
        prop_assert_eq!(c.composition(), comp.clone());
        prop_assert_eq!(c.places(), places.clone());
        // one unit too many
        prop_assert!(c.validate(units + 1, workers).is_err());
        // a stage one worker wider overlaps its successor or leaves the platform
        let i = bump % p;
        let mut stages = c.stages().to_vec();
        stages[i].width += 1;
        let wider = Configuration::new(stages, units, workers);
        let last_fits = i + 1 == p && places[i].0 + places[i].1 < workers;
        prop_assert_eq!(wider.is_ok(), last_fits);
    }
}
