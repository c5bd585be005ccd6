use proptest::prelude::*;

use super::*;
use crate::naive;
use crate::test_util::{
    TOL, abs, assert_bit_identical, assert_close, proptest_config, random_vec, sprinkle_specials,
};

proptest! {
    #![proptest_config(proptest_config(128))]

    #[test]
    fn pool_matches_naive(
        c in 1usize..=40, h in 1usize..=17, w in 1usize..=17,
        kernel in 1usize..=4, stride in 1usize..=3, padding in 0usize..=2,
        padding_end in 0usize..=3, ceil: bool, even: bool,
        max: bool, seed in 0u64..10_000,
    ) {
        let p = if max { PoolParams::max(kernel, stride, padding) } else { PoolParams::avg(kernel, stride, padding) };
        // Half the cases pad the same after, as most nets do; the others pad differently.
        let p = p.with_ceil(ceil).with_padding_end(if even { padding } else { padding_end });
        let input = Shape::new(c, h, w);
        prop_assume!(p.out_shape(input).is_ok());
        let x = random_vec(input.len(), seed);
        let pool = Pool2d::new(p, input).unwrap();
        let got = pool.forward(&[&x], &mut Scratch::new());
        let want = naive::pool(&p, input, &x);
        if max {
            prop_assert_eq!(got, want);
        } else {
            let scale = naive::pool(&p, input, &abs(&x));
            assert_close(&got, &want, &scale, TOL, "avgpool");
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(64))]

    /// NaN and ±∞ in the input: a max window holding a NaN is NaN, one holding +∞ is +∞
    /// (PyTorch); an average is NaN or ±∞ as the f64 reference's. `f32::max` dropped NaN.
    #[test]
    fn pool_propagates_nan_and_inf(
        c in 1usize..=8, h in 1usize..=13, w in 1usize..=13,
        kernel in 1usize..=4, stride in 1usize..=3, padding in 0usize..=2,
        max: bool, every in 3usize..40, seed in 0u64..10_000,
    ) {
        let p = if max { PoolParams::max(kernel, stride, padding) } else { PoolParams::avg(kernel, stride, padding) };
        let input = Shape::new(c, h, w);
        prop_assume!(p.out_shape(input).is_ok());
        let mut x = random_vec(input.len(), seed);
        sprinkle_specials(&mut x, every, seed);
        let pool = Pool2d::new(p, input).unwrap();
        let got = pool.forward(&[&x], &mut Scratch::new());
        let want = naive::pool(&p, input, &x);
        if max {
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                prop_assert!((g.is_nan() && w.is_nan()) || g == w, "output {}: {} vs {}", i, g, w);
            }
        } else {
            let scale = naive::pool(&p, input, &abs(&x));
            assert_close(&got, &want, &scale, TOL, "avgpool");
        }
        assert_bit_identical(&pool, &[&x]);
    }
}

/// Output sizes as PyTorch (`MaxPool2d(k, s, p, ceil_mode)`) and ONNX Runtime give them,
/// worked out by hand: ceil mode rounds up unless the last window would start past the
/// input and the padding before it; padding after may differ from padding before.
#[test]
fn output_sizes_follow_pytorch() {
    // (n, kernel, stride, padding, padding after, ceil, outputs)
    let cases = [
        (112, 3, 2, 0, 0, true, 56), // GoogLeNet's maxpool1 (floor: 55)
        (112, 3, 2, 0, 0, false, 55),
        (14, 2, 2, 0, 0, true, 7),   // its maxpool4
        (111, 3, 2, 0, 0, true, 55), // SqueezeNet's first: exact either way
        (5, 2, 2, 1, 1, true, 3),    // a 4th window would start in the padding after
        (7, 3, 2, 1, 1, true, 4),
        (13, 2, 1, 0, 1, false, 13), // YOLOv2-tiny's last pool, SAME_UPPER
        (13, 2, 2, 0, 1, false, 7),
        (6, 3, 3, 1, 2, false, 3),
    ];
    for (n, k, s, p, e, ceil, want) in cases {
        let params = PoolParams::max(k, s, p).with_padding_end(e).with_ceil(ceil);
        let got = params.out_shape(Shape::new(1, n, n)).unwrap();
        assert_eq!((got.h, got.w), (want, want), "{params:?} on {n}");
    }
    let bad = PoolParams::max(2, 2, 0).with_padding_end(2);
    let err = bad.out_shape(Shape::new(1, 8, 8)).unwrap_err().to_string();
    assert!(err.contains("padding after 2 >= kernel 2"), "{err}");
}

/// The special kernels (`max_2x2`, the ISA's 3×3/2) stay off where a ceil-mode or
/// end-padded window reaches past the row, and the general route gives the naive values.
#[test]
fn ceil_and_end_padded_max_pools_match_naive_on_every_isa() {
    for (k, s, p, e, ceil, side) in [
        (2, 2, 0, 0, true, 7),
        (3, 2, 0, 0, true, 112),
        (3, 2, 1, 1, true, 56),
        (3, 2, 0, 0, true, 27),
        (2, 1, 0, 1, false, 13),
    ] {
        let params = PoolParams::max(k, s, p).with_padding_end(e).with_ceil(ceil);
        let input = Shape::new(3, side, side);
        let mut x = random_vec(input.len(), side as u64);
        sprinkle_specials(&mut x, 11, k as u64);
        let want = naive::pool(&params, input, &x);
        for isa in Isa::available() {
            let pool = Pool2d::new(params, input).unwrap().with_isa(isa).unwrap();
            let got = pool.forward(&[&x], &mut Scratch::new());
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g.is_nan() && w.is_nan()) || g == w,
                    "{params:?} {isa} output {i}: {g} vs {w}"
                );
            }
        }
    }
}

/// The one-pass 2×2/2 max pool (`max_2x2`, VGG16's pools) on odd and even sizes, with
/// NaN and ±∞ sprinkled in: the naive pool's values, NaN where it has NaN.
#[test]
fn two_by_two_max_pool_matches_naive_on_odd_sizes() {
    let p = PoolParams::max(2, 2, 0);
    for (i, (c, h, w)) in [(1, 2, 2), (3, 5, 7), (2, 8, 9), (4, 13, 13), (1, 224, 224)]
        .into_iter()
        .enumerate()
    {
        let input = Shape::new(c, h, w);
        let mut x = random_vec(input.len(), i as u64);
        sprinkle_specials(&mut x, 7, i as u64);
        let got = Pool2d::new(p, input)
            .unwrap()
            .forward(&[&x], &mut Scratch::new());
        let want = naive::pool(&p, input, &x);
        assert_eq!(got.len(), want.len());
        for (j, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g.is_nan() && w.is_nan()) || g == w,
                "{input} output {j}: {g} vs {w}"
            );
        }
    }
}

#[test]
fn max_pool_of_a_window_with_nan_is_nan() {
    // Every position of a 4×4 plane in turn holds NaN among finite values: exactly the
    // windows that cover it are NaN, wherever in the window (first, middle or last) it is.
    let input = Shape::new(1, 4, 4);
    for p in [
        PoolParams::max(2, 2, 0),
        PoolParams::max(3, 1, 1),
        PoolParams::max(3, 2, 1),
    ] {
        let pool = Pool2d::new(p, input).unwrap();
        for at in 0..input.len() {
            let mut x: Vec<f32> = (0..16).map(|i| i as f32 - 20.0).collect();
            x[at] = f32::NAN;
            let got = pool.forward(&[&x], &mut Scratch::new());
            let want = naive::pool(&p, input, &x);
            assert!(want.iter().any(|v| v.is_nan()), "{p:?} at {at}");
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(
                    g.is_nan(),
                    w.is_nan(),
                    "{p:?}: NaN at {at}, output {i}: {g}"
                );
            }
        }
    }
}

#[test]
fn padding_is_excluded() {
    // 2×2 input of ones, 3×3 avg window with padding 1: every window averages only ones.
    let pool = Pool2d::new(PoolParams::avg(3, 1, 1), Shape::new(1, 2, 2)).unwrap();
    assert_eq!(
        pool.forward(&[&[1.0; 4]], &mut Scratch::new()),
        vec![1.0; 4]
    );
    // Max over negative values never returns a padded zero.
    let pool = Pool2d::new(PoolParams::max(3, 2, 1), Shape::new(1, 3, 3)).unwrap();
    assert!(
        pool.forward(&[&[-1.0; 9]], &mut Scratch::new())
            .iter()
            .all(|&v| v == -1.0)
    );
    assert!(
        PoolParams::max(2, 2, 2)
            .out_shape(Shape::new(1, 8, 8))
            .is_err()
    );
}

#[test]
fn bit_identical_for_every_width() {
    for (p, input) in [
        (PoolParams::max(2, 2, 0), Shape::new(64, 28, 28)),
        (PoolParams::max(3, 2, 1), Shape::new(64, 30, 30)),
        (PoolParams::avg(3, 1, 1), Shape::new(70, 9, 9)),
    ] {
        let x = random_vec(input.len(), 3);
        assert_bit_identical(&Pool2d::new(p, input).unwrap(), &[&x]);
    }
}

/// Every ISA path's max pools of their own (2×2/2 compiled with the path's target
/// features, AVX-512's 3×3/2) give the portable path's bits: NaN payloads, ±∞ and ties of
/// `0.0` with `−0.0` included, on odd sizes, on planes long enough for the vector loops,
/// and on ResNet50's and AlexNet's pools (112 → 56 padded, 55 → 27 and 13 → 6 not).
#[test]
fn every_isa_pools_the_portable_bits() {
    let payload = f32::from_bits(0x7fc0_1234);
    let cases = [
        (PoolParams::max(2, 2, 0), Shape::new(3, 5, 7)),
        (PoolParams::max(2, 2, 0), Shape::new(2, 8, 9)),
        (PoolParams::max(2, 2, 0), Shape::new(4, 34, 66)),
        (PoolParams::max(2, 2, 0), Shape::new(1, 224, 224)),
        (PoolParams::max(3, 2, 1), Shape::new(2, 112, 112)),
        (PoolParams::max(3, 2, 0), Shape::new(3, 55, 55)),
        (PoolParams::max(3, 2, 0), Shape::new(2, 13, 13)),
        (PoolParams::max(3, 2, 1), Shape::new(3, 1, 1)),
        (PoolParams::max(3, 2, 1), Shape::new(2, 2, 33)),
        (PoolParams::max(3, 2, 0), Shape::new(2, 4, 34)),
        (PoolParams::max(3, 2, 1), Shape::new(1, 17, 64)),
        (PoolParams::max(3, 2, 0), Shape::new(1, 3, 3)),
        // Wider than the AVX-512 kernel's row of precomputed masks (15 vectors of input
        // columns), padded and not.
        (PoolParams::max(3, 2, 1), Shape::new(1, 3, 301)),
        (PoolParams::max(3, 2, 0), Shape::new(1, 5, 250)),
    ];
    for (i, (p, input)) in cases.into_iter().enumerate() {
        let mut x = random_vec(input.len(), i as u64);
        sprinkle_specials(&mut x, 5, i as u64);
        for (j, v) in x.iter_mut().enumerate().filter(|(j, _)| j % 7 == 3) {
            *v = [0.0, -0.0, payload][j % 3];
        }
        let pool = Pool2d::new(p, input).unwrap();
        let run = |isa| {
            let pool = pool.clone().with_isa(isa).unwrap();
            assert_eq!(pool.isa(), isa);
            let out = pool.forward(&[&x], &mut Scratch::new());
            out.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        };
        let want = run(Isa::Portable);
        for isa in Isa::available() {
            assert_eq!(run(isa), want, "{p:?} on {input} on {isa}");
        }
    }
}

/// GoogLeNet's 3×3 stride-1 pools (`max_3x3_s1`, padded by one) give the separable
/// route's bits on every ISA path: a window's rows reduced in order, then its columns, the
/// padding `−∞`. NaN payloads, ±∞ and ties of `0.0` with `−0.0` included, on planes of one
/// row or column, odd sizes and GoogLeNet's 28×28, 14×14 and 7×7.
#[test]
fn three_by_three_stride_one_pools_keep_the_separable_bits() {
    use crate::activation::max_nan;
    let payload = f32::from_bits(0x7fc0_1234);
    for (h, w) in [
        (1, 1),
        (1, 5),
        (4, 1),
        (2, 2),
        (3, 7),
        (7, 7),
        (7, 9),
        (14, 14),
        (28, 28),
    ] {
        let input = Shape::new(3, h, w);
        let seed = (h * 31 + w) as u64;
        let mut x = random_vec(input.len(), seed);
        sprinkle_specials(&mut x, 5, seed);
        for (j, v) in x.iter_mut().enumerate().filter(|(j, _)| j % 5 == 2) {
            *v = [0.0, -0.0, payload][j % 3];
        }
        let mut want = Vec::new();
        for plane in x.chunks_exact(h * w) {
            for oy in 0..h {
                let rows = oy.saturating_sub(1)..(oy + 2).min(h);
                let row = |y: usize| &plane[y * w..(y + 1) * w];
                let mut m = row(rows.start).to_vec();
                for y in rows.start + 1..rows.end {
                    m.iter_mut()
                        .zip(row(y))
                        .for_each(|(m, &v)| *m = max_nan(*m, v));
                }
                let at = |i: isize| match usize::try_from(i) {
                    Ok(i) if i < w => m[i],
                    _ => f32::NEG_INFINITY,
                };
                for ox in 0..w as isize {
                    want.push(max_nan(max_nan(at(ox - 1), at(ox)), at(ox + 1)).to_bits());
                }
            }
        }
        let p = PoolParams::max(3, 1, 1).with_ceil(true);
        for isa in Isa::available() {
            let pool = Pool2d::new(p, input).unwrap().with_isa(isa).unwrap();
            let got: Vec<u32> = pool
                .forward(&[&x], &mut Scratch::new())
                .iter()
                .map(|v| v.to_bits())
                .collect();
            assert_eq!(got, want, "{input} on {isa}");
        }
    }
}
