use std::io::Read;

use super::*;

/// A fresh folder, removed on drop.
fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// The folder's entries, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn check_file_accepts_a_new_or_existing_file_and_leaves_nothing() {
    let tmp = tempdir();
    check_file(&tmp.path().join("new.json")).expect("a new file in an existing folder");
    std::fs::write(tmp.path().join("old.json"), "old").expect("old file");
    check_file(&tmp.path().join("old.json")).expect("an existing file is replaced later");
    assert_eq!(
        names(tmp.path()),
        ["old.json"],
        "the probe files are removed"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("old.json"))
            .ok()
            .as_deref(),
        Some("old")
    );
}

#[test]
fn check_file_names_the_path_and_what_is_wrong() {
    let tmp = tempdir();
    std::fs::write(tmp.path().join("plain"), "").expect("a file");
    let missing = tmp.path().join("no-such-folder").join("out.json");
    let err = check_file(&missing).expect_err("missing folder");
    assert!(matches!(err, OutputError::NoFolder { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains(&*missing.to_string_lossy()) && text.contains("does not exist"),
        "{text}"
    );

    let under_file = tmp.path().join("plain").join("out.json");
    let err = check_file(&under_file).expect_err("a file as the folder");
    assert!(matches!(err, OutputError::NotAFolder { .. }), "{err:?}");
    assert!(err.to_string().contains("plain is not a folder"), "{err}");

    let err = check_file(tmp.path()).expect_err("a folder as the file");
    assert!(matches!(err, OutputError::IsAFolder { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&*tmp.path().to_string_lossy()),
        "{err}"
    );
}

#[test]
fn check_folder_accepts_an_existing_or_creatable_folder_only() {
    let tmp = tempdir();
    check_folder(tmp.path()).expect("an existing folder");
    check_folder(&tmp.path().join("a").join("b")).expect("creatable: its ancestor exists");
    assert!(!tmp.path().join("a").exists(), "a check creates nothing");
    std::fs::write(tmp.path().join("plain"), "").expect("a file");
    for bad in [
        tmp.path().join("plain"),
        tmp.path().join("plain").join("pictures"),
    ] {
        let err = check_folder(&bad).expect_err("a file in the way");
        assert!(matches!(err, OutputError::NotAFolder { .. }), "{err:?}");
        assert!(err.to_string().contains(&*bad.to_string_lossy()), "{err}");
    }
    assert_eq!(names(tmp.path()), ["plain"]);
}

#[test]
fn write_atomic_replaces_the_file_by_rename_not_in_place() {
    let tmp = tempdir();
    let path = tmp.path().join("report.json");
    std::fs::write(&path, "old report").expect("old file");
    // A reader that opened the old report keeps reading the old report whole: the new one
    // is a new file renamed over it (an in-place write would truncate what it reads).
    let mut reader = File::open(&path).expect("open old");
    write_atomic(&path, "new").expect("write");
    let mut seen = String::new();
    reader.read_to_string(&mut seen).expect("read old");
    assert_eq!(seen, "old report");
    assert_eq!(std::fs::read_to_string(&path).expect("read new"), "new");
    assert_eq!(
        names(tmp.path()),
        ["report.json"],
        "no temporary file is left"
    );
}

#[test]
fn write_atomic_into_a_missing_folder_names_the_path_and_leaves_nothing() {
    let tmp = tempdir();
    let path = tmp.path().join("gone").join("report.json");
    let err = write_atomic(&path, "x").expect_err("no folder");
    assert!(err.to_string().contains(&*path.to_string_lossy()), "{err}");
    assert!(names(tmp.path()).is_empty());
}

#[cfg(unix)]
#[test]
fn write_atomic_replaces_a_links_target_and_keeps_the_link() {
    let tmp = tempdir();
    let (target, link) = (
        tmp.path().join("target.json"),
        tmp.path().join("latest.json"),
    );
    std::fs::write(&target, "old").expect("target");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    check_file(&link).expect("a link to a file");
    write_atomic(&link, "new").expect("write through the link");
    assert!(link.is_symlink(), "the link is still a link");
    assert_eq!(std::fs::read_to_string(&target).expect("target"), "new");
    assert_eq!(names(tmp.path()), ["latest.json", "target.json"]);
}
