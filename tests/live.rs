//! The live measurer: real stage times of a net through the runtime, isolated or
//! pipelined, and Pipe-search tuning with it end to end.

use std::sync::Arc;

use taopipe::dsl::Seeds;
use taopipe::live::{LiveMeasure, LiveMode};
use taopipe::nets::{Model, RandomWeights, zoo};
use taopipe::runtime::Runtime;
use taopipe::tuner::{Configuration, Measure, PipeSearch, Robust, RobustOptions};

fn alexnet() -> Arc<Model> {
    Arc::new(
        Model::build(zoo::alexnet().expect("alexnet"), &RandomWeights { seed: 2 }).expect("model"),
    )
}

#[test]
fn isolated_and_pipelined_stage_times_come_per_stage() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let model = alexnet();
    let input = vec![0.5; model.input_len()];
    let config = Configuration::contiguous(&[5, 6], 2).expect("config");
    let mut calls = 0;
    let mut live = LiveMeasure::new(&rt, model.clone(), input.clone(), LiveMode::Isolated)
        .expect("live")
        .on_trial(|c, t| {
            calls += 1;
            assert_eq!(c.stage_count(), t.stage_ms.len());
        });
    let times = live.stage_times(&config).expect("isolated");
    assert_eq!(times.stage_ms.len(), 2);
    assert!(times.stage_ms.iter().all(|&t| t > 0.0));
    drop(live);
    assert_eq!(calls, 1);
    let mut piped =
        LiveMeasure::new(&rt, model, input, LiveMode::Pipelined { frames: 3 }).expect("live");
    let times = piped.stage_times(&config).expect("pipelined");
    assert_eq!(times.stage_ms.len(), 2);
    assert!(times.slowest_ms() > 0.0);
}

#[test]
fn pipe_search_tunes_a_real_net() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let model = alexnet();
    let seeds = Seeds::from_net(model.spec(), 2).expect("seeds");
    let live = LiveMeasure::new(
        &rt,
        model.clone(),
        vec![0.1; model.input_len()],
        LiveMode::Isolated,
    )
    .expect("live");
    let mut measure = Robust::new(
        live,
        RobustOptions {
            tolerance: 0.0,
            warmup: 0,
            repetitions: 1,
            mad_k: 3.0,
        },
    );
    let result = PipeSearch::new(2, 2)
        .run(&seeds, &mut measure)
        .expect("search");
    assert_eq!(result.best.units(), model.spec().units().len());
    assert!(
        !result.trials.is_empty() && result.trials.len() <= 10,
        "{} trials",
        result.trials.len()
    );
    let best = result
        .trials
        .iter()
        .map(|t| t.slowest_ms)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(
        result.best_times.slowest_ms(),
        best,
        "the best is the fastest trial"
    );
}
