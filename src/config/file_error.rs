//! Why a file the configuration names (the tokens file, the principals' secrets, a server's
//! env file) could not be used. It names the file and the line, never what the line holds:
//! these files hold secrets. A reload that meets one keeps what was in force.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// Group or others may read a file of credentials.
    #[error("{} can be read by others (mode {mode:04o}); it holds people's credentials: chmod 600 it", path.display())]
    Exposed { path: PathBuf, mode: u32 },
    #[error("{}: {line}", path.display())]
    Line { path: PathBuf, line: BadLine },
    /// Not the JSON shape `expected` shows (where, not what: serde's text could quote a value).
    #[error("{} is not {expected} JSON (line {line}, column {column})", path.display())]
    NotJson { path: PathBuf, expected: &'static str, line: usize, column: usize },
}

impl FileError {
    pub fn read(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> FileError + '_ {
        move |source| FileError::Read { path: path.to_path_buf(), source }
    }
}

/// A line of a line-based file that is not what it should be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {why}")]
pub struct BadLine {
    pub line: usize,
    pub why: String,
}
