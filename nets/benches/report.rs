//! The `report` pseudo-group: the tables of the README's "Kernels" section, printed as
//! Markdown (not criterion: each number is the best of a few runs, which on a shared
//! machine is the least noisy statistic). Runs when no filter is given or the filter
//! contains "report":
//!
//! ```text
//! cargo bench -p taopipe-nets -- report
//! ```

use std::sync::Arc;
use std::time::Instant;

use taopipe_nets::{Conv2d, ConvAlgo, GemmImpl, Kernel, Scratch};
use taopipe_runtime::Runtime;

use crate::conv::build;
use crate::gang::Gang;
use crate::shapes;

/// Best seconds per call of `f` over runs totalling at least `min_secs` (at least 2 runs,
/// after one warm-up call).
pub(crate) fn best_time(f: &mut dyn FnMut(), min_secs: f64) -> f64 {
    f();
    let start = Instant::now();
    let mut best = f64::MAX;
    let mut runs = 0;
    while runs < 2 || start.elapsed().as_secs_f64() < min_secs {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64());
        runs += 1;
    }
    best
}

fn peak() -> f64 {
    std::env::var("TAOPIPE_PEAK_GFLOPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100.0)
}

/// Whether the command line selects the report.
fn selected() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--test" || a == "--list") {
        return false;
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    filters.is_empty() || filters.iter().any(|f| f.contains("report"))
}

pub(crate) fn run_if_selected() {
    if !selected() {
        return;
    }
    let peak = peak();
    println!(
        "\n## GEMM: one layer as one GEMM (m = K, n = OH·OW, k = C·kh·kw), 1 thread, GFLOP/s\n"
    );
    println!("| layer | m | n | k | gemm crate | matrixmultiply | naive |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for layer in shapes::all() {
        let p = layer.params;
        let out = p.out_shape(layer.input).expect("valid");
        let (m, n, k) = (
            p.out_channels,
            out.plane(),
            p.in_channels * p.kernel.0 * p.kernel.1,
        );
        let flops = 2.0 * (m * n * k) as f64;
        let gf = |imp, secs| flops / crate::gemm::time_gemm(imp, m, n, k, secs) / 1e9;
        println!(
            "| {} | {m} | {n} | {k} | {:.1} | {:.1} | {:.1} |",
            layer.name,
            gf(GemmImpl::Faer, 0.15),
            gf(GemmImpl::MatrixMultiply, 0.15),
            gf(GemmImpl::Naive, 0.0)
        );
    }

    let rt = Runtime::builder().workers(2).build().expect("runtime");
    println!("\n## Conv layers, GFLOP/s (peak {peak} GFLOP/s per core; w2 % is of 2 × peak)\n");
    println!("w1, w2: default algorithm and GEMM through the runtime at gang width 1 and 2.");
    println!("Then, on the bench thread without the runtime (1 thread): the default, the other");
    println!(
        "algorithms that apply (— when not applicable or the default), the default with matrixmultiply.\n"
    );
    println!(
        "| layer | in → out | GFLOP | algo | chunks | w1 | w1 % | w2 | w2 % | w2/w1 | direct | pointwise | shifted | im2col | matrixmultiply |"
    );
    println!("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let (mut total_flops, mut total_w1, mut total_w2) = (0.0, 0.0, 0.0);
    for layer in shapes::all() {
        let (conv, x) = build(layer);
        let flops = conv.flops() as f64;
        let kernel_gf = |c: Conv2d| {
            let mut scratch = Scratch::new();
            let mut out = vec![0.0; c.out_shape().len()];
            let secs = best_time(
                &mut || c.compute_chunks(&[&x], 0..c.chunks(), &mut out, &mut scratch),
                0.1,
            );
            flops / secs / 1e9
        };
        // A/B: the default on this thread without the runtime, the other applicable
        // algorithms, and the other GEMM.
        let direct = kernel_gf(conv.clone());
        let alt = |algo: ConvAlgo| {
            if algo != conv.algo() && algo.applies(conv.params()) {
                format!(
                    "{:.1}",
                    kernel_gf(conv.clone().with_algo(algo).expect("applies"))
                )
            } else {
                "—".to_string()
            }
        };
        let (pointwise, shifted, im2col) = (
            alt(ConvAlgo::Pointwise),
            alt(ConvAlgo::Shifted),
            alt(ConvAlgo::Im2col),
        );
        let mm = kernel_gf(conv.clone().with_gemm(GemmImpl::MatrixMultiply));
        let (algo, chunks, shape_in, shape_out) = (
            conv.algo(),
            conv.chunks(),
            conv.in_shape(),
            conv.out_shape(),
        );
        let conv: Arc<dyn Kernel> = Arc::new(conv);
        let mut gf = [0.0; 2];
        let mut outputs = Vec::new();
        for (i, width) in [1, 2].into_iter().enumerate() {
            let gang = Gang::new(conv.clone(), vec![x.clone()], width);
            let secs = best_time(&mut || gang.run(&rt), 0.2);
            gf[i] = flops / secs / 1e9;
            total_w1 += if width == 1 { secs } else { 0.0 };
            total_w2 += if width == 2 { secs } else { 0.0 };
            outputs.push(gang.output());
        }
        let same = outputs[0]
            .iter()
            .zip(&outputs[1])
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{}: width 2 differs from width 1", layer.name);
        total_flops += flops;
        println!(
            "| {} | {} → {} | {:.3} | {} | {} | {:.1} | {:.0}% | {:.1} | {:.0}% | {:.2} | {:.1} | {} | {} | {} | {:.1} |",
            layer.name,
            shape_in,
            shape_out,
            flops / 1e9,
            algo.name(),
            chunks,
            gf[0],
            100.0 * gf[0] / peak,
            gf[1],
            100.0 * gf[1] / (2.0 * peak),
            gf[1] / gf[0],
            direct,
            pointwise,
            shifted,
            im2col,
            mm
        );
    }
    println!(
        "\nAll {} layers: {:.2} GFLOP; width 1 {:.1} GFLOP/s, width 2 {:.1} GFLOP/s (sum of best times); width 2 output bit-identical to width 1 for every layer.",
        shapes::VGG16.len() + shapes::RESNET50.len(),
        total_flops / 1e9,
        total_flops / total_w1 / 1e9,
        total_flops / total_w2 / 1e9
    );
}
