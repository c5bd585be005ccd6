//! ONNX import: a model file becomes a [`NetSpec`] and its weights, so a user who has a
//! CNN as an `.onnx` file (a torchvision export, say) runs and tunes it like a zoo net.
//!
//! ```no_run
//! use taopipe_nets::{Model, onnx::OnnxNet};
//! let onnx = OnnxNet::open("mobilenet_v2.onnx".as_ref())?;
//! println!("{}", onnx.spec());
//! let model = Model::build(onnx.spec().clone(), onnx.weights())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What it reads
//! One input `[1, C, H, W]` (the batch dimension may be named, such as `batch_size`: taopipe
//! runs batch 1; every other dimension must be fixed) and one output, and these ops, each a
//! layer of the net, in the file's order:
//!
//! | ONNX | layer |
//! |---|---|
//! | `Conv` (any `group`, 2-D, undilated, the same padding on both sides) | `conv` |
//! | `Gemm` (`alpha = beta = 1`, `transA = 0`), `MatMul` with a constant matrix, followed or not by the `Add` of a constant bias | `fc` |
//! | `Relu`, `Clip` (bounds as attributes or constant inputs), `LeakyRelu` | `relu`, `clip`, `leakyrelu` |
//! | `MaxPool`, `AveragePool` (2-D, undilated; `ceil_mode`, `auto_pad`, pads that differ before and after; an average excluding the padding) | `maxpool`, `avgpool` |
//! | `GlobalAveragePool` | `gap` |
//! | `Add` of two computed tensors of one shape | `add` |
//! | `Concat` along the channels | `concat` |
//! | `BatchNormalization` (inference) | `batchnorm` |
//! | `Flatten` (axis 1), `Reshape` to `[1, N]` | `flatten` |
//! | `Softmax` over a flat tensor | `softmax` |
//! | `Dropout`, `Identity` | none: its output is its input |
//! | `Constant` | none: a value other nodes read |
//!
//! Anything else — another op, a dynamic dimension, an attribute these kernels do not
//! implement — is an [`OnnxError`] naming the node and its op.
//!
//! # How a node becomes a layer
//! A layer is named after its node (letters and digits kept, the rest `_`), and reads the
//! previous layer, or, with a `from`, the layer that computed its input: a net's branches
//! come out as [`net!`](taopipe_dsl::net)'s `from` layers. Its parameters are the node's
//! constant inputs, under the names the model builder asks for, so [`Model`] folds a
//! batchnorm into the convolution before it, fuses activations and residual adds into its
//! store, as for a zoo net. Units follow the unit rule of [`taopipe_dsl::Unit`]: every
//! convolution, pool or FC reading the layer before it opens one.
//!
//! [`Model`]: crate::Model

use std::io::Read;
use std::path::{Path, PathBuf};

use taopipe_dsl::{DslError, NetSpec};

use crate::weights::{Init, WeightError, Weights};

mod graph;
mod import;
mod parse;

/// Why an ONNX file could not become a net. Every variant names the file's part at fault.
#[derive(Debug, thiserror::Error)]
pub enum OnnxError {
    /// The file could not be read.
    #[error("cannot read ONNX file {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not an ONNX model.
    #[error("{path} is not an ONNX model: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// A node taopipe cannot run.
    #[error("node `{node}` ({op}): {reason}")]
    Unsupported {
        /// The node's name.
        node: String,
        /// Its op.
        op: String,
        /// What is not supported.
        reason: String,
    },
    /// The input has a dimension only known when the model runs.
    #[error(
        "input `{input}` has the shape {dims}: taopipe needs a fixed [1, C, H, W] (a named batch dimension is fine)"
    )]
    DynamicShape {
        /// The input.
        input: String,
        /// Its dimensions as the file gives them.
        dims: String,
    },
    /// The graph as a whole does not fit (several inputs or outputs, an output computed
    /// before the end).
    #[error("{reason}")]
    Graph {
        /// What does not fit.
        reason: String,
    },
    /// The layers do not make a net (a shape that does not fit).
    #[error("the imported net does not check: {0}")]
    Net(DslError),
}

/// An imported ONNX model: its net and its weights.
#[derive(Debug)]
pub struct OnnxNet {
    spec: NetSpec,
    weights: OnnxWeights,
    input: String,
    output: String,
}

/// The weights of an [`OnnxNet`], by the names its layers ask for.
#[derive(Debug)]
pub struct OnnxWeights {
    path: PathBuf,
    params: import::Params,
}

impl OnnxNet {
    /// Reads and imports the ONNX model at `path`; the net is named after the file.
    ///
    /// # Errors
    /// See [`OnnxError`]: a path that is not a regular file (a directory, `/dev/zero`) is
    /// [`OnnxError::Io`] without being read.
    pub fn open(path: &Path) -> Result<OnnxNet, OnnxError> {
        let io = |source| OnnxError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file",
            )));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(meta.len()).read_to_end(&mut bytes).map_err(io)?;
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("onnx")
            .to_string();
        OnnxNet::from_bytes(path, &name, bytes)
    }

    /// Imports a model from its bytes (`path` only names it in errors), as a net called
    /// `name`. The tensors are decoded from `bytes` in place, each copied once into the
    /// weights.
    ///
    /// # Errors
    /// See [`OnnxError`].
    pub fn from_bytes(path: &Path, name: &str, bytes: Vec<u8>) -> Result<OnnxNet, OnnxError> {
        let graph = parse::graph(bytes.into()).map_err(|message| OnnxError::Format {
            path: path.to_path_buf(),
            message,
        })?;
        let imported = import::import(graph, name)?;
        Ok(OnnxNet {
            spec: imported.spec,
            weights: OnnxWeights {
                path: path.to_path_buf(),
                params: imported.params,
            },
            input: imported.input,
            output: imported.output,
        })
    }

    /// The net.
    pub fn spec(&self) -> &NetSpec {
        &self.spec
    }

    /// Its weights, for [`Model::build`](crate::Model::build).
    pub fn weights(&self) -> &OnnxWeights {
        &self.weights
    }

    /// Its weights, the net dropped (a model built from them needs them no longer).
    pub fn into_weights(self) -> OnnxWeights {
        self.weights
    }

    /// The name of the graph's input.
    pub fn input_name(&self) -> &str {
        &self.input
    }

    /// The name of the graph's output.
    pub fn output_name(&self) -> &str {
        &self.output
    }
}

impl OnnxWeights {
    /// Parameters held.
    pub fn len(&self) -> usize {
        self.params.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }
}

impl Weights for OnnxWeights {
    fn tensor(&self, name: &str, shape: &[usize], _init: Init) -> Result<Vec<f32>, WeightError> {
        let Some((dims, values)) = self.params.get(name) else {
            return Err(WeightError::Missing {
                path: self.path.clone(),
                name: name.to_string(),
                count: self.params.len(),
                examples: self
                    .params
                    .keys()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        if dims != shape {
            return Err(WeightError::Shape {
                name: name.to_string(),
                expected: shape.to_vec(),
                found: dims.clone(),
            });
        }
        Ok(values.clone())
    }
}

#[cfg(test)]
mod test;
