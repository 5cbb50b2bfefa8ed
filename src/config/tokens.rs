//! Secrets the service holds (API keys, bearer tokens) and the static tokens it accepts: how a
//! token is checked, read from a tokens file, or generated. Pure, shared by the settings (which
//! load them) and the HTTP edge (which checks them), so neither imports the other.

use std::path::Path;

use base64::Engine;

use crate::config::file_error::{BadLine, FileError};

/// A value that never prints: Debug shows only that it is set.
#[derive(Clone)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// A token accepted by the service, and where it was configured (the label logs show).
#[derive(Debug, Clone)]
pub struct StaticToken {
    pub label: String,
    pub value: Secret,
    /// The label was given with the token (`name:token`): it names the principal. Otherwise it
    /// says where the token was configured.
    pub named: bool,
}

/// Why a token cannot be used; never quotes it.
pub fn check_token(t: &str) -> Result<(), &'static str> {
    if t.is_empty() {
        return Err("is empty");
    }
    if t.len() > 4096 {
        return Err("is longer than 4096 characters");
    }
    if !t.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err("must be printable ASCII without spaces (it travels in an HTTP header)");
    }
    Ok(())
}

/// `label:token` -> the label and the token; anything else is a token without a label. A label
/// names the person or program the token is for (the principal that owns its sessions and
/// allowances): letters, digits, `_ . @ -`, at most 64, starting with a letter or digit.
pub fn split_label(raw: &str) -> (Option<&str>, &str) {
    if let Some((label, token)) = raw.split_once(':') {
        let ok = !label.is_empty()
            && label.len() <= 64
            && label.starts_with(|c: char| c.is_ascii_alphanumeric())
            && label.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '@' | '-'));
        if ok && !token.is_empty() {
            return (Some(label), token);
        }
    }
    (None, raw)
}

/// One token per line (`label:token` to name whose it is); `#` starts a comment line; blank
/// lines are skipped. Errors name the line, never its content.
pub fn parse_tokens_file(text: &str) -> Result<Vec<StaticToken>, BadLine> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let (label, t) = split_label(t);
        check_token(t).map_err(|why| BadLine { line: i + 1, why: format!("the token {why}") })?;
        let named = label.is_some();
        let label = label.map_or_else(|| format!("server.auth.tokensFile:{}", i + 1), str::to_string);
        out.push(StaticToken { label, value: Secret(t.to_string()), named });
    }
    Ok(out)
}

pub fn read_tokens_file(path: &Path) -> Result<Vec<StaticToken>, FileError> {
    let text = std::fs::read_to_string(path).map_err(FileError::read(path))?;
    parse_tokens_file(&text).map_err(|line| FileError::Line { path: path.to_path_buf(), line })
}

/// 32 bytes from the operating system's RNG, base64url: the token of a non-loopback listener
/// that has no authentication configured.
pub fn generate_token() -> std::io::Result<Secret> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(format!("the OS random number generator failed: {e}")))?;
    Ok(Secret(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_files_skip_comments_and_name_bad_lines_without_quoting_them() {
        let t = parse_tokens_file("# ops team\n\n  alpha-token-1  \n#beta\nbeta-token-22\n").unwrap();
        let labels: Vec<_> = t.iter().map(|t| (t.label.as_str(), t.value.0.as_str())).collect();
        assert_eq!(labels, vec![("server.auth.tokensFile:3", "alpha-token-1"), ("server.auth.tokensFile:5", "beta-token-22")]);
        let e = parse_tokens_file("ok-token\nhas secret space\n").unwrap_err();
        assert!(e.line == 2 && !e.to_string().contains("secret"), "{e}");
    }

    #[test]
    fn a_label_names_whose_token_it_is() {
        let t = parse_tokens_file(
            "alice:alpha-token-1
bob@ops:beta-token-22
plain-token-333
",
        )
        .unwrap();
        let labels: Vec<_> = t.iter().map(|t| (t.label.as_str(), t.value.0.as_str())).collect();
        assert_eq!(labels, vec![("alice", "alpha-token-1"), ("bob@ops", "beta-token-22"), ("server.auth.tokensFile:3", "plain-token-333")]);
        assert_eq!(split_label(":tok"), (None, ":tok"), "no label: the whole is the token");
        assert_eq!(split_label("a b:tok"), (None, "a b:tok"));
        assert_eq!(split_label("alice:"), (None, "alice:"));
    }
}
