//! Pure: the names hosts see when several servers sit behind one endpoint.
//!
//! - Tools and prompts are exposed as `<server>__<name>`. Every exposed name matches
//!   `^[a-zA-Z0-9_-]{1,64}$`, what the Anthropic and OpenAI APIs accept: a longer or odd one is
//!   shortened stably, with a short hash of the server and the original name as its suffix.
//! - Pages made here are `ui://<server>/<tool>`.
//! - The servers' own resource URIs are namespaced reversibly: `scheme://rest` becomes
//!   `scheme://<server>+rest` (and `scheme:rest`, `scheme:<server>+rest`), so a server's own
//!   `ui://` app stays a `ui://` URI and never looks like one of our pages (`<server>/`).
//!
//! One server behind `--upstream` uses none of this: its names and URIs pass unchanged.

use sha2::{Digest, Sha256};

/// The longest name the LLM APIs accept.
pub const MAX_NAME: usize = 64;
/// Between the server and the tool or prompt (Claude Code's own convention is `mcp__s__t`).
pub const SEPARATOR: &str = "__";

/// A name the LLM APIs accept as it is.
pub fn is_api_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_NAME && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A server's name, made fit for exposed names, URIs, metric labels and keys: letters, digits,
/// `_` and `-` (anything else becomes `_`), at most 32 characters. `None` when nothing of it is
/// left (the caller refuses it, naming the server).
pub fn server_prefix(name: &str) -> Option<String> {
    let p: String = name.chars().take(32).map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    let p = p.trim_matches('_').to_string();
    (!p.is_empty()).then_some(p)
}

/// What a server calls `name`, as hosts see it: `<prefix>__<name>` when that is an API name,
/// else the same shortened and cleaned, ending in a hash of the server and the name.
pub fn exposed_name(prefix: &str, name: &str) -> String {
    let plain = format!("{prefix}{SEPARATOR}{name}");
    if is_api_name(&plain) {
        return plain;
    }
    with_suffix(&plain, &format!("{prefix}\0{name}"))
}

/// `base` made an API name that ends in `_` and 8 hex digits of `seed`'s hash: a collision
/// between two names, or a name too long or odd, is settled this way, stably.
pub fn with_suffix(base: &str, seed: &str) -> String {
    let hash = hex::encode(&Sha256::digest(seed.as_bytes())[..4]);
    let clean: String = base.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    let keep = MAX_NAME - 1 - hash.len();
    let head: String = clean.chars().take(keep).collect();
    format!("{head}_{hash}")
}

/// The `ui://` page made here for a server's tool (`bare`: the tool's own name).
pub fn page_uri(prefix: &str, bare: &str) -> String {
    format!("ui://{prefix}/{}", encode_path(bare))
}

/// The server and tool a page URI of ours names (`ui://<prefix>/<tool>`), still encoded.
pub fn split_page_uri(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix("ui://")?;
    let (prefix, tool) = rest.split_once('/')?;
    (!prefix.is_empty() && !tool.is_empty() && !prefix.contains('+')).then_some((prefix, tool))
}

/// A server's own resource URI as hosts see it (reversible with [`split_uri`]).
pub fn namespace_uri(prefix: &str, uri: &str) -> String {
    match uri.split_once(':') {
        Some((scheme, rest)) if valid_scheme(scheme) => match rest.strip_prefix("//") {
            Some(after) => format!("{scheme}://{prefix}+{after}"),
            None => format!("{scheme}:{prefix}+{rest}"),
        },
        // Not a URI with a scheme: kept recognisable and reversible all the same.
        _ => format!("mcp-gen-ui:{prefix}+{uri}"),
    }
}

/// The server prefix and the server's own URI behind a namespaced one.
pub fn split_uri(uri: &str) -> Option<(&str, String)> {
    let (scheme, rest) = uri.split_once(':')?;
    if !valid_scheme(scheme) {
        return None;
    }
    let (slashes, rest) = match rest.strip_prefix("//") {
        Some(after) => ("//", after),
        None => ("", rest),
    };
    let (prefix, original) = rest.split_once('+')?;
    if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        return None;
    }
    if scheme == "mcp-gen-ui" && slashes.is_empty() {
        return Some((prefix, original.to_string()));
    }
    Some((prefix, format!("{scheme}:{slashes}{original}")))
}

fn valid_scheme(s: &str) -> bool {
    let mut b = s.bytes();
    b.next().is_some_and(|c| c.is_ascii_alphabetic()) && b.all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
}

/// Percent-encodes what may not stand in a URI path segment as it is.
fn encode_path(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_join_with_two_underscores() {
        assert_eq!(exposed_name("memory", "create_entities"), "memory__create_entities");
        assert!(is_api_name(&exposed_name("memory", "create_entities")));
    }

    #[test]
    fn long_or_odd_names_are_shortened_stably_and_stay_distinct() {
        let long = "x".repeat(80);
        let a = exposed_name("srv", &long);
        assert!(is_api_name(&a) && a.len() == MAX_NAME, "{a}");
        assert_eq!(a, exposed_name("srv", &long), "stable");
        let dotted = exposed_name("srv", "files.read");
        assert!(is_api_name(&dotted) && dotted.starts_with("srv__files_read_"), "{dotted}");
        assert_ne!(exposed_name("srv", "files.read"), exposed_name("srv", "files read"), "the hash keeps them apart");
        assert_ne!(exposed_name("a", &long), exposed_name("b", &long));
    }

    #[test]
    fn server_prefixes_are_cleaned_or_refused() {
        assert_eq!(server_prefix("github").as_deref(), Some("github"));
        assert_eq!(server_prefix("my server.v2").as_deref(), Some("my_server_v2"));
        assert_eq!(server_prefix("..."), None);
        assert_eq!(server_prefix(&"s".repeat(50)).map(|p| p.len()), Some(32));
    }

    #[test]
    fn uris_are_namespaced_reversibly() {
        for uri in ["file:///tmp/a b.txt", "test://static/resource/1", "ui://widget/app.html", "urn:isbn:1234", "memo:+odd", "x"] {
            let n = namespace_uri("srv", uri);
            assert_eq!(split_uri(&n), Some(("srv", uri.to_string())), "{uri} -> {n}");
        }
        assert_eq!(namespace_uri("srv", "ui://widget/app.html"), "ui://srv+widget/app.html");
        assert_eq!(split_uri("ui://srv/get_time"), None, "a page of ours is not a namespaced URI");
        assert_eq!(split_uri("file:///tmp/x"), None);
    }

    #[test]
    fn page_uris_name_server_and_tool() {
        assert_eq!(page_uri("time", "get_current_time"), "ui://time/get_current_time");
        assert_eq!(split_page_uri("ui://time/get_current_time"), Some(("time", "get_current_time")));
        assert_eq!(page_uri("s", "a/b c"), "ui://s/a%2Fb%20c");
        assert_eq!(split_page_uri("ui://srv+widget/app.html"), None, "a server's own app is not a page of ours");
        assert_eq!(split_page_uri("ui://get_forecast"), None);
    }
}
