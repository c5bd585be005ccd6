//! Files a tool writes after a long run (reports, pictures, outputs): checked before the
//! run, written whole or not at all.
//!
//! A report lands after minutes of tuning, so a typo in its path must fail at start, not
//! at the end: [`check_file`] and [`check_folder`] test a path by what [`write_atomic`]
//! later does, creating a file in the folder. [`write_atomic`] writes a temporary file
//! beside the target and renames it over the target, so a reader (a script polling the
//! report, a plot viewer) sees the old file or the new one, never half of one, and a
//! failed write leaves the old file as it was.
//!
//! ```
//! use taopipe_live::output::{check_file, write_atomic};
//!
//! let path = std::env::temp_dir().join(format!("taopipe-doc-{}.json", std::process::id()));
//! check_file(&path)?; // at start: fails now, naming the path, if it cannot be written
//! // ... the long run ...
//! write_atomic(&path, "{\"fps\": 12.5}\n")?;
//! assert_eq!(std::fs::read_to_string(&path)?, "{\"fps\": 12.5}\n");
//! # std::fs::remove_file(&path)?;
//! assert!(check_file(std::path::Path::new("no-such-folder/report.json")).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why an output path cannot be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// The file's folder (or the nearest existing ancestor of a folder) is missing.
    #[error("{}: the folder {} does not exist", path.display(), folder.display())]
    NoFolder {
        /// The path asked for.
        path: PathBuf,
        /// The folder that is missing.
        folder: PathBuf,
    },
    /// Something on the way is a file where a folder is needed.
    #[error("{}: {} is not a folder", path.display(), folder.display())]
    NotAFolder {
        /// The path asked for.
        path: PathBuf,
        /// What should be a folder.
        folder: PathBuf,
    },
    /// A file was asked for, but the path is a folder.
    #[error("{} is a folder, not a file", path.display())]
    IsAFolder {
        /// The path asked for.
        path: PathBuf,
    },
    /// Creating or writing the file (or the probe file of a check) failed.
    #[error("{}: cannot write in {}: {source}", path.display(), folder.display())]
    Io {
        /// The path asked for.
        path: PathBuf,
        /// The folder written in.
        folder: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// Fails unless [`write_atomic`] could write `path` now: `path` is not a folder, its
/// folder exists, and a file can be created there (tried, then removed). An existing file
/// at `path` is fine: it will be replaced. A symbolic link is followed.
///
/// # Errors
/// The [`OutputError`] that names what is wrong.
pub fn check_file(path: &Path) -> Result<(), OutputError> {
    let target = resolve(path);
    if target.is_dir() {
        return Err(OutputError::IsAFolder { path: path.into() });
    }
    let folder = folder_of(&target);
    if !folder.exists() {
        return Err(OutputError::NoFolder {
            path: path.into(),
            folder,
        });
    }
    if !folder.is_dir() {
        return Err(OutputError::NotAFolder {
            path: path.into(),
            folder,
        });
    }
    probe(path, &folder)
}

/// Fails unless files can be written in the folder `dir`: it exists and takes a new file,
/// or it does not exist yet and its nearest existing ancestor is a folder that takes one
/// (so `std::fs::create_dir_all(dir)` can make it later). Nothing is left behind.
///
/// # Errors
/// The [`OutputError`] that names what is wrong.
pub fn check_folder(dir: &Path) -> Result<(), OutputError> {
    let existing = dir
        .ancestors()
        .map(|a| {
            if a.as_os_str().is_empty() {
                Path::new(".")
            } else {
                a
            }
        })
        .find(|a| a.exists())
        .unwrap_or(Path::new("."));
    if !existing.is_dir() {
        return Err(OutputError::NotAFolder {
            path: dir.into(),
            folder: existing.into(),
        });
    }
    probe(dir, existing)
}

/// Writes `bytes` to `path` whole: into a temporary file in the same folder, flushed to
/// disk, then renamed over `path` (module docs). A symbolic link at `path` is followed,
/// so the file it points to is replaced, not the link.
///
/// # Errors
/// [`OutputError::Io`] naming `path` when the folder is missing or the write fails; the
/// temporary file is removed and `path` is left as it was.
pub fn write_atomic(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), OutputError> {
    let target = resolve(path);
    let folder = folder_of(&target);
    let io = |source| OutputError::Io {
        path: path.into(),
        folder: folder.clone(),
        source,
    };
    let (temp, mut file) = temp_file(&target).map_err(io)?;
    let written = file
        .write_all(bytes.as_ref())
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            drop(file);
            std::fs::rename(&temp, &target)
        });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(io(e));
    }
    Ok(())
}

/// The file a write to `path` lands in: a symbolic link's target when it resolves.
fn resolve(path: &Path) -> PathBuf {
    if path.is_symlink()
        && let Ok(target) = std::fs::canonicalize(path)
    {
        return target;
    }
    path.into()
}

/// `path`'s folder, `.` for a bare file name.
fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.into(),
        _ => PathBuf::from("."),
    }
}

/// A new, empty temporary file beside `target`, named after it and unique to this
/// process and call (`.<name>.<pid>-<n>.tmp`, hidden, so a crash leaves it unmistakable).
fn temp_file(target: &Path) -> std::io::Result<(PathBuf, File)> {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let name = target
        .file_name()
        .map_or("output".into(), |n| n.to_string_lossy());
    let temp = folder_of(target).join(format!(
        ".{name}.{}-{}.tmp",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    ));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)?;
    Ok((temp, file))
}

/// Creates and removes a file in `folder`, the way [`write_atomic`] starts.
fn probe(path: &Path, folder: &Path) -> Result<(), OutputError> {
    let probe = folder.join(path.file_name().unwrap_or("output".as_ref()));
    let (temp, file) = temp_file(&probe).map_err(|source| OutputError::Io {
        path: path.into(),
        folder: folder.into(),
        source,
    })?;
    drop(file);
    let _ = std::fs::remove_file(temp);
    Ok(())
}

#[cfg(test)]
mod test;
