//! Who may use the HTTP edge. Static bearer tokens (flags, MCP_GEN_UI_AUTH_TOKEN, the config
//! file, a tokens file read again on SIGHUP) and OAuth 2.1 access tokens (`oauth.rs`); either
//! kind is accepted when both are configured.
//!
//! `require` is the middleware on the protected resources (/mcp, /sse, /messages), and
//! `require_metrics` on /metrics (admins and the scrape's own tokens when several people can
//! sign in):
//! a request without a valid token gets 401 (403 when an access token lacks a scope) with
//! `WWW-Authenticate: Bearer` (naming the protected-resource metadata when OAuth is on) and a
//! JSON-RPC error that says what is missing and how to send it. Tokens are compared in constant
//! time (SHA-256 digests, `subtle`) and never logged: a log line names the token by where it
//! was configured (`--auth-token[0]`, `server.auth.tokensFile:3`) or a JWT by its subject.
//!
//! The preview page and its sandbox proxy (/preview, /preview/sandbox) are not wrapped: a
//! browser navigation cannot carry a bearer header, and both are fixed shells with no data in
//! them. The page reads the token from `location.hash` (`/preview#token=...`, never sent over
//! the network) and sends it on every /mcp request, which is where the data is.

use std::path::{Path, PathBuf};
use std::sync::RwLock;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderValue, AUTHORIZATION, WWW_AUTHENTICATE};
use actix_web::http::StatusCode;
use actix_web::middleware::Next;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::identity;
use super::json_error;
use super::oauth::{OAuth, Refusal};
use super::principal::token_key;
pub use super::principal::{caller, caller_who, Caller, Principal};
use crate::config::file_error::FileError;
use crate::config::settings::people::People;
use crate::config::settings::AuthSettings;
use crate::config::tokens::{read_tokens_file, Secret, StaticToken};

/// JSON-RPC error code of a refused request (implementation-defined range).
pub const UNAUTHORIZED: i64 = -32003;

/// Whether an address is reachable only from this machine (127.0.0.0/8, ::1, and ::ffff:127.x).
pub fn is_loopback(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => v4.is_loopback(),
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(v6.is_loopback(), |v4| v4.is_loopback()),
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Denied {
    /// No bearer token (no Authorization header, or another scheme).
    Missing,
    /// `Bearer` without a usable token.
    Malformed(&'static str),
    /// A token that is not accepted, and why.
    Invalid(String),
    /// A valid access token without these scopes.
    MissingScopes(Vec<String>),
}

impl Denied {
    fn tag(&self) -> &'static str {
        match self {
            Denied::Missing => "missing",
            Denied::Malformed(_) => "malformed",
            Denied::Invalid(_) => "invalid",
            Denied::MissingScopes(_) => "insufficient_scope",
        }
    }
}

struct Digested {
    label: String,
    /// Whose token it is (`principal::token_key`), made once when the token is read.
    key: String,
    /// Given a label by its configuration (`alice:TOKEN`): only such a token can be a person's.
    named: bool,
    digest: [u8; 32],
}

pub(super) fn digest(t: &str) -> [u8; 32] {
    Sha256::digest(t.as_bytes()).into()
}

fn digested(tokens: &[StaticToken]) -> Vec<Digested> {
    tokens
        .iter()
        .map(|t| {
            let digest = digest(&t.value.0);
            Digested { key: token_key(&t.label, t.named, &digest), label: t.label.clone(), named: t.named, digest }
        })
        .collect()
}

/// The edge's authentication state: immutable but for the tokens file (SIGHUP) and the JWKS
/// cache (inside `OAuth`).
pub struct Auth {
    on: bool,
    fixed: Vec<Digested>,
    file: Option<PathBuf>,
    from_file: RwLock<Vec<Digested>>,
    oauth: Option<OAuth>,
    /// What to send, for refusals: which tokens this service takes.
    hint: String,
    /// `server.auth.admins`: token labels, JWT subjects and people with the admin right.
    admins: Vec<String>,
    /// `server.auth.people`: credentials that are one person.
    people: People,
    /// Digests of the tokens that read `/metrics` only (`server.auth.metricsTokens`).
    metrics: Vec<[u8; 32]>,
    /// Whether more than one person can sign in: then `/metrics`, which names them and their
    /// servers, is for admins and the metrics tokens only.
    several: bool,
}

impl Auth {
    /// No authentication: every request passes as `Anonymous`.
    pub fn off() -> Auth {
        Auth {
            on: false,
            fixed: Vec::new(),
            file: None,
            from_file: RwLock::new(Vec::new()),
            oauth: None,
            hint: String::new(),
            admins: Vec::new(),
            people: People::default(),
            metrics: Vec::new(),
            several: false,
        }
    }

    /// From the settings, plus the token generated for this run when there is one.
    pub fn new(s: &AuthSettings, generated: Option<&Secret>) -> Auth {
        if s.disabled || (!s.configured() && generated.is_none()) {
            return Auth::off();
        }
        let mut fixed = digested(&s.tokens);
        if let Some(g) = generated {
            let d = digest(&g.0);
            fixed.push(Digested {
                label: "generated-at-start".into(),
                key: token_key("generated-at-start", false, &d),
                named: false,
                digest: d,
            });
        }
        let has_static = !fixed.is_empty() || s.tokens_file.is_some();
        let mut hint = Vec::new();
        if generated.is_some() {
            hint.push("the token mcp-gen-ui printed when it started".to_string());
        } else if has_static {
            hint.push(
                "one of the service's tokens (--auth-token, MCP_GEN_UI_AUTH_TOKEN, server.auth.tokens or server.auth.tokensFile)".into(),
            );
        }
        if let Some(o) = &s.oauth {
            hint.push(format!("an OAuth access token from {} (audience {:?})", o.issuer, o.audience));
        }
        Auth {
            on: true,
            admins: s.admins.clone(),
            people: s.people.clone(),
            fixed,
            file: s.tokens_file.clone(),
            from_file: RwLock::new(digested(&s.file_tokens)),
            oauth: s.oauth.clone().map(OAuth::new),
            hint: hint.join(", or "),
            metrics: s.metrics_tokens.iter().map(|t| digest(&t.0)).collect(),
            several: s.several_people(),
        }
    }

    /// Whether the request carries one of the tokens that read `/metrics` only (digests
    /// compared in constant time, every one of them).
    pub(super) fn is_metrics_token(&self, header: Option<&HeaderValue>) -> bool {
        let Some(token) = header
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.trim().split_once(' '))
            .and_then(|(scheme, t)| scheme.eq_ignore_ascii_case("bearer").then_some(t.trim()))
        else {
            return false;
        };
        let d = digest(token);
        self.metrics.iter().fold(false, |found, m| found | bool::from(m.ct_eq(&d)))
    }

    /// Whether `who` may read `/metrics` on the main port: anyone who signs in when only one
    /// person can, else the admins (the metrics tokens are checked before).
    pub(super) fn may_read_metrics(&self, who: &Principal) -> bool {
        !self.several || self.is_admin(who)
    }

    pub fn is_on(&self) -> bool {
        self.on
    }

    pub fn oauth(&self) -> Option<&OAuth> {
        self.oauth.as_ref()
    }

    pub fn tokens_file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// How many static tokens are accepted now.
    pub fn static_count(&self) -> usize {
        self.fixed.len() + self.from_file.read().expect("tokens lock").len()
    }

    /// Reads the tokens file again; on any error the tokens it gave before stay in force.
    pub fn reload(&self) -> Result<usize, FileError> {
        let Some(path) = &self.file else { return Ok(0) };
        let tokens = read_tokens_file(path)?;
        let n = tokens.len();
        *self.from_file.write().expect("tokens lock") = digested(&tokens);
        Ok(n)
    }

    /// Whether `who` has the admin right: `admins` names them (a person, a token's label, a
    /// JWT's subject, also as `sub=...`), or their JWT grants the admin scope. Names are unique
    /// across sources (`authenticate` refuses a clash), so a name here is one principal.
    pub fn is_admin(&self, who: &Principal) -> bool {
        let named = |n: &str| self.admins.iter().any(|a| a == n);
        match who {
            Principal::Anonymous => true,
            Principal::Token { .. } => named(&who.name()),
            Principal::Jwt { admin_scope, claim, id, .. } => *admin_scope || named(&who.name()) || named(&format!("{claim}={id}")),
        }
    }

    /// Whether a static token accepted now carries this label.
    fn has_token_named(&self, label: &str) -> bool {
        let file = self.from_file.read().expect("tokens lock");
        self.fixed.iter().chain(file.iter()).any(|t| t.named && t.label == label)
    }

    /// The label and key of the static token equal to `presented`, comparing digests in
    /// constant time.
    fn match_static(&self, presented: &str) -> Option<(String, String, bool)> {
        let d = digest(presented);
        let file = self.from_file.read().expect("tokens lock");
        let mut found = None;
        for t in self.fixed.iter().chain(file.iter()) {
            if bool::from(t.digest.ct_eq(&d)) && found.is_none() {
                found = Some((t.label.clone(), t.key.clone(), t.named));
            }
        }
        found
    }

    /// Checks an Authorization header value.
    pub async fn authenticate(&self, header: Option<&HeaderValue>) -> Result<Principal, Denied> {
        if !self.on {
            return Ok(Principal::Anonymous);
        }
        let Some(raw) = header else { return Err(Denied::Missing) };
        let Ok(raw) = raw.to_str() else { return Err(Denied::Malformed("the Authorization header is not ASCII")) };
        let raw = raw.trim();
        let (scheme, rest) = raw.split_once(' ').unwrap_or((raw, ""));
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(Denied::Missing);
        }
        let token = rest.trim();
        if token.is_empty() {
            return Err(Denied::Malformed("Bearer is followed by no token"));
        }
        if let Some((label, key, named)) = self.match_static(token) {
            return identity::token_principal(&self.people, label, key, named).map_err(|e| Denied::Invalid(e.to_string()));
        }
        match &self.oauth {
            Some(o) if token.split('.').count() == 3 => match o.validate(token).await {
                Ok(sub) => identity::jwt_principal(&self.people, sub, |name| self.has_token_named(name))
                    .map_err(|e| Denied::Invalid(e.to_string())),
                Err(Refusal::Invalid(why)) => Err(Denied::Invalid(why)),
                Err(Refusal::MissingScopes(m)) => Err(Denied::MissingScopes(m)),
            },
            Some(_) => Err(Denied::Invalid("it is neither one of the service's tokens nor a JWT access token".into())),
            None => Err(Denied::Invalid("it is not one of the service's tokens".into())),
        }
    }

    /// Where clients find the protected-resource metadata: under the configured resource's
    /// origin, else the origin the request came to.
    fn metadata_url(&self, origin: &str) -> String {
        let origin = self
            .oauth
            .as_ref()
            .and_then(|o| o.settings.resource.as_deref())
            .and_then(|r| url::Url::parse(r).ok())
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_else(|| origin.to_string());
        format!("{origin}/.well-known/oauth-protected-resource")
    }

    /// 401 (403 for missing scopes) with the challenge and a JSON-RPC error saying what to send.
    pub fn refusal(&self, d: &Denied, origin: &str) -> HttpResponse {
        let quote = |s: &str| s.replace(['"', '\\'], "'");
        let mut challenge = vec!["Bearer realm=\"mcp-gen-ui\"".to_string()];
        let (status, message) = match d {
            Denied::Missing => (
                StatusCode::UNAUTHORIZED,
                format!(
                    "Unauthorized: this MCP server needs a bearer token and the request has none. Send the header `Authorization: Bearer <token>` with {}.",
                    self.hint
                ),
            ),
            Denied::Malformed(why) => {
                challenge.push("error=\"invalid_request\"".into());
                challenge.push(format!("error_description=\"{}\"", quote(why)));
                (StatusCode::UNAUTHORIZED, format!("Unauthorized: {why}. Send the header `Authorization: Bearer <token>` with {}.", self.hint))
            }
            Denied::Invalid(why) => {
                challenge.push("error=\"invalid_token\"".into());
                challenge.push(format!("error_description=\"{}\"", quote(why)));
                (StatusCode::UNAUTHORIZED, format!("Unauthorized: the bearer token was refused: {why}. Send `Authorization: Bearer <token>` with {}.", self.hint))
            }
            Denied::MissingScopes(missing) => {
                challenge.push("error=\"insufficient_scope\"".into());
                challenge.push(format!("error_description=\"{}\"", quote(&format!("missing scope: {}", missing.join(" ")))));
                let issuer = self.oauth.as_ref().map(|o| o.settings.issuer.as_str()).unwrap_or("the authorization server");
                (
                    StatusCode::FORBIDDEN,
                    format!(
                        "Forbidden: the access token lacks the scope {}; ask {issuer} for a token with the scope \"{}\".",
                        missing.join(" "),
                        self.oauth.as_ref().map(|o| o.settings.required_scopes.join(" ")).unwrap_or_default()
                    ),
                )
            }
        };
        if let Some(o) = &self.oauth {
            if !o.settings.required_scopes.is_empty() {
                challenge.push(format!("scope=\"{}\"", quote(&o.settings.required_scopes.join(" "))));
            }
            challenge.push(format!("resource_metadata=\"{}\"", quote(&self.metadata_url(origin))));
        }
        let mut res = json_error(status, UNAUTHORIZED, message);
        if let Ok(v) = HeaderValue::from_str(&challenge.join(", ")) {
            res.headers_mut().insert(WWW_AUTHENTICATE, v);
        }
        res
    }
}

/// Where the client reached this service (forwarded headers only from trusted proxies); a Host
/// that is not a host name gives the loopback default, never the header's text.
fn origin_of(req: &HttpRequest, edge: Option<&web::Data<super::Edge>>) -> String {
    let trusted = edge.map(|e| e.trusted_proxies.as_slice()).unwrap_or(&[]);
    super::forwarded::reach(req, trusted).map(|r| r.origin()).unwrap_or_else(|| "http://localhost".into())
}

/// The authentication layer of protected resources (in `layers::mcp_endpoint`). Fails closed:
/// without an `Auth` in the app data every request is refused.
pub async fn require<B: MessageBody, Fut>(
    req: ServiceRequest,
    next: impl FnOnce(ServiceRequest) -> Fut,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error>
where
    Fut: std::future::Future<Output = Result<ServiceResponse<B>, actix_web::Error>>,
{
    let Some(auth) = req.app_data::<web::Data<Auth>>().cloned() else {
        let res = json_error(StatusCode::INTERNAL_SERVER_ERROR, UNAUTHORIZED, "authentication is not set up on this listener");
        return Ok(req.into_response(res).map_into_right_body());
    };
    match auth.authenticate(req.headers().get(AUTHORIZATION)).await {
        Ok(Principal::Anonymous) => Ok(next(req).await?.map_into_left_body()),
        Ok(who) => {
            // Whose request this is: sessions it opens are theirs, and so are its allowances.
            let admin = auth.is_admin(&who);
            let mut caller = who.who(admin);
            if matches!(who, Principal::Jwt { .. }) {
                // Kept for RFC 8693 token exchange toward servers that ask for it, nothing else.
                let bearer = req.headers().get(AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.get(7..)).unwrap_or_default();
                caller = caller.with_token(bearer.trim());
            }
            actix_web::HttpMessage::extensions_mut(&req).insert(Caller(std::sync::Arc::new(caller)));
            let path = req.path().to_string();
            // A session starts with GET /sse or a POST /mcp without a session id (initialize):
            // worth a line at info; every other request at debug.
            let opens = path == "/sse"
                || path.starts_with("/sse/")
                || ((path == "/mcp" || path.starts_with("/mcp/"))
                    && req.method() == actix_web::http::Method::POST
                    && !req.headers().contains_key("mcp-session-id"));
            if opens {
                tracing::info!(component = "auth", event = "authenticated", principal = %who, path = %path, "{who} authenticated on {path}");
            } else {
                tracing::debug!(component = "auth", event = "authenticated", principal = %who, path = %path, "{who} authenticated on {path}");
            }
            Ok(next(req).await?.map_into_left_body())
        }
        Err(d) => Ok(refused(req, &auth, &d)),
    }
}

/// A request refused by authentication: logged (never the token), counted, answered with the
/// challenge.
fn refused<B>(req: ServiceRequest, auth: &Auth, d: &Denied) -> ServiceResponse<EitherBody<B>> {
    let peer = req.peer_addr().map(|a| a.ip().to_string()).unwrap_or_default();
    let path = req.path().to_string();
    let why = match d {
        Denied::Invalid(w) => w.clone(),
        Denied::Malformed(w) => w.to_string(),
        Denied::MissingScopes(m) => format!("missing scope {}", m.join(" ")),
        Denied::Missing => "no bearer token".into(),
    };
    tracing::warn!(component = "auth", event = "refused", reason = d.tag(), path = %path, peer = %peer, "refused {} {path} from {peer}: {why}", req.method());
    if let Some(edge) = req.app_data::<web::Data<super::Edge>>() {
        let reason = if matches!(d, Denied::MissingScopes(_)) { "forbidden" } else { "unauthorized" };
        edge.metrics.refusals.with_label_values(&[reason]).inc();
    }
    let origin = origin_of(req.request(), req.app_data::<web::Data<super::Edge>>());
    let mut res = auth.refusal(d, &origin);
    res.headers_mut().insert(actix_web::http::header::VARY, HeaderValue::from_static(super::forwarded::VARY));
    req.into_response(res).map_into_right_body()
}

/// The middleware on `/metrics` of the main port: a metrics token, or a principal who may read
/// it (`Auth::may_read_metrics`). Its series name people (per-person connections) and servers,
/// so with several people an ordinary token gets 403 here, as for anything else not theirs.
pub async fn require_metrics<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
    let Some(auth) = req.app_data::<web::Data<Auth>>().cloned() else {
        let res = json_error(StatusCode::INTERNAL_SERVER_ERROR, UNAUTHORIZED, "authentication is not set up on this listener");
        return Ok(req.into_response(res).map_into_right_body());
    };
    if auth.is_metrics_token(req.headers().get(AUTHORIZATION)) {
        return Ok(next.call(req).await?.map_into_left_body());
    }
    match auth.authenticate(req.headers().get(AUTHORIZATION)).await {
        Ok(who) if auth.may_read_metrics(&who) => Ok(next.call(req).await?.map_into_left_body()),
        Ok(who) => {
            tracing::warn!(component = "auth", event = "refused", reason = "metrics_not_admin", principal = %who, "refused GET /metrics for {who}: not an admin");
            if let Some(edge) = req.app_data::<web::Data<super::Edge>>() {
                edge.metrics.refusals.with_label_values(&["forbidden"]).inc();
            }
            let res = json_error(
                StatusCode::FORBIDDEN,
                UNAUTHORIZED,
                "Forbidden: /metrics names the people and servers of this service, so with several people it is for admins (server.auth.admins) and for the scrape's own token (server.auth.metricsTokens or MCP_GEN_UI_METRICS_TOKEN); or serve it on --metrics-listen",
            );
            Ok(req.into_response(res).map_into_right_body())
        }
        Err(d) => Ok(refused(req, &auth, &d)),
    }
}

/// `/.well-known/oauth-protected-resource` (RFC 9728): the resource, the authorization server
/// that issues its tokens, the scopes, and that tokens go in the Authorization header.
pub async fn protected_resource(req: HttpRequest, edge: web::Data<super::Edge>) -> HttpResponse {
    if let Err(r) = edge.guard(&req) {
        return r;
    }
    let Some(o) = req.app_data::<web::Data<Auth>>().and_then(|a| a.oauth()) else {
        return json_error(
            StatusCode::NOT_FOUND,
            mcp_gen_ui_actors::mcp::jsonrpc::code::INVALID_REQUEST,
            "this server is not an OAuth resource server (server.auth.oauth is not configured)",
        );
    };
    let resource = o.settings.resource.clone().unwrap_or_else(|| format!("{}/mcp", origin_of(&req, Some(&edge))));
    // The resource URL may follow the request's host (a proxy's): caches keep one per host.
    HttpResponse::Ok().insert_header(("cache-control", "max-age=300")).insert_header(("vary", super::forwarded::VARY)).json(json!({
        "resource": resource,
        "authorization_servers": [o.settings.issuer],
        "scopes_supported": o.settings.required_scopes,
        "bearer_methods_supported": ["header"],
        "resource_name": "mcp-gen-ui",
    }))
}

#[cfg(test)]
mod tests;
