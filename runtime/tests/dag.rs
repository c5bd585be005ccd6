//! DAG ordering: on seeded random DAGs, every task runs exactly once and only after all of
//! its predecessors finished, whatever its placement.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use taopipe_runtime::{Place, Placement, Runtime, Task, TaskGraph, TaskId};

struct Log {
    clock: AtomicUsize,
    started: Vec<AtomicUsize>,
    ended: Vec<AtomicUsize>,
    runs: Vec<AtomicUsize>,
    width: Vec<AtomicUsize>,
}

impl Log {
    fn new(n: usize) -> Log {
        let zeros = || (0..n).map(|_| AtomicUsize::new(0)).collect();
        Log {
            clock: AtomicUsize::new(1),
            started: zeros(),
            ended: zeros(),
            runs: zeros(),
            width: zeros(),
        }
    }
}

/// A random DAG: edges only go from lower to higher index, so it is acyclic by
/// construction; placements mix every kind the runtime has.
fn random_dag(
    seed: u64,
    n: usize,
    workers: usize,
    log: &Arc<Log>,
) -> (TaskGraph, Vec<(usize, usize)>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut g = TaskGraph::new();
    let ids: Vec<TaskId> = (0..n)
        .map(|i| {
            let log = log.clone();
            let task = Task::new("node", move |ctx| {
                if ctx.rank() == 0 {
                    log.started[i]
                        .store(log.clock.fetch_add(1, Ordering::SeqCst), Ordering::SeqCst);
                }
                log.runs[i].fetch_add(1, Ordering::SeqCst);
                log.width[i].store(ctx.width(), Ordering::SeqCst);
                ctx.barrier();
                if ctx.rank() == 0 {
                    log.ended[i].store(log.clock.fetch_add(1, Ordering::SeqCst), Ordering::SeqCst);
                }
            });
            let leader = rng.random_range(0..workers);
            let task = match rng.random_range(0..4) {
                0 => task,
                1 => task.on(Place::new(leader, rng.random_range(1..=workers - leader))),
                2 => task.width(rng.random_range(1..=workers)),
                _ => task.auto(),
            };
            g.add(task)
        })
        .collect();
    let mut edges = Vec::new();
    for b in 1..n {
        for _ in 0..rng.random_range(0..4) {
            let a = rng.random_range(b.saturating_sub(20)..b);
            g.make_edge(ids[a], ids[b]);
            edges.push((a, b));
        }
    }
    (g, edges)
}

#[test]
fn random_dags_respect_every_edge() {
    for workers in [1, 2, 3, 4] {
        let rt = Runtime::builder()
            .workers(workers)
            .build()
            .expect("runtime");
        for seed in 0..8 {
            let n = 300;
            let log = Arc::new(Log::new(n));
            let (g, edges) = random_dag(seed, n, workers, &log);
            let placements: Vec<_> = g.tasks().iter().map(|t| t.placement()).collect();
            rt.run(g).expect("graph runs");
            for (i, placement) in placements.iter().enumerate() {
                let width = match *placement {
                    Placement::Fixed(p) => p.width(),
                    Placement::Width(w) => w,
                    Placement::Auto => log.width[i].load(Ordering::SeqCst),
                };
                assert_eq!(
                    log.runs[i].load(Ordering::SeqCst),
                    width,
                    "task {i} ran a rank twice or skipped one (seed {seed})"
                );
                assert!(
                    log.ended[i].load(Ordering::SeqCst) > 0,
                    "task {i} never ran (seed {seed}, {workers} workers)"
                );
            }
            for (a, b) in edges {
                let (end_a, start_b) = (
                    log.ended[a].load(Ordering::SeqCst),
                    log.started[b].load(Ordering::SeqCst),
                );
                assert!(
                    end_a < start_b,
                    "edge {a}->{b}: {b} started at {start_b} before {a} ended at {end_a} (seed {seed}, {workers} workers)"
                );
            }
        }
    }
}

#[test]
fn many_graphs_in_flight_at_once_all_finish() {
    common::within(Duration::from_secs(60), "concurrent graphs", || {
        let rt = Runtime::builder().workers(3).build().expect("runtime");
        let logs: Vec<_> = (0..16).map(|_| Arc::new(Log::new(100))).collect();
        let handles: Vec<_> = logs
            .iter()
            .enumerate()
            .map(|(seed, log)| {
                rt.submit(random_dag(100 + seed as u64, 100, 3, log).0)
                    .expect("submit")
            })
            .collect();
        for h in handles {
            h.wait().expect("graph finishes");
        }
        for log in &logs {
            assert!(log.ended.iter().all(|e| e.load(Ordering::SeqCst) > 0));
        }
    });
}

#[test]
fn submission_from_inside_a_task_works() {
    let rt = Arc::new(Runtime::builder().workers(2).build().expect("runtime"));
    let hits = Arc::new(AtomicUsize::new(0));
    let (inner_rt, inner_hits) = (Arc::downgrade(&rt), hits.clone());
    let mut g = TaskGraph::new();
    g.add(Task::new("outer", move |_| {
        let rt = inner_rt.upgrade().expect("runtime alive");
        let mut inner = TaskGraph::new();
        let h = inner_hits.clone();
        inner.add(Task::new("inner", move |_| {
            h.fetch_add(1, Ordering::SeqCst);
        }));
        // Fire and forget: waiting here would block a worker the inner task may need.
        let _ = rt.submit(inner).expect("submit from a task");
    }));
    rt.run(g).expect("outer runs");
    common::within(Duration::from_secs(10), "inner task", move || {
        while hits.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
    });
}

#[test]
fn cycles_and_bad_places_are_rejected_naming_the_task() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let mut g = TaskGraph::new();
    let a = g.add(Task::new("a", |_| {}));
    let b = g.add(Task::new("loopy", |_| {}));
    g.make_edge(a, b);
    g.make_edge(b, a);
    let err = rt.run(g).expect_err("cycle");
    assert!(err.to_string().contains("cycle"), "{err}");

    let mut g = TaskGraph::new();
    g.add(Task::new("ok", |_| {}));
    g.add(Task::new("too-wide", |_| {}).on(Place::new(1, 2)));
    let err = rt.run(g).expect_err("place 1+2 does not fit 2 workers");
    let text = err.to_string();
    assert!(
        text.contains("too-wide") && text.contains("1+2") && text.contains("#1"),
        "{text}"
    );

    let mut g = TaskGraph::new();
    g.add(Task::new("wide", |_| {}).width(3));
    let err = rt.run(g).expect_err("width 3 on 2 workers");
    assert!(err.to_string().contains("width 3"), "{err}");
}

#[test]
fn empty_graph_finishes_at_once() {
    let rt = Runtime::builder().workers(1).build().expect("runtime");
    rt.run(TaskGraph::new()).expect("nothing to do");
}

/// Edges may point from a later-added task to an earlier one: such graphs take the full
/// cycle check, and still run in dependency order.
#[test]
fn edges_against_insertion_order_are_fine_when_acyclic() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let n = 200;
    let log = Arc::new(Log::new(n));
    let mut g = TaskGraph::new();
    let ids: Vec<TaskId> = (0..n)
        .map(|i| {
            let log = log.clone();
            g.add(Task::new("rev", move |_| {
                log.started[i].store(log.clock.fetch_add(1, Ordering::SeqCst), Ordering::SeqCst);
                log.ended[i].store(log.clock.fetch_add(1, Ordering::SeqCst), Ordering::SeqCst);
            }))
        })
        .collect();
    // A chain from the last task added to the first.
    for i in (1..n).rev() {
        g.make_edge(ids[i], ids[i - 1]);
    }
    rt.run(g).expect("acyclic");
    for i in (1..n).rev() {
        assert!(log.ended[i].load(Ordering::SeqCst) < log.started[i - 1].load(Ordering::SeqCst));
    }
}

/// `wait` hands the finished graph to an idle worker to free: the tasks' closures (and
/// what they captured) are released soon after, even when the runtime then sits idle.
#[test]
fn finished_graphs_are_freed_while_the_runtime_idles() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let captured = Arc::new(());
    for _ in 0..3 {
        let mut g = TaskGraph::new();
        for _ in 0..100 {
            let c = captured.clone();
            g.add(Task::new("hold", move |_| {
                let _ = &c;
            }));
        }
        let handle = rt.submit(g).expect("submit");
        // Let the graph finish and every worker park: the graph is retired (by `wait`)
        // only then, so freeing it needs a worker woken for the purpose.
        std::thread::sleep(Duration::from_millis(20));
        handle.wait().expect("runs");
    }
    common::within(Duration::from_secs(10), "graphs freed", move || {
        while Arc::strong_count(&captured) > 1 {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}
