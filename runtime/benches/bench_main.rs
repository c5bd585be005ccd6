//! Criterion benchmarks of the taopipe runtime, side by side with rayon on the same work in
//! the same process.
//!
//! # Running
//!
//! ```text
//! cargo bench -p taopipe-runtime                                   # everything (a few minutes on 2 cores)
//! cargo bench -p taopipe-runtime -- dag_throughput                 # one group
//! cargo bench -p taopipe-runtime -- 'fork_join/taopipe'            # one runtime
//! cargo bench -p taopipe-runtime -- --save-baseline main           # record a baseline ...
//! cargo bench -p taopipe-runtime -- --baseline main                # ... and compare a change against it
//! ```
//!
//! Environment: `TAOPIPE_BENCH_WORKERS=N` uses `N` unpinned virtual workers
//! (`Runtime::builder().workers(N)`) instead of the detected, pinned topology
//! (`Runtime::new()`, which also honours `TAOPIPE_LAYOUT`); `TAOPIPE_BENCH_TASKS=N` changes
//! the DAG size (default 20 000). The rayon pool always has as many threads as the runtime
//! has workers. For a one-shot table with the taopipe/rayon ratios (and JSON), run the
//! example instead: `cargo run --release --example runtime_bench -- --help`.
//!
//! # Groups
//!
//! - `dag_throughput/{taopipe,rayon}/{layered,independent}`, throughput in tasks: one run
//!   of a seeded DAG of 20 000 small tasks (each `work(seed, 500)`, about a microsecond of
//!   integer hashing; see `bench/workload.rs`). `layered`: layers of 100 tasks, each task
//!   with 1-3 predecessors in the previous two layers; `independent`: no edges.
//!   - taopipe: the timed region is `rt.run(graph)`: validation, the cycle check and
//!     node setup of `submit`, the run itself, the wait, and dropping the graph's state.
//!     Building the `TaskGraph` (one boxed closure per task, the edges) is untimed setup
//!     (`iter_batched`, one graph per iteration).
//!   - rayon: the timed region is `pool.install(|| rayon::scope(..))`: roots spawned first,
//!     every finished task decrements its successors' atomic counters and spawns those
//!     reaching zero. Allocating the fresh counters is untimed setup.
//! - `fork_join/{taopipe,rayon}/w{w}`, w = 1, 2, 4, … below the worker count, then the
//!   worker count: the latency of one fork-join whose ranks do nothing (`work(rank, 0)`).
//!   - taopipe: `rt.run_on(Place::new(0, w), body)` (a one-task graph on a fixed place:
//!     every worker of the place runs the body, then the caller wakes up).
//!   - rayon: at w = threads, `pool.broadcast(body)` (every thread runs it, like a gang);
//!     below, `pool.install(|| rayon::scope(|s| { spawn ranks 1..w; run rank 0 }))`, which
//!     rayon may run on fewer than w threads, so it is a lower bound for rayon.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use taopipe_runtime::Runtime;

#[path = "bench/dag.rs"]
mod dag;
#[path = "bench/fork_join.rs"]
mod fork_join;
#[path = "bench/workload.rs"]
mod workload;

/// The runtime under test: `TAOPIPE_BENCH_WORKERS` virtual workers, or the detected topology.
fn runtime() -> Runtime {
    let workers = std::env::var("TAOPIPE_BENCH_WORKERS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok());
    match workers {
        Some(n) => Runtime::builder().workers(n).build(),
        None => Runtime::new(),
    }
    .expect("the benchmark runtime builds")
}

fn tasks() -> usize {
    std::env::var("TAOPIPE_BENCH_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(workload::TASKS)
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

fn dag_throughput(c: &mut Criterion) {
    let rt = runtime();
    let pool = workload::rayon_pool(rt.num_workers());
    dag::bench(c, &rt, &pool, tasks());
}

fn fork_join(c: &mut Criterion) {
    let rt = runtime();
    let pool = workload::rayon_pool(rt.num_workers());
    fork_join::bench(c, &rt, &pool);
}

criterion_group! {
    name = benches;
    config = config();
    targets = dag_throughput, fork_join
}
criterion_main!(benches);
