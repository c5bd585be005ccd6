//! Regenerates `nets/src/onnx/proto.rs`, the prost types of ONNX's `onnx.proto`, which the
//! importer reads models with. Run it when `onnx.proto` changes (it is onnx 1.23.2's):
//!
//! ```text
//! cargo run --release --manifest-path tools/onnx-gen/Cargo.toml
//! ```
//!
//! The output is deterministic: a re-run on the same `onnx.proto` gives the same file. It is
//! committed, so building taopipe needs neither this crate nor `protoc`.

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../nets/src/onnx");
    let descriptors = protox::compile(["onnx.proto"], [&root])?;
    let out = tempdir()?;
    prost_build::Config::new()
        // Every `bytes` field (tensors' raw_data) as `bytes::Bytes`: a slice of the buffer
        // the model was decoded from, not a copy.
        .bytes(["."])
        .out_dir(&out)
        .compile_fds(descriptors)?;
    let generated = std::fs::read_to_string(out.join("onnx.rs"))?;
    std::fs::write(root.join("proto.rs"), generated)?;
    std::fs::remove_dir_all(&out)?;
    println!("wrote {}", root.join("proto.rs").display());
    Ok(())
}

/// A fresh folder for prost-build's output.
fn tempdir() -> std::io::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("onnx-gen-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
