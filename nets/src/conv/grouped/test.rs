use proptest::prelude::*;

use super::*;
use crate::activation::Activation;
use crate::naive;
use crate::test_util::{TOL, abs, assert_bit_identical, assert_close, proptest_config, random_vec};

/// Each group through the naive convolution on its slices, the outputs one after another.
fn reference(
    p: Conv2dParams,
    groups: usize,
    input: Shape,
    x: &[f32],
    w: &[f32],
    b: &[f32],
) -> Vec<f32> {
    let group = Conv2dParams {
        in_channels: p.in_channels / groups,
        out_channels: p.out_channels / groups,
        ..p
    };
    let gin = Shape::new(group.in_channels, input.h, input.w);
    let (xi, wi, bi) = (gin.len(), group.weight_len(), group.out_channels);
    (0..groups)
        .flat_map(|g| {
            naive::conv2d(
                &group,
                gin,
                &x[g * xi..(g + 1) * xi],
                &w[g * wi..(g + 1) * wi],
                &b[g * bi..(g + 1) * bi],
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(proptest_config(48))]

    #[test]
    fn grouped_conv_matches_naive_per_group(
        groups in 2usize..=4, cg in 1usize..=6, kg in 1usize..=6, side in 3usize..=12,
        k in 1usize..=3, stride in 1usize..=2, relu6: bool, seed in 0u64..10_000,
    ) {
        let pad = k / 2;
        let p = Conv2dParams::new(cg * groups, kg * groups, k, stride, pad)
            .with_act(if relu6 { Activation::RELU6 } else { Activation::None });
        let input = Shape::new(cg * groups, side, side);
        let w = random_vec(kg * cg * k * k * groups, seed);
        let b = random_vec(kg * groups, seed + 1);
        let x = random_vec(input.len(), seed + 2);
        let want = reference(p, groups, input, &x, &w, &b);
        let scale = reference(p.with_act(Activation::None), groups, input, &abs(&x), &abs(&w), &abs(&b));
        for isa in Isa::available() {
            let conv = GroupedConv2d::with_isa(p, groups, input, w.clone(), Some(b.clone()), None, isa).unwrap();
            prop_assert_eq!(conv.out_shape(), p.out_shape(input).unwrap());
            let got = conv.forward(&[&x], &mut Scratch::new());
            assert_close(&got, &want, &scale, TOL, &format!("{groups} groups {isa}"));
            assert_bit_identical(&conv, &[&x]);
        }
    }
}

#[test]
fn chunks_hold_whole_groups() {
    let p = Conv2dParams::new(64, 64, 1, 1, 0);
    let conv =
        GroupedConv2d::new(p, 8, Shape::new(64, 5, 5), vec![0.5; 64 * 8], None, None).unwrap();
    for chunk in 0..conv.chunks() {
        let r = conv.chunk_range(chunk);
        assert_eq!(r.start % (8 * 25), 0, "chunk {chunk} starts inside a group");
        assert_eq!(r.end % (8 * 25), 0, "chunk {chunk} ends inside a group");
    }
    assert_eq!(conv.describe(), "conv 1x1/1 direct g8");
}

#[test]
fn bad_groups_and_weights_are_errors() {
    let p = Conv2dParams::new(6, 4, 3, 1, 1);
    let err = GroupedConv2d::new(p, 4, Shape::new(6, 8, 8), vec![0.0; 36], None, None).unwrap_err();
    assert!(
        err.to_string()
            .contains("4 groups do not divide 6 input and 4 output channels"),
        "{err}"
    );
    let err = GroupedConv2d::new(p, 2, Shape::new(6, 8, 8), vec![0.0; 35], None, None).unwrap_err();
    assert!(err.to_string().contains("grouped conv weights"), "{err}");
}
