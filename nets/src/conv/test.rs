use proptest::prelude::*;

use super::*;
use crate::gemm::GemmImpl;
use crate::naive;
use crate::test_util::{TOL, abs, assert_bit_identical, assert_close, proptest_config, random_vec};

fn random_conv(p: Conv2dParams, input: Shape, seed: u64) -> (Conv2d, Vec<f32>) {
    let w = random_vec(p.weight_len(), seed);
    let b = random_vec(p.out_channels, seed + 1);
    let x = random_vec(input.len(), seed + 2);
    let conv = Conv2d::new(p, input, w, Some(b)).expect("valid conv");
    (conv, x)
}

/// Checks `conv` with every applicable algorithm and GEMM against the naive reference.
fn check_against_naive(conv: &Conv2d, x: &[f32]) {
    let p = *conv.params();
    let input = conv.in_shape();
    let want = naive::conv2d(&p, input, x, conv.weights(), conv.bias());
    // Σ|terms| per output: the reference on absolute values (ReLU off: it would not change them).
    let scale = naive::conv2d(
        &p.with_relu(false),
        input,
        &abs(x),
        &abs(conv.weights()),
        &abs(conv.bias()),
    );
    for algo in ConvAlgo::ALL.into_iter().filter(|a| a.applies(&p)) {
        for imp in GemmImpl::ALL {
            let c = conv
                .clone()
                .with_algo(algo)
                .expect("applies")
                .with_gemm(imp);
            let got = c.forward(&[x], &mut Scratch::new());
            assert_close(
                &got,
                &want,
                &scale,
                TOL,
                &format!("{p:?} {input} {} {}", algo.name(), imp.name()),
            );
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(96))]

    #[test]
    fn conv_matches_naive(
        c in 1usize..=16, k in 1usize..=20, h in 1usize..=14, w in 1usize..=14,
        kernel in 1usize..=5, stride in 1usize..=3, padding in 0usize..=2,
        relu: bool, seed in 0u64..10_000,
    ) {
        let p = Conv2dParams::new(c, k, kernel, stride, padding).with_relu(relu);
        let input = Shape::new(c, h, w);
        prop_assume!(p.out_shape(input).is_ok());
        let (conv, x) = random_conv(p, input, seed);
        check_against_naive(&conv, &x);
    }

    /// Rectangular kernels with a different stride and padding on each axis (the
    /// synthetic nets use kernels such as 3×20 with padding 1×9).
    #[test]
    fn conv_with_per_axis_stride_and_padding_matches_naive(
        c in 1usize..=6, k in 1usize..=9, h in 1usize..=12, w in 1usize..=12,
        kh in 1usize..=5, kw in 1usize..=7, sy in 1usize..=3, sx in 1usize..=3,
        py in 0usize..=2, px in 0usize..=3, relu: bool, seed in 0u64..10_000,
    ) {
        let p = Conv2dParams {
            in_channels: c, out_channels: k, kernel: (kh, kw),
            stride: (sy, sx), padding: (py, px), relu,
        };
        let input = Shape::new(c, h, w);
        prop_assume!(p.out_shape(input).is_ok());
        let (conv, x) = random_conv(p, input, seed);
        check_against_naive(&conv, &x);
    }
}

#[test]
fn algorithm_order() {
    assert_eq!(
        ConvAlgo::choose(&Conv2dParams::new(64, 256, 1, 1, 0)),
        ConvAlgo::Pointwise
    );
    assert_eq!(
        ConvAlgo::choose(&Conv2dParams::new(64, 64, 3, 1, 1)),
        ConvAlgo::Im2col
    );
    assert_eq!(
        ConvAlgo::choose(&Conv2dParams::new(64, 64, 1, 1, 1)),
        ConvAlgo::Im2col
    );
    assert_eq!(
        ConvAlgo::choose(&Conv2dParams::new(3, 64, 7, 2, 3)),
        ConvAlgo::Im2col
    );
    assert_eq!(
        ConvAlgo::choose(&Conv2dParams::new(256, 512, 1, 2, 0)),
        ConvAlgo::Im2col
    );
    let conv = Conv2d::new(
        Conv2dParams::new(3, 8, 3, 2, 1),
        Shape::new(3, 9, 9),
        vec![0.0; 8 * 27],
        None,
    )
    .unwrap();
    assert!(matches!(
        conv.with_algo(ConvAlgo::Shifted),
        Err(KernelError::Algorithm { .. })
    ));
}

#[test]
fn multi_tile_layers_match_naive() {
    // Large enough that every algorithm runs several column tiles, and K not a multiple of 4.
    for (p, input) in [
        (
            Conv2dParams::new(64, 36, 3, 1, 1).with_relu(true),
            Shape::new(64, 40, 40),
        ),
        (Conv2dParams::new(4, 10, 3, 1, 1), Shape::new(4, 130, 130)),
        (Conv2dParams::new(70, 20, 1, 1, 0), Shape::new(70, 31, 33)),
        (Conv2dParams::new(3, 12, 7, 2, 3), Shape::new(3, 64, 60)),
    ] {
        let (conv, x) = random_conv(p, input, 7);
        check_against_naive(&conv, &x);
    }
}

#[test]
fn chunk_rule() {
    let chunks = |k: usize| {
        Conv2d::new(
            Conv2dParams::new(1, k, 1, 1, 0),
            Shape::new(1, 4, 4),
            vec![0.0; k],
            None,
        )
        .unwrap()
        .chunks()
    };
    assert_eq!(chunks(3), 1);
    assert_eq!(chunks(64), 16);
    assert_eq!(chunks(128), 32);
    assert_eq!(chunks(256), 32);
    assert_eq!(chunks(2048), 32);
    assert_eq!(chunks(50), 13);
}

#[test]
fn bit_identical_for_every_width() {
    for (p, input) in [
        (
            Conv2dParams::new(16, 64, 3, 1, 1).with_relu(true),
            Shape::new(16, 20, 20),
        ),
        (Conv2dParams::new(64, 36, 3, 1, 1), Shape::new(64, 30, 30)),
        (Conv2dParams::new(32, 128, 1, 1, 0), Shape::new(32, 14, 14)),
        (
            Conv2dParams::new(3, 64, 7, 2, 3).with_relu(true),
            Shape::new(3, 40, 40),
        ),
        (Conv2dParams::new(32, 50, 1, 2, 0), Shape::new(32, 15, 15)),
    ] {
        let (conv, x) = random_conv(p, input, 11);
        for algo in ConvAlgo::ALL.into_iter().filter(|a| a.applies(&p)) {
            for imp in [GemmImpl::Faer, GemmImpl::MatrixMultiply] {
                let c = conv.clone().with_algo(algo).unwrap().with_gemm(imp);
                assert_bit_identical(&c, &[&x]);
            }
        }
    }
}

#[test]
fn bad_inputs_are_errors() {
    let p = Conv2dParams::new(3, 8, 3, 1, 0);
    assert!(matches!(
        p.out_shape(Shape::new(4, 8, 8)),
        Err(KernelError::Channels { .. })
    ));
    assert!(matches!(
        p.out_shape(Shape::new(3, 2, 8)),
        Err(KernelError::Geometry { .. })
    ));
    assert!(matches!(
        Conv2d::new(p, Shape::new(3, 8, 8), vec![0.0; 5], None),
        Err(KernelError::BufferLen { .. })
    ));
}

/// im2col of a column range starting anywhere in a row (tiles split rows) equals the same
/// columns of the whole im2col — including ranges that start in the last columns, whose
/// window lies wholly in the right padding (AlexNet's 5×5 pad-2 conv on 27×27 hit this).
#[test]
fn im2col_of_any_column_range_matches_the_whole() {
    for (k, s, pad, side) in [
        (5, 1, 2, 27),
        (3, 1, 1, 9),
        (3, 2, 1, 9),
        (7, 2, 3, 11),
        (11, 4, 2, 31),
    ] {
        let p = Conv2dParams::new(2, 1, k, s, pad);
        let (conv, x) = random_conv(p, Shape::new(2, side, side), 5);
        let n = conv.out_shape().plane();
        let rows = 2 * k * k;
        let mut whole = vec![f32::NAN; rows * n];
        conv.im2col(&x, 0..n, &mut whole, n);
        let ow = conv.out_shape().w;
        for start in [ow - 1, ow - 2, ow + 1, 2 * ow - 1, n - 1] {
            let cols = start..(start + 3).min(n);
            let mut part = vec![f32::NAN; rows * cols.len()];
            conv.im2col(&x, cols.clone(), &mut part, cols.len());
            for r in 0..rows {
                assert_eq!(
                    &part[r * cols.len()..(r + 1) * cols.len()],
                    &whole[r * n + cols.start..r * n + cols.end],
                    "k{k} s{s} p{pad} {side}x{side}: row {r}, columns {cols:?}"
                );
            }
        }
    }
}
