//! CNN kernels as moldable layers of taopipe-runtime, and the model zoo.
//!
//! This crate is still empty: its issue has not landed yet. See `../shared/DESIGN.md`.
