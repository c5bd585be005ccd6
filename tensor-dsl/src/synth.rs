//! Synthetic nets: the paper's Synth 1–3 (Table 7) and a seeded random generator.

use crate::{DslError, NetSpec, Shape};

/// Synth 1 (Table 7): 7 layers, best seed `[3, 2, 2]` with CV 3.8 %.
pub const SYNTH1: [u64; 7] = [1, 4, 8, 4, 8, 8, 4];
/// Synth 2 (Table 7): 15 layers, perfect seeds `[8, 7]` and `[4, 4, 6, 1]` (CV 0).
pub const SYNTH2: [u64; 15] = [1, 9, 4, 8, 5, 4, 8, 5, 7, 1, 1, 1, 4, 8, 22];
/// Synth 3 (Table 7): 13 layers, perfect seed `[4, 2, 1, 4, 2]` (CV 0).
pub const SYNTH3: [u64; 13] = [1, 9, 4, 8, 20, 2, 22, 3, 4, 8, 7, 11, 11];

const CH: usize = 8;
const HEIGHT: usize = 8;
const WIDTH: usize = 8;

/// The Eq. 1 weight of one unit of a synthetic weight list: `2·H·W·(W+1)·C²` with
/// `C = H = W = 8`.
pub const SYNTH_UNIT: u64 = (2 * HEIGHT * WIDTH * (WIDTH + 1) * CH * CH) as u64;

/// The most memory a synthetic net may declare: 4 GiB of f32 weights, biases and
/// activations ([`synth_net_bytes`]), checked by [`conv_net_with_weights`] and
/// [`random_net`] before anything is built.
///
/// A fixed cap rather than a share of this machine's memory, so that whether a net builds
/// does not depend on where it is built. It is 8× VGG16's 0.5 GiB of weights, and holds
/// random nets (log-uniform weights 1–64, about 96 KiB a layer) up to a depth of about
/// 43 000; a model built from the net packs a second copy of its weights, so it needs up
/// to twice this. `--depth 100000` (about 9 GiB) is refused.
pub const SYNTH_MEMORY_LIMIT: u64 = 4 << 30;

/// Output width of layer `i`: the widths alternate 8 → 9 → 8 → … (see
/// [`conv_net_with_weights`]).
fn out_width(i: usize) -> usize {
    if i.is_multiple_of(2) {
        WIDTH + 1
    } else {
        WIDTH
    }
}

/// Bytes of f32 weights, biases and output of layer `i` of weight `w` (of
/// [`conv_net_with_weights`]); `None` if they overflow `u64`.
fn layer_bytes(i: usize, w: u64) -> Option<u64> {
    // R·S = 2·w·(the width the kernel's area is scaled by), C = K = 8.
    let other_width = if i.is_multiple_of(2) {
        WIDTH
    } else {
        WIDTH + 1
    } as u64;
    let weights = w
        .checked_mul(2 * other_width)?
        .checked_mul((CH * CH) as u64)?;
    let bias_and_output = (CH + CH * HEIGHT * out_width(i)) as u64;
    weights.checked_add(bias_and_output)?.checked_mul(4)
}

/// The bytes of f32 weights, biases and activations (the input and every layer's output)
/// of [`conv_net_with_weights`]`(name, weights)`, computed without building it; `None` if
/// they overflow `u64`.
///
/// ```
/// use taopipe_dsl::{synth_net_bytes, SYNTH1};
///
/// // Synth 1: 7 convolutions of 37 units of weight in all, 173 KiB.
/// assert_eq!(synth_net_bytes(&SYNTH1), Some(177_376));
/// assert_eq!(synth_net_bytes(&[u64::MAX]), None);
/// ```
pub fn synth_net_bytes(weights: &[u64]) -> Option<u64> {
    let input = (CH * HEIGHT * WIDTH * 4) as u64;
    weights
        .iter()
        .enumerate()
        .try_fold(input, |total, (i, &w)| {
            total.checked_add(layer_bytes(i, w)?)
        })
}

/// A net of convolutions whose weights are `SYNTH_UNIT · weights[i]` (see the
/// construction below). Layers are named `conv1`, `conv2`, ….
///
/// # Errors
///
/// [`DslError::InvalidSynth`] for an empty list, a zero weight or a weight so large that
/// its kernel size overflows; [`DslError::SynthTooLarge`] for a net whose weights and
/// activations would take more than [`SYNTH_MEMORY_LIMIT`].
///
/// # Examples
///
/// ```
/// use taopipe_dsl::{conv_net_with_weights, SYNTH1, SYNTH_UNIT};
///
/// let net = conv_net_with_weights("synth1", &SYNTH1)?;
/// let w: Vec<u64> = net.weights().iter().map(|w| w / SYNTH_UNIT).collect();
/// assert_eq!(w, SYNTH1);
/// # Ok::<(), taopipe_dsl::DslError>(())
/// ```
///
/// # From a weight list to a net of convolutions
///
/// [`conv_net_with_weights`] turns weights `w₁…w_M` into `M` convolutions whose Eq. 1
/// weights are exactly `SYNTH_UNIT · wᵢ`. All layers have `8` input and output channels
/// and height `8`; each kernel is `R×S` with `R` odd (padding `(R−1)/2` keeps the height)
/// and `S` even, and the width alternates `8 → 9 → 8 → …`: a layer that outputs width 9
/// has `R·S = 2·8·wᵢ` and padding `S/2` (grows by one), a layer that outputs width 8 has
/// `R·S = 2·9·wᵢ` and padding `S/2 − 1` (shrinks by one). Either way
/// `Ho·Wo·C·R·S·K = 8 · (8·9·2) · 8 · 8 · wᵢ = SYNTH_UNIT · wᵢ`. (Even widths of
/// kernels are what make any integer reachable: an odd `R·S` cannot carry an even `wᵢ`.)
/// The construction relies on this crate's reading of Eq. 1 (output `H·W`); the tests of
/// Synth 1–3 check the weight lists themselves, so they do not depend on it.
/// The shapes carry weights; they do not look like a real CNN.
pub fn conv_net_with_weights(name: &str, weights: &[u64]) -> Result<NetSpec, DslError> {
    if weights.is_empty() {
        return Err(invalid("the weight list is empty".into()));
    }
    if let Some(i) = weights.iter().position(|&w| w == 0) {
        return Err(invalid(format!("weight #{i} is 0 (weights must be >= 1)")));
    }
    let bytes = synth_net_bytes(weights);
    if bytes.is_none_or(|b| b > SYNTH_MEMORY_LIMIT) {
        return Err(DslError::SynthTooLarge {
            net: name.to_string(),
            depth: weights.len(),
            bytes,
            at_least: false,
            limit: SYNTH_MEMORY_LIMIT,
        });
    }
    let mut b = NetSpec::builder(name, Shape::new(CH, HEIGHT, WIDTH));
    for (i, &w) in weights.iter().enumerate() {
        // layer i reads width 8 (i even) or 9 (i odd) and writes the other one
        let grows = i % 2 == 0;
        let other_width = if grows { WIDTH } else { WIDTH + 1 };
        let area = usize::try_from(w)
            .ok()
            .and_then(|w| w.checked_mul(2 * other_width))
            .ok_or_else(|| invalid(format!("weight #{i} = {w} is too large")))?;
        let r = odd_divisor_near_sqrt(area);
        let s = area / r;
        let pad_w = if grows { s / 2 } else { s / 2 - 1 };
        b = b.layer(
            format!("conv{}", i + 1),
            crate::LayerKind::Conv2d {
                out_channels: CH,
                kernel: (r, s),
                stride: (1, 1),
                padding: ((r - 1) / 2, pad_w),
                groups: 1,
                relu: true,
            },
        );
    }
    b.build()
}

/// The largest odd divisor of `n` not above `sqrt(n)` (1 at least).
fn odd_divisor_near_sqrt(n: usize) -> usize {
    let mut best = 1;
    let mut d: usize = 1;
    while d.checked_mul(d).is_some_and(|dd| dd <= n) {
        if n.is_multiple_of(d) {
            best = d;
        }
        d += 2;
    }
    best
}

fn invalid(reason: String) -> DslError {
    DslError::InvalidSynth { reason }
}

/// Synth 1 as a conv net (weights `SYNTH_UNIT · SYNTH1`).
///
/// # Errors
///
/// Never in practice; see [`conv_net_with_weights`].
pub fn synth1() -> Result<NetSpec, DslError> {
    conv_net_with_weights("synth1", &SYNTH1)
}

/// Synth 2 as a conv net.
///
/// # Errors
///
/// Never in practice; see [`conv_net_with_weights`].
pub fn synth2() -> Result<NetSpec, DslError> {
    conv_net_with_weights("synth2", &SYNTH2)
}

/// Synth 3 as a conv net.
///
/// # Errors
///
/// Never in practice; see [`conv_net_with_weights`].
pub fn synth3() -> Result<NetSpec, DslError> {
    conv_net_with_weights("synth3", &SYNTH3)
}

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny, fast, seedable PRNG, so the crate needs
/// no `rand` at run time. Same seed, same sequence, on every platform.
///
/// ```
/// use taopipe_dsl::SplitMix64;
///
/// let mut a = SplitMix64::new(42);
/// let mut b = SplitMix64::new(42);
/// assert_eq!(a.next_u64(), b.next_u64());
/// let x = a.range(3, 9);
/// assert!((3..=9).contains(&x));
/// ```
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi` (unbiased, by rejection); `lo` if `hi < lo`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        let span = hi - lo;
        if span == u64::MAX {
            return self.next_u64();
        }
        let n = span + 1;
        // reject the top partial bucket
        let zone = u64::MAX - (u64::MAX - n + 1) % n;
        loop {
            let x = self.next_u64();
            if x <= zone {
                return lo + x % n;
            }
        }
    }
}

/// How [`random_weights`] draws layer weights (all bounds inclusive, ≥ 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightDistribution {
    /// Uniform in `min..=max`.
    Uniform {
        /// Smallest weight.
        min: u64,
        /// Largest weight.
        max: u64,
    },
    /// Heavy-tailed, log-uniform in `min..=max`: a power-of-two octave is picked uniformly,
    /// then a value uniformly inside it (integer-only, so reproducible everywhere).
    LogUniform {
        /// Smallest weight.
        min: u64,
        /// Largest weight.
        max: u64,
    },
    /// Two clusters: `heavy_percent` % of the layers uniform in `heavy`, the rest in `light`.
    Bimodal {
        /// `(min, max)` of the light layers.
        light: (u64, u64),
        /// `(min, max)` of the heavy layers.
        heavy: (u64, u64),
        /// Share of heavy layers, 0–100.
        heavy_percent: u8,
    },
}

impl WeightDistribution {
    fn check(&self) -> Result<(), DslError> {
        let ok = |(lo, hi): (u64, u64)| lo >= 1 && lo <= hi;
        let fine = match *self {
            WeightDistribution::Uniform { min, max }
            | WeightDistribution::LogUniform { min, max } => ok((min, max)),
            WeightDistribution::Bimodal {
                light,
                heavy,
                heavy_percent,
            } => ok(light) && ok(heavy) && heavy_percent <= 100,
        };
        if fine {
            Ok(())
        } else {
            Err(invalid(format!(
                "{self:?}: ranges need 1 <= min <= max and heavy_percent <= 100"
            )))
        }
    }

    /// The least weight it draws.
    fn least(&self) -> u64 {
        match *self {
            WeightDistribution::Uniform { min, .. }
            | WeightDistribution::LogUniform { min, .. } => min,
            WeightDistribution::Bimodal {
                light,
                heavy,
                heavy_percent,
            } => match heavy_percent {
                0 => light.0,
                100 => heavy.0,
                _ => light.0.min(heavy.0),
            },
        }
    }

    fn sample(&self, rng: &mut SplitMix64) -> u64 {
        match *self {
            WeightDistribution::Uniform { min, max } => rng.range(min, max),
            WeightDistribution::LogUniform { min, max } => {
                let lo_oct = 63 - min.leading_zeros();
                let hi_oct = 63 - max.leading_zeros();
                let oct = rng.range(u64::from(lo_oct), u64::from(hi_oct)) as u32;
                let start = (1u64 << oct).max(min);
                let end = (1u64 << oct).saturating_mul(2).saturating_sub(1).min(max);
                rng.range(start, end)
            }
            WeightDistribution::Bimodal {
                light,
                heavy,
                heavy_percent,
            } => {
                let (lo, hi) = if rng.range(0, 99) < u64::from(heavy_percent) {
                    heavy
                } else {
                    light
                };
                rng.range(lo, hi)
            }
        }
    }
}

/// `depth` layer weights drawn from `distribution` with a SplitMix64 seeded by `seed`.
///
/// # Errors
///
/// [`DslError::InvalidSynth`] for a zero depth or an invalid distribution.
///
/// ```
/// use taopipe_dsl::{random_weights, WeightDistribution};
///
/// let d = WeightDistribution::Uniform { min: 1, max: 10 };
/// let w = random_weights(7, 20, d)?;
/// assert_eq!(w.len(), 20);
/// assert!(w.iter().all(|&x| (1..=10).contains(&x)));
/// assert_eq!(w, random_weights(7, 20, d)?);
/// # Ok::<(), taopipe_dsl::DslError>(())
/// ```
pub fn random_weights(
    seed: u64,
    depth: usize,
    distribution: WeightDistribution,
) -> Result<Vec<u64>, DslError> {
    if depth == 0 {
        return Err(invalid("depth must be at least 1".into()));
    }
    distribution.check()?;
    let mut rng = SplitMix64::new(seed);
    Ok((0..depth).map(|_| distribution.sample(&mut rng)).collect())
}

/// A random synthetic net: `depth` conv layers whose weights are
/// `SYNTH_UNIT · random_weights(seed, depth, distribution)`; named `random-<seed>`.
///
/// # Errors
///
/// As [`random_weights`] and [`conv_net_with_weights`]: [`DslError::SynthTooLarge`] for a
/// net over [`SYNTH_MEMORY_LIMIT`], at once (nothing drawn) for a depth whose layers
/// exceed it even at the distribution's least weight.
///
/// ```
/// use taopipe_dsl::{random_net, WeightDistribution};
///
/// let net = random_net(1, 30, WeightDistribution::LogUniform { min: 1, max: 64 })?;
/// assert_eq!(net.len(), 30);
/// # Ok::<(), taopipe_dsl::DslError>(())
/// ```
pub fn random_net(
    seed: u64,
    depth: usize,
    distribution: WeightDistribution,
) -> Result<NetSpec, DslError> {
    let name = format!("random-{seed}");
    distribution.check()?;
    // Every layer takes at least the bytes of the least weight: refuse a depth beyond the
    // limit before drawing (and allocating) `depth` weights.
    let least = distribution.least();
    let floor = (0..2).map(|i| layer_bytes(i, least)).min().flatten();
    let input = (CH * HEIGHT * WIDTH * 4) as u64;
    let bytes = floor
        .and_then(|f| f.checked_mul(depth as u64))
        .and_then(|b| b.checked_add(input));
    if bytes.is_none_or(|b| b > SYNTH_MEMORY_LIMIT) {
        return Err(DslError::SynthTooLarge {
            net: name,
            depth,
            bytes,
            at_least: true,
            limit: SYNTH_MEMORY_LIMIT,
        });
    }
    let weights = random_weights(seed, depth, distribution)?;
    conv_net_with_weights(&name, &weights)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        // Reference output of the published splitmix64.c, seed 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn odd_divisor() {
        assert_eq!(odd_divisor_near_sqrt(396), 11);
        assert_eq!(odd_divisor_near_sqrt(16), 1);
        assert_eq!(odd_divisor_near_sqrt(18), 3);
        assert_eq!(odd_divisor_near_sqrt(2), 1);
    }

    #[test]
    fn distributions_stay_in_range() {
        let dists = [
            WeightDistribution::Uniform { min: 3, max: 3 },
            WeightDistribution::LogUniform { min: 1, max: 1000 },
            WeightDistribution::LogUniform { min: 5, max: 6 },
            WeightDistribution::Bimodal {
                light: (1, 4),
                heavy: (50, 60),
                heavy_percent: 30,
            },
        ];
        for d in dists {
            let w = random_weights(9, 500, d).expect("valid distribution");
            let (lo, hi) = match d {
                WeightDistribution::Uniform { min, max }
                | WeightDistribution::LogUniform { min, max } => (min, max),
                WeightDistribution::Bimodal { light, heavy, .. } => (light.0, heavy.1),
            };
            assert!(w.iter().all(|&x| x >= lo && x <= hi), "{d:?}");
        }
        assert!(random_weights(1, 0, dists[0]).is_err());
        assert!(random_weights(1, 3, WeightDistribution::Uniform { min: 0, max: 3 }).is_err());
        assert!(random_weights(1, 3, WeightDistribution::Uniform { min: 4, max: 3 }).is_err());
    }
}
