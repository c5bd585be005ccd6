//! After warm-up, a frame of ResNet50 (convolutions on both schedules, Winograd and direct,
//! fused residual adds, pooling, the classifier), of MobileNetV2 (depthwise convolutions,
//! fused ReLU6) and of GoogLeNet (concats of four branches, ceil-mode pools) allocates
//! nothing, at width 1 and at width 2: buffers come from the model's pool, graphs are
//! prepared once per buffer set, a layer's inputs are held on the stack, and the runtime's
//! runs of prepared graphs are allocation-free.

#[path = "../../runtime/tests/counting/mod.rs"]
mod counting;

use counting::Count;
use taopipe_nets::{Model, RandomWeights, zoo};
use taopipe_runtime::{Place, Runtime};

/// One test, the nets in turn: the allocator counts every thread of the process.
#[test]
fn a_warm_frame_allocates_nothing() {
    for net in ["resnet50", "mobilenet_v2", "googlenet"] {
        warm_frames_allocate_nothing(net);
    }
}

fn warm_frames_allocate_nothing(net: &str) {
    let spec = zoo::by_name(net).expect("zoo net").expect("builds");
    let model = Model::build(spec, &RandomWeights { seed: 3 }).expect("model");
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let inputs: Vec<Vec<f32>> = (0..2)
        .map(|k| {
            (0..model.input_len())
                .map(|i| ((i * 7 + k) % 13) as f32 / 13.0)
                .collect()
        })
        .collect();
    let mut out = vec![0.0; model.output_len()];
    let mut run = |i: usize, width: usize| {
        let frame = model.frame_from(&inputs[i % 2]).expect("input length");
        model.run(&rt, &frame, Place::new(0, width)).expect("runs");
        frame.output_into(&mut out);
    };
    for i in 0..4 {
        run(i, 1 + i % 2);
    }
    let start = Count::now();
    for i in 0..6 {
        run(i, 1 + i % 2);
    }
    let counted = start.since();
    assert!(out.iter().all(|v| v.is_finite()) && out.iter().any(|&v| v != 0.0));
    assert_eq!(
        counted.allocations, 0,
        "{net}: 6 warm frames at widths 1 and 2: {counted:?}"
    );
}
