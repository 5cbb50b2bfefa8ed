//! Streamable HTTP upstream: every outgoing message is a POST; answers come back as JSON or as
//! an SSE stream on that POST; server-initiated messages also arrive on an optional GET stream.
//! A 404 for a known session means the upstream forgot us: the link closes so that the
//! supervisor re-initializes. Messages leave in the order they were sent (each POST starts once
//! the one before it has handed over its body), and what arrives on a POST's own stream is
//! tagged with that request so server-to-client requests reach the right host.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use reqwest::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::StatusCode;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::error::{ConnectError, TokenError};
use super::{
    body_with_sent_signal, describe_http_error, http_client, read_limited, Link, LinkEvent, LinkLimits, Outgoing, LINK_QUEUE, ORDER_WAIT,
};
use crate::mcp::jsonrpc::{self, At};
use crate::mcp::param_headers;
use crate::mcp::revision_2026;
use crate::mcp::sse;
use crate::process::locks::Recover;

mod incoming;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

#[derive(Default)]
struct SessionState {
    session_id: Option<String>,
    protocol_version: Option<String>,
    get_stream_started: bool,
}

struct Shared {
    client: reqwest::Client,
    url: url::Url,
    state: Mutex<SessionState>,
    events: mpsc::Sender<LinkEvent>,
    cancel: CancellationToken,
    limits: LinkLimits,
    /// The arguments each of the upstream's tools marks for `Mcp-Param-*` headers (found once,
    /// from its tools/list entry; tools that mark none are not kept).
    tool_params: Mutex<HashMap<String, param_headers::Marked>>,
    /// Where each request's bearer token comes from (a person's exchanged token), and the last
    /// one it gave (for the GET stream and the DELETE, which follow a POST).
    bearer: Option<super::token_exchange::Bearer>,
    last_token: Mutex<Option<String>>,
}

pub async fn connect(
    url: url::Url,
    headers: Vec<(String, String)>,
    bearer: Option<super::token_exchange::Bearer>,
    limits: LinkLimits,
) -> Result<Link, ConnectError> {
    let client = http_client(&headers)?;
    let (to_up_tx, mut to_up_rx) = mpsc::channel::<Outgoing>(LINK_QUEUE);
    let (events, from_up_rx) = mpsc::channel::<LinkEvent>(LINK_QUEUE);
    let cancel = CancellationToken::new();
    let shared = Arc::new(Shared {
        client,
        url,
        state: Mutex::default(),
        events,
        cancel: cancel.clone(),
        limits,
        tool_params: Mutex::default(),
        bearer,
        last_token: Mutex::default(),
    });

    let s = shared.clone();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let _done = done_tx;
        // Requests in flight: whether each has had its answer or its stream's headers.
        let mut responded: std::collections::HashMap<String, tokio::sync::watch::Receiver<bool>> = std::collections::HashMap::new();
        // Requests in flight: their POSTs, so that a cancellation can close them (the only
        // cancellation a 2026 server hears; a 2025 server gets the notification first).
        let mut posts: std::collections::HashMap<String, tokio::task::AbortHandle> = std::collections::HashMap::new();
        loop {
            tokio::select! {
                _ = s.cancel.cancelled() => break,
                msg = to_up_rx.recv() => {
                    let Some(out) = msg else { break };
                    let bytes = out.body().to_vec();
                    let Some(msg) = out.msg else { continue }; // (this link asks for the JSON)
                    // initialize must finish (and hand us the session id) before anything else
                    // is sent; the actor guarantees that ordering by awaiting its answer. The
                    // rest go in order: each waits until the one before has left, a
                    // notification until it has been answered (202 comes at once; so
                    // `initialized` lands before the next request), and a cancellation until
                    // the request it cancels has been answered or has started its stream.
                    let is_notification = jsonrpc::id(&msg).is_none();
                    let cancels = msg.at("/params/requestId").filter(|_| jsonrpc::method(&msg) == Some("notifications/cancelled")).map(jsonrpc::id_key);
                    if let Some(k) = &cancels {
                        if let Some(mut started) = responded.get(k).cloned() {
                            let _ = tokio::time::timeout(ORDER_WAIT, started.wait_for(|r| *r)).await;
                        }
                    }
                    let request_key = jsonrpc::id(&msg).filter(|_| jsonrpc::method(&msg).is_some()).map(jsonrpc::id_key);
                    let (resp_tx, resp_rx) = tokio::sync::watch::channel(false);
                    if let Some(k) = request_key.clone() {
                        // Requests that have been answered are forgotten as the map grows.
                        if responded.len() >= 1024 {
                            responded.retain(|_, r| !*r.borrow() && r.has_changed().is_ok());
                        }
                        responded.insert(k, resp_rx.clone());
                    }
                    let s2 = s.clone();
                    let (sent_tx, sent_rx) = tokio::sync::oneshot::channel();
                    let task = tokio::spawn(async move { s2.post(msg, bytes, sent_tx, resp_tx).await });
                    if let Some(k) = request_key {
                        if posts.len() >= 1024 {
                            posts.retain(|_, p| !p.is_finished());
                        }
                        posts.insert(k, task.abort_handle());
                    }
                    if is_notification {
                        let mut r = resp_rx;
                        let _ = tokio::time::timeout(ORDER_WAIT, r.wait_for(|r| *r)).await;
                    } else {
                        let _ = tokio::time::timeout(ORDER_WAIT, sent_rx).await;
                    }
                    // The cancelled request's POST is closed once the notification is out.
                    if let Some(post) = cancels.and_then(|k| posts.remove(&k)) {
                        post.abort();
                    }
                }
            }
        }
        s.end_session().await;
    });
    Ok(Link::new(super::LinkTx::Channel(to_up_tx), from_up_rx, cancel, done_rx))
}

/// The spec says 404 for an unknown session, but deployed servers (the TypeScript SDK's among
/// them) answer 400 "No valid session ID provided" after a restart: both mean "initialize again".
fn session_rejected(status: StatusCode, body: &str) -> bool {
    status == StatusCode::NOT_FOUND || (status == StatusCode::BAD_REQUEST && body.to_ascii_lowercase().contains("session"))
}

impl Shared {
    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        let st = self.state.guard();
        let mut rb = self.client.request(method, self.url.clone());
        if let Some(id) = &st.session_id {
            rb = rb.header(SESSION_HEADER, id);
        }
        if let Some(v) = &st.protocol_version {
            rb = rb.header(VERSION_HEADER, v);
        }
        drop(st);
        if let Some(t) = self.last_token.guard().as_deref() {
            rb = rb.bearer_auth(t);
        }
        rb
    }

    /// The bearer token for the next request (None: the connection has no token source).
    async fn token(&self) -> Result<Option<String>, TokenError> {
        let Some(b) = &self.bearer else { return Ok(None) };
        let t = b.0.bearer().await?;
        *self.last_token.guard() = Some(t.clone());
        Ok(Some(t))
    }

    /// Sends one message; `sent` fires once its body has been handed to the connection (or the
    /// attempt ended), which lets the next message start.
    /// `responded` turns true once the upstream has answered the POST (its headers came) or the
    /// attempt failed.
    async fn post(
        self: Arc<Self>,
        msg: Value,
        bytes: Vec<u8>,
        sent: tokio::sync::oneshot::Sender<()>,
        responded: tokio::sync::watch::Sender<bool>,
    ) {
        // With a token source, a 401 asks it for a new token and sends the message once more.
        let again = self.bearer.as_ref().map(|_| (msg.clone(), bytes.clone()));
        if self.clone().post_once(msg, bytes, sent, responded.clone(), again.is_some()).await == Some(StatusCode::UNAUTHORIZED) {
            if let (Some(b), Some((msg, bytes))) = (&self.bearer, again) {
                b.0.invalidate();
                let (sent, _) = tokio::sync::oneshot::channel();
                self.post_once(msg, bytes, sent, responded, false).await;
            }
        }
    }

    /// One attempt; the status when it was 401 and the message could be sent again (the
    /// answer was then not delivered).
    async fn post_once(
        self: Arc<Self>,
        msg: Value,
        bytes: Vec<u8>,
        sent: tokio::sync::oneshot::Sender<()>,
        responded: tokio::sync::watch::Sender<bool>,
        can_retry: bool,
    ) -> Option<StatusCode> {
        let is_request = matches!(jsonrpc::kind(&msg), jsonrpc::Kind::Request);
        // What the answer is to: initialize and tools/list answers teach this link something.
        let asked = jsonrpc::method(&msg).filter(|_| jsonrpc::id(&msg).is_some()).map(str::to_string);
        let id = jsonrpc::id(&msg).cloned();
        let had_session = self.state.guard().session_id.is_some();
        let token = match self.token().await {
            Ok(t) => t,
            Err(why) => {
                let _ = sent.send(());
                responded.send_replace(true);
                self.fail_request(is_request, id, why.to_string()).await;
                return None;
            }
        };
        let resp = self.send_post(&msg, bytes, token.as_deref(), sent).await;
        responded.send_replace(true);
        let resp = match resp {
            Ok(r) => r,
            Err(e) => {
                let why = format!("the upstream did not answer: {}", describe_http_error(&e));
                if e.is_connect() {
                    self.emit(LinkEvent::Closed(why)).await;
                } else {
                    self.fail_request(is_request, id, why).await;
                }
                return None;
            }
        };
        let status = resp.status();
        if asked.as_deref() == Some("initialize") {
            let mut st = self.state.guard();
            st.session_id = resp.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
        }
        if status == StatusCode::NOT_FOUND && had_session {
            self.emit(LinkEvent::Closed("the upstream HTTP session expired (404); re-initializing".into())).await;
            return None;
        }
        if status == StatusCode::UNAUTHORIZED && can_retry {
            return Some(status); // the caller asks for a new token and sends it again
        }
        if !status.is_success() {
            self.error_status(resp, is_request, id, had_session).await;
            return None;
        }
        self.clone().take_answer(resp, is_request, id, asked).await;
        if jsonrpc::method(&msg) == Some("notifications/initialized") {
            self.clone().open_get_stream();
        }
        None
    }

    /// The POST of one message with its headers; `sent` fires once its body has gone.
    async fn send_post(
        &self,
        msg: &Value,
        bytes: Vec<u8>,
        token: Option<&str>,
        sent: tokio::sync::oneshot::Sender<()>,
    ) -> Result<reqwest::Response, reqwest::Error> {
        let len = bytes.len();
        let (body, body_sent) = body_with_sent_signal(bytes);
        let mut rb = self.request(reqwest::Method::POST);
        if let Some(t) = token {
            rb = rb.bearer_auth(t);
        }
        // MCP 2026-07-28 routes by headers that repeat the body; older servers ignore them.
        if let Some(v) = msg.at("/params/_meta").and_then(|m| m.get(revision_2026::META_VERSION)).and_then(Value::as_str) {
            rb = rb.header(VERSION_HEADER, v);
        }
        if let Some(m) = jsonrpc::method(msg) {
            rb = rb.header("mcp-method", param_headers::encode(m));
        }
        if let Some(n) = revision_2026::expected_name(msg) {
            rb = rb.header("mcp-name", param_headers::encode(n));
        }
        for (name, value) in self.param_headers_for(msg) {
            rb = rb.header(name, value);
        }
        for (name, value) in crate::trace::headers_of(msg) {
            rb = rb.header(name, value);
        }
        let send = rb
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .header(reqwest::header::CONTENT_LENGTH, len)
            .body(body)
            .send();
        tokio::pin!(send);
        let mut sent = Some(sent);
        let mut body_sent = body_sent;
        let resp = loop {
            tokio::select! {
                r = &mut send => break r,
                _ = &mut body_sent, if sent.is_some() => {
                    if let Some(s) = sent.take() {
                        let _ = s.send(());
                    }
                }
            }
        };
        if let Some(s) = sent.take() {
            let _ = s.send(());
        }
        resp
    }

    /// A POST answered with an error status: the session gone, the upstream's own JSON-RPC
    /// error, or an error naming the status.
    async fn error_status(&self, resp: reqwest::Response, is_request: bool, id: Option<Value>, had_session: bool) {
        let status = resp.status();
        // Error bodies are read within the message limit too, and only their start is quoted.
        let body = match read_limited(resp, self.limits.max_message_bytes).await {
            Ok(Ok(b)) => String::from_utf8_lossy(&b).into_owned(),
            _ => String::new(),
        };
        if had_session && session_rejected(status, &body) {
            self.emit(LinkEvent::Closed(format!("the upstream no longer knows our HTTP session ({status}); re-initializing"))).await;
            return;
        }
        // A JSON-RPC error body is the upstream's own answer: pass it through as is.
        if let Ok(v) = serde_json::from_str::<Value>(&body) {
            if v.get("error").is_some() && v.get("id").is_some_and(|i| !i.is_null()) {
                self.emit(LinkEvent::Message(v)).await;
                return;
            }
        }
        if is_request && id.is_some() {
            let snippet: String = body.chars().take(300).collect();
            self.fail_request(true, id, format!("the upstream answered HTTP {status}: {snippet}")).await;
        } else {
            tracing::warn!(component = "upstream", event = "post_rejected", status = %status, "upstream rejected a notification or response");
        }
    }

    /// A POST's successful answer: an SSE stream, or JSON (one message or a batch).
    async fn take_answer(self: Arc<Self>, resp: reqwest::Response, is_request: bool, id: Option<Value>, asked: Option<String>) {
        let ctype = resp.headers().get(CONTENT_TYPE).cloned().unwrap_or(HeaderValue::from_static(""));
        let ctype = ctype.to_str().unwrap_or("");
        let stream_of = if is_request { id.clone() } else { None };
        if ctype.starts_with("text/event-stream") {
            self.clone().read_sse(resp, asked, stream_of).await;
        } else if ctype.starts_with("application/json") {
            match read_limited(resp, self.limits.max_message_bytes).await {
                Ok(Ok(b)) if !b.is_empty() => match jsonrpc::parse_body(&b, usize::MAX) {
                    Ok(msgs) => {
                        for m in msgs {
                            self.deliver(m, asked.as_deref(), stream_of.as_ref()).await;
                        }
                    }
                    Err(e) => {
                        self.emit(LinkEvent::Bad(format!("a POST answer is not JSON-RPC: {e}"))).await;
                        self.fail_request(is_request, id, format!("the upstream sent a malformed answer: {e}")).await
                    }
                },
                Ok(Ok(_)) => {}
                Ok(Err(bytes)) => self.emit(LinkEvent::Oversized { id: id.filter(|_| is_request), bytes }).await,
                Err(e) => self.fail_request(is_request, id, format!("the upstream answer broke off: {}", describe_http_error(&e))).await,
            }
        }
    }

    /// Remembers the tools whose arguments travel in `Mcp-Param-*` headers too (from a
    /// tools/list answer), so that calls to them carry those headers.
    fn learn_param_headers(&self, answer: &Value) {
        let Some(tools) = answer.at("/result/tools").and_then(Value::as_array) else { return };
        let mut known = self.tool_params.lock().expect("tool_params lock");
        for t in tools {
            let (Some(name), Some(schema)) = (t.get("name").and_then(Value::as_str), t.get("inputSchema")) else { continue };
            let marked = param_headers::annotations(schema);
            if marked.is_empty() {
                known.remove(name);
            } else if known.len() < 4096 || known.contains_key(name) {
                known.insert(name.to_string(), marked);
            }
        }
    }

    /// The `Mcp-Param-*` headers a tools/call carries (none for other messages).
    fn param_headers_for(&self, msg: &Value) -> Vec<(String, String)> {
        if jsonrpc::method(msg) != Some("tools/call") {
            return Vec::new();
        }
        let p = jsonrpc::params(msg);
        let Some(name) = p.get("name").and_then(Value::as_str) else { return Vec::new() };
        let known = self.tool_params.lock().expect("tool_params lock");
        match known.get(name) {
            Some(marked) => param_headers::headers_from(marked, p.get("arguments").unwrap_or(&Value::Null)),
            None => Vec::new(),
        }
    }

    /// To the actor; waits while it is behind (the upstream's TCP window then slows it down).
    async fn emit(&self, ev: LinkEvent) {
        let _ = self.events.send(ev).await;
    }

    async fn fail_request(&self, is_request: bool, id: Option<Value>, why: String) {
        if let (true, Some(id)) = (is_request, id) {
            self.emit(LinkEvent::Message(jsonrpc::error(id, jsonrpc::code::UPSTREAM_UNAVAILABLE, why))).await;
        }
    }

    /// Best effort: tell the upstream the session is over (DELETE), as the spec asks.
    async fn end_session(&self) {
        if self.state.guard().session_id.is_none() {
            return;
        }
        let req = self.request(reqwest::Method::DELETE).send();
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), req).await;
    }
}

/// Whether `msg` (a message or a batch) holds the answer to request `id`.
fn answers(msg: &Value, id: &Value) -> bool {
    match msg {
        Value::Array(items) => items.iter().any(|m| answers(m, id)),
        m => matches!(jsonrpc::kind(m), jsonrpc::Kind::Response) && jsonrpc::id(m) == Some(id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_rejection_is_recognised() {
        assert!(session_rejected(StatusCode::NOT_FOUND, ""));
        assert!(session_rejected(StatusCode::BAD_REQUEST, r#"{"error":{"message":"Bad Request: No valid session ID provided"}}"#));
        assert!(!session_rejected(StatusCode::BAD_REQUEST, r#"{"error":{"message":"invalid params"}}"#));
        assert!(!session_rejected(StatusCode::INTERNAL_SERVER_ERROR, "session"));
    }
}
