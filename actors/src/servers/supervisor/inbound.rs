//! What the upstream sends. The link's reader hands answers and progress straight to the
//! router, on its own task ([`to_router`], the one rule for that); everything else comes to
//! the supervisor as a message: server requests for hosts, notifications, list changes.

use crate::mcp::jsonrpc::At;
use std::sync::Arc;

use actix::prelude::*;
use serde_json::{json, Value};

use super::handshake::list_all_tools;
use super::subscriptions::without_subscription;
use super::{LinkMsg, ServerSupervisor};
use crate::audience::Said;
use crate::mcp::jsonrpc::{self, code, Kind};
use crate::mcp::relayed::Relayed;
use crate::messages::{HostEvent, ServerRequest};
use crate::proxy::router::{Named, Router, Unnamed, Unrouted};
use crate::servers::catalog::Naming;
use crate::upstream::LinkEvent;

impl ServerSupervisor {
    pub(super) fn on_message(&mut self, ctx: &mut Context<Self>, msg: Value, stream_of: Option<Value>) {
        match jsonrpc::kind(&msg) {
            // Answers normally go straight to the router; one that reaches here is handled alike.
            Kind::Response => self.router.on_response(msg),
            Kind::Request => self.on_server_request(ctx, msg, stream_of),
            Kind::Notification => self.on_notification(ctx, msg, stream_of),
            Kind::Invalid(why) => {
                self.metrics.upstream_bad_frames(&self.name).inc();
                tracing::warn!(component = "upstream", event = "invalid_message", error = %why, "upstream sent an invalid JSON-RPC message; ignored")
            }
        }
    }

    /// sampling, elicitation, roots, ping: go to the host whose request it is (see
    /// `Router::server_request_target`); one whose owner is not known is refused, never guessed.
    pub(super) fn on_server_request(&mut self, ctx: &mut Context<Self>, msg: Value, stream_of: Option<Value>) {
        let Some(up_id) = jsonrpc::id(&msg).cloned() else { return };
        let method = jsonrpc::method(&msg).unwrap_or_default().to_string();
        if method == "ping" {
            let _ = self.router.send(jsonrpc::result(up_id, json!({})));
            return;
        }
        let mut msg = msg;
        let task = self.router.task_out(&mut msg);
        let host_task =
            method.starts_with("tasks/").then(|| msg.at("/params/taskId").and_then(Value::as_str)).flatten().map(str::to_string);
        let target = match &host_task {
            // About a task a host runs for the server: that host's alone, under its own id.
            Some(t) => self.router.host_task_target(up_id.clone(), t).map(|(target, id, theirs)| {
                msg["params"]["taskId"] = json!(theirs);
                (target, id)
            }),
            None => self.router.server_request_target_in(up_id.clone(), stream_of.as_ref(), &task),
        };
        let (target, host_side_id) = match target {
            Ok(found) => found,
            Err(Unrouted::NoHost) if method == "roots/list" => {
                let _ = self.router.send(jsonrpc::result(up_id, json!({"roots": []})));
                return;
            }
            Err(unrouted) => {
                self.metrics.server_requests_refused(&self.name, &method, unrouted.label()).inc();
                let method_shown: String = method.chars().take(64).collect();
                tracing::warn!(component = "upstream", event = "server_request_refused", server = %self.name, method = %method_shown, reason = unrouted.label(), "a server request was answered with an error instead of going to a host");
                let code = if unrouted == Unrouted::NoHost { code::METHOD_NOT_FOUND } else { code::INTERNAL_ERROR };
                let _ = self.router.send(jsonrpc::error(up_id, code, unrouted.why(&method_shown, &self.name)));
                return;
            }
        };
        if method == "elicitation/create" {
            if let Some(e) = msg.at("/params/elicitationId").and_then(Value::as_str) {
                self.router.elicitation_sent(e, &target.session);
            }
        }
        let mut out = msg;
        out["id"] = json!(host_side_id);
        let gen = self.generation;
        let fut = target.port.request.send(ServerRequest { msg: out, related: target.related, key: None });
        let (session, task_id) = (target.session.clone(), host_task);
        ctx.spawn(fut.into_actor(self).map(move |res, act, _| {
            act.router.server_request_done(&host_side_id);
            if gen != act.generation {
                return;
            }
            let mut answer = match res {
                Ok(a) => a,
                Err(_) => jsonrpc::error(Value::Null, code::INTERNAL_ERROR, "the host session closed before it answered"),
            };
            // A sampling or elicitation the host runs as a task: the server knows it by an id
            // of the proxy's, which routes its tasks/* back to this host.
            if let Some(theirs) = answer.at("/result/task/taskId").and_then(Value::as_str) {
                let ours = act.router.host_task_made(theirs, &session);
                answer["result"]["task"]["taskId"] = json!(ours);
            }
            // A task the host runs, named in its answer to tasks/get or tasks/cancel.
            if let (Some(ours), Some(r)) = (&task_id, answer.get_mut("result").and_then(Value::as_object_mut)) {
                if r.get("taskId").is_some_and(Value::is_string) {
                    r.insert("taskId".into(), json!(ours));
                }
            }
            answer["id"] = up_id;
            let _ = act.router.send(answer);
        }));
    }

    /// What the upstream notifies: what is tied to a host request goes to that request's
    /// session only; the rest to whoever the delivery rule (`audience`) admits.
    pub(super) fn on_notification(&mut self, ctx: &mut Context<Self>, msg: Value, stream_of: Option<Value>) {
        let method = jsonrpc::method(&msg).unwrap_or_default();
        match method {
            "notifications/progress" => self.router.on_progress(&msg),
            "notifications/cancelled" => self.router.on_server_request_cancelled(&msg),
            "notifications/tools/list_changed" => self.refresh_tools(ctx),
            // Our own listen stream says what it honours; nothing for hosts.
            "notifications/subscriptions/acknowledged" => {
                tracing::debug!(component = "upstream", event = "listen_acknowledged", "the upstream acknowledged subscriptions/listen")
            }
            // What a request's stream carried was placed on the reader (`to_router`); one that
            // still comes here is handled alike.
            _ if stream_of.is_some() => {
                let mut msg = if method == "notifications/message" { self.with_logger(msg) } else { msg };
                self.router.task_out(&mut msg);
                if let Some(up) = &stream_of {
                    self.router.notify_host_of(up, &msg);
                }
            }
            "notifications/resources/updated" => {
                let mut msg = without_subscription(msg);
                let uri = self.naming.uri_out(msg.at("/params/uri").and_then(Value::as_str).unwrap_or_default());
                if let Some(p) = msg.get_mut("params").and_then(Value::as_object_mut) {
                    p.insert("uri".into(), json!(uri));
                }
                self.router.broadcast(HostEvent::heard(msg, self.router.origin()));
            }
            // The reader placed it (see `route`): this connection's person's, and no call of theirs
            // carries it: whoever of theirs asked for logs hears it.
            "notifications/message" => self.router.broadcast(HostEvent::heard(self.with_logger(msg), self.router.origin())),
            m => match Said::of(m) {
                Said::ListChanged => self.router.broadcast(HostEvent::heard(without_subscription(msg), self.router.origin())),
                // Every other kind was placed by the reader (`Router::unnamed`); one that still
                // comes here has no owner: kept back.
                _ => {
                    self.metrics.kept_back(&self.name, "notification", "no_owner").inc();
                    tracing::debug!(component = "upstream", event = "kept_back", server = %self.name, "a notification with no owner was kept back");
                }
            },
        }
    }

    fn with_logger(&self, msg: Value) -> Value {
        with_logger(&self.naming, msg)
    }

    /// Re-lists tools; hosts hear `tools/list_changed` once the new list is in place.
    pub(super) fn refresh_tools(&mut self, ctx: &mut Context<Self>) {
        let router = self.router.clone();
        let gen = self.generation;
        let bounds = self.list_bounds;
        ctx.spawn(async move { list_all_tools(&router, bounds).await }.into_actor(self).map(move |res, act, _| {
            if gen != act.generation {
                return;
            }
            match res {
                Ok(tools) => {
                    act.apply_tools(tools, true);
                }
                Err(why) => {
                    tracing::warn!(component = "upstream", event = "tools_refresh_failed", error = %why, "could not re-list upstream tools")
                }
            }
        }));
    }
}

/// A log message as hosts see it: with several servers, its logger names the server
/// (`<server>` or `<server>/<logger>`).
fn with_logger(naming: &Naming, mut msg: Value) -> Value {
    if jsonrpc::method(&msg) != Some("notifications/message") {
        return msg;
    }
    if let (Naming::Prefixed(p), Some(params)) = (naming, msg.get_mut("params").and_then(Value::as_object_mut)) {
        let logger = match params.get("logger").and_then(Value::as_str) {
            Some(l) => format!("{p}/{l}"),
            None => p.to_string(),
        };
        params.insert("logger".into(), json!(logger));
    }
    msg
}

/// The link's reader side, on this actor's arbiter: answers, progress and whatever names no
/// request go to the router directly; everything else becomes a message to the actor.
pub(super) async fn dispatch(
    mut rx: tokio::sync::mpsc::Receiver<LinkEvent>,
    router: Arc<Router>,
    naming: Naming,
    addr: Addr<ServerSupervisor>,
    gen: u64,
) {
    while let Some(ev) = rx.recv().await {
        match ev {
            LinkEvent::Message(msg) => route(msg, None, &router, &naming, &addr, gen),
            LinkEvent::OnStream { msg, request } => route(msg, Some(request), &router, &naming, &addr, gen),
            LinkEvent::Passed(msg) => addr.do_send(LinkMsg { gen, ev: LinkEvent::Message(msg) }),
            ev => addr.do_send(LinkMsg { gen, ev }),
        }
    }
}

/// What the router takes on the reader's own task, in the order the upstream wrote it:
/// answers, progress, and a notification, which goes to its owner (the request whose stream
/// carried it, `stream_of`, or `Router::unnamed`) before an answer read after it can end the
/// call it belongs to. Anything else is given back, for the supervisor.
pub(super) fn to_router(router: &Arc<Router>, naming: &Naming, msg: Relayed, stream_of: Option<&Value>) -> Option<Value> {
    let mut msg = match msg {
        Relayed::Raw(raw) => {
            router.on_raw_response(raw);
            return None;
        }
        Relayed::Tree(msg) => msg,
    };
    match jsonrpc::kind(&msg) {
        Kind::Response => {
            router.on_response(msg);
            None
        }
        _ if jsonrpc::method(&msg) == Some("notifications/progress") => {
            router.on_progress(&msg);
            None
        }
        // Anything on a request's stream is that request's host's (the only way a 2026 host
        // hears logs); if that request has ended, it is no one's. A withdrawn request, a list
        // change and the service's own listen are the supervisor's.
        Kind::Notification if stream_of.is_some() => match jsonrpc::method(&msg) {
            Some("notifications/cancelled" | "notifications/tools/list_changed" | "notifications/subscriptions/acknowledged") => Some(msg),
            _ => {
                let named = router.task_out(&mut msg);
                let msg = with_logger(naming, msg);
                let heard = stream_of.is_some_and(|up| router.notify_host_of(up, &msg));
                // On a stream no host request is behind (the watch of a 2026 host's task): what
                // names a task is its owner's.
                if let (false, Named::Task(task)) = (heard, named) {
                    router.to_task_owner(&task, msg);
                }
                None
            }
        },
        Kind::Notification => match router.unnamed(&mut msg) {
            Unnamed::ServerWide => Some(msg),
            Unnamed::KeptBack { .. } | Unnamed::Held => None,
            Unnamed::Session(session, related) => {
                router.notify_caller(&session, related, with_logger(naming, msg));
                None
            }
            Unnamed::Person(person) => {
                router.broadcast_to(&person, HostEvent::heard(with_logger(naming, msg), router.origin()));
                None
            }
            Unnamed::Everyone => {
                router.broadcast(HostEvent::heard(with_logger(naming, msg), router.origin()));
                None
            }
            Unnamed::Task(task) => {
                router.to_task_owner(&task, with_logger(naming, msg));
                None
            }
        },
        _ => Some(msg),
    }
}

fn route(msg: Value, stream_of: Option<Value>, router: &Arc<Router>, naming: &Naming, addr: &Addr<ServerSupervisor>, gen: u64) {
    match msg {
        Value::Array(batch) => {
            for m in batch {
                route(m, stream_of.clone(), router, naming, addr, gen);
            }
        }
        msg => {
            let Some(msg) = to_router(router, naming, Relayed::Tree(msg), stream_of.as_ref()) else { return };
            let ev = match stream_of {
                Some(request) => LinkEvent::OnStream { msg, request },
                None => LinkEvent::Message(msg),
            };
            addr.do_send(LinkMsg { gen, ev });
        }
    }
}
