//! Unit tests of the pipeit internals: the least-squares solver, the chunk rule, the layer
//! descriptors' folding rules and the multi-core model.

use taopipe_dsl::{LayerKind, NetSpec, Shape, SplitMix64};

use super::desc::{Op, describe_layers};
use super::lstsq::lstsq;

fn uniform(rng: &mut SplitMix64) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

#[test]
fn lstsq_solves_consistent_systems_with_wide_column_scales() {
    let mut rng = SplitMix64::new(1);
    let x_true = [3.0, -2e-9, 5e4, 0.5];
    let scales = [1.0, 1e9, 1e-4, 1e3];
    let rows: Vec<Vec<f64>> = (0..30)
        .map(|_| {
            scales
                .iter()
                .map(|s| s * (uniform(&mut rng) + 0.1))
                .collect()
        })
        .collect();
    let b: Vec<f64> = rows
        .iter()
        .map(|r| r.iter().zip(&x_true).map(|(a, x)| a * x).sum())
        .collect();
    let s = lstsq(&rows, &b).expect("solvable");
    assert_eq!(s.rank, 4);
    for (got, want) in s.x.iter().zip(&x_true) {
        assert!((got - want).abs() <= 1e-9 * want.abs(), "{:?}", s.x);
    }
}

#[test]
fn lstsq_minimises_the_residual() {
    // an overdetermined, inconsistent system: the normal equations hold at the solution
    let mut rng = SplitMix64::new(2);
    let rows: Vec<Vec<f64>> = (0..20)
        .map(|_| (0..3).map(|_| uniform(&mut rng)).collect())
        .collect();
    let b: Vec<f64> = (0..20).map(|_| uniform(&mut rng)).collect();
    let s = lstsq(&rows, &b).expect("solvable");
    let residual: Vec<f64> = rows
        .iter()
        .zip(&b)
        .map(|(r, bi)| r.iter().zip(&s.x).map(|(a, x)| a * x).sum::<f64>() - bi)
        .collect();
    for j in 0..3 {
        let g: f64 = rows.iter().zip(&residual).map(|(r, e)| r[j] * e).sum();
        assert!(g.abs() < 1e-12, "Aᵀr[{j}] = {g}");
    }
}

#[test]
fn lstsq_drops_dependent_columns() {
    // column 2 = 2 · column 0: it gets coefficient 0, and the fit is still exact
    let rows: Vec<Vec<f64>> = (1..8)
        .map(|i| {
            let x = f64::from(i);
            vec![x, x * x, 2.0 * x, 1.0]
        })
        .collect();
    let b: Vec<f64> = rows.iter().map(|r| 3.0 * r[0] + r[1] - 1.0).collect();
    let s = lstsq(&rows, &b).expect("solvable");
    assert_eq!(s.rank, 3);
    assert_eq!(s.x.iter().filter(|&&x| x == 0.0).count(), 1);
    for (r, bi) in rows.iter().zip(&b) {
        let fit: f64 = r.iter().zip(&s.x).map(|(a, x)| a * x).sum();
        assert!((fit - bi).abs() < 1e-9);
    }
    assert!(lstsq(&[], &[]).is_none());
    assert!(lstsq(&[vec![1.0, f64::NAN]], &[1.0]).is_none());
    assert!(lstsq(&[vec![1.0], vec![1.0, 2.0]], &[1.0, 2.0]).is_none());
}

fn one(kind: LayerKind, input: Shape) -> super::LayerDesc {
    let net = NetSpec::builder("n", input)
        .layer("x", kind)
        .build()
        .expect("a one-layer net");
    describe_layers(&net)[0]
}

#[test]
fn chunk_counts_follow_the_nets_rule() {
    let conv = |k| LayerKind::Conv2d {
        out_channels: k,
        kernel: (3, 3),
        stride: (1, 1),
        padding: (1, 1),
        groups: 1,
        relu: false,
    };
    let x = Shape::new(8, 8, 8);
    // ≥ 4 channels per chunk, a multiple of 4, ≤ 32 chunks
    for (k, chunks) in [
        (3, 1),
        (4, 1),
        (16, 4),
        (36, 9),
        (64, 16),
        (100, 25),
        (128, 32),
        (129, 17),
        (2048, 32),
    ] {
        assert_eq!(one(conv(k), x).iters, chunks, "conv to {k} channels");
    }
    let fc = |f| LayerKind::Fc {
        out_features: f,
        relu: false,
    };
    // FC: ≤ 128 chunks (`FC_CHUNKS`) of any number of features
    for (f, chunks) in [
        (10, 10),
        (32, 32),
        (1000, 125),
        (4096, 128),
        (33, 33),
        (129, 65),
    ] {
        assert_eq!(one(fc(f), x).iters, chunks, "fc to {f}");
    }
    for (c, chunks) in [(3, 3), (64, 32), (96, 32), (33, 17)] {
        assert_eq!(one(LayerKind::Relu, Shape::new(c, 4, 4)).iters, chunks);
    }
    assert_eq!(one(LayerKind::Softmax, Shape::new(10, 1, 1)).iters, 1);
}

#[test]
fn descriptors_fold_and_fuse_like_the_model_builder() {
    // conv → bn → relu read by nothing else: folded and fused
    let net = NetSpec::builder("n", Shape::new(16, 8, 8))
        .conv("c1", 16, 3, 1, 1)
        .batch_norm("bn1")
        .relu("r1")
        // c2's output is read by bn2 and by the add: bn2 cannot be folded into c2
        .conv("c2", 16, 3, 1, 1)
        .batch_norm("bn2")
        .residual_add_relu("add", "c2")
        .fc("fc", 10)
        .relu("r2")
        .flatten("flat")
        .softmax("sm")
        .build()
        .expect("net");
    let ops: Vec<Op> = describe_layers(&net).iter().map(|d| d.op).collect();
    assert_eq!(
        ops,
        vec![
            Op::Gemm,
            Op::Free,
            Op::Free,
            Op::Gemm,
            Op::Elementwise,
            Op::Elementwise,
            Op::Gemv,
            Op::Free,
            Op::Free,
            Op::Elementwise
        ]
    );
    let d = describe_layers(&net);
    assert_eq!((d[5].n, d[5].k, d[5].m), (64, 2, 16)); // the add reads two tensors
    assert_eq!((d[6].n, d[6].k, d[6].m), (1, 16 * 64, 10));
}

#[test]
fn descriptors_of_grouped_depthwise_and_concat_layers() {
    let conv = |out_channels, kernel, stride, groups| LayerKind::Conv2d {
        out_channels,
        kernel: (kernel, kernel),
        stride: (stride, stride),
        padding: (kernel / 2, kernel / 2),
        groups,
        relu: false,
    };
    // depthwise (MobileNet's 3×3/2 on 64@112): N the output plane, K the taps, M channels,
    // chunks of whole channels (at most 32)
    let d = one(conv(64, 3, 2, 64), Shape::new(64, 112, 112));
    assert_eq!(
        (d.op, d.n, d.k, d.m, d.iters),
        (Op::Depthwise, 56 * 56, 9, 64, 32)
    );
    let d = one(conv(144, 5, 1, 144), Shape::new(144, 7, 7));
    assert_eq!(
        (d.op, d.n, d.k, d.m, d.iters),
        (Op::Depthwise, 49, 25, 144, 29)
    );
    let d = one(conv(3, 3, 1, 3), Shape::new(3, 8, 8));
    assert_eq!((d.op, d.iters), (Op::Depthwise, 3));
    // a channel multiplier (out ≠ in) is a grouped conv, not a depthwise one: a GEMM of
    // K = R·S·C/g, chunks of whole groups
    let g = one(conv(64, 3, 1, 32), Shape::new(32, 14, 14));
    assert_eq!((g.op, g.n, g.k, g.m, g.iters), (Op::Gemm, 196, 9, 64, 32));
    let g = one(conv(96, 3, 1, 4), Shape::new(64, 14, 14));
    assert_eq!((g.op, g.k, g.m, g.iters), (Op::Gemm, 9 * 16, 96, 4)); // 24 per group
    let g = one(conv(256, 1, 1, 8), Shape::new(128, 7, 7));
    assert_eq!((g.op, g.k, g.iters), (Op::Gemm, 16, 8)); // groups of 32 channels
    let g = one(conv(64, 1, 1, 64), Shape::new(128, 7, 7)); // 2 inputs per output
    assert_eq!((g.op, g.k, g.iters), (Op::Gemm, 2, 32));
    // a concat: a copy of every output value, chunks of the output's channels
    let net = NetSpec::builder("n", Shape::new(16, 28, 28))
        .conv_relu("a", 24, 1, 1, 0)
        .layer_from("b", LayerKind::conv(40, (3, 3), (1, 1), (1, 1)), "input")
        .concat("cat", &["a", "b", "input"])
        .build()
        .expect("net");
    let d = describe_layers(&net)[2];
    assert_eq!(
        (d.op, d.n, d.k, d.m, d.iters),
        (Op::Elementwise, 784, 1, 80, 27)
    );
}

#[test]
fn activations_fold_and_fuse_like_the_model_builder() {
    let dw = |c| LayerKind::Conv2d {
        out_channels: c,
        kernel: (3, 3),
        stride: (1, 1),
        padding: (1, 1),
        groups: c,
        relu: false,
    };
    let net = NetSpec::builder("n", Shape::new(32, 16, 16))
        // MobileNetV2: depthwise → bn → ReLU6, all one task
        .layer("dw", dw(32))
        .batch_norm("dw_bn")
        .layer("dw_relu6", LayerKind::RELU6)
        // YOLO: conv → bn → leaky ReLU, all one task
        .conv("c", 32, 3, 1, 1)
        .batch_norm("c_bn")
        .leaky_relu("c_leaky", 0.1)
        // an activation after a pool runs alone, as does a second one after it
        .max_pool("p", 2, 2)
        .clip("clip", 0.0, 6.0)
        .leaky_relu("leaky", 0.1)
        // a plain conv takes the residual add after it into its store
        .conv("c2", 32, 1, 1, 0)
        .batch_norm("c2_bn")
        .residual_add_relu("add", "leaky")
        // a depthwise conv does not, and then neither takes the activation after the add
        .layer("dw2", dw(32))
        .residual_add("add2", "add")
        .relu("after_add")
        // a conv with a ReLU of its own takes neither an add nor another activation
        .conv_relu("c3", 32, 1, 1, 0)
        .clip("c3_clip", 0.0, 1.0)
        .build()
        .expect("net");
    let ops: Vec<Op> = describe_layers(&net).iter().map(|d| d.op).collect();
    use Op::{Depthwise as D, Elementwise as E, Free as F, Gemm as G, Pool as P};
    assert_eq!(
        ops,
        vec![D, F, F, G, F, F, P, E, E, G, F, F, D, E, E, G, E],
        "{:?}",
        net.layers().iter().map(|l| l.name()).collect::<Vec<_>>()
    );
}

#[test]
fn pooling_descriptors() {
    let d = one(
        LayerKind::max_pool((3, 3), (2, 2), (1, 1)),
        Shape::new(64, 112, 112),
    );
    assert_eq!((d.op, d.n, d.k, d.m), (Op::Pool, 56 * 56, 9, 64));
    let g = one(LayerKind::GlobalAvgPool, Shape::new(2048, 7, 7));
    assert_eq!((g.op, g.n, g.k, g.m), (Op::Elementwise, 1, 49, 2048));
}

#[test]
fn eq8_on_chunks_is_fitted_and_predicted() {
    use super::predict::{Calibration, CoreType, MachineInfo, MultiCore};
    // 1 ms per NKM on one core; on w cores ρ = 0.1 of it repeated, the rest in chunks
    let truth = MultiCore {
        alpha: [0.2, 0.05, 0.3],
        repeated: 0.1,
    };
    let mut cal = Calibration::new(MachineInfo {
        description: String::new(),
        workers: 4,
        core_types: vec![CoreType::new(0, 4)],
    });
    for (n, k, m, iters) in [
        (10u64, 1, 1, 5u64),
        (20, 2, 1, 3),
        (7, 1, 3, 7),
        (30, 2, 2, 2),
        (5, 3, 1, 4),
        (40, 1, 1, 32),
    ] {
        for w in 1..=4usize {
            let d = super::LayerDesc::new(Op::Pool, n, k, m, iters);
            let t1 = (n * k * m) as f64;
            let ms = if w == 1 { t1 } else { truth.ms(t1, iters, w) };
            cal.samples.push(super::Sample {
                name: String::new(),
                desc: d,
                core_type: 0,
                width: w,
                ms,
            });
        }
    }
    let p = super::Predictor::fit(&cal).expect("fit");
    let fitted = p
        .model(Op::Pool, 0)
        .and_then(|m| m.multi)
        .expect("multi-core");
    for (got, want) in fitted.alpha.iter().zip(truth.alpha) {
        assert!((got - want).abs() < 1e-9, "{fitted:?}");
    }
    assert!(
        (fitted.repeated - truth.repeated).abs() < 1e-9,
        "{fitted:?}"
    );
    // 10 ms in 5 chunks on 2 cores: 1 repeated, then 3 chunks of (9 − 0.2)/5 + 0.05, + 0.3
    let d = super::LayerDesc::new(Op::Pool, 10, 1, 1, 5);
    let want = 1.0 + 3.0 * (8.8 / 5.0 + 0.05) + 0.3;
    assert!((p.layer_ms(&d, 0, 2).expect("2 cores") - want).abs() < 1e-9);
    // more cores than chunks: one chunk each
    let want = 1.0 + (8.8 / 5.0 + 0.05) + 0.3;
    assert!((p.layer_ms(&d, 0, 9).expect("9 cores") - want).abs() < 1e-9);
}

#[test]
fn the_calibration_report_holds_each_fitted_model_with_its_in_sample_error() {
    use super::predict::{Calibration, CoreType, MachineInfo};
    // Pooling layers at 1 ms per NKM + 0.5 ms on one core: Pool's terms fit exactly.
    let mut cal = Calibration::new(MachineInfo {
        description: String::new(),
        workers: 1,
        core_types: vec![CoreType::new(0, 1)],
    });
    for (n, k, m) in [(10u64, 1, 1), (20, 2, 1), (7, 1, 3), (30, 2, 2), (5, 3, 1)] {
        cal.samples.push(super::Sample {
            name: String::new(),
            desc: super::LayerDesc::new(Op::Pool, n, k, m, 4),
            core_type: 0,
            width: 1,
            ms: (n * k * m) as f64 + 0.5,
        });
    }
    let p = super::Predictor::fit(&cal).expect("fit");
    let exact = super::CalibrationReport::new(&cal, &p);
    // Only Pool has samples, so only Pool has a model.
    assert_eq!(exact.fit.len(), 1, "{:?}", exact.fit);
    let pool = &exact.fit[0];
    assert_eq!((pool.core_type, pool.op, pool.samples), (0, Op::Pool, 5));
    let e = pool.grid_error.expect("errors");
    assert!(e.count == 5 && e.max_abs_pct < 1e-6, "{e:?}");
    // A sample measured at twice the model's time is predicted 50 % low.
    cal.samples[2].ms *= 2.0;
    let off = super::CalibrationReport::new(&cal, &p);
    let e = off.fit[0].grid_error.expect("errors");
    assert!((e.max_abs_pct - 50.0).abs() < 1e-6, "{e:?}");
    assert!((e.mean_abs_pct - 10.0).abs() < 1e-6, "{e:?}");
    assert!(off.nets.is_empty());
}
