use proptest::prelude::*;
use taopipe_dsl::Source;

use super::{MemoryPlan, PlanStep};
use crate::kernel::WorkspaceLen;

fn task(len: usize, reads: &[Source]) -> PlanStep<'_> {
    step(len, reads, false)
}

/// A task; `in_place`: it may write over its last read (a residual conv).
fn step(len: usize, reads: &[Source], in_place: bool) -> PlanStep<'_> {
    PlanStep::Task {
        len,
        reads,
        workspace: WorkspaceLen::default(),
        in_place,
    }
}

/// Tasks of 8 floats reading `reads`, task `residual` the one that may write in place.
fn chain(reads: &[Vec<Source>], residual: usize) -> Vec<PlanStep<'_>> {
    reads
        .iter()
        .enumerate()
        .map(|(i, r)| step(8, r, i == residual))
        .collect()
}

#[test]
fn a_residual_conv_takes_its_shortcut_buffer() {
    // A ResNet block: 0 the shortcut, 1 and 2 its branch, 3 = conv(2) + 0, then a reader.
    let reads = [
        vec![Source::Input],
        vec![Source::Layer(0)],
        vec![Source::Layer(1)],
        vec![Source::Layer(2), Source::Layer(0)],
        vec![Source::Layer(3)],
    ];
    let steps = chain(&reads, 3);
    let plan = MemoryPlan::new(&steps, 8, true);
    assert!(plan.in_place(3) && (0..5).filter(|&i| i != 3).all(|i| !plan.in_place(i)));
    assert_eq!(plan.buffer(3), plan.buffer(0));
    // It waits for the shortcut and its other reader.
    assert!(plan.after(3).contains(&0) && plan.after(3).contains(&1));
    assert!(!plan.kept(0) && plan.kept(3));
    // Layer 4 may not take the buffer layer 3 lives in.
    assert_ne!(plan.buffer(4), plan.buffer(3));
    // Without sharing, no layer writes over another's tensor.
    let apart = MemoryPlan::new(&steps, 8, false);
    assert!(!apart.in_place(3) && apart.buffer(3) != apart.buffer(0));
}

#[test]
fn a_shortcut_is_overwritten_only_by_its_last_single_read() {
    let check = |reads: &[Vec<Source>], want: bool| {
        let last = reads.len() - 1;
        let steps = chain(reads, 2);
        let plan = MemoryPlan::new(&steps, 8, true);
        assert_eq!(plan.in_place(2), want, "{reads:?}");
        assert!(plan.kept(last));
    };
    let (x, l) = (Source::Input, Source::Layer);
    // The shortcut is read again after the residual layer.
    check(
        &[vec![x], vec![l(0)], vec![l(1), l(0)], vec![l(0), l(2)]],
        false,
    );
    // The layer reads the shortcut twice (as its input too).
    check(&[vec![x], vec![l(0)], vec![l(0), l(0)], vec![l(2)]], false);
    // The shortcut is the frame's input.
    check(&[vec![x], vec![l(0)], vec![l(1), x], vec![l(2)]], false);
    // The plain case.
    check(&[vec![x], vec![l(0)], vec![l(1), l(0)], vec![l(2)]], true);
}

#[test]
fn a_chain_takes_two_buffers_in_turn() {
    let reads = [
        [Source::Input],
        [Source::Layer(0)],
        [Source::Layer(1)],
        [Source::Layer(2)],
    ];
    let steps: Vec<_> = reads.iter().map(|r| task(10, r)).collect();
    let plan = MemoryPlan::new(&steps, 10, true);
    assert_eq!(plan.sizes(), &[10, 10]);
    let buffers: Vec<_> = (0..4).map(|i| plan.buffer(i)).collect();
    assert_eq!(buffers, [Some(0), Some(1), Some(0), Some(1)]);
    // Layer 2 overwrites layer 0's tensor: it waits for layer 0 and its reader, layer 1.
    assert_eq!(plan.after(2), &[0, 1]);
    assert_eq!(
        (0..4).map(|i| plan.kept(i)).collect::<Vec<_>>(),
        [false, false, true, true]
    );
}

#[test]
fn without_sharing_every_task_keeps_its_buffer() {
    let reads = [[Source::Input], [Source::Layer(0)], [Source::Layer(1)]];
    let steps: Vec<_> = reads.iter().map(|r| task(5, r)).collect();
    let plan = MemoryPlan::new(&steps, 5, false);
    assert_eq!(plan.sizes().len(), 3);
    assert!((0..3).all(|i| plan.kept(i) && plan.after(i).is_empty()));
}

#[test]
fn a_residual_keeps_its_tensor_alive_and_aliases_share_it() {
    // 0: x; 1: alias of 0 (a folded batchnorm); 2 reads 1; 3 reads 2 and the alias.
    let r0 = [Source::Input];
    let r2 = [Source::Layer(0)];
    let r3 = [Source::Layer(2), Source::Layer(0)];
    let steps = [
        task(8, &r0),
        PlanStep::Alias(Source::Layer(0)),
        task(8, &r2),
        task(8, &r3),
    ];
    let plan = MemoryPlan::new(&steps, 8, true);
    assert_eq!(plan.buffer(1), plan.buffer(0));
    let distinct: std::collections::HashSet<_> =
        [0, 2, 3].iter().map(|&i| plan.buffer(i)).collect();
    assert_eq!(
        distinct.len(),
        3,
        "x is read by layer 3, so nothing may take it before"
    );
}

#[test]
fn workspace_users_run_one_after_another() {
    let r = [[Source::Input], [Source::Input], [Source::Input]];
    let steps: Vec<_> = r
        .iter()
        .enumerate()
        .map(|(i, reads)| PlanStep::Task {
            len: 4,
            reads,
            workspace: WorkspaceLen {
                packed: [3, 0, 7][i],
                products: [0, 0, 2][i],
            },
            in_place: false,
        })
        .collect();
    let plan = MemoryPlan::new(&steps, 4, true);
    assert_eq!(
        plan.workspace_len(),
        WorkspaceLen {
            packed: 7,
            products: 2
        }
    );
    assert!(plan.after(2).contains(&0), "{:?}", plan.after(2));
    assert!(!plan.after(1).contains(&0) || plan.buffer(1) == plan.buffer(0));
}

/// Random nets: each layer a task reading one or two earlier tensors (or the input), or an
/// alias of an earlier one; a task may be able to write over its last read. Lengths come
/// from few values, so that some tasks can.
fn nets() -> impl Strategy<Value = Vec<(bool, bool, usize, Vec<usize>)>> {
    prop::collection::vec(
        (
            any::<bool>(),
            any::<bool>(),
            prop::sample::select(vec![3usize, 8, 8, 8, 20]),
            prop::collection::vec(any::<prop::sample::Index>(), 1..=2),
        ),
        1..30,
    )
    .prop_map(|layers| {
        layers
            .into_iter()
            .enumerate()
            .map(|(i, (alias, in_place, len, picks))| {
                // Source index i means the input; j < i a layer.
                let reads = picks.iter().map(|p| p.index(i + 1)).collect();
                (alias && i > 0, in_place, len, reads)
            })
            .collect()
    })
}

proptest! {
    /// Whatever the net: every buffer fits its tenants; a tensor's buffer is taken over
    /// only by a layer that the graph (data edges and `after`) orders after every reader
    /// of the tensor; the net's output is kept; and running the layers in order, every
    /// read finds its producer's tensor intact (a layer writing in place finds its last
    /// read in its own buffer).
    #[test]
    fn reuse_never_clobbers_a_live_tensor(net in nets()) {
        let sources = |reads: &[usize]| -> Vec<Source> {
            reads.iter().map(|&r| if r == 0 { Source::Input } else { Source::Layer(r - 1) }).collect()
        };
        let reads: Vec<Vec<Source>> = net.iter().map(|(_, _, _, r)| sources(r)).collect();
        // Resolve aliases to tasks, as the model does.
        let mut resolved: Vec<Source> = Vec::new();
        let mut steps = Vec::new();
        for (i, (alias, in_place, len, _)) in net.iter().enumerate() {
            let resolve = |s: Source| match s {
                Source::Layer(j) => resolved[j],
                other => other,
            };
            if *alias {
                let target = resolve(reads[i][0]);
                steps.push(PlanStep::Alias(target));
                resolved.push(target);
            } else {
                steps.push(step(*len, &reads[i], *in_place));
                resolved.push(Source::Layer(i));
            }
        }
        // Task reads must be resolved too.
        let task_reads: Vec<Vec<Source>> = reads
            .iter()
            .map(|r| r.iter().map(|&s| match s { Source::Layer(j) => resolved[j], o => o }).collect())
            .collect();
        for (i, step) in steps.iter_mut().enumerate() {
            if let PlanStep::Task { reads, .. } = step {
                *reads = &task_reads[i];
            }
        }
        let plan = MemoryPlan::new(&steps, 3, true);
        let n = steps.len();
        // Edges: data and `after`; reach[i][j]: j is ordered before i.
        let mut reach = vec![vec![false; n]; n];
        for i in 0..n {
            let PlanStep::Task { reads, .. } = &steps[i] else { continue };
            let mut before: Vec<usize> = plan.after(i).to_vec();
            before.extend(reads.iter().filter_map(|s| match s { Source::Layer(j) => Some(*j), _ => None }));
            for j in before {
                prop_assert!(j < i);
                reach[i][j] = true;
                let (done, rest) = reach.split_at_mut(i);
                for (to, &from) in rest[0].iter_mut().zip(&done[j]) {
                    *to |= from;
                }
            }
        }
        // Simulate in layer order: each buffer holds the tag of its last writer.
        let mut content: Vec<Option<usize>> = vec![None; plan.sizes().len()];
        for i in 0..n {
            let PlanStep::Task { len, reads, in_place, .. } = &steps[i] else { continue };
            prop_assert!(*in_place || !plan.in_place(i));
            let b = plan.buffer(i).expect("a task has a buffer");
            for (at, s) in reads.iter().enumerate() {
                if let Source::Layer(j) = *s {
                    let from = plan.buffer(j).expect("a task's tensor has a buffer");
                    prop_assert_eq!(content[from], Some(j), "layer {} reads {} clobbered", i, j);
                    let last = at + 1 == reads.len();
                    prop_assert_eq!(from == b, plan.in_place(i) && last, "layer {} reads {} from its own buffer", i, j);
                    if from == b {
                        prop_assert_eq!(plan.len(j), *len);
                    }
                }
            }
            prop_assert!(plan.sizes()[b] >= *len);
            prop_assert_eq!(plan.len(i), *len);
            if let Some(previous) = content[b] {
                prop_assert!(reach[i][previous], "{} takes {}'s buffer unordered", i, previous);
                for r in 0..i {
                    let PlanStep::Task { reads, .. } = &steps[r] else { continue };
                    if reads.contains(&Source::Layer(previous)) {
                        prop_assert!(reach[i][r], "{} takes {}'s buffer before reader {}", i, previous, r);
                    }
                }
            }
            content[b] = Some(i);
        }
        for (i, source) in resolved.iter().enumerate() {
            if let Source::Layer(p) = *source {
                let b = plan.buffer(i).expect("a layer's tensor has a buffer");
                prop_assert_eq!(plan.kept(i), content[b] == Some(p));
            }
        }
        if let Source::Layer(p) = resolved[n - 1] {
            prop_assert!(plan.kept(p), "the net's output is kept");
        }
    }
}
