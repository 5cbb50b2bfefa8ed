//! Upstream transports: each turns an [`UpstreamSpec`] into a [`Link`], a pair of channels that
//! carry raw JSON-RPC messages to and from the upstream server. The server's supervisor
//! (`servers::supervisor`) owns the link; transports know bytes and HTTP, never MCP semantics
//! beyond what framing needs.

mod error;
pub mod framing;
pub mod pipe_writer;
mod sse_client;
mod stdio;
mod streamable_http;
pub mod token_exchange;

use std::path::PathBuf;

pub use error::{ConnectError, TokenError, UpstreamError};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

/// Where and how to reach the upstream MCP server.
#[derive(Debug, Clone, PartialEq)]
pub enum UpstreamSpec {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<PathBuf>,
    },
    /// `bearer`: each request's `Authorization` from a token source (a person's exchanged
    /// token); None: `headers` only.
    StreamableHttp {
        url: url::Url,
        headers: Vec<(String, String)>,
        bearer: Option<token_exchange::Bearer>,
    },
    Sse {
        url: url::Url,
        headers: Vec<(String, String)>,
    },
}

impl UpstreamSpec {
    /// The transport in one word (spans, logs).
    pub fn transport(&self) -> &'static str {
        match self {
            UpstreamSpec::Stdio { .. } => "stdio",
            UpstreamSpec::StreamableHttp { .. } => "streamable-http",
            UpstreamSpec::Sse { .. } => "sse",
        }
    }

    /// A description safe for logs, `/readyz` and errors sent to hosts: the transport and the
    /// program (file name) or origin only. Arguments, paths and queries may carry tokens.
    pub fn describe(&self) -> String {
        match self {
            UpstreamSpec::Stdio { command, .. } => {
                let program = std::path::Path::new(command).file_name().and_then(|f| f.to_str()).unwrap_or("?");
                format!("stdio: {program}")
            }
            UpstreamSpec::StreamableHttp { url, .. } => format!("streamable-http: {}", origin_of(url)),
            UpstreamSpec::Sse { url, .. } => format!("sse: {}", origin_of(url)),
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

/// scheme://host:port, nothing else of a URL.
pub fn origin_of(url: &url::Url) -> String {
    url.origin().ascii_serialization()
}

/// Messages waiting in either direction of a link. The upstream's reader waits when the
/// supervisor is behind (so a flooding upstream is slowed by its own pipe or TCP window); a
/// full outgoing queue refuses the request with an error (the router's `send`).
pub const LINK_QUEUE: usize = 1024;

/// Limits a transport enforces on what the upstream sends.
#[derive(Debug, Clone, Copy)]
pub struct LinkLimits {
    /// `upstream.maxMessageBytes`: a larger message fails its request instead of growing memory.
    pub max_message_bytes: usize,
}

impl Default for LinkLimits {
    fn default() -> Self {
        LinkLimits { max_message_bytes: 16 * 1024 * 1024 }
    }
}

/// A message on its way to the upstream, serialized by whoever sends it (an HTTP worker), so
/// that the link's one thread only writes bytes. `msg` is kept only for transports that look
/// at it (HTTP: headers, ordering); stdio needs the line alone.
pub struct Outgoing {
    pub msg: Option<Value>,
    /// The JSON text and a newline.
    pub line: Vec<u8>,
}

impl Outgoing {
    pub fn new(msg: Value, keep_json: bool) -> Self {
        let mut line = serde_json::to_vec(&msg).unwrap_or_default();
        line.push(b'\n');
        Outgoing { msg: keep_json.then_some(msg), line }
    }

    /// The JSON text alone (an HTTP body).
    pub fn body(&self) -> &[u8] {
        self.line.strip_suffix(b"\n").unwrap_or(&self.line)
    }
}

/// How messages reach the upstream: a bounded channel to the transport's writer (HTTP), or
/// the child's stdin written by the sender itself (stdio, see `pipe_writer`).
#[derive(Clone)]
pub enum LinkTx {
    Channel(mpsc::Sender<Outgoing>),
    Pipe(std::sync::Arc<pipe_writer::PipeWriter>),
}

/// Why a message did not go.
#[derive(Debug, PartialEq, Eq)]
pub enum SendError {
    /// The upstream is not reading (its queue is at its bound).
    Full,
    Closed,
}

impl LinkTx {
    /// Serializes `msg` on the caller's thread and hands it over.
    pub fn send(&self, msg: Value) -> Result<(), SendError> {
        match self {
            LinkTx::Channel(tx) => tx.try_send(Outgoing::new(msg, true)).map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => SendError::Full,
                mpsc::error::TrySendError::Closed(_) => SendError::Closed,
            }),
            LinkTx::Pipe(pipe) => pipe.send(&Outgoing::new(msg, false).line).map_err(|e| match e {
                pipe_writer::PipeError::Full => SendError::Full,
                pipe_writer::PipeError::Closed => SendError::Closed,
            }),
        }
    }
}

/// Takes over the answers and progress among what the upstream sends, on the reader's own
/// task (no hop through another); what it gives back goes on to the link's channel.
pub type FastPath = std::sync::Arc<dyn Fn(crate::mcp::relayed::Relayed) -> Option<Value> + Send + Sync>;

/// What arrives from the upstream.
#[derive(Debug)]
pub enum LinkEvent {
    Message(Value),
    /// A message the fast path (`FastPath`) already looked at on the transport's reader and
    /// gave back: for the supervisor as it is, never looked at again.
    Passed(Value),
    /// A message that arrived on the response stream of the upstream request `request` (our
    /// upstream-side id): a server-to-client request there belongs to that request's host.
    OnStream {
        msg: Value,
        request: Value,
    },
    /// A line or event that is not a JSON-RPC message: skipped, counted, the link reads on.
    Bad(String),
    /// A message over `upstream.maxMessageBytes`, dropped; `id` is the request it answered, when known.
    Oversized {
        id: Option<Value>,
        bytes: usize,
    },
    /// The connection is gone; the string says why, for the host and the log.
    Closed(String),
}

/// A live connection. Dropping it ends the connection (kills the child, ends the HTTP session).
pub struct Link {
    pub tx: LinkTx,
    pub rx: mpsc::Receiver<LinkEvent>,
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
    pub fn split(self) -> (LinkTx, mpsc::Receiver<LinkEvent>, LinkGuard) {
        (self.tx, self.rx, LinkGuard { guard: self._guard, done: self.done })
    }

    fn new(tx: LinkTx, rx: mpsc::Receiver<LinkEvent>, cancel: CancellationToken, done: tokio::sync::oneshot::Receiver<()>) -> Self {
        Link { tx, rx, _guard: cancel.drop_guard(), done }
    }
}

/// Opens a link. Errors name the cause in words fit for a host.
pub async fn connect(spec: &UpstreamSpec, limits: LinkLimits, fast: Option<FastPath>) -> Result<Link, UpstreamError> {
    let link = match spec {
        UpstreamSpec::Stdio { command, args, env, cwd } => stdio::connect(command, args, env, cwd.as_deref(), limits, fast).await,
        UpstreamSpec::StreamableHttp { url, headers, bearer } => {
            streamable_http::connect(url.clone(), headers.clone(), bearer.clone(), limits).await
        }
        UpstreamSpec::Sse { url, headers } => sse_client::connect(url.clone(), headers.clone(), limits).await,
    };
    Ok(link?)
}

/// The error for a message over the limit, fit for a host.
pub fn oversized_message(bytes: usize, limit: usize) -> String {
    format!("the upstream's answer is {bytes} bytes, over the {limit} byte limit (upstream.maxMessageBytes); it was dropped")
}

/// A request body that reports when the HTTP client has taken all of it for sending, so the next
/// message can start only after this one has left: POSTs on different pooled connections would
/// otherwise race, and a cancellation could overtake its request.
pub(crate) fn body_with_sent_signal(bytes: Vec<u8>) -> (reqwest::Body, tokio::sync::oneshot::Receiver<()>) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let mut state = Some((bytes::Bytes::from(bytes), tx));
    let stream = futures::stream::poll_fn(move |_| match state.take() {
        // The client takes the bytes when it writes the request on its connection.
        Some((b, tx)) => {
            let _ = tx.send(());
            std::task::Poll::Ready(Some(Ok::<_, std::io::Error>(b)))
        }
        None => std::task::Poll::Ready(None),
    });
    (reqwest::Body::wrap_stream(stream), rx)
}

/// How long a message waits for the one before it to leave (a server that stops reading must
/// not stall the link for good).
pub(crate) const ORDER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Reads a response body, refusing to hold more than `limit` bytes.
pub(crate) async fn read_limited(resp: reqwest::Response, limit: usize) -> Result<Result<bytes::Bytes, usize>, reqwest::Error> {
    use futures::StreamExt;
    if resp.content_length().is_some_and(|n| n as usize > limit) {
        return Ok(Err(resp.content_length().unwrap_or(0) as usize));
    }
    let mut body = resp.bytes_stream();
    let mut out = bytes::BytesMut::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        if out.len() + chunk.len() > limit {
            let mut seen = out.len() + chunk.len();
            while let Some(Ok(c)) = body.next().await {
                seen += c.len();
                if seen > limit.saturating_mul(4) {
                    break;
                }
            }
            return Ok(Err(seen));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Ok(out.freeze()))
}

pub(crate) fn header_map(headers: &[(String, String)]) -> Result<reqwest::header::HeaderMap, ConnectError> {
    let mut map = reqwest::header::HeaderMap::new();
    for (k, v) in headers {
        let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| ConnectError::BadHeader(format!("upstream header name {k:?} is not a valid HTTP header name")))?;
        let mut value = reqwest::header::HeaderValue::from_str(v)
            .map_err(|_| ConnectError::BadHeader(format!("the value of upstream header {k:?} is not a valid HTTP header value")))?;
        value.set_sensitive(true);
        map.append(name, value);
    }
    Ok(map)
}

pub(crate) fn http_client(headers: &[(String, String)]) -> Result<reqwest::Client, ConnectError> {
    crate::process::tls::client_builder()
        .default_headers(header_map(headers)?)
        .connect_timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|e| ConnectError::Local { what: "the HTTP client", reason: e.to_string() })
}

/// Describes a reqwest error naming only the origin (paths and queries may hold tokens).
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
        Some(u) => format!("{what} ({})", origin_of(u)),
        None => what.to_string(),
    }
}
