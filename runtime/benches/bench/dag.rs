//! `dag_throughput/{taopipe,rayon}/{layered,independent}`: one run of a DAG of small tasks.

use criterion::{BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput};
use taopipe_runtime::Runtime;

use crate::workload::{self, Dag, Shape};

pub(crate) fn bench(c: &mut Criterion, rt: &Runtime, pool: &rayon::ThreadPool, tasks: usize) {
    let mut group = c.benchmark_group("dag_throughput");
    // One iteration is tens of milliseconds: the same number of runs in every sample.
    group.sampling_mode(SamplingMode::Flat);
    for shape in Shape::ALL {
        let dag = Dag::generate(shape, tasks, workload::WORK_ITERS, workload::SEED);
        group.throughput(Throughput::Elements(dag.tasks as u64));
        group.bench_function(BenchmarkId::new("taopipe", shape.name()), |b| {
            b.iter_batched(
                || workload::taopipe_graph(&dag),
                |g| rt.run(g).expect("the DAG runs"),
                BatchSize::PerIteration,
            );
        });
        group.bench_function(BenchmarkId::new("rayon", shape.name()), |b| {
            b.iter_batched(
                || dag.pending(),
                |pending| {
                    workload::rayon_run(pool, &dag, &pending);
                    // Returned so that freeing the counters is not timed.
                    pending
                },
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
}
