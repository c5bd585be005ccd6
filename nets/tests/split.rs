//! Layers split between two places by output channels: bit-identical to a single-place run
//! for every ratio, kernel type and chain layout; ratios rounded to the chunk grid; bad plans
//! refused by name. And the investigation behind "output channels only": a row (H) slab of a
//! convolution matches the whole layer only where it starts and ends on its column tiles.

use std::collections::BTreeSet;

use taopipe_dsl::{NetSpec, net};
use taopipe_nets::{
    BuildOptions, Chain, Conv2d, Conv2dParams, ConvAlgo, Frame, Kernel, Model, RandomWeights,
    Scratch, Shape, SplitError, zoo,
};
use taopipe_runtime::{Place, Runtime};

fn input(len: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Every kernel type: convolutions (im2col and 1×1 pointwise) with folded batchnorm and
/// fused ReLU, two residual blocks (one with a down-sampling branch), max and average
/// pooling, a stand-alone batchnorm (an affine kernel) and ReLU, global average pooling,
/// fully connected layers and softmax.
/// Every kernel kind: the first block's add follows a ReLU, so it runs as its own layer;
/// the second block's add goes into its down-sampling convolution's store.
fn every_kernel() -> NetSpec {
    net! { every [3, 16, 16] =>
        stem: conv(24, 3x3, pad 1),
        stem_bn: batchnorm,
        stem_relu: relu,
        pool1: maxpool(2x2, stride 2),
        b1_conv1: conv(12, 1x1),
        b1_bn1: batchnorm,
        b1_relu1: relu,
        b1_conv2: conv(24, 3x3, pad 1),
        b1_bn2: batchnorm,
        b1_relu2: relu,
        b1_add: add(pool1),
        b2_conv1: conv(40, 3x3, stride 2, pad 1),
        b2_bn1: batchnorm,
        b2_relu1: relu,
        b2_conv2: conv(40, 1x1),
        b2_bn2: batchnorm,
        b2_down: conv(40, 1x1, stride 2) from b1_add,
        b2_down_bn: batchnorm,
        b2_add: add(b2_bn2) relu,
        pool2: avgpool(2x2, stride 1),
        norm: batchnorm,
        post: relu,
        avg: gap,
        fc1: fc(20) relu,
        fc2: fc(10),
        prob: softmax,
    }
    .expect("net")
}

/// The frame of a single-place run, every layer's output in it.
fn reference(rt: &Runtime, model: &Model, x: &[f32]) -> Frame {
    let frame = model.frame(x.to_vec()).expect("frame");
    rt.run(model.graph(&frame, |_| Place::new(0, 1)))
        .expect("reference run");
    frame
}

/// The model of `spec` twice: keeping every layer's output (`BuildOptions::keep_outputs`),
/// and with the memory plan's shared buffers (the default), which the split graph must
/// order as well as the single-place one.
fn models(spec: NetSpec, seed: u64) -> [Model; 2] {
    [true, false].map(|keep_outputs| {
        let options = BuildOptions {
            keep_outputs,
            ..BuildOptions::default()
        };
        Model::build_with(spec.clone(), &RandomWeights { seed }, &options).expect("model")
    })
}

/// Runs `chains` split between `a` and `b` on each of `models` and checks the net output
/// and every complete layer output still in the frame (all of them for a model that keeps
/// them) against `want` to the bit (an interior layer: `a`'s channels). Returns the plan's
/// exchange count and how many layers were interior.
fn check_split(
    rt: &Runtime,
    models: &[Model; 2],
    x: &[f32],
    want: &Frame,
    (a, b): (Place, Place),
    chains: &[Chain],
) -> (usize, usize) {
    let mut counts = (0, 0);
    for (m, model) in models.iter().enumerate() {
        let keeps = m == 0;
        let plan = model.split_plan(a, b, chains).expect("plan");
        let frame = model.frame(x.to_vec()).expect("frame");
        rt.run(model.split_graph(&frame, &plan)).expect("split run");
        let name = model.spec().name();
        assert!(
            bits(&frame.output()) == bits(&want.output()),
            "{name} {chains:?} (keeps outputs: {keeps}): the net output differs"
        );
        for split in plan.layers() {
            let i = split.layer;
            let Some(got) = frame.layer_output(i) else {
                assert!(!keeps, "{name}: layer {i} was not kept");
                continue;
            };
            let expect = want.layer_output(i).expect("layer");
            let n = if split.interior {
                (split.share_a * expect.len() as f64).round() as usize
            } else {
                expect.len()
            };
            assert!(
                bits(&got[..n]) == bits(&expect[..n]),
                "{name} {chains:?}: layer {i} ({}) differs",
                split.kind
            );
        }
        // A second frame, from the same plan.
        let again = model.frame(x.to_vec()).expect("frame");
        rt.run(model.split_graph(&again, &plan))
            .expect("second frame");
        assert!(bits(&again.output()) == bits(&want.output()));
        let interior = plan.layers().iter().filter(|l| l.interior).count();
        counts = (plan.exchanges(), interior);
    }
    counts
}

const RATIOS: [f64; 6] = [0.0, 0.1, 0.37, 0.5, 0.8, 1.0];

#[test]
fn every_kernel_type_splits_bit_identically_at_every_ratio() {
    let models = models(every_kernel(), 3);
    // b2_down, with b2_add fused, is b2_bn2's last reader: it writes over that buffer, and
    // its split sides must both read the residual there.
    assert_eq!(
        models.each_ref().map(Model::in_place_layers),
        [0, 1],
        "kept, shared"
    );
    let model = &models[0];
    let rt = Runtime::builder().workers(3).build().expect("runtime");
    let x = input(model.input_len(), 7);
    let want = reference(&rt, model, &x);
    let units = model.spec().units().len();
    let kinds: BTreeSet<&str> = model
        .split_plan(
            Place::new(0, 1),
            Place::new(1, 1),
            &[Chain::new(0..units, 0.5)],
        )
        .expect("plan")
        .layers()
        .iter()
        .map(|l| l.kind)
        .collect();
    let all = [
        "add", "affine", "avgpool", "conv", "fc", "gap", "maxpool", "relu", "softmax",
    ];
    assert_eq!(kinds, all.into_iter().collect());
    // Places of one and two workers: a side's chunks are split again among its ranks.
    let places = [
        (Place::new(0, 1), Place::new(1, 1)),
        (Place::new(0, 2), Place::new(2, 1)),
        (Place::new(2, 1), Place::new(0, 2)),
    ];
    for (a, b) in places {
        for ratio in RATIOS {
            let per_unit: Vec<Chain> = (0..units).map(|u| Chain::new(u..u + 1, ratio)).collect();
            let (per_unit_exchanges, _) = check_split(&rt, &models, &x, &want, (a, b), &per_unit);
            let whole = [Chain::new(0..units, ratio)];
            let (chained_exchanges, interior) =
                check_split(&rt, &models, &x, &want, (a, b), &whole);
            if ratio > 0.0 && ratio < 1.0 {
                assert!(
                    interior >= 4,
                    "ratio {ratio}: only {interior} interior layers"
                );
                assert!(
                    chained_exchanges < per_unit_exchanges,
                    "ratio {ratio}: a chain does not save exchanges ({chained_exchanges} vs {per_unit_exchanges})"
                );
            } else {
                assert_eq!((chained_exchanges, per_unit_exchanges), (0, 0));
            }
        }
        // Chains of mixed lengths and ratios: exchanges where neighbours differ.
        let mixed = [
            Chain::new(0..2, 0.3),
            Chain::new(2..5, 1.0),
            Chain::new(5..9, 0.6),
            Chain::new(9..units, 0.0),
        ];
        check_split(&rt, &models, &x, &want, (a, b), &mixed);
    }
}

/// Issue 11's kernels: depthwise and grouped convs, fused and stand-alone ReLU6 and leaky
/// ReLU, an inverted residual, a fire module's concat.
fn mobile_kernels() -> NetSpec {
    net! { mobile [3, 16, 16] =>
        stem:    conv(16, 3x3, stride 2, pad 1),
        stem_bn: batchnorm,
        stem_r6: relu6,
        dw:      conv(16, 3x3, pad 1, groups 16),
        dw_bn:   batchnorm,
        dw_r6:   relu6,
        proj:    conv(16, 1x1),
        res:     add(stem_r6),
        solo:    leakyrelu(0.1),
        squeeze: conv(8, 1x1) relu,
        e1:      conv(8, 1x1) relu from squeeze,
        e3:      conv(8, 3x3, pad 1, groups 4) from squeeze,
        clip:    clip(-1, 1),
        fire:    concat(e1, clip),
        dw2:     conv(16, 3x3, stride 2, pad 1, groups 16),
        avg:     gap,
        bound:   clip(0, 4),
        fc:      fc(10),
    }
    .expect("net")
}

#[test]
fn mobile_kernels_split_bit_identically() {
    let models = models(mobile_kernels(), 9);
    let model = &models[0];
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let x = input(model.input_len(), 4);
    let want = reference(&rt, model, &x);
    let units = model.spec().units().len();
    let (a, b) = (Place::new(0, 1), Place::new(1, 1));
    let kinds: BTreeSet<&str> = model
        .split_plan(a, b, &[Chain::new(0..units, 0.5)])
        .expect("plan")
        .layers()
        .iter()
        .map(|l| l.kind)
        .collect();
    for kind in ["dwconv", "conv", "leakyrelu", "clip", "concat"] {
        assert!(kinds.contains(kind), "{kind} is not split: {kinds:?}");
    }
    for ratio in RATIOS {
        let per_unit: Vec<Chain> = (0..units).map(|u| Chain::new(u..u + 1, ratio)).collect();
        check_split(&rt, &models, &x, &want, (a, b), &per_unit);
        check_split(
            &rt,
            &models,
            &x,
            &want,
            (a, b),
            &[Chain::new(0..units, ratio)],
        );
    }
}

#[test]
fn alexnet_splits_bit_identically() {
    let models = models(zoo::alexnet().expect("alexnet"), 5);
    let model = &models[0];
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let x = input(model.input_len(), 1);
    let want = reference(&rt, model, &x);
    let units = model.spec().units().len();
    let (a, b) = (Place::new(0, 1), Place::new(1, 1));
    for ratio in [0.0, 0.37, 0.5, 1.0] {
        let per_unit: Vec<Chain> = (0..units).map(|u| Chain::new(u..u + 1, ratio)).collect();
        check_split(&rt, &models, &x, &want, (a, b), &per_unit);
        check_split(
            &rt,
            &models,
            &x,
            &want,
            (a, b),
            &[Chain::new(0..units, ratio)],
        );
    }
}

#[test]
fn a_plan_of_later_units_runs_after_the_earlier_ones() {
    // Like a pipeline stage: units 0..4 ran on one place, the rest is split.
    let model = Model::build(every_kernel(), &RandomWeights { seed: 3 }).expect("model");
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let x = input(model.input_len(), 2);
    let want = reference(&rt, &model, &x);
    let units = model.spec().units().len();
    let frame = model.frame(x).expect("frame");
    rt.run(model.stage_graph(&frame, 0..4, Place::new(0, 1)))
        .expect("first units");
    let plan = model
        .split_plan(
            Place::new(1, 1),
            Place::new(0, 1),
            &[Chain::new(4..units, 0.45)],
        )
        .expect("plan");
    rt.run(model.split_graph(&frame, &plan)).expect("rest");
    assert_eq!(bits(&frame.output()), bits(&want.output()));
}

/// The cut nearest to `ratio · channels` among multiples of `step` and `channels`, by
/// brute force over every channel count.
fn nearest_cut(ratio: f64, channels: usize, step: usize) -> usize {
    (0..=channels)
        .filter(|&c| c % step == 0 || c == channels)
        .min_by(|&x, &y| {
            let d = |c: usize| (c as f64 - ratio * channels as f64).abs();
            d(x).total_cmp(&d(y))
        })
        .expect("0 is a cut")
}

#[test]
fn ratios_round_to_the_nearest_cut_a_whole_chain_allows() {
    // conv: 44 channels in chunks of 4 (the last one too); maxpool: chunks of 2.
    let spec = net! { grid [3, 8, 8] =>
        conv1: conv(44, 3x3, pad 1) relu,
        pool1: maxpool(2x2, stride 2),
        conv2: conv(20, 1x1),
        fc: fc(7),
    }
    .expect("net");
    let model = Model::build(spec, &RandomWeights { seed: 1 }).expect("model");
    let (a, b) = (Place::new(0, 1), Place::new(1, 1));
    let channels =
        |l: &taopipe_nets::LayerSplit, per: usize, total: usize| (l.chunks_a.end * per).min(total);
    for step in 0..=40 {
        let ratio = step as f64 / 40.0;
        // Alone, each layer rounds to its own grid.
        let alone = model
            .split_plan(
                a,
                b,
                &[
                    Chain::new(0..1, ratio),
                    Chain::new(1..2, ratio),
                    Chain::new(2..4, ratio),
                ],
            )
            .expect("plan");
        let l = alone.layers();
        assert_eq!(
            channels(&l[0], 4, 44),
            nearest_cut(ratio, 44, 4),
            "conv1 at {ratio}"
        );
        assert_eq!(
            channels(&l[1], 2, 44),
            nearest_cut(ratio, 44, 2),
            "pool1 at {ratio}"
        );
        assert_eq!(
            channels(&l[2], 4, 20),
            nearest_cut(ratio, 20, 4),
            "conv2 at {ratio}"
        );
        assert_eq!(
            channels(&l[3], 1, 7),
            nearest_cut(ratio, 7, 1),
            "fc at {ratio}"
        );
        assert!(!l[0].interior && !l[1].interior);
        // Chained, conv1 and pool1 share one cut on both grids (4 channels).
        let chained = model
            .split_plan(a, b, &[Chain::new(0..2, ratio), Chain::new(2..4, ratio)])
            .expect("plan");
        let l = chained.layers();
        assert!(l[0].interior && !l[1].interior);
        assert_eq!(channels(&l[0], 4, 44), nearest_cut(ratio, 44, 4));
        assert_eq!(channels(&l[1], 2, 44), channels(&l[0], 4, 44));
        // The share is that of output elements (the last conv chunk holds 4 channels too).
        let share = channels(&l[0], 4, 44) as f64 / 44.0;
        assert!((l[0].share_a - share).abs() < 1e-12);
    }
}

#[test]
fn bad_plans_are_refused_naming_the_value() {
    let model =
        Model::build(zoo::synth1().expect("synth1"), &RandomWeights { seed: 1 }).expect("model");
    let units = model.spec().units().len();
    let (a, b) = (Place::new(0, 1), Place::new(1, 1));
    for ratio in [1.5, -0.1, f64::NAN, f64::INFINITY] {
        let err = model
            .split_plan(a, b, &[Chain::new(0..units, ratio)])
            .expect_err("bad ratio");
        assert!(matches!(err, SplitError::Ratio { .. }), "{err}");
        assert!(err.to_string().contains(&ratio.to_string()), "{err}");
    }
    let err = model
        .split_plan(a, Place::new(0, 2), &[Chain::new(0..units, 0.5)])
        .expect_err("overlap");
    assert!(
        err.to_string().contains("0+1") && err.to_string().contains("0+2"),
        "{err}"
    );
    assert_eq!(
        model.split_plan(a, b, &[]).expect_err("none"),
        SplitError::NoChains
    );
    for chains in [
        vec![Chain::new(0..2, 0.5), Chain::new(3..units, 0.5)],
        vec![Chain::new(0..2, 0.5), Chain::new(2..2, 0.5)],
        vec![Chain::new(0..units + 1, 0.5)],
    ] {
        let err = model.split_plan(a, b, &chains).expect_err("bad units");
        assert!(matches!(err, SplitError::Units { .. }), "{err}");
    }
}

/// Output rows `r0..r1` of a stride-1 convolution padded by `pad` on both axes (a square
/// kernel of side `2·pad + 1`), computed by a convolution of the input rows they see (zero
/// rows where the padding is) with padding on W only.
fn row_slab(conv: &Conv2d, x: &[f32], (r0, r1): (usize, usize)) -> Vec<f32> {
    let s = conv.in_shape();
    let pad = conv.params().padding.0;
    let rows = r1 - r0 + 2 * pad;
    let mut slab = vec![0.0; s.c * rows * s.w];
    let from = r0 as isize - pad as isize;
    for c in 0..s.c {
        for (j, iy) in (from..from + rows as isize).enumerate() {
            if let Ok(iy) = usize::try_from(iy)
                && iy < s.h
            {
                slab[(c * rows + j) * s.w..(c * rows + j + 1) * s.w]
                    .copy_from_slice(&x[(c * s.h + iy) * s.w..(c * s.h + iy + 1) * s.w]);
            }
        }
    }
    let p = Conv2dParams {
        padding: (0, pad),
        ..*conv.params()
    };
    let sub = Conv2d::new(
        p,
        Shape::new(s.c, rows, s.w),
        conv.weights().to_vec(),
        Some(conv.bias().to_vec()),
    )
    .expect("slab conv")
    .with_algo(conv.algo())
    .expect("the slab's algorithm applies");
    sub.forward(&[&slab], &mut Scratch::new())
}

/// The direct path computes each output from its window alone, so a row slab matches the
/// whole convolution at every cut; Winograd only at cuts on its tiles' rows (every 4 rows
/// for F(4×4), every 2 for F(2×2) and F(2×2, 5×5)).
#[test]
fn row_slabs_match_the_direct_path_at_every_row_and_winograd_on_its_tiles() {
    let (c, h, w, k) = (32, 28, 28, 24);
    for kernel in [3, 5] {
        let p = Conv2dParams::new(c, k, kernel, 1, kernel / 2);
        let conv =
            Conv2d::new(p, Shape::new(c, h, w), input(p.weight_len(), 2), None).expect("conv");
        check_row_slabs(&conv, &input(c * h * w, 1));
    }
}

/// Every algorithm that applies to `conv`, cut into row slabs at every row (the test above).
fn check_row_slabs(conv: &Conv2d, x: &[f32]) {
    let (s, k) = (conv.in_shape(), conv.params().out_channels);
    let (h, w) = (s.h, s.w);
    let mut algos = 0;
    for algo in ConvAlgo::ALL
        .into_iter()
        .filter(|a| a.applies(conv.params()))
    {
        algos += 1;
        let conv = conv.clone().with_algo(algo).expect("applies");
        let whole = conv.forward(&[x], &mut Scratch::new());
        for cut in 1..h {
            let (top, bottom) = (row_slab(&conv, x, (0, cut)), row_slab(&conv, x, (cut, h)));
            let mut diff = 0;
            for ch in 0..k {
                for y in 0..h {
                    let got = if y < cut {
                        top[(ch * cut + y) * w..][..w].to_vec()
                    } else {
                        bottom[(ch * (h - cut) + y - cut) * w..][..w].to_vec()
                    };
                    let want = &whole[(ch * h + y) * w..][..w];
                    diff += bits(&got)
                        .iter()
                        .zip(bits(want))
                        .filter(|(g, w)| **g != *w)
                        .count();
                }
            }
            let tile_rows = algo.tile().map_or(1, |t| t.m());
            if cut % tile_rows == 0 {
                assert_eq!(diff, 0, "{}: a cut after row {cut} differs", algo.name());
            } else {
                assert!(
                    diff > 0,
                    "{}: a cut after row {cut} inside its tiles matched",
                    algo.name()
                );
            }
        }
    }
    // The direct path and one or two Winograd tilings.
    assert!(algos >= 2, "{:?}: only {algos} algorithm(s)", conv.params());
}
