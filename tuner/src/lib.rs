//! Pipe-search (Alg. 2), its baselines and the planners of the related papers.
//!
//! This crate is still empty: its issue has not landed yet. See `../shared/DESIGN.md`.
