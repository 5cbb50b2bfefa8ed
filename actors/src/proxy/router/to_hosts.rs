//! The upstream -> host half of the router: answers to whoever waits, notifications tied to a
//! request, and where a server-to-client request (or a log line naming no request) goes: the
//! one place that decides whose it is, from what the message names and whose the connection
//! is, never from the clock (see ARCHITECTURE.md, the invariant "What a server sends toward
//! hosts has one owner").

use crate::mcp::jsonrpc::At;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};

use super::{early, Hearers, Reply, Router, Target, Unrouted, MAX_INPUT_ROUNDS};
use crate::audience::Said;
use crate::mcp::jsonrpc::{self, code};
use crate::mcp::relayed::{RawResult, Relayed};
use crate::mcp::tasks_2026;
use crate::messages::{HostEvent, SessionId};
use crate::metrics::method_label;
use crate::process::locks::Recover;
use crate::proxy::input_rounds::{self, InputPath, InputRound};
use crate::proxy::routes::{Pending, Round, TaskAnswer};
use crate::proxy::task_runs::{self, TaskPath, TaskRun};
use crate::proxy::tasks::{self, TaskRoute};

impl Router {
    /// An answer from the upstream: to whoever waits for it, its id set back to theirs. A 2026
    /// upstream's `input_required` answer is not for the host as such: its questions go to the
    /// host as server requests, and the request goes again with the answers.
    pub fn on_response(self: &Arc<Self>, mut msg: Value) {
        if jsonrpc::get(&msg, "result").is_some() && jsonrpc::get(&msg, "error").is_some() {
            // Neither half can be trusted: the caller gets an error, never a guess at which.
            self.metrics.upstream_bad_frames(&self.server).inc();
            tracing::warn!(component = "upstream", event = "invalid_answer", server = %self.server, "the upstream answered with both a result and an error; the call gets an error");
            let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
            let why = format!(
                "{}the upstream answered with both a result and an error, which is no valid JSON-RPC answer; the call failed",
                self.whose
            );
            msg = jsonrpc::error(id, code::INTERNAL_ERROR, why);
        }
        if msg.at("/result/resultType").and_then(Value::as_str) == Some("input_required") && self.upstream_is_2026() {
            if let Some(up_id) = jsonrpc::id(&msg).cloned() {
                let round = self.routes().input_round(&up_id, MAX_INPUT_ROUNDS);
                match round {
                    Round::Ask { session, request } => {
                        let round = InputRound { up_id: up_id.clone(), session, request, answer: msg };
                        return input_rounds::spawn(self.clone() as Arc<dyn InputPath>, round);
                    }
                    Round::TooMany => {
                        let why =
                            format!("the upstream asked for input more than {MAX_INPUT_ROUNDS} times in one call; the call was given up");
                        return self.give_up(&up_id, code::INTERNAL_ERROR, why);
                    }
                    Round::NotKept | Round::Unknown => {} // delivered as it is, below
                }
            }
        }
        if msg.at("/result/resultType").and_then(Value::as_str) == Some("task") && self.upstream_is_2026() {
            if let Some(up_id) = jsonrpc::id(&msg).cloned() {
                let task = msg.at("/result/taskId").and_then(Value::as_str).unwrap_or_default().to_string();
                let answer = self.routes().task_answer(&up_id, &task);
                match answer {
                    // The host asked for a task: it gets it, the way every task is read here.
                    TaskAnswer::Pass => msg = tasks_2026::created_2025(msg),
                    // A 2026 server's own task: run for the call that made it (see `task_runs`).
                    TaskAnswer::Run { session, request } => return self.run_task(up_id, session, &request, &msg, &task),
                    TaskAnswer::Unknown => {}
                }
            }
        }
        self.deliver(msg);
    }

    /// Runs the server's task `task` that its answer `msg` made for the call `up_id`.
    fn run_task(self: &Arc<Self>, up_id: Value, session: SessionId, request: &Value, msg: &Value, task: &str) {
        let Some(run) = TaskRun::of(up_id.clone(), session, request, msg) else {
            // No task the service can run: none is left running either.
            if !task.is_empty() && task.len() <= 4096 {
                drop(self.internal_request("tasks/cancel", json!({"taskId": task})));
            }
            let why = format!("{}the server answered the call with a task whose id cannot be used; it was cancelled", self.whose);
            return self.give_up(&up_id, code::INTERNAL_ERROR, why);
        };
        self.metrics.task(&self.server, "created").inc();
        task_runs::spawn(self.clone() as Arc<dyn TaskPath>, run);
    }

    /// An answer, to whoever waits for it, its id set back to theirs. A 2026 server's answer to
    /// a host's `tasks/get` or `tasks/cancel` is read the 2025 way (as every task is here).
    pub(super) fn deliver(self: &Arc<Self>, mut msg: Value) {
        let pending = self.routes().answered(&mut msg);
        let method = pending.as_ref().filter(|p| p.host_id.is_some() && p.method.starts_with("tasks/") && self.upstream_is_2026());
        match method.map(|p| (&*p.method, p.task().map(str::to_string))) {
            Some(("tasks/get", _)) => {
                if let Some(r) = msg.get_mut("result") {
                    *r = tasks_2026::task_2025(r);
                }
            }
            // 2026 acknowledges a cancel empty; 2025 answers with the task as it is now.
            Some(("tasks/cancel", Some(task))) if msg.get("result").is_some() => {
                if let Some(p) = pending {
                    self.cancelled_task(p, msg, task);
                }
                return;
            }
            _ => {}
        }
        self.hand_over(pending, Relayed::Tree(msg));
    }

    /// A host's `tasks/cancel` of a 2026 server's task `task` was acknowledged (`ack`): answered
    /// with the task as the server now tells it.
    fn cancelled_task(self: &Arc<Self>, p: Pending<Reply>, ack: Value, task: String) {
        let now = self.internal_request("tasks/get", json!({"taskId": task}));
        let router = self.clone();
        tokio::spawn(async move {
            let got = now.await.unwrap_or(Value::Null);
            let id = jsonrpc::id(&ack).cloned().unwrap_or(Value::Null);
            let answer = match got.get("result") {
                Some(r) => jsonrpc::result(id, tasks_2026::task_2025(r)),
                None => {
                    let why = got.pointer("/error/message").and_then(Value::as_str).unwrap_or("no answer");
                    let why: String = why.chars().take(512).collect();
                    jsonrpc::error(id, code::INTERNAL_ERROR, format!("the task was cancelled, but reading it back failed: {why}"))
                }
            };
            router.hand_over(Some(p), Relayed::Tree(answer));
        });
    }

    /// [`Router::on_response`] for a plain result kept as read. A 2026 upstream's results are
    /// looked at (`resultType`), so they take the tree's way.
    pub fn on_raw_response(self: &Arc<Self>, mut raw: RawResult) {
        if self.upstream_is_2026() {
            return self.on_response(raw.into_value());
        }
        let pending = self.routes().answered_raw(&mut raw);
        self.hand_over(pending, Relayed::Raw(raw));
    }

    /// An answer, its route taken (None: nobody waits any more), to whoever waits for it.
    pub(super) fn hand_over(&self, pending: Option<Pending<Reply>>, answer: Relayed) {
        let Some(p) = pending else {
            tracing::debug!(
                component = "upstream",
                event = "late_response",
                "answer to a request no longer waited for (cancelled or timed out)"
            );
            return;
        };
        self.metrics.upstream_latency(&self.server, method_label(&p.method)).observe(p.started.elapsed().as_secs_f64());
        let _ = p.reply.send_relayed(answer);
    }

    /// Whether the upstream request `up_id` still waits for its answer.
    pub fn is_pending(&self, up_id: &Value) -> bool {
        self.routes().is_pending(up_id)
    }

    /// Answers the host waiting on `up_id` with an error (and forgets the route).
    pub fn give_up(&self, up_id: &Value, code: i64, why: String) {
        if let Some(p) = self.routes().give_up(up_id) {
            let _ = p.reply.send(jsonrpc::error(p.host_id.unwrap_or(Value::Null), code, why));
        }
    }

    /// A notification about the upstream request `up_id`: to that request's host, on its
    /// stream. False when no host request is behind it.
    pub fn notify_host_of(&self, up_id: &Value, msg: &Value) -> bool {
        let Some((session, host_req)) = self.routes().host_of(up_id) else { return false };
        let Some(port) = self.port(&session) else { return false };
        port.event.do_send(HostEvent::Notify { msg: msg.clone(), related: Some(host_req) });
        true
    }

    /// Where a notification that names no request goes: the one rule for what has no owner
    /// named (see `audience::Said` and [`Hearers`]). Decided on the link's reader, in order with
    /// the answers. What it keeps back is counted here.
    ///
    /// What names a task is its owner's (a task the service does not know: no one's). What
    /// names nothing is this connection's person's (their own connection, or an endpoint that
    /// cannot tell people apart): on their newest call in flight, else to their sessions by the
    /// delivery rule. With several people on the connection it is no one's: kept back, in the
    /// service's log and metrics.
    pub fn unnamed(&self, msg: &mut Value) -> Unnamed {
        // Ids made the hosts' way first (that changes no method).
        let named = self.task_out(msg);
        let method = jsonrpc::method(msg).unwrap_or_default();
        let said = Said::of(method);
        let kind = if said == Said::Log { "log" } else { "notification" };
        let kept = |reason| {
            self.metrics.kept_back(&self.server, kind, reason).inc();
            // The service's own log says what went to no one, never what it held.
            let method: String = method.chars().take(64).collect();
            tracing::debug!(component = "upstream", event = "kept_back", server = %self.server, method = %method, kind, reason, "a server's message with no owner went to no one");
            Unnamed::KeptBack { kind, reason }
        };
        match named {
            Named::Task(route) => return Unnamed::Task(*route),
            // A status may come before the answer that makes its task: held for it (see
            // `early`); a small one only, and nothing else a server says of a task unknown.
            Named::UnknownTask(upstream) if said == Said::TaskStatus && early::small(msg) => {
                let let_go = self.early.guard().hold(&upstream, kind, msg.clone(), Instant::now());
                self.kept_back_early(let_go);
                return Unnamed::Held;
            }
            Named::UnknownTask(_) => return kept("unknown_task"),
            Named::Nothing => {}
        }
        if !matches!(said, Said::Log | Said::ElicitationComplete | Said::TaskStatus | Said::Other) {
            return Unnamed::ServerWide;
        }
        let elicitation = msg.at("/params/elicitationId").and_then(Value::as_str);
        if let Some(session) = elicitation.filter(|_| said == Said::ElicitationComplete).and_then(|e| self.routes().elicitation_done(e)) {
            return Unnamed::Session(session, None);
        }
        let person = match &self.hearers {
            Hearers::People => return kept("owner_unknown"),
            Hearers::Person(p) => Some(p.as_ref()),
            Hearers::OnePerson => None,
        };
        match (self.routes().newest_of(person), person) {
            (Some((session, related)), _) => Unnamed::Session(session, Some(related)),
            // A log line no call carries: to whoever of theirs asked for logs at its level.
            (None, _) if said == Said::Log => Unnamed::ServerWide,
            (None, Some(p)) => Unnamed::Person(Arc::from(p)),
            (None, None) => Unnamed::Everyone,
        }
    }

    /// A notification for `session`'s person's call (`related`): on the session stream (its
    /// call may be answered as plain JSON, which carries nothing else), or a stateless call's own.
    pub fn notify_caller(&self, session: &SessionId, related: Option<Value>, msg: Value) {
        if let Some(port) = self.port(session) {
            port.event.do_send(HostEvent::ForCaller { msg, related });
        }
    }

    /// A progress notification: to the host that asked for it, with its own token back.
    pub fn on_progress(&self, msg: &Value) {
        let Some(p) = self.routes().progress(msg) else { return };
        if let Some(port) = self.port(&p.session) {
            port.event.do_send(HostEvent::Notify { msg: p.msg, related: Some(p.related) });
        }
    }

    /// The upstream withdrew a request it sent to a host: forward it under the host's id.
    pub fn on_server_request_cancelled(&self, msg: &Value) {
        let Some(up_id) = msg.at("/params/requestId") else { return };
        let Some((session, host_side_id)) = self.routes().server_request_cancelled(up_id) else { return };
        if let Some(port) = self.port(&session) {
            let mut out = msg.clone();
            out["params"]["requestId"] = json!(host_side_id);
            port.event.do_send(HostEvent::Notify { msg: out, related: None });
        }
    }

    /// Where a server-to-client request goes, with the id the host will see it under. The one
    /// rule: to the session of the host request it names (`stream_of`, an upstream id: the
    /// request whose stream carried it), else (it names none) to this connection's person
    /// (see [`Hearers`]): their newest call in flight, else their last active session. With
    /// several people on the connection, a request that names no call is no one's: refused.
    pub fn server_request_target(&self, up_id: Value, stream_of: Option<&Value>) -> Result<(Target, String), Unrouted> {
        self.server_request_target_in(up_id, stream_of, &Named::Nothing)
    }

    /// [`Router::server_request_target`] for a request that names a task (`task`): its owner's,
    /// on the stream of their request waiting on that task if there is one.
    pub fn server_request_target_in(&self, up_id: Value, stream_of: Option<&Value>, task: &Named) -> Result<(Target, String), Unrouted> {
        let mut routes = self.routes();
        let (session, related) = match (stream_of, task) {
            (Some(r), _) => {
                let (session, related) = routes.host_of(r).ok_or(Unrouted::RequestGone)?;
                (session, Some(related))
            }
            (None, Named::UnknownTask(_)) => return Err(Unrouted::UnknownTask),
            (None, Named::Task(t)) => match routes.waiting_on_task(&t.upstream, &t.owner) {
                Some((session, related)) => (session, Some(related)),
                None => {
                    let connected = self.hosts.port(&t.session, Some(&t.owner)).is_some();
                    let session = if connected { Some(t.session.clone()) } else { self.hosts.session_of(Some(&t.owner)) };
                    (session.ok_or(Unrouted::NoHost)?, None)
                }
            },
            (None, Named::Nothing) => {
                let person = match &self.hearers {
                    Hearers::People => return Err(Unrouted::OwnerUnknown),
                    Hearers::Person(p) => Some(p.as_ref()),
                    Hearers::OnePerson => None,
                };
                match routes.newest_of(person) {
                    Some((session, related)) => (session, Some(related)),
                    None => (self.idle_session(person).ok_or(Unrouted::NoHost)?, None),
                }
            }
        };
        let port = self.port(&session).ok_or(Unrouted::NoHost)?;
        let host_side_id = routes.server_request(&session, up_id);
        Ok((Target { session, port, related }, host_side_id))
    }

    /// With no call of theirs in flight: the last active session if it is `person`'s (None:
    /// anyone's, on an endpoint of one person), else any of theirs.
    fn idle_session(&self, person: Option<&str>) -> Option<SessionId> {
        let last = self.last_active.guard().clone();
        let theirs = last.filter(|s| self.hosts.owner_of(s).is_some_and(|o| person.is_none_or(|p| *o == *p)));
        theirs.or_else(|| self.hosts.session_of(person))
    }

    pub fn server_request_done(&self, host_side_id: &str) {
        self.routes().server_request_done(host_side_id);
    }

    /// The task a message from the server names (a status's `taskId`, or related-task
    /// `_meta`), with every such id made the hosts' way in `msg`: one the service knows, one
    /// it does not (whose it is cannot be known: no one's), or none named.
    pub fn task_out(&self, msg: &mut Value) -> Named {
        let status = jsonrpc::method(msg) == Some("notifications/tasks/status");
        let upstream = match tasks::related_task(msg) {
            Some(id) => id.to_string(),
            None if status => match msg.at("/params/taskId").and_then(Value::as_str) {
                Some(id) => id.to_string(),
                None => return Named::Nothing,
            },
            None => return Named::Nothing,
        };
        let exposed = tasks::exposed_id(self.prefix.as_deref(), &upstream);
        tasks::set_related_task(msg, &exposed);
        if status {
            if let Some(p) = msg.get_mut("params").and_then(Value::as_object_mut) {
                p.insert("taskId".into(), json!(exposed));
            }
        }
        match self.tasks().of_upstream(&self.server, &upstream) {
            Some(route) => {
                // A task the service runs for a host's plain call was never shown to it.
                if route.bridge.is_some() && !status {
                    tasks::drop_related_task(msg);
                }
                Named::Task(Box::new(route))
            }
            None => Named::UnknownTask(upstream),
        }
    }

    /// What the server said of its task `upstream` before the answer that made it: the task's
    /// maker's now (see `early`), in the order said. The caller delivers each with
    /// [`Router::to_task_owner`].
    pub fn said_early(&self, upstream: &str) -> Vec<Value> {
        self.early.guard().take(upstream)
    }

    /// Held messages no answer claimed: to no one, counted as any unknown task's words are.
    pub(super) fn kept_back_early(&self, kinds: Vec<&'static str>) {
        for kind in kinds {
            self.metrics.kept_back(&self.server, kind, "unknown_task").inc();
            tracing::debug!(component = "upstream", event = "kept_back", server = %self.server, kind, reason = "unknown_task", "a server's message about a task no answer made went to no one");
        }
    }

    /// Delivers a message that names `task` to its owner: a bridged task's status as progress
    /// of the host's call it runs for; anything else to the session that made the task while it
    /// is connected, else to the owner's sessions.
    pub fn to_task_owner(&self, task: &TaskRoute, msg: Value) {
        // Whoever waits on the task (its result) is waiting on a task that is alive.
        self.routes().refresh_task(&task.upstream);
        if jsonrpc::method(&msg) == Some("notifications/tasks/status") {
            let status = msg.at("/params/status").and_then(Value::as_str).unwrap_or_default();
            self.metrics.task(&self.server, status).inc();
        }
        if let Some(bridge) = &task.bridge {
            if jsonrpc::method(&msg) != Some("notifications/tasks/status") {
                return self.notify_caller(&task.session, Some(bridge.host_request.clone()), msg);
            }
            let Some(token) = &bridge.progress_token else { return };
            let mut params = json!({"progressToken": token, "progress": self.tasks().next_progress(&task.exposed)});
            if let Some(m) = msg.at("/params/statusMessage").filter(|m| m.is_string()) {
                params["message"] = m.clone();
            }
            let progress = jsonrpc::notification("notifications/progress", params);
            if let Some(port) = self.port(&task.session) {
                port.event.do_send(HostEvent::Notify { msg: progress, related: Some(bridge.host_request.clone()) });
            }
            return;
        }
        match self.hosts.port(&task.session, Some(&task.owner)) {
            Some(port) => port.event.do_send(HostEvent::Notify { msg, related: None }),
            None => self.broadcast_to(&task.owner, HostEvent::heard(msg, self.origin())),
        }
    }

    /// The server asks a host about a task that host runs for it (`tasks/get` of a sampling
    /// run as a task): to that host alone, else nowhere.
    /// Returns the target and the host's own id of the task.
    pub fn host_task_target(&self, up_id: Value, task: &str) -> Result<(Target, String, String), Unrouted> {
        let mut routes = self.routes();
        let (session, theirs) = routes.host_task(task).ok_or(Unrouted::RequestGone)?;
        let port = self.port(&session).ok_or(Unrouted::NoHost)?;
        let host_side_id = routes.server_request(&session, up_id);
        Ok((Target { session, port, related: None }, host_side_id, theirs))
    }

    /// A host answered the server's request with a task it runs for it: the id the server is
    /// to know it by.
    pub fn host_task_made(&self, task: &str, session: &SessionId) -> String {
        self.routes().host_task_made(task, session)
    }

    /// A URL elicitation (`elicitationId`) went to `session`: its completion goes there too.
    pub fn elicitation_sent(&self, elicitation: &str, session: &SessionId) {
        self.routes().elicitation_sent(elicitation, session);
    }
}

/// What a server's message names of the tasks the service keeps (see [`Router::task_out`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Named {
    /// No task.
    Nothing,
    /// A task the service knows: its owner's.
    Task(Box<TaskRoute>),
    /// A task the service does not know (the server's id): no one's, unless an answer on its
    /// way makes it.
    UnknownTask(String),
}

/// Where a notification that names no request goes (see [`Router::unnamed`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Unnamed {
    /// One of the server-wide kinds, for the delivery rule (a log line of the connection's
    /// person that no call carries goes to their sessions that asked for logs).
    ServerWide,
    /// This session's: its person's call in flight (`related`), or the session an elicitation
    /// it completes was sent to.
    Session(SessionId, Option<Value>),
    /// This person's sessions: it is this connection's person's, and no call of theirs is in
    /// flight to carry it.
    Person(Arc<str>),
    /// Every connected session: the endpoint cannot tell people apart, so all of them are the
    /// one person's, and no call is in flight to carry it.
    Everyone,
    /// No one's: kept back (and counted).
    KeptBack { kind: &'static str, reason: &'static str },
    /// It names a task the service does not know yet: held for the answer that may make it
    /// (see [`Router::said_early`]), else no one's.
    Held,
    /// It names a task: its owner's (see `Router::to_task_owner`).
    Task(TaskRoute),
}

#[cfg(test)]
#[path = "to_hosts_tests.rs"]
mod tests;
