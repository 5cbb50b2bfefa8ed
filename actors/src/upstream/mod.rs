//! Upstream transports: each turns an [`UpstreamSpec`] into a [`Link`], a pair of channels that
//! carry raw JSON-RPC messages to and from the upstream server. The `UpstreamConnection` actor
//! owns the link; transports know bytes and HTTP, never MCP semantics beyond what framing needs.

mod sse_client;
mod stdio;
mod streamable_http;

use std::path::PathBuf;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

/// Where and how to reach the upstream MCP server.
#[derive(Debug, Clone, PartialEq)]
pub enum UpstreamSpec {
    Stdio { command: String, args: Vec<String>, env: Vec<(String, String)>, cwd: Option<PathBuf> },
    StreamableHttp { url: url::Url, headers: Vec<(String, String)> },
    Sse { url: url::Url, headers: Vec<(String, String)> },
}

impl UpstreamSpec {
    /// A description safe for logs: no header values, no environment values.
    pub fn describe(&self) -> String {
        match self {
            UpstreamSpec::Stdio { command, args, .. } => {
                format!("stdio: {command} {}", args.join(" "))
            }
            UpstreamSpec::StreamableHttp { url, .. } => {
                format!("streamable-http: {}", redact_url(url))
            }
            UpstreamSpec::Sse { url, .. } => format!("sse: {}", redact_url(url)),
        }
    }

    pub fn transport_name(&self) -> &'static str {
        match self {
            UpstreamSpec::Stdio { .. } => "stdio",
            UpstreamSpec::StreamableHttp { .. } => "streamable-http",
            UpstreamSpec::Sse { .. } => "sse",
        }
    }
}

/// URLs may carry credentials (user:pass@ or ?token=); logs get scheme, host, port and path only.
pub fn redact_url(url: &url::Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.set_query(None);
    u.to_string()
}

/// What arrives from the upstream.
#[derive(Debug)]
pub enum LinkEvent {
    Message(Value),
    /// The connection is gone; the string says why, for the host and the log.
    Closed(String),
}

/// A live connection. Dropping it ends the connection (kills the child, ends the HTTP session).
pub struct Link {
    pub tx: mpsc::UnboundedSender<Value>,
    pub rx: mpsc::UnboundedReceiver<LinkEvent>,
    _guard: DropGuard,
    /// Fires once the connection is fully gone (the child reaped, the session deleted).
    done: tokio::sync::oneshot::Receiver<()>,
}

/// Keeps the connection alive; dropping it ends the connection.
pub struct LinkGuard {
    guard: DropGuard,
    done: tokio::sync::oneshot::Receiver<()>,
}

impl LinkGuard {
    /// Ends the connection and resolves once it is fully gone (at most `limit`).
    pub async fn close(self, limit: std::time::Duration) {
        drop(self.guard);
        let _ = tokio::time::timeout(limit, self.done).await;
    }
}

impl Link {
    /// Splits the link so the receiver can become an actor stream while the guard stays owned.
    pub fn split(self) -> (mpsc::UnboundedSender<Value>, mpsc::UnboundedReceiver<LinkEvent>, LinkGuard) {
        (self.tx, self.rx, LinkGuard { guard: self._guard, done: self.done })
    }

    fn new(
        tx: mpsc::UnboundedSender<Value>,
        rx: mpsc::UnboundedReceiver<LinkEvent>,
        cancel: CancellationToken,
        done: tokio::sync::oneshot::Receiver<()>,
    ) -> Self {
        Link { tx, rx, _guard: cancel.drop_guard(), done }
    }
}

/// Opens a link. Errors name the cause in words fit for a host.
pub async fn connect(spec: &UpstreamSpec) -> Result<Link, String> {
    match spec {
        UpstreamSpec::Stdio { command, args, env, cwd } => stdio::connect(command, args, env, cwd.as_deref()).await,
        UpstreamSpec::StreamableHttp { url, headers } => streamable_http::connect(url.clone(), headers.clone()).await,
        UpstreamSpec::Sse { url, headers } => sse_client::connect(url.clone(), headers.clone()).await,
    }
}

pub(crate) fn header_map(headers: &[(String, String)]) -> Result<reqwest::header::HeaderMap, String> {
    let mut map = reqwest::header::HeaderMap::new();
    for (k, v) in headers {
        let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("upstream header name {k:?} is not a valid HTTP header name"))?;
        let mut value = reqwest::header::HeaderValue::from_str(v)
            .map_err(|_| format!("the value of upstream header {k:?} is not a valid HTTP header value"))?;
        value.set_sensitive(true);
        map.append(name, value);
    }
    Ok(map)
}

pub(crate) fn http_client(headers: &[(String, String)]) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .default_headers(header_map(headers)?)
        .connect_timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// Describes a reqwest error without the URL's query (it may hold a token).
pub(crate) fn describe_http_error(e: &reqwest::Error) -> String {
    let what = if e.is_connect() {
        "connection refused or unreachable"
    } else if e.is_timeout() {
        "timed out"
    } else if e.is_body() || e.is_decode() {
        "the response body broke off"
    } else {
        "request failed"
    };
    match e.url() {
        Some(u) => format!("{what} ({})", redact_url(u)),
        None => what.to_string(),
    }
}
