use proptest::prelude::*;

use super::*;
use crate::gap::GlobalAvgPool;
use crate::naive;
use crate::softmax::Softmax;
use crate::test_util::{
    TOL, abs, assert_bit_identical, assert_close, proptest_config, random_vec, sprinkle_specials,
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
        prop_assert_eq!(Relu::new(s).forward(&[&a], &mut scratch), want);
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
        let got = Relu::new(s).forward(&[&a], &mut scratch);
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
    assert_bit_identical(&Relu::new(s), &[&a]);
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
