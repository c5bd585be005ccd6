//! The engine on a real runtime: the one-stage candidate is measured first, the
//! configuration served is the fastest one measured, and frames come out once each, in
//! order, bit-identical to a one-place forward pass.

use std::sync::Arc;

use taopipe_live::{Engine, TuneOptions, frame_input};
use taopipe_nets::{Model, RandomWeights, zoo};
use taopipe_runtime::{Place, Runtime, Topology};
use taopipe_tuner::{Configuration, Phase};

fn setup() -> (Runtime, Arc<Model>) {
    let rt = Runtime::builder()
        .topology(Topology::symmetric(2).expect("topology"))
        .pin(false)
        .build()
        .expect("runtime");
    let spec = zoo::by_name("synth1").expect("zoo net").expect("valid net");
    let model = Arc::new(Model::build(spec, &RandomWeights { seed: 3 }).expect("model"));
    (rt, model)
}

#[test]
fn engine_serves_the_fastest_configuration_it_measured_in_order() {
    let (rt, model) = setup();
    let units = model.spec().units().len();
    let options = TuneOptions {
        alpha: 2,
        reps: 1,
        ..TuneOptions::default()
    };
    let mut engine = Engine::new(&rt, model.clone(), options).expect("engine");
    let mut seen = Vec::new();
    let found = engine
        .tune(|config, times| seen.push((config.clone(), times.slowest_ms())))
        .expect("tune")
        .clone();
    let one = Configuration::contiguous(&[units], 2).expect("one stage");
    assert_eq!(found.trials[0].configuration, one);
    assert_eq!(found.trials[0].phase, Phase::Prior);
    assert!(found.trials.len() >= 2, "the search ran too");
    assert_eq!(seen.len(), found.trials.len(), "every trial reported once");
    let fastest = found
        .trials
        .iter()
        .map(|t| t.slowest_ms)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(found.best_ms(), fastest);
    assert_eq!(engine.configuration(), &found.best);

    let frames = 12u64;
    let inputs: Vec<Vec<f32>> = (0..frames)
        .map(|i| frame_input(model.input_len(), 100 + i))
        .collect();
    let source = inputs
        .clone()
        .into_iter()
        .map(|x| model.frame(x).expect("input length"));
    let mut got = Vec::new();
    let report = engine
        .run(source, |seq, frame| got.push((seq, frame.output())))
        .expect("run");
    assert_eq!(got.len() as u64, frames);
    for (i, (seq, out)) in got.iter().enumerate() {
        assert_eq!(*seq, i as u64);
        let want = model
            .forward(&rt, inputs[i].clone(), Place::new(0, 1))
            .expect("forward");
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(out), bits(&want), "frame {i}");
    }
    assert_eq!(report.run.frames, frames);
    let served: usize = report.pipeline.iter().map(|s| s.units).sum();
    assert_eq!(served, units);
    let json = serde_json::to_value(&report).expect("serialise");
    let logged = json["tuning"]["search"]["trials"]
        .as_array()
        .expect("trials");
    assert_eq!(logged.len(), found.trials.len());
    assert!(logged[0]["configuration"]["stages"][0]["units"] == units);
}

#[test]
fn an_untuned_engine_serves_layer_parallel_and_refuses_misfits() {
    let (rt, model) = setup();
    let units = model.spec().units().len();
    let mut engine = Engine::new(&rt, model.clone(), TuneOptions::default()).expect("engine");
    let config = engine.configuration().clone();
    assert_eq!(config.stage_count(), 1);
    assert_eq!(config.places(), vec![(0, 2)]);
    let short = Configuration::contiguous(&[1, units], 2).expect("a config of more units");
    let err = engine.serve(short).expect_err("too many units");
    assert!(err.to_string().contains(&(units + 1).to_string()), "{err}");
    assert_eq!(engine.configuration(), &config, "unchanged after a refusal");
    let report = engine
        .run(taopipe_live::frames(&model, 3, 1), |_, _| {})
        .expect("run");
    assert!(report.tuning.is_none());
    assert_eq!(report.pipeline.len(), 1);
    let base = engine
        .baseline(taopipe_live::frames(&model, 3, 1), |_, _| {})
        .expect("baseline");
    assert_eq!(base.frames, 3);
}
