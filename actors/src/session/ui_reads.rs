//! `ui://` reads and subscriptions. A UI host's read of a tool's page is answered from the
//! ready pages when it can be (here, or by the HTTP edge before the session sees it: both ask
//! [`ready_page`]), else through the generation queue; anything else goes to the upstream,
//! which may serve `ui://` resources of its own.

use actix::prelude::*;
use serde_json::{json, Value};

use super::deps::{NoPage, SessionDeps};
use super::lists::upstream_has;
use super::routing::with_uris_out;
use super::HostSession;
use crate::mcp::jsonrpc::{self, code};
use crate::mcp::ui_meta;
use crate::messages::{History, ReadUi, ReadWait, Subscribe};
use crate::servers::catalog::ExposedTool;
use crate::store::ready_pages::Hit;
use crate::store::refinements::personal_key;

/// The ready result of `uri`'s page, when a UI host may be given it without asking anyone: the
/// tool's server is up and the catalog still lists the tool with a page. The one place that
/// decides it.
pub fn ready_page(deps: &SessionDeps, uri: &str) -> Option<Hit> {
    // Principal scope: whether this caller has pages of their own is the session's to find out.
    if deps.personal_scope {
        return None;
    }
    shared_ready_page(deps, uri)
}

/// The shared page of `uri`, ready.
fn shared_ready_page(deps: &SessionDeps, uri: &str) -> Option<Hit> {
    let catalog = deps.fleet.catalog();
    let tool = catalog.by_page(uri).filter(|t| deps.gets_page(t))?;
    if !deps.fleet.by_name(&tool.server)?.router.status().ready {
        return None;
    }
    deps.pages.as_ref()?.get(&tool.name)
}

impl HostSession {
    pub(super) fn resources_read(&mut self, ctx: &mut Context<Self>, msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let uri = msg.pointer("/params/uri").and_then(Value::as_str).unwrap_or_default().to_string();
        self.with_catalog(ctx, id.clone(), move |act, ctx, catalog| {
            let tool = catalog.by_page(&uri).cloned();
            match tool {
                Some(t) if act.ui() && act.deps.gets_page(&t) => act.read_page(ctx, id, uri, t),
                Some(t) if !act.ui() => act.answer(no_ui_extension(id, &uri, &t.name)),
                _ => {
                    let excluded = tool.as_ref().and_then(|t| act.deps.page_rule(t).err());
                    act.read_upstream(ctx, msg, excluded)
                }
            }
        });
    }

    /// A page made here. Principal scope: a caller with refinements of their own gets their own
    /// page (never kept ready: the ready pages are everyone's); anyone else the shared one.
    fn read_page(&mut self, ctx: &mut Context<Self>, id: Value, uri: String, tool: ExposedTool) {
        let Some(own) = self.own() else { return self.read_shared_page(ctx, id, uri, tool) };
        let key = personal_key(&tool.name, &own);
        let mine = self.deps.refinements.history.send(History { tool: key.clone() });
        ctx.spawn(mine.into_actor(self).map(move |res, act, ctx| {
            if res.map(|h| h.is_empty()).unwrap_or(true) {
                return act.read_shared_page(ctx, id, uri, tool);
            }
            let read = act.deps.queue.read.send(ReadUi {
                tool: (*tool.def).clone(),
                request_id: act.request_id_of(&id),
                force: false,
                personal: Some(key),
                trace: act.trace_of(&id),
                wait: ReadWait::Budget,
            });
            ctx.spawn(read.into_actor(act).map(move |res, act, _| match res {
                Ok(read) => {
                    act.metrics.ui_reads.with_label_values(&[read_kind(&read)]).inc();
                    let page = act.page_for(&tool);
                    act.answer(jsonrpc::result(id, ui_meta::ui_read_result(&uri, &read.entry, read.writing.as_ref(), &page)));
                }
                Err(_) => act.answer(jsonrpc::error(id, code::INTERNAL_ERROR, "the generation queue stopped")),
            }));
        }));
    }

    /// How this host is given `tool`'s page: its dialect, the domain, the widget's description.
    fn page_for(&self, tool: &ExposedTool) -> ui_meta::PageFor<'_> {
        ui_meta::PageFor {
            domain: self.deps.ui_domain.as_deref(),
            dialect: self.dialect().unwrap_or(ui_meta::Dialect::McpApps),
            description: ui_meta::widget_description(&tool.def),
        }
    }

    /// The shared page: ready, or through the generation queue (then kept ready).
    fn read_shared_page(&mut self, ctx: &mut Context<Self>, id: Value, uri: String, tool: ExposedTool) {
        // Ready pages are kept as MCP Apps hosts read them; a host of the other dialect only
        // gets its own answer, made for it each time.
        let kept = self.dialect().is_some_and(ui_meta::Dialect::mcp_apps);
        // The usual read: the page is ready, answered here without a hop.
        if let Some(hit) = shared_ready_page(&self.deps, &uri).filter(|_| kept) {
            self.metrics.ui_reads.with_label_values(&[hit.kind]).inc();
            self.metrics.cache_hits.inc();
            return self.answer(jsonrpc::result(id, (*hit.result).clone()));
        }
        let pages = self.deps.pages.clone().filter(|_| kept);
        let rev = pages.as_ref().map(|p| p.revision(&tool.name)).unwrap_or(0);
        let read = self.deps.queue.read.send(ReadUi {
            tool: (*tool.def).clone(),
            request_id: self.request_id_of(&id),
            force: false,
            personal: None,
            trace: self.trace_of(&id),
            wait: ReadWait::Budget,
        });
        ctx.spawn(read.into_actor(self).map(move |res, act, _| match res {
            Ok(read) => {
                act.metrics.ui_reads.with_label_values(&[read_kind(&read)]).inc();
                let result = ui_meta::ui_read_result(&uri, &read.entry, read.writing.as_ref(), &act.page_for(&tool));
                // A provisional page is never kept as the answer: the next read asks again.
                if let (Some(p), false) = (pages, read.provisional()) {
                    p.store(&tool.name, rev, result.clone(), read.entry.kind.as_str(), read.entry.expires_at);
                }
                act.answer(jsonrpc::result(id, result));
            }
            Err(_) => act.answer(jsonrpc::error(id, code::INTERNAL_ERROR, "the generation queue stopped")),
        }));
    }

    /// Not a page made here: the server's own resource. A `ui://` one may be a server's own
    /// app; when the server has none, the error says so (`excluded`: a tool has that page, but
    /// the setting named leaves its page out).
    fn read_upstream(&mut self, ctx: &mut Context<Self>, mut msg: Value, excluded: Option<NoPage>) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let uri = msg.pointer("/params/uri").and_then(Value::as_str).unwrap_or_default().to_string();
        let is_ui = ui_meta::tool_of_uri(&uri).is_some();
        let server = match self.resource_route(&mut msg) {
            Ok(s) => s,
            Err(_) if is_ui => return self.answer(not_found(id, &uri, None, excluded.as_ref())),
            Err(e) => return self.answer(e),
        };
        if is_ui && !upstream_has(&server.router, "resources") {
            return self.answer(not_found(id, &uri, None, excluded.as_ref()));
        }
        let naming = server.naming.clone();
        self.forward_to_then(ctx, server, msg, move |act, _ctx, answer| match answer.get("error") {
            Some(err) if is_ui => act.answer(not_found(id, &uri, Some(err.clone()), excluded.as_ref())),
            _ => act.answer(with_uris_out(&naming, answer)),
        });
    }

    pub(super) fn subscription(&mut self, ctx: &mut Context<Self>, mut msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let subscribe = jsonrpc::method(&msg) == Some("resources/subscribe");
        let Some(uri) = msg.pointer("/params/uri").and_then(Value::as_str).map(str::to_string) else {
            self.answer(jsonrpc::error(id, code::INVALID_PARAMS, "params.uri is required: the URI of the resource"));
            return;
        };
        if self.ui() && self.is_our_page(&uri) {
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
        let server = match self.resource_route(&mut msg) {
            Ok(s) => s,
            Err(e) => return self.answer(e),
        };
        let fut = server.port.subscribe.send(Subscribe { session: self.id.clone(), msg });
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

    /// Whether `uri` is (or, with one server, looks like) a page made here.
    pub(super) fn is_our_page(&self, uri: &str) -> bool {
        self.deps.fleet.catalog().by_page(uri).is_some() || (self.deps.fleet.single().is_some() && ui_meta::tool_of_uri(uri).is_some())
    }
}

/// The `ui_reads` metric's kind of a read: the page's, or `provisional`.
fn read_kind(read: &crate::messages::PageRead) -> &'static str {
    if read.provisional() {
        "provisional"
    } else {
        read.entry.kind.as_str()
    }
}

fn not_found(id: Value, uri: &str, upstream_error: Option<Value>, excluded: Option<&NoPage>) -> Value {
    let msg = match ui_meta::tool_of_uri(uri) {
        Some(_) if excluded.is_some() => {
            format!("resource not found: {uri} (its tool has no UI page: {})", excluded.map(|e| e.to_string()).unwrap_or_default())
        }
        Some(tool) => format!("resource not found: {uri} (the upstream has no tool named {tool:?}; tools/list shows the valid ones)"),
        None => format!("resource not found: {uri}"),
    };
    let mut data = json!({"uri": uri});
    if let Some(e) = upstream_error {
        data["upstreamError"] = e;
    }
    jsonrpc::error_with_data(id, code::RESOURCE_NOT_FOUND, msg, data)
}

/// A host that did not declare the MCP Apps extension read a page: the tool exists, the page is
/// for hosts that render MCP Apps.
fn no_ui_extension(id: Value, uri: &str, tool: &str) -> Value {
    let msg = format!(
        "resource not found: {uri} is the UI page of the tool {tool:?}, served only to sessions that declare the {} extension (capabilities.extensions[\"{}\"] = {{\"mimeTypes\": [\"{}\"]}} in initialize, or in a 2026-07-28 request's client capabilities)",
        ui_meta::EXTENSION,
        ui_meta::EXTENSION,
        ui_meta::MIME
    );
    jsonrpc::error_with_data(id, code::RESOURCE_NOT_FOUND, msg, json!({"uri": uri}))
}
