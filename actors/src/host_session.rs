//! `HostSession`: one actor per connected host. It owns what the host negotiated (protocol
//! version, capabilities, whether it renders MCP Apps), its resource subscriptions, where its
//! messages go (per-request streams and the session stream), and the server-to-client requests
//! it still owes an answer to. Edges hand it raw JSON-RPC; it answers what the proxy adds and
//! forwards the rest to the `UpstreamConnection`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use crate::jsonrpc::{self, code, Kind};
use crate::learned_shapes::LearnedShapes;
pub use crate::messages::{sink_channel, Sink, STREAM_BOUND};
use crate::messages::{
    AttachStream, Broadcast, Close, HostEvent, Incoming, Peek, ReadUi, ServerRequest, SessionFlags, SessionId, SessionPort, SessionRef,
    Status, Subscribe, Unregister,
};
use crate::metrics::{method_label, Metrics};
use crate::modern;
use crate::outlet::{self, Outlet, Pump, Sent};
use crate::result_shape;
use crate::router::READY_WAIT;
use crate::session_deps::SessionDeps;
use crate::ui_control;
use crate::ui_meta;
use crate::ui_tools;

/// Protocol revisions this proxy speaks to hosts, newest first.
pub const HOST_PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// Messages kept for a Streamable HTTP session that has no stream open right now.
const BACKLOG_LIMIT: usize = 1000;
/// A host that does not answer a sampling/elicitation request in this time gets an error sent
/// upstream instead (a person may be typing an elicitation answer, so this is generous).
const SERVER_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    Sse,
    StreamableHttp,
}

impl Transport {
    pub fn label(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Sse => "sse",
            Transport::StreamableHttp => "streamable-http",
        }
    }
}

#[derive(Debug, Clone)]
struct Negotiated {
    ui: bool,
    client_caps: Value,
}

struct InFlight {
    method: &'static str,
    sink: Option<Outlet>,
    request_id: String,
    started: Instant,
}

pub struct HostSession {
    id: SessionId,
    transport: Transport,
    deps: SessionDeps,
    metrics: Arc<Metrics>,
    negotiated: Option<Negotiated>,
    subscriptions: HashSet<String>,
    ui_subscriptions: HashSet<String>,
    default_sink: Option<Outlet>,
    /// Request streams whose answer went out while part of a burst still waited: kept until
    /// drained, then dropped (which ends them).
    draining: Vec<Outlet>,
    /// A `PumpStreams` is on its way.
    pump_scheduled: bool,
    self_addr: Option<Addr<HostSession>>,
    backlog: VecDeque<Value>,
    in_flight: HashMap<String, InFlight>,
    owed: HashMap<String, oneshot::Sender<Value>>,
    last_seen: Instant,
    /// When this session's recent `_ui_refine` / `_ui_regenerate` calls were made (last minute).
    llm_calls: VecDeque<Instant>,
    /// True once the host declared sampling, elicitation or roots: then requests may be sent to
    /// it on a call's stream, so the edge answers POSTs with SSE rather than plain JSON.
    flags: Arc<SessionFlags>,
    /// Set when this session serves one MCP 2026-07-28 (stateless) request.
    stateless: Option<stateless::Call>,
}

impl HostSession {
    pub fn new(id: SessionId, transport: Transport, deps: SessionDeps) -> Self {
        HostSession {
            id,
            transport,
            metrics: deps.metrics.clone(),
            deps,
            negotiated: None,
            subscriptions: HashSet::new(),
            ui_subscriptions: HashSet::new(),
            default_sink: None,
            draining: Vec::new(),
            pump_scheduled: false,
            self_addr: None,
            backlog: VecDeque::new(),
            in_flight: HashMap::new(),
            owed: HashMap::new(),
            last_seen: Instant::now(),
            llm_calls: VecDeque::new(),
            flags: Arc::default(),
            stateless: None,
        }
    }

    /// Starts the session on the current arbiter (the HTTP worker serving it) and answers how
    /// an edge reaches it.
    pub fn start_session(self) -> SessionRef {
        let flags = self.flags.clone();
        let addr = self.start();
        SessionRef { incoming: addr.clone().recipient(), attach: addr.clone().recipient(), close: addr.recipient(), flags }
    }

    fn stream_full(&self, which: &str) {
        self.metrics.dropped_messages.with_label_values(&["host_stream_full"]).inc();
        tracing::warn!(component = "host_session", event = "stream_full", session = %self.id, stream = which, bound = STREAM_BOUND + outlet::OVERFLOW_MAX, "the host is not reading its stream; closing that stream");
    }

    /// A stream has messages waiting for room: pump them soon (not in this turn, so the edge
    /// gets to write what the channel holds).
    fn schedule_pump(&mut self) {
        self.schedule_pump_in(Duration::from_millis(2));
    }

    fn schedule_pump_in(&mut self, delay: Duration) {
        if self.pump_scheduled {
            return;
        }
        if let Some(addr) = self.self_addr.clone() {
            self.pump_scheduled = true;
            actix::spawn(async move {
                tokio::time::sleep(delay).await;
                addr.do_send(PumpStreams);
            });
        }
    }

    /// Messages waiting in all of this session's outlets.
    fn waiting(&self) -> usize {
        let request = self.in_flight.values().filter_map(|f| f.sink.as_ref()).map(Outlet::waiting).sum::<usize>();
        self.default_sink.as_ref().map_or(0, Outlet::waiting) + request + self.draining.iter().map(Outlet::waiting).sum::<usize>()
    }

    /// Hands `msg` to an outlet; what the caller must do next comes back.
    fn push(&mut self, outlet: &mut Outlet, msg: Value, which: &str) -> Option<Value> {
        match outlet.send(msg) {
            Sent::Delivered => None,
            Sent::Queued => {
                self.schedule_pump();
                None
            }
            Sent::Closed(m) => Some(m),
            Sent::Overflowed => {
                self.stream_full(which);
                Some(Value::Null)
            }
        }
    }

    /// The `host_sessions` label: the transport, or "stateless" for a 2026 call.
    fn label(&self) -> &'static str {
        if self.is_stateless() {
            "stateless"
        } else {
            self.transport.label()
        }
    }

    /// Whether a tool gets a UI (`generation.enabledTools`).
    fn ui_enabled_for(&self, tool: &Value) -> bool {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        self.deps.enabled_tools.as_ref().is_none_or(|set| set.contains(name))
    }

    fn ui(&self) -> bool {
        self.negotiated.as_ref().is_some_and(|n| n.ui)
    }

    /// To the session stream; kept in a bounded backlog while none is open. A session stream
    /// the host stopped reading is closed; what it missed waits in the backlog for the next one.
    fn send_session(&mut self, msg: Value) {
        if self.is_stateless() {
            // A stateless host has no session stream: only a listener hears of changes, on
            // its listen request's stream.
            if let (Some(msg), Some(id)) = (self.tag_for_listener(msg), self.listen_id()) {
                self.send_related(msg, Some(&id));
            }
            return;
        }
        let msg = match self.default_sink.take() {
            Some(mut o) => {
                let back = self.push(&mut o, msg.clone(), "session");
                match back {
                    None => {
                        self.default_sink = Some(o);
                        return;
                    }
                    Some(Value::Null) => msg, // overflowed: the stream is dropped, the message kept
                    Some(m) => m,             // closed by the host
                }
            }
            None => msg,
        };
        self.backlog.push_back(msg);
        while self.backlog.len() > BACKLOG_LIMIT {
            self.backlog.pop_front();
        }
    }

    /// To the stream of the host request `related` if it is still open, else the session stream.
    /// Progress for a request already answered is dropped: it must never follow the answer.
    fn send_related(&mut self, msg: Value, related: Option<&Value>) {
        if !self.stateless_allows(&msg) {
            return;
        }
        let Some(r) = related else {
            return self.send_session(msg);
        };
        let key = jsonrpc::id_key(r);
        let Some(f) = self.in_flight.get_mut(&key) else {
            if jsonrpc::method(&msg) == Some("notifications/progress") {
                self.metrics.dropped_messages.with_label_values(&["late_progress"]).inc();
                return;
            }
            return self.send_session(msg);
        };
        let Some(mut outlet) = f.sink.take() else {
            return self.send_session(msg);
        };
        match self.push(&mut outlet, msg.clone(), "request") {
            None => {
                if let Some(f) = self.in_flight.get_mut(&key) {
                    f.sink = Some(outlet);
                }
            }
            // A stateless host has only this stream: it going means the host hung up.
            _ if self.is_stateless() => self.stateless_hung_up(),
            Some(Value::Null) => self.send_session(msg),
            Some(m) => self.send_session(m),
        }
    }

    /// Sends the answer for a host request and closes that request's stream (once whatever
    /// waits in it has gone out).
    fn answer(&mut self, answer: Value) {
        let Some(id) = jsonrpc::id(&answer).cloned() else {
            return;
        };
        let Some(f) = self.in_flight.remove(&jsonrpc::id_key(&id)) else {
            return; // cancelled meanwhile: the host asked us not to answer
        };
        if f.sink.is_none() && self.stateless_hold(&answer) {
            return; // parked: the host's retry gets it
        }
        let stateless = self.is_stateless();
        let answer = if stateless { self.stateless_answer(answer) } else { answer };
        let outcome = if answer.get("error").is_some() { "error" } else { "ok" };
        self.metrics.requests.with_label_values(&[f.method, outcome]).inc();
        tracing::info!(component = "host_session", event = "request_done", requestId = %f.request_id, session = %self.id, method = f.method, outcome, duration_ms = f.started.elapsed().as_millis() as u64, "request answered");
        let Some(mut outlet) = f.sink else {
            return self.send_session(answer);
        };
        match self.push(&mut outlet, answer.clone(), "request") {
            None if outlet.backlogged() => self.draining.push(outlet),
            None => {} // dropping the outlet ends the stream after the answer
            Some(Value::Null) => self.send_session(answer),
            Some(m) => self.send_session(m),
        }
        if stateless {
            // The call is over; the session goes once its answer has left.
            self.stateless_finish();
        }
    }

    /// The request id of a host request still in flight (for the logs of work it causes).
    fn request_id_of(&self, id: &Value) -> String {
        self.in_flight.get(&jsonrpc::id_key(id)).map(|f| f.request_id.clone()).unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string())
    }

    fn on_request(&mut self, ctx: &mut Context<Self>, msg: Value, sink: Option<Sink>, request_id: String) {
        let (msg, sink) = match self.is_stateless() {
            true => match self.stateless_request(ctx, msg, sink, &request_id) {
                Some(first) => first,
                None => return, // a retry: it resumed the parked call
            },
            false => (msg, sink),
        };
        let id = jsonrpc::id(&msg).cloned().expect("requests have ids");
        let method = jsonrpc::method(&msg).unwrap_or_default().to_string();
        let key = jsonrpc::id_key(&id);
        if self.in_flight.contains_key(&key) {
            let err = jsonrpc::error(id, code::INVALID_REQUEST, "a request with this id is still in flight in this session; use a new id");
            match sink {
                Some(s) => drop(s.try_send(err)),
                None => self.send_session(err),
            }
            return;
        }
        let max = self.deps.limits.max_in_flight;
        if self.in_flight.len() >= max {
            self.metrics.refusals.with_label_values(&["max_in_flight"]).inc();
            let why = format!(
                "this session already has {max} requests in flight (limits.maxInFlightPerSession); wait for an answer before sending more"
            );
            let err = jsonrpc::error(id, code::LIMITED, why);
            match sink {
                Some(s) => drop(s.try_send(err)),
                None => self.send_session(err),
            }
            return;
        }
        tracing::debug!(component = "host_session", event = "request", requestId = %request_id, session = %self.id, method = %method, "request received");
        self.in_flight
            .insert(key, InFlight { method: method_label(&method), sink: sink.map(Outlet::new), request_id, started: Instant::now() });

        if self.negotiated.is_none() && !matches!(method.as_str(), "initialize" | "ping") {
            // Hosts must initialize first; tolerate the ones that don't by treating them as
            // plain (no UI) hosts rather than refusing: the upstream decides what is valid.
            tracing::debug!(component = "host_session", event = "no_initialize", session = %self.id, method = %method, "request before initialize");
        }
        match method.as_str() {
            "server/discover" if self.is_stateless() => self.discover(ctx, id),
            "subscriptions/listen" if self.is_stateless() => self.listen(msg),
            m if self.is_stateless() && modern::REMOVED_METHODS.contains(&m) => self.answer(jsonrpc::error(
                id,
                code::METHOD_NOT_FOUND,
                format!("Method not found: {m} is not part of MCP {} (stateless)", modern::VERSION),
            )),
            "initialize" => self.initialize(ctx, msg),
            "tools/list" => self.tools_list(ctx, id),
            "resources/list" => self.resources_list(ctx, msg),
            "resources/templates/list" => self.forward_if_capable(ctx, msg, "resources", json!({"resourceTemplates": []})),
            "resources/read" => self.resources_read(ctx, msg),
            "resources/subscribe" | "resources/unsubscribe" => self.subscription(ctx, msg),
            "tools/call"
                if self.ui()
                    && jsonrpc::params(&msg).get("name").and_then(Value::as_str).is_some_and(|n| n.starts_with(ui_tools::PREFIX)) =>
            {
                self.ui_tool_call(ctx, msg)
            }
            "tools/call" if self.deps.shape_artifacts || self.deps.shapes.is_some() => self.tool_call(ctx, msg),
            // A 2026 upstream has neither: a session host's keep-alive and log level are
            // answered here (log messages then come only with a request that asks for them).
            "ping" | "logging/setLevel" if self.deps.router.upstream_is_modern() => self.answer(jsonrpc::result(id, json!({}))),
            "server/discover" => {
                // The 2026-07-28 stateless handshake: answer "not found" so that clients in
                // auto mode fall back to initialize, which this proxy speaks.
                self.answer(jsonrpc::error(id, code::METHOD_NOT_FOUND, "server/discover is not supported; use initialize"));
            }
            _ => self.forward(ctx, msg),
        }
    }

    /// `_ui_*` tools: answered here (see `ui_control`), never forwarded.
    fn ui_tool_call(&mut self, ctx: &mut Context<Self>, msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let params = jsonrpc::params(&msg).clone();
        let name = params.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        let args = params.get("arguments").cloned().unwrap_or(json!({}));
        let progress = params.pointer("/_meta/progressToken").cloned();
        if matches!(name.as_str(), "_ui_refine" | "_ui_regenerate") {
            if let Err(why) = self.take_llm_call() {
                return self.answer(jsonrpc::result(id, ui_tools::error_result(&why)));
            }
        }
        let deps = self.deps.clone();
        self.with_status(ctx, id.clone(), move |act, ctx, status| {
            let known: Vec<String> =
                status.tools.iter().filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_string)).collect();
            let call = match ui_tools::parse(&name, &args, &known) {
                Ok(c) => c,
                Err(why) => return act.answer(jsonrpc::result(id, ui_tools::error_result(&why))),
            };
            // Progress for long calls (refine, regenerate) goes on this request's stream.
            let (ptx, mut prx) = mpsc::unbounded_channel::<Value>();
            let addr = ctx.address();
            let req_id = id.clone();
            if let Some(token) = progress {
                actix::spawn(async move {
                    while let Some(p) = prx.recv().await {
                        let mut params = p;
                        params["progressToken"] = token.clone();
                        addr.do_send(HostEvent::Notify {
                            msg: jsonrpc::notification("notifications/progress", params),
                            related: Some(req_id.clone()),
                        });
                    }
                });
            }
            let fut = ui_control::run(call, status.tools.clone(), deps, ptx, act.request_id_of(&id));
            ctx.spawn(fut.into_actor(act).map(move |result, act, _| act.answer(jsonrpc::result(id, result))));
        });
    }

    /// Counts one call that asks the LLM against `limits.llmCallsPerMinute` (a sliding minute),
    /// or says when the next one may be made.
    fn take_llm_call(&mut self) -> Result<(), String> {
        let limit = self.deps.limits.llm_calls_per_minute as usize;
        if limit == 0 {
            return Ok(());
        }
        let who = if self.is_stateless() { "stateless (2026-07-28) hosts together" } else { "this session" };
        let shared = self.deps.stateless_llm_calls.clone();
        let mut shared_window = self.is_stateless().then(|| shared.lock().unwrap_or_else(|p| p.into_inner()));
        let window = match shared_window.as_deref_mut() {
            Some(w) => w,
            None => &mut self.llm_calls,
        };
        let minute = Duration::from_secs(60);
        while window.front().is_some_and(|t| t.elapsed() >= minute) {
            window.pop_front();
        }
        if window.len() >= limit {
            self.metrics.refusals.with_label_values(&["llm_calls_per_minute"]).inc();
            let wait = window.front().map(|t| minute.saturating_sub(t.elapsed())).unwrap_or(minute);
            return Err(format!(
                "{who} made {limit} calls that ask the LLM (_ui_refine, _ui_regenerate) in the last minute (limits.llmCallsPerMinute); retry in {} s",
                wait.as_secs() + 1
            ));
        }
        window.push_back(Instant::now());
        Ok(())
    }

    /// A tools/call whose result this service looks at (`results.shaping`,
    /// `generation.learnResultShape`); otherwise calls are forwarded untouched.
    fn tool_call(&mut self, ctx: &mut Context<Self>, msg: Value) {
        let name = jsonrpc::params(&msg).get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        self.forward_then(ctx, msg, move |act, ctx, mut answer| {
            if let Some(result) = answer.get("result") {
                // Only tools the upstream lists: a host may call any name, and the table must
                // not grow with made-up ones.
                let listed = || act.deps.router.status().tools.iter().any(|t| t.get("name").and_then(Value::as_str) == Some(name.as_str()));
                let shapes = act.deps.shapes.clone().filter(|_| listed());
                if let (Some(shapes), Some(obj)) = (shapes, result_shape::result_object(result)) {
                    if shapes.learn(&name, &result_shape::shape_of(&obj)) {
                        act.remake_with_shape(ctx, name.clone(), shapes);
                    }
                }
                if act.deps.shape_artifacts && act.ui() {
                    if let Some(shaped) = result_shape::shape_artifacts(result) {
                        answer["result"] = shaped;
                    }
                }
            }
            act.answer(answer);
        });
    }

    /// A tool's results taught something new: its page, if one was made before, is made again
    /// with the shape, in the background, once per tool revision.
    fn remake_with_shape(&mut self, ctx: &mut Context<Self>, name: String, shapes: Arc<LearnedShapes>) {
        let status = self.deps.router.status();
        let Some(tool) = status.tools.iter().find(|t| t.get("name").and_then(Value::as_str) == Some(name.as_str())).cloned() else {
            return;
        };
        if !self.ui_enabled_for(&tool) {
            return;
        }
        let deps = self.deps.clone();
        let fut = async move {
            let hash = tokio::task::spawn_blocking({
                let tool = tool.clone();
                move || crate::cache_key::tool_hash(&tool)
            })
            .await
            .unwrap_or_default();
            if !shapes.take_remake(&name, &hash) {
                return;
            }
            let refinements = deps.refinements.feedback(&name).await;
            let made = deps.queue.peek.send(Peek { tool: tool.clone(), refinements: refinements.clone() }).await.ok().flatten();
            if made.is_none() {
                return; // no page yet: the first one will know the shape
            }
            deps.metrics.shape_regenerations.inc();
            tracing::info!(component = "host_session", event = "shape_remake", tool_name = %name, "remaking a page with the result shape learnt for its tool");
            let request_id = uuid::Uuid::new_v4().simple().to_string();
            let _ = deps.queue.read.send(ReadUi { tool, refinements, request_id, force: true }).await;
            deps.upstream.broadcast.do_send(Broadcast(HostEvent::UiResourcesChanged));
        };
        ctx.spawn(fut.into_actor(self));
    }

    /// Forwards a request upstream. Its route is registered before this returns (so a
    /// cancellation right behind it finds it); while the upstream (re)starts it waits, bounded,
    /// and is not sent at all if the host cancelled it meanwhile.
    fn forward(&mut self, ctx: &mut Context<Self>, msg: Value) {
        self.forward_then(ctx, msg, |act, _ctx, answer| act.answer(answer));
    }

    /// [`HostSession::forward`] with what to do with the answer (not called when cancelled).
    fn forward_then(&mut self, ctx: &mut Context<Self>, mut msg: Value, then: impl FnOnce(&mut Self, &mut Context<Self>, Value) + 'static) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        if self.deps.router.upstream_is_modern() {
            // A 2026 upstream asks only what this host can answer.
            let caps = self.negotiated.as_ref().map(|n| modern::answerable(&n.client_caps)).unwrap_or(json!({}));
            modern::set_request_meta(&mut msg, modern::META_CAPS, caps);
        }
        match self.deps.router.try_forward(&self.id, msg) {
            Ok(rx) => {
                ctx.spawn(rx.into_actor(self).map(move |answer, act, ctx| {
                    if let Ok(answer) = answer {
                        then(act, ctx, answer); // closed: the host cancelled it
                    }
                }));
            }
            Err(msg) => {
                let router = self.deps.router.clone();
                ctx.spawn(async move { router.ready(READY_WAIT).await }.into_actor(self).map(move |res, act, ctx| {
                    if !act.in_flight.contains_key(&jsonrpc::id_key(&id)) {
                        return; // cancelled while the upstream was starting
                    }
                    match res {
                        Ok(_) => act.forward_then(ctx, msg, then),
                        Err(why) => act.answer(jsonrpc::error(id, code::UPSTREAM_UNAVAILABLE, format!("{why}; retry shortly"))),
                    }
                }));
            }
        }
    }

    /// Forwards when the upstream declared `capability`; otherwise answers `empty` itself.
    fn forward_if_capable(&mut self, ctx: &mut Context<Self>, msg: Value, capability: &'static str, empty: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        self.with_status(ctx, id.clone(), move |act, ctx, status| {
            if upstream_has(&status, capability) {
                act.forward(ctx, msg);
            } else {
                act.answer(jsonrpc::result(id, empty));
            }
        });
    }

    /// Runs `then` with the upstream's status once it is ready, or answers the error.
    fn with_status(&mut self, ctx: &mut Context<Self>, id: Value, then: impl FnOnce(&mut Self, &mut Context<Self>, Arc<Status>) + 'static) {
        let status = self.deps.router.status();
        if status.ready {
            return then(self, ctx, status); // the usual case: no wait, no hop
        }
        let router = self.deps.router.clone();
        ctx.spawn(async move { router.ready(READY_WAIT).await }.into_actor(self).map(move |res, act, ctx| match res {
            Ok(status) => then(act, ctx, status),
            Err(why) => act.answer(jsonrpc::error(id, code::UPSTREAM_UNAVAILABLE, format!("{why}; retry shortly"))),
        }));
    }

    fn initialize(&mut self, ctx: &mut Context<Self>, msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let params = jsonrpc::params(&msg).clone();
        let requested = params.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
        let version = if HOST_PROTOCOL_VERSIONS.contains(&requested) { requested } else { HOST_PROTOCOL_VERSIONS[0] }.to_string();
        let ui = ui_meta::host_supports_ui(&params);
        if !ui {
            tracing::info!(component = "host_session", event = "pass_through", session = %self.id, "host does not declare io.modelcontextprotocol/ui: tools pass through without UI");
        }
        let client_caps = params.get("capabilities").cloned().unwrap_or(json!({}));
        let asks = ["sampling", "elicitation", "roots"].iter().any(|c| client_caps.get(*c).is_some_and(|v| !v.is_null()));
        self.flags.streams.store(asks, Ordering::Relaxed);
        self.flags.ui.store(ui, Ordering::Relaxed);
        self.negotiated = Some(Negotiated { ui, client_caps });
        self.with_status(ctx, id.clone(), move |act, _ctx, status| {
            let init = status.init.as_deref().cloned().unwrap_or(json!({}));
            let caps = ui_meta::merge_capabilities(init.get("capabilities").unwrap_or(&json!({})), ui);
            let mut result = json!({
                "protocolVersion": version,
                "capabilities": caps,
                "serverInfo": init.get("serverInfo").cloned().unwrap_or(json!({"name": "mcp-gen-ui", "version": env!("CARGO_PKG_VERSION")})),
            });
            if let Some(instr) = init.get("instructions") {
                result["instructions"] = instr.clone();
            }
            act.answer(jsonrpc::result(id, result));
        });
    }

    /// `server/discover` (2026-07-28): what initialize would have said, for a stateless host.
    fn discover(&mut self, ctx: &mut Context<Self>, id: Value) {
        self.with_status(ctx, id.clone(), move |act, _ctx, status| {
            let init = status.init.as_deref().cloned().unwrap_or(json!({}));
            let caps = ui_meta::merge_capabilities(init.get("capabilities").unwrap_or(&json!({})), act.ui());
            let result = modern::discover_result(caps, &act.server_info(), init.get("instructions"));
            act.answer(jsonrpc::result(id, result));
        });
    }

    fn tools_list(&mut self, ctx: &mut Context<Self>, id: Value) {
        self.with_status(ctx, id.clone(), move |act, _ctx, status| {
            let ui = act.ui();
            let mut tools: Vec<Value> =
                status.tools.iter().map(|t| if ui && act.ui_enabled_for(t) { ui_meta::decorate_tool(t) } else { t.clone() }).collect();
            if ui {
                tools.extend(ui_tools::definitions());
            }
            act.answer(jsonrpc::result(id, json!({"tools": tools})));
        });
    }

    fn resources_list(&mut self, ctx: &mut Context<Self>, msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        self.with_status(ctx, id.clone(), move |act, ctx, status| {
            let ours: Vec<Value> = if act.ui() {
                let domain = act.deps.ui_domain.clone();
                status.tools.iter().filter(|t| act.ui_enabled_for(t)).filter_map(|t| ui_meta::ui_resource(t, domain.as_deref())).collect()
            } else {
                Vec::new()
            };
            if !upstream_has(&status, "resources") {
                act.answer(jsonrpc::result(id, json!({"resources": ours})));
                return;
            }
            act.forward_then(ctx, msg, move |act, _ctx, mut answer| {
                // Ours go on the last page, so that paging clients see each exactly once.
                let last_page = answer.pointer("/result/nextCursor").is_none_or(Value::is_null);
                if last_page {
                    if let Some(list) = answer.pointer_mut("/result/resources").and_then(Value::as_array_mut) {
                        list.extend(ours);
                    }
                }
                act.answer(answer);
            });
        });
    }

    fn resources_read(&mut self, ctx: &mut Context<Self>, msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let uri = msg.pointer("/params/uri").and_then(Value::as_str).unwrap_or_default().to_string();
        let Some(tool_name) = ui_meta::tool_of_uri(&uri).map(str::to_string) else {
            self.forward(ctx, msg);
            return;
        };
        self.with_status(ctx, id.clone(), move |act, ctx, status| {
            let tool = status.tools.iter().find(|t| t.get("name").and_then(Value::as_str) == Some(tool_name.as_str())).cloned();
            match tool {
                Some(tool) if act.ui() && act.ui_enabled_for(&tool) => {
                    // The usual read: the page is ready, answered here without a hop.
                    let pages = act.deps.pages.clone();
                    if let Some(hit) = pages.as_ref().and_then(|p| p.get(&tool_name)) {
                        act.metrics.ui_reads.with_label_values(&[hit.kind]).inc();
                        act.metrics.cache_hits.inc();
                        return act.answer(jsonrpc::result(id, (*hit.result).clone()));
                    }
                    let rev = pages.as_ref().map(|p| p.revision(&tool_name)).unwrap_or(0);
                    let request_id = act.request_id_of(&id);
                    let (queue, refinements) = (act.deps.queue.read.clone(), act.deps.refinements.clone());
                    let name = tool_name.clone();
                    let read = async move {
                        let feedback = refinements.feedback(&name).await;
                        queue.send(ReadUi { tool, refinements: feedback, request_id, force: false }).await
                    };
                    ctx.spawn(read.into_actor(act).map(move |res, act, _| match res {
                        Ok(entry) => {
                            act.metrics.ui_reads.with_label_values(&[entry.kind.as_str()]).inc();
                            let result = ui_meta::ui_read_result(&uri, &entry, act.deps.ui_domain.as_deref());
                            if let Some(p) = pages {
                                p.store(&tool_name, rev, result.clone(), entry.kind.as_str(), entry.expires_at);
                            }
                            act.answer(jsonrpc::result(id, result));
                        }
                        Err(_) => act.answer(jsonrpc::error(id, code::INTERNAL_ERROR, "the generation queue stopped")),
                    }));
                }
                _ if upstream_has(&status, "resources") => {
                    // Not one of ours (or a plain host): the upstream may serve its own ui://.
                    act.forward_then(ctx, msg, move |act, _ctx, answer| {
                        if let Some(err) = answer.get("error") {
                            act.answer(not_found(id, &uri, Some(err.clone())));
                        } else {
                            act.answer(answer);
                        }
                    });
                }
                _ => act.answer(not_found(id, &uri, None)),
            }
        });
    }

    fn subscription(&mut self, ctx: &mut Context<Self>, msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let subscribe = jsonrpc::method(&msg) == Some("resources/subscribe");
        let Some(uri) = msg.pointer("/params/uri").and_then(Value::as_str).map(str::to_string) else {
            self.answer(jsonrpc::error(id, code::INVALID_PARAMS, "params.uri is required: the URI of the resource"));
            return;
        };
        if self.ui() && ui_meta::tool_of_uri(&uri).is_some() {
            if subscribe {
                self.ui_subscriptions.insert(uri);
            } else {
                self.ui_subscriptions.remove(&uri);
            }
            self.answer(jsonrpc::result(id, json!({})));
            return;
        }
        // Repeats from the same session are answered here: the upstream holds one per proxy.
        if subscribe == self.subscriptions.contains(&uri) {
            self.answer(jsonrpc::result(id, json!({})));
            return;
        }
        let fut = self.deps.upstream.subscribe.send(Subscribe { session: self.id.clone(), msg });
        ctx.spawn(fut.into_actor(self).map(move |res, act, _| {
            let Ok(answer) = res else { return };
            if answer.is_null() {
                return;
            }
            if answer.get("result").is_some() {
                if subscribe {
                    act.subscriptions.insert(uri);
                } else {
                    act.subscriptions.remove(&uri);
                }
            }
            act.answer(answer);
        }));
    }

    fn on_notification(&mut self, msg: Value) {
        match jsonrpc::method(&msg).unwrap_or_default() {
            "notifications/initialized" => {}
            "notifications/cancelled" => {
                let msg = self.stateless_cancellation(msg);
                if let Some(req) = msg.pointer("/params/requestId") {
                    if let Some(f) = self.in_flight.remove(&jsonrpc::id_key(req)) {
                        self.metrics.requests.with_label_values(&[f.method, "cancelled"]).inc();
                    }
                }
                self.deps.router.forward_notification(&self.id, msg);
            }
            _ => self.deps.router.forward_notification(&self.id, msg),
        }
    }

    fn on_response(&mut self, msg: Value) {
        let key = jsonrpc::id_key(jsonrpc::id(&msg).expect("responses have ids"));
        match self.owed.remove(&key) {
            Some(tx) => drop(tx.send(msg)),
            None => {
                tracing::debug!(component = "host_session", event = "unexpected_response", session = %self.id, "host answered a request we did not send (or already timed out)")
            }
        }
    }
}

fn upstream_has(status: &Status, capability: &str) -> bool {
    status.init.as_ref().and_then(|i| i.pointer(&format!("/capabilities/{capability}"))).is_some_and(|c| !c.is_null())
}

fn not_found(id: Value, uri: &str, upstream_error: Option<Value>) -> Value {
    let msg = match ui_meta::tool_of_uri(uri) {
        Some(tool) => format!("resource not found: {uri} (the upstream has no tool named {tool:?}; tools/list shows the valid ones)"),
        None => format!("resource not found: {uri}"),
    };
    let mut data = json!({"uri": uri});
    if let Some(e) = upstream_error {
        data["upstreamError"] = e;
    }
    jsonrpc::error_with_data(id, code::RESOURCE_NOT_FOUND, msg, data)
}

impl Actor for HostSession {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.metrics.host_sessions.with_label_values(&[self.label()]).inc();
        let addr = ctx.address();
        self.self_addr = Some(addr.clone());
        self.deps.router.register(self.id.clone(), SessionPort { event: addr.clone().recipient(), request: addr.recipient() });
        if self.is_stateless() {
            // One call: checked often, since a host that hangs up means "cancel".
            ctx.run_interval(Duration::from_secs(1), |act, ctx| act.stateless_reap(ctx));
            return;
        }
        tracing::info!(component = "host_session", event = "opened", session = %self.id, transport = self.transport.label(), "host session opened");
        // Reap: an SSE session whose stream is gone, or any session idle past the limit.
        ctx.run_interval(Duration::from_secs(5), |act, ctx| {
            // Server requests the host never answered: their waiter timed out and went away.
            act.owed.retain(|_, tx| !tx.is_closed());
            let stream_gone = act.transport == Transport::Sse && act.default_sink.as_ref().is_none_or(|s| s.is_closed());
            let stream_open = act.default_sink.as_ref().is_some_and(|s| !s.is_closed());
            let idle = act.last_seen.elapsed() > act.deps.idle_limit
                && act.flags.edge_idle() > act.deps.idle_limit
                && act.in_flight.is_empty()
                && !stream_open;
            if stream_gone || idle {
                tracing::info!(component = "host_session", event = "reaped", session = %act.id, stream_gone, idle, "closing host session");
                ctx.stop();
            }
        });
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.metrics.host_sessions.with_label_values(&[self.label()]).dec();
        self.stateless_stopped();
        self.deps.router.unregister(&self.id);
        self.deps.upstream.unregister.do_send(Unregister { session: self.id.clone() });
        if let Some(t) = &self.deps.sessions {
            t.remove(&self.id);
        }
        if !self.is_stateless() {
            tracing::info!(component = "host_session", event = "closed", session = %self.id, "host session closed");
        }
    }
}

impl Handler<Incoming> for HostSession {
    type Result = ();

    fn handle(&mut self, m: Incoming, ctx: &mut Self::Context) {
        self.last_seen = Instant::now();
        match jsonrpc::kind(&m.msg) {
            Kind::Request => self.on_request(ctx, m.msg, m.sink, m.request_id),
            Kind::Notification => self.on_notification(m.msg),
            Kind::Response => self.on_response(m.msg),
            Kind::Invalid(why) => {
                let id = m.msg.get("id").filter(|i| i.is_string() || i.is_number()).cloned().unwrap_or(Value::Null);
                let err = jsonrpc::error(id, code::INVALID_REQUEST, format!("invalid JSON-RPC message: {why}"));
                match m.sink {
                    Some(s) => drop(s.try_send(err)),
                    None => self.send_session(err),
                }
            }
        }
    }
}

impl Handler<AttachStream> for HostSession {
    type Result = ();

    fn handle(&mut self, a: AttachStream, _ctx: &mut Self::Context) {
        self.last_seen = Instant::now();
        let mut outlet = Outlet::new(a.sink);
        let backlog: Vec<Value> = self.backlog.drain(..).collect();
        for m in backlog {
            if self.push(&mut outlet, m, "session").is_some() {
                return;
            }
        }
        self.default_sink = Some(outlet);
    }
}

/// Moves what waits in the session's streams into them as the host reads (see `outlet`).
struct PumpStreams;

impl Message for PumpStreams {
    type Result = ();
}

impl Handler<PumpStreams> for HostSession {
    type Result = ();

    fn handle(&mut self, _: PumpStreams, _ctx: &mut Self::Context) {
        self.pump_scheduled = false;
        let before = self.waiting();
        let mut waiting = false;
        let mut gone = 0;
        if let Some(o) = self.default_sink.as_mut() {
            match o.pump() {
                Pump::Drained => {}
                Pump::Waiting => waiting = true,
                Pump::Gone => {
                    self.default_sink = None;
                    gone += 1;
                }
            }
        }
        for f in self.in_flight.values_mut() {
            if let Some(o) = f.sink.as_mut() {
                match o.pump() {
                    Pump::Drained => {}
                    Pump::Waiting => waiting = true,
                    Pump::Gone => {
                        f.sink = None;
                        gone += 1;
                    }
                }
            }
        }
        self.draining.retain_mut(|o| match o.pump() {
            Pump::Waiting => {
                waiting = true;
                true
            }
            Pump::Drained => false,
            Pump::Gone => {
                gone += 1;
                false
            }
        });
        for _ in 0..gone {
            self.stream_full("stalled");
        }
        if self.draining.is_empty() {
            self.stateless_drained();
        }
        if waiting {
            // A host that is reading gets the rest soon; one that is not is checked rarely
            // (until the stall limit closes its stream), not hundreds of times a second.
            let moved = self.waiting() < before;
            self.schedule_pump_in(Duration::from_millis(if moved { 2 } else { 100 }));
        }
    }
}

impl Handler<Close> for HostSession {
    type Result = ();

    fn handle(&mut self, _: Close, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

impl Handler<HostEvent> for HostSession {
    type Result = ();

    fn handle(&mut self, ev: HostEvent, _ctx: &mut Self::Context) {
        match ev {
            HostEvent::Notify { msg, related } => self.send_related(msg, related.as_ref()),
            HostEvent::ToolsChanged => {
                self.send_session(jsonrpc::notification("notifications/tools/list_changed", Value::Null));
                if self.ui() {
                    self.send_session(jsonrpc::notification("notifications/resources/list_changed", Value::Null));
                }
            }
            HostEvent::UiResourcesChanged => {
                if self.ui() {
                    self.send_session(jsonrpc::notification("notifications/resources/list_changed", Value::Null));
                }
            }
            HostEvent::ResourceUpdated { uri, msg } => {
                if self.subscriptions.contains(&uri) || self.ui_subscriptions.contains(&uri) {
                    self.send_session(msg);
                }
            }
        }
    }
}

impl Handler<ServerRequest> for HostSession {
    type Result = ResponseFuture<Value>;

    fn handle(&mut self, r: ServerRequest, ctx: &mut Self::Context) -> Self::Result {
        if self.is_stateless() {
            return self.stateless_server_request(ctx, r);
        }
        let id = jsonrpc::id(&r.msg).cloned().unwrap_or(Value::Null);
        let method = jsonrpc::method(&r.msg).unwrap_or_default().to_string();
        let needed = modern::capability_for(&method);
        let caps = self.negotiated.as_ref().map(|n| n.client_caps.clone()).unwrap_or(json!({}));
        if let Some(cap) = needed {
            if caps.get(cap).is_none() {
                return Box::pin(async move {
                    jsonrpc::error(
                        id,
                        code::METHOD_NOT_FOUND,
                        format!("the host did not declare the {cap} capability, so it cannot answer {method}"),
                    )
                });
            }
        }
        let (tx, rx) = oneshot::channel();
        self.owed.insert(jsonrpc::id_key(&id), tx);
        self.send_related(r.msg, r.related.as_ref());
        Box::pin(async move {
            match tokio::time::timeout(SERVER_REQUEST_TIMEOUT, rx).await {
                Ok(Ok(answer)) => answer,
                _ => jsonrpc::error(id, code::INTERNAL_ERROR, format!("the host did not answer {method}")),
            }
        })
    }
}

mod stateless;
pub use stateless::{session_for as stateless_session_for, StatelessTables};

#[cfg(test)]
mod tests;
