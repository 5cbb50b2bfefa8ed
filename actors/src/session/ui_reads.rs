//! `ui://` reads and subscriptions. A UI host's read of a tool's page is answered from the
//! ready pages when it can be (here, or by the HTTP edge before the session sees it: both ask
//! [`ready_page`]), else through the generation queue; anything else goes to the upstream,
//! which may serve `ui://` resources of its own.

use actix::prelude::*;
use serde_json::{json, Value};

use super::deps::SessionDeps;
use super::HostSession;
use crate::mcp::jsonrpc::{self, code};
use crate::mcp::ui_meta;
use crate::messages::{ReadUi, Status, Subscribe};
use crate::store::ready_pages::Hit;

/// The ready result of `uri`'s page, when a UI host may be given it without asking anyone: the
/// upstream is up, still lists the tool, and the tool has a UI. The one place that decides it.
pub fn ready_page(deps: &SessionDeps, uri: &str) -> Option<Hit> {
    let tool = ui_meta::tool_of_uri(uri)?;
    let status = deps.router.status();
    if !status.ready || !status.tool(tool).is_some_and(|t| deps.ui_enabled_for(t)) {
        return None;
    }
    deps.pages.as_ref()?.get(tool)
}

impl HostSession {
    pub(super) fn resources_read(&mut self, ctx: &mut Context<Self>, msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let uri = msg.pointer("/params/uri").and_then(Value::as_str).unwrap_or_default().to_string();
        let Some(tool_name) = ui_meta::tool_of_uri(&uri).map(str::to_string) else {
            self.forward(ctx, msg);
            return;
        };
        self.with_status(ctx, id.clone(), move |act, ctx, status| {
            match status.tool(&tool_name).cloned() {
                Some(tool) if act.ui() && act.deps.ui_enabled_for(&tool) => {
                    // The usual read: the page is ready, answered here without a hop.
                    if let Some(hit) = ready_page(&act.deps, &uri) {
                        act.metrics.ui_reads.with_label_values(&[hit.kind]).inc();
                        act.metrics.cache_hits.inc();
                        return act.answer(jsonrpc::result(id, (*hit.result).clone()));
                    }
                    let pages = act.deps.pages.clone();
                    let rev = pages.as_ref().map(|p| p.revision(&tool_name)).unwrap_or(0);
                    let read = act.deps.queue.read.send(ReadUi { tool, request_id: act.request_id_of(&id), force: false });
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

    pub(super) fn subscription(&mut self, ctx: &mut Context<Self>, msg: Value) {
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
}

pub(super) fn upstream_has(status: &Status, capability: &str) -> bool {
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
