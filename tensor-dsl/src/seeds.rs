//! Pipeline seeds (paper Alg. 1): the layer distributions of each stage count, sorted by
//! the CV of their stage weights.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::ops::{Range, RangeInclusive};
use std::sync::Arc;

use crate::cv::cv_from;
use crate::{DslError, NetSpec};

/// One layer distribution (a configuration's stage split) with its stage weights and CV.
#[derive(Debug, Clone, PartialEq)]
pub struct Seed {
    /// Layers per stage, in pipeline order (each ≥ 1, summing to the layer count).
    pub composition: Vec<usize>,
    /// Weight of each stage (sum of its layers' weights).
    pub stage_weights: Vec<u64>,
    /// Coefficient of variation of `stage_weights` (a fraction; Eq. 3).
    pub cv: f64,
    /// The sort key: `Σs²` for the paper's order, `Σ key(stage)` under a [`StageKey`].
    pub key: u128,
}

impl Seed {
    fn new(composition: Vec<usize>, prefix: &[u64]) -> Self {
        let mut seed = Seed::unkeyed(composition, prefix);
        seed.key = seed.sum_of_squares();
        seed
    }

    fn unkeyed(composition: Vec<usize>, prefix: &[u64]) -> Self {
        let mut stage_weights = Vec::with_capacity(composition.len());
        let mut start = 0;
        for &n in &composition {
            stage_weights.push(prefix[start + n] - prefix[start]);
            start += n;
        }
        let total = u128::from(prefix[prefix.len() - 1]);
        let cv = cv_from(composition.len(), total, sum_sq(&stage_weights));
        Seed {
            composition,
            stage_weights,
            cv,
            key: 0,
        }
    }

    /// Number of stages.
    pub fn stages(&self) -> usize {
        self.composition.len()
    }

    /// `Σ (stage weight)²`, the exact sort key.
    pub fn sum_of_squares(&self) -> u128 {
        sum_sq(&self.stage_weights)
    }
}

/// Σs²; cannot overflow when Σs fits in u64 (then Σs² ≤ (Σs)² < 2^128).
fn sum_sq(stage_weights: &[u64]) -> u128 {
    stage_weights
        .iter()
        .map(|&s| u128::from(s) * u128::from(s))
        .sum()
}

impl fmt::Display for Seed {
    /// `[3, 2, 2]  stages [13, 12, 12]  CV 3.82%`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?}  stages {:?}  CV {:.2}%",
            self.composition,
            self.stage_weights,
            self.cv * 100.0
        )
    }
}

/// The sort key of one stage; a composition's key is the sum over its stages, and seed
/// lists are sorted by it (ties lexicographic).
///
/// The paper's key (Alg. 1, [`SquaredWeight`]) is `(stage weight)²`: for a fixed stage
/// count, ascending `Σs²` is ascending CV. Other keys rank the same compositions by
/// something closer to stage *time* — [`SpeedScaled`] when the stages' places run at known,
/// unequal speeds, or a per-layer time predictor (`taopipe_live::planners::pipeit`).
pub trait StageKey: Send + Sync + fmt::Debug {
    /// The key of stage `stage` (0-based) of a `stages`-stage composition, holding the
    /// layers `layers` of total weight `weight`.
    fn key(&self, stages: usize, stage: usize, layers: Range<usize>, weight: u64) -> u128;
}

/// The paper's key, `(stage weight)²` (Alg. 1, Eq. 3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SquaredWeight;

impl StageKey for SquaredWeight {
    fn key(&self, _: usize, _: usize, _: Range<usize>, weight: u64) -> u128 {
        u128::from(weight) * u128::from(weight)
    }
}

/// Stage weights scaled by how slow each stage's place is: key `k · s²`, where `k` is the
/// place's time per unit of weight (`1 / speed` for one worker, `1 / (speed · width)` for
/// a wider place — whatever the caller's model says), relative to the fastest place.
///
/// Beyond the paper. Why `k·s²`: with the total weight fixed, `Σ kᵣ·sᵣ²` is least where
/// every `kᵣ·sᵣ` — the stage's *time* — is equal (Lagrange), so the first seed balances
/// times, not weights. When every `k` is equal the order is exactly the paper's.
///
/// `k` is quantised to 1/1024 of the fastest place's factor.
///
/// ```
/// use taopipe_dsl::{Seeds, SpeedScaled};
///
/// // stage 0 on a full-speed core, stage 1 on one at half speed
/// let key = SpeedScaled::new(|_stages, stage| if stage == 0 { 1.0 } else { 2.0 });
/// let seeds = Seeds::new(&[1; 9], 2)?.with_key(key);
/// assert_eq!(seeds.top_k(2, 1)?[0].composition, vec![6, 3]);
/// assert_eq!(Seeds::new(&[1; 9], 2)?.top_k(2, 1)?[0].composition, vec![4, 5]);
/// # Ok::<(), taopipe_dsl::DslError>(())
/// ```
#[derive(Clone)]
pub struct SpeedScaled {
    factor: Arc<dyn Fn(usize, usize) -> f64 + Send + Sync>,
}

impl SpeedScaled {
    /// `factor(stages, stage)`: time per unit of weight of stage `stage`'s place when the
    /// net runs in `stages` stages. Non-finite or non-positive factors count as 1.
    pub fn new(factor: impl Fn(usize, usize) -> f64 + Send + Sync + 'static) -> Self {
        SpeedScaled {
            factor: Arc::new(factor),
        }
    }

    fn scale(&self, stages: usize, stage: usize) -> u128 {
        let k = |r| {
            let f = (self.factor)(stages, r);
            if f.is_finite() && f > 0.0 { f } else { 1.0 }
        };
        let fastest = (0..stages).map(k).fold(f64::INFINITY, f64::min);
        ((k(stage) / fastest) * 1024.0).round().max(1.0) as u128
    }
}

impl StageKey for SpeedScaled {
    fn key(&self, stages: usize, stage: usize, _: Range<usize>, weight: u64) -> u128 {
        let s = u128::from(weight);
        (s * s).saturating_mul(self.scale(stages, stage))
    }
}

impl fmt::Debug for SpeedScaled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SpeedScaled")
    }
}

/// The number of compositions of `layers` into `stages` parts, `C(layers−1, stages−1)`;
/// `None` if it overflows `u128`. Zero when `stages` is 0 or exceeds `layers` (except
/// `composition_count(0, 0) == Some(1)`, the empty composition).
///
/// # Examples
///
/// ```
/// use taopipe_dsl::composition_count;
///
/// assert_eq!(composition_count(7, 3), Some(15));       // C(6, 2)
/// assert_eq!(composition_count(21, 16), Some(15_504)); // VGG16 on 16 cores
/// assert_eq!(composition_count(52, 16), Some(3_188_675_231_420)); // ResNet50
/// assert_eq!(composition_count(3, 4), Some(0));
/// assert_eq!(composition_count(1000, 500), None);
/// ```
pub fn composition_count(layers: usize, stages: usize) -> Option<u128> {
    if stages == 0 {
        return Some(u128::from(layers == 0));
    }
    if stages > layers {
        return Some(0);
    }
    binomial((layers - 1) as u128, (stages - 1) as u128)
}

/// `C(n, k)` without spurious overflow: every partial product is itself a binomial
/// `C(n−k+i, i) ≤ C(n, k)` (k ≤ n/2), and the division is made exact by a gcd first.
fn binomial(n: u128, k: u128) -> Option<u128> {
    let k = k.min(n - k);
    let mut r: u128 = 1;
    for i in 1..=k {
        // r = C(n-k+i-1, i-1);  C(n-k+i, i) = r · (n-k+i) / i
        let a = n - k + i;
        let g = gcd(r, i);
        let (r1, b) = (r / g, i / g);
        // b divides a, since r1·a is divisible by b and gcd(r1, b) = 1
        r = r1.checked_mul(a / b)?;
    }
    Some(r)
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The most compositions [`exhaustive_sorted`] will materialise.
pub const EXHAUSTIVE_LIMIT: u128 = 1 << 20;

/// The most bytes [`SeedIter`]'s tables may take: 1 GiB. They hold a `u128` key for every
/// stage and every run of layers, `16 · (stages · (layers + 1)² + (stages + 1) · (layers + 1))`
/// bytes, and take as many key evaluations to fill: 1 GiB holds 2046 layers in 16
/// stages, or 5790 in 2 (ResNet50 has 52 units). A deeper net (`--depth 100000` in 2
/// stages asked for 320 GB) is an error naming the layers, the stages and the size.
pub const SEED_TABLE_LIMIT: u64 = 1 << 30;

/// The bytes of [`SeedIter`]'s tables for `layers` and `stages`; `None` if they overflow.
fn seed_table_bytes(layers: usize, stages: usize) -> Option<u64> {
    let n = u64::try_from(layers).ok()?.checked_add(1)?;
    let s = u64::try_from(stages).ok()?;
    let cost = n.checked_mul(n)?.checked_mul(s)?;
    let rest = n.checked_mul(s.checked_add(1)?)?;
    cost.checked_add(rest)?.checked_mul(16)
}

/// Prefix sums of the weights (`prefix[i]` = sum of the first `i`), checking the total.
fn prefix_sums(weights: &[u64]) -> Result<Vec<u64>, DslError> {
    let mut prefix = Vec::with_capacity(weights.len() + 1);
    prefix.push(0u64);
    let mut acc = 0u64;
    for &w in weights {
        acc = acc.checked_add(w).ok_or(DslError::TotalWeightOverflow {
            layers: weights.len(),
        })?;
        prefix.push(acc);
    }
    Ok(prefix)
}

fn check_stages(layers: usize, stages: usize) -> Result<(), DslError> {
    if stages == 0 || stages > layers {
        return Err(DslError::InvalidStageCount { stages, layers });
    }
    Ok(())
}

/// Every composition of the layers into `stages` stages, sorted by CV ascending (ties
/// lexicographically; see [`SeedIter`]). For small spaces and as the
/// reference for [`SeedIter`].
///
/// # Errors
///
/// [`DslError::InvalidStageCount`] unless `1 ≤ stages ≤ weights.len()`;
/// [`DslError::TooManyCompositions`] above [`EXHAUSTIVE_LIMIT`];
/// [`DslError::TotalWeightOverflow`].
///
/// # Examples
///
/// ```
/// use taopipe_dsl::exhaustive_sorted;
///
/// let seeds = exhaustive_sorted(&[1, 4, 8, 4, 8, 8, 4], 3)?;
/// assert_eq!(seeds.len(), 15);
/// assert_eq!(seeds[0].composition, vec![3, 2, 2]);
/// # Ok::<(), taopipe_dsl::DslError>(())
/// ```
pub fn exhaustive_sorted(weights: &[u64], stages: usize) -> Result<Vec<Seed>, DslError> {
    let m = weights.len();
    check_stages(m, stages)?;
    let count = composition_count(m, stages);
    if count.is_none_or(|c| c > EXHAUSTIVE_LIMIT) {
        return Err(DslError::TooManyCompositions {
            layers: m,
            stages,
            count,
            limit: EXHAUSTIVE_LIMIT,
        });
    }
    let prefix = prefix_sums(weights)?;
    let mut all = Vec::new();
    let mut current = Vec::with_capacity(stages);
    enumerate(m, stages, &mut current, &mut all);
    let mut keyed: Vec<(u128, Vec<usize>)> = all
        .into_iter()
        .map(|c| {
            let seed = Seed::new(c, &prefix);
            (seed.sum_of_squares(), seed.composition)
        })
        .collect();
    keyed.sort_unstable();
    Ok(keyed
        .into_iter()
        .map(|(_, c)| Seed::new(c, &prefix))
        .collect())
}

fn enumerate(left: usize, stages: usize, current: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    if stages == 1 {
        current.push(left);
        out.push(current.clone());
        current.pop();
        return;
    }
    for n in 1..=left - (stages - 1) {
        current.push(n);
        enumerate(left - n, stages - 1, current, out);
        current.pop();
    }
}

/// A partial composition in the search heap, ordered by `(f, prefix)`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Node {
    /// `g + h`: the least cost of any completion.
    f: u128,
    /// Layers per stage fixed so far.
    prefix: Vec<usize>,
    /// Layers consumed by `prefix`.
    consumed: usize,
    /// Σs² of the stages in `prefix`.
    g: u128,
}

/// The compositions of the layers into a fixed number of stages, lazily, in exactly the
/// order of [`exhaustive_sorted`] (CV ascending, ties lexicographic). Scales to nets that
/// cannot be enumerated (ResNet50: 52 layers, 16 stages, 3.2·10¹² compositions).
///
/// # Examples
///
/// ```
/// use taopipe_dsl::SeedIter;
///
/// let w = [1, 4, 8, 4, 8, 8, 4];
/// let best: Vec<Vec<usize>> = SeedIter::new(&w, 2)?.take(3).map(|s| s.composition).collect();
/// assert_eq!(best, vec![vec![4, 3], vec![3, 4], vec![5, 2]]);
/// # Ok::<(), taopipe_dsl::DslError>(())
/// ```
///
/// # Order
///
/// For a fixed stage count `p` the mean stage weight `Σw / p` is fixed, so
/// `CV = sqrt(p·Σs² − (Σw)²) / Σw` grows with `Σs²`, the sum of squared stage weights.
/// Seeds are therefore sorted by the exact integer key `Σs²` (`u128`), and **ties** (equal
/// `Σs²`, hence exactly equal CV) by the composition in **lexicographic order**
/// (`[2, 3, 2]` before `[3, 2, 2]`). No floating-point comparison decides the order.
///
/// # Lazy enumeration
///
/// A composition of `M` layers into `p` stages is a path from `(0 layers, 0 stages)` to
/// `(M, p)` in a DAG whose edges are stages, with edge cost (stage weight)². [`SeedIter`]
/// runs a best-first search over the tree of partial compositions, keyed by
/// `f = g + h`, where `g` is the cost of the stages fixed so far and `h` is the exact
/// minimal cost to split the remaining layers into the remaining stages (a DP table,
/// `O(p·M²)` once). With an exact `h`, `f` of a partial composition is the least cost of
/// any of its completions, so complete compositions leave the heap in non-decreasing cost.
/// The heap is ordered by `(f, prefix)` with prefixes compared lexicographically; since a
/// prefix sorts before everything that extends it and every extension of a prefix sorts
/// before any later sibling, equal-cost compositions leave the heap in lexicographic
/// order too — exactly the order of [`exhaustive_sorted`], which the tests check.
/// Getting the first `k` seeds expands at most `k·p` nodes of at most `M` children each.
#[derive(Debug, Clone)]
pub struct SeedIter {
    prefix: Vec<u64>,
    stages: usize,
    /// `cost[(r·(M+1) + i)·(M+1) + j]`: the key of stage `r` holding layers `i..j`.
    cost: Vec<u128>,
    /// `rest[r][i]`: least cost splitting layers `i..M` into the last `r` stages
    /// (`u128::MAX`: impossible).
    rest: Vec<Vec<u128>>,
    heap: BinaryHeap<Reverse<Node>>,
}

impl SeedIter {
    /// Starts the enumeration of `weights` split into `stages` stages, in the paper's CV
    /// order.
    ///
    /// # Errors
    ///
    /// [`DslError::InvalidStageCount`] unless `1 ≤ stages ≤ weights.len()`;
    /// [`DslError::TotalWeightOverflow`] if the weights add up beyond `u64`;
    /// [`DslError::SeedTableTooLarge`] if its tables would take more than
    /// [`SEED_TABLE_LIMIT`].
    pub fn new(weights: &[u64], stages: usize) -> Result<Self, DslError> {
        SeedIter::with_key(weights, stages, &SquaredWeight)
    }

    /// Starts the enumeration in the order of `key`: ascending `Σ key(stage)`, ties
    /// lexicographic, exactly as for the paper's key.
    ///
    /// # Errors
    ///
    /// As [`SeedIter::new`].
    pub fn with_key(weights: &[u64], stages: usize, key: &dyn StageKey) -> Result<Self, DslError> {
        let m = weights.len();
        check_stages(m, stages)?;
        let bytes = seed_table_bytes(m, stages);
        if bytes.is_none_or(|b| b > SEED_TABLE_LIMIT) {
            return Err(DslError::SeedTableTooLarge {
                layers: m,
                stages,
                bytes,
                limit: SEED_TABLE_LIMIT,
            });
        }
        let prefix = prefix_sums(weights)?;
        let n = m + 1;
        let mut cost = vec![u128::MAX; stages * n * n];
        for r in 0..stages {
            for i in 0..m {
                for j in i + 1..=m {
                    cost[(r * n + i) * n + j] = key.key(stages, r, i..j, prefix[j] - prefix[i]);
                }
            }
        }
        let mut rest = vec![vec![u128::MAX; n]; stages + 1];
        rest[0][m] = 0;
        for r in 1..=stages {
            // the stage at position `stages - r`, with at least one layer, and r - 1
            // layers left for the other stages
            let stage = stages - r;
            let last = m.saturating_sub(r - 1);
            let prev = &rest[r - 1];
            let row: Vec<u128> = (0..=m)
                .map(|i| {
                    prev.iter()
                        .enumerate()
                        .take(last + 1)
                        .skip(i + 1)
                        .filter(|&(_, &tail)| tail != u128::MAX)
                        .map(|(j, &tail)| cost[(stage * n + i) * n + j].saturating_add(tail))
                        .min()
                        .unwrap_or(u128::MAX)
                })
                .collect();
            rest[r] = row;
        }
        let mut heap = BinaryHeap::new();
        heap.push(Reverse(Node {
            f: rest[stages][0],
            prefix: Vec::new(),
            consumed: 0,
            g: 0,
        }));
        Ok(SeedIter {
            prefix,
            stages,
            cost,
            rest,
            heap,
        })
    }

    /// Number of layers.
    pub fn layers(&self) -> usize {
        self.prefix.len() - 1
    }

    /// Number of stages.
    pub fn stages(&self) -> usize {
        self.stages
    }
}

impl Iterator for SeedIter {
    type Item = Seed;

    fn next(&mut self) -> Option<Seed> {
        let m = self.layers();
        while let Some(Reverse(node)) = self.heap.pop() {
            let used = node.prefix.len();
            if used == self.stages {
                let mut seed = Seed::unkeyed(node.prefix, &self.prefix);
                seed.key = node.g;
                return Some(seed);
            }
            let left = self.stages - used; // stages still to fill, >= 1
            let max_len = m - node.consumed - (left - 1);
            // the last stage takes every remaining layer
            let min_len = if left == 1 { max_len } else { 1 };
            for n in min_len..=max_len {
                let j = node.consumed + n;
                let width = m + 1;
                let g = node
                    .g
                    .saturating_add(self.cost[(used * width + node.consumed) * width + j]);
                let h = self.rest[left - 1][j];
                debug_assert!(h != u128::MAX);
                let mut prefix = Vec::with_capacity(self.stages);
                prefix.extend_from_slice(&node.prefix);
                prefix.push(n);
                self.heap.push(Reverse(Node {
                    f: g.saturating_add(h),
                    prefix,
                    consumed: j,
                    g,
                }));
            }
        }
        None
    }
}

/// Algorithm 1: for every stage count `2..=C` (`C` clamped to the layer count), the
/// layer distributions sorted by CV — produced lazily.
///
/// Here (as in the paper) a "layer" is one entry of the weight list; for a net, built with
/// [`Seeds::from_net`], that is one pipeline [unit](crate::Unit).
///
/// # Examples
///
/// ```
/// use taopipe_dsl::Seeds;
///
/// // Synth 1 of the paper on 4 cores: stage counts 2, 3, 4
/// let seeds = Seeds::new(&[1, 4, 8, 4, 8, 8, 4], 4)?;
/// assert_eq!(seeds.stage_counts(), 2..=4);
/// for p in seeds.stage_counts() {
///     for seed in seeds.top_k(p, 2)? {
///         println!("p={p}: {seed}");
///     }
/// }
/// assert_eq!(seeds.top_k(3, 1)?[0].composition, vec![3, 2, 2]);
/// # Ok::<(), taopipe_dsl::DslError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Seeds {
    weights: Vec<u64>,
    max_stages: usize,
    /// `None`: the paper's key.
    key: Option<Arc<dyn StageKey>>,
}

impl Seeds {
    /// Seeds of `weights` for stage counts `2..=max_stages` (`max_stages` = cores, `C`).
    ///
    /// # Errors
    ///
    /// [`DslError::TotalWeightOverflow`] if the weights add up beyond `u64`.
    pub fn new(weights: &[u64], max_stages: usize) -> Result<Self, DslError> {
        prefix_sums(weights)?;
        Ok(Seeds {
            weights: weights.to_vec(),
            max_stages,
            key: None,
        })
    }

    /// The same seeds, ranked by `key` instead of the paper's CV (see [`StageKey`]).
    pub fn with_key(mut self, key: impl StageKey + 'static) -> Self {
        self.key = Some(Arc::new(key));
        self
    }

    /// The key the lists are sorted by, `None` for the paper's.
    pub fn key(&self) -> Option<&dyn StageKey> {
        self.key.as_deref()
    }

    /// Seeds of a net's pipeline units: the weights are [`NetSpec::unit_weights`], so a
    /// composition counts [units](crate::Unit), not layers (a pipeline is never cut
    /// inside a unit).
    ///
    /// # Errors
    ///
    /// As [`Seeds::new`].
    pub fn from_net(net: &NetSpec, max_stages: usize) -> Result<Self, DslError> {
        Seeds::new(&net.unit_weights(), max_stages)
    }

    /// The layer weights.
    pub fn weights(&self) -> &[u64] {
        &self.weights
    }

    /// The stage counts of Alg. 1: `2..=min(C, M)` (empty when fewer than 2 layers or cores).
    pub fn stage_counts(&self) -> RangeInclusive<usize> {
        2..=self.max_stages.min(self.weights.len())
    }

    /// All layer distributions with `stages` stages, lazily, CV ascending (or by the
    /// [`StageKey`] given to [`Seeds::with_key`]).
    ///
    /// # Errors
    ///
    /// [`DslError::InvalidStageCount`] unless `1 ≤ stages ≤ M`.
    pub fn iter(&self, stages: usize) -> Result<SeedIter, DslError> {
        match &self.key {
            None => SeedIter::new(&self.weights, stages),
            Some(key) => SeedIter::with_key(&self.weights, stages, key.as_ref()),
        }
    }

    /// The first `k` of [`Seeds::iter`].
    ///
    /// # Errors
    ///
    /// As [`Seeds::iter`].
    pub fn top_k(&self, stages: usize, k: usize) -> Result<Vec<Seed>, DslError> {
        Ok(self.iter(stages)?.take(k).collect())
    }

    /// How many distributions `stages` stages have (`None`: more than `u128::MAX`).
    pub fn count(&self, stages: usize) -> Option<u128> {
        composition_count(self.weights.len(), stages)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn binomial_small() {
        let mut row = vec![1u128];
        for n in 1..=60u128 {
            let mut next = vec![1u128; row.len() + 1];
            for k in 1..row.len() {
                next[k] = row[k - 1] + row[k];
            }
            row = next;
            for (k, &v) in row.iter().enumerate() {
                assert_eq!(binomial(n, k as u128), Some(v), "C({n},{k})");
            }
        }
    }

    #[test]
    fn binomial_overflow_is_none_not_panic() {
        // C(130, 65) ≈ 9.5e37 fits (u128::MAX ≈ 3.4e38), C(132, 66) does not
        assert_eq!(
            binomial(130, 65),
            Some(95_067_625_827_960_698_145_584_333_020_095_113_100)
        );
        assert_eq!(binomial(132, 66), None);
        assert_eq!(composition_count(133, 67), None);
        assert!(composition_count(132, 66).is_some());
        assert_eq!(
            binomial(u128::from(u64::MAX), 1),
            Some(u128::from(u64::MAX))
        );
    }

    #[test]
    fn seed_table_bytes_at_the_limit() {
        let fits = |layers, stages| {
            seed_table_bytes(layers, stages).is_some_and(|b| b <= SEED_TABLE_LIMIT)
        };
        assert!(fits(2046, 16) && !fits(2047, 16));
        assert!(fits(5790, 2) && !fits(5791, 2));
        assert_eq!(seed_table_bytes(100_000, 2), Some(320_011_200_080));
        assert_eq!(seed_table_bytes(usize::MAX, 2), None);
    }

    #[test]
    fn seed_iter_single_stage_and_all_stages() {
        let w = [3, 1, 2];
        let one: Vec<_> = SeedIter::new(&w, 1).into_iter().flatten().collect();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].composition, vec![3]);
        let all: Vec<_> = SeedIter::new(&w, 3).into_iter().flatten().collect();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].stage_weights, vec![3, 1, 2]);
        assert!(SeedIter::new(&w, 0).is_err());
        assert!(SeedIter::new(&w, 4).is_err());
        assert!(SeedIter::new(&[u64::MAX, 1], 2).is_err());
    }
}
