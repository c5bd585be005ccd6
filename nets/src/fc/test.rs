use proptest::prelude::*;

use super::*;
use crate::naive;
use crate::test_util::{TOL, abs, assert_bit_identical, assert_close, proptest_config, random_vec};

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
    assert_eq!(fc.chunks(), 32);
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
