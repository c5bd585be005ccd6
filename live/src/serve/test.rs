//! A trial costs the frames it samples plus the pipeline's depth (plus a probe frame when
//! it races with several stages), or one probe frame when that shows it cannot win, and
//! serves them in order.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use taopipe_nets::{Frame, Model, RandomWeights, zoo};
use taopipe_runtime::{Runtime, StopSignal, Topology};
use taopipe_tuner::{Configuration, Measure, MeasureError, RACE_SAMPLES, Stability};

use super::{ServedMeasure, Server};

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

/// Frames delivered by one trial of `config` under `rule`, racing against `best_ms`.
fn trial_frames(
    rt: &Runtime,
    model: &Arc<Model>,
    config: &Configuration,
    rule: Stability,
    best_ms: Option<f64>,
) -> (u64, Vec<u64>) {
    let mut source = crate::frames(model, u64::MAX, 0);
    let mut seqs = Vec::new();
    let mut sink = |seq: u64, _: Arc<Frame>, _| seqs.push(seq);
    let mut server = Server::new(
        rt,
        model.clone(),
        &mut source,
        &mut sink,
        None,
        Arc::new(AtomicBool::new(false)),
        StopSignal::new(),
    );
    let mut measure = ServedMeasure::new(&mut server, rule);
    if let Some(best) = best_ms {
        measure.set_best(best);
    }
    let times = measure.stage_times(config).expect("trial");
    assert_eq!(times.stage_ms.len(), config.stage_count());
    let delivered = server.delivered();
    drop(server);
    (delivered, seqs)
}

#[test]
fn a_trial_costs_its_samples_plus_the_pipeline_depth() {
    let (rt, model) = setup();
    let units = model.spec().units().len();
    for composition in [vec![units], vec![units / 2, units - units / 2]] {
        let config = Configuration::contiguous(&composition, 2).expect("config");
        let depth = config.stage_count() as u64 - 1;
        for n in [1, 3, 5] {
            let (frames, seqs) = trial_frames(&rt, &model, &config, Stability::fixed(n), None);
            assert_eq!(frames, n as u64 + depth, "{config}, {n} samples");
            assert_eq!(seqs, (0..frames).collect::<Vec<_>>(), "served in order");
        }
        // A trial that cannot beat the best stops after RACE_SAMPLES samples, or, with
        // several stages, after its probe frame.
        let (frames, seqs) = trial_frames(&rt, &model, &config, Stability::fixed(7), Some(1e-6));
        let hopeless = if depth == 0 { RACE_SAMPLES as u64 } else { 1 };
        assert_eq!(frames, hopeless, "{config}, racing a best it cannot beat");
        assert_eq!(seqs, (0..frames).collect::<Vec<_>>(), "served in order");
        // A racing trial that may win: several stages pay one probe frame more.
        for n in [1, 3] {
            let (frames, _) = trial_frames(&rt, &model, &config, Stability::fixed(n), Some(1e9));
            let probe = u64::from(depth > 0);
            assert_eq!(
                frames,
                n as u64 + depth + probe,
                "{config}, {n} samples, racing"
            );
        }
    }
}

#[test]
fn a_trial_cut_by_the_stop_is_no_measurement_and_delivers_what_it_admitted() {
    let (rt, model) = setup();
    let units = model.spec().units().len();
    let config = Configuration::contiguous(&[units / 2, units - units / 2], 2).expect("config");
    let stop = StopSignal::new();
    let mut source = crate::frames(&model, u64::MAX, 0);
    let mut seqs = Vec::new();
    let raiser = stop.clone();
    // The stop is raised on the second frame out, as a signal handler would raise it:
    // the trial (up to 50 samples) cannot have settled by then.
    let mut sink = |seq: u64, _: Arc<Frame>, _| {
        seqs.push(seq);
        if seq == 1 {
            raiser.stop();
        }
    };
    let mut server = Server::new(
        &rt,
        model.clone(),
        &mut source,
        &mut sink,
        None,
        Arc::new(AtomicBool::new(false)),
        stop,
    );
    let mut measure = ServedMeasure::new(&mut server, Stability::fixed(50));
    let cut = measure.stage_times(&config);
    assert_eq!(cut, Err(MeasureError::Stopped));
    // Once stopped, a trial admits nothing at all.
    assert_eq!(measure.stage_times(&config), Err(MeasureError::Stopped));
    let delivered = server.delivered();
    assert!(server.stopped());
    drop(server);
    assert!(
        delivered >= 2,
        "the frames out before the stop: {delivered}"
    );
    assert!(
        delivered < 50,
        "the stop ended the trial: {delivered} frames"
    );
    assert_eq!(
        seqs,
        (0..delivered).collect::<Vec<_>>(),
        "every admitted frame delivered, in order"
    );
}
