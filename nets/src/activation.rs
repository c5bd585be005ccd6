//! The scalar rules of the activations and of max that every path follows, so that NaN
//! and ±∞ propagate as in PyTorch and ONNX Runtime: an all-NaN frame gives a NaN output,
//! not a finite one.
//!
//! `f32::max` is IEEE `maxNum`, which *drops* a NaN operand (`NaN.max(0.0) == 0.0`), so it
//! is used for none of them. The SIMD micro-kernels compute the same rules with their own
//! instructions (`simd/template.rs`), bit for bit, so an activation fused into a conv's
//! store gives the bits of the conv followed by the element-wise layer
//! ([`crate::elementwise::Activate`]).
//!
//! Loops over many values take the activation through [`with_activation!`]: one match for
//! the whole run, each arm a loop compiled (and vectorised) for its activation alone, where
//! [`Activation::apply`] per element would leave a match in the loop.

/// What a layer applies to each of its outputs after the sum (and bias, and residual): the
/// activation a convolution fuses into its store ([`crate::Conv2dParams::act`]), or an
/// element-wise layer applies ([`crate::elementwise::Activate`]). Every path, scalar or
/// SIMD, gives the bits of [`Activation::apply`], so fusing never changes a result.
///
/// Equality is by bits (so it is an equivalence, NaN bounds included): two layers with
/// equal activations give the same bits.
///
/// ```
/// use taopipe_nets::Activation;
///
/// let relu6 = Activation::RELU6;
/// assert_eq!(relu6.apply(7.5), 6.0);
/// assert_eq!(relu6.apply(-1.0), 0.0);
/// assert!(relu6.apply(f32::NAN).is_nan());
/// assert_eq!(Activation::LeakyRelu { slope: 0.1 }.apply(-2.0), -0.2);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub enum Activation {
    /// The value itself.
    #[default]
    None,
    /// `0` below zero (`v < 0 ? 0 : v`, so NaN and `−0.0` stay).
    Relu,
    /// `min(max(v, min), max)`: ReLU6 is `Clip { min: 0.0, max: 6.0 }`.
    Clip {
        /// The lower bound.
        min: f32,
        /// The upper bound (not below `min`).
        max: f32,
    },
    /// `v` where `v ≥ 0`, else `slope · v` (ONNX's `LeakyRelu`).
    LeakyRelu {
        /// The factor of negative values.
        slope: f32,
    },
}

impl Activation {
    /// ReLU6, MobileNet's activation.
    pub const RELU6: Activation = Activation::Clip { min: 0.0, max: 6.0 };

    /// ReLU if `relu`, else nothing: a layer's fused-ReLU flag.
    pub const fn relu_if(relu: bool) -> Activation {
        if relu {
            Activation::Relu
        } else {
            Activation::None
        }
    }

    /// The activation applied to `v`, by the rules every path follows:
    /// - `Relu`: `v < 0 ? 0 : v`;
    /// - `Clip`: `x = min > v ? min : v`, then `max < x ? max : x` — x86 `max_ps(min, v)`
    ///   then `min_ps(max, x)`, so a NaN `v` stays NaN (PyTorch's `clamp`);
    /// - `LeakyRelu`: `v ≥ 0 ? v : slope · v` — so NaN stays NaN and `−0.0` stays `−0.0`.
    #[inline(always)]
    pub fn apply(self, v: f32) -> f32 {
        match self {
            Activation::None => v,
            Activation::Relu => relu(v),
            Activation::Clip { min, max } => clip(v, min, max),
            Activation::LeakyRelu { slope } => leaky_relu(v, slope),
        }
    }

    /// Whether it leaves every value as it is.
    pub fn is_none(self) -> bool {
        matches!(self, Activation::None)
    }

    /// `(tag, a, b)`: what equality and hashing compare, the parameters by their bits.
    fn key(self) -> (u8, u32, u32) {
        match self {
            Activation::None => (0, 0, 0),
            Activation::Relu => (1, 0, 0),
            Activation::Clip { min, max } => (2, min.to_bits(), max.to_bits()),
            Activation::LeakyRelu { slope } => (3, slope.to_bits(), 0),
        }
    }
}

impl PartialEq for Activation {
    fn eq(&self, other: &Activation) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Activation {}

impl std::hash::Hash for Activation {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

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

/// Clip: `x = min > v ? min : v`, then `max < x ? max : x`. This is x86 `max_ps(min, v)`
/// then `min_ps(max, x)` exactly (each returns its second operand when either is NaN or
/// both are zero), so NaN and `−0.0` stay (inside the bounds).
#[inline(always)]
pub(crate) fn clip(v: f32, min: f32, max: f32) -> f32 {
    let x = if min > v { min } else { v };
    if max < x { max } else { x }
}

/// Leaky ReLU: `v ≥ 0 ? v : slope · v`, so NaN (compared unordered) gives `slope · v`,
/// NaN, and `−0.0` (not below zero) stays `−0.0`.
#[inline(always)]
pub(crate) fn leaky_relu(v: f32, slope: f32) -> f32 {
    if v >= 0.0 { v } else { slope * v }
}

/// Evaluates `$body` with `$f` bound to `$act`'s rule as a function of one `f32`
/// (`|$f| $body`): one match, each arm the body compiled for one activation, so a loop in
/// the body has no match per element and vectorises.
macro_rules! with_activation {
    ($act:expr, |$f:ident| $body:expr) => {
        match $act {
            $crate::Activation::None => {
                let $f = |v: f32| v;
                $body
            }
            $crate::Activation::Relu => {
                let $f = $crate::activation::relu;
                $body
            }
            $crate::Activation::Clip { min, max } => {
                let $f = move |v: f32| $crate::activation::clip(v, min, max);
                $body
            }
            $crate::Activation::LeakyRelu { slope } => {
                let $f = move |v: f32| $crate::activation::leaky_relu(v, slope);
                $body
            }
        }
    };
}
pub(crate) use with_activation;

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
    fn clip_and_leaky_relu_follow_their_rules() {
        let relu6 = Activation::RELU6;
        let leaky = Activation::LeakyRelu { slope: 0.1 };
        for v in SPECIAL {
            let c = relu6.apply(v);
            let l = leaky.apply(v);
            if v.is_nan() {
                assert!(c.is_nan() && l.is_nan(), "{v}");
                continue;
            }
            assert_eq!(c, v.clamp(0.0, 6.0), "clip {v}");
            assert_eq!(l, if v >= 0.0 { v } else { 0.1 * v }, "leaky {v}");
        }
        assert_eq!(leaky.apply(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(relu6.apply(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(Activation::None.apply(-3.0), -3.0);
        assert_eq!(Activation::relu_if(true).apply(-3.0), 0.0);
    }

    #[test]
    fn activations_are_equal_by_bits() {
        let nan = Activation::Clip {
            min: f32::NAN,
            max: 1.0,
        };
        assert_eq!(nan, nan);
        assert_ne!(
            Activation::Clip { min: 0.0, max: 6.0 },
            Activation::Clip {
                min: -0.0,
                max: 6.0
            }
        );
        assert_ne!(Activation::Relu, Activation::None);
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
