//! OAuth 2.1 resource server: validates bearer JWTs (RS256, ES256, EdDSA) against the
//! authorization server's JWKS for signature, `iss`, `aud`, `exp`, `nbf` and scopes.
//!
//! The JWKS is fetched once (at start, and again while that first load fails, at most every
//! 5 s), cached, and fetched again when a token names a key the cache does not have, at most
//! once a minute: a stream of tokens with made-up key ids cannot turn into a stream of fetches.
//! Keys in a token's header (`jwk`, `jku`, `x5u`) are never used, HMAC keys are never accepted,
//! and a key only verifies the algorithm of its own type (RSA: RS256, EC P-256: ES256,
//! Ed25519: EdDSA).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use sha2::Digest;

use crate::config::settings::OAuthSettings;

/// While the first load fails, it is tried again at most this often.
const RETRY_FIRST_LOAD: Duration = Duration::from_secs(5);
/// Once keys are loaded, an unknown key id fetches the JWKS again at most this often.
pub const REFETCH_INTERVAL: Duration = Duration::from_secs(60);
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_JWKS_BYTES: usize = 1024 * 1024;
/// Clock skew allowed on `exp` and `nbf`.
const LEEWAY_SECS: u64 = 60;

/// Why a token was refused; the text goes to the client and the log, so it never quotes the
/// token or any of its claims.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    Invalid(String),
    MissingScopes(Vec<String>),
}

/// A token that passed: who it names, for the log.
#[derive(Debug, Clone, PartialEq)]
/// Who a valid access token speaks for, whether it grants `mcp-gen-ui:admin`, and its claims
/// (which policy rules may read; never logged).
pub struct Subject {
    /// The claim that named it: `sub`, or (with `clientIdsArePeople`) `client_id` / `azp`.
    pub claim: &'static str,
    /// Its value, whole: printable, 1 to 256 characters.
    pub id: String,
    /// Whether the token grants `mcp-gen-ui:admin`.
    pub admin: bool,
    pub claims: std::sync::Arc<Value>,
}

struct Key {
    kid: Option<String>,
    alg: Algorithm,
    key: DecodingKey,
}

#[derive(Default)]
struct KeyState {
    keys: Arc<Vec<Key>>,
    loaded: bool,
    last_attempt: Option<Instant>,
    last_refetch: Option<Instant>,
}

pub struct OAuth {
    pub settings: OAuthSettings,
    client: reqwest::Client,
    state: RwLock<KeyState>,
    /// One fetch at a time; requests that missed a key wait for it and look again.
    fetching: tokio::sync::Mutex<()>,
    /// Tokens validated lately, by their SHA-256: a host sends the same token with every
    /// request, and checking its signature each time was most of a call's CPU (an RS256
    /// verification is ten times the rest of the path).
    validated: std::sync::Mutex<HashMap<[u8; 32], (Subject, Instant)>>,
}

/// A validated token is taken as valid again for at most this long (never past its `exp`).
const VALIDATED_FOR: Duration = Duration::from_secs(60);
/// Validated tokens remembered at most (past it the table starts again).
const VALIDATED_MAX: usize = 10_000;

/// Whether a JWKS fetch may start at `now`. Before the first successful load: when the last
/// attempt is `RETRY_FIRST_LOAD` old. After it (a token named an unknown key): when the last
/// such refetch is `REFETCH_INTERVAL` old.
pub fn may_fetch(loaded: bool, last_attempt: Option<Instant>, last_refetch: Option<Instant>, now: Instant) -> bool {
    let old_enough = |t: Option<Instant>, d: Duration| t.is_none_or(|t| now.saturating_duration_since(t) >= d);
    if loaded {
        old_enough(last_refetch, REFETCH_INTERVAL)
    } else {
        old_enough(last_attempt, RETRY_FIRST_LOAD)
    }
}

/// The algorithm a JWK verifies, or None for keys this server does not accept (HMAC, other
/// curves, encryption keys, a declared `alg` that disagrees with the key type).
fn key_from_jwk(v: &Value) -> Option<Key> {
    let jwk: Jwk = serde_json::from_value(v.clone()).ok()?;
    if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
        return None;
    }
    let alg = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => Algorithm::ES256,
        AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => Algorithm::EdDSA,
        _ => return None,
    };
    if let Some(declared) = &jwk.common.key_algorithm {
        if declared.to_string() != format!("{alg:?}") {
            return None;
        }
    }
    let key = DecodingKey::from_jwk(&jwk).ok()?;
    Some(Key { kid: jwk.common.key_id.clone(), alg, key })
}

/// Why the JWKS gave no key; the keys held before stay in use.
#[derive(Debug, thiserror::Error)]
enum JwksError {
    #[error("request failed: {0}")]
    Unreachable(String),
    #[error("HTTP {0}")]
    Status(reqwest::StatusCode),
    #[error("larger than {MAX_JWKS_BYTES} bytes")]
    TooLarge,
    #[error("reading the body failed: {0}")]
    Body(String),
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("not a JWKS: no \"keys\" array")]
    NoKeys,
    #[error("none of its {0} keys is an RS256, ES256 or EdDSA signing key")]
    NoneUsable(usize),
}

/// The usable signing keys of a JWKS document.
fn parse_jwks(body: &[u8]) -> Result<Vec<Key>, JwksError> {
    let doc: Value = serde_json::from_slice(body).map_err(|e| JwksError::NotJson(e.to_string()))?;
    let Some(keys) = doc.get("keys").and_then(Value::as_array) else {
        return Err(JwksError::NoKeys);
    };
    let usable: Vec<Key> = keys.iter().filter_map(key_from_jwk).collect();
    if usable.is_empty() {
        return Err(JwksError::NoneUsable(keys.len()));
    }
    Ok(usable)
}

/// The scope that gives a JWT's subject the admin right (refinements for everyone).
pub const ADMIN_SCOPE: &str = "mcp-gen-ui:admin";

/// The scopes a token grants: `scope` (space-separated string) and `scp` (array or string).
pub fn granted_scopes(claims: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if let Some(s) = claims.get("scope").and_then(Value::as_str) {
        out.extend(s.split_whitespace().map(str::to_string));
    }
    match claims.get("scp") {
        Some(Value::Array(a)) => out.extend(a.iter().filter_map(Value::as_str).map(str::to_string)),
        Some(Value::String(s)) => out.extend(s.split_whitespace().map(str::to_string)),
        _ => {}
    }
    out
}

/// A refusal the client can act on; never the library's own message (it may quote claims).
fn explain(e: &jsonwebtoken::errors::Error, s: &OAuthSettings) -> String {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::ExpiredSignature => "the access token has expired (exp)".into(),
        K::ImmatureSignature => "the access token is not valid yet (nbf)".into(),
        K::InvalidAudience => format!("the access token was issued for another audience (aud must include {:?})", s.audience),
        K::InvalidIssuer => format!("the access token was issued by another authorization server (iss must be {:?})", s.issuer),
        K::InvalidSignature => "the access token's signature does not verify with the authorization server's keys".into(),
        K::MissingRequiredClaim(c) => format!("the access token has no {c} claim"),
        K::InvalidClaimFormat(c) => format!("the access token's {c} claim is malformed"),
        K::InvalidAlgorithm => "the access token's algorithm does not match its key".into(),
        _ => "the access token is malformed".into(),
    }
}

/// An error and its causes on one line ("error sending request: ...: scheme is not http").
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

/// Where the JWKS is, for logs: origin and path, never credentials or query.
fn describe_url(u: &url::Url) -> String {
    format!("{}{}", u.origin().ascii_serialization(), u.path())
}

impl OAuth {
    pub fn new(settings: OAuthSettings) -> OAuth {
        let client = mcp_gen_ui_actors::process::tls::client_builder().timeout(FETCH_TIMEOUT).build().unwrap_or_default();
        OAuth {
            settings,
            client,
            state: RwLock::new(KeyState::default()),
            fetching: tokio::sync::Mutex::new(()),
            validated: Default::default(),
        }
    }

    /// The first load, at start, so a wrong URL shows in the log before the first host comes.
    pub async fn preload(&self) {
        let _ = self.keys_for(None, Algorithm::RS256, false).await;
    }

    fn matching(&self, kid: Option<&str>, alg: Algorithm) -> (Arc<Vec<Key>>, Vec<usize>) {
        let keys = self.state.read().expect("key state lock").keys.clone();
        let found = keys
            .iter()
            .enumerate()
            .filter(|(_, k)| k.alg == alg && kid.is_none_or(|want| k.kid.as_deref() == Some(want)))
            .map(|(i, _)| i)
            .collect();
        (keys, found)
    }

    /// The cached keys that may have signed a token with this `kid` and `alg`, fetching the
    /// JWKS when none does and the rate limit allows (`unknown`: count it as a refetch).
    async fn keys_for(&self, kid: Option<&str>, alg: Algorithm, unknown: bool) -> (Arc<Vec<Key>>, Vec<usize>) {
        let (keys, found) = self.matching(kid, alg);
        if !found.is_empty() {
            return (keys, found);
        }
        let _one = self.fetching.lock().await;
        // Someone else may have fetched while this request waited.
        let (keys, found) = self.matching(kid, alg);
        if !found.is_empty() {
            return (keys, found);
        }
        let now = Instant::now();
        {
            let mut st = self.state.write().expect("key state lock");
            if !may_fetch(st.loaded, st.last_attempt, st.last_refetch, now) {
                return (keys, found);
            }
            st.last_attempt = Some(now);
            if st.loaded && unknown {
                st.last_refetch = Some(now);
            }
        }
        let url = describe_url(&self.settings.jwks_url);
        match self.fetch().await {
            Ok(new) => {
                tracing::info!(component = "auth", event = "jwks_loaded", url = %url, keys = new.len(), "OAuth: {} signing keys from {url}", new.len());
                let mut st = self.state.write().expect("key state lock");
                st.keys = Arc::new(new);
                st.loaded = true;
            }
            Err(e) => {
                tracing::warn!(component = "auth", event = "jwks_failed", url = %url, error = %e, "OAuth: cannot load the JWKS from {url}: {e}");
            }
        }
        self.matching(kid, alg)
    }

    async fn fetch(&self) -> Result<Vec<Key>, JwksError> {
        let resp = self
            .client
            .get(self.settings.jwks_url.clone())
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| JwksError::Unreachable(chain(&e.without_url())))?;
        if !resp.status().is_success() {
            return Err(JwksError::Status(resp.status()));
        }
        if resp.content_length().is_some_and(|n| n > MAX_JWKS_BYTES as u64) {
            return Err(JwksError::TooLarge);
        }
        let body = resp.bytes().await.map_err(|e| JwksError::Body(e.without_url().to_string()))?;
        if body.len() > MAX_JWKS_BYTES {
            return Err(JwksError::TooLarge);
        }
        parse_jwks(&body)
    }

    /// Validates a bearer JWT: a key of the JWKS signed it with RS256, ES256 or EdDSA, `iss`
    /// and `aud` match, `exp` is in the future and `nbf` (when present) in the past, give or
    /// take 60 s, and every required scope is granted.
    pub async fn validate(&self, token: &str) -> Result<Subject, Refusal> {
        let digest: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        let now = Instant::now();
        if let Some((subject, until)) = self.validated.lock().unwrap_or_else(|e| e.into_inner()).get(&digest) {
            if now < *until {
                return Ok(subject.clone());
            }
        }
        let subject = self.validate_anew(token).await?;
        let exp = subject.claims.get("exp").and_then(Value::as_u64).unwrap_or(0);
        let unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let until = now + VALIDATED_FOR.min(Duration::from_secs(exp.saturating_sub(unix)));
        let mut table = self.validated.lock().unwrap_or_else(|e| e.into_inner());
        if table.len() >= VALIDATED_MAX {
            table.retain(|_, (_, u)| *u > now);
            if table.len() >= VALIDATED_MAX {
                table.clear();
            }
        }
        table.insert(digest, (subject.clone(), until));
        Ok(subject)
    }

    /// Every check of a token: its header, a key of the JWKS, the signature, the claims.
    async fn validate_anew(&self, token: &str) -> Result<Subject, Refusal> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| Refusal::Invalid("the access token is not a JWT".into()))?;
        if let Some(crit) = critical_extensions(token) {
            // RFC 7515 4.1.11: a header this service does not understand must not be ignored.
            return Err(Refusal::Invalid(format!(
                "the access token's header marks extensions as critical ({crit}), which this service does not understand"
            )));
        }
        if !matches!(header.alg, Algorithm::RS256 | Algorithm::ES256 | Algorithm::EdDSA) {
            return Err(Refusal::Invalid(format!("the access token is signed with {:?}; accepted: RS256, ES256, EdDSA", header.alg)));
        }
        let (keys, found) = self.keys_for(header.kid.as_deref(), header.alg, true).await;
        if found.is_empty() {
            return Err(Refusal::Invalid(match header.kid {
                Some(_) => "the access token names a signing key (kid) that is not in the authorization server's JWKS".into(),
                None => "no key of the authorization server's JWKS can verify the access token".into(),
            }));
        }
        let mut v = Validation::new(header.alg);
        v.set_issuer(&[&self.settings.issuer]);
        v.set_audience(&[&self.settings.audience]);
        v.set_required_spec_claims(&["exp", "iss", "aud"]);
        v.validate_nbf = true;
        v.leeway = LEEWAY_SECS;
        let mut last = None;
        for i in found {
            match jsonwebtoken::decode::<Value>(token, &keys[i].key, &v) {
                Ok(data) => return self.check_scopes(&data.claims),
                // Without a kid several keys may fit: try the next one.
                Err(e) if matches!(e.kind(), jsonwebtoken::errors::ErrorKind::InvalidSignature) => last = Some(e),
                Err(e) => return Err(Refusal::Invalid(explain(&e, &self.settings))),
            }
        }
        Err(Refusal::Invalid(last.map(|e| explain(&e, &self.settings)).unwrap_or_else(|| "the access token is malformed".into())))
    }

    fn check_scopes(&self, claims: &Value) -> Result<Subject, Refusal> {
        let granted = granted_scopes(claims);
        let missing: Vec<String> = self.settings.required_scopes.iter().filter(|s| !granted.contains(s)).cloned().collect();
        if !missing.is_empty() {
            return Err(Refusal::MissingScopes(missing));
        }
        // The subject is a principal (it owns sessions, refinements, allowances): taken whole,
        // never cut or cleaned into someone else's. A client (`client_id`, `azp`) stands for a
        // person only where the operator says so: else a client named `alice` would be alice.
        let claims_to_try: &[&'static str] = if self.settings.client_ids_are_people { &["sub", "client_id", "azp"] } else { &["sub"] };
        let Some((claim, who)) = claims_to_try.iter().find_map(|c| claims.get(*c).and_then(Value::as_str).map(|v| (*c, v))) else {
            return Err(Refusal::Invalid(if self.settings.client_ids_are_people {
                "the access token names no subject (sub, client_id or azp)".into()
            } else {
                "the access token names no person (sub); a client's own token (client_id, azp) is accepted only with server.auth.oauth.clientIdsArePeople".into()
            }));
        };
        if who.is_empty() || who.len() > 256 || who.chars().any(char::is_control) {
            return Err(Refusal::Invalid(format!("the access token's {claim} is not a printable name of 1 to 256 characters")));
        }
        Ok(Subject {
            claim,
            id: who.to_string(),
            admin: granted.iter().any(|s| s == ADMIN_SCOPE),
            claims: std::sync::Arc::new(claims.clone()),
        })
    }
}

/// The `crit` member of a JWT's protected header, when it has one (whatever it lists: this
/// service understands no extension). `decode_header` does not keep it, so the header is read
/// here; its text never reaches a log (names only, bounded).
fn critical_extensions(token: &str) -> Option<String> {
    use base64::Engine;
    let head = token.split('.').next()?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(head.trim_end_matches('=')).ok()?;
    let header: Value = serde_json::from_slice(&bytes).ok()?;
    let crit = header.get("crit")?;
    let names: Vec<String> = match crit.as_array() {
        Some(a) => {
            a.iter().take(8).map(|n| n.as_str().unwrap_or("?").chars().filter(|c| c.is_ascii_graphic()).take(32).collect()).collect()
        }
        None => vec!["(not a list)".into()],
    };
    Some(names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn critical_header_extensions_are_found() {
        use base64::Engine;
        let enc = |v: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let with = format!("{}.e30.sig", enc(json!({"alg": "RS256", "crit": ["x-unknown"], "x-unknown": 1})));
        assert_eq!(critical_extensions(&with).as_deref(), Some("x-unknown"));
        let without = format!("{}.e30.sig", enc(json!({"alg": "RS256", "kid": "k"})));
        assert_eq!(critical_extensions(&without), None);
    }

    #[test]
    fn the_jwks_is_fetched_again_at_most_once_a_minute() {
        let t0 = Instant::now();
        // Before the first load: retried every 5 s while it fails.
        assert!(may_fetch(false, None, None, t0));
        assert!(!may_fetch(false, Some(t0), None, t0 + Duration::from_secs(4)));
        assert!(may_fetch(false, Some(t0), None, t0 + Duration::from_secs(5)));
        // Loaded: the first unknown kid refetches at once, the next only a minute later.
        assert!(may_fetch(true, Some(t0), None, t0 + Duration::from_secs(1)));
        let refetch = t0 + Duration::from_secs(1);
        assert!(!may_fetch(true, Some(refetch), Some(refetch), refetch + Duration::from_secs(59)));
        assert!(may_fetch(true, Some(refetch), Some(refetch), refetch + Duration::from_secs(60)));
    }

    #[test]
    fn scopes_come_from_scope_and_scp() {
        assert_eq!(granted_scopes(&json!({"scope": "a  b"})), vec!["a", "b"]);
        assert_eq!(granted_scopes(&json!({"scp": ["a", "c"]})), vec!["a", "c"]);
        assert_eq!(granted_scopes(&json!({"scp": "d"})), vec!["d"]);
        assert!(granted_scopes(&json!({"sub": "x"})).is_empty());
    }

    #[test]
    fn only_signing_keys_of_the_three_algorithms_are_kept() {
        let ec = json!({"kty": "EC", "crv": "P-256", "kid": "e", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"});
        let ed = json!({"kty": "OKP", "crv": "Ed25519", "kid": "d", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"});
        let rsa = json!({"kty": "RSA", "kid": "r", "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw", "e": "AQAB"});
        let hmac = json!({"kty": "oct", "kid": "h", "k": "c2VjcmV0"});
        let enc = json!({"kty": "RSA", "use": "enc", "kid": "x", "n": rsa["n"], "e": "AQAB"});
        let wrong_alg = json!({"kty": "RSA", "alg": "ES256", "kid": "w", "n": rsa["n"], "e": "AQAB"});
        let p384 = json!({"kty": "EC", "crv": "P-384", "kid": "p", "x": "AAAA", "y": "AAAA"});
        let doc = json!({"keys": [ec, ed, rsa, hmac, enc, wrong_alg, p384, {"kty": "weird"}]}).to_string();
        let keys = parse_jwks(doc.as_bytes()).unwrap();
        let got: Vec<(Option<&str>, Algorithm)> = keys.iter().map(|k| (k.kid.as_deref(), k.alg)).collect();
        assert_eq!(got, vec![(Some("e"), Algorithm::ES256), (Some("d"), Algorithm::EdDSA), (Some("r"), Algorithm::RS256)]);
        assert!(matches!(parse_jwks(br#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#), Err(JwksError::NoneUsable(1))));
        assert!(matches!(parse_jwks(b"[]"), Err(JwksError::NoKeys)));
    }
}
