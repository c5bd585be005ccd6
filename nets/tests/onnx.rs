//! ONNX import of the fixture models in `tests/fixtures/onnx/` (written, with ONNX
//! Runtime's outputs on them, by `make_fixtures.py` there): the imported net computes what
//! ONNX Runtime computed, at every width, and what cannot run is an error naming the node.

use std::path::{Path, PathBuf};

use taopipe_nets::onnx::{OnnxError, OnnxNet};
use taopipe_nets::{Model, ModelError};
use taopipe_runtime::{Place, Runtime};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/onnx")
        .join(name)
}

fn read_f32(path: &Path) -> Vec<f32> {
    std::fs::read(path)
        .expect("fixture")
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Imports `name`.onnx, runs its input at widths 1 and 2, and compares with ONNX
/// Runtime's output: within 1e-4 of the largest magnitude, and the same bits at both widths.
fn matches_onnx_runtime(name: &str) -> Result<OnnxNet, Box<dyn std::error::Error>> {
    let onnx = OnnxNet::open(&fixture(&format!("{name}.onnx")))?;
    let model = Model::build(onnx.spec().clone(), onnx.weights())?;
    let x = read_f32(&fixture(&format!("{name}.in.f32")));
    let want = read_f32(&fixture(&format!("{name}.out.f32")));
    let rt = Runtime::builder().workers(2).build()?;
    let one = model.forward(&rt, x.clone(), Place::new(0, 1))?;
    let two = model.forward(&rt, x, Place::new(0, 2))?;
    assert_eq!(one.len(), want.len(), "{name}: output length");
    let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    for (i, (g, w)) in one.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-4 * scale,
            "{name}: output {i}: taopipe {g}, ONNX Runtime {w}"
        );
    }
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&one), bits(&two), "{name}: width 2 differs");
    Ok(onnx)
}

#[test]
fn a_small_cnn_of_most_ops_matches_onnx_runtime() -> Result<(), Box<dyn std::error::Error>> {
    let onnx = matches_onnx_runtime("tiny_cnn")?;
    let kinds: Vec<&str> = onnx
        .spec()
        .layers()
        .iter()
        .map(|l| l.kind().short_name())
        .collect();
    assert_eq!(
        kinds,
        [
            "conv",
            "batchnorm",
            "relu",
            "maxpool",
            "conv",
            "clip",
            "conv",
            "batchnorm",
            "leakyrelu",
            "conv",
            "relu",
            "concat",
            "conv",
            "add",
            "gap",
            "flatten",
            "fc",
            "softmax"
        ]
    );
    // The branch's 1×1 conv reads the clip, not the leaky ReLU before it.
    assert!(onnx.spec().layers()[9].input_from().is_some());
    Ok(())
}

#[test]
fn a_matmul_head_with_a_named_batch_matches_onnx_runtime() -> Result<(), Box<dyn std::error::Error>>
{
    let onnx = matches_onnx_runtime("matmul_head")?;
    // MaxPool SAME_UPPER (pads after only), AveragePool, Reshape, MatMul + Add; Dropout and
    // Identity run nothing.
    assert_eq!(onnx.spec().len(), 4);
    assert_eq!((onnx.input_name(), onnx.spec().input().c), ("x", 4));
    Ok(())
}

#[test]
fn models_taopipe_cannot_run_are_errors_naming_the_node() {
    let err = |name: &str| {
        OnnxNet::open(&fixture(name))
            .map(|_| ())
            .expect_err(name)
            .to_string()
    };
    let text = err("unsupported_op.onnx");
    assert!(
        text.contains("/head/Sigmoid")
            && text.contains("(Sigmoid)")
            && text.contains("does not run the op"),
        "{text}"
    );
    let text = err("dilated_conv.onnx");
    assert!(
        text.contains("/head/Conv") && text.contains("dilations [2, 2]"),
        "{text}"
    );
    let text = err("dynamic_shape.onnx");
    assert!(
        text.contains("input `x`") && text.contains("1x3xheightx8"),
        "{text}"
    );
    // Not ONNX at all, and not a file.
    let text = err("make_fixtures.py");
    assert!(
        text.contains("make_fixtures.py is not an ONNX model"),
        "{text}"
    );
    let dir = OnnxNet::open(&fixture("")).expect_err("a folder");
    assert!(matches!(dir, OnnxError::Io { .. }), "{dir}");
}

/// A fixture's weights asked for under a name it lacks: the error names the file.
#[test]
fn a_missing_weight_names_the_file() {
    let onnx = OnnxNet::open(&fixture("matmul_head.onnx")).expect("imports");
    let other = taopipe_dsl::net! { other [4, 7, 7] => c: conv(2, 1x1) }.expect("net");
    let err = Model::build(other, onnx.weights()).expect_err("no such weight");
    assert!(matches!(err, ModelError::Weight { .. }), "{err}");
    assert!(err.to_string().contains("matmul_head.onnx"), "{err}");
}
