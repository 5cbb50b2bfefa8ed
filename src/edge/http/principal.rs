//! Who a request is from: the principal `auth::require` authenticated, kept in the request's
//! extensions for the handlers that file sessions under it and count its allowances.

use std::sync::Arc;

use actix_web::HttpMessage;
use mcp_gen_ui_actors::session::table::Owner;
use mcp_gen_ui_actors::who::Who;
use serde_json::Value;

/// Who made a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Principal {
    /// Authentication is off.
    Anonymous,
    /// A static token: its label (for logs) and its key (`token_key`, whose it is).
    Token(String, String),
    /// An OAuth access token, by its subject (`sub=...`, or `client_id=...`); whether it grants
    /// `mcp-gen-ui:admin`; its claims (for policy rules).
    Jwt(String, bool, Arc<Value>),
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Principal::Anonymous => f.write_str("anonymous"),
            Principal::Token(label, _) => write!(f, "token {label}"),
            Principal::Jwt(who, _, _) => write!(f, "jwt {who}"),
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

    /// Who this is, for rules and the audit trail: the key, a name (a token's label, a JWT's
    /// subject value), the claims, the admin right.
    pub fn who(&self, admin: bool) -> Who {
        let (name, claims) = match self {
            Principal::Anonymous => return (*Who::anonymous()).clone(),
            // A labelled token is its label; another its digest (`#0707...`), never where it
            // was configured.
            Principal::Token(_, key) => {
                (key.strip_prefix("token ").unwrap_or(key).to_string(), Arc::new(Value::Object(Default::default())))
            }
            Principal::Jwt(subject, _, claims) => {
                (subject.split_once('=').map_or(subject.as_str(), |(_, v)| v).to_string(), claims.clone())
            }
        };
        Who::new(Arc::from(self.key()), Arc::from(name), claims, admin)
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

/// The principal a request was authenticated as, in the request's extensions (absent:
/// authentication is off, the anonymous principal).
#[derive(Clone)]
pub struct Caller(pub Arc<Who>);

/// Who made the request.
pub fn caller_who(req: &actix_web::HttpRequest) -> Arc<Who> {
    req.extensions().get::<Caller>().map_or_else(Who::anonymous, |c| c.0.clone())
}

/// Whose request this is.
pub fn caller(req: &actix_web::HttpRequest) -> Owner {
    caller_who(req).key.clone()
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
        let jwt = Principal::Jwt("sub=alice".into(), false, Arc::new(serde_json::json!({"groups": ["ops"]})));
        assert_eq!(jwt.key(), "jwt sub=alice");
        let who = jwt.who(true);
        assert_eq!((&*who.name, who.admin, &who.claims["groups"][0]), ("alice", true, &serde_json::json!("ops")));
        let token = Principal::Token("alice".into(), token_key("alice", true, &d));
        assert_eq!(&*token.who(false).name, "alice", "rules name a labelled token by its label");
        let unnamed = Principal::Token("--auth-token[0]".into(), token_key("--auth-token[0]", false, &d));
        assert_eq!(&*unnamed.who(false).name, "#070707070707");
    }
}
