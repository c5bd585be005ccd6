//! Inference-time batch norm, `y = γ·(x − μ)/√(σ² + ε) + β`, and its folding into the
//! preceding convolution at load time: with `s = γ/√(σ² + ε)`,
//! `W'[k] = s[k]·W[k]` and `b'[k] = s[k]·(b[k] − μ[k]) + β[k]`.

use crate::error::KernelError;

/// Batch-norm parameters of one layer (PyTorch `BatchNorm2d` in eval mode).
#[derive(Clone, Debug, PartialEq)]
pub struct BatchNorm {
    /// γ (`weight`).
    pub gamma: Vec<f32>,
    /// β (`bias`).
    pub beta: Vec<f32>,
    /// Running mean μ.
    pub mean: Vec<f32>,
    /// Running variance σ².
    pub var: Vec<f32>,
    /// ε (PyTorch's default is `1e-5`).
    pub eps: f32,
}

impl BatchNorm {
    /// Channels.
    pub fn channels(&self) -> usize {
        self.gamma.len()
    }

    /// `(scale, shift)` per channel: `y = scale·x + shift`.
    ///
    /// # Errors
    /// Vectors of different lengths.
    pub fn affine(&self) -> Result<(Vec<f32>, Vec<f32>), KernelError> {
        let n = self.gamma.len();
        for (what, v) in [
            ("bn beta", &self.beta),
            ("bn mean", &self.mean),
            ("bn var", &self.var),
        ] {
            if v.len() != n {
                return Err(KernelError::BufferLen {
                    what,
                    expected: n,
                    got: v.len(),
                });
            }
        }
        let scale: Vec<f32> = (0..n)
            .map(|c| self.gamma[c] / (self.var[c] + self.eps).sqrt())
            .collect();
        let shift = (0..n)
            .map(|c| self.beta[c] - scale[c] * self.mean[c])
            .collect();
        Ok((scale, shift))
    }
}

/// Folds `bn` into a conv's OIHW `weights` and optional `bias`: returns the new weights and
/// bias, so that `conv'(x) = bn(conv(x))`.
///
/// # Errors
/// `bn`'s channel count does not divide into `weights` as output channels, or the bias or
/// the BN vectors have the wrong length.
///
/// ```
/// use taopipe_nets::{BatchNorm, fold_batchnorm};
/// let bn = BatchNorm { gamma: vec![2.0], beta: vec![1.0], mean: vec![0.5], var: vec![1.0], eps: 0.0 };
/// let (w, b) = fold_batchnorm(&[3.0, 4.0], None, &bn)?;
/// assert_eq!((w, b), (vec![6.0, 8.0], vec![0.0]));
/// # Ok::<(), taopipe_nets::KernelError>(())
/// ```
pub fn fold_batchnorm(
    weights: &[f32],
    bias: Option<&[f32]>,
    bn: &BatchNorm,
) -> Result<(Vec<f32>, Vec<f32>), KernelError> {
    let k = bn.channels();
    let (scale, _) = bn.affine()?;
    if k == 0 || !weights.len().is_multiple_of(k) {
        return Err(KernelError::BufferLen {
            what: "conv weights (not a multiple of the BN channels)",
            expected: k * (weights.len() / k.max(1)).max(1),
            got: weights.len(),
        });
    }
    if let Some(b) = bias
        && b.len() != k
    {
        return Err(KernelError::BufferLen {
            what: "conv bias",
            expected: k,
            got: b.len(),
        });
    }
    let per = weights.len() / k;
    let w = weights
        .chunks_exact(per)
        .zip(&scale)
        .flat_map(|(row, &s)| row.iter().map(move |&v| v * s))
        .collect();
    let b = (0..k)
        .map(|c| scale[c] * (bias.map_or(0.0, |b| b[c]) - bn.mean[c]) + bn.beta[c])
        .collect();
    Ok((w, b))
}

#[cfg(test)]
mod test;
