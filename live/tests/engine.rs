//! The engine on a real runtime: the one-stage candidate is measured first, the
//! configuration served is the fastest one measured, and frames come out once each, in
//! order, bit-identical to a one-place forward pass.

use std::sync::Arc;

use taopipe_live::report::What;
use taopipe_live::{Engine, MIN_RATE_FPS, TuneOptions, frame_input};
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
    // Served: the configuration whose latest measurement is the fastest, and that
    // measurement was a confirmation (the configuration was measured at least twice).
    let mut latest: Vec<(&Configuration, f64, usize)> = Vec::new();
    for t in &found.trials {
        match latest.iter_mut().find(|(c, ..)| *c == &t.configuration) {
            Some(entry) => (entry.1, entry.2) = (t.slowest_ms, entry.2 + 1),
            None => latest.push((&t.configuration, t.slowest_ms, 1)),
        }
    }
    let fastest = latest
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("trials");
    assert_eq!(fastest.0, &found.best);
    assert_eq!(found.best_ms(), fastest.1);
    let again = found.trials.len() - latest.len();
    assert!(
        fastest.2 >= 2 || again == taopipe_tuner::CONFIRM_MAX,
        "the winner was confirmed, or confirming took all its measurements"
    );
    assert!((1..=taopipe_tuner::CONFIRM_MAX).contains(&again));
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

/// The output bits of every frame, in the order the sink saw them.
type Outputs = Vec<(u64, Vec<u32>)>;

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Each output matches a one-place forward pass of its input (`frame_input(_, 100 + seq)`).
fn check_outputs(rt: &Runtime, model: &Model, got: &Outputs) {
    for (i, (seq, out)) in got.iter().enumerate() {
        assert_eq!(*seq, i as u64, "frame {i} came out as {seq}");
        let input = frame_input(model.input_len(), 100 + seq);
        let want = model.forward(rt, input, Place::new(0, 1)).expect("forward");
        assert_eq!(out, &bits(&want), "frame {i}");
    }
}

fn inputs(model: &Arc<Model>, count: u64) -> impl Iterator<Item = taopipe_nets::Frame> + Send {
    let model = model.clone();
    (0..count).map(move |i| {
        model
            .frame(frame_input(model.input_len(), 100 + i))
            .expect("input length")
    })
}

#[test]
fn a_retune_asked_for_while_serving_switches_between_frames_losing_nothing() {
    let (rt, model) = setup();
    let options = TuneOptions {
        alpha: 2,
        watch: None, // only the re-tune asked for (sub-ms frames are too noisy to watch)
        ..TuneOptions::default()
    };
    let mut engine = Engine::new(&rt, model.clone(), options).expect("engine");
    let handle = engine.handle();
    let frames = 80;
    let mut got: Outputs = Vec::new();
    let report = engine
        .run(inputs(&model, frames), |seq, frame| {
            if seq == 10 {
                handle.retune();
            }
            got.push((seq, bits(&frame.output())));
        })
        .expect("run");
    assert_eq!(got.len() as u64, frames, "every frame delivered");
    check_outputs(&rt, &model, &got);
    let kinds: Vec<&str> = report
        .events
        .iter()
        .map(|e| match e.what {
            What::Forced => "forced",
            What::Retuned { .. } => "retuned",
            What::Change { .. } => "change",
            What::Conditions { .. } => "conditions",
            What::Dismissed { .. } => "dismissed",
        })
        .collect();
    let forced = kinds.iter().position(|k| *k == "forced").expect("forced");
    assert_eq!(kinds.get(forced + 1), Some(&"retuned"), "{kinds:?}");
    assert!(
        report.timeline.iter().any(|f| f.trial),
        "trials served frames"
    );
    assert_eq!(report.timeline.len() as u64, frames);
    assert!(
        report.timeline.windows(2).all(|w| w[0].seq + 1 == w[1].seq),
        "the timeline is in order"
    );
    let Some(What::Retuned { to, .. }) = report.events.get(forced + 1).map(|e| &e.what) else {
        unreachable!()
    };
    assert_eq!(to, &engine.configuration().to_string());
}

#[test]
fn a_worker_slowed_mid_run_is_seen_and_re_tuned_for() {
    // AlexNet: frames of tens of ms, long enough for service times to mean something.
    let rt = Runtime::builder()
        .topology(Topology::symmetric(2).expect("topology"))
        .pin(false)
        .build()
        .expect("runtime");
    let spec = zoo::by_name("alexnet")
        .expect("zoo net")
        .expect("valid net");
    let model = Arc::new(Model::build(spec, &RandomWeights { seed: 3 }).expect("model"));
    let options = TuneOptions {
        alpha: 2,
        ..TuneOptions::default()
    };
    // Worker 1 at a fifth of its speed from 1 s on: the one-stage configuration, a gang of
    // both workers, waits for it on every layer, so its stage time grows about threefold.
    let schedule = "0s:none,1s:w1=0.2".parse().expect("schedule");
    let mut engine = Engine::new(&rt, model.clone(), options)
        .expect("engine")
        .with_schedule(schedule)
        .expect("fits");
    let started = std::time::Instant::now();
    let mut seqs = Vec::new();
    let source = inputs(&model, u64::MAX)
        .take_while(move |_| started.elapsed() < std::time::Duration::from_secs(10));
    let report = engine.run(source, |seq, _| seqs.push(seq)).expect("run");
    rt.emulate(&"all=1".parse().expect("spec")).expect("reset");
    assert_eq!(
        seqs,
        (0..seqs.len() as u64).collect::<Vec<_>>(),
        "in order, none lost"
    );
    let summary: Vec<String> = report
        .events
        .iter()
        .map(|e| format!("{:.2} s {}", e.at_s, e.what))
        .collect();
    // After the step (whatever start-up noise did before it): a change seen, then a
    // re-tune.
    let after = |from: usize, pred: &dyn Fn(&What) -> bool| {
        (from..report.events.len()).find(|&i| pred(&report.events[i].what))
    };
    let slowed = after(
        0,
        &|w| matches!(w, What::Conditions { step } if step.contains("w1")),
    )
    .expect("the step");
    let seen = after(slowed, &|w| matches!(w, What::Change { .. }));
    let retuned = seen.and_then(|s| after(s, &|w| matches!(w, What::Retuned { .. })));
    assert!(retuned.is_some(), "{summary:#?}");
    assert_eq!(report.recoveries.len(), 2);
    assert_ne!(
        engine.configuration().stage_count(),
        1,
        "a gang waiting for a core at a fifth of the speed is not the fastest: {summary:#?}"
    );
}

#[test]
fn paced_frames_arrive_at_the_rate_and_latency_counts_from_arrival() {
    let (rt, model) = setup();
    let mut engine = Engine::new(&rt, model.clone(), TuneOptions::default()).expect("engine");
    assert!(
        engine.set_rate(Some(0.0)).is_err(),
        "a rate of 0 is refused"
    );
    let err = engine.set_rate(Some(f64::NAN)).expect_err("NaN");
    assert!(err.to_string().contains("NaN"), "{err}");
    // So low that frame 1's due time overflowed a Duration (a panic while serving).
    let err = engine.set_rate(Some(1e-300)).expect_err("too low");
    assert!(err.to_string().contains("1e-300"), "{err}");
    engine
        .set_rate(Some(MIN_RATE_FPS))
        .expect("the lowest rate");
    engine.set_rate(Some(100.0)).expect("a rate");
    let started = std::time::Instant::now();
    let mut seqs = Vec::new();
    let report = engine
        .run(inputs(&model, 20), |seq, _| seqs.push(seq))
        .expect("run");
    // The 20th frame is due 190 ms after the first: the run cannot end sooner.
    assert!(started.elapsed() >= std::time::Duration::from_millis(190));
    assert_eq!(seqs, (0..20).collect::<Vec<u64>>());
    assert_eq!(report.rate_fps, Some(100.0));
    assert!(report.run.latency_ms.p50 > 0.0);
    // Frames of a small net at 100/s never queue behind each other for long.
    assert!(report.run.latency_ms.p50 < 1000.0, "{:?}", report.run);
}
