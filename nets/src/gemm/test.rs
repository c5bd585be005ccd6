use proptest::prelude::*;

use super::*;
use crate::test_util::{TOL, abs, assert_close, proptest_config, random_vec};

/// f64 reference of `C (+)= A·B` with leading dimensions.
#[allow(clippy::too_many_arguments)]
fn reference(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    lda: usize,
    b: &[f32],
    ldb: usize,
    c0: &[f32],
    ldc: usize,
    acc: bool,
) -> Vec<f32> {
    let mut c = c0.to_vec();
    for i in 0..m {
        for j in 0..n {
            let mut s: f64 = if acc { f64::from(c0[i * ldc + j]) } else { 0.0 };
            for p in 0..k {
                s += f64::from(a[i * lda + p]) * f64::from(b[p * ldb + j]);
            }
            c[i * ldc + j] = s as f32;
        }
    }
    c
}

proptest! {
    #![proptest_config(proptest_config(64))]

    #[test]
    fn every_impl_matches_reference(
        m in 1usize..40, n in 1usize..70, k in 0usize..50,
        pad_a in 0usize..3, pad_b in 0usize..3, pad_c in 0usize..3,
        accumulate: bool, seed in 0u64..1000,
    ) {
        let (lda, ldb, ldc) = (k + pad_a, n + pad_b, n + pad_c);
        let a = random_vec(m * lda, seed);
        let b = random_vec(k * ldb, seed + 1);
        let c0 = random_vec(m * ldc, seed + 2);
        let want = reference(m, n, k, &a, lda, &b, ldb, &c0, ldc, accumulate);
        let scale = reference(m, n, k, &abs(&a), lda, &abs(&b), ldb, &abs(&c0), ldc, accumulate);
        for imp in GemmImpl::ALL {
            let mut c = c0.clone();
            sgemm(imp, m, n, k, MatRef { data: &a, ld: lda }, MatRef { data: &b, ld: ldb }, MatMut { data: &mut c, ld: ldc }, accumulate);
            // Elements between rows (the padding of ldc) stay untouched.
            for i in 0..m {
                prop_assert_eq!(&c[i * ldc + n..i * ldc + ldc], &c0[i * ldc + n..i * ldc + ldc]);
            }
            assert_close(&c, &want, &scale, TOL, imp.name());
        }
    }
}

#[test]
#[should_panic(expected = "B too short")]
fn short_operand_panics() {
    let a = vec![0.0; 4];
    let b = vec![0.0; 3];
    let mut c = vec![0.0; 4];
    sgemm(
        GemmImpl::Faer,
        2,
        2,
        2,
        MatRef { data: &a, ld: 2 },
        MatRef { data: &b, ld: 2 },
        MatMut {
            data: &mut c,
            ld: 2,
        },
        false,
    );
}

#[test]
fn deterministic_for_fixed_shape() {
    // The premise of bit-identity: the same call gives the same bits, wherever C lives.
    let (m, n, k) = (16, 300, 577);
    let a = random_vec(m * k, 1);
    let b = random_vec(k * n, 2);
    for imp in GemmImpl::ALL {
        let mut c1 = vec![0.0; m * n];
        sgemm(
            imp,
            m,
            n,
            k,
            MatRef { data: &a, ld: k },
            MatRef { data: &b, ld: n },
            MatMut {
                data: &mut c1,
                ld: n,
            },
            false,
        );
        let mut c2 = vec![0.0; m * n + 3];
        sgemm(
            imp,
            m,
            n,
            k,
            MatRef { data: &a, ld: k },
            MatRef { data: &b, ld: n },
            MatMut {
                data: &mut c2[3..],
                ld: n,
            },
            false,
        );
        assert!(
            c1.iter()
                .zip(&c2[3..])
                .all(|(x, y)| x.to_bits() == y.to_bits()),
            "{}",
            imp.name()
        );
    }
}
