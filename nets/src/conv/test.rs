use proptest::prelude::*;

use super::*;
use crate::Activate;
use crate::naive;
use crate::test_util::{
    ACTIVATIONS, TOL, abs, activation, assert_bit_identical, assert_close, bits, proptest_config,
    random_vec, sprinkle_specials,
};

fn random_conv(p: Conv2dParams, input: Shape, seed: u64) -> (Conv2d, Vec<f32>) {
    let w = random_vec(p.weight_len(), seed);
    let b = random_vec(p.out_channels, seed + 1);
    let x = random_vec(input.len(), seed + 2);
    let conv = Conv2d::new(p, input, w, Some(b)).expect("valid conv");
    (conv, x)
}

/// Every applicable algorithm on every ISA this CPU runs, as `conv`.
fn variants(conv: &Conv2d) -> Vec<Conv2d> {
    let mut all = Vec::new();
    for algo in ConvAlgo::ALL
        .into_iter()
        .filter(|a| a.applies(conv.params()))
    {
        for isa in Isa::available() {
            all.push(conv.clone().with_algo(algo).unwrap().with_isa(isa).unwrap());
        }
    }
    all
}

/// The tolerance of an algorithm against the f64 reference, per unit of `Σ|w·x|`.
fn tolerance(algo: ConvAlgo) -> f32 {
    if algo.tile().is_some() {
        winograd::ERROR_BOUND as f32
    } else {
        TOL
    }
}

/// Checks `conv` with every algorithm and ISA against the naive reference.
fn check_against_naive(conv: &Conv2d, x: &[f32]) {
    let p = *conv.params();
    let input = conv.in_shape();
    let want = naive::conv2d(&p, input, x, conv.weights(), conv.bias());
    // Σ|terms| per output: the reference on absolute values, without the activation.
    let scale = naive::conv2d(
        &p.with_act(Activation::None),
        input,
        &abs(x),
        &abs(conv.weights()),
        &abs(conv.bias()),
    );
    for c in variants(conv) {
        let got = c.forward(&[x], &mut Scratch::new());
        let what = format!("{p:?} {input} {} {}", c.algo().name(), c.isa());
        assert_close(&got, &want, &scale, tolerance(c.algo()), &what);
    }
}

proptest! {
    #![proptest_config(proptest_config(96))]

    #[test]
    fn conv_matches_naive(
        c in 1usize..=16, k in 1usize..=20, h in 1usize..=14, w in 1usize..=14,
        kernel in 1usize..=5, stride in 1usize..=3, padding in 0usize..=2,
        act in activation(), seed in 0u64..10_000,
    ) {
        let p = Conv2dParams::new(c, k, kernel, stride, padding).with_act(act);
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
        py in 0usize..=2, px in 0usize..=3, act in activation(), seed in 0u64..10_000,
    ) {
        let p = Conv2dParams {
            in_channels: c, out_channels: k, kernel: (kh, kw),
            stride: (sy, sx), padding: (py, px), act,
        };
        let input = Shape::new(c, h, w);
        prop_assume!(p.out_shape(input).is_ok());
        let (conv, x) = random_conv(p, input, seed);
        check_against_naive(&conv, &x);
    }

    /// 3×3 and 5×5 stride-1 layers, where Winograd applies, with odd sizes and every
    /// padding it takes (up to 1 for 3×3, 2 for 5×5).
    #[test]
    fn winograd_shapes_match_naive(
        c in 1usize..=24, k in 1usize..=24, h in 1usize..=19, w in 1usize..=19,
        five: bool, padding in 0usize..=2, act in activation(), seed in 0u64..10_000,
    ) {
        let kernel = if five { 5 } else { 3 };
        let p = Conv2dParams::new(c, k, kernel, 1, padding.min(kernel / 2)).with_act(act);
        let input = Shape::new(c, h, w);
        prop_assume!(p.out_shape(input).is_ok());
        let (conv, x) = random_conv(p, input, seed);
        check_against_naive(&conv, &x);
    }
}

#[test]
fn algorithm_order() {
    let on = |isa: Isa, c: usize, k: usize, kernel: usize, s: usize, p: usize, side: usize| {
        ConvAlgo::choose(
            &Conv2dParams::new(c, k, kernel, s, p),
            Shape::new(c, side, side),
            isa,
        )
    };
    // Where the channel-lanes path is not chosen (`lanes::chosen_on`): Winograd from 16
    // input channels, im2col for the rest.
    for isa in [Isa::Neon, Isa::Portable] {
        assert_eq!(on(isa, 16, 64, 3, 1, 1, 55), ConvAlgo::Winograd);
        assert_eq!(on(isa, 32, 128, 3, 1, 1, 27), ConvAlgo::Winograd);
        assert_eq!(on(isa, 64, 256, 3, 1, 1, 13), ConvAlgo::Direct);
        assert_eq!(on(isa, 512, 512, 3, 1, 1, 14), ConvAlgo::Winograd2);
        assert_eq!(on(isa, 3, 64, 7, 2, 3, 224), ConvAlgo::Direct);
        assert_eq!(on(isa, 64, 192, 5, 1, 2, 27), ConvAlgo::Winograd5);
    }
    // On AVX2:
    let choose = |c, k, kernel, s, p, side| on(Isa::Avx2, c, k, kernel, s, p, side);
    assert_eq!(choose(64, 64, 3, 1, 1, 56), ConvAlgo::Winograd);
    // F(4×4) makes 16 tiles of 14×14, F(2×2) 49; of 7×7, 4 and 16. Where the lanes path
    // runs, F(4×4) on 16 tiles from `SMALL_PLANE_F4_CHANNELS` input channels, instead of
    // F(2×2) or of no tiling (SqueezeNet's 13×13 expands); below that channel lanes.
    assert_eq!(choose(512, 512, 3, 1, 1, 14), ConvAlgo::Winograd);
    assert_eq!(choose(96, 384, 3, 1, 1, 13), ConvAlgo::Winograd);
    assert_eq!(choose(64, 256, 3, 1, 1, 13), ConvAlgo::Winograd);
    assert_eq!(choose(48, 192, 3, 1, 1, 13), ConvAlgo::Winograd);
    assert_eq!(choose(47, 192, 3, 1, 1, 13), ConvAlgo::Lanes);
    assert_eq!(choose(32, 128, 3, 1, 1, 14), ConvAlgo::Lanes);
    assert_eq!(choose(64, 256, 3, 1, 1, 7), ConvAlgo::Lanes);
    // F(2×2) where F(4×4) makes fewer than 16 tiles but F(2×2) 32: 12×12 (9 and 36).
    assert_eq!(choose(512, 512, 3, 1, 1, 12), ConvAlgo::Winograd2);
    // 9.4 MB of weights: past `lanes::MAX_WEIGHT_BYTES`.
    assert_eq!(choose(512, 512, 3, 1, 1, 7), ConvAlgo::Direct);
    assert_eq!(choose(256, 256, 3, 1, 1, 28), ConvAlgo::Winograd);
    // Winograd from `MIN_IN_CHANNELS`: SqueezeNet's first expands run channel-lanes.
    assert_eq!(choose(16, 64, 3, 1, 1, 55), ConvAlgo::Lanes);
    assert_eq!(choose(31, 128, 3, 1, 1, 27), ConvAlgo::Lanes);
    assert_eq!(choose(32, 128, 3, 1, 1, 27), ConvAlgo::Winograd);
    assert_eq!(choose(48, 192, 3, 1, 1, 27), ConvAlgo::Winograd);
    // 27 steps: fewer than `lanes::MIN_STEPS`, so at stride 1 im2col; a stride of 2, or a
    // 7×7 stem's 147 steps, take channel lanes.
    assert_eq!(choose(3, 64, 3, 1, 1, 224), ConvAlgo::Direct);
    assert_eq!(choose(3, 64, 3, 2, 0, 224), ConvAlgo::Lanes);
    assert_eq!(choose(3, 64, 7, 2, 3, 224), ConvAlgo::Lanes);
    // 1×1 convs stay on the direct path, strided or not.
    assert_eq!(choose(64, 256, 1, 1, 0, 56), ConvAlgo::Direct);
    assert_eq!(choose(256, 512, 1, 2, 0, 56), ConvAlgo::Direct);
    assert_eq!(choose(64, 64, 3, 2, 1, 56), ConvAlgo::Lanes);
    assert_eq!(choose(64, 64, 3, 1, 2, 56), ConvAlgo::Lanes);
    // AlexNet's `conv2`: 14×14 tiles of F(2×2, 5×5); a 5×5 conv with padding 3 cannot.
    assert_eq!(choose(64, 192, 5, 1, 2, 27), ConvAlgo::Winograd5);
    assert_eq!(choose(64, 192, 5, 1, 3, 27), ConvAlgo::Direct);
    assert_eq!(choose(64, 128, 5, 2, 2, 27), ConvAlgo::Lanes);
    // On AVX-512 channel lanes too, and Winograd by `winograd::pays_off_avx512`: F(2×2)
    // kept on 13×13 and 14×14 planes, none below 32 input channels or
    // `MIN_WORK_AVX512` input channels × tiles.
    let choose = |c, k, kernel, s, p, side| on(Isa::Avx512, c, k, kernel, s, p, side);
    assert_eq!(choose(16, 64, 3, 1, 1, 55), ConvAlgo::Lanes);
    assert_eq!(choose(32, 128, 3, 1, 1, 27), ConvAlgo::Lanes); // 32 × 49 tiles
    assert_eq!(choose(42, 128, 3, 1, 1, 27), ConvAlgo::Winograd); // 42 × 49 = 2058
    assert_eq!(choose(41, 128, 3, 1, 1, 28), ConvAlgo::Lanes); // 41 × 49 = 2009
    assert_eq!(choose(32, 64, 3, 1, 1, 208), ConvAlgo::Winograd);
    assert_eq!(choose(64, 256, 3, 1, 1, 13), ConvAlgo::Lanes);
    assert_eq!(choose(96, 208, 3, 1, 1, 14), ConvAlgo::Winograd2);
    assert_eq!(choose(512, 512, 3, 1, 1, 14), ConvAlgo::Winograd2);
    assert_eq!(choose(512, 512, 3, 1, 1, 7), ConvAlgo::Direct);
    assert_eq!(choose(64, 192, 5, 1, 2, 27), ConvAlgo::Winograd5);
    assert_eq!(choose(3, 64, 3, 2, 0, 224), ConvAlgo::Lanes);
    assert_eq!(choose(64, 256, 1, 1, 0, 56), ConvAlgo::Direct);
    let conv = Conv2d::new(
        Conv2dParams::new(3, 8, 3, 2, 1),
        Shape::new(3, 9, 9),
        vec![0.0; 8 * 27],
        None,
    )
    .unwrap();
    assert!(matches!(
        conv.with_algo(ConvAlgo::Winograd),
        Err(KernelError::Algorithm { .. })
    ));
}

/// The direct path's tile follows the GEMM's loop order: the wide one exactly where the
/// weights stream past each column panel (`Direct::kernels`) and where the GEMM reads its
/// input in place, but for 13×13 and 14×14 planes (`direct::NARROW_TILE_COLS`).
#[test]
fn direct_tiles_follow_the_loop_order() {
    use crate::gemm::STORE_BOUND_K;
    // A pointwise conv of `kdim` channels on a `cols`-pixel plane into `out` channels:
    // 512 are never read in place, 16 always are.
    let at = |isa: Isa, kdim: usize, out: usize, cols: usize| {
        let p = Conv2dParams::new(kdim, out, 1, 1, 0);
        direct::Direct::kernels(isa, &p, Shape::new(kdim, 1, cols), cols)
    };
    for isa in Isa::available() {
        let (narrow, wide) = (isa.kernels(), isa.wide_kernels());
        // Planes outside `NARROW_TILE_COLS`, then inside: (kdim, out channels, the tile).
        type Case<'k> = (&'k [usize], &'k [(usize, usize, &'k Kernels)]);
        let cases: [Case<'_>; 2] = [
            (
                &[49, 96, 256, 784, 3136],
                &[
                    (STORE_BOUND_K, 512, narrow),
                    (STORE_BOUND_K + 1, 512, wide),
                    (64, 16, wide),
                ],
            ),
            (
                &[97, 169, 196, 255],
                &[(STORE_BOUND_K + 1, 512, narrow), (64, 16, narrow)],
            ),
        ];
        for (planes, wants) in cases {
            for &cols in planes {
                for &(kdim, out, want) in wants {
                    assert!(
                        std::ptr::eq(at(isa, kdim, out, cols), want),
                        "{isa} {cols}: {kdim} → {out}"
                    );
                }
            }
        }
    }
    #[cfg(target_arch = "x86_64")]
    if Isa::Avx512.is_supported() {
        let wide = Isa::Avx512.wide_kernels();
        assert_eq!((wide.mr, wide.nr), (8, 48));
    }
}

#[test]
fn multi_block_layers_match_naive() {
    // Large enough that every algorithm runs several blocks, and K not a multiple of MR.
    for (p, input) in [
        (
            Conv2dParams::new(64, 36, 3, 1, 1).with_relu(true),
            Shape::new(64, 40, 40),
        ),
        (Conv2dParams::new(4, 10, 3, 1, 1), Shape::new(4, 130, 130)),
        (Conv2dParams::new(70, 20, 1, 1, 0), Shape::new(70, 31, 33)),
        (Conv2dParams::new(3, 12, 7, 2, 3), Shape::new(3, 64, 60)),
        (Conv2dParams::new(20, 30, 3, 1, 0), Shape::new(20, 37, 29)),
        // AlexNet's `conv2`: F(2×2, 5×5) in four blocks.
        (
            Conv2dParams::new(64, 192, 5, 1, 2).with_relu(true),
            Shape::new(64, 27, 27),
        ),
    ] {
        let (conv, x) = random_conv(p, input, 7);
        check_against_naive(&conv, &x);
    }
}

/// A Winograd block of one vector of tiles (16 on 13×13: half an AVX-512 panel) computes
/// its tiles alone by the narrow kernel (`Winograd::gemms`): against the naive conv on
/// every path.
#[test]
fn a_winograd_block_of_one_vector_of_tiles_matches_naive() {
    let (conv, x) = random_conv(
        Conv2dParams::new(32, 40, 3, 1, 1),
        Shape::new(32, 13, 13),
        9,
    );
    assert!(ConvAlgo::Winograd.applies(conv.params()));
    check_against_naive(&conv, &x);
}

#[test]
fn chunk_rule() {
    let conv = |k: usize| {
        Conv2d::new(
            Conv2dParams::new(1, k, 1, 1, 0),
            Shape::new(1, 4, 4),
            vec![0.0; k],
            None,
        )
        .unwrap()
    };
    let chunks = |k: usize| conv(k).chunks();
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
        for c in variants(&conv) {
            assert_bit_identical(&c, &[&x]);
        }
    }
}

/// A fused residual add gives the bits of the conv followed by the add (and the
/// activation layer), for ReLU, ReLU6 and a leaky ReLU.
#[test]
fn fused_residual_equals_conv_then_add() {
    for (p, input) in [
        (Conv2dParams::new(32, 64, 1, 1, 0), Shape::new(32, 9, 11)),
        (Conv2dParams::new(24, 24, 3, 1, 1), Shape::new(24, 13, 10)),
    ] {
        let (conv, x) = random_conv(p, input, 3);
        let r = random_vec(conv.out_shape().len(), 4);
        let acts = [
            Activation::None,
            Activation::Relu,
            Activation::RELU6,
            Activation::LeakyRelu { slope: 0.1 },
        ];
        for act in acts {
            for plain in variants(&conv) {
                let fused = plain.clone().with_residual(true);
                let plain = Conv2d::build(
                    *conv.params(),
                    input,
                    conv.weights().to_vec(),
                    conv.bias().to_vec(),
                    plain.algo(),
                    plain.isa(),
                )
                .unwrap();
                let y = plain.forward(&[&x], &mut Scratch::new());
                let add = crate::Add::new(conv.out_shape(), act == Activation::Relu);
                let mut want = add.forward(&[&y, &r], &mut Scratch::new());
                if act != Activation::Relu {
                    want =
                        Activate::new(conv.out_shape(), act).forward(&[&want], &mut Scratch::new());
                }
                let fused_act = Conv2d {
                    params: p.with_act(act),
                    ..fused
                };
                let got = fused_act.forward(&[&x, &r], &mut Scratch::new());
                let what = format!("{} {} {act:?}", plain.algo().name(), plain.isa());
                assert_eq!(bits(&got), bits(&want), "{what}");
                assert_bit_identical(&fused_act, &[&x, &r]);
                // Run without the residual input, on an output that holds it: the same
                // bits, chunk by chunk.
                if fused_act.in_place_input() {
                    let mut own = r.clone();
                    for chunk in 0..fused_act.chunks() {
                        let range = fused_act.chunk_range(chunk);
                        let out = &mut own[range];
                        fused_act.compute_chunk(&[&x], chunk, out, &mut Scratch::new());
                    }
                    assert_eq!(bits(&own), bits(&want), "{what} in place");
                }
            }
        }
    }
}

/// A fused activation gives the bits of the conv followed by the activation layer
/// ([`Activate`]), for each of [`ACTIVATIONS`], on every algorithm (direct with one and
/// several `kc` blocks, pointwise, a windowed first conv, Winograd F(4×4), F(2×2) and
/// F(2×2, 5×5)) and ISA, with NaN, ±∞ and −0.0 in the input; and the fused layer's bits
/// are the same at every gang width.
#[test]
fn fused_activation_equals_conv_then_activation() {
    for (p, input) in [
        (Conv2dParams::new(40, 20, 3, 1, 1), Shape::new(40, 14, 13)),
        (Conv2dParams::new(12, 20, 3, 1, 0), Shape::new(12, 11, 9)),
        (Conv2dParams::new(24, 36, 1, 1, 0), Shape::new(24, 9, 7)),
        (Conv2dParams::new(3, 12, 7, 2, 3), Shape::new(3, 20, 18)),
        (Conv2dParams::new(16, 20, 5, 1, 2), Shape::new(16, 15, 15)),
    ] {
        let (conv, mut x) = random_conv(p, input, 21);
        sprinkle_specials(&mut x, 97, 22);
        let mut algos = std::collections::HashSet::new();
        for plain in variants(&conv) {
            algos.insert(plain.algo());
            let y = plain.forward(&[&x], &mut Scratch::new());
            for act in ACTIVATIONS {
                let want = Activate::new(conv.out_shape(), act).forward(&[&y], &mut Scratch::new());
                let fused = Conv2d {
                    params: p.with_act(act),
                    ..plain.clone()
                };
                let got = fused.forward(&[&x], &mut Scratch::new());
                let what = format!("{p:?} {} {} {act:?}", plain.algo().name(), plain.isa());
                assert_eq!(bits(&got), bits(&want), "{what}");
            }
            let leaky = Conv2d {
                params: p.with_act(Activation::LeakyRelu { slope: 0.1 }),
                ..plain
            };
            assert_bit_identical(&leaky, &[&x]);
        }
        assert!(algos.contains(&ConvAlgo::Direct));
    }
}

/// Which fused residuals can be read from the output: Winograd's and the channel-lanes
/// path's always (they write the output last), the direct path's when the reduction is one
/// `kc` block (a pointwise GEMM that reads its input in place cuts deep reductions into
/// blocks of its own, `Blocking::kc_in_place`); a conv that cannot must be given its
/// residual.
#[test]
fn residuals_in_place_where_the_output_still_holds_them() {
    for (p, input, in_place) in [
        (
            Conv2dParams::new(64, 32, 3, 1, 1),
            Shape::new(64, 8, 8),
            false,
        ),
        (
            Conv2dParams::new(128, 16, 1, 1, 0),
            Shape::new(128, 7, 14),
            true,
        ),
        (
            Conv2dParams::new(384, 16, 1, 1, 0),
            Shape::new(384, 7, 14),
            true,
        ),
    ] {
        residual_in_place_where_the_output_holds_it(p, input, in_place);
    }
}

fn residual_in_place_where_the_output_holds_it(p: Conv2dParams, input: Shape, in_place: bool) {
    let kdim = p.weight_len() / p.out_channels;
    let (conv, x) = random_conv(p, input, 9);
    for c in variants(&conv) {
        let kc = if in_place {
            c.blocking.kc_in_place(kdim)
        } else {
            c.blocking.kc_for(kdim)
        };
        let fused = c.with_residual(true);
        let want = fused.algo() != ConvAlgo::Direct || kdim <= kc;
        assert_eq!(
            fused.in_place_input(),
            want,
            "{} {}",
            fused.algo().name(),
            fused.isa()
        );
        assert!(!fused.clone().with_residual(false).in_place_input());
        if !want {
            let mut out = vec![0.0; fused.out_shape().len()];
            let run = std::panic::AssertUnwindSafe(|| {
                fused.compute_chunks(&[&x], 0..fused.chunks(), &mut out, &mut Scratch::new())
            });
            assert!(
                std::panic::catch_unwind(run).is_err(),
                "one input where two are needed"
            );
        }
    }
}

/// NaN and ±∞ in the input, the bias and the residual, through every algorithm and ISA
/// with the fused ReLU. The direct path matches the f64 reference exactly in what is NaN or
/// infinite. Winograd mixes a tile's inputs (∞ − ∞ is NaN), so there every output the
/// reference has NaN or +∞ must be non-finite, and NaN in the bias or the residual, added
/// after the transforms, must come out exactly where the reference has it. Before, the
/// ReLU of the GEMM epilogue and of Winograd's output turned NaN into 0.
#[test]
fn conv_propagates_nan_and_inf() {
    for (p, input) in [
        (Conv2dParams::new(8, 20, 3, 1, 1), Shape::new(8, 14, 14)),
        (Conv2dParams::new(6, 10, 1, 1, 0), Shape::new(6, 9, 7)),
        (Conv2dParams::new(3, 12, 7, 2, 3), Shape::new(3, 20, 18)),
    ] {
        let p = p.with_relu(true);
        let (conv, clean) = random_conv(p, input, 5);
        let mut x = clean.clone();
        sprinkle_specials(&mut x, 90, 6);
        let want = naive::conv2d(&p, input, &x, conv.weights(), conv.bias());
        let scale = naive::conv2d(
            &p.with_act(Activation::None),
            input,
            &abs(&x),
            &abs(conv.weights()),
            &abs(conv.bias()),
        );
        assert!(want.iter().any(|v| v.is_nan()) && want.iter().any(|v| v.is_infinite()));
        // NaN and ±∞ in the residual (and a NaN bias), on a finite input.
        let mut r = random_vec(conv.out_shape().len(), 7);
        sprinkle_specials(&mut r, 13, 8);
        let mut bias = conv.bias().to_vec();
        bias[1] = f32::NAN;
        let with_bias = |c: &Conv2d| {
            Conv2d::build(
                p,
                input,
                c.weights().to_vec(),
                bias.clone(),
                c.algo(),
                c.isa(),
            )
            .unwrap()
            .with_residual(true)
        };
        let res_want: Vec<f32> = naive::conv2d(
            &p.with_act(Activation::None),
            input,
            &clean,
            conv.weights(),
            &bias,
        )
        .iter()
        .zip(&r)
        .map(|(y, r)| naive::relu(y + r))
        .collect();
        let res_scale: Vec<f32> = naive::conv2d(
            &p.with_act(Activation::None),
            input,
            &abs(&clean),
            &abs(conv.weights()),
            &abs(&bias),
        )
        .iter()
        .zip(&r)
        .map(|(s, r)| s + r.abs())
        .collect();
        let all_nan = vec![f32::NAN; input.len()];
        for c in variants(&conv) {
            let what = format!("{p:?} {input} {} {}", c.algo().name(), c.isa());
            let got = c.forward(&[&x], &mut Scratch::new());
            if c.algo().tile().is_none() {
                assert_close(&got, &want, &scale, TOL, &what);
            } else {
                for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    if w.is_nan() || w == f32::INFINITY {
                        assert!(!g.is_finite(), "{what}: element {i}: {g}, want {w}");
                    }
                }
            }
            let fused = with_bias(&c);
            let got = fused.forward(&[&clean, &r], &mut Scratch::new());
            assert_close(&got, &res_want, &res_scale, tolerance(c.algo()), &what);
            assert_bit_identical(&fused, &[&clean, &r]);
            let got = c.forward(&[&all_nan], &mut Scratch::new());
            assert!(got.iter().all(|v| v.is_nan()), "{what}: all-NaN input");
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

/// The gang path (`run_rank`) at widths 1–16, in every schedule (Winograd's shared one in
/// two steps, over one block and over several; a shared block's compute cut by columns,
/// the channel-lanes path's by rows), has the bits of `forward`, and packs into the shared
/// workspace only when it shares.
#[test]
fn gangs_of_every_width_are_bit_identical() {
    use std::sync::Arc;
    use taopipe_runtime::{Place, Runtime, SharedSlice};

    use crate::Workspace;
    use crate::conv::gang::Schedule;

    let rt = Runtime::builder().workers(16).pin(false).build().unwrap();
    let mut schedules = std::collections::HashSet::new();
    let mut column_chunks = false;
    let mut unpacked_chunks = false;
    let mut lanes_rows = false;
    // Whether a pair ran a private schedule's blocks in groups, per two-step or not.
    let mut pair_groups = [false; 2];
    for (p, input, residual) in [
        // Winograd, one block (its 9.4 MB of transformed weights too large to cut it in
        // two, `SPLIT_WEIGHT_BLOCKS`): shared at any width > 1.
        (
            Conv2dParams::new(256, 256, 3, 1, 1).with_relu(true),
            Shape::new(256, 8, 8),
            true,
        ),
        // Winograd, one block cut in two (small transformed weights): private at width 2.
        (
            Conv2dParams::new(32, 40, 3, 1, 1).with_relu(true),
            Shape::new(32, 13, 13),
            true,
        ),
        // Winograd, two or more blocks: shared from width 3 on, its GEMMs, output
        // transforms and packing of three blocks in one phase.
        (
            Conv2dParams::new(64, 60, 3, 1, 1),
            Shape::new(64, 64, 64),
            false,
        ),
        // Winograd F(2×2, 5×5) (AlexNet's `conv2` with fewer channels), with a residual.
        (
            Conv2dParams::new(24, 40, 5, 1, 2).with_relu(true),
            Shape::new(24, 27, 27),
            true,
        ),
        // Direct, many blocks.
        (
            Conv2dParams::new(3, 24, 3, 1, 1),
            Shape::new(3, 70, 70),
            false,
        ),
        // Pointwise with a fused residual, packed (more channels than `reads_in_place`
        // takes).
        (
            Conv2dParams::new(48, 72, 1, 1, 0),
            Shape::new(48, 9, 9),
            true,
        ),
        // Pointwise, read in place for its small input (`IN_PLACE_SMALL_MAX_CHANNELS`):
        // 40 channels, the short last panel of 169 = 10 · 16 + 9 pixels packed.
        (
            Conv2dParams::new(48, 40, 1, 1, 0),
            Shape::new(48, 13, 13),
            true,
        ),
        // Direct, one block that packs cheaply against its GEMMs: replicated at width 2,
        // shared from 3 on.
        (
            Conv2dParams::new(128, 96, 3, 2, 1),
            Shape::new(128, 14, 14),
            false,
        ),
        // Strided, a few blocks.
        (
            Conv2dParams::new(16, 20, 3, 2, 1),
            Shape::new(16, 40, 40),
            false,
        ),
        // Pointwise with few output channels, read in place (`IN_PLACE_MAX_CHANNELS`):
        // several blocks, each with a short last panel packed (2025 = 126 · 16 + 9
        // pixels), with a fused residual.
        (
            Conv2dParams::new(40, 24, 1, 1, 0).with_relu(true),
            Shape::new(40, 45, 45),
            true,
        ),
        // Pointwise with 32 output channels, read in place: one block by the cache budget,
        // cut in two for a pair (`HALF_BLOCK_PANELS`: 1296 pixels, 41 AVX-512 panels), so
        // unpacked from width 3 on with two blocks, each with its short last panel.
        (
            Conv2dParams::new(16, 32, 1, 1, 0),
            Shape::new(16, 36, 36),
            false,
        ),
        // Pointwise, one block of many columns for two or three weight panels: shared, its
        // compute cut by columns too (`compute_split`), the last chunk holding a short
        // tail (98 pixels), the residual read per chunk.
        (
            Conv2dParams::new(256, 16, 1, 1, 0),
            Shape::new(256, 7, 14),
            true,
        ),
    ] {
        let (conv, x) = random_conv(p, input, 5);
        let r = random_vec(conv.out_shape().len(), 6);
        for c in variants(&conv) {
            let c = Arc::new(c.with_residual(residual));
            let inputs: Vec<&[f32]> = if residual { vec![&x, &r] } else { vec![&x] };
            let want = c.forward(&inputs, &mut Scratch::new());
            for width in [1, 2, 3, 4, 7, 16] {
                let out = Arc::new(SharedSlice::new(vec![f32::NAN; want.len()]));
                let workspace = Arc::new(Workspace::new());
                let (cc, o, ws, xx, rr) = (
                    c.clone(),
                    out.clone(),
                    workspace.clone(),
                    x.clone(),
                    r.clone(),
                );
                rt.run_on(Place::new(0, width), move |ctx| {
                    let inputs: Vec<&[f32]> = if residual { vec![&xx, &rr] } else { vec![&xx] };
                    cc.run_rank(ctx, &inputs, &o, &ws, &mut Scratch::new());
                })
                .unwrap();
                let got = out.read().unwrap().to_vec();
                let what = format!("{p:?} {} {} width {width}", c.algo().name(), c.isa());
                assert!(bits(&got) == bits(&want), "{what}");
                if c.in_place_input() {
                    // The residual read from the output the gang writes.
                    let own = Arc::new(SharedSlice::new(r.clone()));
                    let ws = Arc::new(Workspace::new());
                    let (cc, o, xx) = (c.clone(), own.clone(), x.clone());
                    rt.run_on(Place::new(0, width), move |ctx| {
                        cc.run_rank(ctx, &[&xx], &o, &ws, &mut Scratch::new());
                    })
                    .unwrap();
                    assert!(bits(&own.read().unwrap()) == bits(&want), "{what} in place");
                }
                let panels = p.out_channels.div_ceil(c.channel_step());
                let schedule = Schedule::choose(c.blocks(), panels, width, c.pack_cost());
                let shared = schedule == Schedule::Shared;
                assert_eq!(workspace.is_allocated(), shared, "{p:?} width {width}");
                let two_step = shared && c.algo().tile().is_some();
                assert_eq!(workspace.products_allocated(), two_step, "{what}");
                schedules.insert((schedule, two_step, c.blocks() > 1));
                if schedule == Schedule::Private && gang::private_groups(c.blocks(), width) > 1 {
                    pair_groups[usize::from(c.algo().tile().is_some())] = true;
                }
                let chunked = (shared || schedule == Schedule::Unpacked)
                    && !two_step
                    && c.compute_split(0, crate::kernel::gang_items(width)).1 > 1;
                column_chunks |= chunked;
                unpacked_chunks |= chunked && schedule == Schedule::Unpacked;
                lanes_rows |= chunked && c.algo() == ConvAlgo::Lanes;
            }
        }
    }
    for ran in [
        (Schedule::Private, false, true),
        (Schedule::Shared, false, false),
        (Schedule::Shared, true, false),
        (Schedule::Shared, true, true),
        (Schedule::Replicated, false, false),
        (Schedule::Unpacked, false, false),
    ] {
        assert!(
            schedules.contains(&ran),
            "(schedule, two steps, blocks > 1) {ran:?} ran"
        );
    }
    assert!(column_chunks, "a shared block's compute cut by columns ran");
    assert!(
        unpacked_chunks,
        "an unpacked block's compute cut by columns ran"
    );
    // The AVX-512 tables' panels cut the `16 → 32` plane above into two blocks.
    if Isa::Avx512.is_supported() {
        let ran = (Schedule::Unpacked, false, true);
        assert!(schedules.contains(&ran), "{ran:?} ran");
    }
    assert!(
        lanes_rows,
        "a shared channel-lanes block's compute cut by rows ran"
    );
    assert_eq!(
        pair_groups, [true; 2],
        "a pair's private blocks ran in groups"
    );
}

/// The replicated schedule's groups split the weight panels so that no rank holds more
/// than its share when they are dealt out evenly, near two groups a rank
/// (`gang::replicated_groups`).
#[test]
fn replicated_groups_split_the_panels_evenly() {
    // Two a rank where they divide the panels evenly.
    assert_eq!(gang::replicated_groups(8, 2), 4);
    assert_eq!(gang::replicated_groups(86, 2), 2);
    // Six panels on a pair: four groups (2, 2, 1, 1) would leave one rank 4 of them.
    assert_eq!(gang::replicated_groups(6, 2), 6);
    // Fewer panels than two groups a rank: one panel a group.
    assert_eq!(gang::replicated_groups(3, 2), 3);
    assert_eq!(gang::replicated_groups(1, 16), 1);
    for (panels, width) in [(6, 2), (7, 2), (11, 2), (43, 2), (22, 4), (86, 16)] {
        let g = gang::replicated_groups(panels, width);
        let busiest = panels.div_ceil(g) * g.div_ceil(width);
        assert!(
            busiest <= panels.div_ceil(width) + panels.div_ceil(g),
            "{panels} panels, width {width}: {g} groups, the busiest rank {busiest}"
        );
    }
}

/// A pair cuts few private blocks into groups of output channels, to at least its items;
/// wider gangs keep whole blocks (`gang::private_groups`).
#[test]
fn pairs_cut_few_private_blocks_into_groups() {
    use crate::kernel::gang_items;
    let items = gang_items(2);
    assert_eq!(gang::private_groups(1, 2), items);
    assert_eq!(gang::private_groups(2, 2), items / 2);
    assert_eq!(gang::private_groups(3, 2), items.div_ceil(3));
    assert_eq!(gang::private_groups(items, 2), 1);
    assert_eq!(gang::private_groups(40, 2), 1);
    for width in [1, 3, 4, 16] {
        assert_eq!(gang::private_groups(2, width), 1, "width {width}");
    }
}

/// The direct path packs whole blocks into half of L2 where the weights are the smaller
/// operand (ResNet50's layer2 stride-2 3×3: 128 channels, 784 pixels); where they are the
/// larger (its layer4 3×3: 512 channels, 49 pixels), blocks are sized by a `kc` slice and
/// the whole plane stays one block.
#[test]
fn direct_blocks_fit_l2_where_the_weights_are_smaller() {
    let l2 = CacheSizes::get().l2;
    for (p, input, whole) in [
        (
            Conv2dParams::new(128, 128, 3, 2, 1),
            Shape::new(128, 56, 56),
            true,
        ),
        (
            Conv2dParams::new(512, 512, 3, 1, 1),
            Shape::new(512, 7, 7),
            false,
        ),
    ] {
        let (conv, _) = random_conv(p, input, 2);
        for c in variants(&conv) {
            if c.algo() != ConvAlgo::Direct {
                continue;
            }
            let (nr, kdim) = (c.kernels.nr, p.weight_len() / p.out_channels);
            let block_bytes = c.engine.packed_len() * 4;
            let panels = c.out_shape().plane().div_ceil(nr);
            if whole {
                assert!(
                    block_bytes <= l2 / 2 || block_bytes == kdim * nr * 4,
                    "{}",
                    c.isa()
                );
                assert!(c.blocks() > 1, "{}: {} blocks", c.isa(), c.blocks());
            } else {
                assert_eq!(c.blocks(), 1, "{}", c.isa());
                assert_eq!(block_bytes, kdim * panels * nr * 4);
            }
        }
    }
}

#[test]
fn block_counts_are_even_where_blocks_stay_big_enough() {
    // ResNet50's 56×56 plane (196 panels) with 64-row reductions: 4 blocks of 49 panels.
    assert_eq!(block_count(196, 64, 1), 4);
    assert_eq!(block_count(196, 256, 1), 1);
    // 15 blocks would fit; 16 share out as evenly and split in two.
    assert_eq!(block_count(784, 54, 1), 16);
    // 4 blocks of 14 tile rows would leave blocks of 3, fewer than the 5 asked for.
    assert_eq!(block_count(14, 5, 5), 3);
    // Never more blocks than units, never none.
    assert_eq!(block_count(3, 1, 1), 3);
    assert_eq!(block_count(0, 4, 1), 1);
}

#[test]
fn more_blocks_than_a_wide_gang_come_in_multiples_of_it() {
    use super::direct::WIDE_BLOCKS;
    // 29 blocks would fit, 30 by the pair rule: 32, two a rank of 16.
    assert_eq!(block_count(784, 27, 1), 2 * WIDE_BLOCKS);
    // VGG16's `conv1_2`: 19 blocks of 56 tile rows, at least 3 rows each; 32 would leave
    // 1 or 2, so 16 of 3 or 4.
    assert_eq!(block_count(56, 3, 3), WIDE_BLOCKS);
    // Tiny YOLOv2's first conv: 36 blocks of 5408 panels, 48 of 112 or 113.
    assert_eq!(block_count(5408, 151, 1), 3 * WIDE_BLOCKS);
    // Up to 16, and multiples of it, as they were.
    assert_eq!(block_count(64, 4, 1), WIDE_BLOCKS);
    assert_eq!(block_count(60, 4, 1), 15 + 1);
    assert_eq!(block_count(96, 2, 1), 3 * WIDE_BLOCKS);
    for units in 1..400 {
        for most in 1..40 {
            let blocks = block_count(units, most, 3);
            assert!(
                blocks <= WIDE_BLOCKS || blocks.is_multiple_of(WIDE_BLOCKS),
                "{units}/{most}"
            );
            assert!(blocks <= units.max(1), "{units}/{most}: {blocks}");
        }
    }
}

/// A Winograd plane that the cache budget cuts into 16 blocks or more comes in blocks of
/// at most `WIDE_BLOCK_TILE_ROWS` rows of tiles; one of fewer keeps its blocks.
#[test]
fn winograd_planes_of_many_blocks_take_blocks_of_two_tile_rows() {
    use super::direct::WIDE_BLOCKS;
    use super::winograd::WIDE_BLOCK_TILE_ROWS;
    // VGG16's `conv1_2`: 56 rows of F(4×4) tiles, at least 3 rows a block by the budget,
    // which an L2 of up to 2 MB cuts into 19 blocks.
    if crate::cache::CacheSizes::get().l2 > 2 << 20 {
        return;
    }
    let p = Conv2dParams::new(64, 64, 3, 1, 1);
    let (conv, _) = random_conv(p, Shape::new(64, 224, 224), 1);
    let conv = conv.with_algo(ConvAlgo::Winograd).unwrap();
    // 28 blocks of 2 rows with the AVX-512 and AVX2 panels, more with narrower ones.
    let blocks = conv.engine.blocks();
    assert!(blocks >= 56 / WIDE_BLOCK_TILE_ROWS, "{blocks} blocks");
    let row = 4 * 224;
    for b in 0..blocks {
        let rows = conv.engine.block_pixels(b).len() / row;
        assert!(
            (1..=WIDE_BLOCK_TILE_ROWS).contains(&rows),
            "block {b}: {rows} rows"
        );
    }
    // `conv2_1`: 28 rows of tiles in fewer than 16 blocks of at least 5 rows (panels of
    // 16 tiles or more), as before.
    let p = Conv2dParams::new(64, 128, 3, 1, 1);
    let (conv, _) = random_conv(p, Shape::new(64, 112, 112), 1);
    let conv = conv.with_algo(ConvAlgo::Winograd).unwrap();
    if conv.kernels.nr >= 16 {
        let blocks = conv.engine.blocks();
        assert!(blocks < WIDE_BLOCKS, "{blocks} blocks");
    }
}

/// Each engine's blocks cover the output plane once, in order, and differ by at most
/// one panel (direct), one output row (channel lanes) or one row of tiles (Winograd).
#[test]
fn blocks_tile_the_plane_evenly() {
    for (c, hw) in [
        (3, 224),
        (64, 56),
        (256, 56),
        (128, 28),
        (512, 14),
        (512, 7),
        (64, 27),
    ] {
        let p = Conv2dParams::new(c, 64, 3, 1, 1);
        let (conv, _) = random_conv(p, Shape::new(c, hw, hw), 1);
        for algo in ConvAlgo::ALL.into_iter().filter(|a| a.applies(&p)) {
            let conv = conv.clone().with_algo(algo).unwrap();
            let engine = &conv.engine;
            let unit = match algo.tile() {
                None if algo == ConvAlgo::Lanes => hw,
                None => conv.kernels.nr,
                Some(tile) => tile.m() * hw,
            };
            let plane = hw * hw;
            let ranges: Vec<_> = (0..engine.blocks())
                .map(|b| engine.block_pixels(b))
                .collect();
            assert_eq!(ranges.first().unwrap().start, 0);
            assert_eq!(ranges.last().unwrap().end, plane, "{algo:?} {c}x{hw}");
            assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
            let lens: Vec<usize> = ranges.iter().map(|r| r.len().div_ceil(unit)).collect();
            let (lo, hi) = (lens.iter().min().unwrap(), lens.iter().max().unwrap());
            assert!(hi - lo <= 1, "{algo:?} {c}x{hw}: blocks of {lens:?} units");
        }
    }
}

/// On the channel-lanes path a plane of at least `WIDE_BLOCKS · WIDE_BLOCK_ROWS` output
/// rows is cut into at least `WIDE_BLOCKS` blocks (the stems, for 16-wide gangs); a
/// smaller one keeps the blocks its cache budget gives.
#[test]
fn tall_lanes_planes_are_cut_for_wide_gangs() {
    use super::direct::WIDE_BLOCKS;
    use super::lanes::WIDE_BLOCK_ROWS;
    let blocks = |p: Conv2dParams, side: usize| {
        let (conv, _) = random_conv(p, Shape::new(p.in_channels, side, side), 1);
        conv.with_algo(ConvAlgo::Lanes).unwrap().blocks()
    };
    // ResNet50's and SqueezeNet's stems: 112 and 111 output rows.
    assert!(blocks(Conv2dParams::new(3, 64, 7, 2, 3), 224) >= WIDE_BLOCKS);
    assert!(blocks(Conv2dParams::new(3, 64, 3, 2, 0), 224) >= WIDE_BLOCKS);
    let rows = WIDE_BLOCKS * WIDE_BLOCK_ROWS;
    assert!(blocks(Conv2dParams::new(3, 8, 3, 1, 1), rows) >= WIDE_BLOCKS);
    assert!(blocks(Conv2dParams::new(3, 8, 3, 1, 1), rows - 1) < WIDE_BLOCKS);
}

/// A one-block plane of at least two `HALF_BLOCK_PANELS` halves is cut in two, so a pair
/// of ranks runs it private (ResNet50's first 1×1 conv, 98 panels of 32 on AVX-512); a
/// smaller one stays whole (its `128 → 512` 1×1 convs at 28×28).
#[test]
fn large_one_block_planes_are_cut_in_two() {
    use super::direct::{HALF_BLOCK_PANELS, WIDE_BLOCK_PANELS, WIDE_BLOCKS};
    let mut cut = 0;
    for (p, input) in [
        (Conv2dParams::new(64, 64, 1, 1, 0), Shape::new(64, 56, 56)),
        (
            Conv2dParams::new(128, 512, 1, 1, 0),
            Shape::new(128, 28, 28),
        ),
        // 1600 pixels: 34 panels of 48, 50 of 32.
        (Conv2dParams::new(256, 64, 1, 1, 0), Shape::new(256, 40, 40)),
        // 900 pixels of 16 channels fit one block in any L2 (57.6 KB): 57 panels of 16,
        // cut in two on the portable path of every machine, whatever its caches.
        (Conv2dParams::new(16, 64, 1, 1, 0), Shape::new(16, 30, 30)),
    ] {
        let (conv, _) = random_conv(p, input, 3);
        for c in variants(&conv)
            .into_iter()
            .filter(|c| c.algo() == ConvAlgo::Direct)
        {
            let panels = c.out_shape().plane().div_ceil(c.kernels.nr);
            let kdim = p.weight_len() / p.out_channels;
            let fits_one = c.blocking.whole_columns(kdim, c.kernels.nr) >= panels * c.kernels.nr;
            if !fits_one {
                continue;
            }
            let want = if panels >= WIDE_BLOCKS * WIDE_BLOCK_PANELS {
                continue; // `large_planes_have_a_block_per_rank_of_a_wide_gang`
            } else if panels >= 2 * HALF_BLOCK_PANELS {
                2
            } else {
                1
            };
            assert_eq!(c.blocks(), want, "{p:?} {} panels {panels}", c.isa());
            cut += usize::from(want == 2);
        }
    }
    assert!(cut > 0, "no plane was cut in two");
}

/// A direct plane of `WIDE_BLOCKS · WIDE_BLOCK_PANELS` panels or more (pointwise;
/// `WIDE_BLOCKS · HALF_BLOCK_PANELS` for other kernels) has a block for every rank of a
/// 16-wide gang, however few blocks its cache budget asks for (VGG16's `conv1_1`: 6;
/// ResNet50's `256 → 64` 1×1 convs on 56×56: 4); a smaller one keeps the budget's count
/// (ResNet50's `512 → 128` on 28×28: 1; AlexNet's `conv1`, 64 panels: 6 with a 2 MB L2, 18
/// with 512 KB), or two blocks where the budget gives one to a plane of two halves.
#[test]
fn large_planes_have_a_block_per_rank_of_a_wide_gang() {
    use super::direct::{HALF_BLOCK_PANELS, WIDE_BLOCK_PANELS, WIDE_BLOCKS};
    for (p, input) in [
        (Conv2dParams::new(3, 64, 11, 4, 2), Shape::new(3, 224, 224)),
        (Conv2dParams::new(3, 64, 3, 1, 1), Shape::new(3, 224, 224)),
        (Conv2dParams::new(3, 64, 7, 2, 3), Shape::new(3, 224, 224)),
        (Conv2dParams::new(256, 64, 1, 1, 0), Shape::new(256, 56, 56)),
        (
            Conv2dParams::new(512, 128, 1, 1, 0),
            Shape::new(512, 28, 28),
        ),
    ] {
        let (conv, _) = random_conv(p, input, 3);
        for c in variants(&conv) {
            if c.algo() != ConvAlgo::Direct {
                continue;
            }
            let panels = c.out_shape().plane().div_ceil(c.kernels.nr);
            let least = if p.kernel == (1, 1) {
                WIDE_BLOCK_PANELS
            } else {
                HALF_BLOCK_PANELS
            };
            // What the cache budget alone gives (`Direct::new`), on this machine's caches.
            let kdim = p.weight_len() / p.out_channels;
            let columns = if p.out_channels < c.out_shape().plane() {
                c.blocking.whole_columns(kdim, c.kernels.nr)
            } else {
                c.blocking.columns(kdim, c.kernels.nr)
            };
            let budget = super::block_count(panels, columns / c.kernels.nr, 1);
            let want = if panels >= WIDE_BLOCKS * least {
                budget.max(WIDE_BLOCKS)
            } else if budget == 1 && panels >= 2 * HALF_BLOCK_PANELS {
                2
            } else {
                budget
            };
            assert_eq!(
                c.blocks(),
                want,
                "{p:?} {}: {} blocks of {panels} panels, the budget {budget}",
                c.isa(),
                c.blocks()
            );
        }
    }
}

/// A Winograd plane that fits one block is cut in two where its transformed weights are
/// small (`SPLIT_WEIGHT_BLOCKS`: ResNet50's 28×28 `128 → 128` layers, 2.4 MB), and stays
/// whole where they are large (VGG16's 28×28 `512 → 512`, 38 MB).
#[test]
fn one_block_winograd_planes_with_small_weights_are_cut_in_two() {
    use super::winograd::SPLIT_WEIGHT_BLOCKS;
    for c in [128, 512] {
        let (conv, _) = random_conv(Conv2dParams::new(c, c, 3, 1, 1), Shape::new(c, 28, 28), 4);
        for v in variants(&conv) {
            if v.algo() != ConvAlgo::Winograd {
                continue;
            }
            // 7 rows of 7 tiles: fewer than the 4·NR tiles a block must hold, so one
            // block before the cut.
            let u_bytes = 36 * c * c * 4;
            let want = if u_bytes <= SPLIT_WEIGHT_BLOCKS * v.blocking.column_bytes {
                2
            } else {
                1
            };
            assert_eq!(v.blocks(), want, "{c} channels on {}", v.isa());
        }
    }
}

/// A gathered pack splits by input channels, so a shared gang packs a block of one or two
/// panels on up to 16 ranks (`GATHER_UNITS` in `direct.rs`): each unit packed alone into
/// its own rect gives the bits of the whole block packed at once, padding and a joined
/// tail's unwritten columns included.
#[test]
fn gathered_packs_split_by_input_channels() {
    for (p, input) in [
        // ResNet50's 7×7 3×3 conv, cut down: 49 pixels, one panel and a tail.
        (Conv2dParams::new(40, 16, 3, 1, 1), Shape::new(40, 7, 7)),
        // A stride-2 1×1 (ResNet50's downsample) with fewer channels than units.
        (Conv2dParams::new(9, 24, 1, 2, 0), Shape::new(9, 14, 14)),
        // Padding, a stride and a short last panel.
        (Conv2dParams::new(21, 8, 3, 2, 1), Shape::new(21, 11, 13)),
    ] {
        let (conv, x) = random_conv(p, input, 7);
        for c in variants(&conv) {
            if c.algo() != ConvAlgo::Direct {
                continue;
            }
            let engine = &c.engine;
            let units = engine.pack_units(0);
            assert_eq!(units, p.in_channels.min(16), "{p:?} {}", c.isa());
            let mut work = vec![0.0; engine.pack_work_len()];
            let mut whole = vec![f32::NAN; engine.packed_len()];
            engine.pack(c.kernels, &x, 0, &mut whole, &mut work);
            let mut parts = vec![f32::NAN; engine.packed_len()];
            for u in 0..units {
                let r = engine.pack_rect(0, u..u + 1);
                let mut view = MatMut::from_slice(&mut parts[r.offset..], r.ld, r.rows, r.cols);
                engine.pack_part(c.kernels, &x, 0, u..u + 1, &mut view, &mut work);
            }
            assert!(bits(&parts) == bits(&whole), "{p:?} {}", c.isa());
        }
    }
}
