//! The net! tensor DSL: layer descriptors, compile-time weights (paper Eq. 1-2) and CV-sorted pipeline seeds (Alg. 1).
//!
//! This crate is still empty: its issue has not landed yet. See `../shared/DESIGN.md`.
