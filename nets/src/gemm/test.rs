use proptest::prelude::*;

use super::*;
use crate::cache::CacheSizes;
use crate::simd::{Isa, Kernels, MatRef, Residual};
use crate::test_util::{activation, bits, proptest_config, random_vec};

/// Packs row-major `b` (`kdim × cols`) into panels.
fn pack_b(b: &[f32], kdim: usize, cols: usize, nr: usize) -> Vec<f32> {
    let panels = cols.div_ceil(nr);
    let mut out = vec![0.0; packed_b_len(kdim, panels, nr)];
    for p in 0..panels {
        for k in 0..kdim {
            for j in 0..nr.min(cols - p * nr) {
                out[(p * kdim + k) * nr + j] = b[k * cols + p * nr + j];
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(proptest_config(40))]

    /// Every ISA, odd sizes, several blockings (small caches force many kc and mc blocks;
    /// `Blocking::kc_for`'s evened-out blocks),
    /// a row range starting anywhere (inside a panel too), reductions on both sides of
    /// `STORE_BOUND_K` (the two loop orders), every tile shape: against f64, and the bits
    /// depend neither on the blocking nor on the tile (the direct path picks its tile by
    /// the reduction's length: `conv/direct.rs`).
    #[test]
    fn blocked_gemm_matches_reference(
        m in 1usize..40, n in 1usize..70, kdim in 1usize..300, first in 0usize..30,
        act in activation(), residual: bool, seed in 0u64..1000,
    ) {
        for isa in Isa::available() {
            let mut results = Vec::new();
            for k in Kernels::variants(isa) {
            let rows = first.min(m - 1)..m;
            let a = random_vec(m * kdim, seed);
            let b = random_vec(kdim * n, seed + 1);
            let bias = random_vec(m, seed + 2);
            let res = random_vec(m * n, seed + 3);
            let pb = pack_b(&b, kdim, n, k.nr);
            for caches in [CacheSizes::get(), CacheSizes { l1d: 4 << 10, l2: 16 << 10, l3: 1 << 20 }] {
            let blocking = Blocking::new(k, caches);
            let mut kcs = vec![blocking.kc, blocking.kc_for(kdim)];
            kcs.dedup();
            for kc in kcs {
                let pa = PackedA::from_rows(k.mr, kc, m, kdim, &a);
                let mut c = vec![f32::NAN; rows.len() * n];
                let e = BlockEpilogue {
                    bias: &bias[rows.clone()],
                    residual: if residual {
                        Residual::From(MatRef::from_slice(&res[rows.start * n..], n, rows.len(), n))
                    } else {
                        Residual::None
                    },
                    act,
                };
                gemm(k, &blocking, &pa, rows.clone(), &pb, &mut MatMut::from_slice(&mut c, n, rows.len(), n), Some(&e));
                if residual && kdim <= kc {
                    // Read from C itself: the same bits.
                    let mut own = res[rows.start * n..].to_vec();
                    let e = BlockEpilogue { residual: Residual::InPlace, ..e };
                    gemm(k, &blocking, &pa, rows.clone(), &pb, &mut MatMut::from_slice(&mut own, n, rows.len(), n), Some(&e));
                    prop_assert!(own.iter().zip(&c).all(|(x, y)| x.to_bits() == y.to_bits()), "{k}: in place");
                }
                for (ri, r) in rows.clone().enumerate() {
                    for j in 0..n {
                        let mut v: f64 = (0..kdim).map(|p| f64::from(a[r * kdim + p]) * f64::from(b[p * n + j])).sum();
                        v += f64::from(bias[r]);
                        if residual { v += f64::from(res[r * n + j]); }
                        v = f64::from(crate::naive::activate(act, v as f32));
                        let got = f64::from(c[ri * n + j]);
                        prop_assert!((got - v).abs() <= 1e-5 * (kdim as f64 + 2.0), "{k}: ({r},{j}) {got} vs {v}");
                    }
                }
                results.push((k, c));
            }
            }
            }
            for (k, c) in &results[1..] {
                prop_assert_eq!(bits(c), bits(&results[0].1), "{} against {}", k, results[0].0);
            }
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(24))]

    /// B read in place, its rows `ldb` apart and padded past the columns, gives [`gemm`]'s
    /// bits on the same B packed, for every ISA and tile. With more panels than
    /// [`B_AHEAD`] the prefetch of the panels ahead runs, up to B's last row, whose slice
    /// ends at the last column: the hints past it must read nothing.
    #[test]
    fn gemm_in_place_matches_packed(
        m in 1usize..30, panels in 1usize..7, kdim in 1usize..260, pad in 0usize..9,
        act in activation(), seed in 0u64..1000,
    ) {
        for isa in Isa::available() {
            for k in Kernels::variants(isa) {
                let (n, ldb) = (panels * k.nr, panels * k.nr + pad);
                let a = random_vec(m * kdim, seed);
                let b = random_vec((kdim - 1) * ldb + n, seed + 1);
                let dense: Vec<f32> = (0..kdim).flat_map(|r| b[r * ldb..r * ldb + n].to_vec()).collect();
                let blocking = Blocking::new(k, CacheSizes::get());
                let pa = PackedA::from_rows(k.mr, blocking.kc_in_place(kdim), m, kdim, &a);
                let bias = random_vec(m, seed + 2);
                let e = BlockEpilogue { bias: &bias, residual: Residual::None, act };
                let mut want = vec![f32::NAN; m * n];
                let pb = pack_b(&dense, kdim, n, k.nr);
                gemm(k, &blocking, &pa, 0..m, &pb, &mut MatMut::from_slice(&mut want, n, m, n), Some(&e));
                let mut got = vec![f32::NAN; m * n];
                gemm_in_place(k, &blocking, &pa, 0..m, &b, ldb, &mut MatMut::from_slice(&mut got, n, m, n), Some(&e));
                prop_assert_eq!(bits(&got), bits(&want), "{}", k);
            }
        }
    }
}

/// C holds partial sums between `kc` blocks, so a residual cannot be read from it then.
#[test]
#[should_panic(expected = "in one kc block")]
fn an_in_place_residual_needs_one_kc_block() {
    let k = Isa::Portable.kernels();
    let blocking = Blocking::new(k, CacheSizes::DEFAULT);
    let kdim = blocking.kc + 1;
    let pa = PackedA::from_rows(k.mr, blocking.kc, k.mr, kdim, &vec![1.0; k.mr * kdim]);
    let pb = vec![1.0; packed_b_len(kdim, 1, k.nr)];
    let mut c = vec![0.0; k.mr * k.nr];
    let e = BlockEpilogue {
        bias: &[0.0; 64][..k.mr],
        residual: Residual::InPlace,
        act: Activation::None,
    };
    let mut view = MatMut::from_slice(&mut c, k.nr, k.mr, k.nr);
    gemm(k, &blocking, &pa, 0..k.mr, &pb, &mut view, Some(&e));
}
