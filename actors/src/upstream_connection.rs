//! `UpstreamConnection`: supervises the upstream. It connects (and reconnects with backoff),
//! initializes, lists the tools and keeps the registry, holds upstream subscriptions on behalf of
//! hosts, and answers what the upstream asks of hosts (sampling, elicitation, roots). The proxy
//! path does not pass through it: it installs the link in the shared [`Router`], whose route
//! table host sessions use directly, and the link's reader hands answers and progress straight
//! to the router. Everything else the upstream says comes here as a typed message.
//!
//! It runs on an arbiter of its own (see `main`), so the link's I/O tasks have a thread that
//! nothing else routes messages on.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::{json, Value};

use crate::contain;
use crate::jsonrpc::{self, code, Kind};
use crate::messages::{
    Broadcast, HostEvent, RefreshTools, ServerRequest, SessionId, Shutdown, Status, Subscribe, ToolsUpdated, Unregister, UpstreamPort,
};
use crate::metrics::Metrics;
use crate::modern;
use crate::ready_pages::ReadyPages;
use crate::router::Router;
use crate::tool_refresh::{self, ToolsDiff};
use crate::upstream::{self, LinkEvent, LinkGuard, LinkLimits, UpstreamSpec};

/// The protocol revision we ask the upstream for; it may answer with another it supports.
pub const UPSTREAM_PROTOCOL_VERSION: &str = "2025-11-25";
const INIT_TIMEOUT: Duration = Duration::from_secs(30);
/// A session-era upstream may ignore a method it does not know rather than refuse it.
const DISCOVER_TIMEOUT: Duration = Duration::from_secs(5);
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

pub struct UpstreamConnection {
    spec: UpstreamSpec,
    router: Arc<Router>,
    metrics: Arc<Metrics>,
    limits: LinkLimits,
    state: State,
    generation: u64,
    guard: Option<LinkGuard>,
    last_error: Option<String>,
    backoff: Duration,
    ready_since: Option<Instant>,
    restarts: u64,
    init: Option<Arc<Value>>,
    tools: Arc<Vec<Value>>,
    /// Upstream resource subscriptions held on behalf of hosts: uri -> the sessions holding it
    /// (a set, so a session leaving releases exactly what it held, however often it asked).
    subscriptions: HashMap<String, HashSet<SessionId>>,
    /// A 2026 upstream's `subscriptions/listen` the proxy holds (its id), carrying list changes
    /// and updates of the subscribed resources.
    listen: Option<Value>,
    self_addr: Option<Addr<UpstreamConnection>>,
    /// Told about every change to the tool list (the generation queue drops stale pages).
    listeners: Vec<Recipient<ToolsUpdated>>,
    /// `toolRefresh`: re-list the tools this often (None: only on list_changed and on request).
    refresh_interval: Option<Duration>,
    /// Ready ui:// results: a changed or removed tool's goes before the new list is published,
    /// so no read of the new list is answered with the old page.
    pages: Option<Arc<ReadyPages>>,
}

impl UpstreamConnection {
    pub fn new(spec: UpstreamSpec, router: Arc<Router>, metrics: Arc<Metrics>) -> Self {
        UpstreamConnection {
            spec,
            router,
            metrics,
            limits: LinkLimits::default(),
            state: State::Connecting,
            generation: 0,
            guard: None,
            last_error: None,
            backoff: Duration::from_secs(1),
            ready_since: None,
            restarts: 0,
            init: None,
            tools: Arc::new(Vec::new()),
            subscriptions: HashMap::new(),
            listen: None,
            self_addr: None,
            listeners: Vec::new(),
            refresh_interval: None,
            pages: None,
        }
    }

    pub fn with_pages(mut self, pages: Option<Arc<ReadyPages>>) -> Self {
        self.pages = pages;
        self
    }

    /// Someone to tell about tool list changes.
    pub fn with_listener(mut self, r: Recipient<ToolsUpdated>) -> Self {
        self.listeners.push(r);
        self
    }

    /// `upstream.maxMessageBytes` (the request timeout lives in the router's table).
    pub fn with_limits(mut self, limits: LinkLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Periodic re-listing of the tools (`toolRefresh.enabled`).
    pub fn with_refresh_interval(mut self, every: Option<Duration>) -> Self {
        self.refresh_interval = every;
        self
    }

    /// The port sessions use to reach this actor.
    pub fn port(addr: &Addr<Self>) -> UpstreamPort {
        UpstreamPort {
            refresh: addr.clone().recipient(),
            broadcast: addr.clone().recipient(),
            unregister: addr.clone().recipient(),
            subscribe: addr.clone().recipient(),
        }
    }

    /// Tells the router (and so every session and the edge) what the upstream looks like now.
    fn publish(&self) {
        self.router.publish(Status {
            ready: self.state == State::Ready,
            tools: self.tools.clone(),
            init: self.init.clone(),
            last_error: self.last_error.clone(),
            restarts: self.restarts,
            describe: self.spec.describe(),
        });
    }

    /// Installs a new tool list: diff, broadcast, tell listeners.
    fn apply_tools(&mut self, tools: Vec<Value>) -> ToolsDiff {
        let d = tool_refresh::diff(&self.tools, &tools);
        self.tools = Arc::new(tools);
        if let Some(p) = &self.pages {
            for name in d.removed.iter().chain(d.changed.iter()) {
                p.invalidate(name);
            }
        }
        self.publish();
        if d.is_change() {
            tracing::info!(component = "upstream", event = "tools_changed", added = ?d.added, removed = ?d.removed, changed = ?d.changed, "upstream tool list changed");
            self.router.broadcast(HostEvent::ToolsChanged);
            for l in &self.listeners {
                l.do_send(ToolsUpdated { diff: d.clone(), tools: self.tools.clone() });
            }
        }
        d
    }

    fn connect(&mut self, ctx: &mut Context<Self>) {
        self.state = State::Connecting;
        self.generation += 1;
        let gen = self.generation;
        let spec = self.spec.clone();
        tracing::info!(component = "upstream", event = "connecting", upstream = %spec.describe(), "connecting to the upstream");
        let limits = self.limits;
        // Answers and progress are routed on the link's reader task itself (no hop).
        let router = self.router.clone();
        let fast: upstream::FastPath = Arc::new(move |msg| fast_path(&router, msg));
        let fut = async move { upstream::connect(&spec, limits, Some(fast)).await };
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
            if gen != act.generation || act.state == State::Stopped {
                return;
            }
            match res {
                Ok(link) => {
                    let (tx, rx, guard) = link.split();
                    act.router.set_link(Some(tx));
                    act.guard = Some(guard);
                    // The reader side: answers and progress go straight to the router (no
                    // mailbox hop); the rest comes to this actor.
                    let (router, addr) = (act.router.clone(), ctx.address());
                    tokio::spawn(dispatch(rx, router, addr, gen));
                    act.initialize(ctx, gen);
                }
                Err(why) => act.lost(ctx, why),
            }
        }));
    }

    /// server/discover (MCP 2026-07-28), else initialize -> notifications/initialized; then
    /// tools/list (every page) -> Ready. The era is found again on every (re)connect: a
    /// restarted upstream may be a newer build.
    fn initialize(&mut self, ctx: &mut Context<Self>, gen: u64) {
        let params = json!({
            "protocolVersion": UPSTREAM_PROTOCOL_VERSION,
            // The proxy answers these by asking a connected host, so it declares them.
            "capabilities": {"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}},
            "clientInfo": {"name": "mcp-gen-ui", "version": env!("CARGO_PKG_VERSION")},
        });
        let router = self.router.clone();
        router.set_upstream_meta(None);
        // Legacy HTTP+SSE has no 2026 form: no point asking.
        let probe = !matches!(self.spec, UpstreamSpec::Sse { .. });
        let fut = async move {
            if probe {
                if let Some(init) = discover(&router).await {
                    let tools = list_all_tools(&router).await?;
                    return Ok((init, tools));
                }
            }
            let rx = router.internal_request("initialize", params);
            let init = await_result(rx, INIT_TIMEOUT, "initialize").await?;
            router.send(jsonrpc::notification("notifications/initialized", Value::Null))?;
            let tools = list_all_tools(&router).await?;
            Ok::<_, String>((init, tools))
        };
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
            if gen != act.generation || act.state == State::Stopped {
                return;
            }
            match res {
                Ok((init, tools)) => act.became_ready(init, tools),
                Err(why) => act.lost(ctx, why),
            }
        }));
    }

    fn became_ready(&mut self, init: Value, tools: Vec<Value>) {
        let name = init.pointer("/serverInfo/name").and_then(Value::as_str).unwrap_or("?").to_string();
        self.init = Some(Arc::new(init));
        self.state = State::Ready;
        self.ready_since = Some(Instant::now());
        self.last_error = None;
        // The first listing just fills the registry; after a restart, hosts hear of changes.
        if self.restarts == 0 && self.tools.is_empty() {
            self.tools = Arc::new(tools);
            self.publish();
        } else {
            self.apply_tools(tools);
        }
        self.metrics.upstream_connected.set(1);
        tracing::info!(component = "upstream", event = "ready", server = %name, tools = self.tools.len(), restarts = self.restarts, "upstream initialized and tools listed");
        // Subscriptions die with the old connection: take them out again.
        self.listen = None;
        if self.router.upstream_is_modern() {
            self.listen_upstream();
            return;
        }
        for uri in self.subscriptions.keys() {
            drop(self.router.internal_request("resources/subscribe", json!({"uri": uri})));
        }
    }

    /// (Re)opens the one `subscriptions/listen` held with a 2026 upstream: list changes it
    /// declares, and the resources hosts subscribed to. The old one, if any, is cancelled.
    fn listen_upstream(&mut self) {
        if let Some(old) = self.listen.take() {
            self.router.end_lasting(&old);
        }
        let caps = self.init.as_ref().and_then(|i| i.get("capabilities").cloned()).unwrap_or(json!({}));
        let has = |cap: &str, flag: &str| modern::declares(&caps, cap, flag);
        let mut wanted = serde_json::Map::new();
        for (key, cap) in [("toolsListChanged", "tools"), ("promptsListChanged", "prompts"), ("resourcesListChanged", "resources")] {
            if has(cap, "listChanged") {
                wanted.insert(key.into(), json!(true));
            }
        }
        if has("resources", "subscribe") && !self.subscriptions.is_empty() {
            wanted.insert("resourceSubscriptions".into(), json!(self.subscriptions.keys().collect::<Vec<_>>()));
        }
        if wanted.is_empty() {
            return;
        }
        let (id, rx) = self.router.lasting_request("subscriptions/listen", json!({"notifications": wanted}));
        self.listen = Some(id.clone());
        let gen = self.generation;
        let addr = self.self_addr.clone();
        tokio::spawn(async move {
            let end = rx.await.unwrap_or(Value::Null);
            if end.is_null() {
                return; // ended by us (resubscribing) or with the connection
            }
            if end.pointer("/error/code").and_then(Value::as_i64) == Some(code::METHOD_NOT_FOUND) {
                tracing::warn!(
                    component = "upstream",
                    event = "listen_refused",
                    "the upstream does not serve subscriptions/listen: list changes and resource updates will not reach hosts"
                );
                return;
            }
            // Ended by the upstream, gracefully or with a broken stream: listen again shortly
            // (at most every 2 s however often it fails).
            tokio::time::sleep(Duration::from_secs(2)).await;
            if let Some(a) = addr {
                a.do_send(Relisten { gen, id });
            }
        });
    }

    /// The link is gone or could not be set up: fail what is in flight, schedule a restart.
    fn lost(&mut self, ctx: &mut Context<Self>, why: String) {
        if self.state == State::Stopped {
            return;
        }
        tracing::warn!(component = "upstream", event = "lost", error = %why, retry_in_ms = self.backoff.as_millis() as u64, "upstream connection lost");
        self.generation += 1;
        self.guard = None;
        self.state = State::Down;
        self.metrics.upstream_connected.set(0);
        self.last_error = Some(why.clone());
        self.publish();
        self.router.fail_all(&format!("{why}; mcp-gen-ui is restarting the upstream, retry shortly"));
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

    fn on_message(&mut self, ctx: &mut Context<Self>, msg: Value, stream_of: Option<Value>) {
        match jsonrpc::kind(&msg) {
            // Answers normally go straight to the router; one that reaches here is handled alike.
            Kind::Response => self.router.on_response(msg),
            Kind::Request => self.on_server_request(ctx, msg, stream_of),
            Kind::Notification => self.on_notification(ctx, msg, stream_of),
            Kind::Invalid(why) => {
                self.metrics.upstream_bad_frames.inc();
                tracing::warn!(component = "upstream", event = "invalid_message", error = %why, "upstream sent an invalid JSON-RPC message; ignored")
            }
        }
    }

    /// sampling, elicitation, roots, ping: go to the host whose request is in flight.
    fn on_server_request(&mut self, ctx: &mut Context<Self>, msg: Value, stream_of: Option<Value>) {
        let Some(up_id) = jsonrpc::id(&msg).cloned() else { return };
        let method = jsonrpc::method(&msg).unwrap_or_default().to_string();
        if method == "ping" {
            let _ = self.router.send(jsonrpc::result(up_id, json!({})));
            return;
        }
        let Some((target, host_side_id)) = self.router.server_request_target(up_id.clone(), stream_of.as_ref()) else {
            let answer = if method == "roots/list" {
                jsonrpc::result(up_id, json!({"roots": []}))
            } else {
                jsonrpc::error(up_id, code::METHOD_NOT_FOUND, format!("no connected host can answer {method} right now"))
            };
            let _ = self.router.send(answer);
            return;
        };
        let mut out = msg;
        out["id"] = json!(host_side_id);
        let gen = self.generation;
        let fut = target.port.request.send(ServerRequest { msg: out, related: target.related, key: None });
        ctx.spawn(fut.into_actor(self).map(move |res, act, _| {
            act.router.server_request_done(&host_side_id);
            if gen != act.generation {
                return;
            }
            let mut answer = match res {
                Ok(a) => a,
                Err(_) => jsonrpc::error(Value::Null, code::INTERNAL_ERROR, "the host session closed before it answered"),
            };
            answer["id"] = up_id;
            let _ = act.router.send(answer);
        }));
    }

    fn on_notification(&mut self, ctx: &mut Context<Self>, msg: Value, stream_of: Option<Value>) {
        match jsonrpc::method(&msg).unwrap_or_default() {
            "notifications/progress" => self.router.on_progress(&msg),
            // A log message on a request's stream is that request's host's (the only way a
            // 2026 host hears logs); others go to every host, as before.
            "notifications/message" if stream_of.as_ref().is_some_and(|up| self.router.notify_host_of(up, &msg)) => {}
            "notifications/cancelled" => self.router.on_server_request_cancelled(&msg),
            "notifications/tools/list_changed" => self.refresh_tools(ctx),
            "notifications/resources/updated" => {
                let uri = msg.pointer("/params/uri").and_then(Value::as_str).unwrap_or_default().to_string();
                self.router.broadcast(HostEvent::ResourceUpdated { uri, msg: without_subscription(msg) });
            }
            // Our own listen stream says what it honours; nothing for hosts.
            "notifications/subscriptions/acknowledged" => {
                tracing::debug!(component = "upstream", event = "listen_acknowledged", "the upstream acknowledged subscriptions/listen")
            }
            m if m.ends_with("/list_changed") => self.router.broadcast(HostEvent::Notify { msg: without_subscription(msg), related: None }),
            _ => self.router.broadcast(HostEvent::Notify { msg, related: None }),
        }
    }

    /// Re-lists tools; hosts hear `tools/list_changed` once the new list is in place.
    fn refresh_tools(&mut self, ctx: &mut Context<Self>) {
        let router = self.router.clone();
        let gen = self.generation;
        ctx.spawn(async move { list_all_tools(&router).await }.into_actor(self).map(move |res, act, _| {
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

    /// `session` no longer holds `uri`; the upstream subscription goes with its last holder.
    fn drop_holder(&mut self, uri: &str, session: &SessionId) {
        let Some(holders) = self.subscriptions.get_mut(uri) else { return };
        holders.remove(session);
        if holders.is_empty() {
            self.subscriptions.remove(uri);
            self.release_upstream(uri);
        }
    }

    fn release_upstream(&mut self, uri: &str) {
        if self.router.upstream_is_modern() {
            self.listen_upstream();
        } else {
            drop(self.router.internal_request("resources/unsubscribe", json!({"uri": uri})));
        }
    }
}

/// A notification from our listen stream, without the tag that names our subscription (hosts
/// have their own).
fn without_subscription(mut msg: Value) -> Value {
    if let Some(meta) = msg.pointer_mut("/params/_meta").and_then(Value::as_object_mut) {
        meta.remove(modern::META_SUBSCRIPTION);
        if meta.is_empty() {
            if let Some(p) = msg.get_mut("params").and_then(Value::as_object_mut) {
                p.remove("_meta");
            }
        }
    }
    msg
}

/// The listen stream ended on the upstream's side: open it again if nothing changed meanwhile.
struct Relisten {
    gen: u64,
    id: Value,
}

impl Message for Relisten {
    type Result = ();
}

impl Handler<Relisten> for UpstreamConnection {
    type Result = ();

    fn handle(&mut self, r: Relisten, _ctx: &mut Self::Context) {
        if r.gen == self.generation && self.listen.as_ref() == Some(&r.id) {
            self.listen = None;
            self.listen_upstream();
        }
    }
}

/// The link's reader side, on this actor's arbiter: answers and progress go to the router
/// directly; everything else becomes a message to the actor.
async fn dispatch(mut rx: tokio::sync::mpsc::Receiver<LinkEvent>, router: Arc<Router>, addr: Addr<UpstreamConnection>, gen: u64) {
    while let Some(ev) = rx.recv().await {
        match ev {
            LinkEvent::Message(msg) => route(msg, None, &router, &addr, gen),
            LinkEvent::OnStream { msg, request } => route(msg, Some(request), &router, &addr, gen),
            ev => addr.do_send(LinkMsg { gen, ev }),
        }
    }
}

/// What the reader routes itself: answers and progress; the rest goes to the actor.
fn fast_path(router: &Arc<Router>, msg: Value) -> Option<Value> {
    match jsonrpc::kind(&msg) {
        Kind::Response => {
            router.on_response(msg);
            None
        }
        _ if jsonrpc::method(&msg) == Some("notifications/progress") => {
            router.on_progress(&msg);
            None
        }
        _ => Some(msg),
    }
}

fn route(msg: Value, stream_of: Option<Value>, router: &Arc<Router>, addr: &Addr<UpstreamConnection>, gen: u64) {
    match msg {
        Value::Array(batch) => {
            for m in batch {
                route(m, stream_of.clone(), router, addr, gen);
            }
        }
        msg if matches!(jsonrpc::kind(&msg), Kind::Response) => router.on_response(msg),
        msg if jsonrpc::method(&msg) == Some("notifications/progress") => router.on_progress(&msg),
        msg => {
            let ev = match stream_of {
                Some(request) => LinkEvent::OnStream { msg, request },
                None => LinkEvent::Message(msg),
            };
            addr.do_send(LinkMsg { gen, ev });
        }
    }
}

/// What the proxy declares to a 2026 upstream on every request: it answers sampling,
/// elicitation and roots by asking the host whose call it is.
fn upstream_meta() -> serde_json::Map<String, Value> {
    let meta = json!({
        modern::META_VERSION: modern::VERSION,
        modern::META_CAPS: {"sampling": {}, "elicitation": {}, "roots": {}},
        modern::META_CLIENT: {"name": "mcp-gen-ui", "version": env!("CARGO_PKG_VERSION")},
    });
    meta.as_object().cloned().unwrap_or_default()
}

/// Asks for `server/discover`. A 2026 upstream answers with the versions it speaks; the proxy
/// then speaks 2026 to it, and the answer stands in for initialize's. Any error, or no
/// version in common, means the session era.
async fn discover(router: &Router) -> Option<Value> {
    let rx = router.internal_request("server/discover", json!({"_meta": upstream_meta()}));
    let result = match await_result(rx, DISCOVER_TIMEOUT, "server/discover").await {
        Ok(r) => r,
        Err(why) => {
            tracing::debug!(component = "upstream", event = "discover_declined", reason = %why, "upstream does not speak MCP 2026-07-28; initializing");
            return None;
        }
    };
    let speaks =
        result.get("supportedVersions").and_then(Value::as_array).is_some_and(|v| v.iter().any(|x| x.as_str() == Some(modern::VERSION)));
    if !speaks {
        return None;
    }
    router.set_upstream_meta(Some(upstream_meta()));
    let server_info = result.get("_meta").and_then(|m| m.get(modern::META_SERVER)).or_else(|| result.get("serverInfo")).cloned();
    let mut init = json!({
        "protocolVersion": modern::VERSION,
        "capabilities": result.get("capabilities").cloned().unwrap_or(json!({})),
        "serverInfo": server_info.unwrap_or(json!({"name": "?", "version": "?"})),
    });
    if let Some(i) = result.get("instructions") {
        init["instructions"] = i.clone();
    }
    tracing::info!(component = "upstream", event = "modern", "upstream speaks MCP 2026-07-28 (stateless): no initialize");
    Some(init)
}

async fn await_result(rx: tokio::sync::oneshot::Receiver<Value>, limit: Duration, what: &str) -> Result<Value, String> {
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
async fn list_all_tools(router: &Router) -> Result<Vec<Value>, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<Value> = None;
    for _ in 0..1000 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let rx = router.internal_request("tools/list", params);
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
        self.self_addr = Some(ctx.address());
        // A supervisor restarts an actor that stopped; after Shutdown there is nothing to start.
        if self.state == State::Stopped {
            return;
        }
        self.publish();
        self.connect(ctx);
        // Deadlines are checked a few times per timeout (at most every 250 ms).
        let tick = (self.router.timeout() / 4).clamp(Duration::from_millis(20), Duration::from_millis(250));
        ctx.run_interval(tick, |act, _| act.router.expire());
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

impl Supervised for UpstreamConnection {
    fn restarting(&mut self, _ctx: &mut Self::Context) {
        // A fresh start: the old link goes (its guard ends it) and what waited on it fails.
        if self.state == State::Stopped {
            return; // stopped on purpose (Shutdown): not a failure
        }
        self.generation += 1;
        self.guard = None;
        self.state = State::Connecting;
        self.router.fail_all("mcp-gen-ui restarted its upstream connection; retry shortly");
        contain::note_restart("upstream_connection", &self.metrics);
    }
}

impl Handler<RefreshTools> for UpstreamConnection {
    type Result = ResponseActFuture<Self, Result<ToolsDiff, String>>;

    fn handle(&mut self, _: RefreshTools, _ctx: &mut Self::Context) -> Self::Result {
        let ready = self.state == State::Ready;
        let why = self.last_error.clone().unwrap_or_else(|| "the upstream is still starting".into());
        let router = self.router.clone();
        let gen = self.generation;
        Box::pin(
            async move {
                if !ready {
                    return Err(format!("the upstream is not connected ({why})"));
                }
                list_all_tools(&router).await
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

impl Handler<Broadcast> for UpstreamConnection {
    type Result = ();

    fn handle(&mut self, b: Broadcast, _ctx: &mut Self::Context) {
        self.router.broadcast(b.0);
    }
}

struct LinkMsg {
    gen: u64,
    ev: LinkEvent,
}

impl Message for LinkMsg {
    type Result = ();
}

impl Handler<LinkMsg> for UpstreamConnection {
    type Result = ();

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
                match id {
                    // Goes the way the real answer would have: mapped back to its host.
                    Some(id) => {
                        self.router.on_response(jsonrpc::error(id, code::UPSTREAM_UNAVAILABLE, upstream::oversized_message(bytes, limit)))
                    }
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
}

/// A session left: release its upstream subscriptions (its routes left the router already).
impl Handler<Unregister> for UpstreamConnection {
    type Result = ();

    fn handle(&mut self, u: Unregister, _ctx: &mut Self::Context) {
        let held: Vec<String> = self.subscriptions.iter().filter(|(_, h)| h.contains(&u.session)).map(|(uri, _)| uri.clone()).collect();
        for uri in held {
            self.drop_holder(&uri, &u.session);
        }
    }
}

impl Handler<Subscribe> for UpstreamConnection {
    type Result = ResponseActFuture<Self, Value>;

    fn handle(&mut self, s: Subscribe, _ctx: &mut Self::Context) -> Self::Result {
        let uri = s.msg.pointer("/params/uri").and_then(Value::as_str).unwrap_or_default().to_string();
        let subscribe = jsonrpc::method(&s.msg) == Some("resources/subscribe");
        let id = jsonrpc::id(&s.msg).cloned().unwrap_or(Value::Null);
        if !subscribe {
            self.drop_holder(&uri, &s.session);
            return Box::pin(fut::ready(jsonrpc::result(id, json!({}))));
        }
        let held = self.subscriptions.get(&uri).is_some_and(|h| !h.is_empty());
        if held || self.router.upstream_is_modern() {
            self.subscriptions.entry(uri).or_default().insert(s.session);
            if !held {
                // 2026: subscriptions ride on our one listen stream, opened again with the new set.
                self.listen_upstream();
            }
            return Box::pin(fut::ready(jsonrpc::result(id, json!({}))));
        }
        let router = self.router.clone();
        let session = s.session.clone();
        Box::pin(async move { router.forward(s.session, s.msg).await }.into_actor(self).map(move |answer, act, _| {
            if answer.get("result").is_some() {
                if act.router.is_registered(&session) {
                    act.subscriptions.entry(uri).or_default().insert(session);
                } else if !act.subscriptions.contains_key(&uri) {
                    act.release_upstream(&uri); // the session left while the upstream answered
                }
            }
            answer
        }))
    }
}

impl Handler<Shutdown> for UpstreamConnection {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Shutdown, ctx: &mut Self::Context) -> Self::Result {
        self.state = State::Stopped;
        self.generation += 1;
        self.router.set_link(None);
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
