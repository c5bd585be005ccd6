//! Tune a pipeline for synthetic live, then stream frames through it next to the layer-parallel
//! baseline: `cargo run --release --example synthetic -- --tune alpha=10` (`--help` for all flags).
//! `--net synth1|synth2|synth3|random` picks the net (Table 7 of the paper, or a seeded random one).

mod common;

fn main() -> anyhow::Result<()> {
    common::tune::main(Some("synth2"))
}
