//! `${...}` in a server's entry and `envFile`'s KEY=VALUE lines: what a servers file written
//! for Claude Desktop or VS Code means here.

use std::path::Path;

use super::EnvLookup;
use crate::config::file_error::{BadLine, FileError};

/// `${env:NAME}`, `${NAME}` and `${NAME:-default}` replaced by this service's environment (an
/// unset one is empty, or its default). VS Code's `${input:...}` and workspace variables mean
/// nothing here and are refused.
pub fn expand_vars(text: &str, env: EnvLookup) -> Result<String, VarError> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let var = &after[..end];
        // A person's secret: kept as it is, filled in per person when their connection starts.
        if let Some(secret) = var.strip_prefix("principal:") {
            if secret.is_empty()
                || secret.len() > 128
                || !secret.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
            {
                return Err(VarError::SecretName(var.to_string()));
            }
            out.push_str(&rest[start..start + 2 + end + 1]);
            rest = &after[end + 1..];
            continue;
        }
        let (name, default) = match var.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (var.strip_prefix("env:").unwrap_or(var), None),
        };
        // VS Code's own variables: its home is ours; the rest are the editor's.
        let name = if name == "userHome" { "HOME" } else { name };
        let editors =
            matches!(name, "workspaceFolder" | "workspaceFolderBasename" | "fileWorkspaceFolder" | "cwd" | "pathSeparator" | "file");
        if editors || name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(VarError::NotHere(var.to_string()));
        }
        out.push_str(&env(name).filter(|v| !v.is_empty()).or_else(|| default.map(str::to_string)).unwrap_or_default());
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A `${...}` in a server's entry that cannot be filled in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VarError {
    #[error("${{{0}}}: a principal secret's name is 1 to 128 of A-Z, a-z, 0-9, _, - and .")]
    SecretName(String),
    /// VS Code inputs and workspace variables are the editor's.
    #[error("${{{0}}} cannot be filled in here (VS Code inputs and workspace variables are the editor's): write the value, or use ${{env:NAME}} with NAME set in mcp-gen-ui's environment")]
    NotHere(String),
}

/// KEY=VALUE lines (`#` comments and blank lines skipped; values may be quoted).
pub(super) fn read_env_file(path: &Path) -> Result<Vec<(String, String)>, FileError> {
    let text = std::fs::read_to_string(path).map_err(FileError::read(path))?;
    let mut vars = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((k, v)) = line.split_once('=') else {
            return Err(FileError::Line { path: path.to_path_buf(), line: BadLine { line: i + 1, why: "not KEY=VALUE".into() } });
        };
        let v = v.trim();
        let v = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v);
        vars.push((k.trim().to_string(), v.to_string()));
    }
    Ok(vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(k: &str) -> Option<String> {
        match k {
            "TOKEN" => Some("t0k".into()),
            "HOME" => Some("/home/u".into()),
            _ => None,
        }
    }

    #[test]
    fn variables() {
        assert_eq!(expand_vars("a ${TOKEN} ${env:TOKEN} ${UNSET:-d} ${UNSET}.", &env).unwrap(), "a t0k t0k d .");
        assert_eq!(expand_vars("${userHome}/x", &env).unwrap(), "/home/u/x");
        assert_eq!(expand_vars("${workspaceFolder}/x", &env), Err(VarError::NotHere("workspaceFolder".into())));
        assert_eq!(expand_vars("${input:key}", &env), Err(VarError::NotHere("input:key".into())));
    }
}
