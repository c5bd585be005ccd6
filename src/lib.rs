//! taopipe: CNN inference as a pipeline of stages on multicore CPUs whose cores are not
//! equal, tuned online by measuring (Pipe-search).
//!
//! This facade re-exports the workspace crates under one name: [`runtime`] (moldable tasks,
//! work stealing, pipelines), [`dsl`] (the `net!` macro, hints, seeds), [`nets`] (kernels
//! and the model zoo), [`tuner`] (Pipe-search and its baselines) and [`live`] (the live
//! measurement, the engine and the seed papers' planners).
#![deny(missing_docs)]

pub use taopipe_dsl as dsl;
pub use taopipe_live as live;
pub use taopipe_nets as nets;
pub use taopipe_runtime as runtime;
pub use taopipe_tuner as tuner;

/// The README's Rust examples, compiled and run as doctests so the README stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
