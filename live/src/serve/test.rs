//! A trial costs the frames it samples plus the pipeline's depth, no more, and serves
//! them in order.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use taopipe_nets::{Frame, Model, RandomWeights, zoo};
use taopipe_runtime::{Runtime, Topology};
use taopipe_tuner::{Configuration, Measure, RACE_SAMPLES, Stability};

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
        // A trial that cannot beat the best stops after RACE_SAMPLES samples.
        let (frames, _) = trial_frames(&rt, &model, &config, Stability::fixed(7), Some(1e-6));
        assert_eq!(frames, RACE_SAMPLES as u64 + depth, "{config}, racing");
    }
}
