//! What the process-level tests of the examples share: finding an example's binary, and a
//! scratch folder per test.
//!
//! The binaries are the ones `cargo test` builds beside the test binaries
//! (`target/<profile>/examples/<name>`); with a `--test` filter cargo builds no examples, so
//! build them first: `cargo build --release --examples`.
#![allow(dead_code)] // each test file uses a part

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// `target/<profile>/examples/<name>`, found from this test binary in `target/<profile>/deps`.
pub(crate) fn example_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>");
    let bin = profile
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is missing: run `cargo test` without a --test filter, or `cargo build --examples` (same profile) first",
        bin.display()
    );
    bin
}

/// A fresh folder for one test's files, `taopipe-<name>-<pid>` under the temp dir.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("taopipe-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// Runs the example `name` with `args` and no stdin, and waits for it; backtraces off, so
/// stderr holds just the error.
pub(crate) fn run_example(name: &str, args: &[&str]) -> Output {
    Command::new(example_bin(name))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .env("RUST_LIB_BACKTRACE", "0")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running {name}: {e}"))
}

/// Bytes as text, for messages and searches.
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
