//! Criterion group `gemm/`: each GEMM implementation on a few conv GEMM shapes, both the
//! whole layer as one GEMM (`m = K`, `n = OH·OW`, `k = C·kh·kw`) and the tile the conv
//! kernels actually issue (a chunk's 4 or 16 rows × a column tile of ≈512 KiB of right
//! operand, see `conv.rs`).

use criterion::{BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use taopipe_nets::GemmImpl;
use taopipe_nets::gemm::{MatMut, MatRef, sgemm};

/// `(name, m, n, k)`.
pub(crate) const SHAPES: [(&str, usize, usize, usize); 6] = [
    ("vgg.conv2_2", 128, 12544, 1152),
    ("vgg.conv4_2", 512, 784, 4608),
    ("rn.l3.c1", 256, 196, 1024),
    ("tile.m4.vgg1_2", 4, 224, 576),
    ("tile.m16.vgg4_2", 16, 16, 4608),
    ("tile.m4.rn.l1.c1", 4, 512, 256),
];

/// Times `C = A·B` once (after a warm-up) and returns the best of `reps` runs in seconds.
pub(crate) fn time_gemm(imp: GemmImpl, m: usize, n: usize, k: usize, min_secs: f64) -> f64 {
    let a = vec![0.5f32; m * k];
    let b = vec![0.25f32; k * n];
    let mut c = vec![0.0f32; m * n];
    let mut once = || {
        sgemm(
            imp,
            m,
            n,
            k,
            MatRef { data: &a, ld: k },
            MatRef { data: &b, ld: n },
            MatMut {
                data: &mut c,
                ld: n,
            },
            false,
        )
    };
    crate::report::best_time(&mut once, min_secs)
}

pub(crate) fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("gemm");
    for (name, m, n, k) in SHAPES {
        let a = vec![0.5f32; m * k];
        let b = vec![0.25f32; k * n];
        let mut out = vec![0.0f32; m * n];
        g.throughput(Throughput::Elements(2 * (m * n * k) as u64));
        for imp in [GemmImpl::Faer, GemmImpl::MatrixMultiply] {
            g.bench_function(BenchmarkId::new(imp.name(), name), |bch| {
                bch.iter(|| {
                    sgemm(
                        imp,
                        m,
                        n,
                        k,
                        MatRef {
                            data: black_box(&a),
                            ld: k,
                        },
                        MatRef { data: &b, ld: n },
                        MatMut {
                            data: &mut out,
                            ld: n,
                        },
                        false,
                    )
                })
            });
        }
    }
    g.finish();
}
