use proptest::prelude::*;

use super::*;
use crate::naive;
use crate::test_util::{
    TOL, abs, assert_bit_identical, assert_close, proptest_config, random_vec, sprinkle_specials,
};

proptest! {
    #![proptest_config(proptest_config(64))]

    #[test]
    fn linear_matches_naive(
        c in 1usize..=8, h in 1usize..=6, w in 1usize..=6, out in 1usize..=300,
        relu: bool, seed in 0u64..10_000,
    ) {
        let input = Shape::new(c, h, w);
        let weights = random_vec(out * input.len(), seed);
        let bias = random_vec(out, seed + 1);
        let x = random_vec(input.len(), seed + 2);
        let want = naive::linear(&weights, &bias, &x, relu);
        let scale = naive::linear(&abs(&weights), &abs(&bias), &abs(&x), false);
        let fc = Linear::new(input, out, weights, Some(bias), relu).unwrap();
        for isa in crate::Isa::available() {
            let fc = fc.clone().with_isa(isa).unwrap();
            assert_close(&fc.forward(&[&x], &mut Scratch::new()), &want, &scale, TOL, isa.name());
        }
    }
}

/// NaN and ±∞ in the input and the bias, on every ISA's row-dot kernel and the fused ReLU:
/// as the f64 reference (NaN stays NaN, −∞ becomes 0). `y.max(0.0)` turned NaN into 0.
#[test]
fn linear_propagates_nan_and_inf() {
    let input = Shape::new(4, 5, 5);
    for (seed, out) in [(1u64, 1usize), (2, 7), (3, 70), (4, 300)] {
        let weights = random_vec(out * input.len(), seed);
        let mut bias = random_vec(out, seed + 1);
        let mut x = random_vec(input.len(), seed + 2);
        sprinkle_specials(&mut x, 40, seed);
        sprinkle_specials(&mut bias, 3, seed + 3);
        for relu in [false, true] {
            let want = naive::linear(&weights, &bias, &x, relu);
            let scale = naive::linear(&abs(&weights), &abs(&bias), &abs(&x), false);
            let fc = Linear::new(input, out, weights.clone(), Some(bias.clone()), relu).unwrap();
            for isa in crate::Isa::available() {
                let fc = fc.clone().with_isa(isa).unwrap();
                let got = fc.forward(&[&x], &mut Scratch::new());
                assert_close(&got, &want, &scale, TOL, isa.name());
                if x.iter().any(|v| v.is_nan()) {
                    assert!(got.iter().all(|v| v.is_nan()), "{isa}: {got:?}");
                }
            }
        }
    }
    // A NaN bias alone: that output is NaN after the ReLU.
    let fc = Linear::new(
        Shape::vector(3),
        2,
        vec![1.0; 6],
        Some(vec![f32::NAN, -1.0]),
        true,
    )
    .unwrap();
    for isa in crate::Isa::available() {
        let got = fc
            .clone()
            .with_isa(isa)
            .unwrap()
            .forward(&[&[-1.0, -2.0, -3.0]], &mut Scratch::new());
        assert!(got[0].is_nan() && got[1] == 0.0, "{isa}: {got:?}");
    }
}

#[test]
fn bit_identical_for_every_width() {
    let input = Shape::new(64, 3, 3);
    let fc = Linear::new(
        input,
        1000,
        random_vec(1000 * input.len(), 1),
        Some(random_vec(1000, 2)),
        true,
    )
    .unwrap();
    // 1000 features in chunks of 8, every chunk an item of its own at any width.
    assert_eq!(fc.chunks(), 125);
    assert_eq!(fc.gang_items(16), 125);
    for isa in crate::Isa::available() {
        assert_bit_identical(
            &fc.clone().with_isa(isa).unwrap(),
            &[&random_vec(input.len(), 3)],
        );
    }
}

#[test]
fn bad_weights_are_errors() {
    assert!(matches!(
        Linear::new(Shape::vector(4), 2, vec![0.0; 7], None, false),
        Err(KernelError::BufferLen { .. })
    ));
    assert!(Linear::new(Shape::vector(4), 2, vec![0.0; 8], Some(vec![0.0; 3]), false).is_err());
}
