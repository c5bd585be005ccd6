//! MOSAIC's communication cost estimator (Eq. 1–2): a transfer's time is linear in the bytes
//! moved, with coefficients fitted by least squares to measured copies.

use serde::{Deserialize, Serialize};

use super::MosaicError;

/// The time of moving a tensor from one device to another: `ms = intercept_ms +
/// ms_per_byte · bytes` (the paper's `α·T + β`), never below zero.
///
/// One model per ordered pair of devices; a device never pays to read its own data.
///
/// # Examples
///
/// ```
/// use taopipe_live::planners::mosaic::TransferModel;
///
/// // 0.05 ms to hand over, 1 ms per MB
/// let samples = [(0, 0.05), (1_000_000, 1.05), (4_000_000, 4.05)];
/// let m = TransferModel::fit(&samples)?;
/// assert!((m.intercept_ms - 0.05).abs() < 1e-12);
/// assert!((m.predict_ms(2_000_000) - 2.05).abs() < 1e-12);
/// # Ok::<(), taopipe_live::planners::mosaic::MosaicError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TransferModel {
    /// The fixed cost of a transfer, `β` (ms).
    pub intercept_ms: f64,
    /// The cost per byte, `α` (ms/byte).
    pub ms_per_byte: f64,
}

impl TransferModel {
    /// Transfers that cost nothing (shared memory, or the same device).
    pub const ZERO: TransferModel = TransferModel {
        intercept_ms: 0.0,
        ms_per_byte: 0.0,
    };

    /// A model with these coefficients.
    ///
    /// # Errors
    /// A coefficient that is not finite.
    pub fn new(intercept_ms: f64, ms_per_byte: f64) -> Result<TransferModel, MosaicError> {
        if !intercept_ms.is_finite() || !ms_per_byte.is_finite() {
            return Err(MosaicError::BadCoefficients {
                intercept_ms,
                ms_per_byte,
            });
        }
        Ok(TransferModel {
            intercept_ms,
            ms_per_byte,
        })
    }

    /// The least-squares line through `(bytes, ms)` samples (ordinary linear regression,
    /// as the paper's estimator). Samples may repeat a size; a measured excess may be
    /// negative (noise), the prediction is clamped instead.
    ///
    /// # Errors
    /// Fewer than two distinct sizes (the slope is undetermined), or a time that is not
    /// finite.
    pub fn fit(samples: &[(u64, f64)]) -> Result<TransferModel, MosaicError> {
        if let Some(&(bytes, ms)) = samples.iter().find(|(_, ms)| !ms.is_finite()) {
            return Err(MosaicError::BadSample { bytes, ms });
        }
        let mut sizes: Vec<u64> = samples.iter().map(|&(b, _)| b).collect();
        sizes.sort_unstable();
        sizes.dedup();
        if sizes.len() < 2 {
            return Err(MosaicError::TooFewSizes {
                sizes: sizes.len(),
                samples: samples.len(),
            });
        }
        let n = samples.len() as f64;
        let mean_x = samples.iter().map(|&(b, _)| b as f64).sum::<f64>() / n;
        let mean_y = samples.iter().map(|&(_, ms)| ms).sum::<f64>() / n;
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for &(b, ms) in samples {
            let dx = b as f64 - mean_x;
            sxy += dx * (ms - mean_y);
            sxx += dx * dx;
        }
        let slope = sxy / sxx;
        TransferModel::new(mean_y - slope * mean_x, slope)
    }

    /// The predicted time of moving `bytes`, at least 0 (a noisy fit never makes a cut
    /// look like it saves time).
    pub fn predict_ms(&self, bytes: u64) -> f64 {
        (self.intercept_ms + self.ms_per_byte * bytes as f64).max(0.0)
    }
}
