//! `UpstreamConnection`: the one actor that owns the upstream link, the id and progress-token
//! maps, the tool registry, the upstream's `initialize` answer, and supervision (restart with
//! backoff). Host sessions talk to it with typed messages; it never sees HTTP.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::host_session::{HostEvent, HostSession, ServerRequest};
use crate::jsonrpc::{self, code, Kind};
use crate::metrics::{method_label, Metrics};
use crate::routes::Routes;
use crate::tool_refresh::{self, ToolsDiff};
use crate::upstream::{self, LinkEvent, LinkGuard, LinkLimits, UpstreamSpec};

pub use crate::routes::SessionId;

/// The protocol revision we ask the upstream for; it may answer with another it supports.
pub const UPSTREAM_PROTOCOL_VERSION: &str = "2025-11-25";
const INIT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a host request waits for a (re)starting upstream before it is answered with an error.
pub const READY_WAIT: Duration = Duration::from_secs(10);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// An upstream that stayed up this long is healthy again: the next failure starts at 1 s.
const STABLE_AFTER: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Connecting,
    Ready,
    Down,
    Stopped,
}

/// A point-in-time view of the upstream for sessions and the edge.
#[derive(Debug, Clone)]
pub struct Status {
    pub ready: bool,
    pub tools: Arc<Vec<Value>>,
    /// The upstream's `initialize` result (capabilities, serverInfo, instructions, ...).
    pub init: Option<Arc<Value>>,
    pub last_error: Option<String>,
    pub restarts: u64,
    pub describe: String,
}

pub struct UpstreamConnection {
    spec: UpstreamSpec,
    metrics: Arc<Metrics>,
    state: State,
    generation: u64,
    link_tx: Option<tokio::sync::mpsc::Sender<Value>>,
    limits: LinkLimits,
    guard: Option<LinkGuard>,
    last_error: Option<String>,
    backoff: Duration,
    ready_since: Option<Instant>,
    restarts: u64,
    /// Request ids, progress tokens and server requests in flight (see `routes`).
    routes: Routes<oneshot::Sender<Value>>,
    ready_waiters: Vec<oneshot::Sender<()>>,
    init: Option<Arc<Value>>,
    tools: Arc<Vec<Value>>,
    sessions: HashMap<SessionId, Addr<HostSession>>,
    /// Upstream resource subscriptions held on behalf of hosts: uri -> number of sessions.
    subscriptions: HashMap<String, usize>,
    /// The session that most recently sent a request: where server-to-client requests go when
    /// no request is in flight.
    last_active: Option<SessionId>,
    /// Told about every change to the tool list (the generation queue drops stale pages).
    listeners: Vec<Recipient<ToolsUpdated>>,
    /// `toolRefresh`: re-list the tools this often (None: only on list_changed and on request).
    refresh_interval: Option<Duration>,
}

impl UpstreamConnection {
    pub fn new(spec: UpstreamSpec, metrics: Arc<Metrics>) -> Self {
        UpstreamConnection {
            spec,
            metrics,
            state: State::Connecting,
            generation: 0,
            link_tx: None,
            limits: LinkLimits::default(),
            guard: None,
            last_error: None,
            backoff: Duration::from_secs(1),
            ready_since: None,
            restarts: 0,
            routes: Routes::default(),
            ready_waiters: Vec::new(),
            init: None,
            tools: Arc::new(Vec::new()),
            sessions: HashMap::new(),
            subscriptions: HashMap::new(),
            last_active: None,
            listeners: Vec::new(),
            refresh_interval: None,
        }
    }

    /// Someone to tell about tool list changes.
    pub fn with_listener(mut self, r: Recipient<ToolsUpdated>) -> Self {
        self.listeners.push(r);
        self
    }

    /// `upstream.requestTimeoutMs` and `upstream.maxMessageBytes`.
    pub fn with_limits(mut self, request_timeout: Duration, limits: LinkLimits) -> Self {
        self.routes = Routes::with_timeout(request_timeout);
        self.limits = limits;
        self
    }

    /// Periodic re-listing of the tools (`toolRefresh.enabled`).
    pub fn with_refresh_interval(mut self, every: Option<Duration>) -> Self {
        self.refresh_interval = every;
        self
    }

    /// Installs a new tool list: diff, broadcast, tell listeners.
    fn apply_tools(&mut self, tools: Vec<Value>) -> ToolsDiff {
        let d = tool_refresh::diff(&self.tools, &tools);
        self.tools = Arc::new(tools);
        if d.is_change() {
            tracing::info!(component = "upstream", event = "tools_changed", added = ?d.added, removed = ?d.removed, changed = ?d.changed, "upstream tool list changed");
            self.broadcast(HostEvent::ToolsChanged);
            for l in &self.listeners {
                l.do_send(ToolsUpdated { diff: d.clone(), tools: self.tools.clone() });
            }
        }
        d
    }

    fn status(&self) -> Status {
        Status {
            ready: self.state == State::Ready,
            tools: self.tools.clone(),
            init: self.init.clone(),
            last_error: self.last_error.clone(),
            restarts: self.restarts,
            describe: self.spec.describe(),
        }
    }

    fn connect(&mut self, ctx: &mut Context<Self>) {
        self.state = State::Connecting;
        self.generation += 1;
        let gen = self.generation;
        let spec = self.spec.clone();
        tracing::info!(component = "upstream", event = "connecting", upstream = %spec.describe(), "connecting to the upstream");
        let limits = self.limits;
        let fut = async move { upstream::connect(&spec, limits).await };
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
            if gen != act.generation || act.state == State::Stopped {
                return;
            }
            match res {
                Ok(link) => {
                    let (tx, rx, guard) = link.split();
                    act.link_tx = Some(tx);
                    act.guard = Some(guard);
                    let stream = futures::StreamExt::map(tokio_stream_from(rx), move |ev| LinkMsg { gen, ev });
                    ctx.add_stream(stream);
                    act.initialize(ctx, gen);
                }
                Err(why) => act.lost(ctx, why),
            }
        }));
    }

    /// initialize -> notifications/initialized -> tools/list (every page) -> Ready.
    fn initialize(&mut self, ctx: &mut Context<Self>, gen: u64) {
        let params = json!({
            "protocolVersion": UPSTREAM_PROTOCOL_VERSION,
            // The proxy answers these by asking a connected host, so it declares them.
            "capabilities": {"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}},
            "clientInfo": {"name": "mcp-gen-ui", "version": env!("CARGO_PKG_VERSION")},
        });
        let rx = self.internal_request("initialize", params);
        let addr = ctx.address();
        let fut = async move {
            let init = await_result(rx, INIT_TIMEOUT, "initialize").await?;
            addr.do_send(SendRaw(jsonrpc::notification("notifications/initialized", Value::Null)));
            let tools = list_all_tools(&addr).await?;
            Ok::<_, String>((init, tools))
        };
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
            if gen != act.generation || act.state == State::Stopped {
                return;
            }
            match res {
                Ok((init, tools)) => act.became_ready(ctx, init, tools),
                Err(why) => act.lost(ctx, why),
            }
        }));
    }

    fn became_ready(&mut self, _ctx: &mut Context<Self>, init: Value, tools: Vec<Value>) {
        let name = init.pointer("/serverInfo/name").and_then(Value::as_str).unwrap_or("?").to_string();
        self.init = Some(Arc::new(init));
        // The first listing just fills the registry; after a restart, hosts hear of changes.
        if self.restarts == 0 && self.tools.is_empty() {
            self.tools = Arc::new(tools);
        } else {
            self.apply_tools(tools);
        }
        self.state = State::Ready;
        self.ready_since = Some(Instant::now());
        self.last_error = None;
        self.metrics.upstream_connected.set(1);
        tracing::info!(component = "upstream", event = "ready", server = %name, tools = self.tools.len(), restarts = self.restarts, "upstream initialized and tools listed");
        for w in self.ready_waiters.drain(..) {
            let _ = w.send(());
        }
        // Subscriptions die with the old connection: take them out again.
        let uris: Vec<String> = self.subscriptions.keys().cloned().collect();
        for uri in uris {
            drop(self.internal_request("resources/subscribe", json!({"uri": uri})));
        }
    }

    /// The link is gone or could not be set up: fail what is in flight, schedule a restart.
    fn lost(&mut self, ctx: &mut Context<Self>, why: String) {
        if self.state == State::Stopped {
            return;
        }
        tracing::warn!(component = "upstream", event = "lost", error = %why, retry_in_ms = self.backoff.as_millis() as u64, "upstream connection lost");
        self.generation += 1;
        self.link_tx = None;
        self.guard = None;
        self.state = State::Down;
        self.metrics.upstream_connected.set(0);
        self.last_error = Some(why.clone());
        let msg = format!("{why}; mcp-gen-ui is restarting the upstream, retry shortly");
        for p in self.routes.fail_all() {
            let id = p.host_id.unwrap_or(Value::Null);
            let _ = p.reply.send(jsonrpc::error_with_data(
                id,
                code::UPSTREAM_UNAVAILABLE,
                msg.clone(),
                json!({"upstream": self.spec.describe()}),
            ));
        }
        if self.ready_since.is_some_and(|t| t.elapsed() >= STABLE_AFTER) {
            self.backoff = Duration::from_secs(1);
        }
        self.ready_since = None;
        let delay = self.backoff;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        ctx.run_later(delay, |act, ctx| {
            if act.state == State::Down {
                act.restarts += 1;
                act.metrics.upstream_restarts.inc();
                act.connect(ctx);
            }
        });
    }

    /// Queues a message for the upstream. Refuses when the link is down or its queue is full
    /// (an upstream that stopped reading); the error says which, for the host.
    fn send(&mut self, msg: Value) -> Result<(), String> {
        let Some(tx) = &self.link_tx else {
            return Err(self.last_error.clone().unwrap_or_else(|| "the upstream link is closed".into()));
        };
        tx.try_send(msg).map_err(|e| match e {
            tokio::sync::mpsc::error::TrySendError::Full(_) => {
                self.metrics.dropped_messages.with_label_values(&["upstream_queue_full"]).inc();
                format!("the upstream is not reading its input ({} messages are queued); retry later", upstream::LINK_QUEUE)
            }
            tokio::sync::mpsc::error::TrySendError::Closed(_) => "the upstream link is closed".to_string(),
        })
    }

    /// Requests past `upstream.requestTimeoutMs` (progress restarts the wait): the host gets an
    /// error naming the timeout, the upstream a cancellation. Waiters whose caller gave up go too.
    fn expire(&mut self) {
        self.ready_waiters.retain(|w| !w.is_closed());
        let timeout = self.routes.timeout();
        for e in self.routes.expired(Instant::now()) {
            self.metrics.upstream_timeouts.inc();
            tracing::warn!(component = "upstream", event = "request_timeout", method = %e.pending.method, timeout_ms = timeout.as_millis() as u64, "upstream request timed out; cancelled");
            let reason = format!(
                "the upstream did not answer {} within {} ms (upstream.requestTimeoutMs); the request was cancelled",
                e.pending.method,
                timeout.as_millis()
            );
            let _ = self.send(jsonrpc::notification("notifications/cancelled", json!({"requestId": e.up_id, "reason": reason})));
            let id = e.pending.host_id.unwrap_or(Value::Null);
            let _ = e.pending.reply.send(jsonrpc::error(id, code::UPSTREAM_UNAVAILABLE, reason));
        }
    }

    fn internal_request(&mut self, method: &str, params: Value) -> oneshot::Receiver<Value> {
        let (tx, rx) = oneshot::channel();
        let id = self.routes.internal(method, tx);
        if let Err(why) = self.send(jsonrpc::request(id, method, params)) {
            // Answered at once, so the caller does not wait for a timeout.
            if let Some(p) = self.routes.abandon(id) {
                let _ = p.reply.send(jsonrpc::error(json!(id), code::UPSTREAM_UNAVAILABLE, why));
            }
        }
        rx
    }

    fn broadcast(&self, ev: HostEvent) {
        for addr in self.sessions.values() {
            addr.do_send(ev.clone());
        }
    }

    /// `stream_of`: the upstream request whose response stream carried it, if any.
    fn on_message(&mut self, ctx: &mut Context<Self>, msg: Value, stream_of: Option<Value>) {
        if let Value::Array(batch) = msg {
            for m in batch {
                self.on_message(ctx, m, stream_of.clone());
            }
            return;
        }
        match jsonrpc::kind(&msg) {
            Kind::Response => self.on_response(msg),
            Kind::Request => self.on_server_request(ctx, msg, stream_of),
            Kind::Notification => self.on_notification(ctx, msg),
            Kind::Invalid(why) => {
                tracing::warn!(component = "upstream", event = "invalid_message", error = %why, "upstream sent an invalid JSON-RPC message; ignored")
            }
        }
    }

    fn on_response(&mut self, mut msg: Value) {
        let Some(p) = self.routes.answered(&mut msg) else {
            tracing::debug!(
                component = "upstream",
                event = "late_response",
                "answer to a request no longer waited for (cancelled or timed out)"
            );
            return;
        };
        self.metrics.upstream_latency.with_label_values(&[method_label(&p.method)]).observe(p.started.elapsed().as_secs_f64());
        let _ = p.reply.send(msg);
    }

    /// sampling, elicitation, roots, ping: go to the host whose request is in flight.
    fn on_server_request(&mut self, ctx: &mut Context<Self>, msg: Value, stream_of: Option<Value>) {
        let Some(up_id) = jsonrpc::id(&msg).cloned() else { return };
        let method = jsonrpc::method(&msg).unwrap_or_default().to_string();
        if method == "ping" {
            let _ = self.send(jsonrpc::result(up_id, json!({})));
            return;
        }
        // The host whose request's stream carried it; else the host with a request in flight
        // (newest tools/call first); else the last active.
        let on_stream = stream_of.and_then(|r| self.routes.host_of(&r));
        let target = on_stream
            .or_else(|| self.routes.target())
            .and_then(|(s, related)| self.sessions.get(&s).map(|a| (s, a.clone(), Some(related))))
            .or_else(|| {
                let s = self.last_active.clone()?;
                let a = self.sessions.get(&s)?.clone();
                Some((s, a, None))
            });
        let Some((session, addr, related)) = target else {
            let answer = if method == "roots/list" {
                jsonrpc::result(up_id, json!({"roots": []}))
            } else {
                jsonrpc::error(up_id, code::METHOD_NOT_FOUND, format!("no connected host can answer {method} right now"))
            };
            let _ = self.send(answer);
            return;
        };
        let host_side_id = self.routes.server_request(&session, up_id.clone());
        let mut out = msg;
        out["id"] = json!(host_side_id);
        let gen = self.generation;
        let fut = addr.send(ServerRequest { msg: out, related });
        ctx.spawn(fut.into_actor(self).map(move |res, act, _| {
            act.routes.server_request_done(&host_side_id);
            if gen != act.generation {
                return;
            }
            let mut answer = match res {
                Ok(a) => a,
                Err(_) => jsonrpc::error(Value::Null, code::INTERNAL_ERROR, "the host session closed before it answered"),
            };
            answer["id"] = up_id;
            let _ = act.send(answer);
        }));
    }

    fn on_notification(&mut self, ctx: &mut Context<Self>, msg: Value) {
        let method = jsonrpc::method(&msg).unwrap_or_default().to_string();
        match method.as_str() {
            "notifications/progress" => {
                if let Some(p) = self.routes.progress(&msg) {
                    if let Some(addr) = self.sessions.get(&p.session) {
                        addr.do_send(HostEvent::Notify { msg: p.msg, related: Some(p.related) });
                    }
                }
            }
            "notifications/cancelled" => {
                // The upstream withdrew a request it sent to a host: map its id to ours.
                let Some(up_id) = msg.pointer("/params/requestId") else {
                    return;
                };
                if let Some((session, host_side_id)) = self.routes.server_request_cancelled(up_id) {
                    if let Some(addr) = self.sessions.get(&session) {
                        let mut out = msg.clone();
                        out["params"]["requestId"] = json!(host_side_id);
                        addr.do_send(HostEvent::Notify { msg: out, related: None });
                    }
                }
            }
            "notifications/tools/list_changed" => self.refresh_tools(ctx),
            "notifications/resources/updated" => {
                let uri = msg.pointer("/params/uri").and_then(Value::as_str).unwrap_or_default().to_string();
                self.broadcast(HostEvent::ResourceUpdated { uri, msg });
            }
            _ => self.broadcast(HostEvent::Notify { msg, related: None }),
        }
    }

    /// Re-lists tools; hosts hear `tools/list_changed` once the new list is in place.
    fn refresh_tools(&mut self, ctx: &mut Context<Self>) {
        let addr = ctx.address();
        let gen = self.generation;
        ctx.spawn(async move { list_all_tools(&addr).await }.into_actor(self).map(move |res, act, _| {
            if gen != act.generation {
                return;
            }
            match res {
                Ok(tools) => {
                    act.apply_tools(tools);
                }
                Err(why) => {
                    tracing::warn!(component = "upstream", event = "tools_refresh_failed", error = %why, "could not re-list upstream tools")
                }
            }
        }));
    }
}

fn tokio_stream_from(mut rx: tokio::sync::mpsc::Receiver<LinkEvent>) -> impl futures::Stream<Item = LinkEvent> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

async fn await_result(rx: oneshot::Receiver<Value>, limit: Duration, what: &str) -> Result<Value, String> {
    let msg = match tokio::time::timeout(limit, rx).await {
        Err(_) => return Err(format!("the upstream did not answer {what} within {} s", limit.as_secs())),
        Ok(Err(_)) => return Err(format!("the upstream connection closed during {what}")),
        Ok(Ok(m)) => m,
    };
    if let Some(err) = msg.get("error") {
        let text = err.get("message").and_then(Value::as_str).unwrap_or("unknown error");
        return Err(format!("the upstream answered {what} with an error: {text}"));
    }
    Ok(msg.get("result").cloned().unwrap_or(Value::Null))
}

/// Every page of `tools/list`. A server without tools (no capability) has an empty list.
async fn list_all_tools(addr: &Addr<UpstreamConnection>) -> Result<Vec<Value>, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<Value> = None;
    for _ in 0..1000 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let rx = addr
            .send(InternalRequest { method: "tools/list".into(), params })
            .await
            .map_err(|_| "the upstream actor stopped".to_string())?;
        let res = match await_result(rx, INIT_TIMEOUT, "tools/list").await {
            Ok(r) => r,
            Err(e) if e.contains("Method not found") || e.contains("method not found") => return Ok(tools),
            Err(e) => return Err(e),
        };
        if let Some(page) = res.get("tools").and_then(Value::as_array) {
            tools.extend(page.iter().cloned());
        }
        match res.get("nextCursor") {
            Some(c) if !c.is_null() => cursor = Some(c.clone()),
            _ => return Ok(tools),
        }
    }
    Err("the upstream's tools/list paging did not end after 1000 pages".into())
}

impl Actor for UpstreamConnection {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.connect(ctx);
        // Deadlines are checked a few times per timeout (at most every 250 ms).
        let tick = (self.routes.timeout() / 4).clamp(Duration::from_millis(20), Duration::from_millis(250));
        ctx.run_interval(tick, |act, _| act.expire());
        if let Some(every) = self.refresh_interval {
            let addr = ctx.address();
            let refresher = tool_refresh::periodic(every, move || {
                let addr = addr.clone();
                async move {
                    match addr.send(RefreshTools).await {
                        Ok(Ok(_)) => true,
                        Ok(Err(why)) => {
                            tracing::warn!(component = "upstream", event = "periodic_refresh_failed", error = %why, "periodic tool refresh failed; backing off");
                            false
                        }
                        Err(_) => false,
                    }
                }
            });
            ctx.spawn(refresher.into_actor(self));
        }
    }
}

/// Re-lists the upstream's tools now; answers what changed.
#[derive(Message)]
#[rtype(result = "Result<ToolsDiff, String>")]
pub struct RefreshTools;

impl Handler<RefreshTools> for UpstreamConnection {
    type Result = ResponseActFuture<Self, Result<ToolsDiff, String>>;

    fn handle(&mut self, _: RefreshTools, ctx: &mut Self::Context) -> Self::Result {
        let ready = self.state == State::Ready;
        let why = self.last_error.clone().unwrap_or_else(|| "the upstream is still starting".into());
        let addr = ctx.address();
        let gen = self.generation;
        Box::pin(
            async move {
                if !ready {
                    return Err(format!("the upstream is not connected ({why})"));
                }
                list_all_tools(&addr).await
            }
            .into_actor(self)
            .map(move |res, act, _| {
                let tools = res?;
                if gen != act.generation {
                    return Err("the upstream restarted during the refresh".to_string());
                }
                Ok(act.apply_tools(tools))
            }),
        )
    }
}

/// The tool list changed (refresh, list_changed, reconnect).
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct ToolsUpdated {
    pub diff: ToolsDiff,
    pub tools: Arc<Vec<Value>>,
}

/// Sends an event to every connected host session.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Broadcast(pub HostEvent);

impl Handler<Broadcast> for UpstreamConnection {
    type Result = ();

    fn handle(&mut self, b: Broadcast, _ctx: &mut Self::Context) {
        self.broadcast(b.0);
    }
}

struct LinkMsg {
    gen: u64,
    ev: LinkEvent,
}

impl StreamHandler<LinkMsg> for UpstreamConnection {
    fn handle(&mut self, item: LinkMsg, ctx: &mut Self::Context) {
        if item.gen != self.generation {
            return;
        }
        match item.ev {
            LinkEvent::Message(m) => self.on_message(ctx, m, None),
            LinkEvent::OnStream { msg, request } => self.on_message(ctx, msg, Some(request)),
            LinkEvent::Bad(why) => {
                self.metrics.upstream_bad_frames.inc();
                tracing::warn!(component = "upstream", event = "bad_frame", error = %why, "skipped something the upstream sent that is not JSON-RPC");
            }
            LinkEvent::Oversized { id, bytes } => {
                self.metrics.upstream_bad_frames.inc();
                let limit = self.limits.max_message_bytes;
                let why = upstream::oversized_message(bytes, limit);
                let mut answer = jsonrpc::error(id.clone().unwrap_or(Value::Null), code::UPSTREAM_UNAVAILABLE, why);
                match id {
                    // Goes the way the real answer would have: mapped back to its host.
                    Some(_) => self.on_response(std::mem::take(&mut answer)),
                    None => tracing::warn!(
                        component = "upstream",
                        event = "oversized_unmatched",
                        bytes,
                        limit,
                        "an oversized upstream message named no request; dropped"
                    ),
                }
            }
            LinkEvent::Closed(why) => self.lost(ctx, why),
        }
    }

    // The default stops the actor when a stream ends; a link ending is handled by `Closed`.
    fn finished(&mut self, _ctx: &mut Self::Context) {}
}

/// A host request to forward. The answer carries the host's own id.
#[derive(Message)]
#[rtype(result = "Value")]
pub struct Forward {
    pub session: SessionId,
    pub msg: Value,
}

impl Handler<Forward> for UpstreamConnection {
    type Result = ResponseFuture<Value>;

    fn handle(&mut self, f: Forward, ctx: &mut Self::Context) -> Self::Result {
        let host_id = jsonrpc::id(&f.msg).cloned().unwrap_or(Value::Null);
        self.last_active = Some(f.session.clone());
        if self.state != State::Ready {
            // Wait for the (re)start, then go round again; the wait is bounded.
            let (tx, rx) = oneshot::channel();
            self.ready_waiters.push(tx);
            let addr = ctx.address();
            let why = self.last_error.clone().unwrap_or_else(|| "the upstream is still starting".into());
            return Box::pin(async move {
                match tokio::time::timeout(READY_WAIT, rx).await {
                    Ok(Ok(())) => addr
                        .send(f)
                        .await
                        .unwrap_or_else(|_| jsonrpc::error(host_id.clone(), code::INTERNAL_ERROR, "the upstream actor stopped")),
                    _ => {
                        jsonrpc::error(host_id, code::UPSTREAM_UNAVAILABLE, format!("the upstream is not connected ({why}); retry shortly"))
                    }
                }
            });
        }
        let mut msg = f.msg;
        let (tx, rx) = oneshot::channel();
        let up_id = self.routes.outgoing(&f.session, &mut msg, tx);
        if let Err(why) = self.send(msg) {
            self.routes.abandon(up_id);
            return Box::pin(async move { jsonrpc::error(host_id, code::UPSTREAM_UNAVAILABLE, why) });
        }
        Box::pin(async move {
            // Dropped sender = the host cancelled; the session sends nothing for it.
            rx.await.unwrap_or(Value::Null)
        })
    }
}

/// A host notification to pass on (cancelled, roots/list_changed, ...).
#[derive(Message)]
#[rtype(result = "()")]
pub struct ForwardNotification {
    pub session: SessionId,
    pub msg: Value,
}

impl Handler<ForwardNotification> for UpstreamConnection {
    type Result = ();

    fn handle(&mut self, f: ForwardNotification, _ctx: &mut Self::Context) {
        let mut msg = f.msg;
        if jsonrpc::method(&msg) == Some("notifications/cancelled") {
            let Some(host_req) = msg.pointer("/params/requestId").cloned() else {
                return;
            };
            let Some(up_id) = self.routes.cancel(&f.session, &host_req) else {
                return;
            };
            msg["params"]["requestId"] = up_id;
        }
        let _ = self.send(msg);
    }
}

/// A request of the proxy's own (initialize, tools/list pages, subscriptions).
#[derive(Message)]
#[rtype(result = "oneshot::Receiver<Value>")]
struct InternalRequest {
    method: String,
    params: Value,
}

impl Handler<InternalRequest> for UpstreamConnection {
    type Result = MessageResult<InternalRequest>;

    fn handle(&mut self, r: InternalRequest, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult(self.internal_request(&r.method, r.params))
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct SendRaw(Value);

impl Handler<SendRaw> for UpstreamConnection {
    type Result = ();

    fn handle(&mut self, m: SendRaw, _ctx: &mut Self::Context) {
        let _ = self.send(m.0);
    }
}

#[derive(Message)]
#[rtype(result = "Status")]
pub struct GetStatus;

impl Handler<GetStatus> for UpstreamConnection {
    type Result = MessageResult<GetStatus>;

    fn handle(&mut self, _: GetStatus, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult(self.status())
    }
}

/// Answers once the upstream is ready, or with the reason it is not after `limit`.
#[derive(Message)]
#[rtype(result = "Result<Status, String>")]
pub struct WaitReady {
    pub limit: Duration,
}

impl Handler<WaitReady> for UpstreamConnection {
    type Result = ResponseFuture<Result<Status, String>>;

    fn handle(&mut self, w: WaitReady, ctx: &mut Self::Context) -> Self::Result {
        if self.state == State::Ready {
            let s = self.status();
            return Box::pin(async move { Ok(s) });
        }
        let (tx, rx) = oneshot::channel();
        self.ready_waiters.push(tx);
        let addr = ctx.address();
        let why = self.last_error.clone().unwrap_or_else(|| "the upstream is still starting".into());
        Box::pin(async move {
            match tokio::time::timeout(w.limit, rx).await {
                Ok(Ok(())) => addr.send(GetStatus).await.map_err(|_| "the upstream actor stopped".to_string()),
                _ => Err(format!("the upstream is not connected ({why})")),
            }
        })
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct Register {
    pub session: SessionId,
    pub addr: Addr<HostSession>,
}

impl Handler<Register> for UpstreamConnection {
    type Result = ();

    fn handle(&mut self, r: Register, _ctx: &mut Self::Context) {
        self.sessions.insert(r.session, r.addr);
    }
}

/// A session left: drop its routes and release its upstream subscriptions.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Unregister {
    pub session: SessionId,
    pub subscriptions: Vec<String>,
}

impl Handler<Unregister> for UpstreamConnection {
    type Result = ();

    fn handle(&mut self, u: Unregister, _ctx: &mut Self::Context) {
        self.sessions.remove(&u.session);
        if self.last_active.as_ref() == Some(&u.session) {
            self.last_active = None;
        }
        self.routes.drop_session(&u.session);
        for uri in u.subscriptions {
            self.release_subscription(&uri);
        }
    }
}

impl UpstreamConnection {
    fn release_subscription(&mut self, uri: &str) {
        if let Some(n) = self.subscriptions.get_mut(uri) {
            *n -= 1;
            if *n == 0 {
                self.subscriptions.remove(uri);
                drop(self.internal_request("resources/unsubscribe", json!({"uri": uri})));
            }
        }
    }
}

/// A host subscribes to an upstream resource. The first subscriber's request goes upstream
/// (so its answer, error or not, is the upstream's own); later ones are answered here.
#[derive(Message)]
#[rtype(result = "Value")]
pub struct Subscribe {
    pub session: SessionId,
    pub msg: Value,
}

impl Handler<Subscribe> for UpstreamConnection {
    type Result = ResponseFuture<Value>;

    fn handle(&mut self, s: Subscribe, ctx: &mut Self::Context) -> Self::Result {
        let uri = s.msg.pointer("/params/uri").and_then(Value::as_str).unwrap_or_default().to_string();
        let subscribe = jsonrpc::method(&s.msg) == Some("resources/subscribe");
        let id = jsonrpc::id(&s.msg).cloned().unwrap_or(Value::Null);
        let count = self.subscriptions.get(&uri).copied().unwrap_or(0);
        if subscribe && count > 0 {
            *self.subscriptions.get_mut(&uri).expect("count > 0") += 1;
            return Box::pin(async move { jsonrpc::result(id, json!({})) });
        }
        if !subscribe && count > 1 {
            self.release_subscription(&uri);
            return Box::pin(async move { jsonrpc::result(id, json!({})) });
        }
        let addr = ctx.address();
        Box::pin(async move {
            let answer = addr.send(Forward { session: s.session, msg: s.msg }).await.unwrap_or(Value::Null);
            if answer.get("result").is_some() {
                addr.do_send(CountSubscription { uri, delta: if subscribe { 1 } else { -1 } });
            }
            answer
        })
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct CountSubscription {
    uri: String,
    delta: i64,
}

impl Handler<CountSubscription> for UpstreamConnection {
    type Result = ();

    fn handle(&mut self, c: CountSubscription, _ctx: &mut Self::Context) {
        let n = self.subscriptions.entry(c.uri.clone()).or_insert(0);
        if c.delta > 0 {
            *n += 1;
        } else {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.subscriptions.remove(&c.uri);
            }
        }
    }
}

/// Graceful stop: the link guard closes stdin / ends the HTTP session.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown;

impl Handler<Shutdown> for UpstreamConnection {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Shutdown, ctx: &mut Self::Context) -> Self::Result {
        self.state = State::Stopped;
        self.generation += 1;
        self.link_tx = None;
        self.metrics.upstream_connected.set(0);
        let guard = self.guard.take();
        ctx.stop();
        tracing::info!(component = "upstream", event = "shutdown", "closing the upstream connection");
        // The child gets its stdin closed and a grace period, then its process group is killed.
        Box::pin(async move {
            if let Some(g) = guard {
                g.close(Duration::from_secs(2)).await;
            }
        })
    }
}
