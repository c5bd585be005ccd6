//! Alg. 2 step by step on hand-built stage times.

use std::collections::HashMap;

use taopipe_dsl::{SYNTH1, Seeds};

use super::*;
use crate::{MeasureError, PlacePolicy, SearchSpace, StageTimes};

/// A measurer backed by a table `composition → slowest stage` (every other composition
/// takes [`DEFAULT_MS`]), for Synth 1 (`{1,4,8,4,8,8,4}`) on 4 workers. It checks that
/// every configuration it is asked for is placed by the Contiguous policy and counts
/// measurements per composition.
struct Table {
    slowest: HashMap<Vec<usize>, f64>,
    measured: HashMap<Vec<usize>, usize>,
}

const DEFAULT_MS: f64 = 100.0;

/// The CV-sorted lists of Synth 1 (rank: composition, stage weights) and the times we give
/// them. Σ weights = 37.
///
/// ```text
/// S[2]: 1 [4,3] 20    2 [3,4] 24    3 [5,2] 25     4 [2,5] 32    5 [6,1] 33    6 [1,6] 36
/// S[3]: 1 [3,2,2] 13  2 [4,1,2] 17  3 [4,2,1] 16   4 [2,2,3] 20  5 [2,3,2] 12.5
///       6 [3,1,3] 20  7 [3,3,1] 20  8 [1,3,3] 20   9.. (7 more)  100
/// S[4]: 1 [2,1,2,2] 14  2 [2,2,1,2] 14  3 [3,1,1,2] 12.8  4 [3,2,1,1] 13  5 [1,2,2,2] 15
///       6 [4,1,1,1] 11  7 [2,2,2,1] 16  8 [3,1,2,1] 16    9 [1,3,1,2] 100
///       10 [2,1,1,3] 11 [2,1,3,1] 12 [2,3,1,1] … (all 100)
/// ```
///
/// `[4,1,1,1]` at rank 6 is the optimum the paper reports for Synth 1 (Table 7, governor
/// setting 1); `[2,3,2]` (12.5) is the best 3-stage configuration.
fn synth1_table() -> Table {
    let rows: [(&[usize], f64); 22] = [
        (&[4, 3], 20.0),
        (&[3, 4], 24.0),
        (&[5, 2], 25.0),
        (&[2, 5], 32.0),
        (&[6, 1], 33.0),
        (&[1, 6], 36.0),
        (&[3, 2, 2], 13.0),
        (&[4, 1, 2], 17.0),
        (&[4, 2, 1], 16.0),
        (&[2, 2, 3], 20.0),
        (&[2, 3, 2], 12.5),
        (&[3, 1, 3], 20.0),
        (&[3, 3, 1], 20.0),
        (&[1, 3, 3], 20.0),
        (&[2, 1, 2, 2], 14.0),
        (&[2, 2, 1, 2], 14.0),
        (&[3, 1, 1, 2], 12.8),
        (&[3, 2, 1, 1], 13.0),
        (&[1, 2, 2, 2], 15.0),
        (&[4, 1, 1, 1], 11.0),
        (&[2, 2, 2, 1], 16.0),
        (&[3, 1, 2, 1], 16.0),
    ];
    Table {
        slowest: rows.iter().map(|(c, t)| (c.to_vec(), *t)).collect(),
        measured: HashMap::new(),
    }
}

impl Measure for Table {
    fn stage_times(&mut self, config: &Configuration) -> Result<StageTimes, MeasureError> {
        let comp = config.composition();
        let expected = Configuration::contiguous(&comp, 4)?;
        assert_eq!(
            config, &expected,
            "Pipe-search must use the Contiguous places"
        );
        *self.measured.entry(comp.clone()).or_default() += 1;
        let t = self.slowest.get(&comp).copied().unwrap_or(DEFAULT_MS);
        // the slowest stage first, the others faster
        let mut stage_ms = vec![t / 2.0; comp.len()];
        stage_ms[0] = t;
        Ok(StageTimes::new(stage_ms))
    }
}

fn run(alpha: usize) -> (SearchResult, Table) {
    let seeds = Seeds::new(&SYNTH1, 4).expect("Synth 1 seeds");
    let mut table = synth1_table();
    let result = PipeSearch::new(alpha, 4)
        .run(&seeds, &mut table)
        .expect("Pipe-search runs");
    (result, table)
}

/// `(phase, rank, composition)` of every trial.
fn sequence(result: &SearchResult) -> Vec<(Phase, usize, Vec<usize>)> {
    result
        .trials
        .iter()
        .map(|t| {
            (
                t.phase,
                t.rank.expect("Pipe-search trials have a rank"),
                t.configuration.composition(),
            )
        })
        .collect()
}

fn check_common(result: &SearchResult, table: &Table) {
    // never twice: one measurement per trial, each composition once
    assert!(
        table.measured.values().all(|&n| n == 1),
        "{:?}",
        table.measured
    );
    assert_eq!(table.measured.len(), result.trials.len());
    // the best is the least slowest stage of the log, and its stage times are its own
    let min = result
        .trials
        .iter()
        .map(|t| t.slowest_ms)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(result.best_ms(), min);
    let best = result.best_trial().expect("best is in the log");
    assert_eq!(best.stage_ms, result.best_times.stage_ms);
}

use Phase::{Explore as E, Focus as F, Seed as S};

#[test]
fn alpha_1() {
    // Line 1: the seeds S[2][0] = [4,3] (20), S[3][0] = [3,2,2] (13), S[4][0] = [2,1,2,2]
    //         (14) are measured; S_min = [3,2,2] (13).
    // Phase 1, γ = 0 for each p:
    //   p=2: c=0 [4,3] (cached) 20 > 13 → γ=1 = α, stop; visited[2] = 1
    //   p=3: c=0 [3,2,2] (cached) 13, a tie, not an improvement → γ=1, stop
    //   p=4: c=0 [2,1,2,2] (cached) 14 → γ=1, stop
    // Phase 2 on p = 3 (S_min's), from c = visited[3] = 1:
    //   c=1 [4,1,2] 17 → γ=1, stop.
    let (result, table) = run(1);
    assert_eq!(
        sequence(&result),
        vec![
            (S, 1, vec![4, 3]),
            (S, 1, vec![3, 2, 2]),
            (S, 1, vec![2, 1, 2, 2]),
            (F, 2, vec![4, 1, 2]),
        ]
    );
    assert_eq!(result.best.composition(), vec![3, 2, 2]);
    assert_eq!(result.best.to_string(), "[3,2,2]@{0+2,2+1,3+1}");
    assert_eq!(result.best_ms(), 13.0);
    assert_eq!(result.stopped, StopReason::Confidence);
    check_common(&result, &table);
}

#[test]
fn alpha_2() {
    // Seeds as for α = 1; S_min = [3,2,2] (13).
    // Phase 1:
    //   p=2: [4,3] 20 γ=1, [3,4] 24 γ=2 stop
    //   p=3: [3,2,2] tie γ=1, [4,1,2] 17 γ=2 stop
    //   p=4: [2,1,2,2] 14 γ=1, [2,2,1,2] 14 γ=2 stop
    // Phase 2 on p=3 from c=2: [4,2,1] 16 γ=1, [2,2,3] 20 γ=2 stop.
    let (result, table) = run(2);
    assert_eq!(
        sequence(&result),
        vec![
            (S, 1, vec![4, 3]),
            (S, 1, vec![3, 2, 2]),
            (S, 1, vec![2, 1, 2, 2]),
            (E, 2, vec![3, 4]),
            (E, 2, vec![4, 1, 2]),
            (E, 2, vec![2, 2, 1, 2]),
            (F, 3, vec![4, 2, 1]),
            (F, 4, vec![2, 2, 3]),
        ]
    );
    assert_eq!(result.best.composition(), vec![3, 2, 2]);
    assert_eq!(result.best_ms(), 13.0);
    check_common(&result, &table);
}

#[test]
fn alpha_3() {
    // Seeds as for α = 1; S_min = [3,2,2] (13).
    // Phase 1:
    //   p=2: [4,3] 20 γ=1, [3,4] 24 γ=2, [5,2] 25 γ=3 stop
    //   p=3: [3,2,2] tie γ=1, [4,1,2] 17 γ=2, [4,2,1] 16 γ=3 stop
    //   p=4: [2,1,2,2] 14 γ=1, [2,2,1,2] 14 γ=2,
    //        [3,1,1,2] 12.8 < 13: S_min, γ=0,
    //        [3,2,1,1] 13 γ=1, [1,2,2,2] 15 γ=2,
    //        [4,1,1,1] 11 < 12.8: S_min, γ=0,
    //        [2,2,2,1] 16 γ=1, [3,1,2,1] 16 γ=2, [1,3,1,2] 100 γ=3 stop; visited[4] = 9
    // Phase 2 on p=4 (S_min moved there) from c=9 (rank 10):
    //   [2,1,1,3] γ=1, [2,1,3,1] γ=2, [2,3,1,1] γ=3 stop (all 100).
    // Result: [4,1,1,1], rank 6 — Table 7's optimum for Synth 1. The 3-stage [2,3,2]
    // (12.5, rank 5) is never reached: phase 1 gave up on p=3 at rank 3.
    let (result, table) = run(3);
    assert_eq!(
        sequence(&result),
        vec![
            (S, 1, vec![4, 3]),
            (S, 1, vec![3, 2, 2]),
            (S, 1, vec![2, 1, 2, 2]),
            (E, 2, vec![3, 4]),
            (E, 3, vec![5, 2]),
            (E, 2, vec![4, 1, 2]),
            (E, 3, vec![4, 2, 1]),
            (E, 2, vec![2, 2, 1, 2]),
            (E, 3, vec![3, 1, 1, 2]),
            (E, 4, vec![3, 2, 1, 1]),
            (E, 5, vec![1, 2, 2, 2]),
            (E, 6, vec![4, 1, 1, 1]),
            (E, 7, vec![2, 2, 2, 1]),
            (E, 8, vec![3, 1, 2, 1]),
            (E, 9, vec![1, 3, 1, 2]),
            (F, 10, vec![2, 1, 1, 3]),
            (F, 11, vec![2, 1, 3, 1]),
            (F, 12, vec![2, 3, 1, 1]),
        ]
    );
    assert_eq!(result.best.composition(), vec![4, 1, 1, 1]);
    assert_eq!(result.best.to_string(), "[4,1,1,1]@{0+1,1+1,2+1,3+1}");
    assert_eq!(result.best_ms(), 11.0);
    assert_eq!(result.best_trial().and_then(|t| t.rank), Some(6));
    assert_eq!(result.stopped, StopReason::Confidence);
    check_common(&result, &table);
}

#[test]
fn alpha_0_measures_only_the_seeds() {
    let (result, table) = run(0);
    assert_eq!(
        sequence(&result),
        vec![
            (S, 1, vec![4, 3]),
            (S, 1, vec![3, 2, 2]),
            (S, 1, vec![2, 1, 2, 2])
        ]
    );
    assert_eq!(result.best.composition(), vec![3, 2, 2]);
    check_common(&result, &table);
}

#[test]
fn alpha_beyond_every_list_visits_the_whole_space_once() {
    // α = 20 exceeds every list (6, 15, 20 entries): phase 1 runs each list to its end,
    // phase 2 (p = 4) finds its list exhausted at once. That is the whole Contiguous space,
    // 41 configurations, each measured once (the three seeds are not measured again).
    let (result, table) = run(20);
    let space = SearchSpace::new(7, 4, 4, PlacePolicy::Contiguous);
    assert_eq!(result.trials.len() as u128, space.size());
    assert_eq!(result.trials.len(), 41);
    assert_eq!(result.stopped, StopReason::Exhausted);
    assert_eq!(result.best.composition(), vec![4, 1, 1, 1]);
    assert!(result.trials.iter().all(|t| t.phase != F));
    // per stage count, phase 1 walked the ranks in order
    for p in 2..=4 {
        let ranks: Vec<usize> = result
            .trials
            .iter()
            .filter(|t| t.configuration.stage_count() == p)
            .filter_map(|t| t.rank)
            .collect();
        let n = ranks.len();
        assert_eq!(ranks, (1..=n).collect::<Vec<_>>(), "p = {p}");
    }
    check_common(&result, &table);
}

#[test]
fn ranks_follow_the_dsl_order() {
    // rank r of stage count p is the r-th seed of the DSL's sorted list
    let (result, _) = run(3);
    let seeds = Seeds::new(&SYNTH1, 4).expect("seeds");
    for t in &result.trials {
        let p = t.configuration.stage_count();
        let rank = t.rank.expect("rank");
        let seed = seeds
            .top_k(p, rank)
            .expect("top k")
            .pop()
            .expect("rank-th seed");
        assert_eq!(seed.composition, t.configuration.composition());
    }
}

#[test]
fn too_few_workers_or_units() {
    let seeds = Seeds::new(&SYNTH1, 4).expect("seeds");
    let err = PipeSearch::new(3, 1).run(&seeds, &mut synth1_table());
    assert!(matches!(
        err,
        Err(SearchError::NoStageCounts { workers: 1, .. })
    ));
    let seeds = Seeds::new(&[5], 4).expect("seeds");
    let err = PipeSearch::new(3, 4).run(&seeds, &mut synth1_table());
    assert!(matches!(
        err,
        Err(SearchError::NoStageCounts { units: 1, .. })
    ));
}

#[test]
fn c_is_clamped_to_the_workers() {
    // seeds for C = 4, but only 3 workers: stage counts 2 and 3
    let seeds = Seeds::new(&SYNTH1, 4).expect("seeds");
    let mut sim =
        crate::SimulatedPlatform::symmetric(SYNTH1.iter().map(|&w| w as f64).collect(), 3);
    let result = PipeSearch::new(5, 3).run(&seeds, &mut sim).expect("runs");
    assert!(
        result
            .trials
            .iter()
            .all(|t| t.configuration.stage_count() <= 3)
    );
    assert!(
        result
            .trials
            .iter()
            .any(|t| t.configuration.stage_count() == 3)
    );
}

/// A measurer whose answers are broken in a chosen way.
struct Broken(usize);

impl Measure for Broken {
    fn stage_times(&mut self, config: &Configuration) -> Result<StageTimes, MeasureError> {
        match self.0 {
            0 => Err(MeasureError::Failed {
                reason: "the device is on fire".into(),
            }),
            1 => Ok(StageTimes::new(vec![1.0])),
            _ => Ok(StageTimes::new(vec![f64::NAN; config.stage_count()])),
        }
    }
}

#[test]
fn measurement_errors_are_reported_not_hidden() {
    let seeds = Seeds::new(&SYNTH1, 4).expect("seeds");
    let search = PipeSearch::new(3, 4);
    let e = search.run(&seeds, &mut Broken(0)).expect_err("fails");
    assert!(e.to_string().contains("on fire"), "{e}");
    let e = search.run(&seeds, &mut Broken(1)).expect_err("fails");
    assert!(
        matches!(
            e,
            SearchError::Measure(MeasureError::StageCount {
                expected: 2,
                got: 1,
                ..
            })
        ),
        "{e}"
    );
    let e = search.run(&seeds, &mut Broken(2)).expect_err("fails");
    assert!(
        matches!(
            e,
            SearchError::Measure(MeasureError::BadTime { stage: 0, .. })
        ),
        "{e}"
    );
}
