//! Prepared graphs: run again and again with every task once per run in dependency order,
//! refused like `run` when invalid, an error (never a hang or a reset under a live run)
//! when run twice at once or on another runtime, and reusable after a failed run.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use taopipe_runtime::{Place, Runtime, RuntimeError, Task, TaskGraph, TaskId};

/// Per task: runs (rank 0) in the current round, and the round in which it last ended.
struct Log {
    runs: Vec<AtomicUsize>,
    ended: Vec<AtomicUsize>,
    order_errors: AtomicUsize,
}

/// A seeded random DAG with every kind of placement; each task checks, on every run, that
/// its predecessors ended in this round before it started.
fn random_dag(
    seed: u64,
    n: usize,
    workers: usize,
    log: &Arc<Log>,
    round: &Arc<AtomicUsize>,
) -> TaskGraph {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut g = TaskGraph::new();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, p) in preds.iter_mut().enumerate().skip(1) {
        for _ in 0..rng.random_range(0..3) {
            let j = rng.random_range(0..i);
            if !p.contains(&j) {
                p.push(j);
            }
        }
    }
    let ids: Vec<TaskId> = (0..n)
        .map(|i| {
            let (log, round, mine) = (log.clone(), round.clone(), preds[i].clone());
            let task = Task::new("node", move |ctx| {
                let now = round.load(Ordering::SeqCst);
                if ctx.rank() == 0 {
                    if mine
                        .iter()
                        .any(|&p| log.ended[p].load(Ordering::SeqCst) != now)
                    {
                        log.order_errors.fetch_add(1, Ordering::SeqCst);
                    }
                    log.runs[i].fetch_add(1, Ordering::SeqCst);
                }
                ctx.barrier();
                if ctx.rank() == 0 {
                    log.ended[i].store(now, Ordering::SeqCst);
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
    for (i, p) in preds.iter().enumerate() {
        for &j in p {
            g.make_edge(ids[j], ids[i]);
        }
    }
    g
}

#[test]
fn a_prepared_graph_runs_every_task_once_per_run_in_order() {
    let (workers, n, rounds) = (4, 300, 40);
    let rt = Runtime::builder()
        .workers(workers)
        .build()
        .expect("runtime");
    let log = Arc::new(Log {
        runs: (0..n).map(|_| AtomicUsize::new(0)).collect(),
        ended: (0..n).map(|_| AtomicUsize::new(0)).collect(),
        order_errors: AtomicUsize::new(0),
    });
    let round = Arc::new(AtomicUsize::new(0));
    let graph = rt
        .prepare(random_dag(11, n, workers, &log, &round))
        .expect("prepares");
    assert_eq!(graph.len(), n);
    let (rt, graph) = (Arc::new(rt), Arc::new(graph));
    for r in 1..=rounds {
        round.store(r, Ordering::SeqCst);
        let (rt, graph) = (rt.clone(), graph.clone());
        common::within(Duration::from_secs(30), "a prepared run", move || {
            rt.run_prepared(&graph)
        })
        .expect("runs");
        assert_eq!(log.order_errors.load(Ordering::SeqCst), 0, "round {r}");
        for (i, runs) in log.runs.iter().enumerate() {
            assert_eq!(runs.load(Ordering::SeqCst), r, "task {i} after round {r}");
        }
    }
}

#[test]
fn prepare_refuses_what_run_refuses() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let outside = || {
        let mut g = TaskGraph::new();
        g.add(Task::new("fine", |_| {}));
        g.add(Task::new("far", |_| {}).on(Place::new(1, 2)));
        g
    };
    let err = rt.prepare(outside()).expect_err("place 1+2 on 2 workers");
    assert_eq!(err, rt.run(outside()).expect_err("same for run"));
    assert!(
        matches!(err, RuntimeError::PlaceNotAllowed { index: 1, .. }),
        "{err}"
    );
    let cycle = || {
        let mut g = TaskGraph::new();
        let a = g.add(Task::new("a", |_| {}));
        let b = g.add(Task::new("b", |_| {}));
        g.make_edge(b, a);
        g.make_edge(a, b);
        g
    };
    let err = rt.prepare(cycle()).expect_err("cycle");
    assert_eq!(err, rt.run(cycle()).expect_err("same for run"));
    assert!(matches!(err, RuntimeError::Cycle { .. }), "{err}");
}

/// A run in flight is left alone: a second run of the same graph is an error naming it.
#[test]
fn a_second_run_while_one_is_in_flight_is_an_error() {
    let rt = Arc::new(Runtime::builder().workers(2).build().expect("runtime"));
    let gate = Arc::new(Barrier::new(2));
    let mut g = TaskGraph::new();
    let held = gate.clone();
    g.add(
        Task::new("held", move |_| {
            held.wait(); // the run is in flight
            held.wait(); // until the test lets it go
        })
        .on(Place::new(0, 1)),
    );
    g.add(Task::new("other", |_| {}).on(Place::new(1, 1)));
    let graph = Arc::new(rt.prepare(g).expect("prepares"));
    for _ in 0..3 {
        let (rt2, graph2) = (rt.clone(), graph.clone());
        let first = std::thread::spawn(move || rt2.run_prepared(&graph2));
        gate.wait();
        let err = rt.run_prepared(&graph).expect_err("one run at a time");
        assert_eq!(
            err,
            RuntimeError::AlreadyRunning {
                first_task: "held".to_string(),
                tasks: 2
            }
        );
        assert!(
            err.to_string().contains("`held`") && err.to_string().contains("2 task"),
            "{err}"
        );
        gate.wait();
        first
            .join()
            .expect("no panic")
            .expect("the first run finishes");
    }
}

#[test]
fn a_prepared_graph_runs_only_on_its_runtime() {
    let a = Runtime::builder().workers(2).build().expect("runtime");
    let b = Runtime::builder().workers(2).build().expect("runtime");
    let mut g = TaskGraph::new();
    g.add(Task::new("mine", |_| {}).on(Place::new(0, 2)));
    let graph = a.prepare(g).expect("prepares");
    let foreign = RuntimeError::ForeignGraph {
        first_task: "mine".to_string(),
        tasks: 1,
    };
    assert_eq!(b.run_prepared(&graph), Err(foreign.clone()));
    a.run_prepared(&graph).expect("runs on its own runtime");
    drop(a);
    assert_eq!(
        b.run_prepared(&graph),
        Err(foreign),
        "not even once its runtime is gone"
    );
}

/// A run whose gang fails midway (one rank panics, the other gives up at the barrier)
/// leaves the graph as good as new: the next run's barrier waits for both ranks again.
#[test]
fn a_failed_run_leaves_the_prepared_graph_reusable() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let fail = Arc::new(AtomicBool::new(false));
    let arrived = Arc::new(AtomicUsize::new(0));
    let early = Arc::new(AtomicUsize::new(0));
    let after = Arc::new(AtomicUsize::new(0));
    let mut g = TaskGraph::new();
    let (f, a, e) = (fail.clone(), arrived.clone(), early.clone());
    let conv = g.add(
        Task::new("conv", move |ctx| {
            if ctx.rank() == 1 && f.load(Ordering::SeqCst) {
                panic!("rank 1 fails");
            }
            a.fetch_add(1, Ordering::SeqCst);
            ctx.barrier();
            if a.load(Ordering::SeqCst) % 2 != 0 {
                e.fetch_add(1, Ordering::SeqCst); // passed the barrier alone
            }
            ctx.barrier();
        })
        .on(Place::new(0, 2)),
    );
    let x = after.clone();
    let pool = g.add(
        Task::new("pool", move |_| {
            x.fetch_add(1, Ordering::SeqCst);
        })
        .on(Place::new(1, 1)),
    );
    g.make_edge(conv, pool);
    let graph = rt.prepare(g).expect("prepares");
    for cycle in 0..5 {
        fail.store(true, Ordering::SeqCst);
        arrived.store(0, Ordering::SeqCst);
        match rt.run_prepared(&graph) {
            Err(RuntimeError::TaskPanicked { task, message, .. }) => {
                assert_eq!((task.as_str(), message.as_str()), ("conv", "rank 1 fails"));
            }
            other => panic!("cycle {cycle}: expected the panic, got {other:?}"),
        }
        assert_eq!(
            after.load(Ordering::SeqCst),
            cycle,
            "the successor of a failed task ran"
        );
        fail.store(false, Ordering::SeqCst);
        arrived.store(0, Ordering::SeqCst);
        rt.run_prepared(&graph).expect("the next run succeeds");
        assert_eq!(arrived.load(Ordering::SeqCst), 2, "cycle {cycle}");
        assert_eq!(
            early.load(Ordering::SeqCst),
            0,
            "cycle {cycle}: a rank passed the barrier alone"
        );
        assert_eq!(after.load(Ordering::SeqCst), cycle + 1);
    }
}

#[test]
fn an_empty_prepared_graph_runs() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let graph = rt.prepare(TaskGraph::new()).expect("prepares");
    assert!(graph.is_empty());
    for _ in 0..3 {
        rt.run_prepared(&graph).expect("nothing to do");
    }
}

/// Thousands of short runs of a graph with many sinks on overlapping places: a reset that
/// raced with the end of the previous run would lose or repeat a task, or hang.
#[test]
fn many_short_runs_never_lose_or_repeat_a_task() {
    let rt = Arc::new(
        Runtime::builder()
            .workers(3)
            .idle_spin(Duration::from_micros(5))
            .build()
            .expect("runtime"),
    );
    let places = rt.topology().places();
    let tasks = 24;
    let count = Arc::new(AtomicUsize::new(0));
    let mut g = TaskGraph::new();
    let mut rng = StdRng::seed_from_u64(5);
    let mut ids = Vec::new();
    for i in 0..tasks {
        let c = count.clone();
        let place = places[rng.random_range(0..places.len())];
        let id = g.add(
            Task::new("t", move |ctx| {
                ctx.barrier();
                if ctx.rank() == 0 {
                    c.fetch_add(1, Ordering::SeqCst);
                }
            })
            .on(place),
        );
        if i % 3 == 2 {
            g.make_edge(ids[i - 1], id); // a few chains among the sinks
        }
        ids.push(id);
    }
    let graph = Arc::new(rt.prepare(g).expect("prepares"));
    let runs = 2000;
    let c = count.clone();
    common::within(Duration::from_secs(120), "2000 prepared runs", move || {
        for run in 1..=runs {
            rt.run_prepared(&graph).expect("runs");
            assert_eq!(c.load(Ordering::SeqCst), run * tasks, "after run {run}");
        }
    });
    assert_eq!(count.load(Ordering::SeqCst), runs * tasks);
}
