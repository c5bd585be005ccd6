//! The workloads shared by the criterion bench (`runtime/benches/bench_main.rs`) and the
//! side-by-side example (`examples/runtime_bench.rs`, which includes this file with
//! `#[path]`): one source of truth for the DAG generator, the work function, the taopipe
//! graph builder and the rayon DAG executor, so both tools measure exactly the same thing.
//!
//! - [`work`]: the body of every small task, `iters` rounds of an integer hash (a
//!   splitmix64 finaliser), a dependent chain the compiler cannot fold or vectorise.
//! - [`Dag::generate`]: a seeded DAG of `tasks` nodes. [`Shape::Layered`]: layers of
//!   [`LAYER_WIDTH`] tasks, each task after the first layer has 1-3 distinct predecessors
//!   drawn from the previous two layers. [`Shape::Independent`]: no edges at all.
//! - [`taopipe_graph`]: the DAG as one `TaskGraph` of width-1 tasks (`Task::new`, no place),
//!   edges by `make_edge`.
//! - [`rayon_run`]: the DAG executed by `rayon::scope` on a pool: roots are spawned first;
//!   a finished task decrements its successors' atomic pending counters and `s.spawn`s
//!   each one that reaches zero, the classic dependency-counting executor.
#![allow(dead_code)]

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};

use taopipe_runtime::{Place, Runtime, Task, TaskGraph, TaskId};

/// Tasks per layer of [`Shape::Layered`]: far more than the worker count, so every layer
/// has parallel slack and the measurement is about scheduling, not the critical path.
pub(crate) const LAYER_WIDTH: usize = 100;

/// Default seed of the DAG generator.
pub(crate) const SEED: u64 = 0x7a0_91be_5eed;

/// Default size of a DAG.
pub(crate) const TASKS: usize = 20_000;

/// Default rounds of the hash per task (about 1 µs of work on a current x86 core).
pub(crate) const WORK_ITERS: u32 = 500;

/// The work of one small task: `iters` rounds of a splitmix64-style integer hash.
#[inline(never)]
pub(crate) fn work(seed: u64, iters: u32) -> u64 {
    let mut x = black_box(seed);
    for _ in 0..black_box(iters) {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^= x >> 31;
    }
    x
}

/// A small deterministic PRNG (splitmix64), so the DAG does not depend on a `rand` version
/// and the example needs no extra dependency.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix(u64);

impl SplitMix {
    pub(crate) fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`; the modulo bias is irrelevant here).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Which DAG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Layers of [`LAYER_WIDTH`] tasks; 1-3 predecessors in the previous two layers.
    Layered,
    /// No edges: `tasks` independent tasks.
    Independent,
}

impl Shape {
    pub(crate) const ALL: [Shape; 2] = [Shape::Layered, Shape::Independent];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Shape::Layered => "layered",
            Shape::Independent => "independent",
        }
    }
}

/// A DAG in compressed form: successors of node `i` are
/// `succ_targets[succ_start[i]..succ_start[i + 1]]`.
#[derive(Debug, Clone)]
pub(crate) struct Dag {
    pub(crate) shape: Shape,
    pub(crate) tasks: usize,
    pub(crate) succ_start: Vec<u32>,
    pub(crate) succ_targets: Vec<u32>,
    /// Number of predecessors of each node.
    pub(crate) indegree: Vec<u32>,
    /// Nodes without predecessors, ascending.
    pub(crate) roots: Vec<u32>,
    /// Seed of each task's work (its index mixed with the DAG seed).
    pub(crate) work_seed: Vec<u64>,
    pub(crate) iters: u32,
}

impl Dag {
    /// A seeded DAG of `tasks` tasks of `iters` hash rounds each.
    pub(crate) fn generate(shape: Shape, tasks: usize, iters: u32, seed: u64) -> Dag {
        let mut rng = SplitMix::new(seed);
        let mut edges: Vec<(u32, u32)> = Vec::new();
        if shape == Shape::Layered {
            for node in LAYER_WIDTH..tasks {
                let layer_start = node / LAYER_WIDTH * LAYER_WIDTH;
                // Candidates: the previous two layers (only one before layer 2).
                let lo = layer_start.saturating_sub(2 * LAYER_WIDTH);
                let span = layer_start - lo;
                let want = 1 + rng.below(3);
                let mut preds: Vec<u32> = Vec::with_capacity(want);
                while preds.len() < want {
                    let p = (lo + rng.below(span)) as u32;
                    if !preds.contains(&p) {
                        preds.push(p);
                    }
                }
                edges.extend(preds.into_iter().map(|p| (p, node as u32)));
            }
        }
        edges.sort_unstable();
        let mut succ_start = vec![0u32; tasks + 1];
        let mut indegree = vec![0u32; tasks];
        for &(from, to) in &edges {
            succ_start[from as usize + 1] += 1;
            indegree[to as usize] += 1;
        }
        for i in 0..tasks {
            succ_start[i + 1] += succ_start[i];
        }
        let succ_targets = edges.iter().map(|&(_, to)| to).collect();
        let roots = (0..tasks as u32)
            .filter(|&i| indegree[i as usize] == 0)
            .collect();
        let work_seed = (0..tasks as u64).map(|i| i ^ seed).collect();
        Dag {
            shape,
            tasks,
            succ_start,
            succ_targets,
            indegree,
            roots,
            work_seed,
            iters,
        }
    }

    /// Number of edges.
    pub(crate) fn edges(&self) -> usize {
        self.succ_targets.len()
    }

    /// Successors of `node`.
    pub(crate) fn succs(&self, node: usize) -> &[u32] {
        &self.succ_targets[self.succ_start[node] as usize..self.succ_start[node + 1] as usize]
    }

    /// Number of layers (the critical path in tasks).
    pub(crate) fn depth(&self) -> usize {
        match self.shape {
            Shape::Layered => self.tasks.div_ceil(LAYER_WIDTH),
            Shape::Independent => 1,
        }
    }

    /// Fresh pending counters for one [`rayon_run`] (untimed setup).
    pub(crate) fn pending(&self) -> Vec<AtomicU32> {
        self.indegree.iter().map(|&d| AtomicU32::new(d)).collect()
    }

    /// Runs every task's work on the calling thread, in index order (a topological
    /// order): the sequential reference for the per-task work.
    pub(crate) fn run_serial(&self) {
        for &s in &self.work_seed {
            black_box(work(s, self.iters));
        }
    }
}

/// The DAG as one taopipe graph of width-1 tasks that run wherever a worker is free
/// (untimed setup: one `Arc` closure per task plus the edge lists).
pub(crate) fn taopipe_graph(dag: &Dag) -> TaskGraph {
    let mut g = TaskGraph::new();
    let iters = dag.iters;
    let ids: Vec<TaskId> = dag
        .work_seed
        .iter()
        .map(|&seed| {
            g.add(Task::new("dag", move |_| {
                black_box(work(seed, iters));
            }))
        })
        .collect();
    for from in 0..dag.tasks {
        for &to in dag.succs(from) {
            g.make_edge(ids[from], ids[to as usize]);
        }
    }
    g
}

/// Executes the DAG with `rayon::scope` on `pool`: roots are spawned first; each task, once
/// done, decrements its successors' counters and spawns those that reach zero. `pending`
/// must come fresh from [`Dag::pending`]. Returns when every task has run.
pub(crate) fn rayon_run(pool: &rayon::ThreadPool, dag: &Dag, pending: &[AtomicU32]) {
    pool.install(|| {
        rayon::scope(|s| {
            for &r in &dag.roots {
                s.spawn(move |s| rayon_task(s, dag, pending, r as usize));
            }
        });
    });
}

fn rayon_task<'s>(s: &rayon::Scope<'s>, dag: &'s Dag, pending: &'s [AtomicU32], node: usize) {
    black_box(work(dag.work_seed[node], dag.iters));
    for &succ in dag.succs(node) {
        if pending[succ as usize].fetch_sub(1, Ordering::AcqRel) == 1 {
            s.spawn(move |s| rayon_task(s, dag, pending, succ as usize));
        }
    }
}

/// Whether a [`rayon_run`] completed: every counter reached zero (every non-root had all
/// its predecessors run, hence was spawned; roots are always spawned).
pub(crate) fn rayon_completed(pending: &[AtomicU32]) -> bool {
    pending.iter().all(|p| p.load(Ordering::Relaxed) == 0)
}

/// The widths of the fork-join measurement: powers of two below `workers`, then `workers`.
pub(crate) fn fork_join_widths(workers: usize) -> Vec<usize> {
    let mut widths: Vec<usize> = std::iter::successors(Some(1usize), |w| w.checked_mul(2))
        .take_while(|&w| w < workers)
        .collect();
    widths.push(workers.max(1));
    widths
}

/// taopipe's fork-join: `rt.run_on(Place::new(0, w), body)`, every rank running
/// `work(rank, iters)` (`iters = 0`: an empty body, pure runtime overhead).
pub(crate) fn taopipe_fork_join(rt: &Runtime, w: usize, iters: u32) {
    rt.run_on(Place::new(0, w), move |ctx| {
        black_box(work(ctx.rank() as u64, iters));
    })
    .expect("fork-join runs");
}

/// The rayon counterpart of taopipe's `run_on(Place::new(0, w), body)` on a pool of
/// `threads` threads.
///
/// - `w == threads`: `pool.broadcast`, the rayon primitive that runs the body once on every
///   thread of the pool and waits: like a taopipe gang, it guarantees `w` distinct threads.
/// - `w < threads`: `pool.install(|| rayon::scope(..))` spawning ranks `1..w` and running
///   rank 0 on the installing thread. Rayon may run several ranks on one thread (a spawned
///   job nobody stole in time is popped back by its owner), so for a near-empty body this
///   is a lower bound of a real `w`-way fork-join, which taopipe's gangs always perform.
pub(crate) fn rayon_fork_join(pool: &rayon::ThreadPool, threads: usize, w: usize, iters: u32) {
    if w >= threads {
        rayon_broadcast(pool, iters);
    } else {
        rayon_scope_fork_join(pool, w, iters);
    }
}

/// `pool.broadcast`: the body once on every thread of the pool.
pub(crate) fn rayon_broadcast(pool: &rayon::ThreadPool, iters: u32) {
    pool.broadcast(|ctx| {
        black_box(work(ctx.index() as u64, iters));
    });
}

/// `pool.install(|| rayon::scope(..))` with `w` ranks, rank 0 inline.
pub(crate) fn rayon_scope_fork_join(pool: &rayon::ThreadPool, w: usize, iters: u32) {
    pool.install(|| {
        rayon::scope(|s| {
            for r in 1..w {
                s.spawn(move |_| {
                    black_box(work(r as u64, iters));
                });
            }
            black_box(work(0, iters));
        });
    });
}

/// A rayon pool of `threads` threads.
pub(crate) fn rayon_pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("rayon-w{i}"))
        .build()
        .expect("a rayon pool builds")
}
