//! A `HostSession` that serves one MCP 2026-07-28 request. A stateless host has no session, so
//! each of its requests gets a session of its own that lives for that call: it carries the
//! client capabilities the request declared, answers in the 2026 dress, and turns the server
//! requests the upstream sends meanwhile (sampling, elicitation, roots) into an
//! `input_required` result. The call then waits, parked under a fresh request state, for the
//! host's retry; the retry's answers go to the upstream and the call goes on where it was.

mod listen;
mod listen_tasks;
mod rounds;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::{Era, HostSession, Negotiated, Transport};
use crate::mcp::jsonrpc::{self, code};
use crate::mcp::revision_2026::{self, RequestMeta};
use crate::mcp::ui_meta;
use crate::messages::{Close, SessionPorts, SessionRef};
use crate::session::deps::SessionDeps;
use crate::session::table::{Lookup, SessionTable};

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
pub(in crate::session) struct Call {
    /// The log level the request asked for: all of its `_meta` a call needs once started (its
    /// capabilities are in `Negotiated`, trimmed; a parked call or a listen is kept a while).
    log_level: Option<String>,
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
    pub(in crate::session) hung_up: bool,
    /// Set when the call is a `subscriptions/listen`: its stream carries change notifications.
    listen: Option<Listen>,
    /// The upstream's answer, come while the call was parked: the retry gets it.
    held: Option<Value>,
    /// Answered: the session stops once what waits to go out has gone.
    finishing: bool,
    /// The progress token of the request that carries the call now (a retry is a new request
    /// with its own, or none): progress goes out under it, else not at all.
    progress_token: Option<Value>,
}

/// What a listening host asked to hear of (and this service can tell).
struct Listen {
    /// The listen request's id, which tags every notification on its stream.
    id: Value,
    tools: bool,
    prompts: bool,
    resources: bool,
    /// The tasks (ids as hosts know them, the person's own) whose status it hears of.
    tasks: Vec<String>,
    /// The newest status of each task whose end is being waited for (see `listen_tasks`): one
    /// wait per task, told in the order the server said.
    settling: std::collections::HashMap<String, Value>,
}

impl HostSession {
    /// A session for one stateless request that declared `meta`.
    pub fn stateless(id: String, transport: Transport, deps: Arc<SessionDeps>, meta: RequestMeta, parked: Arc<SessionTable>) -> Self {
        let mut s = HostSession::new(id, transport, deps);
        let params = json!({"capabilities": meta.capabilities});
        s.negotiated = Some(Negotiated {
            dialect: ui_meta::host_dialect(&params, s.deps.apps_sdk),
            client_caps: crate::mcp::revision_2026::answerable(&meta.capabilities),
            version: crate::mcp::revision_2026::VERSION,
            tasks: meta.capabilities.pointer("/extensions/io.modelcontextprotocol~1tasks").is_some_and(Value::is_object),
            task_requests: (false, false),
        });
        s.era = Era::Stateless(Box::new(Call {
            log_level: meta.log_level,
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
            progress_token: None,
        }));
        s
    }

    /// The identity stateless answers carry in `_meta`: the upstream's, as initialize gave it
    /// (this service's with several servers).
    pub(in crate::session) fn server_info(&self) -> Value {
        self.deps.fleet.server_info()
    }

    /// The answer to a stateless request, dressed for 2026 and sent under the retry's id.
    pub(in crate::session) fn stateless_answer(&mut self, mut answer: Value) -> Value {
        let info = self.server_info();
        let ui = self.ui();
        let Some(call) = self.call() else { return answer };
        if let Some(id) = &call.reply_id {
            answer["id"] = id.clone();
        }
        let mut caching = revision_2026::caching_for(&call.method);
        // A page of ours is the same for every host (refinements are shared), but any host may
        // refine or regenerate it at any moment: shareable, never guaranteed fresh.
        let uri = call.original.as_ref().and_then(|o| o.pointer("/params/uri")).and_then(Value::as_str);
        if call.method == "resources/read"
            && ui
            && uri.is_some_and(|u| crate::session::plan::is_our_page(&self.deps.fleet, &self.deps.fleet.catalog(), u))
        {
            caching = Some(revision_2026::Caching { ttl_ms: 0, public: true });
        }
        revision_2026::dress_answer(answer, caching, &info)
    }

    /// The call is over: the session goes once its answer has left (see `stateless_drained`).
    pub(in crate::session) fn stateless_finish(&mut self) {
        if let Some(call) = self.call_mut() {
            call.finishing = true;
        }
        if self.draining.is_empty() {
            self.stateless_drained();
        }
    }

    /// Nothing waits to go out any more: a finished call's session stops.
    pub(in crate::session) fn stateless_drained(&mut self) {
        if self.call().is_some_and(|c| c.finishing) {
            if let Some(addr) = &self.self_addr {
                addr.do_send(Close);
            }
        }
    }

    /// Periodic check: a host that hung up on its request, or never came back for a parked
    /// call, cancels the call upstream.
    pub(in crate::session) fn stateless_reap(&mut self, ctx: &mut Context<Self>) {
        let Some(call) = self.call() else { return };
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
            tracing::info!(component = "host_session", event = "stateless_cancelled", session = %self.log_id, reason, "cancelling a stateless call upstream");
            if let Some(host_id) = call.host_id.clone() {
                let msg = jsonrpc::notification("notifications/cancelled", json!({"requestId": host_id, "reason": reason}));
                self.on_notification(msg);
            }
            ctx.stop();
        }
    }
}

impl Call {
    /// An answer that came while the call was parked (the host holds no open request): kept
    /// for the retry. False when the call is not parked.
    pub(in crate::session) fn hold(&mut self, answer: &Value) -> bool {
        if self.state.is_none() {
            return false;
        }
        self.held = Some(answer.clone());
        self.inputs.clear(); // the upstream no longer waits for them
        true
    }

    /// A cancellation naming the call's latest request (a retry's id) means the call itself,
    /// which the route knows by its first id.
    pub(in crate::session) fn cancellation(&self, mut msg: Value) -> Value {
        let names_reply = msg.pointer("/params/requestId").is_some_and(|r| Some(r) == self.reply_id.as_ref());
        if let (true, Some(host_id)) = (names_reply, self.host_id.clone()) {
            msg["params"]["requestId"] = host_id;
        }
        msg
    }

    /// Leaves the table of parked calls (the session stopped).
    pub(in crate::session) fn leave_parked(&mut self) {
        if let Some(state) = self.state.take() {
            self.parked.remove(&state);
        }
    }

    /// The log level the request asked for (`io.modelcontextprotocol/logLevel`).
    pub(in crate::session) fn log_level(&self) -> Option<&str> {
        self.log_level.as_deref()
    }

    /// Whether a notification may go to the host of this call: log messages only at the
    /// level the request asked for.
    pub(in crate::session) fn allows(&self, msg: &Value) -> bool {
        match jsonrpc::method(msg) {
            // 2026 polls a task (tasks/get); a 2025 server's status notice is not its wire.
            Some("notifications/tasks/status") => return false,
            // Only a request that asked for progress hears it (a retry may not have).
            Some("notifications/progress") => return self.progress_token.is_some(),
            Some("notifications/message") => {}
            _ => return true,
        }
        let level = msg.pointer("/params/level").and_then(Value::as_str);
        revision_2026::log_wanted(level, self.log_level.as_deref())
    }

    /// A call's progress, under the token of the request that carries the call now.
    pub(in crate::session) fn progress_of_leg(&self, msg: &mut Value) {
        if jsonrpc::method(msg) != Some("notifications/progress") {
            return;
        }
        if let (Some(token), Some(p)) = (&self.progress_token, msg.get_mut("params").and_then(Value::as_object_mut)) {
            p.insert("progressToken".into(), token.clone());
        }
    }

    /// The token `msg` (a request carrying the call) asks progress under.
    pub(in crate::session) fn set_leg(&mut self, msg: &Value) {
        self.progress_token = msg.pointer("/params/_meta/progressToken").filter(|t| t.is_string() || t.is_i64() || t.is_u64()).cloned();
    }
}

pub(in crate::session) fn self_ref(ctx: &mut Context<HostSession>, flags: Arc<crate::messages::SessionFlags>) -> SessionRef {
    let addr = ctx.address();
    SessionRef::new(SessionPorts {
        incoming: addr.clone().recipient(),
        attach: addr.clone().recipient(),
        close: addr.recipient(),
        flags,
        profile: None,
    })
}

/// Where stateless calls are kept track of, and what their sessions are given.
#[derive(Clone)]
pub struct StatelessTables {
    /// Every stateless session alive (in flight, parked or listening), by session id: its size
    /// is what `limits.maxSessions` bounds.
    pub live: Arc<SessionTable>,
    /// Parked calls by the request state their host holds.
    pub parked: Arc<SessionTable>,
    /// What every stateless session is given (`sessions` is `live`, which it leaves when it
    /// stops): one Arc, since a copy for each call would clone every port in it.
    deps: Arc<SessionDeps>,
}

impl StatelessTables {
    /// Empty tables whose sessions get `deps`.
    pub fn new(deps: &SessionDeps) -> Self {
        let live = Arc::new(SessionTable::default());
        StatelessTables { deps: Arc::new(SessionDeps { sessions: Some(live.clone()), ..deps.clone() }), live, parked: Arc::default() }
    }
}

/// Starts a session for a stateless request on the current arbiter, or finds the parked call a
/// retry's request state names. `Err` is the JSON-RPC error to answer with.
pub fn session_for(
    tables: &StatelessTables,
    transport: Transport,
    msg: &Value,
    meta: RequestMeta,
    who: &Arc<crate::who::Who>,
    profile: Option<Arc<str>>,
) -> Result<SessionRef, Value> {
    let principal = &who.key;
    let parked = &tables.parked;
    let id = jsonrpc::id(msg).cloned().unwrap_or(Value::Null);
    if let Some(state) = jsonrpc::params(msg).get("requestState") {
        // Another principal's state is answered like one that never existed.
        let found = match state.as_str().map(|s| parked.lookup(s, principal)) {
            Some(Lookup::Found(s)) => Some(s),
            Some(Lookup::Foreign) => {
                tables.deps.metrics.refusals.with_label_values(&["foreign_session"]).inc();
                None
            }
            _ => None,
        };
        return found.ok_or_else(|| {
            jsonrpc::error(
                id,
                code::INVALID_PARAMS,
                "Invalid or expired requestState: it is not one this server issued, it was already used, or the call it belonged to ended; call again without it",
            )
        });
    }
    let session_id = uuid::Uuid::new_v4().simple().to_string();
    let session = HostSession::stateless(session_id.clone(), transport, tables.deps.clone(), meta, parked.clone())
        .owned_by(who.clone())
        .in_profile(profile)
        .start_session();
    tables.live.insert(session_id, session.clone(), principal.clone());
    Ok(session)
}
