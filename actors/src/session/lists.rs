//! The lists hosts ask for. Tools come from the catalog (every server's, named and curated),
//! with `_meta.ui` and the `_ui_*` tools for UI hosts. Prompts, resources and templates are a
//! bare server's own (its paging passes through); from prefixed servers, every ready one that
//! declares them is listed whole and the lists are joined, names and URIs made the hosts' way.

use std::sync::Arc;

use actix::prelude::*;
use serde_json::{json, Value};

use super::access::Access;
use super::plan::ListFrom;
use super::HostSession;
use crate::mcp::jsonrpc::{self, code, At};
use crate::mcp::ui_meta;
use crate::policy::Kind;
use crate::proxy::router::Router;
use crate::servers::catalog::{Catalog, ExposedTool, Naming};
use crate::servers::fleet::Server;
use crate::servers::listing::list_all;
use crate::servers::profiles::{Discovery, Profile};
use crate::session::deps::SessionDeps;
use crate::session::tools_cursor;
use crate::session::ui_tools;

/// How long one server may take to list one page for a host's joined list.
const PAGE_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a person's first list or call waits for their own server's tools to be known.
const LEARN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl HostSession {
    /// One page of the tools hosts see: the catalog's, then the `_ui_*` tools. Only the page
    /// asked for is built, so a long list costs one page per request, never the whole list.
    pub(super) fn tools_list(&mut self, ctx: &mut Context<Self>, msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let offset = match tools_cursor::parse(jsonrpc::params(&msg).get("cursor")) {
            Ok(o) => o,
            Err(why) => return self.answer(jsonrpc::error(id, code::INVALID_PARAMS, why)),
        };
        let per_page = self.deps.limits.tools_per_page.max(1);
        // A person's first list waits (bounded) for their own servers' tools, so it is whole.
        let learning = self.learn_per_principal_servers(None);
        self.after_learning(ctx, learning, move |act, ctx| act.tools_page(ctx, id, offset, per_page));
    }

    fn tools_page(&mut self, ctx: &mut Context<Self>, id: Value, offset: usize, per_page: usize) {
        self.with_catalog(ctx, id.clone(), move |act, _ctx, catalog| {
            let profile = match act.profile_now() {
                Ok(p) => p,
                Err(gone) => return act.answer(gone.answer(id)),
            };
            let dialect = act.dialect();
            // After the upstream's tools: search mode's tools, then ours (UI hosts).
            let mut extra = match profile.as_deref() {
                Some(p) if p.discovery == Discovery::Search => super::discovery_calls::search_definitions(dialect),
                _ => Vec::new(),
            };
            if dialect.is_some() {
                extra.extend(ui_tools::definitions());
                if act.deps.fleet.registry().pins().is_some_and(|p| p.modes().holds()) {
                    extra.extend(ui_tools::pin_definitions());
                }
                if act.deps.policies.has_approvals() {
                    extra.extend(ui_tools::approval_definitions());
                }
            }
            let listed = catalog.tools();
            let total = listed.len() + extra.len();
            if offset > total {
                let why = "Invalid params: the cursor is past the end of the list (it changed): list again from the start";
                return act.answer(jsonrpc::error(id, code::INVALID_PARAMS, why));
            }
            // With rules or a profile, a page holds only what this host may see (the cursor is
            // a place in the whole list, so paging stays stable).
            let access = act.access();
            let filtered = access.policies.is_on();
            // A 2026 server with tasks decides which calls become tasks; a 2025 host with tasks
            // may ask of any of its tools (`tasks`).
            let mut decides: Vec<(Arc<str>, bool)> = Vec::new();
            let session_host_with_tasks = act.speaks_tasks() && act.call().is_none();
            let mut tools = Vec::with_capacity(per_page.min(total - offset));
            let mut next = offset;
            while next < total && tools.len() < per_page {
                if let Some(t) = listed.get(next) {
                    let shown = profile.as_deref().is_none_or(|p| p.listed(t));
                    if shown && (!filtered || access.sees_tool(t)) {
                        let page = !filtered || access.sees_page(t);
                        let mut def = shown_tool(&act.deps, t, profile.as_deref(), dialect.filter(|_| page));
                        if !act.speaks_tasks() {
                            bridged_def(&mut def);
                        } else if session_host_with_tasks && act.server_decides_tasks(&mut decides, &t.server) {
                            optional_task(&mut def);
                        }
                        tools.push(def);
                    }
                } else {
                    let def = &extra[next - listed.len()];
                    let name = def.get("name").and_then(Value::as_str).unwrap_or_default();
                    if !filtered || access.visible(Kind::Tools, name, "") {
                        tools.push(def.clone());
                    }
                }
                next += 1;
            }
            let mut result = json!({"tools": tools});
            if next < total {
                result["nextCursor"] = Value::String(tools_cursor::make(next));
            }
            act.answer(jsonrpc::result(id, result));
        });
    }

    /// A per-principal server's tools are learned from its first connection: a person listing
    /// tools (or calling one of such a server's tools) starts theirs, if they have the
    /// credentials and the rules do not deny them the whole server, while its tools are not
    /// known yet. `name`: only the servers that could own a tool of that name. Answers the
    /// connections started, to wait for (their tools are in the catalog once they are ready).
    pub(super) fn learn_per_principal_servers(&self, name: Option<&str>) -> Vec<Arc<Router>> {
        let catalog = self.deps.fleet.catalog();
        let access = self.access();
        let mut started = Vec::new();
        for s in self.deps.fleet.servers().iter() {
            let Some(pool) = &s.pool else { continue };
            let could_own = match (&s.naming, name) {
                (Naming::Prefixed(p), Some(n)) => n.strip_prefix(&**p).is_some_and(|rest| rest.starts_with("__")),
                _ => true,
            };
            if !could_own || catalog.tools().iter().any(|t| t.server == s.name) {
                continue;
            }
            if access.denies_whole_server(&s.name) {
                continue; // nothing of it is theirs to use: no process, no slot
            }
            match pool.router_for(&self.who) {
                Ok(router) => started.push(router),
                Err(why) => {
                    tracing::debug!(component = "principals", event = "not_learned", server = %s.name, principal = %self.who.name, error = %why, "no connection to learn the server's tools from")
                }
            }
        }
        started
    }

    /// Runs `then` once the connections `learning` started are ready or `LEARN_WAIT` has
    /// passed (a list or call is then answered with what is known).
    pub(super) fn after_learning(
        &mut self,
        ctx: &mut Context<Self>,
        learning: Vec<Arc<Router>>,
        then: impl FnOnce(&mut Self, &mut Context<Self>) + 'static,
    ) {
        if learning.is_empty() {
            return then(self, ctx);
        }
        let waits = learning.into_iter().map(|r| async move { r.ready(LEARN_WAIT).await.is_ok() });
        ctx.spawn(futures::future::join_all(waits).into_actor(self).map(move |_, act, ctx| then(act, ctx)));
    }

    /// The `resources/list` entries of the pages made here (UI hosts only).
    fn our_resources(&self, catalog: &Catalog) -> Vec<Value> {
        let Some(dialect) = self.dialect() else { return Vec::new() };
        let Ok(profile) = self.profile_now() else { return Vec::new() };
        let domain = self.deps.ui_domain.clone();
        let access = self.access();
        let mut out: Vec<Value> = catalog
            .tools()
            .iter()
            .filter(|t| profile.as_deref().is_none_or(|p| p.includes(t)))
            .filter(|t| self.deps.gets_page(t) && access.sees_page(t))
            .filter_map(|t| ui_meta::ui_resource(&t.def, &t.page, domain.as_deref(), dialect))
            .collect();
        if profile.as_deref().is_some_and(|p| p.discovery == Discovery::Search) {
            out.push(super::discovery_calls::call_tool_resource(domain.as_deref(), dialect));
        }
        if self.deps.policies.has_approvals() {
            out.push(super::approval_gate::approvals_resource(domain.as_deref(), dialect));
        }
        out
    }

    pub(super) fn resources_list(&mut self, ctx: &mut Context<Self>, msg: Value, from: ListFrom) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        self.with_catalog(ctx, id.clone(), move |act, ctx, catalog| {
            let ours = act.our_resources(&catalog);
            let server = match from {
                ListFrom::Joined => return act.joined_list(ctx, id, "resources/list", "resources", "resources", ours),
                ListFrom::Bare(None) => return act.answer(jsonrpc::result(id, json!({"resources": ours}))),
                ListFrom::Bare(Some(s)) => s,
            };
            act.forward_to_then(ctx, server.clone(), msg, move |act, _ctx, mut answer| {
                act.only_visible(&mut answer, "resources", &server.name);
                // Ours go on the last page, so that paging clients see each exactly once.
                let last_page = answer.at("/result/nextCursor").is_none_or(Value::is_null);
                if last_page {
                    if let Some(list) = answer.pointer_mut("/result/resources").and_then(Value::as_array_mut) {
                        list.extend(ours);
                    }
                }
                act.answer(answer);
            });
        });
    }

    /// `prompts/list` and `resources/templates/list` (items under `key`, served by upstreams
    /// that declare `capability`): a bare server's own answer, paging and all; else joined.
    pub(super) fn gathered_list(
        &mut self,
        ctx: &mut Context<Self>,
        msg: Value,
        method: &'static str,
        key: &'static str,
        capability: &'static str,
        from: ListFrom,
    ) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        match from {
            ListFrom::Joined => self.joined_list(ctx, id, method, key, capability, Vec::new()),
            ListFrom::Bare(Some(server)) if self.deps.policies.is_on() => {
                self.forward_to_then(ctx, server.clone(), msg, move |act, _ctx, mut answer| {
                    act.only_visible(&mut answer, key, &server.name);
                    act.answer(answer);
                })
            }
            ListFrom::Bare(Some(server)) => self.forward_to(ctx, server, msg),
            ListFrom::Bare(None) => self.answer(jsonrpc::result(id, json!({key: []}))),
        }
    }

    /// Leaves in a server's list answer only the items this principal may see.
    fn only_visible(&self, answer: &mut Value, key: &str, server: &str) {
        let access = self.access();
        if !access.policies.is_on() {
            return;
        }
        if let Some(list) = answer.get_mut("result").and_then(|r| r.get_mut(key)).and_then(Value::as_array_mut) {
            list.retain(|item| visible_item(&access, key, item, server));
        }
    }

    /// Several servers: each ready one that declares `capability` is listed whole, its items
    /// named or namespaced the hosts' way, and the lists joined (after `first`). A server that
    /// fails to answer is left out of this answer (and logged).
    fn joined_list(
        &mut self,
        ctx: &mut Context<Self>,
        id: Value,
        method: &'static str,
        key: &'static str,
        capability: &str,
        first: Vec<Value>,
    ) {
        let servers: Vec<Arc<Server>> =
            self.deps.fleet.servers().iter().filter(|s| s.router.status().ready && s.router.declared(capability)).cloned().collect();
        let fleet = self.deps.fleet.clone();
        let access = self.access();
        let fetch = async move {
            let lists = futures::future::join_all(servers.iter().map(|s| list_all(&s.router, method, key, PAGE_LIMIT))).await;
            let mut items = first;
            for (s, list) in servers.iter().zip(lists) {
                match list {
                    Ok(list) => items.extend(
                        list.into_iter()
                            .map(|item| hosts_item(&s.naming, key, item, &s.name, &fleet))
                            .filter(|item| visible_item(&access, key, item, &s.name)),
                    ),
                    Err(why) => {
                        tracing::warn!(component = "host_session", event = "list_failed", server = %s.name, method, error = %why, "a server's list was left out of a joined list")
                    }
                }
            }
            items
        };
        ctx.spawn(fetch.into_actor(self).map(move |items, act, _| act.answer(jsonrpc::result(id, json!({key: items})))));
    }
}

/// A tool as a host is shown it: with its page for a host of `dialect` (None: no page), under
/// the profile's name and description.
fn shown_tool(deps: &SessionDeps, t: &ExposedTool, profile: Option<&Profile>, dialect: Option<ui_meta::Dialect>) -> Value {
    let def = match dialect {
        Some(d) if deps.gets_page(t) => ui_meta::decorate_tool(&t.def, &t.page, d),
        _ => (*t.def).clone(),
    };
    match profile {
        Some(p) => p.present(t, def),
        None => def,
    }
}

/// A tool as a host that does not speak tasks is shown it: one that runs only as a task is a
/// plain tool to it (the service runs it as a task for it, see `tasks`).
fn bridged_def(def: &mut Value) {
    if crate::proxy::tasks::task_support(def) == Some("required") {
        if let Some(o) = def.as_object_mut() {
            o.remove("execution");
        }
    }
}

impl HostSession {
    /// Whether `server` decides which calls become tasks (2026 with the extension), remembered
    /// in `seen` for the rest of a page.
    fn server_decides_tasks(&self, seen: &mut Vec<(Arc<str>, bool)>, server: &Arc<str>) -> bool {
        if let Some((_, d)) = seen.iter().find(|(s, _)| s == server) {
            return *d;
        }
        let d = self.runs_tasks_2026(server);
        seen.push((server.clone(), d));
        d
    }
}

/// A 2026 server's tool as a 2025 host with tasks is shown it: one it may call as a task.
fn optional_task(def: &mut Value) {
    let Some(o) = def.as_object_mut() else { return };
    let execution = o.entry("execution").or_insert_with(|| json!({}));
    if let Some(e) = execution.as_object_mut() {
        // What the server says of it itself stands.
        e.entry("taskSupport").or_insert_with(|| json!("optional"));
    }
}

/// What a profile's `tools/list` holds for a host that renders pages, with no rules: how many
/// tools and how many bytes of JSON (`/readyz` shows it for each profile).
/// None: `/mcp` itself, every tool.
pub fn profile_list_size(deps: &SessionDeps, profile: Option<&Profile>) -> (usize, usize) {
    let catalog = deps.fleet.catalog();
    let dialect = Some(ui_meta::Dialect::McpApps);
    let mut tools: Vec<Value> =
        catalog.tools().iter().filter(|t| profile.is_none_or(|p| p.listed(t))).map(|t| shown_tool(deps, t, profile, dialect)).collect();
    if profile.is_some_and(|p| p.discovery == Discovery::Search) {
        tools.extend(super::discovery_calls::search_definitions(dialect));
    }
    tools.extend(ui_tools::definitions());
    let bytes = json!({"tools": tools}).to_string().len();
    (tools.len(), bytes)
}

/// Whether a prompt, resource or template (as hosts see it) is listed to this principal.
fn visible_item(access: &Access, key: &str, item: &Value, server: &str) -> bool {
    let (kind, field) = match key {
        "prompts" => (Kind::Prompts, "name"),
        "resourceTemplates" => (Kind::Resources, "uriTemplate"),
        _ => (Kind::Resources, "uri"),
    };
    let name = item.get(field).and_then(Value::as_str).unwrap_or_default();
    access.visible(kind, name, server)
}

/// One item of a server's list as hosts see it: a prompt named `<server>__<name>` (remembered
/// so that `prompts/get` finds it), a resource or template with its URI namespaced.
fn hosts_item(naming: &Naming, key: &str, mut item: Value, server: &Arc<str>, fleet: &crate::servers::fleet::Fleet) -> Value {
    let field = match key {
        "prompts" => "name",
        "resourceTemplates" => "uriTemplate",
        _ => "uri",
    };
    let Some(own) = item.get(field).and_then(Value::as_str).map(str::to_string) else { return item };
    let shown = if key == "prompts" { naming.name_out(&own) } else { naming.uri_out(&own) };
    if key == "prompts" {
        fleet.remember_prompt(&shown, server, &own);
    }
    item[field] = json!(shown);
    item
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_2026_servers_tool_is_one_a_2025_host_may_ask_a_task_of_unless_it_says_otherwise() {
        let mut plain = json!({"name": "t"});
        optional_task(&mut plain);
        assert_eq!(plain["execution"], json!({"taskSupport": "optional"}));
        let mut said = json!({"name": "t", "execution": {"taskSupport": "forbidden", "other": 1}});
        optional_task(&mut said);
        assert_eq!(said["execution"], json!({"taskSupport": "forbidden", "other": 1}), "the server's own word stands");
        let mut odd = json!({"name": "t", "execution": "x"});
        optional_task(&mut odd);
        assert_eq!(odd["execution"], "x", "nothing is made of what is no object");
    }
}
