//! Frames in and out: a deterministic frame source, streaming frames through a
//! configuration's pipeline, and the layer-parallel baseline to compare it with; the places
//! a runtime's layout allows, and the widest of them, where a whole net runs at once.

use std::sync::Arc;

use taopipe_nets::{Frame, Model};
use taopipe_runtime::{Pipeline, PipelineStats, Place, Runtime, StopSignal};
use taopipe_tuner::{AllowedPlaces, Configuration};

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
/// A place outside `rt` or that its layout does not allow (checked before any frame, naming
/// the widths allowed), or the first failing stage.
pub fn stream(
    rt: &Runtime,
    model: &Arc<Model>,
    config: &Configuration,
    source: impl Iterator<Item = Frame> + Send,
    sink: impl FnMut(u64, Arc<Frame>),
) -> Result<PipelineStats, LiveError> {
    allowed_places(rt).check(config)?;
    let pipeline = Pipeline::new(LiveMeasure::stages(model, config))?;
    LiveMeasure::reserve(rt, model, config, &pipeline)?;
    let mut source = source.map(Arc::new);
    Ok(pipeline.run(rt, &mut source, sink, &StopSignal::new())?)
}

/// The places `rt`'s layout allows, for the tuner: every contiguous run of its workers
/// without a layout file, else the widths the file lists per leader.
///
/// ```
/// use std::path::Path;
/// use taopipe_runtime::{Runtime, Topology};
///
/// let layout = Topology::from_layout("0 1\n1\n1\n", "width-1", Path::new("/nonexistent"), &[0, 1])?;
/// let rt = Runtime::builder().topology(layout).pin(false).build()?;
/// assert!(taopipe_live::allowed_places(&rt).allows(1, 1));
/// assert!(!taopipe_live::allowed_places(&rt).allows(0, 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn allowed_places(rt: &Runtime) -> AllowedPlaces {
    let topology = rt.topology();
    let widths = (0..rt.num_workers())
        .map(|leader| topology.allowed_widths(leader).to_vec())
        .collect();
    AllowedPlaces::new(widths).expect("a topology's widths fit its workers")
}

/// Where a whole net runs on one place — every layer of the layer-parallel baseline, the
/// one-stage configuration, a single frame: all workers without a layout file; under one,
/// the widest place it allows, the lowest leader on ties
/// ([`AllowedPlaces::contiguous`]`(1)`). A layout allowing width 1 only runs it on `0+1`:
/// a layer is one moldable task on one place, so the other workers cannot join it (a
/// pipeline of stages on `0+1`, `1+1`, … is what uses them).
///
/// ```
/// use std::path::Path;
/// use taopipe_runtime::{Place, Runtime, Topology};
///
/// let rt = Runtime::builder().topology(Topology::symmetric(2)?).pin(false).build()?;
/// assert_eq!(taopipe_live::widest_place(&rt), Place::new(0, 2));
/// let layout = Topology::from_layout("0 1\n1\n1\n", "width-1", Path::new("/nonexistent"), &[0, 1])?;
/// let rt = Runtime::builder().topology(layout).pin(false).build()?;
/// assert_eq!(taopipe_live::widest_place(&rt), Place::new(0, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn widest_place(rt: &Runtime) -> Place {
    // Every leader has an allowed width that fits, so the run of all workers holds a place.
    let (leader, width) = allowed_places(rt)
        .widest_in(0..rt.num_workers())
        .expect("every worker may lead a place");
    Place::new(leader, width)
}

/// The layer-parallel baseline (how ONNX Runtime and ARM-CL run a net): one frame at a
/// time, every layer on the [`widest_place`] (all workers unless a layout forbids it);
/// `sink(seq, frame)` after each frame.
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
        place: widest_place(rt),
        speed: 1.0,
    };
    Ok(Switch::new(model.clone(), vec![everyone])?.run(rt, source, sink)?)
}
