//! A 2-stage pipeline of AlexNet (stages on workers 0 and 1, each running its units through
//! a prepared graph of the frame's pooled buffers) allocates nothing per frame once warm:
//! the model's pool is first filled to the pipeline's `max_in_flight` buffer sets with both
//! stages' graphs prepared, and allocations are counted on every thread between the
//! delivery of frame 24 and frame 60.

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
    model
        .reserve_frames(
            &rt,
            pipeline.max_in_flight(),
            &[(0..cut, Place::new(0, 1)), (cut..units, Place::new(1, 1))],
        )
        .expect("stages fit the runtime");
    let input: Vec<f32> = (0..model.input_len())
        .map(|i| (i % 11) as f32 / 11.0)
        .collect();
    let m = model.clone();
    let mut frames = (0..FRAMES).map(move |_| m.frame_from(&input).expect("input length"));
    let mut out = vec![0.0; model.output_len()];
    let mut counts = Vec::with_capacity(FRAMES as usize); // reserved: pushing never allocates
    let stats = pipeline
        .run(
            &rt,
            &mut frames,
            |seq, frame| {
                frame.output_into(&mut out);
                drop(frame);
                counts.push((seq, Count::now()));
            },
            &StopSignal::new(),
        )
        .expect("pipeline runs");
    assert_eq!(stats.delivered, FRAMES);
    assert!(out.iter().any(|&v| v != 0.0));
    let window = &counts[FROM as usize..=TO as usize];
    let allocating: Vec<(u64, Count)> = window
        .windows(2)
        .map(|w| (w[1].0, w[1].1.after(w[0].1)))
        .filter(|(_, c)| c.allocations > 0)
        .collect();
    assert!(
        allocating.is_empty(),
        "frames after {FROM} that allocated: {allocating:?}"
    );
}
