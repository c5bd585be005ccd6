//! The [`Kernel`] trait every layer implements, chunking helpers, and [`Scratch`].
//!
//! A layer's output is cut into a fixed list of *chunks* that depends on the layer's shape
//! only, never on how many workers run it. A chunk is a contiguous range of the flat CHW
//! output and is always computed by the same code with the same shapes, so every output
//! element comes from exactly the same float operations whatever the gang width. A gang
//! of `w` cuts the chunks into at most [`ITEMS_PER_RANK`]` · w` contiguous runs, and each
//! rank computes the runs it claims as it gets free ([`TaskCtx::share`]), writing the
//! contiguous range [`Kernel::output_range`] of each. [`Kernel::rank_chunks`]`(r, w)`
//! (= `split_range(chunks, r, w)`) is the even static share, for callers that split a
//! layer themselves.

use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;

use taopipe_runtime::{SharedSlice, TaskCtx, split_range};

use crate::tensor::Shape;

/// How many chunks a layer aims for: enough for a 16-worker gang with two chunks each, so
/// that a gang of 16 does not lose much to the chunk it cannot split.
pub const TARGET_CHUNKS: usize = 32;

/// Items of work per rank when a gang shares a layer ([`TaskCtx::share`]): enough that a
/// late or slow rank's share can move to the others, few enough that an item is still a
/// sizeable piece of work. Capped at [`MAX_ITEMS`] items a gang ([`gang_items`]).
pub const ITEMS_PER_RANK: usize = 4;

/// The most items a gang shares a layer in, unless it has more ranks (one item each then).
/// Every item claims its part of the output (and of the gang's packed buffer) under the
/// buffer's lock, and on 16 ranks those claims cost more than the balance they buy: on a
/// 16-core x86-64 Linux machine, capping 64 items at 16 took ResNet50 at width 16 from
/// 22.8–23.0 to 19.5–20.1 ms a frame, AlexNet from 5.8–6.1 to 5.3–5.4 and VGG16 from 30.7–30.8
/// to 28.2–30.0; at width 12 ResNet50 from 21.2–21.3 to 20.0–20.1 and AlexNet from 5.7–5.9
/// to 6.1, VGG16 level there and all three within noise at width 8 (`frame --width W`, two
/// interleaved runs each). Gangs of 4 or fewer (16 items or fewer) are unchanged, so a rank
/// that a hog slows still hands three quarters of its share to the others.
pub const MAX_ITEMS: usize = 16;

/// Items a gang of `width` ranks shares a layer in: [`ITEMS_PER_RANK`] per rank, at most
/// [`MAX_ITEMS`] unless that is fewer than the ranks.
pub fn gang_items(width: usize) -> usize {
    (ITEMS_PER_RANK * width).min(MAX_ITEMS.max(width))
}

/// Reusable per-worker scratch memory (packed activations, transform tiles).
///
/// Kernels grow it on demand and never shrink it; give each worker its own. What [`take`]
/// returns starts on a 64-byte boundary, so packed panels never split a cache line.
///
/// [`take`]: Scratch::take
#[derive(Debug, Default)]
pub struct Scratch {
    buf: Vec<f32>,
}

/// Floats of slack for aligning the start to 64 bytes.
const ALIGN_FLOATS: usize = 16;

impl Scratch {
    /// An empty scratch.
    pub fn new() -> Scratch {
        Scratch::default()
    }

    /// At least `len` floats starting on a 64-byte boundary (contents unspecified: callers
    /// overwrite what they read).
    pub fn take(&mut self, len: usize) -> &mut [f32] {
        if self.buf.len() < len + ALIGN_FLOATS {
            self.buf.resize(len + ALIGN_FLOATS, 0.0);
        }
        let off = self.buf.as_ptr().align_offset(64).min(ALIGN_FLOATS);
        let taken = &mut self.buf[off..off + len];
        // Unit tests hand out NaN: a kernel that read scratch it had not written (a pad it
        // skipped) would then fail them instead of reading stale zeros.
        if cfg!(test) {
            taken.fill(f32::NAN);
        }
        taken
    }

    /// Floats currently held.
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }
}

/// A CNN layer as a chunked, pure kernel. Object safe: a model holds `Vec<Box<dyn Kernel>>`.
///
/// ```
/// use taopipe_nets::{Activate, Kernel, Scratch, Shape};
/// let relu = Activate::relu(Shape::new(64, 8, 8));
/// let x: Vec<f32> = (0..relu.in_shape().len()).map(|i| i as f32 - 2000.0).collect();
/// let mut out = vec![0.0; relu.out_shape().len()];
/// let mut scratch = Scratch::new();
/// // Rank 1 of a gang of 3 computes its own run of chunks into its own part of `out`.
/// let chunks = relu.rank_chunks(1, 3);
/// let range = relu.output_range(chunks.clone());
/// relu.compute_chunks(&[&x], chunks, &mut out[range.clone()], &mut scratch);
/// assert_eq!(out[range.start], (x[range.start]).max(0.0));
/// ```
pub trait Kernel: Send + Sync + fmt::Debug {
    /// The layer kind ("conv", "maxpool", …).
    fn kind(&self) -> &'static str;

    /// The kind with what tells two layers of it apart in a profile (a conv's kernel,
    /// stride and algorithm); by default just the kind.
    fn describe(&self) -> String {
        self.kind().to_string()
    }

    /// How many input tensors [`Kernel::compute_chunk`] takes (2 for a residual add).
    fn arity(&self) -> usize {
        1
    }

    /// Whether the layer may be run without its last input, which it then finds in its
    /// own output: what the output holds when the layer starts, each element read before
    /// the layer overwrites it. A conv with a fused residual add says so where its
    /// algorithm allows; the memory plan then gives it its shortcut's buffer when it is the
    /// shortcut's last reader, so the add reads and writes the same cache lines.
    fn in_place_input(&self) -> bool {
        false
    }

    /// The input shape the layer was built for.
    fn in_shape(&self) -> Shape;

    /// The output shape.
    fn out_shape(&self) -> Shape;

    /// Floating-point operations of one forward pass (multiply-add = 2).
    fn flops(&self) -> u64;

    /// The layer's chunk plan, a function of its shape only.
    fn plan(&self) -> &ChunkPlan;

    /// Number of output chunks (≥ 1).
    fn chunks(&self) -> usize {
        self.plan().count()
    }

    /// The flat output elements chunk `chunk` covers. Chunks are in order, contiguous and
    /// cover the output exactly.
    fn chunk_range(&self, chunk: usize) -> Range<usize> {
        self.plan().range(chunk)
    }

    /// Computes chunk `chunk`: `inputs` are the whole input tensors (flat CHW, `arity()` of
    /// them), `out` is exactly `chunk_range(chunk)` of the output.
    ///
    /// # Panics
    /// If `inputs` or `out` have the wrong lengths (a caller bug, not user input).
    fn compute_chunk(
        &self,
        inputs: &[&[f32]],
        chunk: usize,
        out: &mut [f32],
        scratch: &mut Scratch,
    );

    /// Computes a contiguous run of chunks; `out` is exactly
    /// [`Kernel::output_range`]`(chunks)`. Layers may override this to share preparation
    /// (a padded input, an im2col tile) between the chunks of the run; the float
    /// operations of each chunk stay those of [`Kernel::compute_chunk`].
    fn compute_chunks(
        &self,
        inputs: &[&[f32]],
        chunks: Range<usize>,
        out: &mut [f32],
        scratch: &mut Scratch,
    ) {
        let base = self.output_range(chunks.clone()).start;
        for chunk in chunks {
            let r = self.chunk_range(chunk);
            self.compute_chunk(
                inputs,
                chunk,
                &mut out[r.start - base..r.end - base],
                scratch,
            );
        }
    }

    /// The chunks rank `rank` of a gang of `width` computes.
    fn rank_chunks(&self, rank: usize, width: usize) -> Range<usize> {
        split_range(self.chunks(), rank, width)
    }

    /// The output elements a run of chunks covers (empty run: an empty range).
    fn output_range(&self, chunks: Range<usize>) -> Range<usize> {
        if chunks.is_empty() {
            let at = if chunks.start >= self.chunks() {
                self.out_shape().len()
            } else {
                self.chunk_range(chunks.start).start
            };
            return at..at;
        }
        self.chunk_range(chunks.start).start..self.chunk_range(chunks.end - 1).end
    }

    /// The whole output, computed chunk by chunk on this thread.
    fn forward(&self, inputs: &[&[f32]], scratch: &mut Scratch) -> Vec<f32> {
        let mut out = vec![0.0; self.out_shape().len()];
        self.compute_chunks(inputs, 0..self.chunks(), &mut out, scratch);
        out
    }

    /// Rank `ctx.rank()`'s part of the whole layer, run by every rank of a gang of
    /// `ctx.width()` (the model's layer task): `inputs` are whole, `output` is the layer's
    /// buffer, which the ranks write in disjoint parts (it may be longer than the output:
    /// the layer writes its first `out_shape().len()` floats), and `workspace` a pair of
    /// buffers the gang may share. Every output element must come from the float operations of
    /// [`Kernel::compute_chunks`], whatever the width and whichever rank computes it.
    ///
    /// The default cuts the chunks into at most [`Kernel::gang_items`]`(width)` runs that
    /// the ranks claim as they get free, each computed into one claim of its range; a
    /// convolution overrides it to pack each input block once for the whole gang.
    ///
    /// # Panics
    /// If another task writes the same part of `output` (the graph did not order them).
    fn run_rank(
        &self,
        ctx: &TaskCtx<'_>,
        inputs: &[&[f32]],
        output: &SharedSlice<f32>,
        workspace: &Workspace,
        scratch: &mut Scratch,
    ) {
        let _ = workspace;
        let chunks = self.chunks();
        let items = chunks.min(self.gang_items(ctx.width()));
        ctx.share(
            1,
            |_| items,
            |_, item| {
                let run = split_range(chunks, item, items);
                let mut out = output
                    .write(self.output_range(run.clone()))
                    .expect("the items of a layer write disjoint chunks");
                self.compute_chunks(inputs, run, &mut out, scratch);
            },
        );
    }

    /// Items a gang of `width` ranks shares the layer in under [`Kernel::run_rank`] (it
    /// takes at most [`Kernel::chunks`]): [`gang_items`], unless the layer's chunks are
    /// big enough that more items cost nothing measurable and balance better.
    fn gang_items(&self, width: usize) -> usize {
        gang_items(width)
    }

    /// Floats of each buffer of the [`Workspace`] pairs [`Kernel::run_rank`] may ask for
    /// (none by default).
    fn workspace_len(&self) -> WorkspaceLen {
        WorkspaceLen::default()
    }
}

/// Floats of each buffer of a [`Workspace`]'s two pairs (0: that pair is not used).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkspaceLen {
    /// Each buffer of the packed pair ([`Workspace::buffers`]).
    pub packed: usize,
    /// Each buffer of the products pair ([`Workspace::products`]).
    pub products: usize,
}

impl WorkspaceLen {
    /// Each pair as long as the longer of the two asks: what layers sharing a workspace
    /// need.
    pub fn max(self, other: WorkspaceLen) -> WorkspaceLen {
        WorkspaceLen {
            packed: self.packed.max(other.packed),
            products: self.products.max(other.products),
        }
    }

    /// Whether neither pair is used.
    pub fn is_empty(self) -> bool {
        self == WorkspaceLen::default()
    }

    /// Floats of all four buffers.
    pub fn floats(self) -> usize {
        2 * (self.packed + self.products)
    }
}

/// Buffers the ranks of a gang share, allocated on first use and then reused: a *packed*
/// pair (a convolution packs an input block into one while the other is still being read)
/// and a *products* pair (Winograd's GEMM products, read by its output transform one phase
/// later). It lives with a frame's buffers, so a pooled frame allocates it once, and only
/// if a gang runs the shared schedule: a frame run at width 1 never does. A pipeline's
/// reservation allocates it up front where a stage is wider than one worker
/// ([`Workspace::allocate`]): allocated by the first gang, mid-layer, its fresh pages
/// (18.9 MB for VGG16) held both ranks up, and such a frame of VGG16 at width 2 took
/// 110–130 ms instead of 70.
#[derive(Debug, Default)]
pub struct Workspace {
    /// What the layers sharing it asked for at build: each pair is allocated this long.
    planned: WorkspaceLen,
    buffers: OnceLock<[SharedSlice<f32>; 2]>,
    products: OnceLock<[SharedSlice<f32>; 2]>,
}

impl Workspace {
    /// An empty workspace: each pair is allocated as long as its first caller asks.
    pub fn new() -> Workspace {
        Workspace::default()
    }

    /// A workspace whose pairs, once asked for, are `len` floats each (or longer, if
    /// asked): what the layers of a frame share, sized for the largest, so the first
    /// layer to use a pair allocates it for all. Nothing is allocated now.
    ///
    /// ```
    /// use taopipe_nets::{Workspace, WorkspaceLen};
    ///
    /// let ws = Workspace::with_len(WorkspaceLen { packed: 64, products: 0 });
    /// assert!(!ws.is_allocated());
    /// assert_eq!(ws.buffers(16)[0].len(), 64);
    /// assert!(ws.is_allocated() && !ws.products_allocated());
    /// ```
    pub fn with_len(len: WorkspaceLen) -> Workspace {
        Workspace {
            planned: len,
            ..Workspace::default()
        }
    }

    /// The packed pair, at least `len` floats each (allocated by the first caller; the
    /// others wait).
    ///
    /// # Panics
    /// If the pair was allocated with fewer floats (layers sharing a workspace must plan
    /// it for the largest: [`Workspace::with_len`]).
    pub fn buffers(&self, len: usize) -> &[SharedSlice<f32>; 2] {
        Workspace::pair(&self.buffers, len, self.planned.packed)
    }

    /// The products pair, of `len` floats each, as [`Workspace::buffers`].
    ///
    /// # Panics
    /// As [`Workspace::buffers`].
    pub fn products(&self, len: usize) -> &[SharedSlice<f32>; 2] {
        Workspace::pair(&self.products, len, self.planned.products)
    }

    /// The pair in `cell`, allocated `planned` floats long (or `len`, if longer) by the
    /// first caller.
    fn pair(
        cell: &OnceLock<[SharedSlice<f32>; 2]>,
        len: usize,
        planned: usize,
    ) -> &[SharedSlice<f32>; 2] {
        let pair = cell.get_or_init(|| {
            let n = len.max(planned);
            // NaN in unit tests, as in `Scratch::take`.
            let fresh = || {
                if cfg!(test) {
                    SharedSlice::new(vec![f32::NAN; n])
                } else {
                    SharedSlice::zeroed(n)
                }
            };
            [fresh(), fresh()]
        });
        assert!(
            pair[0].len() >= len,
            "workspace of {} floats, {len} asked",
            pair[0].len()
        );
        pair
    }

    /// Allocates both pairs now, at their planned lengths (those planned empty stay
    /// unallocated): what [`Model::reserve_frames`](crate::Model::reserve_frames) does for
    /// a pipeline with a stage wider than one worker, so that no frame allocates them
    /// mid-layer.
    ///
    /// ```
    /// use taopipe_nets::{Workspace, WorkspaceLen};
    ///
    /// let ws = Workspace::with_len(WorkspaceLen { packed: 64, products: 0 });
    /// ws.allocate();
    /// assert!(ws.is_allocated() && !ws.products_allocated());
    /// ```
    pub fn allocate(&self) {
        if self.planned.packed > 0 {
            self.buffers(self.planned.packed);
        }
        if self.planned.products > 0 {
            self.products(self.planned.products);
        }
    }

    /// Whether the packed pair was allocated.
    pub fn is_allocated(&self) -> bool {
        self.buffers.get().is_some()
    }

    /// Whether the products pair was allocated.
    pub fn products_allocated(&self) -> bool {
        self.products.get().is_some()
    }
}

/// How a layer's output is cut into chunks: groups of whole channels (or features), `per`
/// channels each (the last may have fewer), each channel `plane` elements. It depends only on
/// the layer's shape — never on the width that runs it — which is what keeps results
/// bit-identical for every width. Every kernel has one ([`Kernel::plan`]); a single-chunk
/// layer (softmax) is a plan of one channel of the whole output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkPlan {
    pub(crate) channels: usize,
    pub(crate) per: usize,
    pub(crate) plane: usize,
}

impl ChunkPlan {
    /// At most [`TARGET_CHUNKS`] chunks of at least `min_per` channels each (rounded up to
    /// a multiple of `multiple`).
    pub(crate) fn new(channels: usize, plane: usize, min_per: usize, multiple: usize) -> Self {
        ChunkPlan::targeting(channels, plane, min_per, multiple, TARGET_CHUNKS)
    }

    /// As [`ChunkPlan::new`], with at most `target` chunks.
    pub(crate) fn targeting(
        channels: usize,
        plane: usize,
        min_per: usize,
        multiple: usize,
        target: usize,
    ) -> Self {
        let channels = channels.max(1);
        let mut per = channels.div_ceil(target.max(1)).max(min_per.max(1));
        per = per.div_ceil(multiple.max(1)) * multiple.max(1);
        ChunkPlan {
            channels,
            per: per.min(channels),
            plane,
        }
    }

    /// Number of chunks.
    pub fn count(&self) -> usize {
        self.channels.div_ceil(self.per)
    }

    /// Channels of chunk `chunk`.
    pub(crate) fn channels_of(&self, chunk: usize) -> Range<usize> {
        assert!(
            chunk < self.count(),
            "chunk {chunk} out of {}",
            self.count()
        );
        let start = chunk * self.per;
        start..(start + self.per).min(self.channels)
    }

    /// The flat output elements of chunk `chunk`.
    pub fn range(&self, chunk: usize) -> Range<usize> {
        let c = self.channels_of(chunk);
        c.start * self.plane..c.end * self.plane
    }
}

/// Checks the inputs and output of a chunk call; panics with a clear message otherwise.
pub(crate) fn check_io(
    kind: &str,
    inputs: &[&[f32]],
    arity: usize,
    in_len: usize,
    out: usize,
    want: usize,
) {
    assert_eq!(inputs.len(), arity, "{kind}: expected {arity} inputs");
    for (i, x) in inputs.iter().enumerate() {
        assert_eq!(
            x.len(),
            in_len,
            "{kind}: input {i} has {} elements, expected {in_len}",
            x.len()
        );
    }
    assert_eq!(
        out, want,
        "{kind}: output slice has {out} elements, the chunk has {want}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gang_items_cap_at_sixteen_but_never_below_the_ranks() {
        let items: Vec<usize> = [1, 2, 4, 5, 8, 16, 32].map(gang_items).to_vec();
        assert_eq!(items, [4, 8, 16, 16, 16, 16, 32]);
    }
}
