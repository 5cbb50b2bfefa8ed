//! What the session does with each message from its host: requests by method (answered
//! here, shaped, or forwarded), notifications (cancellation first), and the host's answers to
//! server requests.

use crate::mcp::jsonrpc::At;
use std::sync::atomic::Ordering;
use std::time::Instant;

use actix::prelude::*;
use serde_json::{json, Value};

use super::plan::{self, Facts, Method, Plan};
use super::{Era, HostSession, InFlight, Negotiated, HOST_PROTOCOL_VERSIONS};
use crate::mcp::jsonrpc::{self, code, Kind};
use crate::mcp::{revision_2026, tasks_2026, ui_meta};
use crate::messages::{Incoming, Sink};
use crate::metrics::method_label;
use crate::servers::catalog::Catalog;
use crate::session::outlet::Outlet;
use crate::session::ui_tools;
use crate::trace::TraceCx;

impl HostSession {
    /// Answers a request refused before it was taken in: on its own stream, else the session's.
    fn refuse(&mut self, sink: Option<Sink>, err: Value) {
        match sink {
            Some(s) => drop(s.try_send(err)),
            None => self.send_session(err),
        }
    }

    /// The server span of a request (see `spans`).
    fn request_span(&self, msg: &Value, id: &Value, edge: TraceCx, request_id: &str) -> crate::trace::Span {
        if !crate::trace::enabled() {
            return crate::trace::Span::none();
        }
        let era = if matches!(self.era, Era::Stateless(_)) { "stateless" } else { "session" };
        let version = self.negotiated.as_ref().map(|n| n.version);
        let network = if self.transport == super::Transport::Stdio { "pipe" } else { "tcp" };
        let catalog = self.deps.fleet.catalog();
        let known_tool = |t: &str| t.starts_with(ui_tools::PREFIX) || catalog.tool(t).is_some();
        let side = super::spans::SessionSide { log_id: &self.log_id, era, version, network, request_id, known_tool: &known_tool };
        super::spans::request_span(msg, id, edge, &side)
    }

    pub(super) fn on_request(&mut self, ctx: &mut Context<Self>, msg: Value, sink: Option<Sink>, request_id: String, trace: TraceCx) {
        let (msg, sink) = match self.era {
            Era::Stateless(_) => match self.stateless_request(ctx, msg, sink, &request_id) {
                Some(first) => first,
                None => return, // a retry: it resumed the parked call
            },
            Era::Session => (msg, sink),
        };
        let id = jsonrpc::id(&msg).cloned().expect("requests have ids");
        let method = jsonrpc::method(&msg).unwrap_or_default().to_string();
        let key = jsonrpc::id_key(&id);
        if self.in_flight.contains_key(&key) {
            let err = jsonrpc::error(id, code::INVALID_REQUEST, "a request with this id is still in flight in this session; use a new id");
            return self.refuse(sink, err);
        }
        let max = self.deps.limits.max_in_flight;
        if self.in_flight.len() >= max {
            self.metrics.refusals.with_label_values(&["max_in_flight"]).inc();
            let why = format!(
                "this session already has {max} requests in flight (limits.maxInFlightPerSession); wait for an answer before sending more"
            );
            return self.refuse(sink, jsonrpc::error(id, code::LIMITED, why));
        }
        let span = self.request_span(&msg, &id, trace, &request_id);
        let trace_id = span.cx().trace_id();
        tracing::debug!(component = "host_session", event = "request", requestId = %request_id, trace_id = trace_id.as_deref(), session = %self.log_id, method = %method, "request received");
        self.in_flight.insert(
            key,
            InFlight {
                method: method_label(&method),
                sink: sink.map(Outlet::new),
                request_id,
                started: Instant::now(),
                route: None,
                span,
                audit: None,
                task: None,
                tool: None,
                limited: false,
            },
        );

        if self.negotiated.is_none() && !matches!(method.as_str(), "initialize" | "ping") {
            // Hosts must initialize first; tolerate the ones that don't by treating them as
            // plain (no UI) hosts rather than refusing: the upstream decides what is valid.
            tracing::debug!(component = "host_session", event = "no_initialize", session = %self.log_id, method = %method, "request before initialize");
        }
        if let Era::Stateless(_) = self.era {
            match method.as_str() {
                "server/discover" => return self.discover(ctx, id),
                "subscriptions/listen" => return self.listen(msg),
                m if revision_2026::REMOVED_METHODS.contains(&m) || tasks_2026::NOT_IN_2026.contains(&m) => {
                    let why = format!("Method not found: {m} is not part of MCP {} (stateless)", revision_2026::VERSION);
                    return self.answer(jsonrpc::error(id, code::METHOD_NOT_FOUND, why));
                }
                m @ ("tasks/get" | "tasks/update" | "tasks/cancel") if !self.speaks_tasks() => {
                    return self.answer(tasks_2026::missing_extension(id, m));
                }
                _ => {}
            }
        }
        let method = Method::of(&method);
        // A task made through another replica: its route is learnt from them first.
        if method == Method::Task {
            let asked = msg.at("/params/taskId").and_then(Value::as_str).unwrap_or_default().to_string();
            if let Some(read) = self.deps.fleet.hosts().tasks().fetch(&asked) {
                ctx.spawn(read.into_actor(self).map(move |found, act, ctx| {
                    if let Some(route) = found {
                        act.deps.fleet.hosts().tasks().adopt(route);
                    }
                    act.with_catalog(ctx, id, move |act, ctx, catalog| act.plan_and_carry_out(ctx, msg, &catalog));
                }));
                return;
            }
        }
        if !method.needs_catalog() {
            let catalog = self.deps.fleet.catalog();
            return self.plan_and_carry_out(ctx, msg, &catalog);
        }
        // Lists and reads are made from the servers as they are once they could be listed.
        self.with_catalog(ctx, id, move |act, ctx, catalog| act.plan_and_carry_out(ctx, msg, &catalog));
    }

    fn plan_and_carry_out(&mut self, ctx: &mut Context<Self>, msg: Value, catalog: &Catalog) {
        self.plan_then_carry_out(ctx, msg, catalog, true);
    }

    /// `learn`: a call to a tool nobody knows yet may be to a person's own server whose tools
    /// are not learned: that person's connection is started, and the call planned again once
    /// (hosts that keep tool lists, and 2026 clients, call without listing first).
    fn plan_then_carry_out(&mut self, ctx: &mut Context<Self>, mut msg: Value, catalog: &Catalog, learn: bool) {
        let profile = match self.profile_now() {
            Ok(p) => p,
            Err(gone) => return self.answer(gone.answer(jsonrpc::id(&msg).cloned().unwrap_or(Value::Null))),
        };
        let facts = Facts { ui: self.ui(), profile: profile.as_deref() };
        let deps = self.deps.clone();
        let planned = plan::plan(&mut msg, &deps.fleet, catalog, facts, &|t| deps.page_rule(t), &self.access());
        if learn && matches!(planned, Plan::Refuse(_)) && jsonrpc::method(&msg) == Some("tools/call") {
            let name = msg.at("/params/name").and_then(Value::as_str).unwrap_or_default().to_string();
            let learning = self.learn_per_principal_servers(Some(&name));
            if !learning.is_empty() {
                return self.after_learning(ctx, learning, move |act, ctx| {
                    let catalog = act.deps.fleet.catalog();
                    act.plan_then_carry_out(ctx, msg, &catalog, false)
                });
            }
        }
        self.carry_out(ctx, msg, planned);
    }

    /// Does what the plan says; every decision about where a request goes was made in `plan`.
    fn carry_out(&mut self, ctx: &mut Context<Self>, msg: Value, planned: Plan) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        self.count_by_tool(&id, &planned);
        if let Err(refused) = self.audit_start(&msg, &planned) {
            return self.answer(refused);
        }
        match planned {
            Plan::Initialize => self.initialize(ctx, msg),
            Plan::Keepalive => self.keepalive_or_level(ctx, msg),
            Plan::ToolsList => self.tools_list(ctx, msg),
            Plan::UiTool => self.ui_tool_call(ctx, msg),
            Plan::Forward { server, after } => self.forward_governed(ctx, server, msg, after),
            Plan::ResourcesList { from } => self.resources_list(ctx, msg, from),
            Plan::List { method, key, capability, from } => self.gathered_list(ctx, msg, method, key, capability, from),
            Plan::ReadPage(tool) => {
                let uri = msg.at("/params/uri").and_then(Value::as_str).unwrap_or_default().to_string();
                self.read_page(ctx, id, uri, tool)
            }
            Plan::SubscribePage { uri, on } => self.subscribe_page(id, uri, on),
            Plan::Subscribe { server, uri, on } => self.subscribe_server(ctx, msg, server, uri, on),
            // The 2026-07-28 handshake from a session-era host: "not found", so that clients in
            // auto mode fall back to initialize, which this proxy speaks.
            Plan::Discover => self.answer(jsonrpc::error(id, code::METHOD_NOT_FOUND, "server/discover is not supported; use initialize")),
            Plan::Listen => self.listen(msg),
            Plan::Task { server, task } => self.task_request(ctx, server, task, msg),
            Plan::TasksList => self.tasks_list(ctx, msg),
            Plan::Search(call) => self.search_call(ctx, id, call),
            Plan::ReadCallToolPage => self.read_call_tool_page(id),
            Plan::ReadApprovalsPage => self.read_approvals_page(id),
            Plan::Refuse(err) => self.answer(err),
            Plan::Denied(denied) => {
                self.audit_denied(&msg, &denied);
                self.answer(denied.error(id))
            }
        }
    }

    /// A call of a tool the catalog has (forwarded, or refused by the rules) is counted by
    /// tool when answered.
    fn count_by_tool(&mut self, id: &Value, planned: &Plan) {
        let (server, tool) = match planned {
            Plan::Forward { server, after: super::plan::After::ToolResult { exposed } } => (server.name.clone(), exposed.as_str()),
            Plan::Denied(d) if d.kind == crate::policy::Kind::Tools && !d.method => match &d.server {
                Some(server) => (server.clone(), d.name.as_str()),
                None => return,
            },
            _ => return,
        };
        if self.deps.fleet.catalog().tool(tool).is_none() {
            return; // a name a host made up gets no series of its own
        }
        let series = self.metrics.tools.of(&server, tool);
        if let Some(f) = self.in_flight.get_mut(&jsonrpc::id_key(id)) {
            f.tool = Some(series);
        }
    }

    /// `ping` and `logging/setLevel`. A bare server of the session era answers them itself; a
    /// 2026 upstream has neither, and prefixed servers have one each: then they are answered here
    /// (log messages then come only with a request that asks for them), a level being passed
    /// on to every session-era server.
    fn keepalive_or_level(&mut self, ctx: &mut Context<Self>, msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        if jsonrpc::method(&msg) == Some("logging/setLevel") {
            self.set_log_level(&msg);
        }
        if let Some(bare) = self.deps.fleet.bare().filter(|s| !s.router.upstream_is_2026()) {
            return self.forward_to(ctx, bare, msg);
        }
        if jsonrpc::method(&msg) == Some("logging/setLevel") {
            for s in self.deps.fleet.servers().iter().filter(|s| s.router.status().ready && !s.router.upstream_is_2026()) {
                drop(s.router.internal_request("logging/setLevel", jsonrpc::params(&msg).clone()));
            }
        }
        self.answer(jsonrpc::result(id, json!({})));
    }

    pub(super) fn on_notification(&mut self, msg: Value) {
        match jsonrpc::method(&msg).unwrap_or_default() {
            "notifications/initialized" => {}
            "notifications/cancelled" => {
                let msg = match self.call() {
                    Some(call) => call.cancellation(msg),
                    None => msg,
                };
                // A call the service runs as a task: the task goes with it.
                if let Some(req) = msg.at("/params/requestId") {
                    self.cancel_running(&jsonrpc::key_of(req));
                }
                let Some(f) = msg.at("/params/requestId").and_then(|req| self.end_in_flight(&jsonrpc::key_of(req))) else {
                    return;
                };
                self.metrics.requests.with_label_values(&[f.method, "cancelled"]).inc();
                if let Some(line) = f.audit {
                    line.finish("cancelled");
                }
                // Only the server the request went to has heard of it.
                if let Some(router) = f.route {
                    router.forward_notification(&self.id, msg);
                }
            }
            // The host's roots and the like: every server its person may use, and no other,
            // within its person's rate (a flood would fill the servers' queues and the trail).
            method => {
                let rate = self.deps.limits.notifications_per_second;
                if !crate::rate_window::take_one_for(&self.deps.notification_buckets, &self.who.key, rate, Instant::now()) {
                    return self.refuse_notification(rate);
                }
                let catalog = self.deps.fleet.catalog();
                // A profile gone in a reload sees nothing.
                let profile = self.profile_now().map_err(|_| ());
                let access = self.access();
                let mut to = Vec::new();
                for s in self.deps.fleet.servers().iter() {
                    if profile.as_ref().is_ok_and(|p| access.may_use_server(&catalog, p.as_deref(), &s.name)) {
                        s.router.forward_notification(&self.id, msg.clone());
                        to.push(s.name.clone());
                    }
                }
                if !matches!(method, "notifications/roots/list_changed" | "notifications/progress") {
                    self.audit_notification(method, &to);
                }
            }
        }
    }

    /// A host notification over its person's rate: not forwarded, not in the trail, counted
    /// (and said in the log at most once a minute).
    fn refuse_notification(&self, rate: u32) {
        static LAST_WARN_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        self.metrics.refusals.with_label_values(&["host_notifications"]).inc();
        let now = crate::messages::monotonic_ms().max(1);
        let last = LAST_WARN_MS.load(Ordering::Relaxed);
        if (last == 0 || now.saturating_sub(last) >= 60_000)
            && LAST_WARN_MS.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            tracing::warn!(component = "host_session", event = "host_notifications_refused", session = %self.log_id, principal = %self.who.name, rate, "a host sends notifications faster than limits.hostNotificationsPerSecond allows its person: the excess is refused (counted in mcp_gen_ui_refusals_total{{reason=\"host_notifications\"}}; said once a minute)");
        }
    }

    pub(super) fn on_response(&mut self, msg: Value) {
        let key = jsonrpc::id_key(jsonrpc::id(&msg).expect("responses have ids"));
        match self.owed.remove(&key) {
            Some(tx) => drop(tx.send(msg)),
            None => {
                tracing::debug!(component = "host_session", event = "unexpected_response", session = %self.log_id, "host answered a request we did not send (or already timed out)")
            }
        }
    }

    pub(super) fn initialize(&mut self, ctx: &mut Context<Self>, msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let params = jsonrpc::params(&msg).clone();
        let requested = params.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
        let version = HOST_PROTOCOL_VERSIONS.iter().copied().find(|v| *v == requested).unwrap_or(HOST_PROTOCOL_VERSIONS[0]);
        let dialect = ui_meta::host_dialect(&params, self.deps.apps_sdk);
        if dialect.is_none() {
            tracing::info!(component = "host_session", event = "pass_through", session = %self.log_id, "host does not declare io.modelcontextprotocol/ui: tools pass through without UI");
        }
        // Only what server requests are checked against is kept: a host's extensions and the
        // like would cost every open session a copy (about 1 KB for the UI extension alone).
        let client_caps = revision_2026::answerable(params.get("capabilities").unwrap_or(&Value::Null));
        let asks = client_caps.as_object().is_some_and(|caps| !caps.is_empty());
        self.flags.streams.store(asks, Ordering::Relaxed);
        // The edge answers ready pages itself only in the dialect they were kept in (MCP Apps).
        self.flags.ui.store(dialect.is_some_and(ui_meta::Dialect::mcp_apps), Ordering::Relaxed);
        let tasks = params.at("/capabilities/tasks").is_some_and(Value::is_object);
        let runs = |p: &str| params.at(&format!("/capabilities/tasks/requests/{p}")).is_some_and(Value::is_object);
        let task_requests = (runs("sampling/createMessage"), runs("elicitation/create"));
        self.negotiated = Some(Negotiated { dialect, client_caps, version, tasks, task_requests });
        self.with_catalog(ctx, id.clone(), move |act, _ctx, _| {
            let fleet = &act.deps.fleet;
            let mut result = json!({
                "protocolVersion": version,
                "capabilities": ui_meta::merge_capabilities(&fleet.capabilities(), dialect),
                "serverInfo": fleet.server_info(),
            });
            if let Some(instr) = fleet.instructions() {
                result["instructions"] = instr;
            }
            act.answer(jsonrpc::result(id, result));
        });
    }

    /// `server/discover` (2026-07-28): what initialize would have said, for a stateless host.
    pub(super) fn discover(&mut self, ctx: &mut Context<Self>, id: Value) {
        self.with_catalog(ctx, id.clone(), move |act, _ctx, _| {
            let fleet = &act.deps.fleet;
            let caps = ui_meta::merge_capabilities(&fleet.capabilities(), act.dialect());
            let result = revision_2026::discover_result(caps, &fleet.server_info(), fleet.instructions().as_ref());
            act.answer(jsonrpc::result(id, result));
        });
    }
}

impl Handler<Incoming> for HostSession {
    type Result = ();

    fn handle(&mut self, m: Incoming, ctx: &mut Self::Context) {
        self.last_seen = Instant::now();
        // The same person with a new token (theirs expired and their host signed in again):
        // their calls go on with it, so a token exchange uses the token they hold now.
        if let Some(who) =
            m.caller.filter(|w| w.key == self.who.key && (w.token != self.who.token || w.claims_digest != self.who.claims_digest))
        {
            self.who = who;
        }
        match jsonrpc::kind(&m.msg) {
            Kind::Request => self.on_request(ctx, m.msg, m.sink, m.request_id, m.trace),
            Kind::Notification => self.on_notification(m.msg),
            Kind::Response => self.on_response(m.msg),
            Kind::Invalid(why) => {
                let id = m.msg.get("id").filter(|i| i.is_string() || i.is_number()).cloned().unwrap_or(Value::Null);
                let err = jsonrpc::error(id, code::INVALID_REQUEST, format!("invalid JSON-RPC message: {why}"));
                self.refuse(m.sink, err);
            }
        }
    }
}
