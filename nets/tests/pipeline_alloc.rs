//! A warm pipeline allocates nothing per frame: 2 stages of AlexNet on workers 0 and 1 (and
//! of SqueezeNet 1.1, whose stages pass concats of fire modules), and
//! 12 stages of synth2 on 12 workers, more than the pool's default sets hold in flight
//! (`max_in_flight` 27 > `MAX_POOLED`) and more stages than a set's default graphs. Each
//! stage runs its units through a prepared graph of the frame's pooled buffers; the model's
//! pool is first filled to the pipeline's `max_in_flight` buffer sets with every stage's
//! graph prepared, and allocations are counted on every thread between the delivery of
//! frame 24 and frame 60. A stage of two workers allocates nothing from its first frames on:
//! the reservation allocated the gangs' workspace of every set (counted from the delivery of
//! frame 0, so frames 1 to 6 each take a set not used before).

#[path = "../../runtime/tests/counting/mod.rs"]
mod counting;

use std::ops::Range;
use std::sync::Arc;

use counting::Count;
use taopipe_dsl::net;
use taopipe_nets::{Frame, Model, RandomWeights, zoo};
use taopipe_runtime::{Pipeline, Place, Runtime, Stage, StopSignal, Topology};

const FRAMES: u64 = 64;
const FROM: u64 = 24;
const TO: u64 = 60;

/// One test, the two pipelines in turn: the allocator counts every thread of the process,
/// so a second test running beside would count its allocations here.
#[test]
fn a_warm_pipeline_allocates_nothing_per_frame() {
    two_stages("alexnet");
    two_stages("squeezenet1_1");
    twelve_stages();
    one_gang();
}

fn two_stages(net: &str) {
    let model = model(net);
    let units = model.spec().units().len();
    let cut = units / 2;
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    assert_no_allocations(
        &rt,
        &model,
        vec![(0..cut, Place::new(0, 1)), (cut..units, Place::new(1, 1))],
        FROM,
    );
}

fn twelve_stages() {
    let model = model("synth2");
    let units = model.spec().units().len();
    let workers = 12;
    assert!(units > workers, "synth2 has a unit for every stage");
    let rt = Runtime::builder()
        .topology(Topology::symmetric(workers).expect("topology"))
        .pin(false)
        .build()
        .expect("runtime");
    // One unit per stage, the last stage taking the rest.
    let stages = (0..workers)
        .map(|s| {
            let end = if s + 1 == workers { units } else { s + 1 };
            (s..end, Place::new(s, 1))
        })
        .collect();
    assert_no_allocations(&rt, &model, stages, FROM);
}

/// One stage on two workers, over a Winograd layer that a gang shares out with both pairs
/// of the workspace (as in `frame.rs`'s test of the workspace).
fn one_gang() {
    let spec = net! { one [384, 12, 12] =>
        conv: conv(384, 3x3, pad 1) relu,
    };
    let model = Arc::new(
        Model::build(spec.expect("a valid net"), &RandomWeights { seed: 5 }).expect("model"),
    );
    assert!(model.workspace_floats() > 0, "the plan has a workspace");
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let units = model.spec().units().len();
    assert_no_allocations(&rt, &model, vec![(0..units, Place::new(0, 2))], 0);
}

fn model(name: &str) -> Arc<Model> {
    let spec = zoo::by_name(name).expect("zoo net").expect("builds");
    Arc::new(Model::build(spec, &RandomWeights { seed: 5 }).expect("model"))
}

/// Streams `FRAMES` frames through `stages` and asserts that none allocated between the
/// deliveries of frame `from` and frame `TO`.
fn assert_no_allocations(
    rt: &Runtime,
    model: &Arc<Model>,
    stages: Vec<(Range<usize>, Place)>,
    from: u64,
) {
    let pipeline = Pipeline::new(
        stages
            .iter()
            .enumerate()
            .map(|(i, (units, place))| {
                let (m, units, place) = (model.clone(), units.clone(), *place);
                Stage::runner(
                    format!("stage{i}"),
                    place,
                    move |rt: &Runtime, f: &Frame| m.run_stage(rt, f, units.clone(), place),
                )
            })
            .collect(),
    )
    .expect("pipeline");
    model
        .reserve_frames(rt, pipeline.max_in_flight(), &stages)
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
            rt,
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
    let window = &counts[from as usize..=TO as usize];
    let allocating: Vec<(u64, Count)> = window
        .windows(2)
        .map(|w| (w[1].0, w[1].1.after(w[0].1)))
        .filter(|(_, c)| c.allocations > 0)
        .collect();
    assert!(
        allocating.is_empty(),
        "{} stages: frames after {from} that allocated: {allocating:?}",
        stages.len()
    );
}
