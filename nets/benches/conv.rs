//! Criterion group `conv/`: every VGG16 and AlexNet conv layer and every distinct ResNet50
//! conv shape, at gang widths 1 and 2 on the taopipe runtime (`TAOPIPE_BENCH_WIDTHS=1,16`
//! picks others, for a wider machine), with the algorithm `ConvAlgo::choose` picks.

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput};
use taopipe_nets::{Conv2d, Kernel};
use taopipe_runtime::Runtime;

use crate::gang::Gang;
use crate::shapes::{self, ConvLayer};

/// A conv for `layer` with deterministic pseudo-random weights, and an input.
pub(crate) fn build(layer: &ConvLayer) -> (Conv2d, Vec<f32>) {
    let p = layer.params;
    let w: Vec<f32> = (0..p.weight_len())
        .map(|i| shapes::value(i) * 0.05)
        .collect();
    let b: Vec<f32> = (0..p.out_channels)
        .map(|i| shapes::value(i + 7) * 0.1)
        .collect();
    let x: Vec<f32> = (0..layer.input.len())
        .map(|i| shapes::value(i + 13))
        .collect();
    (
        Conv2d::new(p, layer.input, w, Some(b)).expect("table shapes are valid"),
        x,
    )
}

pub(crate) fn bench(c: &mut Criterion) {
    let widths = widths();
    let workers = widths.iter().copied().max().unwrap_or(1);
    let rt = Runtime::builder()
        .workers(workers)
        .build()
        .expect("runtime");
    let mut g = c.benchmark_group("conv");
    for layer in shapes::all()
        .chain(&shapes::ALEXNET)
        .chain(&shapes::SQUEEZENET)
    {
        let (conv, x) = build(layer);
        g.throughput(Throughput::Elements(conv.flops()));
        let conv: Arc<dyn Kernel> = Arc::new(conv);
        for &width in &widths {
            let gang = Gang::new(conv.clone(), vec![x.clone()], width);
            g.bench_function(BenchmarkId::new(format!("w{width}"), layer.name), |b| {
                b.iter(|| gang.run(&rt))
            });
        }
    }
    g.finish();
}

/// The gang widths to bench: `TAOPIPE_BENCH_WIDTHS` (a comma-separated list), else 1 and 2.
pub(crate) fn widths() -> Vec<usize> {
    let Ok(list) = std::env::var("TAOPIPE_BENCH_WIDTHS") else {
        return vec![1, 2];
    };
    list.split(',')
        .map(|w| match w.trim().parse::<usize>() {
            Ok(w) if w > 0 => w,
            _ => panic!(
                "TAOPIPE_BENCH_WIDTHS={list:?}: {w:?} is not a width (a whole number from 1)"
            ),
        })
        .collect()
}
