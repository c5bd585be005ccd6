//! Steady-state runs of a prepared graph make no heap allocation, on any thread: dispatch,
//! gangs and their barriers, completion, the trace table, the stats histograms, the
//! emulated stall and rect claims on a `SharedSlice` all run off the allocator once a
//! warm-up run has grown the queues; so do recorded spans, whose room is allocated when
//! recording starts.

mod counting;

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use counting::Count;
use taopipe_runtime::{Place, Rect, Runtime, SharedSlice, Task, TaskGraph, TaskId};

const LAYERS: usize = 4;
const ROWS: usize = 8;
const LD: usize = 16;
const WARM_UP: usize = 3;
const RUNS: u64 = 50;

/// What the graph's tasks leave behind, to check that the counted runs did the work.
#[derive(Default)]
struct Tally {
    conv_ranks: AtomicU64,
    sum: AtomicU64,
}

/// `LAYERS` layers, each a width-2 "conv" gang on `0+2` (each rank writes its half of the
/// columns of a `ROWS × LD` output as one rect, then meets the other at a barrier) and two
/// width-1 "pool" tasks on `0+1` and `1+1` that read the whole output.
fn layered_graph(out: &Arc<SharedSlice<u32>>, tally: &Arc<Tally>) -> TaskGraph {
    let mut g = TaskGraph::new();
    let mut prev: Vec<TaskId> = Vec::new();
    for layer in 0..LAYERS {
        let (o, t) = (out.clone(), tally.clone());
        let conv = g.add(
            Task::new("conv", move |ctx| {
                let cols = ctx.split(LD);
                {
                    let mut tile = o
                        .write_rect(Rect::new(cols.start, LD, ROWS, cols.len()))
                        .expect("ranks write disjoint columns");
                    for (i, row) in tile.rows_mut().enumerate() {
                        for (x, j) in row.iter_mut().zip(cols.clone()) {
                            *x = (layer * 1000 + i * LD + j) as u32;
                        }
                    }
                }
                ctx.barrier();
                t.conv_ranks.fetch_add(1, Ordering::Relaxed);
            })
            .on(Place::new(0, 2)),
        );
        for p in prev.drain(..) {
            g.make_edge(p, conv);
        }
        for worker in 0..2 {
            let (o, t) = (out.clone(), tally.clone());
            let pool = g.add(
                Task::new("pool", move |_| {
                    let sum: u64 = o.read().expect("no writer").iter().map(|&v| v as u64).sum();
                    t.sum.fetch_add(sum, Ordering::Relaxed);
                })
                .on(Place::new(worker, 1)),
            );
            g.make_edge(conv, pool);
            prev.push(pool);
        }
    }
    g
}

#[test]
fn prepared_graph_runs_allocate_nothing_after_warm_up() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    rt.emulate(&"w1=0.5".parse().expect("spec"))
        .expect("emulation");
    let out = Arc::new(SharedSlice::<u32>::zeroed(ROWS * LD));
    let tally = Arc::new(Tally::default());
    let graph = rt.prepare(layered_graph(&out, &tally)).expect("prepares");
    let mut g = TaskGraph::new();
    g.add(
        Task::new("allocates", |_| {
            black_box(Vec::<u64>::with_capacity(16));
        })
        .on(Place::new(1, 1)),
    );
    let control = rt.prepare(g).expect("prepares");
    for _ in 0..WARM_UP {
        rt.run_prepared(&graph).expect("warm-up run");
        rt.run_prepared(&control).expect("warm-up run");
    }

    // The counter sees what a worker allocates: the control graph's one vector per run.
    let before = Count::now();
    rt.run_prepared(&control).expect("control run");
    let seen = before.since();
    assert!(
        seen.allocations >= 1,
        "the counter missed a worker's allocation: {seen:?}"
    );

    tally.conv_ranks.store(0, Ordering::SeqCst);
    tally.sum.store(0, Ordering::SeqCst);
    let before = Count::now();
    for _ in 0..RUNS {
        rt.run_prepared(&graph).expect("run");
    }
    let spent = before.since();
    assert_eq!(
        spent.allocations, 0,
        "{RUNS} runs of a prepared graph allocated {} times (and freed {})",
        spent.allocations, spent.frees
    );
    // And they did the work: every rank of every conv, every pool reading every layer.
    let cells = (ROWS * LD) as u64;
    let per_layer = |layer: u64| layer * 1000 * cells + cells * (cells - 1) / 2;
    let per_run: u64 = (0..LAYERS as u64).map(|l| 2 * per_layer(l)).sum();
    assert_eq!(
        tally.conv_ranks.load(Ordering::SeqCst),
        RUNS * LAYERS as u64 * 2
    );
    assert_eq!(tally.sum.load(Ordering::SeqCst), RUNS * per_run);

    // Recording spans allocates their room up front, and nothing while graphs run. Each
    // worker runs one rank of every conv and one pool a layer.
    let per_worker = RUNS as usize * LAYERS * 2;
    rt.record_spans(per_worker);
    let before = Count::now();
    for _ in 0..RUNS {
        rt.run_prepared(&graph).expect("run");
    }
    let spent = before.since();
    let spans = rt.take_spans();
    assert_eq!(
        spent.allocations, 0,
        "{RUNS} runs recording spans allocated {} times",
        spent.allocations
    );
    assert_eq!((spans.spans.len(), spans.dropped), (2 * per_worker, 0));
    let runs = spans.gang_runs();
    assert_eq!(runs.len(), RUNS as usize * LAYERS * 3);
    let convs = runs.iter().filter(|r| r.kind == "conv");
    assert!(convs.clone().all(|r| r.parts == 2 && r.width == 2));
    assert_eq!(convs.count(), RUNS as usize * LAYERS);
}
