//! Where a model's parameters come from: random values from a seed, or a safetensors file
//! that uses torchvision's `state_dict` names (`features.0.weight`,
//! `layer1.0.conv1.weight`, `bn1.running_mean`, …), so a user can export a real torchvision
//! model and run it:
//!
//! ```text
//! import torch, torchvision, safetensors.torch as st
//! m = torchvision.models.vgg16(weights="DEFAULT").eval()
//! st.save_file({k: v.float().contiguous() for k, v in m.state_dict().items()}, "vgg16.safetensors")
//! ```
//!
//! A model asks for each tensor by name and shape; a missing tensor, a wrong shape or a
//! non-f32 tensor is an error naming the tensor. Tensors the model never asks for (such as
//! `num_batches_tracked`) are ignored; [`SafetensorsFile::unused`] lists them.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use safetensors::{Dtype, SafeTensors};

/// Why a weight could not be had.
#[derive(Debug, thiserror::Error)]
pub enum WeightError {
    /// The file could not be read.
    #[error("cannot read weights file {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a safetensors file.
    #[error("{path} is not a safetensors file: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// The file has no tensor of that name.
    #[error("{path} has no tensor `{name}` (it has {count} tensors, e.g. {examples})")]
    Missing {
        /// The file.
        path: PathBuf,
        /// The tensor asked for.
        name: String,
        /// How many tensors the file has.
        count: usize,
        /// A few of their names.
        examples: String,
    },
    /// The tensor has another shape than the layer needs.
    #[error("tensor `{name}` has shape {found:?}, the layer needs {expected:?}")]
    Shape {
        /// The tensor.
        name: String,
        /// The shape the layer needs.
        expected: Vec<usize>,
        /// The shape in the file.
        found: Vec<usize>,
    },
    /// The tensor is not f32.
    #[error("tensor `{name}` is {found}; taopipe reads f32 (export with `.float()`)")]
    Dtype {
        /// The tensor.
        name: String,
        /// Its element type.
        found: String,
    },
}

/// How a random tensor is drawn (ignored for file weights).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    /// Uniform in ±√(6 / fan_in) (He): keeps activations of deep ReLU nets in range.
    He {
        /// Inputs feeding one output.
        fan_in: usize,
    },
    /// Uniform in ±`bound`.
    Uniform {
        /// Half-width of the interval.
        bound: f32,
    },
    /// Uniform in `low..high` (e.g. batchnorm γ and running variance around 1).
    Between {
        /// Lower end.
        low: f32,
        /// Upper end (exclusive).
        high: f32,
    },
    /// Every element `value` (e.g. batchnorm `running_var` = 1).
    Constant {
        /// The value.
        value: f32,
    },
}

/// A source of named tensors.
pub trait Weights {
    /// The tensor `name` with exactly `shape`, as f32 values in row-major order.
    fn tensor(&self, name: &str, shape: &[usize], init: Init) -> Result<Vec<f32>, WeightError>;
}

/// Random weights from a seed: each tensor's values depend only on the seed and the
/// tensor's name, so a model's weights do not change when another layer is added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RandomWeights {
    /// The seed.
    pub seed: u64,
}

/// FNV-1a: a stable hash of a tensor name (std's hasher is not stable across releases).
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Weights for RandomWeights {
    fn tensor(&self, name: &str, shape: &[usize], init: Init) -> Result<Vec<f32>, WeightError> {
        let n: usize = shape.iter().product();
        let mut rng = StdRng::seed_from_u64(self.seed ^ name_hash(name));
        let bound = match init {
            Init::Constant { value } => return Ok(vec![value; n]),
            Init::Between { low, high } if low < high => {
                return Ok((0..n).map(|_| rng.random_range(low..high)).collect());
            }
            Init::Between { low, .. } => return Ok(vec![low; n]),
            Init::He { fan_in } => (6.0 / fan_in.max(1) as f32).sqrt(),
            Init::Uniform { bound } => bound,
        };
        if bound <= 0.0 {
            return Ok(vec![0.0; n]);
        }
        Ok((0..n).map(|_| rng.random_range(-bound..bound)).collect())
    }
}

/// A safetensors file read into memory.
#[derive(Debug)]
pub struct SafetensorsFile {
    path: PathBuf,
    bytes: Vec<u8>,
    names: Vec<String>,
    used: RefCell<BTreeSet<String>>,
}

impl SafetensorsFile {
    /// Reads and checks the file's header.
    pub fn open(path: &Path) -> Result<SafetensorsFile, WeightError> {
        let bytes = std::fs::read(path).map_err(|source| WeightError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        SafetensorsFile::from_bytes(path, bytes)
    }

    /// Parses bytes already in memory; `path` names them in errors.
    pub fn from_bytes(path: &Path, bytes: Vec<u8>) -> Result<SafetensorsFile, WeightError> {
        let names = {
            let tensors = SafeTensors::deserialize(&bytes).map_err(|e| WeightError::Format {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
            let mut names: Vec<String> = tensors.names().into_iter().map(str::to_string).collect();
            names.sort();
            names
        };
        Ok(SafetensorsFile {
            path: path.to_path_buf(),
            bytes,
            names,
            used: RefCell::default(),
        })
    }

    /// Every tensor name in the file, sorted.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Tensors no layer has asked for so far.
    pub fn unused(&self) -> Vec<String> {
        let used = self.used.borrow();
        self.names
            .iter()
            .filter(|n| !used.contains(*n))
            .cloned()
            .collect()
    }
}

impl Weights for SafetensorsFile {
    fn tensor(&self, name: &str, shape: &[usize], _init: Init) -> Result<Vec<f32>, WeightError> {
        let format = |e: safetensors::SafeTensorError| WeightError::Format {
            path: self.path.clone(),
            message: e.to_string(),
        };
        let tensors = SafeTensors::deserialize(&self.bytes).map_err(format)?;
        let view = tensors.tensor(name).map_err(|_| WeightError::Missing {
            path: self.path.clone(),
            name: name.to_string(),
            count: self.names.len(),
            examples: self
                .names
                .iter()
                .take(4)
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", "),
        })?;
        if view.dtype() != Dtype::F32 {
            return Err(WeightError::Dtype {
                name: name.to_string(),
                found: format!("{:?}", view.dtype()),
            });
        }
        if view.shape() != shape {
            return Err(WeightError::Shape {
                name: name.to_string(),
                expected: shape.to_vec(),
                found: view.shape().to_vec(),
            });
        }
        self.used.borrow_mut().insert(name.to_string());
        Ok(view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use safetensors::tensor::TensorView;

    fn file_with(tensors: &[(&str, Dtype, Vec<usize>, Vec<u8>)]) -> SafetensorsFile {
        let views: Vec<(String, TensorView<'_>)> = tensors
            .iter()
            .map(|(n, d, s, b)| {
                (
                    n.to_string(),
                    TensorView::new(*d, s.clone(), b).expect("view"),
                )
            })
            .collect();
        let bytes = safetensors::serialize(views, None).expect("serialize");
        SafetensorsFile::from_bytes(Path::new("test.safetensors"), bytes).expect("parse")
    }

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn reads_f32_tensors_by_torchvision_name() {
        let w = [0.5f32, -1.0, 2.0, 3.25, 0.0, 7.0];
        let f = file_with(&[
            (
                "features.0.weight",
                Dtype::F32,
                vec![1, 1, 2, 3],
                f32_bytes(&w),
            ),
            ("features.0.bias", Dtype::F32, vec![1], f32_bytes(&[0.25])),
            ("bn1.num_batches_tracked", Dtype::I64, vec![], vec![0; 8]),
        ]);
        assert_eq!(
            f.tensor(
                "features.0.weight",
                &[1, 1, 2, 3],
                Init::Constant { value: 0.0 }
            )
            .expect("read"),
            w
        );
        assert_eq!(
            f.unused(),
            vec![
                "bn1.num_batches_tracked".to_string(),
                "features.0.bias".to_string()
            ]
        );
    }

    #[test]
    fn errors_name_the_tensor() {
        let f = file_with(&[
            ("fc.weight", Dtype::F32, vec![2, 2], f32_bytes(&[1.0; 4])),
            ("fc.half", Dtype::F16, vec![2], vec![0; 4]),
        ]);
        let missing = f
            .tensor("fc.bias", &[2], Init::Constant { value: 0.0 })
            .expect_err("missing")
            .to_string();
        assert!(
            missing.contains("`fc.bias`") && missing.contains("`fc.weight`"),
            "{missing}"
        );
        let shape = f
            .tensor("fc.weight", &[2, 3], Init::Constant { value: 0.0 })
            .expect_err("shape")
            .to_string();
        assert!(
            shape.contains("`fc.weight`") && shape.contains("[2, 2]") && shape.contains("[2, 3]"),
            "{shape}"
        );
        let dtype = f
            .tensor("fc.half", &[2], Init::Constant { value: 0.0 })
            .expect_err("dtype")
            .to_string();
        assert!(
            dtype.contains("`fc.half`") && dtype.contains("F16"),
            "{dtype}"
        );
        let garbage =
            SafetensorsFile::from_bytes(Path::new("junk.bin"), b"not a safetensors file".to_vec());
        assert!(
            garbage
                .expect_err("garbage")
                .to_string()
                .contains("junk.bin")
        );
        let io = SafetensorsFile::open(Path::new("/nonexistent/w.safetensors")).expect_err("io");
        assert!(io.to_string().contains("/nonexistent/w.safetensors"));
    }

    #[test]
    fn random_weights_depend_on_seed_and_name_only() {
        let r = RandomWeights { seed: 7 };
        let a = r
            .tensor("features.0.weight", &[4, 3], Init::He { fan_in: 3 })
            .expect("a");
        assert_eq!(
            a,
            r.tensor("features.0.weight", &[4, 3], Init::He { fan_in: 3 })
                .expect("again")
        );
        assert_ne!(
            a,
            r.tensor("features.2.weight", &[4, 3], Init::He { fan_in: 3 })
                .expect("other name")
        );
        assert_ne!(
            a,
            RandomWeights { seed: 8 }
                .tensor("features.0.weight", &[4, 3], Init::He { fan_in: 3 })
                .expect("other seed")
        );
        let bound = (6.0f32 / 3.0).sqrt();
        assert!(a.iter().all(|x| x.abs() <= bound));
        assert_eq!(
            r.tensor("bn.running_var", &[3], Init::Constant { value: 1.0 })
                .expect("ones"),
            vec![1.0; 3]
        );
    }
}
