//! Stress: big seeded random DAGs with panics injected at random, and overlapping gangs of
//! every width submitted from several threads at once, on pools of 2 to 8 workers (more
//! workers than cores is fine: it only makes the interleavings stranger).
//!
//! The sizes here keep each test to a few seconds in release on 2 cores; with
//! `TAOPIPE_STRESS=full` they are the full ones (a DAG of 10^6 tasks, 10^6 tasks over
//! 1000 graphs): `scripts/stress.sh` runs them so.
//!
//! What a failure means, per graph: the first panic fails the graph, and every task that
//! has not started by then is cancelled (runtime/README.md, "Failure"). So a graph with
//! no injected panic runs every rank of every task exactly once, after all of its
//! predecessors; a graph with one returns an error naming an injected panic (never the
//! follow-up panics of the gang ranks its broken barrier releases), no rank runs twice,
//! no task starts before its predecessors finished, and nothing downstream of a panic
//! runs.

mod common;

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use taopipe_runtime::{
    Place, Placement, Runtime, RuntimeError, SharedSlice, Task, TaskGraph, TaskId,
};

use common::{INJECTED, quiet_injected_panics};

/// Whether to run the full sizes (`TAOPIPE_STRESS=full`).
fn full() -> bool {
    std::env::var("TAOPIPE_STRESS").is_ok_and(|v| v == "full")
}

/// The CI size, or the full one.
fn size(ci: usize, full_size: usize) -> usize {
    if full() { full_size } else { ci }
}

/// A random DAG's shape: placements, predecessors (edges only point forward, so it is
/// acyclic by construction), and which rank of which task panics.
struct Dag {
    placements: Vec<Placement>,
    /// Predecessors of task `i`: `pred[pred_start[i]..pred_start[i + 1]]`.
    pred_start: Vec<u32>,
    pred: Vec<u32>,
    /// Per task: the rank that panics, or `NO_PANIC`.
    panic_rank: Vec<u32>,
}

const NO_PANIC: u32 = u32::MAX;

impl Dag {
    /// `n` tasks on a pool of `workers`: mostly width-1 tasks (so that a big graph stays
    /// quick), and gangs of random width, fixed places and trace-table placements; up to 3
    /// predecessors among the 50 tasks before; `panics` tasks panic on a random rank
    /// (distinct tasks, so the count is exact).
    fn random(seed: u64, n: usize, workers: usize, places: &[Place], panics: usize) -> Dag {
        let mut rng = StdRng::seed_from_u64(seed);
        let placements: Vec<Placement> = (0..n)
            .map(|_| match rng.random_range(0..10) {
                0 => Placement::Width(rng.random_range(1..=workers)),
                1 => Placement::Fixed(places[rng.random_range(0..places.len())]),
                2 => Placement::Auto,
                _ => Placement::Width(1),
            })
            .collect();
        let (mut pred_start, mut pred) = (vec![0u32], Vec::new());
        for b in 0..n {
            for _ in 0..rng.random_range(0..4).min(b) {
                pred.push(rng.random_range(b.saturating_sub(50)..b) as u32);
            }
            pred_start.push(pred.len() as u32);
        }
        let mut panic_rank = vec![NO_PANIC; n];
        let mut placed = 0;
        while placed < panics.min(n) {
            let i = rng.random_range(0..n);
            if panic_rank[i] == NO_PANIC {
                // A rank beyond the gang's width never runs: the panic would not happen.
                panic_rank[i] = rng.random_range(0..width_of(placements[i]));
                placed += 1;
            }
        }
        Dag {
            placements,
            pred_start,
            pred,
            panic_rank,
        }
    }

    fn len(&self) -> usize {
        self.placements.len()
    }

    fn preds(&self, i: usize) -> &[u32] {
        &self.pred[self.pred_start[i] as usize..self.pred_start[i + 1] as usize]
    }

    fn panics(&self) -> usize {
        self.panic_rank.iter().filter(|&&r| r != NO_PANIC).count()
    }
}

/// The width a placement asks for; an `Auto` task gets 1 here (a panic on rank 0 happens
/// whatever width the trace table picks).
fn width_of(placement: Placement) -> u32 {
    match placement {
        Placement::Fixed(p) => p.width() as u32,
        Placement::Width(w) => w as u32,
        Placement::Auto => 1,
    }
}

/// What the ranks of a DAG's tasks saw, counted per task id.
struct Tally {
    /// Bit `r` set once rank `r` ran; a rank found already set is counted in `twice`.
    ranks: Vec<AtomicU32>,
    /// Ranks that got through the body (past the barrier).
    done: Vec<AtomicU32>,
    /// The gang's width as its ranks saw it.
    width: Vec<AtomicU32>,
    twice: AtomicUsize,
    /// Tasks that started before a predecessor's ranks had all finished.
    early: AtomicUsize,
}

impl Tally {
    fn new(n: usize) -> Tally {
        let zeros = || (0..n).map(|_| AtomicU32::new(0)).collect();
        Tally {
            ranks: zeros(),
            done: zeros(),
            width: zeros(),
            twice: AtomicUsize::new(0),
            early: AtomicUsize::new(0),
        }
    }
}

/// The graph of `dag`: each rank records itself, checks its predecessors finished, panics
/// if it is the chosen one, meets its gang at a barrier and counts itself done.
fn build(dag: &Arc<Dag>, tally: &Arc<Tally>) -> TaskGraph {
    let mut g = TaskGraph::with_capacity(dag.len(), dag.pred.len());
    let ids: Vec<TaskId> = (0..dag.len())
        .map(|i| {
            let placement = dag.placements[i];
            let (dag, tally) = (dag.clone(), tally.clone());
            let task = Task::new("node", move |ctx| {
                let rank = ctx.rank() as u32;
                if tally.ranks[i].fetch_or(1 << rank, Ordering::SeqCst) & (1 << rank) != 0 {
                    tally.twice.fetch_add(1, Ordering::SeqCst);
                }
                tally.width[i].store(ctx.width() as u32, Ordering::SeqCst);
                let ready = dag.preds(i).iter().all(|&p| {
                    let p = p as usize;
                    let width = tally.width[p].load(Ordering::SeqCst);
                    width > 0 && tally.done[p].load(Ordering::SeqCst) == width
                });
                if !ready {
                    tally.early.fetch_add(1, Ordering::SeqCst);
                }
                if dag.panic_rank[i] == rank {
                    panic!("{INJECTED} in task {i}");
                }
                ctx.barrier();
                tally.done[i].fetch_add(1, Ordering::SeqCst);
            });
            g.add(match placement {
                Placement::Fixed(p) => task.on(p),
                Placement::Width(w) => task.width(w),
                Placement::Auto => task.auto(),
            })
        })
        .collect();
    for b in 0..dag.len() {
        for &a in dag.preds(b) {
            g.make_edge(ids[a as usize], ids[b]);
        }
    }
    g
}

/// Checks what a run of `dag` did against how it ended (see the module docs); `what`
/// names the case in messages.
fn check(dag: &Dag, tally: &Tally, result: Result<(), RuntimeError>, what: &str) {
    assert_eq!(
        tally.twice.load(Ordering::SeqCst),
        0,
        "{what}: a rank ran twice"
    );
    assert_eq!(
        tally.early.load(Ordering::SeqCst),
        0,
        "{what}: a task started before its predecessors finished"
    );
    let ranks = |i: usize| tally.ranks[i].load(Ordering::SeqCst);
    if dag.panics() == 0 {
        result.unwrap_or_else(|e| panic!("{what}: no panic was injected, yet {e}"));
        for i in 0..dag.len() {
            let width = tally.width[i].load(Ordering::SeqCst);
            let want = match dag.placements[i] {
                Placement::Auto => width,
                other => width_of(other),
            };
            assert!(
                width > 0 && width == want && ranks(i) == (1 << want) - 1,
                "{what}: task {i} ({:?}) ran ranks {:#b} at width {width}",
                dag.placements[i],
                ranks(i)
            );
            assert_eq!(
                tally.done[i].load(Ordering::SeqCst),
                want,
                "{what}: task {i}"
            );
        }
        return;
    }
    let (index, message) = match result {
        Err(RuntimeError::TaskPanicked {
            task,
            index,
            message,
            ..
        }) => {
            assert_eq!(task, "node", "{what}");
            (index, message)
        }
        other => panic!("{what}: {} panics injected, got {other:?}", dag.panics()),
    };
    assert_eq!(
        message,
        format!("{INJECTED} in task {index}"),
        "{what}: the error names another panic than the task's own"
    );
    assert!(
        dag.panic_rank[index] != NO_PANIC && ranks(index) & (1 << dag.panic_rank[index]) != 0,
        "{what}: task {index} is named, but its panic did not happen"
    );
    // Nothing downstream of a panic that happened ran.
    let mut poisoned = vec![false; dag.len()];
    for i in 0..dag.len() {
        let upstream = dag.preds(i).iter().any(|&p| poisoned[p as usize]);
        assert!(
            !upstream || ranks(i) == 0,
            "{what}: task {i} ran downstream of a panic"
        );
        let rank = dag.panic_rank[i];
        poisoned[i] = upstream || (rank != NO_PANIC && ranks(i) & (1 << rank) != 0);
    }
}

/// One DAG of `n` tasks with `panics` injected panics, then the same DAG without them on
/// the same pool (which must run it whole).
fn big_dag(workers: usize, seed: u64, n: usize, panics: usize) {
    let rt = Runtime::builder()
        .workers(workers)
        .build()
        .expect("runtime");
    let places = rt.topology().places();
    for (case, panics) in [(0, panics), (1, 0)] {
        let what = format!("{workers} workers, seed {seed}, {n} tasks, {panics} panics");
        let dag = Arc::new(Dag::random(seed + case, n, workers, &places, panics));
        let tally = Arc::new(Tally::new(n));
        let graph = build(&dag, &tally);
        let result = rt.run(graph);
        check(&dag, &tally, result, &what);
    }
}

#[test]
fn a_big_random_dag_with_panics_then_a_clean_one() {
    quiet_injected_panics();
    let n = size(30_000, 1_000_000);
    common::within(Duration::from_secs(600), "big DAG", move || {
        big_dag(2, 1, n, 3);
        big_dag(3, 10, n / 4, 1);
    });
}

/// Many DAGs, about half of them with panics, submitted from several threads that each
/// keep a few graphs in flight; then the pool still runs a clean graph.
#[test]
fn many_random_dags_with_panics_from_many_threads() {
    quiet_injected_panics();
    let (graphs, n) = (size(64, 1000), size(400, 1000));
    common::within(Duration::from_secs(600), "many DAGs", move || {
        let rt = Arc::new(Runtime::builder().workers(4).build().expect("runtime"));
        let places = rt.topology().places();
        let next = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (rt, next, places) = (rt.clone(), next.clone(), places.clone());
                std::thread::spawn(move || {
                    let mut in_flight = std::collections::VecDeque::new();
                    let mut failed = 0;
                    loop {
                        let seed = next.fetch_add(1, Ordering::SeqCst);
                        if seed < graphs {
                            let panics = [0, 0, 1, 3][seed % 4];
                            let dag = Arc::new(Dag::random(seed as u64, n, 4, &places, panics));
                            let tally = Arc::new(Tally::new(n));
                            let handle = rt.submit(build(&dag, &tally)).expect("submits");
                            in_flight.push_back((seed, dag, tally, handle));
                        }
                        if in_flight.len() < 3 && seed < graphs {
                            continue;
                        }
                        let Some((seed, dag, tally, handle)) = in_flight.pop_front() else {
                            return failed;
                        };
                        let result = handle.wait();
                        failed += usize::from(result.is_err());
                        check(&dag, &tally, result, &format!("graph {seed}"));
                    }
                })
            })
            .collect();
        let failed: usize = threads
            .into_iter()
            .map(|t| t.join().expect("submitter"))
            .sum();
        assert_eq!(failed, graphs / 2, "the graphs with panics, and only they");
        let dag = Arc::new(Dag::random(999, n, 4, &places, 0));
        let tally = Arc::new(Tally::new(n));
        let result = rt.run(build(&dag, &tally));
        check(&dag, &tally, result, "the clean graph after");
    });
}

/// What the gang tasks of one graph produced.
struct GangLog {
    /// Per task: bit `r` set once rank `r` ran (`twice` counts repeats).
    ranks: Vec<AtomicU32>,
    twice: AtomicUsize,
    /// Ranks that saw another width than their placement asks for.
    wrong_width: AtomicUsize,
    /// Per task and item of its shared list: how often the item ran.
    items: Vec<AtomicU32>,
    /// Tasks whose rank 0 found the whole output right after the barrier.
    verified: AtomicUsize,
    /// Every task's output.
    out: Vec<SharedSlice<u64>>,
}

/// Output elements per task: prime, so that splits are uneven.
const OUT: usize = 61;
/// Items of each task's shared list, over two phases.
const ITEMS: usize = 24;

fn expected(task: usize, j: usize) -> u64 {
    (task as u64 + 1) * 1_000_003 + j as u64
}

/// A graph of `n` gangs on a pool of `workers`: every width from 1 to `workers`, as
/// `Width` or as a fixed place, with sparse edges so that many are ready at once and
/// overlap. Each rank writes its split of the task's output, claims items of a shared
/// list, meets the others at a barrier, and rank 0 then checks the whole output.
fn gang_graph(seed: u64, n: usize, workers: usize, places: &[Place]) -> (TaskGraph, Arc<GangLog>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let zeros = |k: usize| (0..k).map(|_| AtomicU32::new(0)).collect();
    let log = Arc::new(GangLog {
        ranks: zeros(n),
        twice: AtomicUsize::new(0),
        wrong_width: AtomicUsize::new(0),
        items: zeros(n * ITEMS),
        verified: AtomicUsize::new(0),
        out: (0..n).map(|_| SharedSlice::zeroed(OUT)).collect(),
    });
    let mut g = TaskGraph::new();
    let mut ids = Vec::new();
    for i in 0..n {
        let width = 1 + i % workers; // every width, in turn
        let of_width: Vec<Place> = places
            .iter()
            .copied()
            .filter(|p| p.width() == width)
            .collect();
        let placement = if rng.random_bool(0.5) || of_width.is_empty() {
            Placement::Width(width)
        } else {
            Placement::Fixed(of_width[rng.random_range(0..of_width.len())])
        };
        let log = log.clone();
        let task = Task::new("gang", move |ctx| {
            let rank = ctx.rank() as u32;
            if log.ranks[i].fetch_or(1 << rank, Ordering::SeqCst) & (1 << rank) != 0 {
                log.twice.fetch_add(1, Ordering::SeqCst);
            }
            if ctx.width() != width {
                log.wrong_width.fetch_add(1, Ordering::SeqCst);
            }
            {
                let part = ctx.split(OUT);
                let mut w = log.out[i]
                    .write(part.clone())
                    .expect("ranks write disjoint parts");
                for (x, j) in w.iter_mut().zip(part) {
                    *x = expected(i, j);
                }
            }
            ctx.share(
                2,
                |_| ITEMS / 2,
                |phase, item| {
                    log.items[i * ITEMS + phase * ITEMS / 2 + item].fetch_add(1, Ordering::SeqCst);
                },
            );
            ctx.barrier();
            if rank == 0 {
                let all = log.out[i].read().expect("every writer is past the barrier");
                if all.iter().enumerate().all(|(j, &x)| x == expected(i, j)) {
                    log.verified.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        ids.push(g.add(match placement {
            Placement::Fixed(p) => task.on(p),
            _ => task.width(width),
        }));
        if i > 0 && rng.random_bool(0.2) {
            g.make_edge(ids[rng.random_range(i.saturating_sub(8)..i)], ids[i]);
        }
    }
    (g, log)
}

fn check_gangs(log: &GangLog, n: usize, workers: usize, what: &str) {
    assert_eq!(
        log.twice.load(Ordering::SeqCst),
        0,
        "{what}: a rank ran twice"
    );
    assert_eq!(
        log.wrong_width.load(Ordering::SeqCst),
        0,
        "{what}: a gang ran at another width"
    );
    assert_eq!(
        log.verified.load(Ordering::SeqCst),
        n,
        "{what}: outputs checked after the barrier"
    );
    for i in 0..n {
        let width = 1 + i % workers;
        assert_eq!(
            log.ranks[i].load(Ordering::SeqCst),
            (1 << width) - 1,
            "{what}: ranks of task {i} (width {width})"
        );
        let out = log.out[i].read().expect("graph finished");
        assert!(
            out.iter().enumerate().all(|(j, &x)| x == expected(i, j)),
            "{what}: output of task {i}"
        );
    }
    assert!(
        log.items.iter().all(|c| c.load(Ordering::SeqCst) == 1),
        "{what}: a shared item ran twice or never"
    );
}

/// Gangs of every width 1..=workers, from 4 threads at once, on pools of 2 and of 8
/// workers (oversubscribed on a small machine: ranks of one gang then wait at barriers for
/// ranks the OS has not scheduled yet).
#[test]
fn overlapping_gangs_of_every_width_under_contention() {
    let (graphs, n) = (size(8, 200), size(150, 500));
    for workers in [2, 8] {
        common::within(
            Duration::from_secs(600),
            "gangs under contention",
            move || {
                let rt = Arc::new(
                    Runtime::builder()
                        .workers(workers)
                        .build()
                        .expect("runtime"),
                );
                let places = rt.topology().places();
                let failures = Arc::new(Mutex::new(Vec::new()));
                let threads: Vec<_> = (0..4u64)
                    .map(|t| {
                        let (rt, places, failures) = (rt.clone(), places.clone(), failures.clone());
                        std::thread::spawn(move || {
                            let mut in_flight = Vec::new();
                            for k in 0..graphs as u64 {
                                let seed = t * 1000 + k;
                                let (g, log) = gang_graph(seed, n, workers, &places);
                                in_flight.push((seed, rt.submit(g).expect("submits"), log));
                                if in_flight.len() == 2 || k + 1 == graphs as u64 {
                                    for (seed, handle, log) in in_flight.drain(..) {
                                        let what = format!("{workers} workers, graph {seed}");
                                        if let Err(e) = handle.wait() {
                                            failures
                                                .lock()
                                                .expect("lock")
                                                .push(format!("{what}: {e}"));
                                        }
                                        check_gangs(&log, n, workers, &what);
                                    }
                                }
                            }
                        })
                    })
                    .collect();
                for t in threads {
                    t.join().expect("submitter thread");
                }
                let failures = failures.lock().expect("lock");
                assert!(failures.is_empty(), "{failures:?}");
            },
        );
    }
}
