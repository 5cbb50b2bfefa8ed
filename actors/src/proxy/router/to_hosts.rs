//! The upstream -> host half of the router: answers to whoever waits, notifications tied to a
//! request, and where a server-to-client request (or a log line naming no request) goes: the
//! one place that decides whose it is (see ARCHITECTURE.md, "What a server sends toward hosts").

use crate::mcp::jsonrpc::At;
use std::sync::Arc;

use serde_json::{json, Value};

use super::{Reply, Router, Target, Unrouted, MAX_INPUT_ROUNDS};
use crate::audience::Said;
use crate::mcp::jsonrpc::{self, code};
use crate::mcp::relayed::{RawResult, Relayed};
use crate::messages::{HostEvent, SessionId};
use crate::metrics::method_label;
use crate::process::locks::Recover;
use crate::proxy::input_rounds::{self, InputPath, InputRound};
use crate::proxy::routes::{Asker, Pending, Round};
use crate::proxy::tasks::{self, TaskRoute};

impl Router {
    /// An answer from the upstream: to whoever waits for it, its id set back to theirs. A 2026
    /// upstream's `input_required` answer is not for the host as such: its questions go to the
    /// host as server requests, and the request goes again with the answers.
    pub fn on_response(self: &Arc<Self>, mut msg: Value) {
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
        let pending = self.routes().answered(&mut msg);
        self.hand_over(pending, Relayed::Tree(msg));
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
    fn hand_over(&self, pending: Option<Pending<Reply>>, answer: Relayed) {
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

    /// Whose a message that names no request is (a stdio server's log line or notification,
    /// see `Routes::asker`): asked on the link's reader, in order with the answers (an answer
    /// that overtook the message would end the call it belongs to).
    pub fn whose_unnamed(&self) -> Asker {
        self.routes().asker()
    }

    /// With no call in flight or just ended: the one person who could hear a message that
    /// names no one (this is their own connection, or every connected session is theirs).
    pub fn sole_listener(&self) -> Option<Arc<str>> {
        self.owner.clone().or_else(|| self.hosts.sole_owner())
    }

    /// Where a notification that names no request goes: the one rule for what has no owner
    /// named (see `audience::Said`). Decided on the link's reader, in order with the answers.
    /// What it keeps back is counted here.
    pub fn unnamed(&self, msg: &mut Value) -> Unnamed {
        let said = Said::of(jsonrpc::method(msg).unwrap_or_default());
        let kept = |kind, reason| {
            self.metrics.kept_back(&self.server, kind, reason).inc();
            Unnamed::KeptBack { kind, reason }
        };
        // What names a task is its owner's (its ids made the hosts' way first).
        if let Some(route) = self.task_out(msg) {
            return Unnamed::Task(route);
        }
        match said {
            Said::Log => match self.whose_unnamed() {
                Asker::One { session, related } => Unnamed::Session(session, related),
                Asker::Nobody => Unnamed::ServerWide,
                Asker::Several => kept("log", "owner_unknown"),
            },
            Said::ElicitationComplete | Said::TaskStatus | Said::Other => {
                let elicitation = msg.at("/params/elicitationId").and_then(Value::as_str);
                if let Some(session) =
                    elicitation.filter(|_| said == Said::ElicitationComplete).and_then(|e| self.routes().elicitation_done(e))
                {
                    return Unnamed::Session(session, None);
                }
                match self.whose_unnamed() {
                    Asker::One { session, related } => Unnamed::Session(session, related),
                    Asker::Nobody => match self.sole_listener() {
                        Some(person) => Unnamed::Person(person),
                        None => kept("notification", "no_owner"),
                    },
                    Asker::Several => kept("notification", "owner_unknown"),
                }
            }
            _ => Unnamed::ServerWide,
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
    /// request whose stream carried it), else of that person's call when every call that could
    /// have caused it (in flight, or ended within the caller window) is one person's, else
    /// (nothing in flight or just ended) the last active session when it is the only person
    /// who could be asked. Never a guess across people.
    pub fn server_request_target(&self, up_id: Value, stream_of: Option<&Value>) -> Result<(Target, String), Unrouted> {
        self.server_request_target_in(up_id, stream_of, None)
    }

    /// [`Router::server_request_target`] for a request that names a task (`task`): its owner's,
    /// on the stream of their request waiting on that task if there is one.
    pub fn server_request_target_in(
        &self,
        up_id: Value,
        stream_of: Option<&Value>,
        task: Option<&TaskRoute>,
    ) -> Result<(Target, String), Unrouted> {
        let mut routes = self.routes();
        let (session, related) = match (stream_of, task) {
            (Some(r), _) => {
                let (session, related) = routes.host_of(r).ok_or(Unrouted::RequestGone)?;
                (session, Some(related))
            }
            (None, Some(t)) => match routes.waiting_on_task(&t.upstream, &t.owner) {
                Some((session, related)) => (session, Some(related)),
                None => {
                    let connected = self.hosts.port(&t.session, Some(&t.owner)).is_some();
                    let session = if connected { Some(t.session.clone()) } else { self.hosts.session_of(&t.owner) };
                    (session.ok_or(Unrouted::NoHost)?, None)
                }
            },
            (None, None) => match routes.asker() {
                Asker::One { session, related } => (session, related),
                Asker::Several => return Err(Unrouted::OwnerUnknown),
                Asker::Nobody => (self.idle_asker().ok_or(Unrouted::NoHost)?, None),
            },
        };
        let port = self.port(&session).ok_or(Unrouted::NoHost)?;
        let host_side_id = routes.server_request(&session, up_id);
        Ok((Target { session, port, related }, host_side_id))
    }

    /// With nothing in flight: the last active session, if its person is the only one who
    /// could be asked (this is their own connection, or every connected session is theirs).
    fn idle_asker(&self) -> Option<SessionId> {
        let session = self.last_active.guard().clone()?;
        let owner = self.hosts.owner_of(&session)?;
        let only = self.owner.as_ref() == Some(&owner) || self.hosts.sole_owner().as_ref() == Some(&owner);
        only.then_some(session)
    }

    pub fn server_request_done(&self, host_side_id: &str) {
        self.routes().server_request_done(host_side_id);
    }

    /// The task a message from the server names (a status's `taskId`, or related-task
    /// `_meta`), with every such id made the hosts' way in `msg`; None when it names none the
    /// service knows (its ids are still made the hosts' way).
    pub fn task_out(&self, msg: &mut Value) -> Option<TaskRoute> {
        let status = jsonrpc::method(msg) == Some("notifications/tasks/status");
        let upstream = match tasks::related_task(msg) {
            Some(id) => id.to_string(),
            None if status => msg.at("/params/taskId").and_then(Value::as_str)?.to_string(),
            None => return None,
        };
        let exposed = tasks::exposed_id(self.prefix.as_deref(), &upstream);
        tasks::set_related_task(msg, &exposed);
        if status {
            if let Some(p) = msg.get_mut("params").and_then(Value::as_object_mut) {
                p.insert("taskId".into(), json!(exposed));
            }
        }
        self.tasks().of_upstream(&self.server, &upstream)
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

/// Where a notification that names no request goes (see [`Router::unnamed`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Unnamed {
    /// One of the server-wide kinds, for the delivery rule (a log line no call could have
    /// caused goes to those who asked for logs).
    ServerWide,
    /// This session's: its person's call (`related`, if still in flight) is the only one that
    /// could have caused it.
    Session(SessionId, Option<Value>),
    /// This person's sessions: no call could have caused it, and they are the only one who
    /// could hear it.
    Person(Arc<str>),
    /// No one's: kept back (and counted).
    KeptBack { kind: &'static str, reason: &'static str },
    /// It names a task: its owner's (see `Router::to_task_owner`).
    Task(TaskRoute),
}
