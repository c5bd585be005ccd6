use proptest::prelude::*;

use super::*;
use crate::gap::GlobalAvgPool;
use crate::naive;
use crate::softmax::Softmax;
use crate::test_util::{
    ACTIVATIONS, TOL, abs, activation, assert_bit_identical, assert_close, proptest_config,
    random_vec, same_bits, sprinkle_specials,
};

fn shape() -> impl Strategy<Value = Shape> {
    (1usize..=70, 1usize..=9, 1usize..=9).prop_map(|(c, h, w)| Shape::new(c, h, w))
}

proptest! {
    #![proptest_config(proptest_config(64))]

    #[test]
    fn relu_add_affine_match_reference(s in shape(), relu: bool, seed in 0u64..10_000) {
        let a = random_vec(s.len(), seed);
        let b = random_vec(s.len(), seed + 1);
        let mut scratch = Scratch::new();
        let want: Vec<f32> = a.iter().map(|v| v.max(0.0)).collect();
        prop_assert_eq!(Activate::relu(s).forward(&[&a], &mut scratch), want);
        let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| if relu { (x + y).max(0.0) } else { x + y }).collect();
        prop_assert_eq!(Add::new(s, relu).forward(&[&a, &b], &mut scratch), want);
        let (scale, shift) = (random_vec(s.c, seed + 2), random_vec(s.c, seed + 3));
        let want: Vec<f32> = a.iter().enumerate().map(|(i, &x)| {
            let c = i / s.plane();
            let v = scale[c] * x + shift[c];
            if relu { v.max(0.0) } else { v }
        }).collect();
        let affine = Affine::new(s, scale, shift, relu).unwrap();
        prop_assert_eq!(affine.forward(&[&a], &mut scratch), want);
    }

    /// Any activation, on values with NaN, ±∞ and −0.0 among them: the bits of
    /// [`Activation::apply`] (any NaN for NaN), and the naive rule's values.
    #[test]
    fn activate_matches_apply(s in shape(), act in activation(), seed in 0u64..10_000) {
        let mut a: Vec<f32> = random_vec(s.len(), seed).iter().map(|v| 8.0 * v).collect();
        sprinkle_specials(&mut a, 5, seed + 1);
        let got = Activate::new(s, act).forward(&[&a], &mut Scratch::new());
        for (i, (&g, &x)) in got.iter().zip(&a).enumerate() {
            let (want, naive) = (act.apply(x), naive::activate(act, x));
            prop_assert!(same_bits(g, want), "{:?}: element {} {} -> {}, want {}", act, i, x, g, want);
            prop_assert!(g == naive || g.is_nan() && naive.is_nan(), "{:?}: {} naive {}", act, x, naive);
        }
    }

    #[test]
    fn gap_matches_naive(s in shape(), seed in 0u64..10_000) {
        let x = random_vec(s.len(), seed);
        let got = GlobalAvgPool::new(s).forward(&[&x], &mut Scratch::new());
        let want = naive::gap(s, &x);
        assert_close(&got, &want, &naive::gap(s, &abs(&x)), TOL, "gap");
    }

    #[test]
    fn softmax_matches_naive(n in 1usize..=1500, offset in -100.0f32..100.0, seed in 0u64..10_000) {
        // Large offsets check stability: a naive exp would overflow at +100.
        let x: Vec<f32> = random_vec(n, seed).iter().map(|v| 20.0 * v + offset).collect();
        let got = Softmax::new(Shape::vector(n)).forward(&[&x], &mut Scratch::new());
        let want = naive::softmax(&x);
        prop_assert!(got.iter().all(|v| v.is_finite()));
        assert_close(&got, &want, &vec![0.0; n], 1e-5 * (n as f32).sqrt().max(1.0), "softmax");
        prop_assert!((got.iter().map(|&v| f64::from(v)).sum::<f64>() - 1.0).abs() < 1e-4);
    }
}

/// NaN and ±∞ through ReLU, Add+ReLU and Affine+ReLU: NaN and +∞ stay, −∞ becomes 0, and
/// ReLU(−0.0) is −0.0, bit for bit. `f32::max(NaN, 0.0)` was 0.
#[test]
fn relu_layers_propagate_nan_and_inf() {
    let s = Shape::new(5, 7, 9);
    let mut scratch = Scratch::new();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for seed in 0..4 {
        let (mut a, mut b) = (random_vec(s.len(), seed), random_vec(s.len(), seed + 10));
        sprinkle_specials(&mut a, 7, seed);
        sprinkle_specials(&mut b, 11, seed + 1);
        a[0] = f32::NAN;
        a[1] = -0.0;
        let want: Vec<f32> = a.iter().map(|&v| naive::relu(v)).collect();
        let got = Activate::relu(s).forward(&[&a], &mut scratch);
        assert_eq!(bits(&got), bits(&want), "relu");
        assert!(got[0].is_nan() && got[1].to_bits() == (-0.0f32).to_bits());
        let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| naive::relu(x + y)).collect();
        let got = Add::new(s, true).forward(&[&a, &b], &mut scratch);
        assert_close(&got, &want, &vec![0.0; s.len()], 0.0, "add relu");
        assert!(got[0].is_nan());
        let (scale, shift) = (random_vec(s.c, seed + 2), random_vec(s.c, seed + 3));
        let want: Vec<f32> = a
            .iter()
            .enumerate()
            .map(|(i, &x)| naive::relu(scale[i / s.plane()] * x + shift[i / s.plane()]))
            .collect();
        let got = Affine::new(s, scale, shift, true)
            .unwrap()
            .forward(&[&a], &mut scratch);
        assert_close(&got, &want, &vec![0.0; s.len()], 0.0, "affine relu");
        assert!(got[0].is_nan());
    }
}

/// Each activation of [`ACTIVATIONS`] on every special value and both sides of its bounds:
/// the bits of [`Activation::apply`], at every position of a vector (the loop's body and
/// its tail).
#[test]
fn activate_bits_are_apply_on_special_values() {
    let values = [
        -0.0f32,
        0.0,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7fc0_1234),
        f32::INFINITY,
        f32::NEG_INFINITY,
        -3.0,
        -0.5,
        0.25,
        0.3,
        1.0,
        6.0,
        7.5,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::MAX,
    ];
    let s = Shape::new(3, 5, 7);
    let a: Vec<f32> = (0..s.len()).map(|i| values[i % values.len()]).collect();
    for act in ACTIVATIONS {
        let layer = Activate::new(s, act);
        assert_eq!(layer.act(), act);
        let got = layer.forward(&[&a], &mut Scratch::new());
        for (i, (&g, &x)) in got.iter().zip(&a).enumerate() {
            let want = act.apply(x);
            assert!(
                same_bits(g, want),
                "{act:?}: element {i}: {x} -> {g} ({:#x}), want {want} ({:#x})",
                g.to_bits(),
                want.to_bits()
            );
        }
    }
    let kinds = [Activation::None, Activation::Relu, Activation::RELU6];
    let kinds = kinds.map(|act| Activate::new(s, act).kind());
    assert_eq!(kinds, ["identity", "relu", "clip"]);
    let leaky = Activate::new(s, Activation::LeakyRelu { slope: 0.1 });
    assert_eq!(leaky.kind(), "leakyrelu");
}

#[test]
fn shape_mismatch_is_an_error() {
    assert!(Add::checked(Shape::new(2, 3, 3), Shape::new(2, 3, 4), true).is_err());
    assert!(Affine::new(Shape::new(2, 3, 3), vec![1.0], vec![0.0, 0.0], false).is_err());
}

#[test]
fn bit_identical_for_every_width() {
    let s = Shape::new(256, 14, 14);
    let (a, b) = (random_vec(s.len(), 1), random_vec(s.len(), 2));
    assert_bit_identical(&Add::new(s, true), &[&a, &b]);
    for act in ACTIVATIONS {
        assert_bit_identical(&Activate::new(s, act), &[&a]);
    }
    assert_bit_identical(
        &Affine::new(s, random_vec(256, 3), random_vec(256, 4), true).unwrap(),
        &[&a],
    );
    assert_bit_identical(
        &GlobalAvgPool::new(Shape::new(2048, 7, 7)),
        &[&random_vec(2048 * 49, 5)],
    );
    assert_bit_identical(&Softmax::new(Shape::vector(1000)), &[&random_vec(1000, 6)]);
}
