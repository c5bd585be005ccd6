//! Seeds: the paper's Synth examples by hand, CV order and the tie rule, and the lazy
//! iterator against the exhaustive reference.

use proptest::prelude::*;
use std::time::{Duration, Instant};
use taopipe_dsl::{
    DslError, SYNTH1, SYNTH2, SYNTH3, Seed, SeedIter, Seeds, SpeedScaled, SplitMix64, StageKey,
    composition_count, cv, exhaustive_sorted, stage_weights,
};

fn comps(seeds: &[Seed]) -> Vec<Vec<usize>> {
    seeds.iter().map(|s| s.composition.clone()).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

/// Synth 1 = {1,4,8,4,8,8,4} on 4 cores (paper §4.4): stage counts 2, 3, 4.
///
/// By hand: prefix sums 1, 5, 13, 17, 25, 33, 37; total 37.
/// Two stages [k, 7−k] weigh (prefix_k, 37 − prefix_k), and for two stages
/// CV = |a − b| / (a + b):
///   [4,3] → 17,20 → 3/37 = 8.1 %     [3,4] → 13,24 → 11/37 = 29.7 %
///   [5,2] → 25,12 → 13/37 = 35.1 %   [2,5] → 5,32 → 27/37
///   [6,1] → 33,4  → 29/37            [1,6] → 1,36 → 35/37
/// Three stages, mean 37/3: [3,2,2] → 13,12,12; deviations 2/3, −1/3, −1/3;
/// variance (4/9 + 1/9 + 1/9)/3 = 2/9; σ = √2/3; CV = (√2/3)/(37/3) = √2/37 = 3.82 %
/// (Table 7: best seed [3,2,2], CV 3.8). The runner-up [4,1,2] → 17,8,12:
/// Σs² = 289+64+144 = 497, CV = √(3·497 − 37²)/37 = √122/37 = 29.9 %.
#[test]
fn synth1_by_hand() -> Result<(), DslError> {
    let seeds = Seeds::new(&SYNTH1, 4)?;
    assert_eq!(seeds.stage_counts(), 2..=4);

    let two = seeds.top_k(2, 10)?;
    assert_eq!(
        comps(&two),
        vec![
            vec![4, 3],
            vec![3, 4],
            vec![5, 2],
            vec![2, 5],
            vec![6, 1],
            vec![1, 6]
        ]
    );
    let expected = [3.0, 11.0, 13.0, 27.0, 29.0, 35.0];
    for (s, e) in two.iter().zip(expected) {
        assert!(close(s.cv, e / 37.0), "{s}");
    }
    assert_eq!(two[0].stage_weights, vec![17, 20]);

    let three = seeds.top_k(3, 2)?;
    assert_eq!(three[0].composition, vec![3, 2, 2]);
    assert_eq!(three[0].stage_weights, vec![13, 12, 12]);
    assert!(close(three[0].cv, 2f64.sqrt() / 37.0));
    assert!((three[0].cv - 0.0382).abs() < 1e-4);
    assert_eq!(three[1].composition, vec![4, 1, 2]);
    assert!(close(three[1].cv, 122f64.sqrt() / 37.0));

    // Four stages: [2,1,2,2] → 5,8,12,12 and [2,2,1,2] → 5,12,8,12 tie (Σs² = 377);
    // lexicographic order puts [2,1,2,2] first.
    let four = seeds.top_k(4, 2)?;
    assert_eq!(comps(&four), vec![vec![2, 1, 2, 2], vec![2, 2, 1, 2]]);
    assert_eq!(four[0].cv, four[1].cv);
    Ok(())
}

/// Table 7 also gives the rank (position in the CV-sorted list of its stage count) and the
/// CV of the configurations Pipe-search chose: [4,1,1,1] rank 6, CV 51.4 and [5,1,1] rank
/// 10, CV 73.8. Both follow from our order, the first one only with the lexicographic tie
/// rule ([1,2,2,2] → 1,12,12,12 and [4,1,1,1] → 17,8,8,4 both have Σs² = 433).
#[test]
fn synth1_table7_ranks() -> Result<(), DslError> {
    let four = exhaustive_sorted(&SYNTH1, 4)?;
    assert_eq!(four[4].composition, vec![1, 2, 2, 2]);
    assert_eq!(four[5].composition, vec![4, 1, 1, 1]);
    assert!((four[5].cv * 100.0 - 51.4).abs() < 0.1);
    let three = exhaustive_sorted(&SYNTH1, 3)?;
    assert_eq!(three[9].composition, vec![5, 1, 1]);
    assert!((three[9].cv * 100.0 - 73.8).abs() < 0.05);
    Ok(())
}

#[test]
fn synth2_and_synth3_perfect_seeds() -> Result<(), DslError> {
    // Synth 2 totals 88: [8,7] → 44,44 and [4,4,6,1] → 22,22,22,22.
    let s2 = Seeds::new(&SYNTH2, 16)?;
    let best2 = &s2.top_k(2, 1)?[0];
    assert_eq!(best2.composition, vec![8, 7]);
    assert_eq!(best2.stage_weights, vec![44, 44]);
    assert_eq!(best2.cv, 0.0);
    let best4 = &s2.top_k(4, 1)?[0];
    assert_eq!(best4.composition, vec![4, 4, 6, 1]);
    assert_eq!(best4.cv, 0.0);
    assert_eq!(cv(&stage_weights(&SYNTH2, &[4, 4, 6, 1])?), 0.0);
    // Synth 3 totals 110: [4,2,1,4,2] → 22 × 5.
    let s3 = Seeds::new(&SYNTH3, 16)?;
    let best5 = &s3.top_k(5, 1)?[0];
    assert_eq!(best5.composition, vec![4, 2, 1, 4, 2]);
    assert_eq!(best5.stage_weights, vec![22; 5]);
    assert_eq!(best5.cv, 0.0);
    // and these are the only perfect seeds up to 5 stages
    for (w, p, n) in [
        (&SYNTH2[..], 2, 1),
        (&SYNTH2[..], 4, 1),
        (&SYNTH3[..], 5, 1),
        (&SYNTH3[..], 3, 0),
    ] {
        let zero = exhaustive_sorted(w, p)?
            .iter()
            .filter(|s| s.cv == 0.0)
            .count();
        assert_eq!(zero, n, "p={p}");
    }
    Ok(())
}

#[test]
fn ties_are_lexicographic() -> Result<(), DslError> {
    // all-equal weights: Σs² depends only on the multiset of stage sizes
    let w = [1; 6];
    let got = comps(&exhaustive_sorted(&w, 3)?);
    assert_eq!(got[0], vec![2, 2, 2]);
    // next: permutations of {1,2,3} (Σs² = 14), lexicographic
    assert_eq!(
        got[1..7].to_vec(),
        vec![
            vec![1, 2, 3],
            vec![1, 3, 2],
            vec![2, 1, 3],
            vec![2, 3, 1],
            vec![3, 1, 2],
            vec![3, 2, 1]
        ]
    );
    // then {1,1,4} (Σs² = 18)
    assert_eq!(
        got[7..].to_vec(),
        vec![vec![1, 1, 4], vec![1, 4, 1], vec![4, 1, 1]]
    );
    let lazy: Vec<_> = SeedIter::new(&w, 3)?.map(|s| s.composition).collect();
    assert_eq!(lazy, got);
    Ok(())
}

#[test]
fn composition_count_matches_enumeration() -> Result<(), DslError> {
    for m in 1..=12 {
        let w = vec![1u64; m];
        let mut total = 0u128;
        for p in 1..=m {
            let n = exhaustive_sorted(&w, p)?.len() as u128;
            assert_eq!(composition_count(m, p), Some(n), "m={m} p={p}");
            let lazy = SeedIter::new(&w, p)?.count() as u128;
            assert_eq!(lazy, n);
            total += n;
        }
        assert_eq!(total, 1u128 << (m - 1)); // 2^(M−1) compositions in all
        assert_eq!(composition_count(m, m + 1), Some(0));
        assert_eq!(composition_count(m, 0), Some(0));
    }
    assert_eq!(composition_count(0, 0), Some(1));
    Ok(())
}

#[test]
fn errors_are_values() {
    let w = [1, 2, 3];
    assert_eq!(
        SeedIter::new(&w, 4).err(),
        Some(DslError::InvalidStageCount {
            stages: 4,
            layers: 3
        })
    );
    assert!(exhaustive_sorted(&w, 0).is_err());
    assert!(exhaustive_sorted(&[], 1).is_err());
    let big = vec![1u64; 52];
    assert!(matches!(
        exhaustive_sorted(&big, 16),
        Err(DslError::TooManyCompositions {
            count: Some(3_188_675_231_420),
            ..
        })
    ));
    assert!(Seeds::new(&[u64::MAX, 1], 2).is_err());
    let s = Seeds::new(&[5], 8).expect("one layer is fine");
    assert!(s.stage_counts().is_empty());
}

fn check_lazy_equals_exhaustive(w: &[u64]) {
    for p in 1..=w.len() {
        let reference = exhaustive_sorted(w, p).expect("small space");
        let lazy: Vec<Seed> = SeedIter::new(w, p).expect("valid").collect();
        assert_eq!(lazy, reference, "weights {w:?}, p={p}");
    }
}

#[test]
fn lazy_equals_exhaustive_seeded() {
    let mut rng = SplitMix64::new(0x5EED);
    for round in 0..200 {
        let m = rng.range(1, 12) as usize;
        // few distinct values → many ties; some rounds all equal, some with zeros
        let hi = [0, 1, 2, 3, 10, 1000][round % 6];
        let w: Vec<u64> = (0..m).map(|_| rng.range(0, hi)).collect();
        check_lazy_equals_exhaustive(&w);
    }
    check_lazy_equals_exhaustive(&SYNTH1);
    check_lazy_equals_exhaustive(&[7; 12]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn lazy_equals_exhaustive_prop(w in prop::collection::vec(0u64..6, 1..=11)) {
        check_lazy_equals_exhaustive(&w);
    }

    #[test]
    fn cv_order_is_nondecreasing(w in prop::collection::vec(1u64..1_000_000, 2..=10), p in 1usize..=10) {
        prop_assume!(p <= w.len());
        let seeds: Vec<Seed> = SeedIter::new(&w, p).expect("valid").collect();
        for pair in seeds.windows(2) {
            prop_assert!(pair[0].cv <= pair[1].cv);
            prop_assert!(pair[0].sum_of_squares() <= pair[1].sum_of_squares());
        }
    }
}

/// Least Σs² of any split into `p` stages, by a plain DP (independent of the crate's).
fn optimum(w: &[u64], p: usize) -> u128 {
    let m = w.len();
    let mut best = vec![vec![u128::MAX; m + 1]; p + 1];
    best[0][0] = 0;
    for k in 1..=p {
        for j in 1..=m {
            let mut s = 0u128;
            for i in (0..j).rev() {
                s += u128::from(w[i]);
                if best[k - 1][i] != u128::MAX {
                    best[k][j] = best[k][j].min(best[k - 1][i] + s * s);
                }
            }
        }
    }
    best[p][m]
}

#[test]
fn resnet_sized_first_100_quickly() -> Result<(), DslError> {
    let mut rng = SplitMix64::new(50);
    let random: Vec<u64> = (0..52).map(|_| rng.range(1_000, 250_000_000)).collect();
    for w in [random, vec![3; 52]] {
        assert_eq!(composition_count(52, 16), Some(3_188_675_231_420));
        let start = Instant::now();
        let seeds: Vec<Seed> = SeedIter::new(&w, 16)?.take(100).collect();
        let took = start.elapsed();
        assert_eq!(seeds.len(), 100);
        assert!(took < Duration::from_secs(5), "took {took:?}");
        assert_eq!(seeds[0].sum_of_squares(), optimum(&w, 16));
        for pair in seeds.windows(2) {
            assert!(pair[0].cv <= pair[1].cv);
            let (a, b) = (pair[0].sum_of_squares(), pair[1].sum_of_squares());
            assert!(a < b || (a == b && pair[0].composition < pair[1].composition));
        }
        for s in &seeds {
            assert_eq!(s.composition.len(), 16);
            assert_eq!(s.composition.iter().sum::<usize>(), 52);
            assert_eq!(stage_weights(&w, &s.composition)?, s.stage_weights);
        }
    }
    Ok(())
}

#[test]
fn vgg16_on_16_cores_all_stage_counts() -> Result<(), DslError> {
    // 21 layers, stage counts 2..=16: exhaustive is still possible (15 504 at most for one p);
    // the lazy iterator's top 20 must be its prefix.
    let mut rng = SplitMix64::new(16);
    let w: Vec<u64> = (0..21).map(|_| rng.range(1, 2_000)).collect();
    let seeds = Seeds::new(&w, 16)?;
    for p in seeds.stage_counts() {
        let all = exhaustive_sorted(&w, p)?;
        let top = seeds.top_k(p, 20)?;
        assert_eq!(top[..], all[..top.len()], "p={p}");
    }
    Ok(())
}

/// A key that depends on the stage position and the layers, not only the weight: the
/// lazy search must still list compositions in ascending `Σ key`, ties lexicographic.
#[derive(Debug)]
struct Positional(Vec<u64>);

impl StageKey for Positional {
    fn key(
        &self,
        stages: usize,
        stage: usize,
        layers: std::ops::Range<usize>,
        weight: u64,
    ) -> u128 {
        let bias = self.0[(stages * 7 + stage * 3 + layers.start + 5 * layers.end) % self.0.len()];
        u128::from(weight) * u128::from(weight) * u128::from(1 + stage as u64 % 3)
            + u128::from(bias)
    }
}

/// Every composition, sorted by brute force: (Σ key, composition).
fn brute_force_by_key(w: &[u64], p: usize, key: &dyn StageKey) -> Vec<(u128, Vec<usize>)> {
    let mut all: Vec<(u128, Vec<usize>)> = exhaustive_sorted(w, p)
        .expect("small space")
        .into_iter()
        .map(|seed| {
            let mut start = 0;
            let mut total = 0u128;
            for (stage, &n) in seed.composition.iter().enumerate() {
                let weight: u64 = w[start..start + n].iter().sum();
                total += key.key(p, stage, start..start + n, weight);
                start += n;
            }
            (total, seed.composition)
        })
        .collect();
    all.sort();
    all
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn keyed_lazy_equals_brute_force(
        w in prop::collection::vec(0u64..6, 1..=9),
        bias in prop::collection::vec(0u64..20, 1..=5),
    ) {
        let key = Positional(bias);
        for p in 1..=w.len() {
            let lazy: Vec<(u128, Vec<usize>)> = SeedIter::with_key(&w, p, &key)
                .expect("valid")
                .map(|s| (s.key, s.composition))
                .collect();
            prop_assert_eq!(lazy, brute_force_by_key(&w, p, &key), "p={}", p);
        }
    }

    /// Equal speed factors give exactly the paper's order.
    #[test]
    fn speed_scaled_with_equal_speeds_is_the_papers_order(
        w in prop::collection::vec(0u64..50, 1..=10),
        speed in 0.1f64..4.0,
    ) {
        let seeds = Seeds::new(&w, w.len()).expect("weights");
        let scaled = seeds.clone().with_key(SpeedScaled::new(move |_, _| speed));
        for p in 1..=w.len() {
            let paper: Vec<Vec<usize>> = seeds.iter(p).expect("p").map(|s| s.composition).collect();
            let same: Vec<Vec<usize>> = scaled.iter(p).expect("p").map(|s| s.composition).collect();
            prop_assert_eq!(paper, same);
        }
    }
}

/// With the second of two stages twice as slow, the first seed gives it half the weight
/// of the first, and the key is `Σ k·s²` with `k` relative to the fastest place.
#[test]
fn speed_scaled_balances_times() -> Result<(), DslError> {
    let seeds = Seeds::new(&[3, 1, 2, 3, 3, 2, 1, 3, 3], 3)?
        .with_key(SpeedScaled::new(|_, stage| [1.0, 2.0, 4.0][stage]));
    let first = &seeds.top_k(2, 1)?[0];
    assert_eq!(first.stage_weights, vec![14, 7]);
    assert_eq!(first.key, 14 * 14 * 1024 + 7 * 7 * 2048);
    // three stages at speeds 1, 1/2, 1/4: weights 12, 6, 3 balance the times exactly
    assert_eq!(seeds.top_k(3, 1)?[0].stage_weights, vec![12, 6, 3]);
    Ok(())
}
