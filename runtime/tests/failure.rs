//! Failure: a panicking task is an error for whoever waits (never a hang or an abort),
//! and dropping a runtime with work in flight shuts it down cleanly.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use taopipe_runtime::{Place, Runtime, RuntimeError, Task, TaskGraph};

#[test]
fn a_panic_is_reported_and_successors_are_cancelled() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let after = Arc::new(AtomicUsize::new(0));
    let mut g = TaskGraph::new();
    let a = g.add(Task::new("fine", |_| {}));
    let b = g.add(Task::new("boom", |_| panic!("layer 7 exploded")));
    let a2 = after.clone();
    let c = g.add(Task::new("after", move |_| {
        a2.fetch_add(1, Ordering::SeqCst);
    }));
    g.make_edge(a, b);
    g.make_edge(b, c);
    let err = common::within(Duration::from_secs(30), "panicking graph", move || {
        rt.run(g).map(|_| rt)
    })
    .expect_err("panic");
    match err {
        RuntimeError::TaskPanicked {
            ref task,
            index,
            ref message,
            ..
        } => {
            assert_eq!(
                (task.as_str(), index, message.as_str()),
                ("boom", 1, "layer 7 exploded")
            );
        }
        other => panic!("expected TaskPanicked, got {other:?}"),
    }
    assert_eq!(
        after.load(Ordering::SeqCst),
        0,
        "a successor of the panicking task ran"
    );
}

#[test]
fn a_panicking_rank_breaks_the_barrier_instead_of_hanging_its_gang() {
    let rt = Runtime::builder().workers(3).build().expect("runtime");
    let err = common::within(
        Duration::from_secs(30),
        "gang with a panicking rank",
        move || {
            let r = rt.run_on(Place::new(0, 3), |ctx| {
                if ctx.rank() == 1 {
                    panic!("rank 1 fails");
                }
                ctx.barrier();
            });
            // The runtime is still usable afterwards.
            rt.run_on(Place::new(0, 3), |ctx| ctx.barrier())
                .expect("next gang runs");
            r
        },
    )
    .expect_err("panic");
    assert!(
        err.to_string().contains("rank 1 fails"),
        "the first panic is reported: {err}"
    );
}

/// A rank that panics inside `share` releases the ranks waiting for its phase to finish.
#[test]
fn a_panicking_item_releases_ranks_waiting_for_its_phase() {
    let rt = Runtime::builder().workers(3).build().expect("runtime");
    let err = common::within(
        Duration::from_secs(30),
        "share with a panicking item",
        move || {
            let r = rt.run_on(Place::new(0, 3), |ctx| {
                ctx.share(
                    2,
                    |_| 3,
                    |phase, item| {
                        if phase == 0 && item == 1 {
                            panic!("item 1 fails");
                        }
                    },
                );
            });
            rt.run_on(Place::new(0, 3), |ctx| ctx.share(1, |_| 9, |_, _| {}))
                .expect("next gang runs");
            r
        },
    )
    .expect_err("panic");
    assert!(
        err.to_string().contains("item 1 fails"),
        "the first panic is reported: {err}"
    );
}

/// A gang whose graph fails after one rank started the body and before another took its
/// turn: the late rank skips the body, and the one that started must not wait for it at
/// the barrier forever. Rank 0 (worker 0) starts at once; worker 1 first runs a task that
/// panics once rank 0 is in, then reaches its rank of the gang. Before the fix, worker 0
/// spun at the barrier for good and the graph never ended (found by `tests/stress.rs`).
#[test]
fn a_rank_skipped_after_a_failure_releases_the_ranks_that_started() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let started = Arc::new(AtomicUsize::new(0));
    let mut g = TaskGraph::new();
    let s = started.clone();
    g.add(
        Task::new("boom", move |_| {
            while s.load(Ordering::SeqCst) == 0 {
                std::thread::yield_now();
            }
            panic!("boom after the gang started");
        })
        .on(Place::new(1, 1)),
    );
    let s = started.clone();
    g.add(
        Task::new("gang", move |ctx| {
            s.fetch_add(1, Ordering::SeqCst);
            ctx.barrier();
        })
        .on(Place::new(0, 2)),
    );
    let err = common::within(Duration::from_secs(30), "gang after a failure", move || {
        let r = rt.run(g);
        rt.run_on(Place::new(0, 2), |ctx| ctx.barrier())
            .expect("the pool still runs gangs");
        r
    })
    .expect_err("boom");
    assert!(
        err.to_string().contains("boom after the gang started"),
        "{err}"
    );
    assert_eq!(
        started.load(Ordering::SeqCst),
        1,
        "only rank 0 started the gang"
    );
}

#[test]
fn the_runtime_survives_many_panics() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    for i in 0..50 {
        let mut g = TaskGraph::new();
        for j in 0..10 {
            g.add(
                Task::new("maybe", move |_| {
                    assert!(j != i % 10, "task {j} of graph {i}")
                })
                .width(1 + j % 2),
            );
        }
        assert!(rt.run(g).is_err());
    }
    rt.run_on(Place::new(0, 2), |_| {}).expect("still works");
}

#[test]
fn dropping_the_runtime_with_tasks_in_flight_cancels_the_rest_cleanly() {
    let started = Arc::new(AtomicUsize::new(0));
    let handle = common::within(Duration::from_secs(30), "shutdown", {
        let started = started.clone();
        move || {
            let rt = Runtime::builder().workers(2).build().expect("runtime");
            let mut g = TaskGraph::new();
            let mut prev = None;
            for i in 0..1000 {
                let started = started.clone();
                let place = Place::new(0, 1 + i % 2);
                let t = g.add(
                    Task::new("slow", move |ctx| {
                        if ctx.rank() == 0 {
                            started.fetch_add(1, Ordering::SeqCst);
                        }
                        ctx.barrier();
                        std::thread::sleep(Duration::from_millis(2));
                    })
                    .on(place),
                );
                if let Some(p) = prev {
                    g.make_edge(p, t);
                }
                prev = Some(t);
            }
            let handle = rt.submit(g).expect("submit");
            while started.load(Ordering::SeqCst) < 3 {
                std::thread::yield_now();
            }
            drop(rt); // joins the workers: returns only once they exited
            handle
        }
    });
    match handle.wait() {
        Err(RuntimeError::ShutDown { unfinished_sinks }) => {
            assert_eq!(
                unfinished_sinks, 1,
                "a chain has one sink, and it never ran"
            );
        }
        other => panic!("expected ShutDown, got {other:?}"),
    }
    let ran = started.load(Ordering::SeqCst);
    assert!(
        ran < 1000,
        "all {ran} tasks ran although the runtime was dropped"
    );
}

/// A task that holds the last reference to the runtime drops it on a worker, with another
/// graph in flight: that graph ends with `ShutDown` and everything is freed. Before the
/// fix, the drop joined its own thread, panicked ("Resource deadlock avoided"), killed the
/// worker and skipped telling the graphs, so `wait` hung (found by
/// `tests/stress_shutdown.rs`).
#[test]
fn the_last_reference_dropped_on_a_worker_shuts_the_pool_down() {
    let rt = Arc::new(Runtime::builder().workers(2).build().expect("runtime"));
    let held = Arc::new(());
    // A long chain of gangs, still running when the runtime goes.
    let mut chain = TaskGraph::new();
    let mut prev = None;
    for _ in 0..1000 {
        let h = held.clone();
        let t = chain.add(
            Task::new("chain", move |ctx| {
                let _ = &h;
                ctx.barrier();
                std::thread::sleep(Duration::from_millis(1));
            })
            .on(Place::new(0, 2)),
        );
        if let Some(p) = prev {
            chain.make_edge(p, t);
        }
        prev = Some(t);
    }
    let chain = rt.submit(chain).expect("submit");
    // A graph whose task keeps the runtime alive until the test has let go of it; the
    // handle is dropped, so the graph (and the last reference) is freed on a worker.
    let main_let_go = Arc::new(AtomicUsize::new(0));
    let (keep, go) = (rt.clone(), main_let_go.clone());
    let mut holder = TaskGraph::new();
    holder.add(Task::new("holder", move |_| {
        while go.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        let _ = &keep;
    }));
    drop(rt.submit(holder).expect("submit"));
    drop(rt);
    main_let_go.store(1, Ordering::SeqCst);
    let result = common::within(Duration::from_secs(30), "the chain's wait", move || {
        chain.wait()
    });
    assert!(
        matches!(result, Err(RuntimeError::ShutDown { .. })),
        "the chain was cut short: {result:?}"
    );
    // The workers wound down on their own and freed the chain's tasks.
    common::within(Duration::from_secs(30), "the graphs freed", move || {
        while Arc::strong_count(&held) > 1 {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

/// A gang's first rank to finish keeps its graph to spin on until the gang completes; if
/// a task of that graph holds the last reference to the runtime, the worker must let go of
/// it before it parks. Before the fix, it parked holding it: the pool stayed alive and
/// parked for good, with everything it held (found by `tests/stress_shutdown.rs`).
#[test]
fn a_worker_does_not_park_holding_the_last_reference() {
    let rt = Arc::new(Runtime::builder().workers(2).build().expect("runtime"));
    let (held, alive) = (Arc::new(()), Arc::downgrade(&rt));
    let (keep, h) = (rt.clone(), held.clone());
    let mut g = TaskGraph::new();
    g.add(
        Task::new("gang", move |ctx| {
            let _ = (&keep, &h);
            ctx.barrier();
        })
        .on(Place::new(0, 2)),
    );
    drop(rt.submit(g).expect("submit"));
    drop(rt);
    common::within(Duration::from_secs(30), "the pool freed", move || {
        while Arc::strong_count(&held) > 1 || alive.strong_count() > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

#[test]
fn dropping_an_idle_runtime_joins_its_workers_quickly() {
    common::within(Duration::from_secs(10), "idle drop", || {
        for _ in 0..20 {
            let rt = Runtime::builder().workers(4).build().expect("runtime");
            rt.run_on(Place::new(0, 4), |_| {}).expect("runs");
            drop(rt);
        }
    });
}
