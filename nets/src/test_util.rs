//! Helpers shared by the unit tests.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use proptest::prelude::{Just, Strategy, prop_oneof};
use proptest::test_runner::{Config, RngSeed};

use crate::activation::Activation;
use crate::kernel::{Kernel, Scratch};

/// Proptest configuration: a fixed seed (reproducible runs), no regression files; under
/// Miri (`cargo +nightly miri test -p taopipe-nets`) a handful of cases, since every one is
/// interpreted.
pub(crate) fn proptest_config(cases: u32) -> Config {
    Config {
        cases: if cfg!(miri) { cases.min(3) } else { cases },
        rng_seed: RngSeed::Fixed(0x7a0_919e),
        failure_persistence: None,
        ..Config::default()
    }
}

/// A random activation: none, ReLU, ReLU6, or a clip or leaky ReLU with random parameters,
/// the clip's bounds within what the tests' sums reach, so that both of them bite.
pub(crate) fn activation() -> impl Strategy<Value = Activation> {
    prop_oneof![
        Just(Activation::None),
        Just(Activation::Relu),
        Just(Activation::RELU6),
        (-1.5f32..0.5, 0.0f32..2.0).prop_map(|(min, w)| Activation::Clip { min, max: min + w }),
        (-1.0f32..1.0).prop_map(|slope| Activation::LeakyRelu { slope }),
    ]
}

/// Activations with edges: each kind, bounds of either sign, infinite and NaN bounds, a
/// clip between `−0.0` and `0.0`, and slopes of zero (`0 · −∞` is NaN, `0 · −1` is
/// `−0.0`) and below zero.
pub(crate) const ACTIVATIONS: [Activation; 11] = [
    Activation::None,
    Activation::Relu,
    Activation::RELU6,
    Activation::Clip {
        min: -0.5,
        max: 0.25,
    },
    Activation::Clip {
        min: -0.0,
        max: 0.0,
    },
    Activation::Clip {
        min: f32::NEG_INFINITY,
        max: 0.0,
    },
    Activation::Clip {
        min: f32::NAN,
        max: 1.0,
    },
    Activation::LeakyRelu { slope: 0.1 },
    Activation::LeakyRelu { slope: 0.0 },
    Activation::LeakyRelu { slope: -2.0 },
    Activation::LeakyRelu { slope: 1.0 },
];

/// Whether `got` has `want`'s bits, or both are NaN (a NaN's payload is not part of any
/// rule, and Miri picks payloads at random).
pub(crate) fn same_bits(got: f32, want: f32) -> bool {
    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan())
}

/// Element-wise absolute values.
pub(crate) fn abs(v: &[f32]) -> Vec<f32> {
    v.iter().map(|x| x.abs()).collect()
}

/// Overwrites about one value in `every` of `v` (at least one) with NaN, +∞, −∞ or `−0.0`
/// in turn (starting at the seed's), at seeded positions.
pub(crate) fn sprinkle_specials(v: &mut [f32], every: usize, seed: u64) {
    const SPECIAL: [f32; 4] = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0];
    if v.is_empty() {
        return;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    for s in 0..(v.len() / every.max(1)).max(1) {
        let at = rng.random_range(0..v.len());
        v[at] = SPECIAL[(s + seed as usize) % SPECIAL.len()];
    }
}

/// `n` values uniform in [-1, 1) from a seeded RNG.
pub(crate) fn random_vec(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// Relative tolerance of the f32 kernels against the f64 references.
///
/// A sum of `R` f32 products carries a rounding error of at most about `R·u·Σ|terms|`
/// (`u = 2⁻²⁴ ≈ 6e-8`), typically `√R·u·Σ|terms|`. The largest reductions in the property
/// tests have `R ≤ 5·5·16 = 400` terms, so `1e-4·Σ|terms|` holds even in the worst case,
/// while one wrong or missing term (≈ `Σ|terms| / R ≥ 2.5e-3·Σ|terms|`) still fails.
pub(crate) const TOL: f32 = 1e-4;

/// Asserts `got ≈ want` elementwise: `|got − want| <= tol · (scale[i] + |want[i]|)`.
///
/// `scale[i]` is the magnitude of the terms summed into output `i` (`Σ|w·x|`, computed by
/// running the reference on absolute values): f32 accumulation error grows with the sum of
/// |terms|, not with the (possibly cancelled) result, so a purely relative test would fail
/// on near-zero outputs.
///
/// Non-finite values must match exactly: NaN where the reference has NaN (any payload), the
/// same infinity where it has one.
pub(crate) fn assert_close(got: &[f32], want: &[f32], scale: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if w.is_nan() || w.is_infinite() || g.is_nan() || g.is_infinite() {
            assert!(
                (w.is_nan() && g.is_nan()) || g == w,
                "{what}: element {i}: got {g}, want {w}"
            );
            continue;
        }
        let bound = tol * (scale[i].abs() + w.abs()) + f32::MIN_POSITIVE;
        assert!(
            (g - w).abs() <= bound,
            "{what}: element {i}: got {g}, want {w} (bound {bound})"
        );
    }
}

/// Computes `layer` as a gang of `width` would: each rank its own run of chunks into its own
/// freshly allocated buffer (ranks in reverse order, to show order does not matter), then
/// stitches the parts together.
pub(crate) fn run_as_gang(layer: &dyn Kernel, inputs: &[&[f32]], width: usize) -> Vec<f32> {
    let mut parts = Vec::new();
    for rank in (0..width).rev() {
        let chunks = layer.rank_chunks(rank, width);
        let range = layer.output_range(chunks.clone());
        let mut part = vec![f32::NAN; range.len()];
        layer.compute_chunks(inputs, chunks, &mut part, &mut Scratch::new());
        parts.push((range.start, part));
    }
    parts.sort_by_key(|p| p.0);
    let out: Vec<f32> = parts.into_iter().flat_map(|p| p.1).collect();
    assert_eq!(out.len(), layer.out_shape().len());
    out
}

/// The bit patterns of `v`, to compare results exactly (NaN payloads and signed zeros
/// included).
pub(crate) fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Asserts the bits of `layer`'s output are the same for gang widths 1, 2, 3, 4, 7 and 16,
/// and equal `forward`.
pub(crate) fn assert_bit_identical(layer: &dyn Kernel, inputs: &[&[f32]]) {
    let reference = run_as_gang(layer, inputs, 1);
    assert_eq!(
        bits(&layer.forward(inputs, &mut Scratch::new())),
        bits(&reference)
    );
    for width in [2, 3, 4, 7, 16] {
        let got = run_as_gang(layer, inputs, width);
        assert!(
            bits(&got) == bits(&reference),
            "{}: width {width} differs from width 1",
            layer.kind()
        );
    }
}
