//! Criterion group `depthwise/`: every depthwise conv shape of MobileNet V1 and V2 at gang
//! widths 1 and 2 (`TAOPIPE_BENCH_WIDTHS` picks others), on `Isa::current` (`TAOPIPE_ISA`
//! forces a path), by the default algorithm (`w1/…`) and, right after it, the other one
//! (`planes-w1/…`): an A/B comparison taking turns in one run. Throughput is the bytes the
//! layer must move, its input and output and its weights and bias each once, so
//! criterion's rate reads as GB/s; the `report` table sets it against the copy bandwidth
//! measured in the same run.
//!
//! ```text
//! cargo bench -p taopipe-nets --bench bench_main -- depthwise/
//! cargo bench -p taopipe-nets --bench bench_main -- "depthwise/w1/v2.96x112.s2$"
//! cargo bench -p taopipe-nets --bench bench_main -- "depthwise/(planes-)?w1/v2"
//! ```

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput};
use taopipe_nets::{DepthwiseAlgo, DepthwiseConv2d, Kernel};
use taopipe_runtime::Runtime;

use crate::conv::widths;
use crate::gang::Gang;
use crate::shapes::{self, DEPTHWISE, DepthwiseLayer};

/// A layer for `layer` with deterministic pseudo-random weights and bias, and an input.
pub(crate) fn build(layer: &DepthwiseLayer) -> (DepthwiseConv2d, Vec<f32>) {
    let p = layer.params;
    let w: Vec<f32> = (0..p.weight_len())
        .map(|i| shapes::value(i) * 0.3)
        .collect();
    let b: Vec<f32> = (0..p.channels)
        .map(|i| shapes::value(i + 7) * 0.1)
        .collect();
    let x: Vec<f32> = (0..layer.input.len())
        .map(|i| shapes::value(i + 13))
        .collect();
    let dw = DepthwiseConv2d::new(p, layer.input, w, Some(b)).expect("table shapes are valid");
    (dw, x)
}

/// Bytes the layer moves at least: input, output, weights and bias, each once.
pub(crate) fn bytes(dw: &DepthwiseConv2d) -> u64 {
    let floats = dw.in_shape().len() + dw.out_shape().len() + dw.weights().len() + dw.bias().len();
    4 * floats as u64
}

pub(crate) fn bench(c: &mut Criterion) {
    let widths = widths();
    let workers = widths.iter().copied().max().unwrap_or(1);
    let rt = Runtime::builder()
        .workers(workers)
        .build()
        .expect("runtime");
    let mut g = c.benchmark_group("depthwise");
    for layer in &DEPTHWISE {
        let (dw, x) = build(layer);
        g.throughput(Throughput::Bytes(bytes(&dw)));
        let planes: Arc<dyn Kernel> = Arc::new(dw.clone().with_algo(DepthwiseAlgo::Planes));
        let dw: Arc<dyn Kernel> = Arc::new(dw);
        for &width in &widths {
            for (prefix, dw) in [("", &dw), ("planes-", &planes)] {
                let gang = Gang::new(dw.clone(), vec![x.clone()], width);
                let id = BenchmarkId::new(format!("{prefix}w{width}"), layer.name);
                g.bench_function(id, |b| b.iter(|| gang.run(&rt)));
            }
        }
    }
    g.finish();
}
