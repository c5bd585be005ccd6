//! Criterion group `pool/`: the max pools of ResNet50, AlexNet and VGG16 at gang width 1
//! and 2, on every ISA path this CPU has (each path's own pooling kernels against the
//! others, in the same run). Throughput is the input's bytes, so criterion's rate reads
//! as the GB/s the pool streams its input at.

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput};
use taopipe_nets::{Isa, Kernel, Pool2d};
use taopipe_runtime::Runtime;

use crate::gang::Gang;
use crate::shapes::{self, POOLS};

pub(crate) fn bench(c: &mut Criterion) {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let mut g = c.benchmark_group("pool");
    for layer in &POOLS {
        let x: Vec<f32> = (0..layer.input.len()).map(shapes::value).collect();
        g.throughput(Throughput::Bytes(4 * layer.input.len() as u64));
        for isa in Isa::available() {
            let pool = Pool2d::new(layer.params, layer.input)
                .and_then(|p| p.with_isa(isa))
                .expect("table pools are valid");
            let pool: Arc<dyn Kernel> = Arc::new(pool);
            for width in [1, 2] {
                let gang = Gang::new(pool.clone(), vec![x.clone()], width);
                let id = BenchmarkId::new(format!("w{width}/{isa}"), layer.name);
                g.bench_function(id, |b| b.iter(|| gang.run(&rt)));
            }
        }
    }
    g.finish();
}
