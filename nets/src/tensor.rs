//! CHW tensors (batch 1) on `ndarray`, and their shapes.

use std::fmt;

use ndarray::Array3;

use crate::error::KernelError;

/// The shape of a batch-1 activation in CHW order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    /// Channels.
    pub c: usize,
    /// Rows.
    pub h: usize,
    /// Columns.
    pub w: usize,
}

impl Shape {
    /// A CHW shape.
    ///
    /// ```
    /// let s = taopipe_nets::Shape::new(3, 224, 224);
    /// assert_eq!(s.len(), 3 * 224 * 224);
    /// ```
    pub const fn new(c: usize, h: usize, w: usize) -> Shape {
        Shape { c, h, w }
    }

    /// A vector of `n` features, as `n × 1 × 1` (what FC layers produce).
    pub const fn vector(n: usize) -> Shape {
        Shape { c: n, h: 1, w: 1 }
    }

    /// Number of elements.
    #[allow(clippy::len_without_is_empty)]
    pub const fn len(&self) -> usize {
        self.c * self.h * self.w
    }

    /// Elements of one channel plane (`h · w`).
    pub const fn plane(&self) -> usize {
        self.h * self.w
    }

    /// Flat index of `(c, y, x)` in CHW order.
    pub const fn index(&self, c: usize, y: usize, x: usize) -> usize {
        (c * self.h + y) * self.w + x
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}×{}×{}", self.c, self.h, self.w)
    }
}

/// A batch-1 CHW activation: a thin wrapper over `Array3<f32>` in standard (C-contiguous)
/// layout, so that [`Tensor::as_slice`] is the flat CHW buffer kernels work on.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    data: Array3<f32>,
}

impl Tensor {
    /// All zeros.
    pub fn zeros(shape: Shape) -> Tensor {
        Tensor {
            data: Array3::zeros((shape.c, shape.h, shape.w)),
        }
    }

    /// Wraps a flat CHW buffer.
    ///
    /// # Errors
    /// [`KernelError::BufferLen`] when `data.len() != shape.len()`.
    ///
    /// ```
    /// use taopipe_nets::{Shape, Tensor};
    /// let t = Tensor::from_vec(Shape::new(2, 1, 2), vec![1.0, 2.0, 3.0, 4.0])?;
    /// assert_eq!(t.get(1, 0, 1), 4.0);
    /// # Ok::<(), taopipe_nets::KernelError>(())
    /// ```
    pub fn from_vec(shape: Shape, data: Vec<f32>) -> Result<Tensor, KernelError> {
        let got = data.len();
        Array3::from_shape_vec((shape.c, shape.h, shape.w), data)
            .map(|data| Tensor { data })
            .map_err(|_| KernelError::BufferLen {
                what: "tensor",
                expected: shape.len(),
                got,
            })
    }

    /// Copies a flat CHW slice.
    ///
    /// # Errors
    /// As [`Tensor::from_vec`].
    pub fn from_slice(shape: Shape, data: &[f32]) -> Result<Tensor, KernelError> {
        Tensor::from_vec(shape, data.to_vec())
    }

    /// Wraps an `Array3` (any memory layout; it is made standard-layout).
    pub fn from_array(data: Array3<f32>) -> Tensor {
        let data = if data.is_standard_layout() {
            data
        } else {
            data.as_standard_layout().into_owned()
        };
        Tensor { data }
    }

    /// The shape.
    pub fn shape(&self) -> Shape {
        let (c, h, w) = self.data.dim();
        Shape { c, h, w }
    }

    /// The flat CHW buffer.
    pub fn as_slice(&self) -> &[f32] {
        self.data
            .as_slice()
            .expect("Tensor keeps its array in standard layout")
    }

    /// The flat CHW buffer, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [f32] {
        self.data
            .as_slice_mut()
            .expect("Tensor keeps its array in standard layout")
    }

    /// The element at `(c, y, x)`.
    ///
    /// # Panics
    /// Out of bounds.
    pub fn get(&self, c: usize, y: usize, x: usize) -> f32 {
        self.data[(c, y, x)]
    }

    /// The underlying array.
    pub fn array(&self) -> &Array3<f32> {
        &self.data
    }

    /// The flat CHW buffer, by value.
    pub fn into_vec(self) -> Vec<f32> {
        let (v, offset) = self.data.into_raw_vec_and_offset();
        debug_assert!(offset.unwrap_or(0) == 0);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_index() {
        let s = Shape::new(2, 3, 4);
        let v: Vec<f32> = (0..24).map(|i| i as f32).collect();
        let t = Tensor::from_vec(s, v.clone()).unwrap();
        assert_eq!(t.shape(), s);
        assert_eq!(t.get(1, 2, 3), v[s.index(1, 2, 3)]);
        assert_eq!(t.as_slice(), &v[..]);
        assert_eq!(t.into_vec(), v);
        assert!(Tensor::from_vec(s, vec![0.0; 5]).is_err());
        let a = Array3::from_shape_vec((2, 3, 4), v.clone()).unwrap();
        let tr = Tensor::from_array(a.reversed_axes().reversed_axes());
        assert_eq!(tr.as_slice(), &v[..]);
    }
}
