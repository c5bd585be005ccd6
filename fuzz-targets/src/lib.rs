//! The bodies of taopipe's fuzz targets, one `pub fn TARGET(data: &[u8])` each, on stable.
//!
//! Each body feeds its bytes to one entry point that reads input a user (or a file) hands
//! us — a CPU list, a XiTAO layout, an `--emulate` spec or schedule, an ARM-CO-UP mapping,
//! a safetensors file, a net declared through the builder — and panics only when that entry
//! point breaks a promise: a panic of its own, an error message that is empty or echoes a
//! huge input whole, or an accepted value that does not hold together (a CPU list that does
//! not re-parse from its canonical form, a spec whose text does not parse back to it, a net
//! whose shapes do not follow from its layers).
//!
//! Two drivers call these functions, so the targets have one body each:
//! - `fuzz/` (nightly, libFuzzer, `scripts/fuzz.sh`): one line per target;
//! - `tests/corpus.rs` (stable, CI): replays every checked-in input of `fuzz/corpus/TARGET/`
//!   and `fuzz/regressions/TARGET/` through [`TARGETS`], so a fixed crash stays fixed
//!   without a fuzzer.
//!
//! ```
//! // Any bytes at all: a body returns, or panics on a bug.
//! taopipe_fuzz_targets::cpu_list(b"0-3,5\n");
//! taopipe_fuzz_targets::cpu_list(b"\xff0-x,,");
//! ```
#![deny(missing_docs)]

mod check;
mod emulation;
mod layout;
mod mapping;
mod netspec;
mod safetensors;

pub use crate::emulation::{emulation_schedule, emulation_spec};
pub use crate::layout::{cpu_list, layout};
pub use crate::mapping::armcoup_mapping;
pub use crate::netspec::{NetCase, netspec};
pub use crate::safetensors::{safetensors, tiny_net};

/// A target: its name (its folder under `fuzz/seeds/`, `fuzz/corpus/` and
/// `fuzz/regressions/`, and its binary in `fuzz/fuzz_targets/`) and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target.
pub const TARGETS: &[Target] = &[
    ("cpu_list", cpu_list),
    ("layout", layout),
    ("emulation_spec", emulation_spec),
    ("emulation_schedule", emulation_schedule),
    ("safetensors", safetensors),
    ("netspec", netspec),
    ("armcoup_mapping", armcoup_mapping),
];
