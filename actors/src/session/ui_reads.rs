//! `ui://` reads and subscriptions. A UI host's read of a tool's page is answered from the
//! ready pages when it can be (here, or by the HTTP edge before the session sees it: both ask
//! [`ready_page`]), else through the generation queue; `plan` sends anything else to the
//! server whose resource it is (which may serve `ui://` apps of its own). Subscriptions to a
//! page are the session's; to a server's resource, that server's.

use actix::prelude::*;
use serde_json::{json, Value};

use std::sync::Arc;

use super::access::Access;
use super::deps::SessionDeps;
use super::HostSession;
use crate::audit::{Entry, Event};
use crate::mcp::jsonrpc::{self, code};
use crate::mcp::ui_meta;
use crate::messages::{History, HistoryKey, ReadUi, ReadWait, Subscribe};
use crate::policy::Kind;
use crate::servers::catalog::ExposedTool;
use crate::servers::fleet::Server;
use crate::store::ready_pages::Hit;
use crate::who::Who;

/// Who reads a page at the edge, for the rules and the audit trail.
pub struct EdgeReader<'a> {
    pub who: &'a Arc<Who>,
    pub transport: &'static str,
    /// The profile the reading session serves (None: every tool).
    pub profile: Option<&'a str>,
    /// The ids of the read's audit line: made only when there is a trail to write (a request
    /// id may be new randomness, a session's name a hash; a read needs neither otherwise).
    pub ids: &'a dyn Fn() -> ReadIds,
}

/// What an audit line says of where a read at the edge came from.
pub struct ReadIds {
    /// The session as logs name it (a hash of its id).
    pub session: String,
    pub request_id: String,
    pub trace_id: Option<String>,
}

/// The ready result of `uri`'s page, when a UI host may be given it without asking anyone: the
/// tool's server is up, the catalog still lists the tool with a page, the reader's profile
/// includes it, and the rules let this reader have it (its line in the audit trail written). The one place that decides it; None
/// sends the read the usual way (the session refuses what the rules refuse, and says so).
pub fn ready_page(deps: &SessionDeps, uri: &str, reader: EdgeReader) -> Option<Hit> {
    // Principal scope: whether this caller has pages of their own is the session's to find out
    // (an admin's pages are the shared ones).
    if deps.personal_scope && !reader.who.admin {
        return None;
    }
    let (tool, server, hit) = shared_ready_page(deps, uri)?;
    // A page outside the session's profile (or a profile gone in a reload): the session says so.
    if let Some(name) = reader.profile {
        let catalog = deps.fleet.catalog();
        if !deps.profiles.get(name).is_some_and(|p| catalog.tool(&tool).is_some_and(|t| p.includes(t))) {
            return None;
        }
    }
    if deps.policies.is_on() {
        // Not visible: the session decides (and counts) the refusal; visible: decided here.
        let access = Access { policies: deps.policies.clone(), who: reader.who.clone(), transport: reader.transport };
        if !access.visible(Kind::Pages, &tool, &server) || !access.check(Kind::Pages, &tool, &server, None).allowed {
            return None;
        }
    }
    if deps.audit.is_on() {
        let ids = (reader.ids)();
        let mut e = Entry::new(Event::PageRead, reader.who).tool(&tool);
        e.server = Some(server);
        e.session = Some(ids.session);
        e.transport = Some(reader.transport);
        e.request_id = Some(ids.request_id);
        e.trace_id = ids.trace_id;
        // audit.required and no room: the session's way answers with the refusal.
        if let Some(line) = deps.audit.admit(e).ok()? {
            line.finish("ok");
        }
    }
    Some(hit)
}

/// The shared page of `uri`, ready: its tool, the tool's server, the page.
fn shared_ready_page(deps: &SessionDeps, uri: &str) -> Option<(String, Arc<str>, Hit)> {
    let catalog = deps.fleet.catalog();
    let tool = catalog.by_page(uri).filter(|t| deps.gets_page(t))?;
    if !deps.fleet.by_name(&tool.server)?.router.status().ready {
        return None;
    }
    Some((tool.name.clone(), tool.server.clone(), deps.pages.as_ref()?.get(&tool.name)?))
}

impl HostSession {
    /// A page made here. Principal scope: a caller with refinements of their own gets their own
    /// page (never kept ready: the ready pages are everyone's); anyone else the shared one.
    pub(super) fn read_page(&mut self, ctx: &mut Context<Self>, id: Value, uri: String, tool: ExposedTool) {
        let Some(own) = self.own() else { return self.read_shared_page(ctx, id, uri, tool) };
        let key = HistoryKey::personal(&tool.name, &own);
        let mine = self.deps.refinements.history.send(History { key: key.clone() });
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
        if let Some((_, _, hit)) = shared_ready_page(&self.deps, &uri).filter(|_| kept) {
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

    /// A host subscribing to (or leaving) a page made here: the session keeps it, and hears
    /// when the page changes.
    pub(super) fn subscribe_page(&mut self, id: Value, uri: String, on: bool) {
        if on {
            self.ui_subscriptions.insert(uri);
        } else {
            self.ui_subscriptions.remove(&uri);
        }
        self.answer(jsonrpc::result(id, json!({})));
    }

    /// A host subscribing to (or leaving) a server's resource. Repeats from the same session
    /// are answered here: the upstream holds one subscription per proxy.
    pub(super) fn subscribe_server(&mut self, ctx: &mut Context<Self>, msg: Value, server: Arc<Server>, uri: String, on: bool) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        if on == self.subscriptions.contains(&uri) {
            return self.answer(jsonrpc::result(id, json!({})));
        }
        let fut = server.port.subscribe.send(Subscribe { session: self.id.clone(), msg });
        ctx.spawn(fut.into_actor(self).map(move |res, act, _| {
            let Ok(answer) = res else { return };
            if answer.is_null() {
                return;
            }
            if answer.get("result").is_some() {
                if on {
                    act.subscriptions.insert(uri);
                } else {
                    act.subscriptions.remove(&uri);
                }
            }
            act.answer(answer);
        }));
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
