//! Benchmarks of taopipe-nets' kernels on the real VGG16 / ResNet50 conv shapes (and MobileNet
//! V1 / V2's depthwise convs).
//!
//! ```text
//! cargo bench -p taopipe-nets                      # everything
//! cargo bench -p taopipe-nets -- conv/             # criterion: every conv layer, width 1 and 2
//! TAOPIPE_BENCH_WIDTHS=1,16 cargo bench -p taopipe-nets -- conv/   # other gang widths
//! cargo bench -p taopipe-nets -- pool/             # criterion: the max pools, every ISA path
//! cargo bench -p taopipe-nets -- depthwise/        # criterion: MobileNet V1/V2's depthwise convs, GB/s
//! cargo bench -p taopipe-nets -- report            # the README tables (GFLOP/s, % of peak, GB/s)
//! ```
//!
//! Throughput is set to the layer's FLOPs, so criterion's "elem/s" read as FLOP/s (the
//! memory-bound pools and depthwise convs: bytes, so GB/s).
//! Width `w` runs on a runtime of as many workers as the widest width, each rank running
//! `Kernel::run_rank` as a model's layer task does. Peaks and bandwidths are measured in
//! the same run (`taopipe_nets::probe`).

use criterion::Criterion;

mod conv;
mod depthwise;
mod gang;
mod pool;
mod report;
mod shapes;

fn main() {
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(std::time::Duration::from_millis(200))
        .measurement_time(std::time::Duration::from_millis(600))
        .configure_from_args();
    conv::bench(&mut c);
    pool::bench(&mut c);
    depthwise::bench(&mut c);
    c.final_summary();
    report::run_if_selected();
}
