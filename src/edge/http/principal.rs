//! Who a request is from: the principal `auth::require` authenticated, kept in the request's
//! extensions for the handlers that file sessions under it and count its allowances.

use std::sync::Arc;

use actix_web::HttpMessage;
use mcp_gen_ui_actors::session::table::Owner;
use mcp_gen_ui_actors::who::{Source, Who};
use serde_json::Value;

/// Who made a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Principal {
    /// Authentication is off.
    Anonymous,
    /// A static token: its label (for logs), its key (`token_key`, whose it is), and the
    /// person of `server.auth.people` it belongs to, when it is listed there.
    Token { label: String, key: String, person: Option<Arc<str>> },
    /// An OAuth access token: the claim that named it (`sub`, or a client's `client_id` / `azp`
    /// where configured) and its value; whether it grants `mcp-gen-ui:admin`; its claims (for
    /// policy rules); its person in `server.auth.people`, when listed there.
    Jwt { claim: &'static str, id: String, admin_scope: bool, claims: Arc<Value>, person: Option<Arc<str>> },
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Principal::Anonymous => f.write_str("anonymous"),
            Principal::Token { label, person, .. } => match person {
                Some(p) => write!(f, "token {label} (person {p})"),
                None => write!(f, "token {label}"),
            },
            Principal::Jwt { claim, id, person, .. } => match person {
                Some(p) => write!(f, "jwt {claim}={id} (person {p})"),
                None => write!(f, "jwt {claim}={id}"),
            },
        }
    }
}

impl Principal {
    /// Who this is, for owning sessions, refinements and allowances: one key per person of
    /// `server.auth.people`, else per source (a token's label, a JWT's subject or client), so
    /// a label and a subject that spell the same name are never one owner by accident.
    pub fn key(&self) -> String {
        match self {
            Principal::Anonymous => mcp_gen_ui_actors::who::ANONYMOUS.to_string(),
            Principal::Token { person: Some(p), .. } | Principal::Jwt { person: Some(p), .. } => format!("person {p}"),
            Principal::Token { key, .. } => key.clone(),
            Principal::Jwt { claim, id, .. } => format!("jwt {claim}={id}"),
        }
    }

    /// The name rules, secrets, admins and the audit trail know this principal by: its person;
    /// else a token's label (an unlabelled token's digest, `#0707...`, never where it was
    /// configured), a JWT's subject, or `client:<id>` for a client.
    pub fn name(&self) -> String {
        match self {
            Principal::Anonymous => mcp_gen_ui_actors::who::ANONYMOUS.to_string(),
            Principal::Token { person: Some(p), .. } | Principal::Jwt { person: Some(p), .. } => p.to_string(),
            Principal::Token { key, .. } => key.strip_prefix("token ").unwrap_or(key).to_string(),
            Principal::Jwt { claim: "sub", id, .. } => id.clone(),
            Principal::Jwt { id, .. } => format!("client:{id}"),
        }
    }

    /// Who this is, for rules and the audit trail: the key, the name, the claims, the source,
    /// the admin right.
    pub fn who(&self, admin: bool) -> Who {
        let (claims, source) = match self {
            Principal::Anonymous => return (*Who::anonymous()).clone(),
            Principal::Token { .. } => (Arc::new(Value::Object(Default::default())), Source::Token),
            Principal::Jwt { claims, .. } => (claims.clone(), Source::Jwt),
        };
        Who::new(Arc::from(self.key()), Arc::from(self.name()), claims, admin).from_source(source)
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
        let jwt = Principal::Jwt {
            claim: "sub",
            id: "alice".into(),
            admin_scope: false,
            claims: Arc::new(serde_json::json!({"groups": ["ops"]})),
            person: None,
        };
        assert_eq!(jwt.key(), "jwt sub=alice");
        let who = jwt.who(true);
        assert_eq!((&*who.name, who.admin, &who.claims["groups"][0]), ("alice", true, &serde_json::json!("ops")));
        assert_eq!(who.source, Source::Jwt);
        let token = Principal::Token { label: "alice".into(), key: token_key("alice", true, &d), person: None };
        assert_eq!(&*token.who(false).name, "alice", "rules name a labelled token by its label");
        assert_eq!(token.who(false).source, Source::Token);
        assert_ne!(token.key(), jwt.key(), "a label and a subject spelling one name are two owners");
        let unnamed = Principal::Token { label: "--auth-token[0]".into(), key: token_key("--auth-token[0]", false, &d), person: None };
        assert_eq!(&*unnamed.who(false).name, "#070707070707");
    }

    #[test]
    fn a_client_is_named_as_a_client_and_a_person_is_one_key_whatever_the_credential() {
        let client = Principal::Jwt {
            claim: "client_id",
            id: "alice".into(),
            admin_scope: false,
            claims: Arc::new(serde_json::json!({})),
            person: None,
        };
        assert_eq!((client.key().as_str(), client.name().as_str()), ("jwt client_id=alice", "client:alice"));
        let alice: Arc<str> = Arc::from("alice");
        let by_token = Principal::Token { label: "alice-laptop".into(), key: "token alice-laptop".into(), person: Some(alice.clone()) };
        let by_jwt = Principal::Jwt {
            claim: "sub",
            id: "248289761001".into(),
            admin_scope: false,
            claims: Arc::new(serde_json::json!({})),
            person: Some(alice),
        };
        assert_eq!(by_token.key(), by_jwt.key());
        assert_eq!((&*by_token.who(false).name, &*by_jwt.who(false).name), ("alice", "alice"));
        assert_eq!(by_jwt.to_string(), "jwt sub=248289761001 (person alice)");
    }
}
