//! Who a request is from, as rules and the audit trail see it: the principal's key (what owns
//! sessions, refinements and allowances), its name (a token's label, a JWT's subject), its JWT
//! claims, and whether it is an admin. Made once by the edge per authenticated request.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock};

use serde_json::Value;

/// The principal of every request when authentication is off.
pub const ANONYMOUS: &str = "anonymous";

#[derive(Debug, Clone, PartialEq)]
pub struct Who {
    /// Whose sessions, refinements and allowances these are (`Owner` in the session table).
    pub key: Arc<str>,
    /// As rules name it: a token's label, a JWT's subject; `anonymous` without authentication.
    pub name: Arc<str>,
    /// A JWT's claims (an empty object for a static token or nobody).
    pub claims: Arc<Value>,
    pub admin: bool,
    /// A digest of the claims: decisions cached per principal are cached per these claims
    /// too, so a new token with other groups is decided again.
    pub claims_digest: u64,
    /// The OAuth access token the request came with (for RFC 8693 token exchange only; never
    /// logged, never passed on as it came in).
    pub token: Option<SubjectToken>,
    /// Which kind of credential said who this is: names are unique across sources (the edge
    /// refuses a clash), and rules, audit lines and metrics still say which one it was.
    pub source: Source,
}

/// Where a principal's identity came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Authentication is off.
    Anonymous,
    /// A static bearer token (its label).
    Token,
    /// An OAuth access token (its subject, or a client where that is configured).
    Jwt,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Anonymous => "anonymous",
            Source::Token => "token",
            Source::Jwt => "jwt",
        }
    }
}

/// A caller's access token: printed as `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct SubjectToken(pub Arc<str>);

impl std::fmt::Debug for SubjectToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl Who {
    pub fn new(key: Arc<str>, name: Arc<str>, claims: Arc<Value>, admin: bool) -> Who {
        let claims_digest = digest(&claims);
        Who { key, name, claims, admin, claims_digest, token: None, source: Source::Token }
    }

    /// The same principal, as having come from `source`.
    pub fn from_source(mut self, source: Source) -> Who {
        self.source = source;
        self
    }

    /// The principal, with the access token it presented (a JWT).
    pub fn with_token(mut self, token: &str) -> Who {
        self.token = Some(SubjectToken(Arc::from(token)));
        self
    }

    /// Authentication is off: everyone is one principal, who is an admin.
    pub fn anonymous() -> Arc<Who> {
        static NOBODY: LazyLock<Arc<Who>> = LazyLock::new(|| {
            let name: Arc<str> = Arc::from(ANONYMOUS);
            Arc::new(Who::new(name.clone(), name, Arc::new(Value::Object(Default::default())), true).from_source(Source::Anonymous))
        });
        NOBODY.clone()
    }
}

fn digest(v: &Value) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    // serde_json's text of a value is canonical enough here: the same token gives the same text.
    v.to_string().hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_claims_other_digest() {
        let a = Who::new(Arc::from("k"), Arc::from("n"), Arc::new(serde_json::json!({"groups": ["ops"]})), false);
        let b = Who::new(Arc::from("k"), Arc::from("n"), Arc::new(serde_json::json!({"groups": ["dev"]})), false);
        assert_ne!(a.claims_digest, b.claims_digest);
        assert_eq!(a.claims_digest, Who::new(Arc::from("k"), Arc::from("x"), a.claims.clone(), true).claims_digest);
    }
}
