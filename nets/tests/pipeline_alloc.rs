//! A 2-stage pipeline of AlexNet (stages on workers 0 and 1, each running its units through
//! a prepared graph of the frame's pooled buffers) allocates nothing per frame once warm:
//! counted between the delivery of frame 24 and frame 60 (by then every buffer set the pipeline keeps in flight exists), on every thread.

#[path = "../../runtime/tests/counting/mod.rs"]
mod counting;

use std::sync::Arc;

use counting::Count;
use taopipe_nets::{Frame, Model, RandomWeights, zoo};
use taopipe_runtime::{Pipeline, Place, Runtime, Stage, StopSignal};

const FRAMES: u64 = 64;
const FROM: u64 = 24;
const TO: u64 = 60;

#[test]
fn a_warm_pipeline_allocates_nothing_per_frame() {
    let spec = zoo::by_name("alexnet").expect("zoo net").expect("builds");
    let model = Arc::new(Model::build(spec, &RandomWeights { seed: 5 }).expect("model"));
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let units = model.spec().units().len();
    let cut = units / 2;
    let stage = |name: &str, units: std::ops::Range<usize>, place: Place| {
        let m = model.clone();
        Stage::runner(name, place, move |rt: &Runtime, f: &Frame| {
            m.run_stage(rt, f, units.clone(), place)
        })
    };
    let pipeline = Pipeline::new(vec![
        stage("front", 0..cut, Place::new(0, 1)),
        stage("back", cut..units, Place::new(1, 1)),
    ])
    .expect("pipeline");
    let input: Vec<f32> = (0..model.input_len())
        .map(|i| (i % 11) as f32 / 11.0)
        .collect();
    let m = model.clone();
    let mut frames = (0..FRAMES).map(move |_| m.frame_from(&input).expect("input length"));
    let mut out = vec![0.0; model.output_len()];
    let (mut start, mut counted) = (None, None);
    let stats = pipeline
        .run(
            &rt,
            &mut frames,
            |seq, frame| {
                frame.output_into(&mut out);
                drop(frame);
                if seq == FROM {
                    start = Some(Count::now());
                } else if seq == TO {
                    counted = start.map(Count::since);
                }
            },
            &StopSignal::new(),
        )
        .expect("pipeline runs");
    assert_eq!(stats.delivered, FRAMES);
    assert!(out.iter().any(|&v| v != 0.0));
    let counted = counted.expect("frames FROM and TO were delivered");
    assert_eq!(counted.allocations, 0, "frames {FROM}..{TO}: {counted:?}");
}
