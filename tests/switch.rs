//! ARM-CO-UP's two modes on real (small) nets: switch mode against a one-place forward pass,
//! per-run and per-stage speed factors, and pipelines whose residual edge spans two stage
//! boundaries (ARM-CO-UP's receiver buffers, realised by per-frame tensors).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use taopipe::dsl::{NetSpec, Source, net};
use taopipe::live::LiveMeasure;
use taopipe::live::devices::devices;
use taopipe::live::planners::armcoup::Mapping;
use taopipe::live::planners::armcoup::{ScaledSpeeds, Switch, SwitchError, SwitchRun};
use taopipe::nets::{Frame, Model, RandomWeights};
use taopipe::runtime::{EmulationSpec, Pipeline, Place, Runtime, Stage, StopSignal, Task};
use taopipe::tuner::Configuration;

/// A small residual net: the shortcut from `stem` (unit 0) is read by `b_add` in unit 3.
fn skip_net() -> NetSpec {
    net! { skip3 [4, 12, 12] =>
        stem:    conv(8, 3x3, pad 1) relu,   // unit 0
        b_conv1: conv(4, 1x1) relu,          // unit 1
        b_conv2: conv(4, 3x3, pad 1) relu,   // unit 2
        b_conv3: conv(8, 1x1),               // unit 3
        b_bn3:   batchnorm,
        b_add:   add(stem) relu,
        pool:    maxpool(2x2, stride 2),     // unit 4
        fc:      fc(10),                     // unit 5
    }
    .expect("valid net")
}

fn model() -> Arc<Model> {
    Arc::new(Model::build(skip_net(), &RandomWeights { seed: 7 }).expect("model"))
}

/// A different deterministic input for every frame.
fn input(len: usize, frame: u64) -> Vec<f32> {
    (0..len)
        .map(|i| ((i as u64 * 31 + frame * 17) % 23) as f32 / 11.0 - 1.0)
        .collect()
}

fn reference(rt: &Runtime, model: &Model, frame: u64) -> Vec<f32> {
    model
        .forward(rt, input(model.input_len(), frame), Place::new(0, 1))
        .expect("forward")
}

#[test]
fn the_test_net_has_a_skip_across_two_boundaries() {
    let spec = skip_net();
    assert_eq!(spec.units().len(), 6);
    // stages [0..2, 2..3, 3..6]: the stem's output must cross both boundaries
    assert!(spec.live_across(2).contains(&Source::Layer(0)));
    assert!(spec.live_across(3).contains(&Source::Layer(0)));
}

#[test]
fn switch_mode_is_bit_identical_to_one_place_and_in_order() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    rt.emulate(&"w1=powersave".parse::<EmulationSpec>().expect("spec"))
        .expect("emulate");
    let model = model();
    let devs = devices(&rt);
    assert_eq!(devs.len(), 2);
    // device 0 holds two runs: fine in switch mode
    let mapping = Mapping::parse("BLLBLB", 6, devs.len()).expect("mapping");
    let speeds = [1.0, 0.5, 0.75, 1.0, 0.25];
    let switch = Switch::from_mapping(model.clone(), &mapping, &devs, &speeds).expect("plan");
    let frames = 6u64;
    let mut got = Vec::new();
    let stats = switch
        .run(
            &rt,
            (0..frames).map(|i| model.frame(input(model.input_len(), i)).expect("frame")),
            |seq, f| got.push((seq, f.output())),
        )
        .expect("switch");
    assert_eq!(rt.speeds(), vec![1.0, 0.5], "speeds restored");
    assert_eq!(got.len() as u64, frames);
    for (i, (seq, out)) in got.iter().enumerate() {
        assert_eq!(*seq, i as u64);
        assert_eq!(out, &reference(&rt, &model, i as u64), "frame {i}");
    }
    assert_eq!(stats.frames, frames);
    assert_eq!(stats.latency.len(), frames);
    assert_eq!(stats.runs.len(), 5);
    let units: Vec<_> = stats.runs.iter().map(|r| r.units.clone()).collect();
    assert_eq!(units, vec![0..1, 1..3, 3..4, 4..5, 5..6]);
    assert!(stats.runs.iter().all(|r| r.frames == frames));
    // one frame at a time: each latency holds all of its runs
    let busy_ms: f64 = stats.runs.iter().map(|r| r.busy.as_secs_f64() * 1e3).sum();
    // (the histogram keeps 3 significant digits and whole µs: 0.1% of slack)
    let latency_ms = stats.latency.mean_ms() * frames as f64;
    assert!(latency_ms >= busy_ms * 0.999, "{latency_ms} < {busy_ms}");
    assert!(stats.latency_ms(0.5) <= stats.latency_ms(0.99));
    assert!(stats.throughput_fps() > 0.0);
}

#[test]
fn a_run_speed_factor_slows_that_run_and_only_while_it_runs() {
    // enough work per run (~40 M multiply-adds) that the emulated stall dominates overheads
    let spec = net! { heavy [16, 32, 32] =>
        c1: conv(64, 3x3, pad 1) relu,
        c2: conv(64, 3x3, pad 1) relu,
        fc: fc(10),
    }
    .expect("valid net");
    let model = Arc::new(Model::build(spec, &RandomWeights { seed: 3 }).expect("model"));
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let plan = |slow: f64| {
        Switch::new(
            model.clone(),
            vec![
                SwitchRun {
                    units: 0..1,
                    place: Place::new(0, 1),
                    speed: 1.0,
                },
                SwitchRun {
                    units: 1..3,
                    place: Place::new(1, 1),
                    speed: slow,
                },
            ],
        )
        .expect("plan")
    };
    let frames = || (0..3).map(|i| model.frame(input(model.input_len(), i)).expect("frame"));
    // Noise from other processes only adds time, so the fastest of five full-speed runs is
    // the reference (one noisy run made a loaded CI machine's mean 5× the quiet one).
    let f = (0..5)
        .map(|_| plan(1.0).run(&rt, frames(), |_, _| {}).expect("fast").runs[1].mean_ms())
        .fold(f64::INFINITY, f64::min);
    let slow = plan(0.1).run(&rt, frames(), |_, _| {}).expect("slow");
    // emulation keeps a worker busy d·(1/s − 1) after d of work: ~10× at s = 0.1
    let s = slow.runs[1].mean_ms();
    assert!(s > 3.0 * f, "run 1 at 0.1: {s} ms, at 1.0: {f} ms");
    assert_eq!(rt.speeds(), vec![1.0, 1.0]);
}

#[test]
fn scaled_speeds_multiply_the_emulated_speed_and_restore_it() {
    let rt = Runtime::builder().workers(3).build().expect("runtime");
    rt.emulate(&"w1=powersave".parse::<EmulationSpec>().expect("spec"))
        .expect("emulate");
    {
        let mut s = ScaledSpeeds::apply(&rt, &[(Place::new(1, 2), 0.5)]).expect("scale");
        assert_eq!(rt.speeds(), vec![1.0, 0.25, 0.5]);
        s.rescale(&[(Place::new(0, 1), 0.3)]).expect("rescale");
        assert_eq!(rt.speeds(), vec![0.3, 0.5, 1.0]);
        assert_eq!(s.base(), &[1.0, 0.5, 1.0]);
    }
    assert_eq!(rt.speeds(), vec![1.0, 0.5, 1.0]);
    for bad in [0.0, 1.5, f64::NAN, -1.0] {
        let e = ScaledSpeeds::apply(&rt, &[(Place::new(0, 1), 1.0), (Place::new(2, 1), bad)])
            .expect_err("bad factor");
        assert!(matches!(e, SwitchError::BadSpeed { run: 1, .. }), "{e:?}");
    }
    let e = ScaledSpeeds::apply(&rt, &[(Place::new(2, 2), 0.5)]).expect_err("outside");
    assert!(e.to_string().contains("place 2+2"), "{e}");
    assert_eq!(rt.speeds(), vec![1.0, 0.5, 1.0], "errors change nothing");
}

#[test]
fn plans_that_do_not_fit_are_refused_with_the_bad_value() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let model = model();
    let run = |units: std::ops::Range<usize>, speed: f64| SwitchRun {
        units,
        place: Place::new(0, 1),
        speed,
    };
    let e = Switch::new(model.clone(), vec![]).expect_err("no runs");
    assert!(matches!(e, SwitchError::NoRuns));
    let e = Switch::new(model.clone(), vec![run(0..2, 1.0), run(3..6, 1.0)]).expect_err("gap");
    assert_eq!(
        e.to_string(),
        "run 1 starts at unit 3, but the run before it ends at unit 2"
    );
    let e = Switch::new(model.clone(), vec![run(0..4, 1.0)]).expect_err("short");
    assert_eq!(
        e.to_string(),
        "the runs cover units 0..4, but the net has 6 units"
    );
    let e = Switch::new(model.clone(), vec![run(0..6, 1.2)]).expect_err("speed");
    assert!(matches!(e, SwitchError::BadSpeed { run: 0, speed } if speed == 1.2));
    let devs = devices(&rt);
    let m = Mapping::parse("BBBBB", 5, 1).expect("mapping");
    let e = Switch::from_mapping(model.clone(), &m, &devs, &[]).expect_err("length");
    assert!(
        e.to_string()
            .contains("5 characters, but the net has 6 units"),
        "{e}"
    );
    let m = Mapping::parse("BBBBBB", 6, 1).expect("mapping");
    let e = Switch::from_mapping(model.clone(), &m, &devs, &[1.0, 0.5]).expect_err("count");
    assert_eq!(
        e.to_string(),
        "2 speed factor(s) for 1 run(s): give one per run"
    );
    let wide = Switch::new(
        model.clone(),
        vec![SwitchRun {
            units: 0..6,
            place: Place::new(1, 2),
            speed: 1.0,
        }],
    )
    .expect("plan");
    let mut sunk = 0;
    let e = wide
        .run(
            &rt,
            [model.frame(input(model.input_len(), 0)).expect("frame")],
            |_, _| sunk += 1,
        )
        .expect_err("place");
    assert!(
        matches!(e, SwitchError::PlaceNotAllowed { run: 0, .. }),
        "{e:?}"
    );
    assert_eq!(sunk, 0, "refused before any frame ran");
}

#[test]
fn a_pipelined_skip_across_two_boundaries_is_bit_identical_and_in_order() {
    let rt = Runtime::builder().workers(3).build().expect("runtime");
    let model = model();
    let config = Mapping::parse("001222", 6, 3)
        .expect("mapping")
        .pipeline(&[(0, 1), (1, 1), (2, 1)], 3)
        .expect("pipeline");
    assert_eq!(config.composition(), vec![2, 1, 3]);
    // per-stage speeds: the skip's consumer is the slow stage, so frames pile up before it
    let _dvfs = ScaledSpeeds::apply(&rt, &[(Place::new(2, 1), 0.25)]).expect("scale");
    let pipeline = Pipeline::new(LiveMeasure::stages(&model, &config))
        .expect("pipeline")
        .with_queue(3)
        .expect("queue");
    let frames = 24u64;
    let m = model.clone();
    let mut source =
        (0..frames).map(move |i| Arc::new(m.frame(input(m.input_len(), i)).expect("frame")));
    let mut got = Vec::new();
    let stats = pipeline
        .run(
            &rt,
            &mut source,
            |seq, f| got.push((seq, f.output())),
            &StopSignal::new(),
        )
        .expect("run");
    assert_eq!(stats.delivered, frames);
    for (i, (seq, out)) in got.iter().enumerate() {
        assert_eq!(*seq, i as u64, "in order");
        assert_eq!(out, &reference(&rt, &model, i as u64), "frame {i}");
    }
}

#[test]
fn a_skip_edge_does_not_hold_back_its_producer() {
    let rt = Runtime::builder().workers(3).build().expect("runtime");
    let model = model();
    let config =
        Configuration::with_places(&[2, 1, 3], &[(0, 1), (1, 1), (2, 1)], 6, 3).expect("config");
    // Each stage notes when it starts a frame; the last stage (the skip's consumer) is slow.
    let log: Arc<Mutex<Vec<(usize, u64)>>> = Arc::default();
    let stages: Vec<Stage<(u64, Arc<Frame>)>> = config
        .unit_ranges()
        .into_iter()
        .zip(config.places())
        .enumerate()
        .map(|(s, (units, (leader, width)))| {
            let (m, log, place) = (model.clone(), log.clone(), Place::new(leader, width));
            Stage::new(
                format!("stage{s}"),
                place,
                move |(i, f): &(u64, Arc<Frame>)| {
                    log.lock().expect("log").push((s, *i));
                    let mut g = m.stage_graph(f, units.clone(), place);
                    if s == 2 {
                        g.add(
                            Task::new("slow", |_| std::thread::sleep(Duration::from_millis(4)))
                                .on(place),
                        );
                    }
                    g
                },
            )
        })
        .collect();
    let pipeline = Pipeline::new(stages)
        .expect("pipeline")
        .with_queue(2)
        .expect("queue");
    let frames = 16u64;
    let m = model.clone();
    let mut source = (0..frames).map(move |i| {
        (
            i,
            Arc::new(m.frame(input(m.input_len(), i)).expect("frame")),
        )
    });
    let mut got = Vec::new();
    pipeline
        .run(
            &rt,
            &mut source,
            |_, (i, f)| got.push((i, f.output())),
            &StopSignal::new(),
        )
        .expect("run");
    for (k, (i, out)) in got.iter().enumerate() {
        assert_eq!(*i, k as u64);
        assert_eq!(out, &reference(&rt, &model, *i), "frame {i}");
    }
    let log = log.lock().expect("log");
    let at = |stage: usize, frame: u64| {
        log.iter()
            .position(|&e| e == (stage, frame))
            .expect("every stage saw every frame")
    };
    // Stage 1 starting frame i+2 means stage 0 finished it, skip tensor included, while the
    // consumer had not yet taken frame i: without a buffer the sender would wait for it.
    let ahead = (0..frames - 2).filter(|&i| at(1, i + 2) < at(2, i)).count();
    assert!(
        ahead > 0,
        "stage 0 never ran two frames ahead of the skip's consumer: {log:?}"
    );
}
