//! The HTTP edge: one port for Streamable HTTP (`/mcp`), legacy HTTP+SSE (`/sse`, `/messages`)
//! and operations (`/healthz`, `/readyz`, `/metrics`). Handlers translate between the wire and
//! actor messages; they hold no state of their own.

// Handlers return `HttpResponse` as the early-exit error: it is what gets sent.
#![allow(clippy::result_large_err)]

pub mod auth;
mod cors;
pub mod forwarded;
pub mod guard;
mod identity;
mod layers;
mod legacy_sse;
pub mod limits;
mod oauth;
mod ops;
mod parts_body;
pub mod preview;
pub mod principal;
mod streamable;
pub mod traces;

use std::sync::Arc;
use std::time::Duration;

use actix_web::{web, HttpRequest, HttpResponse};
use bytes::Bytes;
use futures::StreamExt;
use mcp_gen_ui_actors::mcp::jsonrpc::{self, code};
use mcp_gen_ui_actors::mcp::sse;
use mcp_gen_ui_actors::messages::SessionRef;
use mcp_gen_ui_actors::metrics::Metrics;
use mcp_gen_ui_actors::session::deps::SessionDeps;
use mcp_gen_ui_actors::session::table::{log_name, Lookup, SessionTable};
use mcp_gen_ui_actors::session::{HostSession, Transport};
use mcp_gen_ui_actors::who::Who;
use serde_json::Value;

/// Shared handles: every handler gets the same session table, session dependencies (the
/// servers among them) and settings.
#[derive(Clone)]
pub struct Edge {
    /// What sessions opened here get (its `sessions` is this edge's table).
    pub session: Arc<SessionDeps>,
    pub sessions: Arc<SessionTable>,
    pub metrics: Arc<Metrics>,
    pub allowed_hosts: Arc<Vec<String>>,
    pub allowed_origins: Arc<Vec<String>>,
    pub max_body_bytes: usize,
    /// Comment lines keep idle SSE streams alive through proxies and reveal closed clients.
    pub sse_keepalive: Duration,
    /// `limits.maxSessions`, across /mcp and /sse.
    pub max_sessions: usize,
    /// `limits.maxSessionsPerPrincipal`: one principal's share of them.
    pub max_sessions_per_principal: usize,
    /// `cache.type: redis`: the store shared with other replicas (its state is in /readyz).
    pub shared: Option<mcp_gen_ui_actors::store::redis::RedisStore>,
    /// Stateless (2026-07-28) calls: those alive, and those waiting for their host's retry.
    pub stateless: mcp_gen_ui_actors::session::StatelessTables,
    /// `server.bodyTimeoutSecs`: how long reading one request body may take.
    pub body_timeout: Duration,
    /// `server.maxConnectionsPerClient`, and who holds what.
    pub max_per_client: usize,
    pub per_client: Arc<limits::PerClient>,
    /// `server.trustedProxies`: the only peers whose forwarded headers count.
    pub trusted_proxies: Arc<Vec<crate::config::settings::server::IpRange>>,
    /// `server.sandboxListen` (its port) and `server.sandboxOrigin`: where the preview's
    /// sandbox is served on a host name other than localhost.
    pub sandbox: Option<preview::SandboxPlace>,
}

impl Edge {
    /// The profile of the path (`/mcp/<profile>`, `/sse/<profile>`), checked to exist; None:
    /// the path has none.
    pub fn path_profile(&self, req: &HttpRequest) -> Result<Option<Arc<str>>, HttpResponse> {
        let Some(name) = req.match_info().get("profile") else { return Ok(None) };
        if let Some(p) = self.session.profiles.get(name) {
            return Ok(Some(p.name.clone()));
        }
        let names = self.session.profiles.names();
        let known = match names.is_empty() {
            true => "none (the config file has no profiles)".to_string(),
            false => names.iter().map(|n| format!("/mcp/{n}")).collect::<Vec<_>>().join(", "),
        };
        let shown: String = name.chars().take(64).collect();
        Err(json_error(
            actix_web::http::StatusCode::NOT_FOUND,
            code::INVALID_REQUEST,
            format!("no profile named {shown:?} here: the profiles are {known}"),
        ))
    }

    /// Starts a host session for `who` on this worker's arbiter and files it in the table.
    pub fn open_session(&self, transport: Transport, who: Arc<Who>, profile: Option<Arc<str>>) -> (String, SessionRef) {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let owner = who.key.clone();
        let session = HostSession::new(id.clone(), transport, self.session.clone()).owned_by(who).in_profile(profile).start_session();
        self.sessions.insert(id.clone(), session.clone(), owner);
        (id, session)
    }

    /// The session `id` names, if `owner` opened it. Another principal's session is answered
    /// exactly like one that does not exist (404), and counted.
    pub fn owned_session(&self, id: &str, owner: &str) -> Option<SessionRef> {
        match self.sessions.lookup(id, owner) {
            Lookup::Found(s) => Some(s),
            Lookup::Foreign => {
                self.metrics.refusals.with_label_values(&["foreign_session"]).inc();
                tracing::warn!(component = "edge", event = "foreign_session", session = %log_name(id), principal = %owner, "a request named another principal's session: answered as unknown");
                None
            }
            Lookup::Missing => None,
        }
    }

    /// `limits.maxSessions` and `limits.maxSessionsPerPrincipal`: a new session is refused
    /// with 503 and Retry-After when the table, or the principal's share of it, is full;
    /// sessions already open are untouched. Without auth everyone is one principal, whose
    /// share is the whole table.
    fn session_room(&self, owner: &str) -> Result<(), HttpResponse> {
        let fix = "close one (DELETE /mcp) or let an idle one expire";
        self.room(&self.sessions, owner, "sessions open", fix).map_err(|why| limited(json_error(SERVICE_UNAVAILABLE, code::LIMITED, why)))
    }

    /// The same share of the other era's table: a 2026 call or listen of `owner`'s (`id`)
    /// takes a place among the stateless calls alive, within their share, so that one person's
    /// idle listens never refuse another's call.
    fn stateless_room(&self, owner: &str, id: &serde_json::Value) -> Result<(), HttpResponse> {
        let fix = "end a listen or wait for a call to finish";
        self.room(&self.stateless.live, owner, "stateless calls and listens open", fix).map_err(|why| {
            let body = jsonrpc::error(id.clone(), code::LIMITED, why);
            limited(HttpResponse::build(SERVICE_UNAVAILABLE).content_type("application/json").body(body.to_string()))
        })
    }

    /// Whether `table` has a place for one more of `owner`'s (counted when it has not); Err
    /// says why not.
    fn room(&self, table: &SessionTable, owner: &str, what: &str, fix: &str) -> Result<(), String> {
        if owner != mcp_gen_ui_actors::session::ANONYMOUS && table.count_of(owner) >= self.max_sessions_per_principal {
            self.metrics.refusals.with_label_values(&["max_sessions_per_principal"]).inc();
            return Err(format!("{owner} has {} {what} (limits.maxSessionsPerPrincipal); {fix}", self.max_sessions_per_principal));
        }
        if table.len() < self.max_sessions {
            return Ok(());
        }
        self.metrics.refusals.with_label_values(&["max_sessions"]).inc();
        Err(format!("the service has {} {what} (limits.maxSessions); retry shortly, or {fix}", self.max_sessions))
    }

    /// DNS-rebinding check; `Err` is the response to send.
    fn guard(&self, req: &HttpRequest) -> Result<(), HttpResponse> {
        let header = |n: &str| req.headers().get(n).and_then(|v| v.to_str().ok());
        guard::check(header("host"), header("origin"), &self.allowed_hosts, &self.allowed_origins)
            .map_err(|why| json_error(actix_web::http::StatusCode::FORBIDDEN, code::INVALID_REQUEST, why.to_string()))
    }

    /// Reads the body up to the cap; over it answers 413 with a JSON-RPC error, not "bad JSON".
    async fn read_body(&self, req: &HttpRequest, mut payload: web::Payload) -> Result<Bytes, HttpResponse> {
        let too_big = || {
            json_error(
                actix_web::http::StatusCode::PAYLOAD_TOO_LARGE,
                code::PAYLOAD_TOO_LARGE,
                format!("request body is larger than the {} byte limit (server.maxBodyBytes)", self.max_body_bytes),
            )
        };
        let declared =
            req.headers().get(actix_web::http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok());
        if declared.is_some_and(|n| n > self.max_body_bytes) {
            return Err(too_big());
        }
        let read = async {
            let unreadable = |e| {
                json_error(actix_web::http::StatusCode::BAD_REQUEST, code::PARSE_ERROR, format!("could not read the request body: {e}"))
            };
            // A body in one chunk (a small request's usual case) is taken as it is, not copied.
            let first = match payload.next().await {
                None => return Ok(Bytes::new()),
                Some(chunk) => chunk.map_err(unreadable)?,
            };
            if first.len() > self.max_body_bytes {
                return Err(too_big());
            }
            let mut next = match payload.next().await {
                None => return Ok(first),
                more => more,
            };
            let mut body = web::BytesMut::from(&first[..]);
            while let Some(chunk) = next {
                let chunk = chunk.map_err(unreadable)?;
                if body.len() + chunk.len() > self.max_body_bytes {
                    return Err(too_big());
                }
                body.extend_from_slice(&chunk);
                next = payload.next().await;
            }
            Ok(body.freeze())
        };
        // A body already here needs no timer (the usual case: the request came in one read).
        let mut read = std::pin::pin!(read);
        if let std::task::Poll::Ready(done) = futures::poll!(read.as_mut()) {
            return done;
        }
        // A body that trickles in would hold a connection (and a file descriptor) for good.
        match tokio::time::timeout(self.body_timeout, read).await {
            Ok(done) => done,
            Err(_) => {
                self.metrics.refusals.with_label_values(&["body_timeout"]).inc();
                Err(json_error(
                    actix_web::http::StatusCode::REQUEST_TIMEOUT,
                    code::INVALID_REQUEST,
                    format!("the request body did not arrive within {} s (server.bodyTimeoutSecs)", self.body_timeout.as_secs()),
                ))
            }
        }
    }
}

/// A refusal for want of room, with when to try again.
fn limited(mut res: HttpResponse) -> HttpResponse {
    res.headers_mut().insert(actix_web::http::header::RETRY_AFTER, actix_web::http::header::HeaderValue::from_static("5"));
    res
}

const SERVICE_UNAVAILABLE: actix_web::http::StatusCode = actix_web::http::StatusCode::SERVICE_UNAVAILABLE;

impl Edge {
    /// The body's JSON-RPC messages (one, or a batch); `Err` is the response to send (413 over
    /// the cap, 400 with a parse error).
    async fn read_messages(&self, req: &HttpRequest, payload: web::Payload) -> Result<Vec<Value>, HttpResponse> {
        let body = self.read_body(req, payload).await?;
        jsonrpc::parse_body(&body, self.session.limits.max_batch)
            .map_err(|why| json_error(actix_web::http::StatusCode::BAD_REQUEST, why.code(), why.to_string()))
    }
}

/// A message of this HTTP request for its session: with the request's id, its span and who the
/// edge authenticated it as.
pub fn incoming(
    req: &HttpRequest,
    msg: serde_json::Value,
    sink: Option<mcp_gen_ui_actors::messages::Sink>,
) -> mcp_gen_ui_actors::messages::Incoming {
    mcp_gen_ui_actors::messages::Incoming {
        msg,
        sink,
        request_id: request_id(req),
        trace: traces::cx(req),
        caller: Some(auth::caller_who(req)),
    }
}

/// The request id for a message: the host's `x-request-id` when it is a sane token, else new.
static REQUEST_ID_HEADER: actix_web::http::header::HeaderName = actix_web::http::header::HeaderName::from_static("x-request-id");

pub fn request_id(req: &HttpRequest) -> String {
    if let Some(id) = traces::request_id(req) {
        return id; // the one the edge span carries
    }
    req.headers()
        .get(&REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 64 && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .map(str::to_string)
        .unwrap_or_else(fresh_request_id)
}

/// A request id nobody gave: this process's random prefix and a counter (unique within the
/// process and across its restarts and replicas; no random draw per request).
fn fresh_request_id() -> String {
    static PREFIX: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| uuid::Uuid::new_v4().simple().to_string()[..16].to_string());
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    // Written by hand: `format!` was most of this function's cost, on every message.
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut id = String::with_capacity(PREFIX.len() + 16);
    id.push_str(&PREFIX);
    id.extend((0..16).rev().map(|i| char::from(b"0123456789abcdef"[((n >> (i * 4)) & 0xf) as usize])));
    id
}

pub fn json_error(status: actix_web::http::StatusCode, code: i64, message: impl Into<String>) -> HttpResponse {
    HttpResponse::build(status).content_type("application/json").body(jsonrpc::error(Value::Null, code, message).to_string())
}

/// An SSE body from a channel of messages, with an optional first event and keep-alives.
/// `priming` sends an event with an id and empty data first (SEP-1699: lets clients resume).
pub fn sse_body(
    rx: mcp_gen_ui_actors::messages::SinkRx,
    first: Option<String>,
    stream_id: String,
    keepalive: Duration,
) -> impl futures::Stream<Item = Result<Bytes, actix_web::Error>> {
    enum Item {
        Msg(Option<Value>),
        Tick,
    }
    // Yields every message, then one `Msg(None)` when the channel closes, then ends.
    let messages = futures::stream::unfold(Some(rx), |state| async move {
        let mut rx = state?;
        match rx.recv().await {
            Some(v) => Some((Item::Msg(Some(v)), Some(rx))),
            None => Some((Item::Msg(None), None)),
        }
    });
    let ticks = futures::stream::unfold((), move |_| async move {
        tokio::time::sleep(keepalive).await;
        Some((Item::Tick, ()))
    });
    let mut n: u64 = 0;
    let merged = futures::stream::select(messages, ticks).take_while(|i| futures::future::ready(!matches!(i, Item::Msg(None))));
    let body = merged.map(move |item| {
        let text = match item {
            Item::Msg(Some(v)) => {
                n += 1;
                let data = v.to_string();
                drop(v);
                mcp_gen_ui_actors::process::memory::after_answer(data.len());
                sse::format(Some("message"), Some(&format!("{stream_id}-{n}")), &data)
            }
            Item::Msg(None) => String::new(),
            Item::Tick => ": keep-alive\n\n".to_string(),
        };
        Ok(Bytes::from(text))
    });
    futures::stream::iter(first.map(|f| Ok(Bytes::from(f)))).chain(body)
}

/// The Streamable HTTP endpoint at `path`.
fn streamable_http(path: &str) -> impl actix_web::dev::HttpServiceFactory {
    use actix_web::middleware::from_fn;
    web::resource(path).wrap(from_fn(layers::mcp_endpoint)).route(web::route().to(streamable::endpoint))
}

/// The routes. Resources wrapped in `auth::require` need a bearer token when authentication
/// is on (an `auth::Auth` in the app data); the rest are open (see `auth.rs` for /preview).
/// Every route but `/healthz` counts against its client's `server.maxConnectionsPerClient`:
/// `limits::per_client` wraps the app (`serve.rs`), not a scope, since a scope is one more boxed
/// service on every request.
pub fn configure(cfg: &mut web::ServiceConfig) {
    use actix_web::middleware::from_fn;
    cfg.service(web::resource("/healthz").route(web::get().to(ops::healthz)))
        // `/mcp` on its own: a static path is matched without the regex a pattern with a
        // segment needs (about 1% of a proxied call's CPU).
        .service(streamable_http("/mcp"))
        .service(streamable_http("/mcp/{profile}"))
        .service(web::resource(["/sse", "/sse/{profile}"]).wrap(from_fn(layers::mcp_endpoint)).route(web::get().to(legacy_sse::open)))
        .service(web::resource("/messages").wrap(from_fn(layers::mcp_endpoint)).route(web::post().to(legacy_sse::post)))
        .service(web::resource("/preview").route(web::get().to(preview::page)))
        .service(web::resource("/preview/sandbox").route(web::get().to(preview::sandbox)))
        .service(web::resource("/readyz").route(web::get().to(ops::readyz)))
        .service(web::resource("/metrics").wrap(from_fn(auth::require_metrics)).route(web::get().to(ops::metrics)))
        .service(
            web::resource(["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"])
                .route(web::get().to(auth::protected_resource)),
        );
}

/// The `server.sandboxListen` listener: the preview's sandbox alone, on an origin of its own.
pub fn configure_sandbox_listener(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/preview/sandbox").route(web::get().to(preview::sandbox)));
}

/// The `--metrics-listen` listener: /metrics and /healthz only, never authenticated.
pub fn configure_metrics_listener(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/metrics").route(web::get().to(ops::metrics)))
        .service(web::resource("/healthz").route(web::get().to(ops::healthz)));
}

#[cfg(test)]
mod tests {
    #[test]
    fn fresh_request_ids_are_the_prefix_and_the_counter_in_hex() {
        let (a, b) = (super::fresh_request_id(), super::fresh_request_id());
        assert_eq!((a.len(), b.len()), (32, 32));
        assert_eq!(a[..16], b[..16], "one prefix for the process");
        let n = |id: &str| u64::from_str_radix(&id[16..], 16).expect("hex");
        assert!(n(&b) > n(&a), "{a} then {b}");
        assert!(a.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    }
}
