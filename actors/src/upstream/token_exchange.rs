//! RFC 8693 token exchange for a person's connection to a remote server: the caller's OAuth
//! access token is exchanged at the authorization server for one minted for that server
//! (`audience`, `resource`, `scope`), kept until shortly before it expires, asked for again
//! after a 401 (once), never logged and never passed on as it came in. The Streamable HTTP
//! transport asks its [`Bearer`] for the token of each request.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use prometheus::IntCounterVec;
use serde_json::Value;

use super::error::TokenError;
use crate::who::SubjectToken;

/// Where a request's bearer token comes from.
pub trait BearerSource: Send + Sync {
    fn bearer(&self) -> BoxFuture<'_, Result<String, TokenError>>;
    /// The token was refused (a 401): the next `bearer` asks anew.
    fn invalidate(&self);
}

/// A transport's token source; equal only to itself, printed without the token.
#[derive(Clone)]
pub struct Bearer(pub Arc<dyn BearerSource>);

impl PartialEq for Bearer {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for Bearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bearer([exchanged])")
    }
}

/// How a server's tokens are exchanged (`tokenExchange` in the servers file).
#[derive(Clone, PartialEq)]
pub struct ExchangeConfig {
    pub token_endpoint: url::Url,
    pub client_id: String,
    pub client_secret: String,
    pub audience: Option<String>,
    pub resource: Option<String>,
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for ExchangeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExchangeConfig")
            .field("token_endpoint", &self.token_endpoint.origin().ascii_serialization())
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

/// A token is asked for again this long before it expires.
const EARLY: Duration = Duration::from_secs(30);
/// Without `expires_in`, a token is kept this long.
const DEFAULT_LIFE: Duration = Duration::from_secs(300);
const GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN: &str = "urn:ietf:params:oauth:token-type:access_token";

/// One person's exchanged token for one server.
pub struct Exchanged {
    cfg: Arc<ExchangeConfig>,
    client: reqwest::Client,
    /// The person's access token as they last presented it: what is exchanged.
    subject: std::sync::RwLock<SubjectToken>,
    /// The token minted for the server, for `subject` as it was then, until it expires.
    held: tokio::sync::Mutex<Option<(String, Instant)>>,
    /// A 401 came with the held token: the next request exchanges again.
    stale: std::sync::atomic::AtomicBool,
    server: Arc<str>,
    outcomes: IntCounterVec,
}

impl Exchanged {
    pub fn new(cfg: Arc<ExchangeConfig>, subject: SubjectToken, server: Arc<str>, outcomes: IntCounterVec) -> Exchanged {
        let client = crate::process::tls::client_builder()
            .user_agent(concat!("mcp-gen-ui/", env!("CARGO_PKG_VERSION"), " token-exchange"))
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        let subject = std::sync::RwLock::new(subject);
        Exchanged { cfg, client, subject, held: tokio::sync::Mutex::new(None), stale: Default::default(), server, outcomes }
    }

    /// The person came with `token` (a call, a list): from now on it is the one exchanged. A
    /// new one (their old one expired, say) makes the next request exchange again, so a
    /// connection never stays on a token its person no longer holds.
    pub fn present(&self, token: &SubjectToken) {
        let mut subject = self.subject.write().unwrap_or_else(|e| e.into_inner());
        if *subject != *token {
            *subject = token.clone();
            self.stale.store(true, std::sync::atomic::Ordering::Release);
        }
    }

    fn count(&self, outcome: &str) {
        self.outcomes.with_label_values(&[&self.server, outcome]).inc();
    }

    async fn exchange(&self) -> Result<(String, Instant), TokenError> {
        let scope = self.cfg.scopes.join(" ");
        let subject = self.subject.read().unwrap_or_else(|e| e.into_inner()).clone();
        let mut form: Vec<(&str, &str)> = vec![
            ("grant_type", GRANT),
            ("subject_token", &subject.0),
            ("subject_token_type", ACCESS_TOKEN),
            ("requested_token_type", ACCESS_TOKEN),
        ];
        if let Some(a) = &self.cfg.audience {
            form.push(("audience", a));
        }
        if let Some(r) = &self.cfg.resource {
            form.push(("resource", r));
        }
        if !scope.is_empty() {
            form.push(("scope", &scope));
        }
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(&form).finish();
        let sent = self
            .client
            .post(self.cfg.token_endpoint.clone())
            .basic_auth(&self.cfg.client_id, Some(&self.cfg.client_secret))
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body)
            .send()
            .await;
        let resp = sent.map_err(|e| {
            self.count("error");
            TokenError::Unreachable(e.without_url().to_string())
        })?;
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            self.count("refused");
            // Only the OAuth error code: a description could echo what was sent.
            let code: String = body.get("error").and_then(Value::as_str).unwrap_or("no error code").chars().take(64).collect();
            return Err(TokenError::Refused { status: status.as_u16(), code });
        }
        let Some(token) = body.get("access_token").and_then(Value::as_str).filter(|t| !t.is_empty() && t.len() <= 16_384) else {
            self.count("error");
            return Err(TokenError::NoToken);
        };
        let life = body
            .get("expires_in")
            .and_then(Value::as_u64)
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_LIFE)
            .min(Duration::from_secs(86_400));
        self.count("ok");
        Ok((token.to_string(), Instant::now() + life))
    }
}

impl BearerSource for Exchanged {
    fn bearer(&self) -> BoxFuture<'_, Result<String, TokenError>> {
        Box::pin(async move {
            let mut held = self.held.lock().await;
            if self.stale.swap(false, std::sync::atomic::Ordering::AcqRel) {
                *held = None;
            }
            if let Some((t, until)) = held.as_ref() {
                if Instant::now() + EARLY < *until {
                    return Ok(t.clone());
                }
            }
            let (t, until) = self.exchange().await?;
            *held = Some((t.clone(), until));
            Ok(t)
        })
    }

    fn invalidate(&self) {
        self.stale.store(true, std::sync::atomic::Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_token_from_the_person_is_the_one_exchanged_next() {
        let cfg = Arc::new(ExchangeConfig {
            token_endpoint: url::Url::parse("http://127.0.0.1:9/token").unwrap(),
            client_id: "c".into(),
            client_secret: "s".into(),
            audience: None,
            resource: None,
            scopes: Vec::new(),
        });
        let outcomes = IntCounterVec::new(prometheus::Opts::new("x", "x"), &["server", "outcome"]).unwrap();
        let x = Exchanged::new(cfg, SubjectToken(Arc::from("first")), Arc::from("s"), outcomes);
        x.present(&SubjectToken(Arc::from("first")));
        assert!(!x.stale.load(std::sync::atomic::Ordering::Acquire), "the same token keeps what was minted for it");
        x.present(&SubjectToken(Arc::from("second")));
        assert!(x.stale.load(std::sync::atomic::Ordering::Acquire), "a new token is exchanged on the next request");
        assert_eq!(&*x.subject.read().unwrap().0, "second");
    }
}
