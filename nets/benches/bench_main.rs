//! Benchmarks of taopipe-nets' kernels on the real VGG16 / ResNet50 conv shapes.
//!
//! ```text
//! cargo bench -p taopipe-nets                      # everything (~3 min on 2 cores)
//! cargo bench -p taopipe-nets -- gemm/             # criterion: gemm crate vs matrixmultiply
//! cargo bench -p taopipe-nets -- conv/             # criterion: every conv layer, width 1 and 2
//! cargo bench -p taopipe-nets -- report            # the README tables (GFLOP/s, % of peak)
//! ```
//!
//! Throughput is set to the layer's FLOPs, so criterion's "elem/s" read as FLOP/s.
//! Width 2 runs on a 2-worker `taopipe_runtime::Runtime`, each rank computing its own
//! chunks. `TAOPIPE_PEAK_GFLOPS` sets the single-core peak the report divides by
//! (default 100).

use criterion::Criterion;

mod conv;
mod gang;
mod gemm;
mod report;
mod shapes;

fn main() {
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(std::time::Duration::from_millis(200))
        .measurement_time(std::time::Duration::from_millis(600))
        .configure_from_args();
    gemm::bench(&mut c);
    conv::bench(&mut c);
    c.final_summary();
    report::run_if_selected();
}
