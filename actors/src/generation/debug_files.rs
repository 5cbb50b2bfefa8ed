//! `--debug`: prompts, answers and pages written to a folder for a person to read. The folder
//! is made by this service, private (0700) and its own; a folder that is a symlink, someone
//! else's, or open to others is refused. Files are created new (never through a symlink,
//! never over an existing file) and named by the service: the tool (made safe), the page's
//! key and a counter, nothing a client sends.

use std::fs::{DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::store::file_names::file_stem;

static NEXT: AtomicU64 = AtomicU64::new(1);

/// The start of the debug files of one generation: `<tool>-<key>-<n>`.
pub fn stem(tool: &str, key: &str) -> String {
    let tool: String = file_stem(tool).chars().take(64).collect();
    let key: String = key.chars().filter(char::is_ascii_hexdigit).take(12).collect();
    format!("{tool}-{key}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Why debug files are not written to a folder: prompts and pages stay private.
#[derive(Debug, thiserror::Error)]
pub enum DirRefused {
    #[error("cannot make or read {}: {source}", dir.display())]
    Io { dir: PathBuf, source: std::io::Error },
    #[error("{} is not a folder (a symlink or a file): refusing to write debug files there", .0.display())]
    NotAFolder(PathBuf),
    #[error("{} belongs to another user: refusing to write debug files there", .0.display())]
    NotOurs(PathBuf),
    #[error("{} is open to other users (mode {mode:o}): refusing to write debug files there", dir.display())]
    Open { dir: PathBuf, mode: u32 },
}

/// Makes the folder (0700) if it is not there, and checks that it is a private folder of this
/// service's user.
pub fn prepare(dir: &Path) -> Result<(), DirRefused> {
    let io = |source| DirRefused::Io { dir: dir.to_path_buf(), source };
    DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(io)?;
    let meta = std::fs::symlink_metadata(dir).map_err(io)?;
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Err(DirRefused::NotAFolder(dir.to_path_buf()));
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(DirRefused::NotOurs(dir.to_path_buf()));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(DirRefused::Open { dir: dir.to_path_buf(), mode: meta.mode() & 0o777 });
    }
    Ok(())
}

/// Writes one debug file, new, private, not through a symlink; a failure is logged, never fatal.
pub fn write(dir: &Path, name: &str, text: &str) {
    if let Err(e) = prepare(dir) {
        tracing::warn!(component = "generation", event = "debug_write_failed", file = %name, error = %e, "could not write a debug file");
        return;
    }
    let made = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(name))
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = made {
        tracing::warn!(component = "generation", event = "debug_write_failed", file = %name, error = %e, "could not write a debug file");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("mcp-gen-ui-debug-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn files_are_new_private_and_never_through_a_link() {
        let dir = scratch("links");
        prepare(&dir).unwrap();
        let victim = std::env::temp_dir().join(format!("mcp-gen-ui-victim-{}", std::process::id()));
        std::fs::write(&victim, "keep me").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("planted.txt")).unwrap();
        write(&dir, "planted.txt", "overwritten?");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me", "a symlink is never followed");
        write(&dir, "ok.txt", "hello");
        let meta = std::fs::metadata(dir.join("ok.txt")).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        std::fs::remove_file(victim).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_folder_that_is_a_link_or_open_to_others_is_refused() {
        let real = scratch("real");
        std::fs::create_dir_all(&real).unwrap();
        let link = scratch("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(matches!(prepare(&link), Err(DirRefused::NotAFolder(_))));
        std::fs::set_permissions(&real, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        assert!(matches!(prepare(&real), Err(DirRefused::Open { mode: 0o777, .. })), "{:?}", prepare(&real));
        std::fs::remove_file(link).unwrap();
        std::fs::remove_dir_all(real).unwrap();
    }

    #[test]
    fn names_are_the_services() {
        let s = stem("../../etc/passwd", "abc123def4567890ffff");
        assert!(s.starts_with("tool.._.._etc_passwd-abc123def456-"), "{s}");
        assert!(!s.contains('/') && !s.starts_with('.'));
    }
}
