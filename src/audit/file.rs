//! The audit file: appended to, created 0600, never opened through a symbolic link, rotated by
//! size (`audit.jsonl` -> `audit.jsonl.1` -> ... -> `.N`, the oldest removed).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;

/// The owner of a regular file that is not this service's user (a device or a pipe, such as
/// /dev/stdout, is whoever's it is).
pub fn foreign_owner(meta: &std::fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    (meta.is_file() && meta.uid() != me).then(|| meta.uid())
}

/// Why the file cannot be written; names the path and what to do.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{0} is a symbolic link; the audit trail is never written through one: give the real path")]
    Symlink(PathBuf),
    #[error("{0} belongs to another user (uid {1}), who could read or rewrite the trail: remove it, or give a path in a folder only this service's user writes")]
    NotOurs(PathBuf, u32),
    #[error("cannot open {0}: {1}")]
    Open(PathBuf, io::Error),
    #[error("cannot write {0}: {1}")]
    Write(PathBuf, io::Error),
    #[error("cannot rotate {0}: {1}")]
    Rotate(PathBuf, io::Error),
}

pub struct AuditFile {
    path: PathBuf,
    file: Option<io::BufWriter<File>>,
    size: u64,
    max: u64,
    keep: u32,
}

impl AuditFile {
    pub fn new(path: PathBuf, max: u64, keep: u32) -> AuditFile {
        AuditFile { path, file: None, size: 0, max, keep }
    }

    fn open(&mut self) -> Result<(), FileError> {
        if self.file.is_some() {
            return Ok(());
        }
        let f = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&self.path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP) => FileError::Symlink(self.path.clone()),
                _ => FileError::Open(self.path.clone(), e),
            })?;
        let meta = f.metadata().map_err(|e| FileError::Open(self.path.clone(), e))?;
        if let Some(owner) = foreign_owner(&meta) {
            return Err(FileError::NotOurs(self.path.clone(), owner));
        }
        // A file that was there before with wider permissions is narrowed (when ours to change).
        if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
            let _ = f.set_permissions(std::fs::Permissions::from_mode(0o600));
        }
        self.size = if meta.is_file() { meta.len() } else { 0 };
        self.file = Some(io::BufWriter::with_capacity(64 * 1024, f));
        Ok(())
    }

    /// Appends one line (buffered: `flush` sends it). Rotates first when the line would take
    /// the file past its size.
    pub fn write(&mut self, line: &[u8]) -> Result<(), FileError> {
        self.open()?;
        if self.size > 0 && self.size + line.len() as u64 > self.max {
            self.rotate()?;
            self.open()?;
        }
        let f = self.file.as_mut().expect("opened above");
        if let Err(e) = f.write_all(line) {
            self.file = None; // reopened on the next line
            return Err(FileError::Write(self.path.clone(), e));
        }
        self.size += line.len() as u64;
        Ok(())
    }

    pub fn flush(&mut self) -> Result<(), FileError> {
        let Some(f) = self.file.as_mut() else { return Ok(()) };
        if let Err(e) = f.flush() {
            self.file = None;
            return Err(FileError::Write(self.path.clone(), e));
        }
        Ok(())
    }

    /// Whether the file can be opened now (a writer that failed tries this to recover).
    pub fn probe(&mut self) -> Result<(), FileError> {
        self.file = None;
        self.open()
    }

    fn rotate(&mut self) -> Result<(), FileError> {
        self.flush()?;
        self.file = None;
        // Only regular files are rotated (a device or a pipe is written as it is).
        if !std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.is_file()) {
            self.size = 0;
            return Ok(());
        }
        let numbered = |n: u32| {
            let mut p = self.path.clone().into_os_string();
            p.push(format!(".{n}"));
            PathBuf::from(p)
        };
        if self.keep == 0 {
            return std::fs::remove_file(&self.path).map_err(|e| FileError::Rotate(self.path.clone(), e));
        }
        let _ = std::fs::remove_file(numbered(self.keep));
        for n in (1..self.keep).rev() {
            let from = numbered(n);
            if from.exists() {
                std::fs::rename(&from, numbered(n + 1)).map_err(|e| FileError::Rotate(from.clone(), e))?;
            }
        }
        std::fs::rename(&self.path, numbered(1)).map_err(|e| FileError::Rotate(self.path.clone(), e))?;
        self.size = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("audit-file-{}-{}", std::process::id(), uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn created_private_and_rotated_by_size() {
        let d = dir();
        let path = d.join("audit.jsonl");
        let mut f = AuditFile::new(path.clone(), 100, 2);
        let line = [b'x'; 39].iter().chain(b"\n").copied().collect::<Vec<u8>>();
        for _ in 0..7 {
            f.write(&line).unwrap();
        }
        f.flush().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        // 7 lines of 40 bytes, at most 2 per 100-byte file: the current file and two kept.
        let len = |p: &Path| std::fs::read(p).map(|b| b.len()).unwrap_or(0);
        let numbered = |n: u32| PathBuf::from(format!("{}.{n}", path.display()));
        assert_eq!((len(&path), len(&numbered(1)), len(&numbered(2))), (40, 80, 80));
        assert!(!numbered(3).exists(), "only keepFiles are kept");
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn never_through_a_symlink() {
        let d = dir();
        let target = d.join("elsewhere");
        std::fs::write(&target, "").unwrap();
        let link = d.join("audit.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = AuditFile::new(link, 1000, 1).write(b"x\n").unwrap_err();
        assert!(matches!(err, FileError::Symlink(_)), "{err}");
        assert_eq!(std::fs::read(&target).unwrap().len(), 0);
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_full_device_is_an_error_not_a_panic() {
        let mut f = AuditFile::new(PathBuf::from("/dev/full"), 1 << 20, 1);
        let big = vec![b'x'; 128 * 1024];
        assert!(f.write(&big).is_err() || f.flush().is_err());
    }
}
