//! Tune a pipeline for an ONNX model live, then stream frames through it next to the
//! layer-parallel baseline, as the `vgg16` example does for a zoo net:
//! `cargo run --release --example onnx -- --onnx model.onnx --tune alpha=10 --input cat.jpg`
//! (`--help` for all flags; `taopipe_nets::onnx` lists the ops it runs).

mod common;

fn main() -> anyhow::Result<()> {
    common::tune::main(None)
}
