//! The way to the upstream: a request goes through the shared router (waiting, bounded, for
//! an upstream that is (re)starting), and its answer comes back to the session.

use std::sync::Arc;

use actix::prelude::*;
use serde_json::{json, Value};

use super::HostSession;
use crate::mcp::jsonrpc::{self, code};
use crate::mcp::revision_2026;
use crate::messages::Status;
use crate::proxy::router::READY_WAIT;

impl HostSession {
    /// Forwards a request upstream. Its route is registered before this returns (so a
    /// cancellation right behind it finds it); while the upstream (re)starts it waits, bounded,
    /// and is not sent at all if the host cancelled it meanwhile.
    pub(super) fn forward(&mut self, ctx: &mut Context<Self>, msg: Value) {
        self.forward_then(ctx, msg, |act, _ctx, answer| act.answer(answer));
    }

    /// [`HostSession::forward`] with what to do with the answer (not called when cancelled).
    pub(super) fn forward_then(
        &mut self,
        ctx: &mut Context<Self>,
        mut msg: Value,
        then: impl FnOnce(&mut Self, &mut Context<Self>, Value) + 'static,
    ) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        if self.deps.router.upstream_is_2026() {
            // A 2026 upstream asks only what this host can answer.
            let caps = self.negotiated.as_ref().map(|n| revision_2026::answerable(&n.client_caps)).unwrap_or(json!({}));
            revision_2026::set_request_meta(&mut msg, revision_2026::META_CAPS, caps);
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

    /// Runs `then` with the upstream's status once it is ready, or answers the error.
    pub(super) fn with_status(
        &mut self,
        ctx: &mut Context<Self>,
        id: Value,
        then: impl FnOnce(&mut Self, &mut Context<Self>, Arc<Status>) + 'static,
    ) {
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

    /// The request id of a host request still in flight (for the logs of work it causes).
    pub(super) fn request_id_of(&self, id: &Value) -> String {
        self.in_flight.get(&jsonrpc::id_key(id)).map(|f| f.request_id.clone()).unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string())
    }
}
