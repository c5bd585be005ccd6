//! `fork_join/{taopipe,rayon}/w{w}`: latency of one fork-join of width w with empty ranks.

use criterion::{BenchmarkId, Criterion};
use taopipe_runtime::Runtime;

use crate::workload;

pub(crate) fn bench(c: &mut Criterion, rt: &Runtime, pool: &rayon::ThreadPool) {
    let threads = rt.num_workers();
    let mut group = c.benchmark_group("fork_join");
    for w in workload::fork_join_widths(threads) {
        let id = format!("w{w}");
        group.bench_function(BenchmarkId::new("taopipe", &id), |b| {
            b.iter(|| workload::taopipe_fork_join(rt, w, 0))
        });
        group.bench_function(BenchmarkId::new("rayon", &id), |b| {
            b.iter(|| workload::rayon_fork_join(pool, threads, w, 0))
        });
    }
    group.finish();
}
