//! A tool call under `limit` rules: counted against each quota that applies (in Redis with
//! replicas, so the count is asynchronous) before it is forwarded; a call over one is answered
//! here with an `isError` result that says whose quota, which rule and when to retry, never
//! forwarded, and recorded as `limited`.

use actix::prelude::*;
use serde_json::{json, Value};

use super::plan::After;
use super::HostSession;
use crate::mcp::jsonrpc::{self, At};
use crate::policy::quota::Quota;
use crate::servers::fleet::Server;

/// What a quota counts a call of a tool no list names as.
const UNLISTED: &str = "(a tool no list names)";

impl HostSession {
    pub(super) fn forward_within_quotas(&mut self, ctx: &mut Context<Self>, server: std::sync::Arc<Server>, msg: Value, after: After) {
        let quotas = match &after {
            After::ToolResult { exposed } => {
                // A name no list has (a bare server is passed what hosts make up) is counted as
                // one: made-up names cannot fill the counters a key each.
                let listed = self.deps.fleet.catalog().tool(exposed).is_some();
                let name = if listed { exposed.as_str() } else { UNLISTED };
                self.access().quotas(name, &server.name, msg.at("/params/arguments"))
            }
            _ => Vec::new(),
        };
        if quotas.is_empty() {
            return self.forward_with(ctx, server, msg, after);
        }
        if let Some(taken) = self.deps.quotas.take_here(&quotas) {
            let key = jsonrpc::id(&msg).map(jsonrpc::id_key).unwrap_or_default();
            return match taken {
                Ok(()) => self.forward_with(ctx, server, msg, after),
                Err((quota, retry_in)) => self.limited(&msg, &key, &quota, retry_in),
            };
        }
        let counts = self.deps.quotas.clone();
        let fut = async move { counts.take(&quotas).await };
        ctx.spawn(fut.into_actor(self).map(move |taken, act, ctx| {
            let key = jsonrpc::id(&msg).map(jsonrpc::id_key).unwrap_or_default();
            if !act.in_flight.contains_key(&key) {
                return; // cancelled while it was counted
            }
            match taken {
                Ok(()) => act.forward_with(ctx, server, msg, after),
                Err((quota, retry_in)) => act.limited(&msg, &key, &quota, retry_in),
            }
        }));
    }

    fn limited(&mut self, msg: &Value, key: &str, quota: &Quota, retry_in: u64) {
        let id = jsonrpc::id(msg).cloned().unwrap_or(Value::Null);
        if let Some(c) = &quota.limited {
            c.inc();
        }
        self.metrics.refusals.with_label_values(&["quota"]).inc();
        let tool = msg.at("/params/name").and_then(Value::as_str).unwrap_or_default();
        tracing::info!(component = "policy", event = "limited", session = %self.log_id, principal = %self.who.name, tool = %tool, rule = %quota.rule, retry_in, "a call was over a quota");
        if let Some(f) = self.in_flight.get_mut(key) {
            f.limited = true;
            if let Some(line) = f.audit.as_mut() {
                line.entry_mut().rule = Some(quota.rule.clone());
            }
        }
        let why = quota.refusal(retry_in);
        let meta = json!({"mcp-gen-ui/quota": {"rule": &*quota.rule, "calls": quota.calls, "per": quota.per_label, "whose": quota.whose, "retryAfterSeconds": retry_in}});
        self.answer(jsonrpc::result(id, json!({"content": [{"type": "text", "text": why}], "isError": true, "_meta": meta})));
    }
}
