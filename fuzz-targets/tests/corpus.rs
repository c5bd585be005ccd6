//! Replays the checked-in fuzz inputs through the targets, on stable: every file of
//! `fuzz/seeds/TARGET/` (hand-made by `fuzz/seeds.py`), `fuzz/corpus/TARGET/` (what the
//! fuzzer kept, minimised) and `fuzz/regressions/TARGET/` (inputs that once crashed a
//! target, kept whole). A target that panics on one fails the test with the file's name;
//! a target with no input at all fails too, so a renamed target cannot replay nothing.

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use taopipe_fuzz_targets::{TARGETS, Target};

/// `fuzz/` at the root of the repository.
fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// The files of `dir`, sorted; none when it does not exist.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a readable entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs every file of `root/TARGET/` through its target; returns the failures as
/// `path: panic message`, and how many files ran.
fn replay(root: &Path, targets: &[Target]) -> (Vec<String>, usize) {
    let mut failures = Vec::new();
    let mut ran = 0;
    for &(name, target) in targets {
        for path in files(&root.join(name)) {
            let data = fs::read(&path).expect("a readable corpus file");
            ran += 1;
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| target(&data))) {
                let why = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("a panic without a message");
                failures.push(format!("{}: {why:.500}", path.display()));
            }
        }
    }
    (failures, ran)
}

#[test]
fn every_target_has_inputs_and_a_fuzz_binary() {
    for &(name, _) in TARGETS {
        let inputs = ["seeds", "corpus"].map(|kind| files(&fuzz_dir().join(kind).join(name)));
        assert!(
            inputs.iter().any(|f| !f.is_empty()),
            "no seeds or corpus for {name}"
        );
        let binary = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        assert!(binary.is_file(), "no fuzz target {}", binary.display());
    }
}

#[test]
fn seed_inputs_pass() {
    let (failures, ran) = replay(&fuzz_dir().join("seeds"), TARGETS);
    assert!(ran > 0, "no seeds");
    assert!(
        failures.is_empty(),
        "{} of {ran} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn corpus_inputs_pass() {
    let (failures, ran) = replay(&fuzz_dir().join("corpus"), TARGETS);
    assert!(ran >= TARGETS.len(), "{ran} inputs");
    assert!(
        failures.is_empty(),
        "{} of {ran} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn regression_inputs_pass() {
    let (failures, ran) = replay(&fuzz_dir().join("regressions"), TARGETS);
    assert!(
        failures.is_empty(),
        "{} of {ran} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn an_input_that_panics_fails_the_replay() {
    let root = tempfile::tempdir().expect("a temporary folder");
    fs::create_dir(root.path().join("picky")).expect("a target folder");
    fs::write(root.path().join("picky/fine"), b"ok").expect("write");
    fs::write(root.path().join("picky/crash"), b"boom").expect("write");
    let picky: Target = ("picky", |data| assert_ne!(data, b"boom", "the crash input"));
    let (failures, ran) = replay(root.path(), &[picky]);
    assert_eq!(ran, 2);
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("crash") && failures[0].contains("the crash input"));
}

#[test]
fn the_valid_safetensors_seed_builds_the_tiny_net() {
    // `fuzz/seeds.py` writes it; it keeps the fuzzer starting from a file that loads.
    let path = fuzz_dir().join("seeds/safetensors/seed-tiny-valid.safetensors");
    let file = taopipe_nets::SafetensorsFile::open(&path).expect("the seed parses");
    taopipe_nets::Model::build(taopipe_fuzz_targets::tiny_net(), &file).expect("the seed builds");
    assert!(file.unused().is_empty(), "unused: {:?}", file.unused());
}
