//! Stopping the engine as an interrupt does (issue 12): the stop is a flag stored to from
//! outside, as a signal handler stores to it ([`StopSignal::from_flag`]). Serving stops
//! between frames with every admitted frame delivered, in order and bit-identical, and a
//! report marked partial; tuning stops between trials with the trials done.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use taopipe_live::{Engine, LiveError, MeasureKind, TuneOptions, frame_input};
use taopipe_nets::{Model, RandomWeights, zoo};
use taopipe_runtime::{Place, Runtime, StopSignal, Topology};
use taopipe_tuner::{Configuration, StopReason};

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

fn inputs(model: &Arc<Model>, count: u64) -> impl Iterator<Item = taopipe_nets::Frame> + Send {
    let model = model.clone();
    (0..count).map(move |i| {
        model
            .frame(frame_input(model.input_len(), 100 + i))
            .expect("input length")
    })
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// An engine whose stop is `flag`, as an example wires it to a SIGINT handler.
fn stoppable<'rt>(
    rt: &'rt Runtime,
    model: &Arc<Model>,
    options: TuneOptions,
) -> (Engine<'rt>, Arc<AtomicBool>) {
    let flag = Arc::new(AtomicBool::new(false));
    let engine = Engine::new(rt, model.clone(), options)
        .expect("engine")
        .with_stop(StopSignal::from_flag(flag.clone()));
    (engine, flag)
}

#[test]
fn a_stop_while_serving_delivers_every_admitted_frame_in_order_and_reports_partial() {
    let (rt, model) = setup();
    let units = model.spec().units().len();
    let options = TuneOptions {
        watch: None,
        ..TuneOptions::default()
    };
    let (mut engine, flag) = stoppable(&rt, &model, options);
    // Two stages: frames are in flight in both queues when the stop comes.
    let two = Configuration::contiguous(&[units / 2, units - units / 2], 2).expect("config");
    engine.serve(two).expect("fits");
    let offered = 100_000;
    let mut got: Vec<(u64, Vec<u32>)> = Vec::new();
    let report = engine
        .run(inputs(&model, offered), |seq, frame| {
            if seq == 20 {
                flag.store(true, Ordering::SeqCst); // what the signal handler does
            }
            got.push((seq, bits(&frame.output())));
        })
        .expect("a stop is no error");
    let n = got.len() as u64;
    assert!(n > 20, "the frames out before the stop: {n}");
    assert!(n < offered, "the stop ended the run: {n} frames");
    assert!(report.partial, "the report says it was cut short");
    assert_eq!(report.run.frames, n);
    assert_eq!(
        report.timeline.iter().map(|f| f.seq).collect::<Vec<_>>(),
        (0..n).collect::<Vec<_>>(),
        "the timeline lists every frame, in order"
    );
    for (i, (seq, out)) in got.iter().enumerate() {
        assert_eq!(*seq, i as u64, "frame {i} came out as {seq}");
        let input = frame_input(model.input_len(), 100 + seq);
        let want = model
            .forward(&rt, input, Place::new(0, 1))
            .expect("forward");
        assert_eq!(out, &bits(&want), "frame {i} is its own input's output");
    }
    // A stop is final: a later run admits nothing, and the baseline takes no frame.
    let again = engine
        .run(inputs(&model, 5), |_, _| panic!("no frame after the stop"))
        .expect("run");
    assert_eq!(again.run.frames, 0);
    assert!(again.partial);
    let base = engine
        .baseline(inputs(&model, 5), |_, _| panic!("no baseline frame"))
        .expect("baseline");
    assert_eq!(base.frames, 0);
}

#[test]
fn a_run_not_stopped_is_not_partial() {
    let (rt, model) = setup();
    let options = TuneOptions {
        watch: None,
        ..TuneOptions::default()
    };
    let (mut engine, _flag) = stoppable(&rt, &model, options);
    let report = engine.run(inputs(&model, 6), |_, _| {}).expect("run");
    assert_eq!(report.run.frames, 6);
    assert!(!report.partial);
    let json = serde_json::to_value(&report).expect("json");
    assert_eq!(json["partial"], serde_json::Value::Bool(false));
}

#[test]
fn a_stop_during_tuning_keeps_the_trials_done_and_serves_their_best() {
    let (rt, model) = setup();
    for measure in [MeasureKind::Live, MeasureKind::Isolated] {
        let options = TuneOptions {
            alpha: 10,
            reps: 3,
            measure,
            watch: None,
            ..TuneOptions::default()
        };
        let (mut engine, flag) = stoppable(&rt, &model, options);
        let mut seen = Vec::new();
        let found = engine
            .tune(|config, times| {
                seen.push((config.clone(), times.slowest_ms()));
                if seen.len() == 3 {
                    flag.store(true, Ordering::SeqCst);
                }
            })
            .expect("a stop after a trial is no error")
            .clone();
        assert_eq!(found.stopped, StopReason::Stopped, "{measure}");
        assert_eq!(found.trials.len(), 3, "{measure}: the trials done, no more");
        let logged: Vec<_> = found
            .trials
            .iter()
            .map(|t| (t.configuration.clone(), t.slowest_ms))
            .collect();
        assert_eq!(logged, seen, "{measure}: every trial done is in the result");
        let fastest = seen
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("trials");
        assert_eq!(found.best, fastest.0, "{measure}");
        assert_eq!(engine.configuration(), &found.best, "{measure}");
        let report = engine
            .run(inputs(&model, 5), |_, _| panic!("no frame after the stop"))
            .expect("run");
        assert!(report.partial, "{measure}");
        let json = serde_json::to_value(&report).expect("json");
        assert_eq!(json["tuning"]["search"]["stopped"], "stopped", "{measure}");
        assert_eq!(
            json["tuning"]["search"]["trials"].as_array().map(Vec::len),
            Some(3)
        );
    }
}

#[test]
fn a_stop_before_the_first_trial_is_an_error_and_serves_as_before() {
    let (rt, model) = setup();
    let (mut engine, flag) = stoppable(&rt, &model, TuneOptions::default());
    let before = engine.configuration().clone();
    flag.store(true, Ordering::SeqCst);
    let mut trials = 0;
    let tuned = engine.tune(|_, _| trials += 1).map(|_| ());
    assert!(matches!(tuned, Err(LiveError::Stopped)), "{tuned:?}");
    assert_eq!(trials, 0);
    assert_eq!(engine.configuration(), &before);
}
