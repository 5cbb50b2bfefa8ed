//! What the audit trail records of a host's requests: a tool call, a page read, a `_ui_*` call
//! (a refinement, a regeneration, an admin action), a denial; and the session opening and
//! closing. A request's line is started when it is planned and written with its answer (see
//! `delivery`); with `audit.required`, a request whose line cannot be kept is refused.

use serde_json::Value;

use super::access::Denied;
use super::plan::{After, Plan};
use super::{Era, HostSession};
use crate::audit::{Entry, Event};
use crate::mcp::jsonrpc::{self, code, At};
use crate::servers::fleet::Server;

impl HostSession {
    /// An entry of this session's principal, session and transport.
    fn entry(&self, event: Event) -> Entry {
        let mut e = Entry::new(event, &self.who);
        e.session = Some(self.log_id.clone());
        e.transport = Some(if matches!(self.era, Era::Stateless(_)) { "stateless" } else { self.transport.label() });
        e
    }

    /// The entry of a request in flight: its request id and trace.
    pub(in crate::session) fn request_entry(&self, event: Event, id: &Value) -> Entry {
        let mut e = self.entry(event);
        if let Some(f) = self.in_flight.get(jsonrpc::key_of(id).as_str()) {
            e.request_id = Some(f.request_id.clone());
            e.trace_id = f.span.cx().trace_id();
        }
        e
    }

    /// Starts the line of a request the trail records; Err: the error to answer with
    /// (`audit.required` and the trail cannot take it).
    pub(super) fn audit_start(&mut self, msg: &Value, planned: &Plan) -> Result<(), Value> {
        if !self.deps.audit.is_on() {
            return Ok(());
        }
        let id = jsonrpc::id(msg).cloned().unwrap_or(Value::Null);
        let args = msg.at("/params/arguments");
        let whole = self.deps.audit.whole_args();
        let entry = match planned {
            Plan::Forward { server, after: After::ToolResult { exposed } } => {
                let mut e = self.request_entry(Event::ToolCall, &id).tool(exposed).args(args, whole);
                e.server = Some(server.name.clone());
                e
            }
            Plan::UiTool => {
                let name = msg.at("/params/name").and_then(Value::as_str).unwrap_or_default();
                let target = args.and_then(|a| a.get("toolName")).and_then(Value::as_str);
                // A line names the tool a `_ui_*` call is about (and its server), the call as detail.
                let (event, tool) = match name {
                    "_ui_refine" => (Event::Refinement, target.unwrap_or(name)),
                    "_ui_regenerate" => (Event::Regenerate, target.unwrap_or(name)),
                    "_ui_refresh_tools" => (Event::AdminAction, name),
                    _ => (Event::ToolCall, target.unwrap_or(name)),
                };
                let mut e = self.request_entry(event, &id).tool(tool).args(args, whole);
                if tool != name {
                    e = e.detail(name);
                    e.server = self.deps.fleet.catalog().tool(tool).map(|t| t.server.clone());
                }
                e
            }
            Plan::Task { server, task } => {
                let method = jsonrpc::method(msg).unwrap_or_default();
                let mut e = self.request_entry(Event::Task, &id).tool(&task.tool).detail(method);
                e.server = Some(server.name.clone());
                e
            }
            Plan::Search(_) => {
                let name = msg.at("/params/name").and_then(Value::as_str).unwrap_or_default();
                self.request_entry(Event::ToolCall, &id).tool(name).args(args, whole)
            }
            Plan::ReadPage(t) => {
                let mut e = self.request_entry(Event::PageRead, &id).tool(&t.name);
                e.server = Some(t.server.clone());
                e
            }
            Plan::Subscribe { server, uri, on: true } => {
                let mut e = self.request_entry(Event::Subscribe, &id).tool(uri);
                e.server = Some(server.name.clone());
                e
            }
            Plan::SubscribePage { uri, on: true } => self.request_entry(Event::Subscribe, &id).tool(uri),
            Plan::Forward { server, after } => match self.forwarded_entry(msg, &id, server, after) {
                Some(e) => e,
                None => return Ok(()),
            },
            Plan::TasksList => self.request_entry(Event::Task, &id).detail("tasks/list"),
            // A task request for no task of the caller's: recorded as refused.
            Plan::Refuse(_) if jsonrpc::method(msg).is_some_and(|m| m.starts_with("tasks/")) => {
                let mut e = self.request_entry(Event::Task, &id).detail(jsonrpc::method(msg).unwrap_or_default());
                e.outcome = "refused";
                self.deps.audit.record(e);
                return Ok(());
            }
            // A tool call that routes nowhere (an unknown name, a bad call_tool): recorded as refused.
            Plan::Refuse(_) if jsonrpc::method(msg) == Some("tools/call") => {
                let name = msg.at("/params/name").and_then(Value::as_str).unwrap_or_default();
                let mut e = self.request_entry(Event::ToolCall, &id).tool(name).args(args, whole);
                e.outcome = "refused";
                self.deps.audit.record(e);
                return Ok(());
            }
            _ => return Ok(()),
        };
        match self.deps.audit.admit(entry) {
            Ok(pending) => {
                if let Some(f) = self.in_flight.get_mut(jsonrpc::key_of(&id).as_str()) {
                    f.audit = pending;
                }
                Ok(())
            }
            Err(unavailable) => {
                self.metrics.refusals.with_label_values(&["audit_unavailable"]).inc();
                Err(jsonrpc::error(id, code::LIMITED, unavailable.to_string()))
            }
        }
    }

    /// A server's own resources, prompts and completions (and methods the service does not
    /// know): what was read or asked, by the names hosts know (the plan has already named them
    /// the server's way). None: nothing to record.
    fn forwarded_entry(&self, msg: &Value, id: &Value, server: &Server, after: &After) -> Option<Entry> {
        let shown = |key: &str| msg.at(key).and_then(Value::as_str).unwrap_or_default();
        let (event, name) = match (jsonrpc::method(msg).unwrap_or_default(), after) {
            ("resources/read", After::ServerUi { uri, .. }) => (Event::ResourceRead, uri.clone()),
            ("resources/read", _) => (Event::ResourceRead, server.naming.uri_out(shown("/params/uri"))),
            ("prompts/get", _) => (Event::PromptGet, server.naming.name_out(shown("/params/name"))),
            ("completion/complete", _) => {
                let what = if shown("/params/ref/type") == "ref/prompt" {
                    server.naming.name_out(shown("/params/ref/name"))
                } else {
                    server.naming.uri_out(shown("/params/ref/uri"))
                };
                (Event::Completion, what)
            }
            (m, _) if super::plan::Method::of(m) == super::plan::Method::Other => (Event::Method, m.to_string()),
            _ => return None,
        };
        let mut e = self.request_entry(event, id).tool(&name);
        e.server = Some(server.name.clone());
        Some(e)
    }

    /// A request the rules refused: one line, written now.
    pub(super) fn audit_denied(&self, msg: &Value, denied: &Denied) {
        tracing::info!(component = "policy", event = "denied", session = %self.log_id, principal = %self.who.name, kind = denied.kind_label(), name = %denied.name, rule = %denied.rule, "a request was denied by the policy");
        if !self.deps.audit.is_on() {
            return;
        }
        let id = jsonrpc::id(msg).cloned().unwrap_or(Value::Null);
        let args = (denied.kind == crate::policy::Kind::Tools && !denied.method).then(|| msg.at("/params/arguments")).flatten();
        let mut e = self.request_entry(Event::Denied, &id).tool(&denied.name).args(args, self.deps.audit.whole_args());
        e.kind = Some(denied.kind_label());
        e.server = denied.server.clone();
        e.rule = Some(denied.rule.clone());
        e.outcome = "denied";
        self.deps.audit.record(e);
    }

    /// A host's notification passed to the servers its person may use (not the protocol's own
    /// housekeeping: initialized, cancelled, progress, roots changed).
    pub(super) fn audit_notification(&self, method: &str, servers: &[std::sync::Arc<str>]) {
        if !self.deps.audit.is_on() {
            return;
        }
        if servers.is_empty() {
            let mut e = self.entry(Event::Notification).tool(method);
            e.outcome = "denied";
            return self.deps.audit.record(e);
        }
        for server in servers {
            let mut e = self.entry(Event::Notification).tool(method);
            e.server = Some(server.clone());
            e.outcome = "sent";
            self.deps.audit.record(e);
        }
    }

    /// A session of the session era opened or closed.
    pub(super) fn audit_session(&self, event: Event) {
        if self.deps.audit.is_on() && matches!(self.era, Era::Session) {
            self.deps.audit.record(self.entry(event));
        }
    }
}
