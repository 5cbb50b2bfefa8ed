//! Who a request is from: the principal `auth::require` authenticated, kept in the request's
//! extensions for the handlers that file sessions under it and count its allowances.

use std::sync::Arc;

use actix_web::HttpMessage;
use mcp_gen_ui_actors::session::table::Owner;
use mcp_gen_ui_actors::session::ANONYMOUS;

/// Who made a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Principal {
    /// Authentication is off.
    Anonymous,
    /// A static token: its label (for logs) and its key (`token_key`, whose it is).
    Token(String, String),
    /// An OAuth access token, by its subject (`sub=...`, or `client_id=...`); whether it grants
    /// `mcp-gen-ui:admin`.
    Jwt(String, bool),
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Principal::Anonymous => f.write_str("anonymous"),
            Principal::Token(label, _) => write!(f, "token {label}"),
            Principal::Jwt(who, _) => write!(f, "jwt {who}"),
        }
    }
}

impl Principal {
    /// Who this is, for owning sessions, refinements and allowances.
    pub fn key(&self) -> String {
        match self {
            Principal::Token(_, key) => key.clone(),
            other => other.to_string(),
        }
    }
}

/// A static token's key. A token labelled `name:token` is its name; a token without a label is
/// named by where it was configured, which moves when the configuration does (a line of the
/// tokens file), so it is keyed by a digest of the token itself instead.
pub fn token_key(label: &str, named: bool, digest: &[u8; 32]) -> String {
    if named {
        format!("token {label}")
    } else {
        format!("token #{}", digest.iter().take(6).map(|b| format!("{b:02x}")).collect::<String>())
    }
}

/// The principal a request was authenticated as and whether it is an admin, in the request's
/// extensions (absent: authentication is off, the anonymous principal).
#[derive(Clone)]
pub struct Caller(pub Owner, pub bool);

/// Whose request this is.
pub fn caller(req: &actix_web::HttpRequest) -> Owner {
    static NOBODY: std::sync::LazyLock<Owner> = std::sync::LazyLock::new(|| Arc::from(ANONYMOUS));
    req.extensions().get::<Caller>().map_or_else(|| NOBODY.clone(), |c| c.0.clone())
}

/// Whether the request's principal has the admin right (`server.auth.admins`, or a JWT with
/// `mcp-gen-ui:admin`). Without auth, the one anonymous principal has it: it is everyone.
pub fn caller_is_admin(req: &actix_web::HttpRequest) -> bool {
    req.extensions().get::<Caller>().is_none_or(|c| c.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labelled_tokens_are_their_name_the_others_their_digest() {
        let d = [7u8; 32];
        assert_eq!(token_key("alice", true, &d), "token alice");
        assert_eq!(token_key("server.auth.tokensFile:3", false, &d), "token #070707070707");
        assert_eq!(
            token_key("--auth-token[0]", false, &d),
            token_key("server.auth.tokensFile:9", false, &d),
            "where it was configured does not matter"
        );
        // A label is named by the flag, not guessed from its text: a file line's own label wins.
        assert_eq!(token_key("MCP_GEN_UI_AUTH_TOKEN", true, &d), "token MCP_GEN_UI_AUTH_TOKEN");
        assert_eq!(Principal::Jwt("sub=alice".into(), false).key(), "jwt sub=alice");
    }
}
