//! ARM-CO-UP (Aghapour et al., TODAES 2024): per-unit mapping strings over devices
//! ([`Mapping`], the paper's `BBBLLL…`) and switch mode ([`Switch`]: one frame at a time,
//! run after run), with the per-run speed settings that stand in for its DVFS.

mod mapping;
mod switch;

pub use mapping::{Alphabet, MAX_DEVICES, Mapping, MappingError};
pub use switch::{RunStats, ScaledSpeeds, Switch, SwitchError, SwitchRun, SwitchStats};
