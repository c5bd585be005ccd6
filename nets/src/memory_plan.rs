//! Which layers of a frame share an output buffer: a memory plan, as ONNX Runtime's arena
//! planner makes one.
//!
//! With a buffer of its own per layer, a ResNet50 frame held 49.7 MB of activations, so
//! every layer stored into memory cold in every cache and the next layer read it back from
//! far away. A layer's tensor is dead once its last reader has run, so a later layer may
//! take its buffer, which is then still warm: the plan holds ResNet50 in 10.1 MB on the
//! AVX2 path (14.1 before residuals were added in place, below) and VGG16 in 35.7 MB
//! instead of 70.4 (`frame` prints the figure). On a 16-core x86-64 Xeon (2 MB
//! of L2 per core) ResNet50 at width 1 took 74–85 ms a frame against 104–115 ms with a
//! buffer per layer, in interleaved runs of `frame` with and without `--keep-outputs`; on
//! the 2-core AMD machine the two were within its noise.
//!
//! # How the plan is made
//! In layer order, each layer that runs a task takes the free buffer that fits it best (the
//! smallest at least as long; else the longest, grown; else a new one). A buffer becomes
//! free after the last reader of its tensor; the net's output never does. Aliases (folded,
//! fused, flatten layers) share their producer's buffer and extend its life by their
//! readers.
//!
//! # Why reuse is safe in every schedule
//! A layer that takes a buffer must not start before the previous tenant and all of the
//! tenant's readers have finished. The plan lists those layers (`MemoryPlan::after`) and
//! every graph builder adds them as edges. The rule holds for a pipeline too: a stage is a
//! contiguous range of layers, so each of those layers is in the writer's own stage (an
//! edge) or in an earlier stage, which has finished with this frame before the stage runs.
//!
//! # Residuals in place
//! A conv with a fused residual add that is its shortcut's last reader takes the
//! shortcut's buffer and reads the residual from its own output
//! ([`Kernel::in_place_input`](crate::Kernel::in_place_input)), so the add reads and writes
//! the same cache lines instead of twice as many. It waits for the shortcut's other
//! readers, as any layer taking a buffer does.
//!
//! # Concats without a copy
//! A concat whose every input is a task's tensor that nothing else reads (SqueezeNet's
//! fire modules, GoogLeNet's inception modules) runs no task: its inputs' producers write
//! straight into their parts of the concat's buffer, at offsets along it (NCHW: the
//! channels of one input after another's), through windows of it
//! ([`SharedSlice::window`](taopipe_runtime::SharedSlice::window)). The buffer is taken
//! when its first part's producer runs, by the rule above, and every producer of a part
//! waits for the buffer's previous tenant and that tenant's readers; it is freed after the
//! concat's last reader, which waits for every part's producer (`Model`'s graphs expand a
//! joined concat into its producers). Such a producer never writes in place, and a concat
//! of another joined concat's tensor copies, as does every concat with `share` off.
//!
//! The layers' [`Workspace`](crate::Workspace)s work the same way: one per frame, as long
//! as the longest any layer asks for, and each layer that uses it runs after the previous
//! one that did.

use taopipe_dsl::Source;

use crate::kernel::WorkspaceLen;

/// One layer as the planner sees it.
#[derive(Clone, Debug)]
pub(crate) enum PlanStep<'a> {
    /// A task writing `len` floats, reading `reads` (resolved: no aliases among them),
    /// asking for a workspace of `workspace` floats (empty: none); with `in_place`, able to
    /// write over its last read ([`crate::Kernel::in_place_input`]).
    Task {
        len: usize,
        reads: &'a [Source],
        workspace: WorkspaceLen,
        in_place: bool,
    },
    /// No task: the layer's tensor is this (resolved) source's.
    Alias(Source),
    /// A concat of `len` floats of these (resolved) sources, in order: joined (no task, its
    /// parts written in place) where the plan can, else a task like any other.
    Concat { len: usize, reads: &'a [Source] },
}

impl PlanStep<'_> {
    /// Floats of a task's or a concat's tensor (none for an alias).
    fn len(&self) -> usize {
        match self {
            PlanStep::Task { len, .. } | PlanStep::Concat { len, .. } => *len,
            PlanStep::Alias(_) => 0,
        }
    }

    /// What a task step reads (nothing for an alias).
    fn reads(&self) -> &[Source] {
        match self {
            PlanStep::Task { reads, .. } | PlanStep::Concat { reads, .. } => reads,
            PlanStep::Alias(_) => &[],
        }
    }
}

/// Where every layer's tensor lives in a frame's buffers, and what each layer must wait for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MemoryPlan {
    /// Per layer: the buffer holding its tensor (`None`: the frame's input buffer).
    buffer: Vec<Option<usize>>,
    /// Per layer: its tensor's length in floats.
    len: Vec<usize>,
    /// Per layer: where its tensor starts in its buffer (a part of a joined concat).
    offset: Vec<usize>,
    /// Per layer: for a joined concat, the producers of its parts, in order (else empty).
    parts: Vec<Vec<usize>>,
    /// Per layer: the joined concat its tensor is a part of.
    part_of: Vec<Option<usize>>,
    /// Floats of each buffer.
    sizes: Vec<usize>,
    /// Per layer: layers that must have finished before it starts.
    after: Vec<Vec<usize>>,
    /// Per layer: whether its tensor is still in its buffer when the frame has run.
    kept: Vec<bool>,
    /// Per layer: whether it writes over its last read's tensor, in that tensor's buffer.
    in_place: Vec<bool>,
    /// Floats of each of the workspace's buffers (empty: no layer uses one).
    workspace_len: WorkspaceLen,
}

impl MemoryPlan {
    /// The plan for `steps`, whose input is `input_len` floats long. With `share` false,
    /// every task keeps a buffer of its own (for inspecting every layer's output).
    pub(crate) fn new(steps: &[PlanStep<'_>], input_len: usize, share: bool) -> MemoryPlan {
        let n = steps.len();
        // Who produced each layer's tensor (itself, or what its alias resolves to).
        let producer: Vec<Option<usize>> = steps
            .iter()
            .enumerate()
            .map(|(i, s)| match s {
                PlanStep::Task { .. } | PlanStep::Concat { .. } => Some(i),
                PlanStep::Alias(Source::Layer(j)) => Some(*j),
                PlanStep::Alias(_) => None,
            })
            .collect();
        let mut readers: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, s) in steps.iter().enumerate() {
            for source in s.reads() {
                if let Source::Layer(j) = source {
                    let p = producer[*j].expect("a layer source resolves to a task");
                    if readers[p].last() != Some(&i) {
                        readers[p].push(i);
                    }
                }
            }
        }
        let output = n.checked_sub(1).and_then(|last| producer[last]);
        let (parts, part_of) = if share {
            joins(steps, &readers, output)
        } else {
            (vec![Vec::new(); n], vec![None; n])
        };
        let mut plan = MemoryPlan {
            buffer: vec![None; n],
            len: vec![input_len; n],
            offset: vec![0; n],
            parts,
            part_of: part_of.iter().map(|p| p.map(|(c, _)| c)).collect(),
            sizes: Vec::new(),
            after: vec![Vec::new(); n],
            kept: vec![true; n],
            in_place: vec![false; n],
            workspace_len: WorkspaceLen::default(),
        };
        // The task living in each buffer now, and the buffers free after each layer.
        let mut tenant: Vec<usize> = Vec::new();
        let mut free: Vec<usize> = Vec::new();
        let mut frees_after: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut workspace_user = None;
        // Per buffer owner (a task, or a joined concat for all its parts' producers): what a
        // layer writing the owner's tensor waits for, the buffer's previous tenant and that
        // tenant's readers.
        let mut owner_waits: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, step) in steps.iter().enumerate() {
            let (len, reads, workspace, in_place) = match *step {
                PlanStep::Alias(_) => {
                    if let Some(p) = producer[i] {
                        plan.buffer[i] = plan.buffer[p];
                        plan.len[i] = plan.len[p];
                        plan.offset[i] = plan.offset[p];
                        plan.part_of[i] = plan.part_of[p];
                    }
                    free.append(&mut frees_after[i]);
                    continue;
                }
                PlanStep::Concat { len, reads } => (len, reads, WorkspaceLen::default(), false),
                PlanStep::Task {
                    len,
                    reads,
                    workspace,
                    in_place,
                } => (len, reads, workspace, in_place),
            };
            if !plan.parts[i].is_empty() {
                // Joined: its first part's producer took its buffer.
                let b = plan.buffer[i].expect("a joined concat's first part took its buffer");
                plan.len[i] = len;
                if Some(i) != output {
                    let last = readers[i].last().copied().unwrap_or(i);
                    frees_after[last].push(b);
                }
                free.append(&mut frees_after[i]);
                continue;
            }
            let part = part_of[i];
            let over = (share && in_place && part.is_none())
                .then(|| overwritable(reads, &producer, &readers, i, output))
                .flatten()
                .filter(|&p| plan.len[p] == len);
            // The layer whose buffer this is (a joined concat for its parts' producers),
            // and the floats it needs.
            let (owner, need) = match part {
                Some((c, _)) => (c, steps[c].len()),
                None => (i, len),
            };
            let b = match plan.buffer[owner].filter(|_| owner != i) {
                // A later part of a concat whose buffer an earlier part took.
                Some(b) => b,
                None => {
                    let taken = match over {
                        // The last read's buffer, which it would have freed after this
                        // layer (its tenant is still that tensor).
                        Some(p) => {
                            let b = plan.buffer[p].expect("a task's tensor has a buffer");
                            frees_after[i].retain(|&f| f != b);
                            plan.in_place[i] = true;
                            Some(b)
                        }
                        None => share
                            .then(|| best_fit(&free, &plan.sizes, need))
                            .flatten()
                            .map(|at| free.swap_remove(at)),
                    };
                    let b = match taken {
                        // Its tenant and the tenant's other readers run first.
                        Some(b) => {
                            let previous = tenant[b];
                            let waits = &mut owner_waits[owner];
                            waits.push(previous);
                            waits.extend(readers[previous].iter().filter(|&&r| r != i));
                            tenant[b] = owner;
                            b
                        }
                        None => {
                            plan.sizes.push(0);
                            tenant.push(owner);
                            plan.sizes.len() - 1
                        }
                    };
                    plan.sizes[b] = plan.sizes[b].max(need);
                    plan.buffer[owner] = Some(b);
                    b
                }
            };
            plan.after[i].extend_from_slice(&owner_waits[owner]);
            plan.buffer[i] = Some(b);
            plan.len[i] = len;
            plan.offset[i] = part.map_or(0, |(_, at)| at);
            if !workspace.is_empty() {
                plan.after[i].extend(workspace_user);
                workspace_user = Some(i);
                plan.workspace_len = plan.workspace_len.max(workspace);
            }
            // A part's buffer is its concat's, which frees it.
            if Some(i) != output && part.is_none() {
                let last = readers[i].last().copied().unwrap_or(i);
                frees_after[last].push(b);
            }
            free.append(&mut frees_after[i]);
            plan.after[i].sort_unstable();
            plan.after[i].dedup();
        }
        plan.kept = producer
            .iter()
            .zip(&plan.buffer)
            .map(|(p, b)| match (p, b) {
                (Some(p), Some(b)) => tenant[*b] == plan.part_of[*p].unwrap_or(*p),
                _ => true,
            })
            .collect();
        plan
    }

    /// The buffer holding layer `index`'s tensor (`None`: the frame's input buffer).
    pub(crate) fn buffer(&self, index: usize) -> Option<usize> {
        self.buffer[index]
    }

    /// Floats of layer `index`'s tensor.
    pub(crate) fn len(&self, index: usize) -> usize {
        self.len[index]
    }

    /// Where layer `index`'s tensor starts in its buffer (not 0 only for a part of a
    /// joined concat).
    pub(crate) fn offset(&self, index: usize) -> usize {
        self.offset[index]
    }

    /// For a joined concat (no task: module docs), the layers whose tasks write its parts,
    /// in order; empty for every other layer.
    pub(crate) fn parts(&self, index: usize) -> &[usize] {
        &self.parts[index]
    }

    /// Whether layer `index` is a joined concat, which runs no task.
    pub(crate) fn joined(&self, index: usize) -> bool {
        !self.parts[index].is_empty()
    }

    /// The joined concat of which layer `index`'s tensor is a part, if any (its producer
    /// writes it through a window of the concat's buffer).
    pub(crate) fn part_of(&self, index: usize) -> Option<usize> {
        self.part_of[index]
    }

    /// Floats of each buffer.
    pub(crate) fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    /// Layers that must have finished before layer `index` starts: the earlier tenants of
    /// its buffer and their readers, and the previous user of the workspace.
    pub(crate) fn after(&self, index: usize) -> &[usize] {
        &self.after[index]
    }

    /// Whether layer `index`'s tensor is still in its buffer once the frame has run (no
    /// later layer took the buffer).
    pub(crate) fn kept(&self, index: usize) -> bool {
        self.kept[index]
    }

    /// Floats of each of the workspace's buffers.
    pub(crate) fn workspace_len(&self) -> WorkspaceLen {
        self.workspace_len
    }

    /// Whether layer `index` writes over its last read, in that tensor's buffer: it runs
    /// without that input and finds it in its output.
    pub(crate) fn in_place(&self, index: usize) -> bool {
        self.in_place[index]
    }
}

/// The concats to join (module docs): per layer, a joined concat's part producers in order
/// (else none), and the (joined concat, offset) of a part's producer. A concat joins where
/// each of its reads is a distinct task's tensor (not another concat's), read by the concat
/// alone, and not the net's output, and the concat is not the net's output either.
#[allow(clippy::type_complexity)]
fn joins(
    steps: &[PlanStep<'_>],
    readers: &[Vec<usize>],
    output: Option<usize>,
) -> (Vec<Vec<usize>>, Vec<Option<(usize, usize)>>) {
    let n = steps.len();
    let mut parts: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut part_of: Vec<Option<(usize, usize)>> = vec![None; n];
    for (i, step) in steps.iter().enumerate() {
        let PlanStep::Concat { len, reads } = *step else {
            continue;
        };
        if Some(i) == output {
            continue;
        }
        let producers: Option<Vec<usize>> = reads
            .iter()
            .map(|source| match *source {
                Source::Layer(j)
                    if matches!(steps[j], PlanStep::Task { .. })
                        && readers[j] == [i]
                        && Some(j) != output =>
                {
                    Some(j)
                }
                _ => None,
            })
            .collect();
        let Some(producers) = producers else { continue };
        let mut seen = producers.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != producers.len() {
            continue;
        }
        let mut at = 0;
        for &j in &producers {
            part_of[j] = Some((i, at));
            at += steps[j].len();
        }
        assert_eq!(at, len, "concat {i} of {len} floats joins parts of {at}");
        parts[i] = producers;
    }
    (parts, part_of)
}

/// The producer of task `i`'s last read, if `i` may overwrite it: `i` is its last reader
/// and reads it once, it is a task's tensor (not the frame's input) and not the net's
/// output.
fn overwritable(
    reads: &[Source],
    producer: &[Option<usize>],
    readers: &[Vec<usize>],
    i: usize,
    output: Option<usize>,
) -> Option<usize> {
    let (Source::Layer(last), rest) = reads.split_last()? else {
        return None;
    };
    let p = producer[*last]?;
    let read_again = rest
        .iter()
        .any(|s| matches!(s, Source::Layer(j) if producer[*j] == Some(p)));
    (readers[p].last() == Some(&i) && !read_again && Some(p) != output).then_some(p)
}

/// The index in `free` of the smallest buffer at least `len` long, else of the longest.
fn best_fit(free: &[usize], sizes: &[usize], len: usize) -> Option<usize> {
    let fitting = (0..free.len())
        .filter(|&at| sizes[free[at]] >= len)
        .min_by_key(|&at| (sizes[free[at]], free[at]));
    fitting.or_else(|| (0..free.len()).max_by_key(|&at| (sizes[free[at]], usize::MAX - free[at])))
}

#[cfg(test)]
mod test;
