//! Tune a pipeline for resnet50 live, then stream frames through it next to the layer-parallel
//! baseline: `cargo run --release --example resnet50 -- --tune alpha=10` (`--help` for all flags).

mod common;

fn main() -> anyhow::Result<()> {
    common::tune::main(Some("resnet50"))
}
