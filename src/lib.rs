//! taopipe: CNN inference as a pipeline of stages on multicore CPUs whose cores are not
//! equal, tuned online by measuring (Pipe-search).
//!
//! This facade re-exports the workspace crates under one name.
#![deny(missing_docs)]

pub mod calibrate;
pub mod codl;
pub mod devices;
pub mod live;
pub mod profile;
pub mod switch;

pub use taopipe_dsl as dsl;
pub use taopipe_nets as nets;
pub use taopipe_runtime as runtime;
pub use taopipe_tuner as tuner;

/// The README's Rust examples, compiled and run as doctests so the README stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
