use proptest::prelude::*;
use taopipe_dsl::Source;

use super::{MemoryPlan, PlanStep};

fn task(len: usize, reads: &[Source]) -> PlanStep<'_> {
    PlanStep::Task {
        len,
        reads,
        workspace: 0,
    }
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
            workspace: [3, 0, 7][i],
        })
        .collect();
    let plan = MemoryPlan::new(&steps, 4, true);
    assert_eq!(plan.workspace_len(), 7);
    assert!(plan.after(2).contains(&0), "{:?}", plan.after(2));
    assert!(!plan.after(1).contains(&0) || plan.buffer(1) == plan.buffer(0));
}

/// Random nets: each layer a task reading one or two earlier tensors (or the input), or an
/// alias of an earlier one.
fn nets() -> impl Strategy<Value = Vec<(bool, usize, Vec<usize>)>> {
    prop::collection::vec(
        (
            any::<bool>(),
            1usize..40,
            prop::collection::vec(any::<prop::sample::Index>(), 1..=2),
        ),
        1..30,
    )
    .prop_map(|layers| {
        layers
            .into_iter()
            .enumerate()
            .map(|(i, (alias, len, picks))| {
                // Source index i means the input; j < i a layer.
                let reads = picks.iter().map(|p| p.index(i + 1)).collect();
                (alias && i > 0, len, reads)
            })
            .collect()
    })
}

proptest! {
    /// Whatever the net: every buffer fits its tenants; a tensor's buffer is taken over
    /// only by a layer that the graph (data edges and `after`) orders after every reader
    /// of the tensor; the net's output is kept; and running the layers in order, every
    /// read finds its producer's tensor intact.
    #[test]
    fn reuse_never_clobbers_a_live_tensor(net in nets()) {
        let sources = |reads: &[usize]| -> Vec<Source> {
            reads.iter().map(|&r| if r == 0 { Source::Input } else { Source::Layer(r - 1) }).collect()
        };
        let reads: Vec<Vec<Source>> = net.iter().map(|(_, _, r)| sources(r)).collect();
        // Resolve aliases to tasks, as the model does.
        let mut resolved: Vec<Source> = Vec::new();
        let mut steps = Vec::new();
        for (i, (alias, len, _)) in net.iter().enumerate() {
            let resolve = |s: Source| match s {
                Source::Layer(j) => resolved[j],
                other => other,
            };
            if *alias {
                let target = resolve(reads[i][0]);
                steps.push(PlanStep::Alias(target));
                resolved.push(target);
            } else {
                steps.push(PlanStep::Task { len: *len, reads: &reads[i], workspace: 0 });
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
            let PlanStep::Task { len, reads, .. } = &steps[i] else { continue };
            for s in reads.iter() {
                if let Source::Layer(j) = *s {
                    let b = plan.buffer(j).expect("a task's tensor has a buffer");
                    prop_assert_eq!(content[b], Some(j), "layer {} reads {} clobbered", i, j);
                }
            }
            let b = plan.buffer(i).expect("a task has a buffer");
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
