//! A frame's buffers, and the pool that reuses them: after warm-up, a new frame takes the
//! buffers of a finished one instead of allocating (and page-faulting in) tens of
//! megabytes of activations. The buffers also keep the graphs prepared for them
//! ([`Model::run`](crate::Model::run), [`Model::run_stage`](crate::Model::run_stage)): a
//! graph's tasks hold the buffers they read and write, so a pooled set runs its graphs
//! again as they are, and a frame allocates nothing once its set and graphs exist.
//!
//! A [`Frame`] returns its buffers to its model's pool when dropped. The pool keeps at most
//! [`MAX_POOLED`] sets, or as many as the last pipeline that reserved frames
//! ([`Model::reserve_frames`](crate::Model::reserve_frames)) can hold in flight, if more: a
//! pipeline holds one frame per stage plus its queues, so a steady stream reuses the same
//! sets, a deep pipeline (2p + 3 frames in flight for p stages) does not allocate a set per
//! frame once it holds more than the default, and a burst does not pin memory forever. Each
//! set likewise keeps the prepared graphs of every stage of the last reserving pipeline.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use taopipe_dsl::Source;
use taopipe_runtime::{Place, PreparedGraph, Runtime, RuntimeError, SharedSlice, TaskGraph};

use crate::kernel::Workspace;
use crate::memory_plan::MemoryPlan;

/// Most buffer sets a pool keeps, unless a reservation asked for more (module docs).
pub const MAX_POOLED: usize = 16;

/// Most prepared graphs one buffer set keeps (one per stage a set has run, per place and
/// runtime; a pipeline reconfigured many times drops the oldest), unless a reservation's
/// pipeline has more stages (module docs).
pub const MAX_GRAPHS: usize = 8;

/// What a prepared graph computes: layers on a place.
type GraphKey = (Range<usize>, Place);

/// A tensor of a frame: the buffer holding it and its length (a buffer several layers
/// take in turn is as long as the longest of them; see [`crate::memory_plan`]).
#[derive(Clone, Debug)]
pub(crate) struct TensorBuf {
    pub(crate) buffer: Arc<SharedSlice<f32>>,
    pub(crate) len: usize,
}

impl TensorBuf {
    /// Runs `f` on the tensor (its first `len` floats of the buffer).
    fn with<R>(&self, f: impl FnOnce(&[f32]) -> R) -> R {
        f(&self.buffer.read().expect("the frame's graph has finished")[..self.len])
    }

    /// The tensor, copied out.
    fn to_vec(&self) -> Vec<f32> {
        self.with(<[f32]>::to_vec)
    }
}

/// The buffers of one frame: the input, each layer's tensor in the buffer the model's
/// memory plan gives it (aliases share their producer's), and the one [`Workspace`] the
/// layers share (allocated if a layer's gang shares its packed blocks).
#[derive(Debug)]
pub(crate) struct Buffers {
    pub(crate) input: TensorBuf,
    pub(crate) outputs: Vec<TensorBuf>,
    pub(crate) workspace: Arc<Workspace>,
    pub(crate) memory: Arc<MemoryPlan>,
    /// Graphs prepared for these buffers, oldest first.
    pub(crate) graphs: Mutex<Vec<(GraphKey, Arc<PreparedGraph>)>>,
}

/// Buffer sets of finished frames.
#[derive(Debug)]
pub(crate) struct FramePool {
    free: Mutex<Vec<Buffers>>,
    /// Most sets kept ([`MAX_POOLED`] or a reservation's frames).
    sets: AtomicUsize,
    /// Most prepared graphs per set ([`MAX_GRAPHS`] or a reservation's stages).
    graphs: AtomicUsize,
}

impl Default for FramePool {
    /// Room for [`MAX_POOLED`] sets from the start, so returning one never reallocates.
    fn default() -> FramePool {
        FramePool {
            free: Mutex::new(Vec::with_capacity(MAX_POOLED)),
            sets: AtomicUsize::new(MAX_POOLED),
            graphs: AtomicUsize::new(MAX_GRAPHS),
        }
    }
}

impl FramePool {
    /// Keeps up to `frames` sets (at least [`MAX_POOLED`]) with up to `stages` graphs each
    /// (at least [`MAX_GRAPHS`]), for a pipeline of `stages` stages holding up to `frames`
    /// frames in flight; drops the free sets beyond that at once.
    pub(crate) fn fit(&self, frames: usize, stages: usize) {
        let sets = frames.max(MAX_POOLED);
        self.sets.store(sets, Ordering::Relaxed);
        self.graphs.store(stages.max(MAX_GRAPHS), Ordering::Relaxed);
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.truncate(sets);
        let extra = sets.saturating_sub(free.capacity());
        free.reserve_exact(extra);
    }

    /// A free set, if any.
    pub(crate) fn take(&self) -> Option<Buffers> {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).pop()
    }

    /// Returns a set (dropped if the pool is full).
    fn put(&self, buffers: Buffers) {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if free.len() < self.sets.load(Ordering::Relaxed) {
            free.push(buffers);
        }
    }

    /// Sets held.
    pub(crate) fn len(&self) -> usize {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// One frame in flight: its input and every layer's output. Made by
/// [`Model::frame`](crate::Model::frame); run by a graph of the same model; its buffers go
/// back to the model's pool when it is dropped.
#[derive(Debug)]
pub struct Frame {
    buffers: Option<Buffers>,
    pool: Arc<FramePool>,
}

impl Frame {
    pub(crate) fn new(buffers: Buffers, pool: Arc<FramePool>) -> Frame {
        Frame {
            buffers: Some(buffers),
            pool,
        }
    }

    fn buffers(&self) -> &Buffers {
        self.buffers
            .as_ref()
            .expect("a frame holds its buffers until dropped")
    }

    /// The last layer's output, copied out.
    ///
    /// # Panics
    /// If a task of the frame is still writing it (call after the frame's graph ran).
    pub fn output(&self) -> Vec<f32> {
        self.net_output().to_vec()
    }

    /// The output of layer `index` (aliases give the tensor they share), once the frame
    /// has run; `None` for an index out of range or a layer whose buffer a later layer took
    /// over (build with [`BuildOptions::keep_outputs`](crate::BuildOptions) to keep them all).
    pub fn layer_output(&self, index: usize) -> Option<Vec<f32>> {
        let b = self.buffers();
        let tensor = b.outputs.get(index)?;
        b.memory.kept(index).then(|| tensor.to_vec())
    }

    /// The tensor `source` names.
    pub(crate) fn buffer(&self, source: Source) -> &TensorBuf {
        match source {
            Source::Layer(j) => self.output_buffer(j),
            Source::Input | Source::Previous => &self.buffers().input,
        }
    }

    /// Layer `index`'s output tensor.
    pub(crate) fn output_buffer(&self, index: usize) -> &TensorBuf {
        &self.buffers().outputs[index]
    }

    /// The net's output tensor (the input, for a net without layers).
    fn net_output(&self) -> &TensorBuf {
        let b = self.buffers();
        b.outputs.last().unwrap_or(&b.input)
    }

    /// The prepared graph of `layers` on `place` for these buffers on `rt`, prepared from
    /// `graph()` the first time.
    pub(crate) fn prepared(
        &self,
        rt: &Runtime,
        layers: Range<usize>,
        place: Place,
        graph: impl FnOnce() -> TaskGraph,
    ) -> Result<Arc<PreparedGraph>, RuntimeError> {
        let key = (layers, place);
        let mut graphs = self
            .buffers()
            .graphs
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some((_, g)) = graphs.iter().find(|(k, g)| *k == key && rt.prepared(g)) {
            return Ok(g.clone());
        }
        let prepared = Arc::new(rt.prepare(graph())?);
        if graphs.len() >= self.pool.graphs.load(Ordering::Relaxed) {
            graphs.remove(0);
        }
        graphs.push((key, prepared.clone()));
        Ok(prepared)
    }

    /// Copies the last layer's output into `out`, without allocating.
    ///
    /// # Panics
    /// If `out` is not the output's length, or a task of the frame is still writing it.
    pub fn output_into(&self, out: &mut [f32]) {
        self.net_output().with(|y| out.copy_from_slice(y));
    }

    /// The workspace the frame's layers share.
    pub(crate) fn workspace(&self) -> &Arc<Workspace> {
        &self.buffers().workspace
    }
}

impl Drop for Frame {
    fn drop(&mut self) {
        if let Some(buffers) = self.buffers.take() {
            self.pool.put(buffers);
        }
    }
}

#[cfg(test)]
mod test {
    use taopipe_dsl::net;
    use taopipe_runtime::{Place, Runtime};

    use crate::{Model, RandomWeights};

    /// The gangs' workspace is allocated by the first gang that runs a shared schedule:
    /// never by frames at width 1, then by the first frame at width 2 (a Winograd layer of
    /// one block, which shares out its two steps and needs both pairs: 9.4 MB of
    /// transformed weights, too many to cut it in two, `SPLIT_WEIGHT_BLOCKS`).
    #[test]
    fn the_workspace_is_allocated_by_the_first_gang_that_uses_it() {
        let spec = net! { one [384, 12, 12] =>
            conv: conv(384, 3x3, pad 1) relu,
        };
        let model =
            Model::build(spec.expect("a valid net"), &RandomWeights { seed: 5 }).expect("model");
        assert!(model.workspace_floats() > 0, "the plan has a workspace");
        let rt = Runtime::builder().workers(2).build().expect("runtime");
        let input = vec![0.5; model.input_len()];
        let allocated = |width: usize| {
            let frame = model.frame_from(&input).expect("input length");
            model.run(&rt, &frame, Place::new(0, width)).expect("runs");
            let workspace = &frame.buffers.as_ref().expect("buffers").workspace;
            (workspace.is_allocated(), workspace.products_allocated())
        };
        assert_eq!(allocated(1), (false, false), "width 1");
        assert_eq!(allocated(1), (false, false), "width 1 again");
        assert_eq!(allocated(2), (true, true), "width 2");
    }
}
