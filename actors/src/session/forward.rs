//! The way to an upstream server: a request goes through that server's router (waiting,
//! bounded, for a server that is (re)starting), and its answer comes back to the session.

use crate::mcp::jsonrpc::At;
use std::sync::Arc;

use actix::prelude::*;
use serde_json::{json, Value};

use super::HostSession;
use crate::mcp::jsonrpc::{self, code};
use crate::mcp::relayed::Relayed;
use crate::mcp::revision_2026;
use crate::proxy::router::READY_WAIT;
use crate::servers::catalog::Catalog;
use crate::servers::catalog::Naming;
use crate::servers::fleet::Server;
use crate::upstream::UpstreamError;

impl HostSession {
    /// Forwards a request to `server`. Its route is registered before this returns (so a
    /// cancellation right behind it finds it); while the server (re)starts it waits, bounded,
    /// and is not sent at all if the host cancelled it meanwhile.
    pub(super) fn forward_to(&mut self, ctx: &mut Context<Self>, server: Arc<Server>, msg: Value) {
        self.forward_to_then(ctx, server, msg, |act, _ctx, answer| act.answer(answer));
    }

    /// [`HostSession::forward_to`] with what to do with the answer (not called when cancelled).
    pub(super) fn forward_to_then(
        &mut self,
        ctx: &mut Context<Self>,
        server: Arc<Server>,
        msg: Value,
        then: impl FnOnce(&mut Self, &mut Context<Self>, Value) + 'static,
    ) {
        self.forward_relayed_then(ctx, server, msg, move |act, ctx, answer| then(act, ctx, answer.into_value()));
    }

    /// [`HostSession::forward_to_then`] for what can take a plain result as read
    /// (`mcp::relayed`): a tool's result that nothing here looks at.
    pub(super) fn forward_relayed_then(
        &mut self,
        ctx: &mut Context<Self>,
        server: Arc<Server>,
        mut msg: Value,
        then: impl FnOnce(&mut Self, &mut Context<Self>, Relayed) + 'static,
    ) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        // A per-principal server: this person's own connection (started on first use).
        let router = match &server.pool {
            None => server.router.clone(),
            Some(pool) => match pool.router_for(&self.who) {
                Ok(r) => r,
                Err(refused) => return self.answer(jsonrpc::error(id, code::UPSTREAM_UNAVAILABLE, refused.to_string())),
            },
        };
        if let Some(f) = self.in_flight.get_mut(jsonrpc::key_of(&id).as_str()) {
            f.route = Some(router.clone());
            if server.pool.is_some() {
                if let Some(line) = f.audit.as_mut() {
                    line.entry_mut().credentials = Some(self.who.name.clone());
                }
            }
        }
        if router.upstream_is_2026() {
            // A 2026 upstream asks only what this host can answer.
            let caps = self.negotiated.as_ref().map(|n| n.client_caps.clone()).unwrap_or(json!({}));
            revision_2026::set_request_meta(&mut msg, revision_2026::META_CAPS, caps);
        }
        // The upstream's own spans join the trace: its parent is this round trip's span.
        let span = match crate::trace::enabled() {
            true => {
                let request_id = self.in_flight.get(jsonrpc::key_of(&id).as_str()).map(|f| f.request_id.as_str()).unwrap_or_default();
                let tool = msg.at("/params/name").and_then(Value::as_str).unwrap_or_default();
                let known = self.deps.fleet.catalog().tool(tool).is_some();
                super::spans::upstream_span(&msg, &self.trace_of(&id), &server.name, server.transport, request_id, known)
            }
            false => crate::trace::Span::none(),
        };
        if server.pool.is_some() {
            span.set(crate::trace::attr::CREDENTIALS, self.who.name.to_string());
        }
        span.cx().inject_meta(&mut msg);
        match router.try_forward_relayed(&self.id, msg) {
            Ok(rx) => {
                ctx.spawn(rx.into_actor(self).map(move |answer, act, ctx| match answer {
                    Ok(answer) => {
                        super::spans::finish_relayed(&span, &answer);
                        then(act, ctx, answer);
                    }
                    Err(_) => span.set(crate::trace::attr::OUTCOME, "cancelled"), // the host cancelled it
                }));
            }
            Err(msg) => {
                span.set(crate::trace::attr::OUTCOME, "server_starting");
                ctx.spawn(async move { router.ready(READY_WAIT).await }.into_actor(self).map(move |res, act, ctx| {
                    if !act.in_flight.contains_key(jsonrpc::key_of(&id).as_str()) {
                        return; // cancelled while the server was starting
                    }
                    match res {
                        Ok(_) => act.forward_relayed_then(ctx, server, msg, then),
                        Err(why) => {
                            let advice = why.retry_advice();
                            let why = act.naming_server(&server, why);
                            act.answer(jsonrpc::error(id, code::UPSTREAM_UNAVAILABLE, format!("{why}{advice}")));
                        }
                    }
                }));
            }
        }
    }

    /// An upstream error as a host reads it: a prefixed server's names the server and its
    /// state (a bare server is "the upstream").
    pub(super) fn naming_server(&self, server: &Server, why: UpstreamError) -> String {
        match server.naming {
            Naming::Bare => why.to_string(),
            Naming::Prefixed(_) => format!("server {} is {}: {why}", server.name, server.state()),
        }
    }

    /// Runs `then` with the catalog once the servers can be listed (see `Fleet::settled`), or
    /// answers the error.
    pub(super) fn with_catalog(
        &mut self,
        ctx: &mut Context<Self>,
        id: Value,
        then: impl FnOnce(&mut Self, &mut Context<Self>, Arc<Catalog>) + 'static,
    ) {
        let fleet = self.deps.fleet.clone();
        let ready = fleet.servers().iter().all(|s| s.router.status().ready);
        if ready {
            return then(self, ctx, fleet.catalog()); // the usual case: no wait, no hop
        }
        ctx.spawn(async move { fleet.settled(READY_WAIT).await.map(|_| fleet.catalog()) }.into_actor(self).map(move |res, act, ctx| {
            match res {
                Ok(catalog) => then(act, ctx, catalog),
                Err(why) => act.answer(jsonrpc::error(id, code::UPSTREAM_UNAVAILABLE, format!("{why}{}", why.retry_advice()))),
            }
        }));
    }

    /// The span of a host request still in flight: the parent of the work it starts.
    pub(super) fn trace_of(&self, id: &Value) -> crate::trace::TraceCx {
        self.in_flight.get(jsonrpc::key_of(id).as_str()).map(|f| f.span.cx()).unwrap_or_default()
    }

    /// The request id of a host request still in flight (for the logs of work it causes).
    pub(super) fn request_id_of(&self, id: &Value) -> String {
        self.in_flight
            .get(jsonrpc::key_of(id).as_str())
            .map(|f| f.request_id.clone())
            .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string())
    }
}
