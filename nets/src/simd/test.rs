//! Every table of every ISA this CPU runs gets the same tests (XNNPACK's habit: a new path
//! cannot skip a case), against f64 references.

use proptest::prelude::*;

use super::*;
use crate::test_util::{proptest_config, random_vec};

fn tables() -> Vec<&'static Kernels> {
    Isa::available()
        .into_iter()
        .flat_map(Kernels::variants)
        .collect()
}

/// `C = A·B (+ C0) + bias + residual`, relu, in f64, for packed panels.
#[allow(clippy::too_many_arguments)]
fn reference(
    k: &Kernels,
    kc: usize,
    a: &[f32],
    b: &[f32],
    c0: Option<&[f32]>,
    bias: &[f32],
    res: Option<&[f32]>,
    relu: bool,
) -> Vec<f64> {
    let (mr, nr) = (k.mr, k.nr);
    let mut out = vec![0.0f64; mr * nr];
    for i in 0..mr {
        for j in 0..nr {
            let mut v = c0.map_or(0.0, |c| f64::from(c[i * nr + j]));
            for p in 0..kc {
                v += f64::from(a[p * mr + i]) * f64::from(b[p * nr + j]);
            }
            v += f64::from(bias[i]);
            if let Some(r) = res {
                v += f64::from(r[i * nr + j]);
            }
            out[i * nr + j] = if relu { v.max(0.0) } else { v };
        }
    }
    out
}

proptest! {
    #![proptest_config(proptest_config(48))]

    /// Full and partial tiles of one to three panels, with and without accumulation and
    /// each epilogue part, against the f64 reference; and a partial tile's elements are
    /// the bits of the full tile's, whichever kernel computes its last columns (the lane
    /// kernel where `A` has room for its last vector of rows, else the narrow or full
    /// tile on a copy).
    #[test]
    fn gemm_tiles_match_reference(
        kc in 0usize..70, accumulate: bool, relu: bool, residual: bool, padded: bool,
        panels in 1usize..4, rows_cut in 0usize..16, cols_cut in 0usize..64, seed in 0u64..1000,
    ) {
        for k in tables() {
            let (mr, nr) = (k.mr, k.nr);
            let m = panels * mr;
            let pad = if padded { MAX_LANES } else { 0 };
            let a = random_vec(panels * kc * mr + pad, seed);
            let b = random_vec(kc * nr, seed + 1);
            let c0 = random_vec(m * nr, seed + 2);
            let bias = random_vec(m, seed + 3);
            let res = random_vec(m * nr, seed + 4);
            let e = Epilogue {
                bias: &bias,
                residual: residual.then(|| MatRef::from_slice(&res, nr, m, nr)),
                relu,
            };
            let mut full = c0.clone();
            k.gemm(kc, &a, kc * mr, &b, &mut MatMut::from_slice(&mut full, nr, m, nr), accumulate, Some(&e));
            for p in 0..panels {
                let want = reference(
                    k, kc, &a[p * kc * mr..], &b,
                    accumulate.then_some(&c0[p * mr * nr..]), &bias[p * mr..],
                    residual.then_some(&res[p * mr * nr..]), relu,
                );
                for (i, (&g, &w)) in full[p * mr * nr..(p + 1) * mr * nr].iter().zip(&want).enumerate() {
                    let bound = 1e-5 * (kc as f64 + 3.0);
                    prop_assert!((f64::from(g) - w).abs() <= bound, "{k}: panel {p} element {i}: {g} vs {w}");
                }
            }
            // A partial tile in the middle of a bigger output (ld > cols).
            let (rows, cols) = (m - rows_cut % mr, nr - cols_cut % nr);
            let ld = nr + 3;
            let mut big = vec![f32::NAN; m * ld];
            for i in 0..rows {
                big[i * ld..i * ld + cols].copy_from_slice(&c0[i * nr..i * nr + cols]);
            }
            let mut view = MatMut::from_slice(&mut big, ld, rows, cols);
            k.gemm(kc, &a, kc * mr, &b, &mut view, accumulate, Some(&e));
            for i in 0..rows {
                for j in 0..cols {
                    prop_assert_eq!(
                        big[i * ld + j].to_bits(), full[i * nr + j].to_bits(),
                        "{}: row {} column {} of {}×{}", k, i, j, rows, cols
                    );
                }
                prop_assert!(big[i * ld + cols..(i + 1) * ld].iter().all(|v| v.is_nan()));
            }
            prop_assert!(big[rows * ld..].iter().all(|v| v.is_nan()));
        }
    }

    /// Row dot products against f64, and each row's bits do not depend on the rows
    /// computed with it.
    #[test]
    fn dot_rows_match_reference(n in 0usize..200, rows in 1usize..11, seed in 0u64..1000) {
        for k in tables() {
            let w = random_vec(rows * n, seed);
            let x = random_vec(n, seed + 1);
            let mut y = vec![0.0; rows];
            k.dot_rows(&w, &x, &mut y);
            for r in 0..rows {
                let want: f64 = (0..n).map(|j| f64::from(w[r * n + j]) * f64::from(x[j])).sum();
                prop_assert!((f64::from(y[r]) - want).abs() <= 1e-5 * (n as f64 + 1.0));
                let mut one = [0.0];
                k.dot_rows(&w[r * n..(r + 1) * n], &x, &mut one);
                prop_assert_eq!(one[0].to_bits(), y[r].to_bits(), "{}: row {}", k, r);
            }
        }
    }
}

#[test]
fn isa_names_round_trip_and_portable_is_always_there() {
    for isa in Isa::ALL {
        assert_eq!(isa.name().parse::<Isa>(), Ok(isa));
    }
    assert_eq!("AVX2".parse::<Isa>(), Ok(Isa::Avx2));
    let err = "sse9".parse::<Isa>().unwrap_err();
    assert!(err.to_string().contains("sse9"), "{err}");
    assert_eq!(Isa::available().last(), Some(&Isa::Portable));
    // Every aarch64 core has NEON (and so does qemu-aarch64, where CI runs these tests).
    #[cfg(target_arch = "aarch64")]
    assert!(Isa::Neon.is_supported());
    assert!(Isa::detect().is_supported());
}

#[test]
fn fma_probe_counts_flops() {
    for k in tables() {
        assert_eq!(k.fma_probe(10) % 10, 0);
        assert!(k.fma_probe(10) >= 10 * 2 * k.lanes as u64);
    }
}

#[test]
#[should_panic(expected = "wider")]
fn oversized_tile_is_refused() {
    let k = Isa::Portable.kernels();
    let mut c = vec![0.0; (k.mr + 1) * k.nr];
    k.gemm(
        0,
        &[],
        0,
        &[],
        &mut MatMut::from_slice(&mut c, k.nr + 1, 1, k.nr + 1),
        false,
        None,
    );
}
