//! Pure: what a host's request becomes. One function, [`plan`], from the request (its method,
//! by [`Method`]) and the fleet as it is now (its servers, their naming, the catalog) to a
//! [`Plan`]: answer it here, send it to one server under that server's own names, list from one
//! server or join every server's list, or refuse it. The host session carries the plan out and
//! decides nothing about routing itself.
//!
//! One server behind `--upstream` is a fleet of one whose naming is bare: the plan routes by
//! naming, never by how many servers there are. Names that no catalog entry has, and methods
//! the service does not know, go to the server with bare names (it decides what it has); with
//! prefixed servers only, nobody has them.

use crate::mcp::jsonrpc::At;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::mcp::jsonrpc::{self, code};
use crate::mcp::ui_meta;
use crate::policy::Kind;
use crate::proxy::tasks::TaskRoute;
use crate::servers::catalog::{Catalog, ExposedTool};
use crate::servers::fleet::{Fleet, Server};
use crate::servers::profiles::{Discovery, Profile};
use crate::session::access::{Access, Denied};
use crate::session::deps::NoPage;
use crate::session::discovery::{self, SearchCall};
use crate::session::ui_tools;

mod calls;
mod method;
use calls::{profile_call, tool_call};
pub use method::Method;

/// What the host's session knows of the host, as far as routing goes.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// It renders pages (it is given them, and the `_ui_*` tools).
    pub ui: bool,
    /// The profile it connected to (`/mcp/<profile>`, `--profile`): only its tools, under its
    /// names; None: every tool.
    pub profile: Option<&'a Profile>,
}

/// Where a list's items come from.
#[derive(Debug, Clone)]
pub enum ListFrom {
    /// The bare server's own answer, its paging passing through (None: it has no such list).
    Bare(Option<Arc<Server>>),
    /// Every ready server's list, whole, joined.
    Joined,
}

/// What to do with a server's answer.
#[derive(Debug, Clone)]
pub enum After {
    /// As it is.
    Plain,
    /// Its resource URIs as hosts know them (a prompt, a read, a completion).
    UrisOut,
    /// A tool's result: URIs as hosts know them, and shaped when results are (`exposed`: the
    /// name hosts know the tool by).
    ToolResult { exposed: String },
    /// A `ui://` read that is not a page made here: the server's own app, or a clear "not
    /// found" (`excluded`: a tool has that page but a setting leaves it out).
    ServerUi { uri: String, excluded: Option<NoPage> },
}

/// What a host's request becomes.
#[derive(Debug, Clone)]
pub enum Plan {
    Initialize,
    /// `ping`, `logging/setLevel`: to the bare server of the session era; else answered here
    /// (a level passed on to every session-era server).
    Keepalive,
    ToolsList,
    /// One of the service's own `_ui_*` tools.
    UiTool,
    /// To one server; the request's params already name things as that server does.
    Forward {
        server: Arc<Server>,
        after: After,
    },
    /// `resources/list`: the pages made here, then the servers' own resources.
    ResourcesList {
        from: ListFrom,
    },
    /// `prompts/list` or `resources/templates/list`.
    List {
        method: &'static str,
        key: &'static str,
        capability: &'static str,
        from: ListFrom,
    },
    /// A page made here.
    ReadPage(ExposedTool),
    /// A host subscribing to (or leaving) a page made here: kept by the session.
    SubscribePage {
        uri: String,
        on: bool,
    },
    /// A host subscribing to (or leaving) a server's resource.
    Subscribe {
        server: Arc<Server>,
        uri: String,
        on: bool,
    },
    /// `server/discover` to a session-era host, `subscriptions/listen`: their own handlers.
    Discover,
    Listen,
    /// A task's `tasks/get`, `tasks/result` or `tasks/cancel`, to the server that made it (its
    /// params already name the task the server's way).
    Task {
        server: Arc<Server>,
        task: TaskRoute,
    },
    /// `tasks/list`: the person's own tasks of every server that lists them.
    TasksList,
    /// `search_tools` or `describe_tools` of a profile in search mode.
    Search(SearchCall),
    /// The page of search mode's `call_tool`.
    ReadCallToolPage,
    /// The page of `_ui_approvals` (where some rule holds calls for approval).
    ReadApprovalsPage,
    Refuse(Value),
    /// The rules do not allow it (answered with an error that says only that; recorded).
    Denied(Denied),
}

/// The plan for `msg` (whose params are rewritten to the target server's own names).
/// `page_rule`: which tools get a page (the one rule, `SessionDeps::page_rule`); `access`:
/// what the rules allow this principal (a call, a read, a prompt, a subscription).
pub fn plan(
    msg: &mut Value,
    fleet: &Fleet,
    catalog: &Catalog,
    facts: Facts,
    page_rule: &dyn Fn(&ExposedTool) -> Result<(), NoPage>,
    access: &Access,
) -> Plan {
    let call_tool = facts.profile.is_some_and(|p| p.discovery == Discovery::Search)
        && Method::of(jsonrpc::method(msg).unwrap_or_default()) == Method::ToolsCall
        && param(msg, "/params/name") == "call_tool";
    let planned = route(msg, fleet, catalog, facts, page_rule, access);
    if let Some(denied) = gate(&planned, msg, catalog, facts, access) {
        return Plan::Denied(denied);
    }
    // The rules first: the schema of a tool the caller may not call is none of their business.
    match planned {
        Plan::Forward { after: After::ToolResult { ref exposed }, .. } if call_tool => {
            match discovery::check_direct_call(msg, exposed, catalog) {
                Ok(()) => planned,
                Err(refused) => Plan::Refuse(refused),
            }
        }
        planned => planned,
    }
}

/// Where the request goes, the rules aside (but for what a person may not see at all: a page
/// of a tool hidden from them is read as no page).
fn route(
    msg: &mut Value,
    fleet: &Fleet,
    catalog: &Catalog,
    facts: Facts,
    page_rule: &dyn Fn(&ExposedTool) -> Result<(), NoPage>,
    access: &Access,
) -> Plan {
    let id = jsonrpc::id(msg).cloned().unwrap_or(Value::Null);
    let method = Method::of(jsonrpc::method(msg).unwrap_or_default());
    match method {
        Method::Initialize => Plan::Initialize,
        Method::Ping | Method::SetLevel => Plan::Keepalive,
        Method::Discover => Plan::Discover,
        Method::Listen => Plan::Listen,
        Method::ToolsList => Plan::ToolsList,
        Method::ToolsCall if facts.ui && param(msg, "/params/name").starts_with(ui_tools::PREFIX) => Plan::UiTool,
        Method::ToolsCall => match facts.profile {
            Some(profile) => profile_call(msg, id, fleet, catalog, profile),
            None => tool_call(msg, id, fleet, catalog),
        },
        Method::ResourcesList => Plan::ResourcesList { from: list_from(fleet, "resources") },
        Method::TemplatesList => Plan::List {
            method: "resources/templates/list",
            key: "resourceTemplates",
            capability: "resources",
            from: list_from(fleet, "resources"),
        },
        // Prompts go to a bare server whatever it declares, as they always did.
        Method::PromptsList => Plan::List { method: "prompts/list", key: "prompts", capability: "prompts", from: list_from(fleet, "") },
        Method::ResourcesRead => read(msg, id, fleet, catalog, facts, page_rule, access),
        Method::Subscribe | Method::Unsubscribe => subscription(msg, id, fleet, catalog, facts, method == Method::Subscribe),
        Method::PromptsGet => prompt(msg, id, fleet),
        Method::Complete => completion(msg, id, fleet),
        Method::Task => task(msg, id, fleet, access),
        Method::TasksList => Plan::TasksList,
        Method::Other if Method::lookalike(jsonrpc::method(msg).unwrap_or_default()).is_some() => {
            let sent = jsonrpc::method(msg).unwrap_or_default();
            let known = Method::lookalike(sent).unwrap_or_default();
            let shown: String = sent.escape_debug().collect();
            let why = format!(
                "Invalid Request: the method \"{shown}\" differs from {known} only by case or spaces; method names are exact: send {known}"
            );
            Plan::Refuse(jsonrpc::error(id, code::INVALID_REQUEST, why))
        }
        Method::Other => match fleet.bare() {
            Some(server) => Plan::Forward { server, after: After::Plain },
            None => {
                let name = jsonrpc::method(msg).unwrap_or_default();
                let why = format!("{name} names no server, and several servers are behind this endpoint: it cannot be routed");
                Plan::Refuse(jsonrpc::error(id, code::METHOD_NOT_FOUND, why))
            }
        },
    }
}

/// What the rules say of a planned request (None: allowed, or not theirs to decide). Names are
/// the hosts' (what rules are written against): a tool's exposed name, a page's tool, a
/// resource's URI as hosts see it, a prompt's exposed name. A method the service does not
/// know is a use of its server: allowed only to whom the rules let use something of it.
fn gate(planned: &Plan, msg: &Value, catalog: &Catalog, facts: Facts, access: &Access) -> Option<Denied> {
    let shown = |key: &str| msg.at(key).and_then(Value::as_str).unwrap_or_default().to_string();
    let method = Method::of(jsonrpc::method(msg).unwrap_or_default());
    let (kind, name, server, args) = match planned {
        Plan::Forward { server, .. } if method == Method::Other => {
            let name = jsonrpc::method(msg).unwrap_or_default();
            return (!access.may_use_server(catalog, facts.profile, &server.name)).then(|| Denied::method(name, &server.name));
        }
        Plan::UiTool | Plan::Search(_) => (Kind::Tools, shown("/params/name"), String::new(), None),
        Plan::Forward { server, after: After::ToolResult { exposed } } => {
            (Kind::Tools, exposed.clone(), server.name.to_string(), msg.at("/params/arguments"))
        }
        Plan::ReadPage(t) => (Kind::Pages, t.name.clone(), t.server.to_string(), None),
        Plan::Forward { server, .. } => {
            let on = server.name.to_string();
            match method {
                // A server's resource, its own `ui://` pages too: by the URI as hosts see it (made
                // from the server's own, so a rule holds whichever spelling a host sent).
                Method::ResourcesRead => (Kind::Resources, server.naming.uri_out(&shown("/params/uri")), on, None),
                Method::PromptsGet => (Kind::Prompts, server.naming.name_out(&shown("/params/name")), on, None),
                Method::Complete => match msg.at("/params/ref/type").and_then(Value::as_str) {
                    Some("ref/prompt") => (Kind::Prompts, server.naming.name_out(&shown("/params/ref/name")), on, None),
                    Some("ref/resource") => (Kind::Resources, server.naming.uri_out(&shown("/params/ref/uri")), on, None),
                    _ => return None,
                },
                _ => return None,
            }
        }
        Plan::SubscribePage { uri, .. } => {
            let tool = catalog.by_page(uri)?;
            (Kind::Pages, tool.name.clone(), tool.server.to_string(), None)
        }
        Plan::Subscribe { server, uri, .. } => (Kind::Resources, uri.clone(), server.name.to_string(), None),
        // A task is the call it came from: whoever may no longer call the tool may not use it.
        Plan::Task { server, task } => (Kind::Tools, task.tool.clone(), server.name.to_string(), None),
        _ => return None,
    };
    let decision = access.check(kind, &name, &server, args);
    (!decision.allowed).then(|| Denied::of(kind, &name, &server, decision))
}

fn param<'a>(msg: &'a Value, pointer: &str) -> &'a str {
    msg.at(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// A bare server's own list (when it declares `capability`; "" for any), else every server's.
fn list_from(fleet: &Fleet, capability: &str) -> ListFrom {
    match fleet.bare() {
        Some(s) if capability.is_empty() || s.router.declared(capability) => ListFrom::Bare(Some(s)),
        Some(_) => ListFrom::Bare(None),
        None => ListFrom::Joined,
    }
}

/// The error for a host's name that routes nowhere.
pub fn unknown(id: Value, what: &str, name: &str) -> Value {
    jsonrpc::error(
        id,
        code::INVALID_PARAMS,
        format!("no server behind this endpoint has a {what} named {name:?}; the list shows the valid names"),
    )
}

/// `resources/read`: a page made here, else the server whose resource it is. The page of a
/// tool the person may not see is read as a page nobody has: the answer says nothing of it.
fn read(
    msg: &mut Value,
    id: Value,
    fleet: &Fleet,
    catalog: &Catalog,
    facts: Facts,
    page_rule: &dyn Fn(&ExposedTool) -> Result<(), NoPage>,
    access: &Access,
) -> Plan {
    let uri = param(msg, "/params/uri").to_string();
    if facts.ui && uri == ui_tools::APPROVALS_PAGE && access.policies.has_approvals() {
        return Plan::ReadApprovalsPage;
    }
    if let Some(p) = facts.profile {
        if facts.ui && p.discovery == Discovery::Search && uri == discovery::CALL_TOOL_PAGE {
            return Plan::ReadCallToolPage;
        }
    }
    // A profile's hosts read only its tools' pages, and nobody the page of a tool hidden from them.
    let tool = catalog.by_page(&uri).filter(|t| facts.profile.is_none_or(|p| p.includes(t)) && access.sees_tool(t));
    match tool {
        Some(t) if facts.ui && page_rule(t).is_ok() => return Plan::ReadPage(t.clone()),
        Some(t) if !facts.ui => return Plan::Refuse(no_ui_extension(id, &uri, &t.name)),
        _ => {}
    }
    let excluded = tool.and_then(|t| page_rule(t).err());
    let is_ui = ui_meta::tool_of_uri(&uri).is_some();
    let Some((server, own)) = fleet.server_for_uri(&uri) else {
        return Plan::Refuse(match is_ui {
            true => not_found(id, &uri, None, excluded.as_ref()),
            false => resource_not_found(id, &uri),
        });
    };
    if is_ui && !server.router.declared("resources") {
        return Plan::Refuse(not_found(id, &uri, None, excluded.as_ref()));
    }
    if own != uri {
        msg["params"]["uri"] = json!(own);
    }
    let after = if is_ui { After::ServerUi { uri, excluded } } else { After::UrisOut };
    Plan::Forward { server, after }
}

/// `resources/subscribe` / `unsubscribe`: a page made here is the session's to keep; a
/// server's resource goes to that server. Outside the session's profile nothing is found.
fn subscription(msg: &mut Value, id: Value, fleet: &Fleet, catalog: &Catalog, facts: Facts, on: bool) -> Plan {
    let Some(uri) = msg.at("/params/uri").and_then(Value::as_str).map(str::to_string) else {
        return Plan::Refuse(jsonrpc::error(id, code::INVALID_PARAMS, "params.uri is required: the URI of the resource"));
    };
    if facts.ui && uri == ui_tools::APPROVALS_PAGE {
        return Plan::SubscribePage { uri, on };
    }
    if facts.ui && is_our_page(fleet, catalog, &uri) {
        let outside = |p: &Profile| catalog.by_page(&uri).is_none_or(|t| !p.includes(t));
        if on && facts.profile.is_some_and(outside) {
            return Plan::Refuse(resource_not_found(id, &uri));
        }
        return Plan::SubscribePage { uri, on };
    }
    let Some((server, own)) = fleet.server_for_uri(&uri) else { return Plan::Refuse(resource_not_found(id, &uri)) };
    if on && facts.profile.is_some_and(|p| !p.includes_server(&server.name)) {
        return Plan::Refuse(resource_not_found(id, &uri));
    }
    if own != uri {
        msg["params"]["uri"] = json!(own);
    }
    Plan::Subscribe { server, uri, on }
}

/// Whether `uri` is a page made here: one the catalog lists, or (a bare server's pages being
/// `ui://<tool>`) any `ui://<tool>` while there is a bare server, known yet or not.
pub fn is_our_page(fleet: &Fleet, catalog: &Catalog, uri: &str) -> bool {
    catalog.by_page(uri).is_some() || (fleet.bare().is_some() && ui_meta::tool_of_uri(uri).is_some())
}

/// `tasks/get`, `tasks/result`, `tasks/cancel`: to the server that made the task, under its
/// id there, when the caller's call made it; anyone else's task (or a made-up id) is exactly a
/// task nobody has.
fn task(msg: &mut Value, id: Value, fleet: &Fleet, access: &Access) -> Plan {
    let asked = param(msg, "/params/taskId").to_string();
    let found = fleet.hosts().tasks().owned(&asked, &access.who.key);
    let Some((task, server)) = found.and_then(|t| Some((t.clone(), fleet.by_name(&t.server)?))) else {
        return Plan::Refuse(unknown_task(id, &asked));
    };
    msg["params"]["taskId"] = json!(task.upstream);
    Plan::Task { server, task }
}

/// The answer to a task id the caller has no task under.
pub fn unknown_task(id: Value, asked: &str) -> Value {
    let shown: String = asked.chars().take(128).collect();
    jsonrpc::error(id, code::INVALID_PARAMS, format!("task not found: {shown:?} (tasks/list shows your tasks)"))
}

/// `prompts/get`: to the server whose prompt it is, under its own name.
fn prompt(msg: &mut Value, id: Value, fleet: &Fleet) -> Plan {
    if let Some(server) = fleet.bare() {
        return Plan::Forward { server, after: After::Plain };
    }
    let name = param(msg, "/params/name").to_string();
    let Some((server, own)) = fleet.route_prompt(&name) else { return Plan::Refuse(unknown(id, "prompt", &name)) };
    msg["params"]["name"] = json!(own);
    Plan::Forward { server, after: After::UrisOut }
}

/// `completion/complete`: to the server whose prompt or resource template it completes.
fn completion(msg: &mut Value, id: Value, fleet: &Fleet) -> Plan {
    if let Some(server) = fleet.bare() {
        return Plan::Forward { server, after: After::Plain };
    }
    let reference = msg.at("/params/ref").cloned().unwrap_or(Value::Null);
    let target = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            fleet.route_prompt(reference.get("name").and_then(Value::as_str).unwrap_or_default()).map(|(s, own)| (s, "name", own))
        }
        Some("ref/resource") => {
            fleet.server_for_uri(reference.get("uri").and_then(Value::as_str).unwrap_or_default()).map(|(s, own)| (s, "uri", own))
        }
        _ => None,
    };
    let Some((server, field, own)) = target else {
        let why = "params.ref names no prompt or resource template of a server behind this endpoint";
        return Plan::Refuse(jsonrpc::error(id, code::INVALID_PARAMS, why));
    };
    msg["params"]["ref"][field] = json!(own);
    Plan::Forward { server, after: After::Plain }
}

fn resource_not_found(id: Value, uri: &str) -> Value {
    let why = format!("resource not found: {uri} (no server behind this endpoint has it; resources/list shows the valid URIs)");
    jsonrpc::error_with_data(id, code::RESOURCE_NOT_FOUND, why, json!({"uri": uri}))
}

/// A `ui://` read that finds no page: the tool's page left out by a setting, no such tool, or
/// no such resource.
pub fn not_found(id: Value, uri: &str, upstream_error: Option<Value>, excluded: Option<&NoPage>) -> Value {
    let msg = match (ui_meta::tool_of_uri(uri), excluded) {
        (Some(_), Some(why)) => format!("resource not found: {uri} (its tool has no UI page: {why})"),
        (Some(tool), None) => {
            format!("resource not found: {uri} (the upstream has no tool named {tool:?}; tools/list shows the valid ones)")
        }
        (None, _) => format!("resource not found: {uri}"),
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

#[cfg(test)]
mod tests;
