//! A `HostSession` that serves one MCP 2026-07-28 request. A stateless host has no session, so
//! each of its requests gets a session of its own that lives for that call: it carries the
//! client capabilities the request declared, answers in the 2026 dress, and turns the server
//! requests the upstream sends meanwhile (sampling, elicitation, roots) into an
//! `input_required` result. The call then waits, parked under a fresh request state, for the
//! host's retry; the retry's answers go to the upstream and the call goes on where it was.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::{HostSession, Negotiated, Transport};
use crate::jsonrpc::{self, code};
use crate::messages::{Close, ServerRequest, SessionRef, Sink};
use crate::modern::{self, RequestMeta};
use crate::outlet::Outlet;
use crate::session_deps::SessionDeps;
use crate::session_table::SessionTable;
use crate::ui_meta;

/// How long a call waits parked for the host's retry before it is cancelled upstream.
pub const PARK_LIMIT: Duration = Duration::from_secs(300);
/// Server requests that arrive this close together go out in one `input_required` result.
const GATHER: Duration = Duration::from_millis(40);

/// A server request waiting for the host's answer.
struct Input {
    request: Value,
    reply: oneshot::Sender<Value>,
}

/// What a stateless session knows beyond a session's usual state.
pub(super) struct Call {
    meta: RequestMeta,
    /// Where parked calls are found by their request state.
    parked: Arc<SessionTable>,
    /// The request as first sent (without round-trip fields): a retry must ask the same.
    original: Option<Value>,
    /// The host's id for the call, as the route to the upstream knows it.
    host_id: Option<Value>,
    /// The id the answer goes out under (the latest retry's).
    reply_id: Option<Value>,
    method: String,
    inputs: BTreeMap<String, Input>,
    counter: u64,
    /// The request state the host holds now (single use).
    state: Option<String>,
    parked_since: Option<Instant>,
    flush_scheduled: bool,
    /// The host closed its request's stream (seen when a message could not go out).
    hung_up: bool,
    /// Set when the call is a `subscriptions/listen`: its stream carries change notifications.
    listen: Option<Listen>,
    /// The upstream's answer, come while the call was parked: the retry gets it.
    held: Option<Value>,
    /// Answered: the session stops once what waits to go out has gone.
    finishing: bool,
}

/// What a listening host asked to hear of (and this service can tell).
struct Listen {
    /// The listen request's id, which tags every notification on its stream.
    id: Value,
    tools: bool,
    prompts: bool,
    resources: bool,
}

impl HostSession {
    /// A session for one stateless request that declared `meta`.
    pub fn stateless(id: String, transport: Transport, deps: SessionDeps, meta: RequestMeta, parked: Arc<SessionTable>) -> Self {
        let mut s = HostSession::new(id, transport, deps);
        let params = json!({"capabilities": meta.capabilities});
        s.negotiated = Some(Negotiated { ui: ui_meta::host_supports_ui(&params), client_caps: meta.capabilities.clone() });
        s.stateless = Some(Call {
            meta,
            parked,
            original: None,
            host_id: None,
            reply_id: None,
            method: String::new(),
            inputs: BTreeMap::new(),
            counter: 0,
            state: None,
            parked_since: None,
            flush_scheduled: false,
            hung_up: false,
            listen: None,
            held: None,
            finishing: false,
        });
        s
    }

    pub(super) fn is_stateless(&self) -> bool {
        self.stateless.is_some()
    }

    /// A request to a stateless session: the first one starts the call (its own `_meta` keys
    /// stay here); a later one is the host's retry with answers. `Some` hands the request on to
    /// the usual handling.
    pub(super) fn stateless_request(
        &mut self,
        ctx: &mut Context<Self>,
        mut msg: Value,
        sink: Option<Sink>,
        request_id: &str,
    ) -> Option<(Value, Option<Sink>)> {
        let call = self.stateless.as_mut()?;
        let (responses, presented) = modern::take_round_trip(&mut msg);
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let Some(original) = call.original.clone() else {
            // A first call that carries answers has nothing to answer yet: they are ignored.
            modern::strip_request_meta(&mut msg);
            call.method = jsonrpc::method(&msg).unwrap_or_default().to_string();
            call.original = Some(msg.clone());
            call.host_id = Some(id.clone());
            call.reply_id = Some(id);
            return Some((msg, sink));
        };
        let refuse = |why: &str| {
            if let Some(s) = &sink {
                let err = jsonrpc::error(
                    id.clone(),
                    code::INVALID_PARAMS,
                    format!("Invalid or expired requestState: {why}; call again without it"),
                );
                let _ = s.try_send(err);
            }
        };
        if !modern::same_call(&original, &msg) {
            refuse("it was issued for a different request (method, name or arguments differ)");
            return None;
        }
        if presented.is_none() || presented != call.state {
            refuse("it was already used"); // two retries raced with one state: one wins
            return None;
        }
        if let Some(held) = call.held.take() {
            // The call ended while parked: its answer goes to this retry.
            if let Some(old) = call.state.take() {
                call.parked.remove(&old);
            }
            call.reply_id = Some(id);
            let answer = self.stateless_answer(held);
            if let Some(s) = &sink {
                let _ = s.try_send(answer);
            }
            self.stateless_finish();
            return None;
        }
        let key = jsonrpc::id_key(call.host_id.as_ref().unwrap_or(&Value::Null));
        let Some(f) = self.in_flight.get_mut(&key) else {
            refuse("that call has already finished");
            return None;
        };
        if f.sink.as_ref().is_some_and(|o| !o.is_closed()) {
            refuse("that call is already being resumed by another request");
            return None;
        }
        // The state is spent: the next round (if any) gets a new one.
        if let Some(old) = call.state.take() {
            call.parked.remove(&old);
        }
        call.parked_since = None;
        call.hung_up = false;
        f.sink = sink.map(Outlet::new);
        if let Some(host_id) = call.host_id.clone() {
            self.deps.router.hold_route(&self.id, &host_id, false);
        }
        let call = self.stateless.as_mut().expect("stateless");
        f.request_id = request_id.to_string();
        call.reply_id = Some(id);
        let responses = responses.and_then(|r| r.as_object().cloned()).unwrap_or_default();
        for (k, answer) in responses {
            let Some(input) = call.inputs.get(&k) else { continue }; // unknown keys are ignored
            let method = jsonrpc::method(&input.request).unwrap_or_default();
            if !modern::valid_response(method, &answer) {
                continue; // asked again below, rather than passing garbage upstream
            }
            let input = call.inputs.remove(&k).expect("present");
            let host_side_id = jsonrpc::id(&input.request).cloned().unwrap_or(Value::Null);
            let _ = input.reply.send(jsonrpc::result(host_side_id, answer));
        }
        if !call.inputs.is_empty() {
            self.flush_inputs(ctx);
        }
        None
    }

    /// A server request during a stateless call: it waits here until the host answers it in a
    /// retry. A capability the host did not declare is refused at once.
    pub(super) fn stateless_server_request(&mut self, ctx: &mut Context<Self>, r: ServerRequest) -> ResponseFuture<Value> {
        let id = jsonrpc::id(&r.msg).cloned().unwrap_or(Value::Null);
        let method = jsonrpc::method(&r.msg).unwrap_or_default().to_string();
        let caps = self.negotiated.as_ref().map(|n| n.client_caps.clone()).unwrap_or(json!({}));
        let Some(cap) = modern::capability_for(&method) else {
            return Box::pin(async move {
                jsonrpc::error(id, code::METHOD_NOT_FOUND, format!("{method} cannot be asked of a {} host", modern::VERSION))
            });
        };
        if caps.get(cap).is_none_or(Value::is_null) {
            return Box::pin(async move {
                jsonrpc::error_with_data(
                    id,
                    modern::errors::MISSING_CAPABILITY,
                    format!("the host did not declare the {cap} capability, so it cannot answer {method}"),
                    json!({"requiredCapabilities": {cap: {}}}),
                )
            });
        }
        let call = self.stateless.as_mut().expect("stateless");
        if call.listen.is_some() {
            return Box::pin(async move {
                jsonrpc::error(id, code::METHOD_NOT_FOUND, format!("the host is only listening for changes; it cannot answer {method}"))
            });
        }
        call.counter += 1;
        // A 2026 upstream's own key is kept (its host may expect it); otherwise one of ours.
        let key = match r.key.filter(|k| !k.is_empty() && k.len() <= 256 && !call.inputs.contains_key(k)) {
            Some(k) => k,
            None => modern::input_key(&method, call.counter),
        };
        let (tx, rx) = oneshot::channel();
        call.inputs.insert(key, Input { request: r.msg, reply: tx });
        if !call.flush_scheduled {
            call.flush_scheduled = true;
            ctx.run_later(GATHER, |act, ctx| {
                if let Some(c) = act.stateless.as_mut() {
                    c.flush_scheduled = false;
                }
                act.flush_inputs(ctx);
            });
        }
        Box::pin(async move {
            match tokio::time::timeout(PARK_LIMIT, rx).await {
                Ok(Ok(answer)) => answer,
                _ => jsonrpc::error(id, code::INTERNAL_ERROR, format!("the host did not answer {method} (it did not retry the call)")),
            }
        })
    }

    /// Answers the host's current request with the inputs still wanted, and parks the call
    /// under a new request state. Nothing happens while the host holds no open request.
    fn flush_inputs(&mut self, ctx: &mut Context<Self>) {
        let info = self.server_info();
        let me = self_ref(ctx, self.flags.clone());
        let Some(call) = self.stateless.as_mut() else { return };
        if call.inputs.is_empty() {
            return;
        }
        let key = jsonrpc::id_key(call.host_id.as_ref().unwrap_or(&Value::Null));
        let Some(mut outlet) = self.in_flight.get_mut(&key).and_then(|f| f.sink.take()) else { return };
        // Unguessable and single use: a tampered or replayed state finds nothing.
        let state = uuid::Uuid::new_v4().simple().to_string() + &uuid::Uuid::new_v4().simple().to_string();
        let wanted: Vec<(String, Value)> = call.inputs.iter().map(|(k, i)| (k.clone(), i.request.clone())).collect();
        let answer = jsonrpc::result(call.reply_id.clone().unwrap_or(Value::Null), modern::input_required(&wanted, &state));
        let answer = modern::dress_answer(answer, None, &info);
        call.parked.insert(state.clone(), me);
        call.state = Some(state);
        call.parked_since = Some(Instant::now());
        // While the host answers, the upstream request's deadline does not run.
        if let Some(host_id) = call.host_id.clone() {
            self.deps.router.hold_route(&self.id, &host_id, true);
        }
        // The request's stream ends with this answer (the outlet is dropped once it is out).
        if self.push(&mut outlet, answer, "request").is_none() && outlet.backlogged() {
            self.draining.push(outlet);
        }
    }

    /// The identity stateless answers carry in `_meta`: the upstream's, as initialize gave it.
    pub(super) fn server_info(&self) -> Value {
        let status = self.deps.router.status();
        status
            .init
            .as_ref()
            .and_then(|i| i.get("serverInfo").cloned())
            .unwrap_or(json!({"name": "mcp-gen-ui", "version": env!("CARGO_PKG_VERSION")}))
    }

    /// The answer to a stateless request, dressed for 2026 and sent under the retry's id.
    pub(super) fn stateless_answer(&mut self, mut answer: Value) -> Value {
        let info = self.server_info();
        let ui = self.ui();
        let Some(call) = self.stateless.as_ref() else { return answer };
        if let Some(id) = &call.reply_id {
            answer["id"] = id.clone();
        }
        let mut caching = modern::caching_for(&call.method);
        // A page of ours is the same for every host (refinements are shared), but any host may
        // refine or regenerate it at any moment: shareable, never guaranteed fresh.
        let uri = call.original.as_ref().and_then(|o| o.pointer("/params/uri")).and_then(Value::as_str);
        if call.method == "resources/read" && ui && uri.and_then(ui_meta::tool_of_uri).is_some() {
            caching = Some(modern::Caching { ttl_ms: 0, public: true });
        }
        modern::dress_answer(answer, caching, &info)
    }

    /// The call is over: the session goes once its answer has left (see `stateless_drained`).
    pub(super) fn stateless_finish(&mut self) {
        if let Some(call) = self.stateless.as_mut() {
            call.finishing = true;
        }
        if self.draining.is_empty() {
            self.stateless_drained();
        }
    }

    /// Nothing waits to go out any more: a finished call's session stops.
    pub(super) fn stateless_drained(&mut self) {
        if self.stateless.as_ref().is_some_and(|c| c.finishing) {
            if let Some(addr) = &self.self_addr {
                addr.do_send(Close);
            }
        }
    }

    /// An answer that came while the call was parked (the host holds no open request): kept
    /// for the retry. False when this is not such a call.
    pub(super) fn stateless_hold(&mut self, answer: &Value) -> bool {
        let Some(call) = self.stateless.as_mut() else { return false };
        if call.state.is_none() {
            return false;
        }
        call.held = Some(answer.clone());
        call.inputs.clear(); // the upstream no longer waits for them
        true
    }

    /// A cancellation naming the call's latest request (a retry's id) means the call itself,
    /// which the route knows by its first id.
    pub(super) fn stateless_cancellation(&self, mut msg: Value) -> Value {
        let Some(call) = self.stateless.as_ref() else { return msg };
        let names_reply = msg.pointer("/params/requestId").is_some_and(|r| Some(r) == call.reply_id.as_ref());
        if let (true, Some(host_id)) = (names_reply, call.host_id.clone()) {
            msg["params"]["requestId"] = host_id;
        }
        msg
    }

    /// Periodic check: a host that hung up on its request, or never came back for a parked
    /// call, cancels the call upstream.
    pub(super) fn stateless_reap(&mut self, ctx: &mut Context<Self>) {
        let Some(call) = self.stateless.as_ref() else { return };
        let key = jsonrpc::id_key(call.host_id.as_ref().unwrap_or(&Value::Null));
        let Some(f) = self.in_flight.get(&key) else {
            // Answered or cancelled; an answer held for a parked call waits for its retry,
            // within the park limit.
            let waiting = call.held.is_some() && call.parked_since.is_some_and(|t| t.elapsed() <= PARK_LIMIT);
            if call.original.is_some() && !waiting {
                ctx.stop();
            }
            return;
        };
        let hung_up = call.hung_up || f.sink.as_ref().is_some_and(|o| o.is_closed());
        let abandoned = call.parked_since.is_some_and(|t| t.elapsed() > PARK_LIMIT);
        if hung_up || abandoned {
            let reason = if hung_up { "the host closed its request" } else { "the host did not retry the call in time" };
            tracing::info!(component = "host_session", event = "stateless_cancelled", session = %self.id, reason, "cancelling a stateless call upstream");
            if let Some(host_id) = call.host_id.clone() {
                let msg = jsonrpc::notification("notifications/cancelled", json!({"requestId": host_id, "reason": reason}));
                self.on_notification(msg);
            }
            ctx.stop();
        }
    }

    /// The call's stream is gone: the next check cancels the call upstream.
    pub(super) fn stateless_hung_up(&mut self) {
        if let Some(call) = self.stateless.as_mut() {
            call.hung_up = true;
        }
    }

    /// `subscriptions/listen`: the request stays open and its stream carries the change
    /// notifications asked for, each tagged with the subscription (the request's id). Only what
    /// `server/discover` promised is honoured; the acknowledgement says which.
    pub(super) fn listen(&mut self, msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let Some(wanted) = msg.pointer("/params/notifications").and_then(Value::as_object).cloned() else {
            return self.answer(jsonrpc::error(id, code::INVALID_PARAMS, "params.notifications is required: which changes to hear of (toolsListChanged, promptsListChanged, resourcesListChanged, resourceSubscriptions)"));
        };
        let status = self.deps.router.status();
        let init = status.init.as_deref().cloned().unwrap_or(json!({}));
        let caps = modern::stateless_capabilities(ui_meta::merge_capabilities(init.get("capabilities").unwrap_or(&json!({})), self.ui()));
        let has = |cap: &str, flag: &str| modern::declares(&caps, cap, flag);
        let asked = |k: &str| wanted.get(k).and_then(Value::as_bool) == Some(true);
        let listen = Listen {
            id: id.clone(),
            tools: asked("toolsListChanged") && has("tools", "listChanged"),
            prompts: asked("promptsListChanged") && has("prompts", "listChanged"),
            resources: asked("resourcesListChanged") && has("resources", "listChanged"),
        };
        let mut honoured = serde_json::Map::new();
        for (k, on) in
            [("toolsListChanged", listen.tools), ("promptsListChanged", listen.prompts), ("resourcesListChanged", listen.resources)]
        {
            if on {
                honoured.insert(k.into(), json!(true));
            }
        }
        let mut uris: Vec<String> = wanted
            .get("resourceSubscriptions")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).take(256).map(str::to_string).collect())
            .unwrap_or_default();
        uris.sort();
        uris.dedup();
        let mut subscribed = Vec::new();
        for uri in uris {
            if self.ui() && ui_meta::tool_of_uri(&uri).is_some() {
                self.ui_subscriptions.insert(uri.clone());
                subscribed.push(json!(uri));
            } else if has("resources", "subscribe") {
                self.subscribe_upstream(uri.clone());
                subscribed.push(json!(uri));
            }
        }
        if !subscribed.is_empty() {
            honoured.insert("resourceSubscriptions".into(), Value::Array(subscribed));
        }
        if let Some(call) = self.stateless.as_mut() {
            call.listen = Some(listen);
        }
        let ack = jsonrpc::notification("notifications/subscriptions/acknowledged", json!({"notifications": honoured}));
        if let Some(ack) = self.tag_for_listener(ack) {
            self.send_related(ack, Some(&id));
        }
    }

    /// Holds an upstream subscription for a listening host. The upstream side files it under
    /// this session, and releases it when the session stops, whenever that is.
    fn subscribe_upstream(&mut self, uri: String) {
        let msg = jsonrpc::request(json!(format!("listen:{uri}")), "resources/subscribe", json!({"uri": uri}));
        self.deps.upstream.subscribe.do_send(crate::messages::Subscribe { session: self.id.clone(), msg });
        self.subscriptions.insert(uri);
    }

    /// A change notification for a listening host, tagged with its subscription; `None` when
    /// the host did not ask for it (or is not listening).
    pub(super) fn tag_for_listener(&self, mut msg: Value) -> Option<Value> {
        let listen = self.stateless.as_ref()?.listen.as_ref()?;
        let wanted = match jsonrpc::method(&msg)? {
            "notifications/tools/list_changed" => listen.tools,
            "notifications/prompts/list_changed" => listen.prompts,
            "notifications/resources/list_changed" => listen.resources,
            // Sent only for URIs this session subscribed (see HostEvent::ResourceUpdated).
            "notifications/resources/updated" | "notifications/subscriptions/acknowledged" => true,
            _ => false,
        };
        if !wanted {
            return None;
        }
        if !msg.get("params").is_some_and(Value::is_object) {
            msg["params"] = json!({});
        }
        let meta = msg["params"].as_object_mut().expect("an object").entry("_meta").or_insert_with(|| json!({}));
        if let Some(m) = meta.as_object_mut() {
            m.insert(modern::META_SUBSCRIPTION.into(), listen.id.clone());
        }
        Some(msg)
    }

    /// The listen request's id, while this session is a listener.
    pub(super) fn listen_id(&self) -> Option<Value> {
        Some(self.stateless.as_ref()?.listen.as_ref()?.id.clone())
    }

    /// Leaves the table of parked calls.
    pub(super) fn stateless_stopped(&mut self) {
        if let Some(call) = self.stateless.as_mut() {
            if let Some(state) = call.state.take() {
                call.parked.remove(&state);
            }
        }
    }

    /// Whether a notification for the host of this stateless call may go to it: log messages
    /// only at the level the request asked for.
    pub(super) fn stateless_allows(&self, msg: &Value) -> bool {
        let Some(call) = self.stateless.as_ref() else { return true };
        if jsonrpc::method(msg) != Some("notifications/message") {
            return true;
        }
        let level = msg.pointer("/params/level").and_then(Value::as_str);
        modern::log_wanted(level, call.meta.log_level.as_deref())
    }
}

fn self_ref(ctx: &mut Context<HostSession>, flags: Arc<crate::messages::SessionFlags>) -> SessionRef {
    let addr = ctx.address();
    SessionRef { incoming: addr.clone().recipient(), attach: addr.clone().recipient(), close: addr.recipient(), flags }
}

/// Where stateless calls are kept track of.
#[derive(Clone, Default)]
pub struct StatelessTables {
    /// Every stateless session alive (in flight, parked or listening), by session id: its size
    /// is what `limits.maxSessions` bounds.
    pub live: Arc<SessionTable>,
    /// Parked calls by the request state their host holds.
    pub parked: Arc<SessionTable>,
}

/// Starts a session for a stateless request on the current arbiter, or finds the parked call a
/// retry's request state names. `Err` is the JSON-RPC error to answer with.
pub fn session_for(
    deps: &SessionDeps,
    tables: &StatelessTables,
    transport: Transport,
    msg: &Value,
    meta: RequestMeta,
) -> Result<SessionRef, Value> {
    let parked = &tables.parked;
    let id = jsonrpc::id(msg).cloned().unwrap_or(Value::Null);
    if let Some(state) = jsonrpc::params(msg).get("requestState") {
        let found = state.as_str().and_then(|s| parked.get(s));
        return found.ok_or_else(|| {
            jsonrpc::error(
                id,
                code::INVALID_PARAMS,
                "Invalid or expired requestState: it is not one this server issued, it was already used, or the call it belonged to ended; call again without it",
            )
        });
    }
    let session_id = uuid::Uuid::new_v4().simple().to_string();
    // The session leaves `live` when it stops (`SessionDeps::sessions`).
    let deps = SessionDeps { sessions: Some(tables.live.clone()), ..deps.clone() };
    let session = HostSession::stateless(session_id.clone(), transport, deps, meta, parked.clone()).start_session();
    tables.live.insert(session_id, session.clone());
    Ok(session)
}
