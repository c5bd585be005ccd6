//! The planners of the seed papers, one module each, named after the paper. Each holds the
//! whole planner: its model (predictor, DP, mapping strings) and what measures it on the
//! live runtime.
//!
//! - [`pipeit`]: Pipe-it's per-layer time predictor and design-space exploration, with the
//!   micro-benchmark calibration that fits it.
//! - [`armcoup`]: ARM-CO-UP's per-unit mapping strings and its switch mode.
//! - [`mosaic`]: MOSAIC's latency-optimal slicing (dynamic programming) and its profiler.
//! - [`codl`]: CoDL's per-layer split between two devices.

pub mod armcoup;
pub mod codl;
pub mod mosaic;
pub mod pipeit;
