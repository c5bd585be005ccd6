use std::io::Read;

use super::*;

/// A folder of its own under the temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!(
            "taopipe-output-{name}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    /// The folder's entries, sorted.
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn check_file_accepts_a_new_or_existing_file_and_leaves_nothing() {
    let tmp = TempDir::new("ok");
    check_file(&tmp.0.join("new.json")).expect("a new file in an existing folder");
    std::fs::write(tmp.0.join("old.json"), "old").expect("old file");
    check_file(&tmp.0.join("old.json")).expect("an existing file is replaced later");
    assert_eq!(tmp.names(), ["old.json"], "the probe files are removed");
    assert_eq!(
        std::fs::read_to_string(tmp.0.join("old.json"))
            .ok()
            .as_deref(),
        Some("old")
    );
}

#[test]
fn check_file_names_the_path_and_what_is_wrong() {
    let tmp = TempDir::new("bad");
    std::fs::write(tmp.0.join("plain"), "").expect("a file");
    let missing = tmp.0.join("no-such-folder").join("out.json");
    let err = check_file(&missing).expect_err("missing folder");
    assert!(matches!(err, OutputError::NoFolder { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains(&*missing.to_string_lossy()) && text.contains("does not exist"),
        "{text}"
    );

    let under_file = tmp.0.join("plain").join("out.json");
    let err = check_file(&under_file).expect_err("a file as the folder");
    assert!(matches!(err, OutputError::NotAFolder { .. }), "{err:?}");
    assert!(err.to_string().contains("plain is not a folder"), "{err}");

    let err = check_file(&tmp.0).expect_err("a folder as the file");
    assert!(matches!(err, OutputError::IsAFolder { .. }), "{err:?}");
    assert!(err.to_string().contains(&*tmp.0.to_string_lossy()), "{err}");
}

#[test]
fn check_folder_accepts_an_existing_or_creatable_folder_only() {
    let tmp = TempDir::new("folder");
    check_folder(&tmp.0).expect("an existing folder");
    check_folder(&tmp.0.join("a").join("b")).expect("creatable: its ancestor exists");
    assert!(!tmp.0.join("a").exists(), "a check creates nothing");
    std::fs::write(tmp.0.join("plain"), "").expect("a file");
    for bad in [tmp.0.join("plain"), tmp.0.join("plain").join("pictures")] {
        let err = check_folder(&bad).expect_err("a file in the way");
        assert!(matches!(err, OutputError::NotAFolder { .. }), "{err:?}");
        assert!(err.to_string().contains(&*bad.to_string_lossy()), "{err}");
    }
    assert_eq!(tmp.names(), ["plain"]);
}

#[test]
fn write_atomic_replaces_the_file_by_rename_not_in_place() {
    let tmp = TempDir::new("atomic");
    let path = tmp.0.join("report.json");
    std::fs::write(&path, "old report").expect("old file");
    // A reader that opened the old report keeps reading the old report whole: the new one
    // is a new file renamed over it (an in-place write would truncate what it reads).
    let mut reader = File::open(&path).expect("open old");
    write_atomic(&path, "new").expect("write");
    let mut seen = String::new();
    reader.read_to_string(&mut seen).expect("read old");
    assert_eq!(seen, "old report");
    assert_eq!(std::fs::read_to_string(&path).expect("read new"), "new");
    assert_eq!(tmp.names(), ["report.json"], "no temporary file is left");
}

#[test]
fn write_atomic_into_a_missing_folder_names_the_path_and_leaves_nothing() {
    let tmp = TempDir::new("missing");
    let path = tmp.0.join("gone").join("report.json");
    let err = write_atomic(&path, "x").expect_err("no folder");
    assert!(err.to_string().contains(&*path.to_string_lossy()), "{err}");
    assert!(tmp.names().is_empty());
}

#[cfg(unix)]
#[test]
fn write_atomic_replaces_a_links_target_and_keeps_the_link() {
    let tmp = TempDir::new("link");
    let (target, link) = (tmp.0.join("target.json"), tmp.0.join("latest.json"));
    std::fs::write(&target, "old").expect("target");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    check_file(&link).expect("a link to a file");
    write_atomic(&link, "new").expect("write through the link");
    assert!(link.is_symlink(), "the link is still a link");
    assert_eq!(std::fs::read_to_string(&target).expect("target"), "new");
    assert_eq!(tmp.names(), ["latest.json", "target.json"]);
}
