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

/// A fire module: 0 squeezes the input, 1 and 2 expand it, 3 joins them (written in
/// place by 1 and 2), 4 reads the concat, 5 the net's output.
#[test]
fn a_concat_of_tasks_read_by_it_alone_is_written_in_place() {
    let r = [
        vec![Source::Input],
        vec![Source::Layer(0)],
        vec![Source::Layer(0)],
        vec![Source::Layer(1), Source::Layer(2)],
        vec![Source::Layer(3)],
        vec![Source::Layer(4)],
    ];
    let steps = vec![
        task(4, &r[0]),
        task(6, &r[1]),
        task(10, &r[2]),
        PlanStep::Concat {
            len: 16,
            reads: &r[3],
        },
        task(4, &r[4]),
        task(4, &r[5]),
    ];
    let plan = MemoryPlan::new(&steps, 4, true);
    assert!(plan.joined(3) && plan.parts(3) == [1, 2]);
    assert_eq!((plan.part_of(1), plan.part_of(2)), (Some(3), Some(3)));
    let b = plan.buffer(3);
    assert!(b.is_some() && plan.buffer(1) == b && plan.buffer(2) == b);
    assert_eq!((plan.offset(1), plan.offset(2), plan.offset(3)), (0, 6, 0));
    assert_eq!((plan.len(1), plan.len(2), plan.len(3)), (6, 10, 16));
    assert!(plan.sizes()[b.unwrap()] >= 16);
    // Layer 0's buffer is free after 2 (its last reader): 4 may take it, not the concat's.
    assert_ne!(plan.buffer(4), b);
    assert!(plan.buffer(5) != plan.buffer(4));
    // The concat's buffer is free after 4: 5 may take it, after both parts' producers
    // (through the concat) and its reader.
    assert_eq!(plan.buffer(5), b);
    assert!(plan.after(5).contains(&3) && plan.after(5).contains(&4));
    assert!(!plan.kept(1) && !plan.kept(2) && !plan.kept(3) && plan.kept(5));
    // Without sharing, the concat copies into a buffer of its own.
    let apart = MemoryPlan::new(&steps, 4, false);
    assert!(!apart.joined(3) && apart.part_of(1).is_none() && apart.buffer(1) != apart.buffer(3));
}

/// Concats that must copy: a part read by another layer too, the frame's input, a part
/// read twice, and a concat that is the net's output.
#[test]
fn a_concat_copies_where_a_part_is_not_its_alone() {
    let plan_of = |reads: &[Vec<Source>], concat: usize| {
        let steps: Vec<PlanStep<'_>> = reads
            .iter()
            .enumerate()
            .map(|(i, r)| {
                if i == concat {
                    PlanStep::Concat {
                        len: 4 * r.len(),
                        reads: r,
                    }
                } else {
                    task(4, r)
                }
            })
            .collect();
        MemoryPlan::new(&steps, 4, true)
    };
    let (i, l) = (Source::Input, Source::Layer);
    // 1 is read by 3 too.
    let p = plan_of(
        &[
            vec![i],
            vec![l(0)],
            vec![l(1), l(0)],
            vec![l(1)],
            vec![l(2), l(3)],
        ],
        2,
    );
    assert!(!p.joined(2) && p.part_of(0).is_none() && p.part_of(1).is_none());
    // The input is a part.
    let p = plan_of(&[vec![i], vec![l(0), i], vec![l(1)]], 1);
    assert!(!p.joined(1));
    // A part read twice.
    let p = plan_of(&[vec![i], vec![l(0), l(0)], vec![l(1)]], 1);
    assert!(!p.joined(1));
    // The concat is the output.
    let p = plan_of(&[vec![i], vec![i], vec![l(0), l(1)]], 2);
    assert!(!p.joined(2));
    // A concat of a joined concat copies; the inner one joins.
    let (input, inner, outer, last) = ([i], [l(0), l(1)], [l(2), l(3)], [l(4)]);
    let steps = [
        task(4, &input),
        task(4, &input),
        PlanStep::Concat {
            len: 8,
            reads: &inner,
        },
        task(4, &input),
        PlanStep::Concat {
            len: 12,
            reads: &outer,
        },
        task(4, &last),
    ];
    let p = MemoryPlan::new(&steps, 4, true);
    assert!(p.joined(2) && !p.joined(4));
}

/// The first part's producer takes the concat's buffer from a dead tensor: every part's
/// producer waits for that tensor's readers, and an alias of a part is a part too.
#[test]
fn every_part_waits_for_the_buffers_previous_tenant() {
    let (i, l) = (Source::Input, Source::Layer);
    let r = [
        vec![i],
        vec![l(0)],
        vec![l(1)],
        vec![l(1)],
        vec![l(2), l(3)],
        vec![l(4)],
    ];
    let steps = vec![
        task(20, &r[0]),
        task(4, &r[1]),
        task(6, &r[2]),
        task(6, &r[3]),
        PlanStep::Concat {
            len: 12,
            reads: &r[4],
        },
        task(4, &r[5]),
    ];
    let plan = MemoryPlan::new(&steps, 4, true);
    assert!(plan.joined(4));
    // Layer 0's buffer (20 floats) is free after 1, its reader: the concat takes it.
    assert_eq!(plan.buffer(4), plan.buffer(0));
    for part in [2, 3] {
        assert!(plan.after(part).contains(&0) && plan.after(part).contains(&1));
    }
    let after = [l(5)];
    let tail = [PlanStep::Alias(l(2)), task(4, &after)];
    let with_alias: Vec<PlanStep<'_>> = steps.iter().cloned().chain(tail).collect();
    let plan = MemoryPlan::new(&with_alias, 4, true);
    assert_eq!(plan.part_of(6), Some(4));
    assert_eq!(
        (plan.buffer(6), plan.offset(6), plan.len(6)),
        (plan.buffer(4), 0, 6)
    );
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
