//! Tensor shapes: channels × height × width, batch 1.

use std::fmt;

/// The shape of one activation tensor, CHW order, batch size 1.
///
/// `Display` writes `CxHxW`, e.g. `3x224x224`.
///
/// # Examples
///
/// ```
/// use taopipe_dsl::Shape;
///
/// let s = Shape::new(3, 224, 224);
/// assert_eq!(s.elements(), Some(150_528));
/// assert_eq!(s.to_string(), "3x224x224");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    /// Channels (depth), `C` in the paper's Eq. 1.
    pub c: usize,
    /// Height, `H`.
    pub h: usize,
    /// Width, `W`.
    pub w: usize,
}

impl Shape {
    /// A shape of `c` channels of `h × w`.
    pub const fn new(c: usize, h: usize, w: usize) -> Self {
        Shape { c, h, w }
    }

    /// `C·H·W`, the number of elements, or `None` if it overflows `u64`.
    ///
    /// ```
    /// # use taopipe_dsl::Shape;
    /// assert_eq!(Shape::new(512, 7, 7).elements(), Some(25_088));
    /// ```
    pub const fn elements(&self) -> Option<u64> {
        match (self.c as u64).checked_mul(self.h as u64) {
            Some(ch) => ch.checked_mul(self.w as u64),
            None => None,
        }
    }

    /// Whether any dimension is zero (such a tensor holds nothing and is rejected).
    ///
    /// ```
    /// # use taopipe_dsl::Shape;
    /// assert!(Shape::new(3, 0, 4).has_zero_dim());
    /// ```
    pub const fn has_zero_dim(&self) -> bool {
        self.c == 0 || self.h == 0 || self.w == 0
    }

    /// `const` equality (derive(PartialEq) is not usable in const fns).
    pub(crate) const fn same_as(&self, other: &Shape) -> bool {
        self.c == other.c && self.h == other.h && self.w == other.w
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.c, self.h, self.w)
    }
}
