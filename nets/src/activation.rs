//! The scalar rules of ReLU and max that every path follows, so that NaN and ±∞ propagate
//! as in PyTorch and ONNX Runtime: an all-NaN frame gives a NaN output, not a finite one.
//!
//! `f32::max` is IEEE `maxNum`, which *drops* a NaN operand (`NaN.max(0.0) == 0.0`), so it
//! is used for neither. The SIMD micro-kernels compute the same rules with their own
//! instructions (`simd/template.rs`), bit for bit.

/// ReLU: `0.0` where `v < 0`, else `v` itself. So NaN stays NaN (with its payload), +∞
/// stays +∞, −∞ becomes `0.0`, and `−0.0` stays `−0.0` (it is not below zero; PyTorch's
/// `clamp_min` keeps it too).
///
/// This is x86 `max_ps(zero, v)` exactly (the second operand when either is NaN or both
/// are zero), the micro-kernels' epilogue; on NEON the template's `max` computes the same
/// rule (`simd/neon.rs`).
#[inline(always)]
pub(crate) fn relu(v: f32) -> f32 {
    if v < 0.0 { 0.0 } else { v }
}

/// The larger of `a` and `b`, NaN if either is NaN (PyTorch's max pool: a window holding a
/// NaN gives NaN). On equal values (`±0.0`) it returns `b`.
///
/// Written as `a > b ? a : b` (which already returns a NaN `b`) and a bit mask that picks a
/// NaN `a`: LLVM then emits `maxps`, one compare and a blend, the instruction count of
/// `f32::max`, where the plain `if a > b || a.is_nan()` merges into two compares and an or.
#[inline(always)]
pub(crate) fn max_nan(a: f32, b: f32) -> f32 {
    let larger = if a > b { a } else { b };
    let a_nan = u32::from(a.is_nan()).wrapping_neg();
    f32::from_bits((a.to_bits() & a_nan) | (larger.to_bits() & !a_nan))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECIAL: [f32; 8] = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1.5,
        -2.5,
        f32::MIN_POSITIVE,
    ];

    #[test]
    fn relu_propagates_nan_and_keeps_negative_zero() {
        assert!(relu(f32::NAN).is_nan());
        assert!(relu(-f32::NAN).is_nan());
        assert_eq!(relu(f32::INFINITY), f32::INFINITY);
        assert_eq!(relu(f32::NEG_INFINITY).to_bits(), 0.0f32.to_bits());
        assert_eq!(relu(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(relu(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(relu(-3.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(relu(3.0), 3.0);
        // The payload survives, as through x86 `max_ps(zero, v)`.
        let payload = f32::from_bits(0x7fc0_1234);
        assert_eq!(relu(payload).to_bits(), payload.to_bits());
    }

    #[test]
    fn max_nan_is_nan_when_either_is() {
        for a in SPECIAL {
            for b in SPECIAL {
                let m = max_nan(a, b);
                if a.is_nan() || b.is_nan() {
                    assert!(m.is_nan(), "max({a}, {b}) = {m}");
                } else {
                    assert_eq!(m, if a > b { a } else { b }, "max({a}, {b})");
                }
            }
        }
        assert_eq!(max_nan(f32::NEG_INFINITY, -1.0), -1.0);
        assert_eq!(max_nan(-1.0, f32::INFINITY), f32::INFINITY);
    }
}
