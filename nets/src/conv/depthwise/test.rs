use proptest::prelude::*;

use super::*;
use crate::batchnorm::{BatchNorm, fold_batchnorm};
use crate::naive;
use crate::test_util::{
    TOL, abs, assert_bit_identical, assert_close, bits, proptest_config, random_vec, same_bits,
    sprinkle_specials,
};

/// Activation `which` (0–3) with parameters from `a` and `span`.
fn activation(which: usize, a: f32, span: f32) -> Activation {
    match which {
        0 => Activation::None,
        1 => Activation::Relu,
        2 => Activation::Clip {
            min: a,
            max: a + span,
        },
        _ => Activation::LeakyRelu { slope: a },
    }
}

/// Random layers of up to `channels` channels on planes up to `side` a side: every kernel
/// size to 5 and stride to 3 per axis, every padding PyTorch allows (at most half the
/// kernel), every activation, and a seed for the values.
fn random_case(
    channels: usize,
    side: usize,
) -> impl Strategy<Value = (DepthwiseParams, Shape, u64)> {
    let geometry = (
        1..=5usize,
        1..=5usize,
        1..=3usize,
        1..=3usize,
        0..=2usize,
        0..=2usize,
    );
    let act = (0..4usize, -1.0f32..0.5, 0.0f32..1.5);
    (
        1..=channels,
        1..=side,
        1..=side,
        geometry,
        act,
        0u64..10_000,
    )
        .prop_map(
            |(c, h, w, (kh, kw, sy, sx, py, px), (act, a, span), seed)| {
                let p = DepthwiseParams {
                    channels: c,
                    kernel: (kh, kw),
                    stride: (sy, sx),
                    padding: (py.min(kh / 2), px.min(kw / 2)),
                    act: activation(act, a, span),
                };
                (p, Shape::new(c, h, w), seed)
            },
        )
        .prop_filter("a layer that has an output", |(p, input, _)| {
            p.out_shape(*input).is_ok()
        })
}

/// A layer of random weights and bias, and a random input.
fn random_layer(p: DepthwiseParams, input: Shape, seed: u64) -> (DepthwiseConv2d, Vec<f32>) {
    let w = random_vec(p.weight_len(), seed);
    let b = random_vec(p.channels, seed + 1);
    let x = random_vec(input.len(), seed + 2);
    let layer = DepthwiseConv2d::new(p, input, w, Some(b)).expect("valid layer");
    (layer, x)
}

/// The layer on every ISA path this CPU runs (the portable one included), by each
/// algorithm.
fn variants(layer: &DepthwiseConv2d) -> Vec<DepthwiseConv2d> {
    Isa::available()
        .into_iter()
        .flat_map(|isa| {
            [DepthwiseAlgo::Blocked, DepthwiseAlgo::Planes]
                .map(|algo| layer.clone().with_isa(isa).unwrap().with_algo(algo))
        })
        .collect()
}

/// `Σ|w·x| + |bias|` per output: the reference on absolute values, no activation.
fn scale(layer: &DepthwiseConv2d, x: &[f32]) -> Vec<f32> {
    let p = layer.params().with_act(Activation::None);
    let (w, b) = (abs(layer.weights()), abs(layer.bias()));
    naive::depthwise(&p, layer.in_shape(), &abs(x), &w, &b)
}

/// Every ISA path against the naive f64 reference.
fn check_against_naive(layer: &DepthwiseConv2d, x: &[f32]) {
    let p = *layer.params();
    let input = layer.in_shape();
    let want = naive::depthwise(&p, input, x, layer.weights(), layer.bias());
    let scale = scale(layer, x);
    for l in variants(layer) {
        let got = l.forward(&[x], &mut Scratch::new());
        assert_close(
            &got,
            &want,
            &scale,
            TOL,
            &format!("{p:?} {input} {}", l.isa()),
        );
    }
}

proptest! {
    #![proptest_config(proptest_config(96))]

    /// Random shapes, odd sizes included, every kernel size to 5 and stride to 3 per axis,
    /// every padding PyTorch allows, and every activation.
    #[test]
    fn depthwise_matches_naive((p, input, seed) in random_case(40, 40)) {
        let (layer, x) = random_layer(p, input, seed);
        check_against_naive(&layer, &x);
    }

    /// Rows of 30 to 150 pixels: those at least a block wide (32 floats portable, 64 AVX2,
    /// 128 AVX-512) are computed straight into the output, row by row; the others as one
    /// run over the plane.
    #[test]
    fn wide_rows_match_naive(
        c in 1usize..=3, h in 1usize..=6, w in 30usize..=150,
        k in 1usize..=5, sy in 1usize..=2, sx in 1usize..=2, pad: bool,
        act in 0usize..4, a in -1.0f32..0.5, span in 0.0f32..1.5, seed in 0u64..10_000,
    ) {
        let p = DepthwiseParams {
            channels: c, kernel: (k, k), stride: (sy, sx),
            padding: if pad { (k / 2, k / 2) } else { (0, 0) }, act: activation(act, a, span),
        };
        let input = Shape::new(c, h, w);
        prop_assume!(p.out_shape(input).is_ok());
        let (layer, x) = random_layer(p, input, seed);
        check_against_naive(&layer, &x);
    }
}

proptest! {
    #![proptest_config(proptest_config(64))]

    /// Both algorithms give the same bits on every ISA path (each element is the bias, then
    /// a multiply-add per tap in order, then the activation, either way), NaN and infinities
    /// in the input included.
    #[test]
    fn blocked_and_planes_have_the_same_bits((p, input, seed) in random_case(40, 30)) {
        let (layer, mut x) = random_layer(p, input, seed);
        sprinkle_specials(&mut x, 37, seed);
        for isa in Isa::available() {
            let l = layer.clone().with_isa(isa).unwrap();
            let blocked = l.clone().with_algo(DepthwiseAlgo::Blocked).forward(&[&x], &mut Scratch::new());
            let planes = l.with_algo(DepthwiseAlgo::Planes).forward(&[&x], &mut Scratch::new());
            let same = blocked.iter().zip(&planes).all(|(&b, &p)| same_bits(b, p));
            prop_assert!(same, "{:?} {} {}", p, input, isa);
        }
    }
}

/// Planes of 1 to 3 pixels a side, channel counts around every path's vector width (4, 8
/// and 16 lanes), every kernel to 3, stride to 3 and padding PyTorch allows.
#[test]
fn tiny_planes_match_naive() {
    for (h, w) in [(1, 1), (1, 2), (2, 1), (2, 2), (1, 3), (3, 2), (3, 3)] {
        for c in [1, 3, 5, 9, 17] {
            for (kh, kw) in [(1, 1), (1, 3), (2, 2), (3, 1), (3, 3)] {
                for (sy, sx) in [(1, 1), (2, 1), (1, 3), (3, 3)] {
                    let p = DepthwiseParams {
                        channels: c,
                        kernel: (kh, kw),
                        stride: (sy, sx),
                        padding: (kh / 2, kw / 2),
                        act: Activation::RELU6,
                    };
                    let input = Shape::new(c, h, w);
                    if p.out_shape(input).is_err() {
                        continue;
                    }
                    let (layer, x) = random_layer(p, input, (h * 10 + w) as u64);
                    check_against_naive(&layer, &x);
                }
            }
        }
    }
}

/// The channel-blocked kernel's scratch: bands as tall as fit the budget (at least one
/// row), evened out over the output rows, a ring of the input rows a band reads, at most
/// the input's.
#[test]
fn block_layout_fits_its_budget() {
    for (p, side) in [
        (DepthwiseParams::new(32, 3, 1, 1), 112),
        (DepthwiseParams::new(96, 3, 2, 1), 112),
        (DepthwiseParams::new(144, 3, 1, 1), 56),
        (DepthwiseParams::new(576, 3, 2, 1), 14),
        (DepthwiseParams::new(960, 3, 1, 1), 7),
        (DepthwiseParams::new(8, 5, 3, 2), 1),
        (DepthwiseParams::new(8, 7, 1, 3), 2000),
    ] {
        let input = Shape::new(p.channels, side, side);
        let out = p.out_shape(input).unwrap();
        let g = BlockGeometry::new(&p, input, out);
        for lanes in [1, 4, 8, 16] {
            let l = g.layout(lanes);
            let row = l.pitch * lanes;
            assert_eq!(l.pitch, side + 2 * p.padding.1);
            assert!(
                l.band_rows >= 1 && l.band_rows <= out.h,
                "{p:?} {lanes}: {l:?}"
            );
            let (lo, hi) = g.rows_read(0..l.band_rows);
            assert!(
                hi - lo <= l.ring_rows && l.ring_rows <= side,
                "{p:?} {lanes}: {l:?}"
            );
            assert_eq!(l.len, (l.ring_rows + 1) * row + l.band_rows * out.w * lanes);
            assert!(
                l.len <= BLOCK_TILE_FLOATS || l.band_rows == 1,
                "{p:?} {lanes}: {l:?}"
            );
            // Evened out: no band is more than one row shorter than the others.
            let bands = out.h.div_ceil(l.band_rows);
            assert!(out.h > (bands - 1) * l.band_rows && out.h + bands > bands * l.band_rows);
        }
    }
    // Rows read: clipped to the input, empty in the padding.
    let g = BlockGeometry::new(
        &DepthwiseParams::new(1, 3, 2, 1),
        Shape::new(1, 5, 5),
        Shape::new(1, 3, 3),
    );
    assert_eq!(g.rows_read(0..1), (0, 2));
    assert_eq!(g.rows_read(1..3), (1, 5));
    let g = BlockGeometry::new(
        &DepthwiseParams {
            padding: (2, 2),
            ..DepthwiseParams::new(1, 1, 1, 0)
        },
        Shape::new(1, 2, 2),
        Shape::new(1, 6, 6),
    );
    assert_eq!(g.rows_read(0..2), (0, 0));
    assert_eq!(g.rows_read(5..6), (2, 2));
}

/// MobileNet's shapes (fewer channels): 3×3, padding 1, strides 1 and 2, ReLU6.
#[test]
fn mobilenet_shapes_match_naive() {
    for (c, side, stride) in [
        (4, 112, 1),
        (3, 112, 2),
        (5, 56, 2),
        (6, 28, 1),
        (7, 14, 2),
        (9, 7, 1),
    ] {
        let p = DepthwiseParams::new(c, 3, stride, 1).with_act(Activation::RELU6);
        let (layer, x) = random_layer(p, Shape::new(c, side, side), 3);
        check_against_naive(&layer, &x);
    }
}

#[test]
fn depthwise_propagates_nan_and_inf() {
    for (p, input) in [
        (DepthwiseParams::new(6, 3, 1, 1), Shape::new(6, 14, 14)),
        (DepthwiseParams::new(5, 3, 2, 1), Shape::new(5, 15, 13)),
        (DepthwiseParams::new(3, 5, 1, 2), Shape::new(3, 80, 70)),
        (DepthwiseParams::new(4, 3, 2, 1), Shape::new(4, 7, 7)),
    ] {
        for act in [
            Activation::None,
            Activation::Relu,
            Activation::RELU6,
            Activation::LeakyRelu { slope: 0.1 },
        ] {
            let p = p.with_act(act);
            let (layer, clean) = random_layer(p, input, 5);
            let mut x = clean.clone();
            sprinkle_specials(&mut x, 40, 6);
            let want = naive::depthwise(&p, input, &x, layer.weights(), layer.bias());
            assert!(want.iter().any(|v| v.is_nan()), "{p:?}: a NaN output");
            if act == Activation::None {
                assert!(
                    want.iter().any(|v| v.is_infinite()),
                    "{p:?}: an infinite output"
                );
            }
            check_against_naive(&layer, &x);
            // An infinite weight: NaN where its tap reads the padding (0·∞), ±∞ elsewhere
            // unless the window also holds a zero; and a NaN bias.
            let mut w = layer.weights().to_vec();
            w[1] = f32::INFINITY;
            let mut b = layer.bias().to_vec();
            *b.last_mut().unwrap() = f32::NAN;
            let special = DepthwiseConv2d::new(p, input, w, Some(b)).unwrap();
            check_against_naive(&special, &clean);
            let all_nan = vec![f32::NAN; input.len()];
            for l in variants(&layer) {
                let got = l.forward(&[&all_nan], &mut Scratch::new());
                assert!(
                    got.iter().all(|v| v.is_nan()),
                    "{p:?} {}: all-NaN input",
                    l.isa()
                );
            }
        }
    }
}

#[test]
fn bad_inputs_are_errors() {
    let input = Shape::new(8, 6, 6);
    let ok = DepthwiseParams::new(8, 3, 1, 1);
    let err = |p: DepthwiseParams, input: Shape| p.out_shape(input).unwrap_err().to_string();
    assert!(
        err(
            DepthwiseParams {
                kernel: (0, 3),
                ..ok
            },
            input
        )
        .contains("zero size")
    );
    assert!(
        err(
            DepthwiseParams {
                stride: (1, 0),
                ..ok
            },
            input
        )
        .contains("zero size")
    );
    assert!(err(DepthwiseParams { channels: 0, ..ok }, Shape::new(0, 6, 6)).contains("zero size"));
    assert!(err(ok, Shape::new(8, 0, 6)).contains("empty input plane 0×6"));
    let channels = ok.out_shape(Shape::new(4, 6, 6)).unwrap_err();
    assert!(matches!(
        channels,
        KernelError::Channels {
            expected: 8,
            got: 4,
            ..
        }
    ));
    let big = DepthwiseParams::new(8, 5, 1, 0).out_shape(Shape::new(8, 4, 9));
    assert!(matches!(big, Err(KernelError::Geometry { .. })));
    assert!(
        big.unwrap_err()
            .to_string()
            .contains("kernel 5×5 larger than padded input 4×9")
    );
    // Padding makes room: 4 + 2 ≥ 5.
    assert!(
        DepthwiseParams::new(8, 5, 1, 1)
            .out_shape(Shape::new(8, 4, 9))
            .is_ok()
    );
    let new = |w: usize, b: Option<usize>| {
        DepthwiseConv2d::new(ok, input, vec![0.0; w], b.map(|n| vec![0.0; n]))
    };
    assert_eq!(
        new(71, None).unwrap_err(),
        KernelError::BufferLen {
            what: "dwconv weights",
            expected: 72,
            got: 71
        }
    );
    assert_eq!(
        new(72, Some(9)).unwrap_err(),
        KernelError::BufferLen {
            what: "dwconv bias",
            expected: 8,
            got: 9
        }
    );
    assert!(new(72, Some(8)).is_ok());
}

/// Whole channels per chunk, at most 32 chunks, fixed by the shape.
#[test]
fn chunks_are_groups_of_whole_channels() {
    for (c, chunks, per) in [
        (1, 1, 1),
        (32, 32, 1),
        (33, 17, 2),
        (960, 32, 30),
        (1024, 32, 32),
    ] {
        let p = DepthwiseParams::new(c, 3, 1, 1);
        let input = Shape::new(c, 5, 6);
        let layer = DepthwiseConv2d::new(p, input, vec![0.0; p.weight_len()], None).unwrap();
        assert_eq!(layer.chunks(), chunks, "{c} channels");
        assert_eq!(layer.chunk_channels(0), 0..per, "{c} channels");
        assert_eq!(layer.chunk_range(0), 0..per * 30, "{c} channels");
        assert_eq!(layer.flops(), 2 * 9 * 30 * c as u64);
        assert_eq!(layer.describe(), "dwconv 3x3/1");
    }
}

/// Every width of a gang (as `compute_chunks` calls over `rank_chunks`) gives the bits of
/// width 1, on every ISA path; so do other cuts of the chunks into runs.
#[test]
fn bit_identical_for_every_width() {
    for (p, input) in [
        (
            DepthwiseParams::new(32, 3, 1, 1).with_act(Activation::RELU6),
            Shape::new(32, 112, 112),
        ),
        (DepthwiseParams::new(96, 3, 2, 1), Shape::new(96, 30, 30)),
        (
            DepthwiseParams::new(40, 5, 2, 2).with_act(Activation::Relu),
            Shape::new(40, 13, 11),
        ),
        (DepthwiseParams::new(70, 3, 1, 1), Shape::new(70, 7, 7)),
        (DepthwiseParams::new(3, 3, 1, 0), Shape::new(3, 3, 3)),
    ] {
        let (layer, x) = random_layer(p, input, 11);
        for l in variants(&layer) {
            assert_bit_identical(&l, &[&x]);
            let want = bits(&l.forward(&[&x], &mut Scratch::new()));
            // Runs of 1, 2, 3 and 5 chunks, one scratch kept across them.
            for step in [1, 2, 3, 5] {
                let mut out = vec![f32::NAN; l.out_shape().len()];
                let mut scratch = Scratch::new();
                let mut start = 0;
                while start < l.chunks() {
                    let run = start..(start + step).min(l.chunks());
                    let range = l.output_range(run.clone());
                    l.compute_chunks(&[&x], run.clone(), &mut out[range], &mut scratch);
                    start = run.end;
                }
                assert!(bits(&out) == want, "{p:?} {}: runs of {step}", l.isa());
            }
        }
    }
}

/// The gang path (`run_rank` through the runtime) at widths 1–16 has the bits of
/// `forward`, on every ISA path.
#[test]
fn gangs_of_every_width_are_bit_identical() {
    use std::sync::Arc;
    use taopipe_runtime::{Place, Runtime, SharedSlice};

    use crate::Workspace;

    let rt = Runtime::builder().workers(16).pin(false).build().unwrap();
    for (p, input) in [
        (
            DepthwiseParams::new(32, 3, 1, 1).with_act(Activation::RELU6),
            Shape::new(32, 56, 56),
        ),
        (DepthwiseParams::new(144, 3, 2, 1), Shape::new(144, 28, 28)),
        (
            DepthwiseParams::new(50, 5, 1, 2).with_act(Activation::LeakyRelu { slope: 0.2 }),
            Shape::new(50, 9, 14),
        ),
        (DepthwiseParams::new(7, 3, 2, 1), Shape::new(7, 20, 20)),
    ] {
        let (layer, x) = random_layer(p, input, 5);
        for l in variants(&layer) {
            let want = l.forward(&[&x], &mut Scratch::new());
            let l = Arc::new(l);
            for width in 1..=16 {
                let out = Arc::new(SharedSlice::new(vec![f32::NAN; want.len()]));
                let (ll, o, xx) = (l.clone(), out.clone(), x.clone());
                rt.run_on(Place::new(0, width), move |ctx| {
                    let ws = Workspace::new();
                    ll.run_rank(ctx, &[&xx], &o, &ws, &mut Scratch::new());
                })
                .unwrap();
                let got = out.read().unwrap().to_vec();
                assert!(bits(&got) == bits(&want), "{p:?} {} width {width}", l.isa());
            }
        }
    }
}

/// `fold_batchnorm` works unchanged on `[C, 1, kh, kw]` weights (`C` rows of `kh·kw`):
/// the folded layer computes the layer followed by the batch norm.
#[test]
fn folded_batchnorm_is_the_layer_then_the_norm() {
    let (c, input) = (12, Shape::new(12, 9, 10));
    let p = DepthwiseParams::new(c, 3, 2, 1);
    let (layer, x) = random_layer(p, input, 21);
    let bn = BatchNorm {
        gamma: random_vec(c, 30).iter().map(|v| v + 1.5).collect(),
        beta: random_vec(c, 31),
        mean: random_vec(c, 32),
        var: random_vec(c, 33).iter().map(|v| v + 1.1).collect(),
        eps: 1e-5,
    };
    let (w, b) = fold_batchnorm(layer.weights(), Some(layer.bias()), &bn).unwrap();
    let folded = DepthwiseConv2d::new(p.with_act(Activation::RELU6), input, w, Some(b)).unwrap();
    let plain = naive::depthwise(&p, input, &x, layer.weights(), layer.bias());
    let (scale_bn, shift) = bn.affine().unwrap();
    let plane = folded.out_shape().plane();
    let want: Vec<f32> = plain
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            naive::activate(
                Activation::RELU6,
                scale_bn[i / plane] * v + shift[i / plane],
            )
        })
        .collect();
    let bound: Vec<f32> = scale(&layer, &x)
        .iter()
        .enumerate()
        .map(|(i, s)| s * scale_bn[i / plane].abs() + shift[i / plane].abs())
        .collect();
    for l in variants(&folded) {
        let got = l.forward(&[&x], &mut Scratch::new());
        assert_close(&got, &want, &bound, TOL, &format!("folded {}", l.isa()));
    }
}
