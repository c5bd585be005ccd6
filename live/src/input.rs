//! A user's own frame: a raw f32 tensor file, or an image prepared as torchvision prepares
//! ImageNet images.
//!
//! ```no_run
//! use taopipe_dsl::Shape;
//! use taopipe_live::input::read_frame;
//!
//! let shape = Shape::new(3, 224, 224);
//! let x = read_frame("cat.jpg".as_ref(), shape)?;   // decoded, resized, cropped, normalised
//! let y = read_frame("x.f32".as_ref(), shape)?;     // raw little-endian f32, CHW
//! assert_eq!(x.len(), 3 * 224 * 224);
//! # Ok::<(), taopipe_live::input::InputError>(())
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};

use taopipe_dsl::Shape;

/// torchvision's ImageNet channel means (RGB), subtracted after scaling to `[0, 1]`.
pub const IMAGENET_MEAN: [f32; 3] = [0.485, 0.456, 0.406];
/// torchvision's ImageNet channel standard deviations (RGB), divided by after the mean.
pub const IMAGENET_STD: [f32; 3] = [0.229, 0.224, 0.225];

/// What a frame file is taken as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// Raw little-endian f32 values in CHW order, exactly the net's input length.
    Tensor,
    /// An image (PNG or JPEG), prepared as torchvision's ImageNet evaluation does.
    Image,
}

impl Frame {
    /// `Image` for `.png`, `.jpg` and `.jpeg` files (any case), `Tensor` for the others.
    pub fn of(path: &Path) -> Frame {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("png" | "jpg" | "jpeg") => Frame::Image,
            _ => Frame::Tensor,
        }
    }
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file could not be read.
    #[error("cannot read {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A raw tensor of the wrong length.
    #[error(
        "{path}: the {shape} input takes {expected} bytes ({values} little-endian f32 values), the file has {found}"
    )]
    Length {
        /// The file.
        path: PathBuf,
        /// The net's input.
        shape: Shape,
        /// Bytes expected.
        expected: usize,
        /// Values expected.
        values: usize,
        /// What the file holds (a count, or "more").
        found: String,
    },
    /// The image could not be decoded.
    #[error("{path}: not an image taopipe can read (PNG or JPEG)")]
    Image {
        /// The file.
        path: PathBuf,
        /// The decoder's error.
        #[source]
        source: image::ImageError,
    },
    /// An image for a net whose input is not three channels.
    #[error("{path}: an image gives 3 channels (RGB), the net takes {shape}")]
    Channels {
        /// The file.
        path: PathBuf,
        /// The net's input.
        shape: Shape,
    },
}

/// Reads a frame for a net whose input is `shape`, by the file's extension ([`Frame::of`]).
///
/// # Errors
/// See [`InputError`].
pub fn read_frame(path: &Path, shape: Shape) -> Result<Vec<f32>, InputError> {
    match Frame::of(path) {
        Frame::Tensor => read_tensor(path, shape),
        Frame::Image => read_image(path, shape),
    }
}

/// Reads raw little-endian f32 values, exactly `shape`'s count. At most one byte more than
/// that is read, so a huge file or `/dev/zero` is refused without being read whole.
///
/// # Errors
/// [`InputError::Io`], or [`InputError::Length`] for a file of another length.
pub fn read_tensor(path: &Path, shape: Shape) -> Result<Vec<f32>, InputError> {
    let len = shape.c * shape.h * shape.w;
    let mut bytes = Vec::with_capacity(len * 4 + 1);
    std::fs::File::open(path)
        .and_then(|f| f.take(len as u64 * 4 + 1).read_to_end(&mut bytes))
        .map_err(|source| InputError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() != len * 4 {
        return Err(InputError::Length {
            path: path.to_path_buf(),
            shape,
            expected: len * 4,
            values: len,
            found: if bytes.len() > len * 4 {
                "more".into()
            } else {
                bytes.len().to_string()
            },
        });
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// Decodes an image and prepares it as torchvision's ImageNet evaluation transform does:
/// resize so the shorter side is `256/224` of the net's (256 for 224, bilinear with
/// antialiasing), crop the centre to the net's height and width, scale to `[0, 1]`,
/// subtract [`IMAGENET_MEAN`] and divide by [`IMAGENET_STD`] per channel, CHW order.
///
/// The resize filter is the `image` crate's triangle filter, which widens with the scale as
/// PIL's bilinear does: values are close to torchvision's, not bit-identical.
///
/// # Errors
/// [`InputError::Image`] for a file that does not decode, [`InputError::Channels`] for a
/// net whose input is not 3 channels.
pub fn read_image(path: &Path, shape: Shape) -> Result<Vec<f32>, InputError> {
    if shape.c != 3 {
        return Err(InputError::Channels {
            path: path.to_path_buf(),
            shape,
        });
    }
    let img = image::open(path).map_err(|source| InputError::Image {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(imagenet_tensor(&img.to_rgb8(), shape.h, shape.w))
}

/// The ImageNet preparation of [`read_image`] on decoded RGB pixels.
pub fn imagenet_tensor(rgb: &image::RgbImage, h: usize, w: usize) -> Vec<f32> {
    let (iw, ih) = (rgb.width() as f64, rgb.height() as f64);
    // The shorter side to 256/224 of the crop's shorter side (torchvision: Resize(256)).
    let target = h.min(w) as f64 * 256.0 / 224.0;
    let scale = target / iw.min(ih);
    let (rw, rh) = (
        ((iw * scale).round() as u32).max(w as u32),
        ((ih * scale).round() as u32).max(h as u32),
    );
    let resized = image::imageops::resize(rgb, rw, rh, image::imageops::FilterType::Triangle);
    let (x0, y0) = ((rw as usize - w) / 2, (rh as usize - h) / 2);
    let mut out = vec![0.0; 3 * h * w];
    for (c, plane) in out.chunks_exact_mut(h * w).enumerate() {
        for y in 0..h {
            for x in 0..w {
                let p = resized.get_pixel((x0 + x) as u32, (y0 + y) as u32);
                let v = f32::from(p[c]) / 255.0;
                plane[y * w + x] = (v - IMAGENET_MEAN[c]) / IMAGENET_STD[c];
            }
        }
    }
    out
}

#[cfg(test)]
mod test;
