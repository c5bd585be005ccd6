//! Frames in and out: a deterministic frame source, streaming frames through a
//! configuration's pipeline, and the layer-parallel baseline to compare it with.

use std::sync::Arc;

use taopipe_nets::{Frame, Model};
use taopipe_runtime::{Pipeline, PipelineStats, Place, Runtime, StopSignal};
use taopipe_tuner::Configuration;

use crate::LiveError;
use crate::measure::LiveMeasure;
use crate::planners::armcoup::{Switch, SwitchRun, SwitchStats};

/// A deterministic input in [-1, 1) made from `seed` (xorshift): the same frame on every
/// run and every machine, for benchmarks and tests without a camera.
///
/// ```
/// let a = taopipe_live::frame_input(4, 7);
/// assert_eq!(a, taopipe_live::frame_input(4, 7));
/// assert!(a.iter().all(|v| (-1.0..1.0).contains(v)));
/// ```
pub fn frame_input(len: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// `count` frames of `model`, frame `i` with input [`frame_input`]`(_, seed + i)`, each
/// made when it is taken.
pub fn frames(
    model: &Arc<Model>,
    count: u64,
    seed: u64,
) -> impl Iterator<Item = Frame> + Send + use<> {
    let model = model.clone();
    (0..count).map(move |i| {
        model
            .frame_from(&frame_input(model.input_len(), seed + i))
            .expect("frame_input has the model's input length")
    })
}

/// Streams `source` through the pipeline of `config` (its frame pool filled first, so no
/// frame allocates) and calls `sink(seq, frame)` for each frame, in order.
///
/// # Errors
/// A place outside `rt`, or the first failing stage.
pub fn stream(
    rt: &Runtime,
    model: &Arc<Model>,
    config: &Configuration,
    source: impl Iterator<Item = Frame> + Send,
    sink: impl FnMut(u64, Arc<Frame>),
) -> Result<PipelineStats, LiveError> {
    let pipeline = Pipeline::new(LiveMeasure::stages(model, config))?;
    LiveMeasure::reserve(rt, model, config, &pipeline)?;
    let mut source = source.map(Arc::new);
    Ok(pipeline.run(rt, &mut source, sink, &StopSignal::new())?)
}

/// The layer-parallel baseline (how ONNX Runtime and ARM-CL run a net): one frame at a
/// time, every layer on all workers; `sink(seq, frame)` after each frame.
///
/// # Errors
/// A failing layer.
pub fn layer_parallel(
    rt: &Runtime,
    model: &Arc<Model>,
    source: impl Iterator<Item = Frame>,
    sink: impl FnMut(u64, Frame),
) -> Result<SwitchStats, LiveError> {
    let everyone = SwitchRun {
        units: 0..model.spec().units().len(),
        place: Place::new(0, rt.num_workers()),
        speed: 1.0,
    };
    Ok(Switch::new(model.clone(), vec![everyone])?.run(rt, source, sink)?)
}
