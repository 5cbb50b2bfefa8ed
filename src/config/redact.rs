//! What an error about the configuration may show of a value that can hold a secret: a URL
//! without its credentials or query, and serde's messages without the string they quote. The
//! field is always named, so the person reading the error knows where to look without the
//! value being in a terminal, a log or a CI transcript.

/// A URL as an error may show it: the user and password before `@` and the query replaced,
/// whether or not the rest parses (a URL that does not parse is exactly where a
/// `user:pass@` would otherwise be quoted whole).
pub fn url(raw: &str) -> String {
    let raw = raw.trim();
    let Some(i) = raw.find("://") else {
        // No scheme to find the authority by: keep only what follows the last `@`.
        return raw.rfind('@').map_or_else(|| without_query(raw), |at| format!("***@{}", without_query(&raw[at + 1..])));
    };
    let (scheme, rest) = raw.split_at(i + 3);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rfind('@') {
        Some(at) => format!("***@{}", &authority[at + 1..]),
        None => authority.to_string(),
    };
    format!("{scheme}{authority}{}", without_query(tail))
}

fn without_query(s: &str) -> String {
    match s.find(['?', '#']) {
        Some(q) => format!("{}?***", &s[..q]),
        None => s.to_string(),
    }
}

/// serde's message without the string value it quotes (`invalid type: string "s3cret",
/// expected a sequence` becomes `invalid type: a string, expected a sequence`): the value of
/// a field given with the wrong type is often the secret itself (`server.auth.tokens` given as
/// one token, `headers` as one header).
pub fn serde_message(msg: &str) -> String {
    let mut out = msg.to_string();
    for (quoted, plain) in [("invalid type: string \"", "invalid type: a string"), ("invalid value: string \"", "invalid value: a string")]
    {
        while let Some(start) = out.find(quoted) {
            let after = start + quoted.len();
            // The value ends at the last `", expected` (it may itself hold quotes); else at
            // the end of the message.
            let end = out[after..].rfind("\", expected").map(|i| after + i + 1).unwrap_or(out.len());
            out.replace_range(start..end, plain);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_queries_of_a_url_are_never_shown() {
        assert_eq!(url("http://user:pa ss@[bad/mcp"), "http://***@[bad/mcp");
        assert_eq!(url("https://u:secret@host:8443/v1?key=abc#x"), "https://***@host:8443/v1?***");
        assert_eq!(url("http://host/path"), "http://host/path");
        assert_eq!(url("user:secret@host/x?k=v"), "***@host/x?***");
        assert_eq!(url("ftp://a@b@c/"), "ftp://***@c/");
    }

    #[test]
    fn serde_messages_lose_the_string_they_quote() {
        let m = serde_message("invalid type: string \"sekrit-token\", expected a sequence at line 1 column 42");
        assert_eq!(m, "invalid type: a string, expected a sequence at line 1 column 42");
        let m = serde_message("invalid type: string \"a \\\"q\\\", expected x\", expected a map");
        assert_eq!(m, "invalid type: a string, expected a map");
        assert_eq!(serde_message("unknown field `tols`"), "unknown field `tols`");
        assert_eq!(serde_message("invalid value: string \"x"), "invalid value: a string");
    }
}
