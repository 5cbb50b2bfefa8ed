//! What a session hears of what the servers say to no request in particular: each event is
//! put to the one delivery rule (`audience`), with this session's facts (its person, the log
//! level it asked for, its subscriptions, and what the rules and its profile let it use).

use std::sync::Arc;

use actix::prelude::*;
use serde_json::Value;

use super::HostSession;
use crate::audience::{self, Listener};
use crate::mcp::jsonrpc::{self, At};
use crate::messages::HostEvent;
use crate::policy::Kind;
use crate::servers::catalog::{Catalog, ExposedTool};
use crate::servers::profiles::Profile;

/// The session as the delivery rule sees it; the catalog, profile and rules are looked up
/// only when the rule gets that far.
struct Facts<'a> {
    session: &'a HostSession,
    view: std::cell::OnceCell<View>,
}

/// What the rules and the session's profile let its person see, as they are now.
struct View {
    catalog: Arc<Catalog>,
    /// `Err`: the session's profile went in a reload (it sees nothing).
    profile: Result<Option<Arc<Profile>>, ()>,
    access: super::access::Access,
}

impl View {
    fn in_profile(&self, t: &ExposedTool) -> bool {
        match &self.profile {
            Ok(p) => p.as_ref().is_none_or(|p| p.includes(t)),
            Err(()) => false,
        }
    }

    /// The profile leaves something of `server` in view (a tool of it, or no tool list to go by).
    fn profile_has_server(&self, server: &str) -> bool {
        match &self.profile {
            Ok(None) => true,
            Ok(Some(p)) => p.includes_server(server),
            Err(()) => false,
        }
    }
}

impl Facts<'_> {
    fn view(&self) -> &View {
        self.view.get_or_init(|| View {
            catalog: self.session.deps.fleet.catalog(),
            profile: self.session.profile_now().map_err(|_| ()),
            access: self.session.access(),
        })
    }
}

impl Listener for Facts<'_> {
    fn owner(&self) -> &str {
        &self.session.who.key
    }

    fn log_level(&self) -> Option<&str> {
        match self.session.call() {
            Some(call) => call.log_level(),
            None => self.session.log_level,
        }
    }

    fn subscribed(&self, uri: &str) -> bool {
        self.session.subscriptions.contains(uri) || self.session.ui_subscriptions.contains(uri)
    }

    fn may_use(&self, server: &str) -> bool {
        let v = self.view();
        match &v.profile {
            Ok(p) => v.access.may_use_server(&v.catalog, p.as_deref(), server),
            Err(()) => false,
        }
    }

    fn may_read(&self, uri: &str, server: &str) -> bool {
        let v = self.view();
        if self.session.ui_subscriptions.contains(uri) {
            // The approvals page says only that it changed: what it lists is per person.
            if uri == crate::session::ui_tools::APPROVALS_PAGE {
                return true;
            }
            return v.catalog.by_page(uri).is_some_and(|t| v.in_profile(t) && v.access.sees_page(t));
        }
        v.profile_has_server(server) && v.access.check(Kind::Resources, uri, server, None).allowed
    }

    fn sees_tool(&self, name: &str, server: &str) -> bool {
        let v = self.view();
        match v.catalog.tool(name) {
            Some(t) => v.in_profile(t) && v.access.sees_tool(t),
            // Removed: whether the person saw it before, as far as the rules say.
            None => v.profile_has_server(server) && v.access.visible(Kind::Tools, name, server),
        }
    }
}

impl HostSession {
    fn facts(&self) -> Facts<'_> {
        Facts { session: self, view: std::cell::OnceCell::new() }
    }

    /// A notification for this session (on `related`'s stream, if it names a request). A
    /// request's own log line goes at the level the session asked for, if it asked.
    fn notify(&mut self, msg: Value, related: Option<Value>) {
        // A host that does not speak tasks never saw a task: a status (one that came before
        // the call the service runs as a task for it knew its task) is nothing to it.
        if jsonrpc::method(&msg) == Some("notifications/tasks/status") && !self.speaks_tasks() {
            return;
        }
        let level = msg.at("/params/level").and_then(Value::as_str);
        let log = jsonrpc::method(&msg) == Some("notifications/message");
        if log && self.log_level.is_some() && !crate::mcp::revision_2026::log_wanted(level, self.log_level) {
            return;
        }
        self.send_related(msg, related.as_ref())
    }

    /// `logging/setLevel`: from now on the session hears server log lines at `level` and above.
    pub(super) fn set_log_level(&mut self, msg: &Value) {
        let asked = msg.at("/params/level").and_then(Value::as_str);
        self.log_level = asked.and_then(crate::mcp::revision_2026::log_level);
    }
}

impl Handler<HostEvent> for HostSession {
    type Result = ();

    fn handle(&mut self, ev: HostEvent, ctx: &mut Self::Context) {
        match ev {
            HostEvent::Notify { msg, related } => self.notify(msg, related),
            HostEvent::ForCaller { msg, related } => {
                let related = if self.call().is_some() { related } else { None };
                self.notify(msg, related)
            }
            HostEvent::Heard { msg, heard } => {
                if !audience::admits(&self.facts(), &heard) {
                    return;
                }
                if jsonrpc::method(&msg) == Some("notifications/tasks/status") {
                    // A stateless host hears of a task only on a listen that took it; a host
                    // that does not speak tasks never saw one.
                    if self.call().is_some() {
                        return self.task_to_listener(ctx, msg);
                    }
                    if !self.speaks_tasks() {
                        return;
                    }
                }
                self.send_session(msg);
            }
            HostEvent::ToolsChanged(change) => {
                if !audience::tools_change_admits(&self.facts(), change.as_deref()) {
                    return;
                }
                self.send_session(jsonrpc::notification("notifications/tools/list_changed", Value::Null));
                if self.ui() {
                    self.send_session(jsonrpc::notification("notifications/resources/list_changed", Value::Null));
                }
            }
            HostEvent::UiResourcesChanged => {
                if self.ui() {
                    self.send_session(jsonrpc::notification("notifications/resources/list_changed", Value::Null));
                }
            }
        }
    }
}
