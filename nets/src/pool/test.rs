use proptest::prelude::*;

use super::*;
use crate::naive;
use crate::test_util::{TOL, abs, assert_bit_identical, assert_close, proptest_config, random_vec};

proptest! {
    #![proptest_config(proptest_config(128))]

    #[test]
    fn pool_matches_naive(
        c in 1usize..=40, h in 1usize..=17, w in 1usize..=17,
        kernel in 1usize..=4, stride in 1usize..=3, padding in 0usize..=2,
        max: bool, seed in 0u64..10_000,
    ) {
        let p = if max { PoolParams::max(kernel, stride, padding) } else { PoolParams::avg(kernel, stride, padding) };
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
