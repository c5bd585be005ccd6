//! Stage weights and their coefficient of variation (paper Eq. 3).

use crate::DslError;

/// The weight of each pipeline stage: the sum of the weights of its layers.
///
/// `composition` gives the number of consecutive layers in each stage; every entry must
/// be at least 1 and they must add up to `weights.len()`.
///
/// # Errors
///
/// [`DslError::BadComposition`] if the composition does not split the layers exactly;
/// [`DslError::TotalWeightOverflow`] if a stage weight overflows `u64`.
///
/// # Examples
///
/// ```
/// use taopipe_dsl::stage_weights;
///
/// // Synth 1 of the paper, seed [3, 2, 2]
/// let w = [1, 4, 8, 4, 8, 8, 4];
/// assert_eq!(stage_weights(&w, &[3, 2, 2])?, vec![13, 12, 12]);
/// assert!(stage_weights(&w, &[3, 3]).is_err());
/// # Ok::<(), taopipe_dsl::DslError>(())
/// ```
pub fn stage_weights(weights: &[u64], composition: &[usize]) -> Result<Vec<u64>, DslError> {
    let bad = || DslError::BadComposition {
        composition: composition.to_vec(),
        layers: weights.len(),
    };
    let mut out = Vec::with_capacity(composition.len());
    let mut start = 0usize;
    for &n in composition {
        if n == 0 {
            return Err(bad());
        }
        let end = start
            .checked_add(n)
            .filter(|&e| e <= weights.len())
            .ok_or_else(bad)?;
        let sum = weights[start..end]
            .iter()
            .try_fold(0u64, |acc, &w| acc.checked_add(w))
            .ok_or(DslError::TotalWeightOverflow {
                layers: weights.len(),
            })?;
        out.push(sum);
        start = end;
    }
    if start != weights.len() {
        return Err(bad());
    }
    Ok(out)
}

/// The coefficient of variation of stage weights (Eq. 3): population standard deviation
/// over mean, as a fraction (`0.038` is the paper's "3.8").
///
/// Computed exactly in integers as `sqrt(n·Σs² − (Σs)²) / Σs` and rounded once, so for a
/// fixed stage count and total it is a non-decreasing function of `Σs²` (the key the seeds
/// are sorted by). An empty slice, or stages that all weigh 0, give `0.0` (nothing is
/// unbalanced).
///
/// # Examples
///
/// ```
/// use taopipe_dsl::cv;
///
/// assert_eq!(cv(&[12, 12, 12]), 0.0);
/// // [13, 12, 12]: mean 37/3, population std sqrt(2)/3  →  sqrt(2)/37 ≈ 3.8 %
/// assert!((cv(&[13, 12, 12]) - 2f64.sqrt() / 37.0).abs() < 1e-15);
/// // [1, 3]: mean 2, std 1
/// assert_eq!(cv(&[1, 3]), 0.5);
/// ```
pub fn cv(stage_weights: &[u64]) -> f64 {
    let n = stage_weights.len();
    let sum: u128 = stage_weights.iter().map(|&s| u128::from(s)).sum();
    let sum_sq = stage_weights.iter().try_fold(0u128, |acc, &s| {
        acc.checked_add(u128::from(s) * u128::from(s))
    });
    match sum_sq {
        Some(q) => cv_from(n, sum, q),
        None => cv_float(stage_weights),
    }
}

/// CV of `n` stages with total `sum` and sum of squares `sum_sq` (see [`cv`]).
pub(crate) fn cv_from(n: usize, sum: u128, sum_sq: u128) -> f64 {
    if n == 0 || sum == 0 {
        return 0.0;
    }
    let numerator = (n as u128)
        .checked_mul(sum_sq)
        .and_then(|nq| sum.checked_mul(sum).map(|s2| nq.saturating_sub(s2)));
    match numerator {
        Some(num) => (num as f64).sqrt() / sum as f64,
        None => {
            // Beyond u128: the same formula in floating point.
            let (n, s, q) = (n as f64, sum as f64, sum_sq as f64);
            (n * q - s * s).max(0.0).sqrt() / s
        }
    }
}

/// Two-pass floating-point CV, for stage weights whose squares overflow `u128`.
fn cv_float(stage_weights: &[u64]) -> f64 {
    let n = stage_weights.len() as f64;
    let mean = stage_weights.iter().map(|&s| s as f64).sum::<f64>() / n;
    if mean == 0.0 {
        return 0.0;
    }
    let var = stage_weights
        .iter()
        .map(|&s| (s as f64 - mean).powi(2))
        .sum::<f64>()
        / n;
    var.sqrt() / mean
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn cv_small_vectors() {
        assert_eq!(cv(&[]), 0.0);
        assert_eq!(cv(&[0, 0]), 0.0);
        assert_eq!(cv(&[5]), 0.0);
        assert_eq!(cv(&[7, 7, 7, 7]), 0.0);
        // [2, 4]: mean 3, std 1 → 1/3
        assert!((cv(&[2, 4]) - 1.0 / 3.0).abs() < 1e-15);
        // [1, 2, 3, 4]: mean 2.5, var (2.25+0.25+0.25+2.25)/4 = 1.25
        assert!((cv(&[1, 2, 3, 4]) - 1.25f64.sqrt() / 2.5).abs() < 1e-15);
        // [0, 10]: mean 5, std 5
        assert_eq!(cv(&[0, 10]), 1.0);
    }

    #[test]
    fn cv_matches_two_pass_float() {
        let cases: [&[u64]; 4] = [
            &[13, 12, 12],
            &[1, 4, 8, 4, 8, 8, 4],
            &[100, 1],
            &[3, 9, 27, 81],
        ];
        for c in cases {
            assert!((cv(c) - cv_float(c)).abs() < 1e-12, "{c:?}");
        }
    }

    #[test]
    fn cv_huge_values_do_not_panic() {
        let c = [u64::MAX, u64::MAX, 1];
        let v = cv(&c);
        assert!(v.is_finite() && v > 0.0);
        assert_eq!(cv(&[u64::MAX, u64::MAX]), 0.0);
    }

    #[test]
    fn stage_weights_rejects_bad_compositions() {
        let w = [1, 2, 3];
        assert_eq!(stage_weights(&w, &[1, 2]), Ok(vec![1, 5]));
        assert!(stage_weights(&w, &[1, 0, 2]).is_err());
        assert!(stage_weights(&w, &[1, 1]).is_err());
        assert!(stage_weights(&w, &[2, 2]).is_err());
        assert!(stage_weights(&w, &[usize::MAX, 1]).is_err());
        assert!(stage_weights(&[u64::MAX, 1], &[2]).is_err());
    }
}
