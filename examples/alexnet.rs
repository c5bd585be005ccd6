//! Tune a pipeline for alexnet live, then stream frames through it next to the layer-parallel
//! baseline: `cargo run --release --example alexnet -- --tune alpha=10` (`--help` for all flags).

mod common;

fn main() -> anyhow::Result<()> {
    common::tune::main(Some("alexnet"))
}
