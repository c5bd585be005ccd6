//! A candidate measured before the search (the engine's one-stage configuration) is kept
//! exactly when it is faster: a search never ends on a configuration slower than one it
//! was shown, and never logs a configuration twice.

use std::time::Duration;

use taopipe_dsl::{SYNTH1, Seeds};
use taopipe_tuner::{Configuration, Measure, Phase, PipeSearch, SimulatedPlatform, Tx2Governor};

fn one_stage(sim: &mut SimulatedPlatform, units: usize, workers: usize) -> (Configuration, f64) {
    let one = Configuration::contiguous(&[units], workers).expect("one stage");
    let ms = sim.stage_times(&one).expect("measured").slowest_ms();
    (one, ms)
}

#[test]
fn the_one_stage_candidate_is_chosen_exactly_when_it_is_fastest() {
    let costs: Vec<f64> = SYNTH1.iter().map(|&w| w as f64).collect();
    let (units, workers) = (costs.len(), 4);
    let mut sim = SimulatedPlatform::tx2(costs, Tx2Governor::Setting3);
    let seeds = Seeds::new(&SYNTH1, workers).expect("seeds");
    let found = PipeSearch::new(10, workers)
        .run(&seeds, &mut sim)
        .expect("search");
    let (one, one_ms) = one_stage(&mut sim, units, workers);
    let (searched_best, searched_ms) = (found.best.clone(), found.best_ms());

    // Faster than the search's best: served.
    let faster = taopipe_tuner::StageTimes::new(vec![searched_ms * 0.5]);
    let chosen = found
        .clone()
        .with_prior(one.clone(), faster, Duration::from_millis(1));
    assert_eq!(chosen.best, one);
    assert_eq!(chosen.trials[0].phase, Phase::Prior);
    assert_eq!(chosen.trials.len(), found.trials.len() + 1);
    assert_eq!(chosen.tuning, found.tuning + Duration::from_millis(1));

    // Slower: logged, not served.
    let slower = taopipe_tuner::StageTimes::new(vec![searched_ms * 2.0]);
    let kept = found
        .clone()
        .with_prior(one.clone(), slower, Duration::ZERO);
    assert_eq!(kept.best, searched_best);
    assert_eq!(kept.trials[0].configuration, one);

    // As the simulated platform times it: the best is the minimum of all trials.
    let real = found.clone().with_prior(
        one.clone(),
        taopipe_tuner::StageTimes::new(vec![one_ms]),
        Duration::ZERO,
    );
    let fastest = real
        .trials
        .iter()
        .map(|t| t.slowest_ms)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(real.best_ms(), fastest);

    // A prior the search measured itself is not logged twice.
    let again = found.best_times.clone();
    let same = found
        .clone()
        .with_prior(searched_best.clone(), again, Duration::ZERO);
    assert_eq!(same.trials.len(), found.trials.len());
    assert_eq!(same.best, searched_best);
}
