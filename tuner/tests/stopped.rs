//! A measurement that reports [`MeasureError::Stopped`] (an interrupt) ends every search
//! between two trials with the trials done before it, unchanged: the same trials, in the
//! same order, as the first trials of the search left to run, the best the best of them,
//! and `stopped: Stopped`. With no trial done the stop is the error.

use taopipe_dsl::SYNTH2;
use taopipe_dsl::Seeds;
use taopipe_tuner::{
    Configuration, Exhaustive, Measure, MeasureError, Phase, PipeSearch, PlacePolicy, RandomWalk,
    SearchError, SearchResult, SearchSpace, SimulatedPlatform, StageTimes, StopReason, Trial,
    WarmStart, confirm, retune,
};

/// The simulated platform, stopped after `left` measurements.
struct StopAfter {
    inner: SimulatedPlatform,
    left: usize,
}

impl Measure for StopAfter {
    fn stage_times(&mut self, config: &Configuration) -> Result<StageTimes, MeasureError> {
        if self.left == 0 {
            return Err(MeasureError::Stopped);
        }
        self.left -= 1;
        self.inner.stage_times(config)
    }
}

fn platform() -> SimulatedPlatform {
    let costs: Vec<f64> = SYNTH2.iter().map(|&w| w as f64).collect();
    SimulatedPlatform::asymmetric(costs, 2, 2, 0.5).with_noise(7, 0.05)
}

/// Checks `cut`, the search stopped after `k` measurements, against `full`, the same
/// search left to run.
fn assert_cut(what: &str, full: &SearchResult, cut: Result<SearchResult, SearchError>, k: usize) {
    if k == 0 {
        assert_eq!(
            cut,
            Err(SearchError::Measure(MeasureError::Stopped)),
            "{what}: nothing measured"
        );
        return;
    }
    let cut = cut.unwrap_or_else(|e| panic!("{what}, stopped after {k}: {e}"));
    assert!(full.trials.len() > k, "{what}: the full search is longer");
    assert_eq!(cut.stopped, StopReason::Stopped, "{what}, {k}");
    assert_eq!(
        cut.trials,
        full.trials[..k],
        "{what}: the trials done, as done"
    );
    let fastest = cut
        .trials
        .iter()
        .min_by(|a, b| a.slowest_ms.total_cmp(&b.slowest_ms))
        .expect("trials");
    assert_eq!(
        cut.best, fastest.configuration,
        "{what}, {k}: the best done"
    );
}

#[test]
fn every_search_stopped_midway_returns_the_trials_done() {
    let seeds = Seeds::new(&SYNTH2, 4).expect("seeds");
    let space = SearchSpace::new(SYNTH2.len(), 4, 4, PlacePolicy::Contiguous);
    let pipe = PipeSearch::new(3, 4);
    let walk = RandomWalk {
        space: space.clone(),
        seed: 3,
        target_ms: None,
        budget: 12,
    };
    let full_pipe = pipe.run(&seeds, &mut platform()).expect("runs");
    let full_walk = walk.run(&mut platform()).expect("runs");
    let small = SearchSpace::new(SYNTH2.len(), 2, 2, PlacePolicy::Contiguous);
    let full_exhaustive = Exhaustive::new(small.clone())
        .run(&mut platform())
        .expect("runs");
    for k in [0, 1, 4] {
        let stopping = || StopAfter {
            inner: platform(),
            left: k,
        };
        assert_cut(
            "pipe-search",
            &full_pipe,
            pipe.run(&seeds, &mut stopping()),
            k,
        );
        assert_cut("random walk", &full_walk, walk.run(&mut stopping()), k);
        assert_cut(
            "exhaustive",
            &full_exhaustive,
            Exhaustive::new(small.clone()).run(&mut stopping()),
            k,
        );
    }
}

#[test]
fn a_re_tune_stopped_midway_keeps_the_configuration_serving_as_a_candidate() {
    let half = SYNTH2.len() / 2;
    let serving = Configuration::contiguous(&[half, SYNTH2.len() - half], 4).expect("config");
    let times = platform().stage_times(&serving).expect("times");
    let per_worker_ms = vec![times.slowest_ms(); 4];
    let start = || WarmStart {
        current: &serving,
        times: &times,
        per_worker_ms: &per_worker_ms,
    };
    let search = PipeSearch::new(2, 4);
    let full = retune(&search, &SYNTH2, 4, start(), &mut platform()).expect("runs");
    for k in [0, 2] {
        let mut stopping = StopAfter {
            inner: platform(),
            left: k,
        };
        let cut = retune(&search, &SYNTH2, 4, start(), &mut stopping).expect("known: no error");
        assert_eq!(cut.stopped, StopReason::Stopped);
        // The configuration serving (known, not measured) and the k measured; the full
        // re-tune logs its one-stage candidate, measured after the search, first.
        let searched: Vec<&Trial> = full
            .trials
            .iter()
            .filter(|t| t.phase != Phase::Prior)
            .take(k + 1)
            .collect();
        assert_eq!(
            cut.trials.iter().collect::<Vec<_>>(),
            searched,
            "stopped after {k}"
        );
        assert!(cut.best_ms() <= times.slowest_ms());
    }
    // Confirming a stopped search measures nothing more.
    let cut = retune(
        &search,
        &SYNTH2,
        4,
        start(),
        &mut StopAfter {
            inner: platform(),
            left: 1,
        },
    )
    .expect("runs");
    let mut sim = platform();
    let confirmed = confirm(cut.clone(), &mut sim).expect("runs");
    assert_eq!(confirmed, cut);
    assert_eq!(sim.measurements(), 0);
}
