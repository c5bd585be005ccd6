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
//!
//! A file is memory-mapped, not read whole: its size, the header length it claims and
//! every tensor's byte range are checked against each other before a tensor is read, so
//! `/dev/zero`, an empty, truncated or foreign file, or a header claiming a huge tensor is
//! an error naming the file and what is wrong, never a huge allocation or a panic.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use safetensors::tensor::TensorInfo;
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
    /// Not a regular file (a directory, a device such as `/dev/zero`, a pipe): a weights
    /// file must have a size to check its header against.
    #[error("{path} is {kind}, not a regular weights file")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// The file's size, its header's length and its tensors' byte ranges do not fit
    /// together: an empty or truncated file, or a header claiming more than the file holds.
    #[error("{path} ({size} bytes): {problem}")]
    Layout {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
        /// What does not fit.
        problem: String,
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

/// The most bytes a safetensors header may have (the `safetensors` crate's own limit).
const MAX_HEADER: u64 = 100_000_000;

/// A safetensors file: mapped from disk ([`SafetensorsFile::open`]) or bytes in memory
/// ([`SafetensorsFile::from_bytes`]), its header checked against its size.
#[derive(Debug)]
pub struct SafetensorsFile {
    path: PathBuf,
    bytes: Bytes,
    /// Every tensor, with its byte range in `bytes` (checked to lie inside).
    tensors: BTreeMap<String, Entry>,
    names: Vec<String>,
    used: RefCell<BTreeSet<String>>,
}

/// Where a file's bytes are.
#[derive(Debug)]
enum Bytes {
    Owned(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Mapped(m) => m,
        }
    }
}

/// One tensor of the header.
#[derive(Debug)]
struct Entry {
    dtype: Dtype,
    shape: Vec<usize>,
    /// Its bytes in the whole file (header included).
    bytes: Range<usize>,
}

/// What a path is, when it is not a regular file.
fn file_kind(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_fifo() {
            return "a pipe";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

impl SafetensorsFile {
    /// Maps the file and checks its header against its size (see the module doc); reads
    /// no tensor yet.
    ///
    /// The mapping is read-only and lives as long as this value: the file must not be
    /// truncated or rewritten meanwhile (as for any memory-mapped safetensors loader).
    ///
    /// # Errors
    /// [`WeightError::Io`] if it cannot be opened or mapped; [`WeightError::NotAFile`] for a
    /// directory, device or pipe; [`WeightError::Layout`] for an empty or truncated file or
    /// a header claiming more than the file holds; [`WeightError::Format`] for a header
    /// that is not safetensors JSON.
    pub fn open(path: &Path) -> Result<SafetensorsFile, WeightError> {
        let io = |source| WeightError::Io {
            path: path.to_path_buf(),
            source,
        };
        let not_a_file = |meta: &std::fs::Metadata| WeightError::NotAFile {
            path: path.to_path_buf(),
            kind: file_kind(meta.file_type()),
        };
        // `stat` first: opening a pipe would block until a writer comes.
        let meta = std::fs::metadata(path).map_err(io)?;
        if !meta.is_file() {
            return Err(not_a_file(&meta));
        }
        let file = File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(not_a_file(&meta));
        }
        let size = meta.len();
        if size < 8 {
            // Nothing to map (an empty mapping is refused by some systems).
            return SafetensorsFile::parse(path, Bytes::Owned(Vec::new()), size);
        }
        // SAFETY: `Mmap::map` is unsafe because the mapped file could change under us: if
        // another process truncated it, reading the lost pages would fault; if it rewrote
        // it, the bytes would change after they were checked. The mapping is read-only and
        // private to this value, nothing in taopipe writes weight files, and `open`'s
        // contract (above) asks the caller not to change the file while the value lives,
        // the same contract as every loader that maps safetensors files (the format is
        // designed to be mapped). Every read goes through `as_slice`, a slice of exactly
        // the mapped length, and every tensor range is checked to lie inside it in `parse`.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        SafetensorsFile::parse(path, Bytes::Mapped(map), size)
    }

    /// Parses bytes already in memory; `path` names them in errors.
    ///
    /// # Errors
    /// As [`SafetensorsFile::open`], less the file's own errors.
    pub fn from_bytes(path: &Path, bytes: Vec<u8>) -> Result<SafetensorsFile, WeightError> {
        let size = bytes.len() as u64;
        SafetensorsFile::parse(path, Bytes::Owned(bytes), size)
    }

    /// Checks `bytes` (of a file of `size` bytes) in order: the size holds the header
    /// length, the length fits in the size, the header is safetensors JSON, and every
    /// tensor's range lies in the data and holds exactly its shape's bytes; then the
    /// format's other rules (ranges contiguous, covering the data).
    fn parse(path: &Path, bytes: Bytes, size: u64) -> Result<SafetensorsFile, WeightError> {
        let layout = |problem: String| WeightError::Layout {
            path: path.to_path_buf(),
            size,
            problem,
        };
        let format = |message: String| WeightError::Format {
            path: path.to_path_buf(),
            message,
        };
        if size < 8 {
            return Err(layout(if size == 0 {
                "the file is empty; a safetensors file starts with an 8-byte header length"
                    .to_string()
            } else {
                "too short for the 8-byte header length a safetensors file starts with".to_string()
            }));
        }
        let all = bytes.as_slice();
        if all.len() as u64 != size {
            return Err(layout(format!(
                "the file changed size to {} bytes while it was opened",
                all.len()
            )));
        }
        let mut len = [0u8; 8];
        len.copy_from_slice(&all[..8]);
        let header_len = u64::from_le_bytes(len);
        if header_len > size - 8 {
            return Err(layout(format!(
                "the header claims {header_len} bytes but only {} follow its 8-byte length \
                 (a truncated file, or not a safetensors file)",
                size - 8
            )));
        }
        if header_len > MAX_HEADER {
            return Err(layout(format!(
                "the header claims {header_len} bytes, more than the {MAX_HEADER} safetensors allows"
            )));
        }
        // Both below `size`, which is `all.len()`: they fit in usize.
        let data_start = 8 + header_len as usize;
        let data_len = all.len() - data_start;
        let header: BTreeMap<String, serde_json::Value> =
            serde_json::from_slice(&all[8..data_start]).map_err(|e| {
                format(format!(
                    "its {header_len}-byte header is not a JSON object of tensors: {e}"
                ))
            })?;
        let mut tensors = BTreeMap::new();
        for (name, value) in header {
            if name == "__metadata__" {
                continue;
            }
            let info: TensorInfo = serde_json::from_value(value)
                .map_err(|e| format(format!("tensor `{name}`: {e}")))?;
            let (start, end) = info.data_offsets;
            if start > end || end > data_len {
                return Err(layout(format!(
                    "tensor `{name}` claims bytes {start}..{end} of the data, which holds \
                     {data_len} bytes (a truncated file, or a wrong header)"
                )));
            }
            let bits = info
                .shape
                .iter()
                .try_fold(info.dtype.bitsize(), |bits, &d| bits.checked_mul(d));
            if bits.is_none_or(|b| b % 8 != 0 || b / 8 != end - start) {
                return Err(layout(format!(
                    "tensor `{name}`: {:?} of shape {:?} does not fill its {} bytes {start}..{end}",
                    info.dtype,
                    info.shape,
                    end - start
                )));
            }
            let entry = Entry {
                dtype: info.dtype,
                shape: info.shape,
                bytes: data_start + start..data_start + end,
            };
            tensors.insert(name, entry);
        }
        SafeTensors::deserialize(all).map_err(|e| format(e.to_string()))?;
        let names = tensors.keys().cloned().collect();
        Ok(SafetensorsFile {
            path: path.to_path_buf(),
            bytes,
            tensors,
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
        let entry = self.tensors.get(name).ok_or_else(|| WeightError::Missing {
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
        if entry.dtype != Dtype::F32 {
            return Err(WeightError::Dtype {
                name: name.to_string(),
                found: format!("{:?}", entry.dtype),
            });
        }
        if entry.shape != shape {
            return Err(WeightError::Shape {
                name: name.to_string(),
                expected: shape.to_vec(),
                found: entry.shape.clone(),
            });
        }
        self.used.borrow_mut().insert(name.to_string());
        // Inside the bytes: checked by `parse`.
        Ok(self.bytes.as_slice()[entry.bytes.clone()]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::bits;
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
        if !cfg!(miri) {
            // Miri isolates the file system (see `open_maps_a_file_and_reads_its_tensors`).
            let io =
                SafetensorsFile::open(Path::new("/nonexistent/w.safetensors")).expect_err("io");
            assert!(io.to_string().contains("/nonexistent/w.safetensors"));
        }
    }

    /// A file in the temporary folder, removed when dropped.
    struct TempFile(PathBuf);

    impl TempFile {
        fn new(name: &str, bytes: &[u8]) -> TempFile {
            let path = std::env::temp_dir().join(format!(
                "taopipe-weights-{}-{name}.safetensors",
                std::process::id()
            ));
            std::fs::write(&path, bytes).expect("write temp file");
            TempFile(path)
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn serialized(tensors: &[(&str, Vec<usize>, Vec<f32>)]) -> Vec<u8> {
        let raw: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
            .iter()
            .map(|(n, s, v)| (n.to_string(), s.clone(), f32_bytes(v)))
            .collect();
        let views: Vec<(String, TensorView<'_>)> = raw
            .iter()
            .map(|(n, s, b)| {
                let view = TensorView::new(Dtype::F32, s.clone(), b).expect("view");
                (n.clone(), view)
            })
            .collect();
        safetensors::serialize(views, None).expect("serialize")
    }

    /// A header of `json` (padded to 8 bytes, as writers do) followed by `data` bytes.
    fn raw_file(json: &str, data: usize) -> Vec<u8> {
        let mut header = json.as_bytes().to_vec();
        header.resize(header.len().next_multiple_of(8), b' ');
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(&header);
        bytes.resize(bytes.len() + data, 0);
        bytes
    }

    /// The mapped path (`open`, the `unsafe` map): tensors read back exactly.
    ///
    /// Not under Miri, which maps no files (only anonymous memory) and isolates the file
    /// system. The map's soundness rests on the file not changing under it, which no
    /// interpreter can check; what is read from the map is then parsed and checked by the
    /// same code as `from_bytes`, which the other tests here run under Miri.
    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot map a file")]
    fn open_maps_a_file_and_reads_its_tensors() {
        let w: Vec<f32> = (0..24).map(|i| i as f32 * 0.5 - 3.0).collect();
        let bytes = serialized(&[
            ("layer1.0.conv1.weight", vec![2, 3, 2, 2], w.clone()),
            ("layer1.0.conv1.bias", vec![2], vec![0.25, -1.0]),
            ("fc.bias", vec![3], vec![f32::NAN, f32::INFINITY, -0.0]),
        ]);
        let file = TempFile::new("good", &bytes);
        let f = SafetensorsFile::open(&file.0).expect("open");
        assert!(matches!(f.bytes, Bytes::Mapped(_)));
        assert_eq!(f.names().len(), 3);
        let got = f
            .tensor(
                "layer1.0.conv1.weight",
                &[2, 3, 2, 2],
                Init::Constant { value: 0.0 },
            )
            .expect("weight");
        assert_eq!(got, w);
        let bias = f
            .tensor("fc.bias", &[3], Init::Constant { value: 0.0 })
            .expect("bias");
        assert_eq!(bits(&bias), bits(&[f32::NAN, f32::INFINITY, -0.0]));
        assert_eq!(f.unused(), vec!["layer1.0.conv1.bias".to_string()]);
        // The same bytes in memory parse the same.
        let g = SafetensorsFile::from_bytes(&file.0, bytes).expect("from bytes");
        assert_eq!(g.names(), f.names());
    }

    /// Bad files' bytes, each with what its error must say.
    fn bad_cases() -> Vec<(&'static str, Vec<u8>, Vec<&'static str>)> {
        let good = serialized(&[
            ("a", vec![4], vec![1.0; 4]),
            ("b", vec![2, 2], vec![2.0; 4]),
        ]);
        let huge = raw_file(
            r#"{"w":{"dtype":"F32","shape":[1000000000000],"data_offsets":[0,4000000000000]}}"#,
            16,
        );
        let overflow = raw_file(
            r#"{"w":{"dtype":"F32","shape":[4611686018427387904,8],"data_offsets":[0,16]}}"#,
            16,
        );
        let mut claims_past_end = 1u64.wrapping_shl(40).to_le_bytes().to_vec();
        claims_past_end.extend_from_slice(b"{}      ");
        vec![
            ("empty", Vec::new(), vec!["empty", "0 bytes"]),
            ("short", vec![1, 2, 3], vec!["too short", "3 bytes"]),
            (
                "truncated",
                good[..good.len() - 3].to_vec(),
                vec!["tensor `b`", "truncated"],
            ),
            (
                "huge-tensor",
                huge,
                vec!["tensor `w`", "0..4000000000000", "holds 16 bytes"],
            ),
            (
                "overflowing-shape",
                overflow,
                vec!["tensor `w`", "does not fill"],
            ),
            (
                "header-past-end",
                claims_past_end,
                vec!["claims 1099511627776 bytes", "only 8 follow"],
            ),
            (
                "not-json",
                raw_file("garbage!", 0),
                vec!["not a JSON object"],
            ),
            (
                "wrong-range",
                raw_file(
                    r#"{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
                    8,
                ),
                vec!["tensor `w`", "[3]", "does not fill its 8 bytes"],
            ),
            (
                "not-a-tensor",
                raw_file(r#"{"w":{"dtype":"F32"}}"#, 0),
                vec!["tensor `w`"],
            ),
        ]
    }

    /// The bad files' bytes from memory (`from_bytes`): the checks a mapped file goes
    /// through, here also under Miri.
    #[test]
    fn bad_bytes_are_clear_errors() {
        for (name, bytes, wants) in bad_cases() {
            let path = Path::new(name);
            let text = SafetensorsFile::from_bytes(path, bytes)
                .expect_err(name)
                .to_string();
            assert!(text.contains(name), "{name}: {text}");
            for want in &wants {
                assert!(text.contains(want), "{name}: `{want}` not in: {text}");
            }
        }
    }

    /// Every kind of bad file is an error naming the file and what is wrong, from `open`
    /// (mapped) and from `from_bytes`; none allocates what the header claims.
    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot map a file")]
    fn bad_files_are_clear_errors() {
        for (name, bytes, wants) in bad_cases() {
            let file = TempFile::new(name, &bytes);
            for err in [
                SafetensorsFile::open(&file.0).expect_err(name),
                SafetensorsFile::from_bytes(&file.0, bytes.clone()).expect_err(name),
            ] {
                let text = err.to_string();
                assert!(text.contains(&*file.0.to_string_lossy()), "{name}: {text}");
                for want in &wants {
                    assert!(text.contains(want), "{name}: `{want}` not in: {text}");
                }
            }
        }
        // A header longer than safetensors allows, in a file (sparse) that holds it: only
        // its 8 bytes of length are read.
        let file = TempFile::new("huge-header", &(MAX_HEADER + 8).to_le_bytes());
        File::options()
            .write(true)
            .open(&file.0)
            .and_then(|f| f.set_len(MAX_HEADER + 16))
            .expect("grow sparse file");
        let text = SafetensorsFile::open(&file.0)
            .expect_err("huge header")
            .to_string();
        assert!(text.contains("more than the 100000000"), "{text}");
        // A binary that is not a safetensors file: this test's own executable.
        let exe = std::env::current_exe().expect("test executable");
        let text = SafetensorsFile::open(&exe).expect_err("binary").to_string();
        assert!(
            text.contains(&*exe.to_string_lossy()) && text.contains("header claims"),
            "{text}"
        );
        // A directory, and a device that never ends.
        let dir = std::env::temp_dir();
        let text = SafetensorsFile::open(&dir).expect_err("dir").to_string();
        assert!(text.contains("a directory"), "{text}");
        let zero = Path::new("/dev/zero");
        if zero.exists() {
            let err = SafetensorsFile::open(zero).expect_err("/dev/zero");
            assert!(matches!(err, WeightError::NotAFile { .. }), "{err}");
            let text = err.to_string();
            assert!(
                text.contains("/dev/zero") && text.contains("character device"),
                "{text}"
            );
        }
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
