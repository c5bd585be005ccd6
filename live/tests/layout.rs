//! A legal XiTAO layout that allows width 1 only (`0 1` / `1` / `1`, issue 12): tuning
//! with every search and measurement, serving, a re-tune, the layer-parallel baseline and a
//! whole frame all keep to the places it allows, and every output is bit-identical to a
//! one-place forward pass.

use std::path::Path;
use std::sync::Arc;

use taopipe_live::report::What;
use taopipe_live::{
    Engine, MeasureKind, SearchKind, TuneOptions, allowed_places, frame_input, layer_parallel,
    stream, widest_place,
};
use taopipe_nets::{Frame, Model, RandomWeights, zoo};
use taopipe_runtime::{Place, Runtime, Topology};
use taopipe_tuner::{ConfigError, Configuration};

/// Two unpinned workers under the width-1-only layout.
fn width_one() -> (Runtime, Arc<Model>) {
    let layout = Topology::from_layout(
        "0 1\n1\n1\n",
        "width-1.layout",
        Path::new("/nonexistent"),
        &[0, 1],
    )
    .expect("a legal layout");
    let rt = Runtime::builder()
        .topology(layout)
        .pin(false)
        .build()
        .expect("runtime");
    let spec = zoo::by_name("synth1").expect("zoo net").expect("valid net");
    let model = Arc::new(Model::build(spec, &RandomWeights { seed: 5 }).expect("model"));
    (rt, model)
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Frame `i` has input `frame_input(_, 100 + i)`.
fn inputs(model: &Arc<Model>, count: u64) -> impl Iterator<Item = Frame> + Send + use<> {
    let model = model.clone();
    (0..count).map(move |i| {
        model
            .frame(frame_input(model.input_len(), 100 + i))
            .expect("input length")
    })
}

/// Frame `seq`'s output is bit-identical to a forward pass of its input on worker 1 alone.
fn check_output(rt: &Runtime, model: &Model, seq: u64, out: &[f32]) {
    let input = frame_input(model.input_len(), 100 + seq);
    let want = model.forward(rt, input, Place::new(1, 1)).expect("forward");
    assert_eq!(bits(out), bits(&want), "frame {seq}");
}

fn allowed(rt: &Runtime, config: &Configuration) -> bool {
    config
        .places()
        .into_iter()
        .all(|(leader, width)| rt.topology().is_allowed(Place::new(leader, width)))
}

#[test]
fn every_search_and_measurement_tunes_on_allowed_places_only() {
    let (rt, model) = width_one();
    let units = model.spec().units().len();
    let one = Configuration::with_places(&[units], &[(0, 1)], units, 2).expect("valid");
    for search in [
        SearchKind::Pipe,
        SearchKind::Exhaustive,
        SearchKind::Random,
        SearchKind::Nohints,
    ] {
        for measure in [
            MeasureKind::Live,
            MeasureKind::Isolated,
            MeasureKind::Pipelined,
        ] {
            let options = TuneOptions {
                search,
                measure,
                alpha: 1,
                reps: 1,
                tolerance: 0.0, // one sample a trial, no racing
                ..TuneOptions::default()
            };
            let mut engine = Engine::new(&rt, model.clone(), options).expect("engine");
            let found = engine.tune(|_, _| {}).expect("tunes").clone();
            let label = format!("{search}/{measure}");
            assert_eq!(found.trials[0].configuration, one, "{label}: the candidate");
            assert!(found.trials.len() >= 2, "{label}: the search ran too");
            for t in &found.trials {
                assert!(
                    allowed(&rt, &t.configuration),
                    "{label}: {}",
                    t.configuration
                );
            }
        }
    }
}

#[test]
fn a_tuned_engine_serves_re_tunes_and_runs_the_baseline_bit_identically() {
    let (rt, model) = width_one();
    let options = TuneOptions {
        alpha: 2,
        reps: 3,
        watch: None, // only the re-tune asked for
        ..TuneOptions::default()
    };
    let mut engine = Engine::new(&rt, model.clone(), options).expect("engine");
    engine.tune(|_, _| {}).expect("tunes");
    assert!(allowed(&rt, engine.configuration()));
    let handle = engine.handle();
    let frames = 60;
    let mut got = 0;
    let report = engine
        .run(inputs(&model, frames), |seq, frame| {
            if seq == 5 {
                handle.retune();
            }
            check_output(&rt, &model, seq, &frame.output());
            got += 1;
        })
        .expect("run");
    assert_eq!(got, frames);
    assert!(
        report
            .events
            .iter()
            .any(|e| matches!(e.what, What::Retuned { .. })),
        "re-tuned: {:?}",
        report.events
    );
    for config in &report.configurations {
        assert!(!config.contains("+2"), "served {config}");
    }

    let mut baseline = 0;
    engine
        .baseline(inputs(&model, 4), |seq, frame| {
            check_output(&rt, &model, seq, &frame.output());
            baseline += 1;
        })
        .expect("baseline");
    assert_eq!(baseline, 4);
}

#[test]
fn an_untuned_engine_a_frame_and_the_baseline_use_the_widest_allowed_place() {
    let (rt, model) = width_one();
    let units = model.spec().units().len();
    assert_eq!(widest_place(&rt), Place::new(0, 1));
    assert!(!allowed_places(&rt).allows(0, 2));

    let mut engine = Engine::new(&rt, model.clone(), TuneOptions::default()).expect("engine");
    assert_eq!(engine.configuration().places(), vec![(0, 1)]);
    let wide = Configuration::contiguous(&[units], 2).expect("valid without a layout");
    let err = engine.serve(wide.clone()).expect_err("0+2 is not allowed");
    assert!(
        err.to_string().contains("0+2") && err.to_string().contains("[1]"),
        "{err}"
    );
    let mut served = 0;
    engine
        .run(inputs(&model, 3), |seq, frame| {
            check_output(&rt, &model, seq, &frame.output());
            served += 1;
        })
        .expect("run");
    assert_eq!(served, 3);

    let stats = layer_parallel(&rt, &model, inputs(&model, 3), |seq, frame| {
        check_output(&rt, &model, seq, &frame.output());
    })
    .expect("baseline");
    assert_eq!(stats.frames, 3);

    let input = frame_input(model.input_len(), 100);
    let out = model
        .forward(&rt, input, widest_place(&rt))
        .expect("a frame");
    check_output(&rt, &model, 0, &out);

    // Streaming a configuration the layout forbids fails before any frame, naming it.
    let mut delivered = 0;
    let err = stream(&rt, &model, &wide, inputs(&model, 2), |_, _| delivered += 1)
        .expect_err("0+2 is not allowed");
    assert_eq!(delivered, 0);
    assert!(
        matches!(
            err,
            taopipe_live::LiveError::Config(ConfigError::PlaceNotAllowed { width: 2, .. })
        ),
        "{err}"
    );
}
