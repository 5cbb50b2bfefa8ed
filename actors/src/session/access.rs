//! Who may do what, as a session asks it: the policy in force, the session's principal and its
//! transport, bound together so that the plan, the lists and the `_ui_*` tools ask one thing.

use std::sync::Arc;

use serde_json::Value;

use crate::mcp::jsonrpc;
use crate::policy::{Decision, Kind, Policies, Subject};
use crate::servers::catalog::{Catalog, ExposedTool};
use crate::servers::profiles::Profile;
use crate::who::Who;

/// JSON-RPC error code of a request the rules do not allow.
pub const NOT_ALLOWED: i64 = -32003;

#[derive(Clone)]
pub struct Access {
    pub policies: Arc<Policies>,
    pub who: Arc<Who>,
    /// `stdio`, `sse`, `streamable-http`.
    pub transport: &'static str,
}

impl Access {
    pub fn check(&self, kind: Kind, name: &str, server: &str, args: Option<&Value>) -> Decision {
        self.policies.check(&Subject { kind, name, server, who: &self.who, transport: self.transport, args, tool: None })
    }

    /// The approval rule a call of tool `name` waits under (`approve` rules).
    pub fn approval(&self, name: &str, server: &str, args: Option<&Value>) -> Option<(Arc<str>, crate::policy::ApproveSpec)> {
        self.policies.approval(&Subject { kind: Kind::Tools, name, server, who: &self.who, transport: self.transport, args, tool: None })
    }

    /// The quotas a call of tool `name` counts against (`limit` rules).
    pub fn quotas(&self, name: &str, server: &str, args: Option<&Value>) -> Vec<crate::policy::quota::Quota> {
        self.policies.quotas(&Subject { kind: Kind::Tools, name, server, who: &self.who, transport: self.transport, args, tool: None })
    }

    pub fn visible(&self, kind: Kind, name: &str, server: &str) -> bool {
        self.policies.visible(&Subject { kind, name, server, who: &self.who, transport: self.transport, args: None, tool: None })
    }

    /// Whether the rules deny this principal every tool of `server`, known yet or not.
    pub fn denies_whole_server(&self, server: &str) -> bool {
        self.policies.denies_whole_server(&Subject {
            kind: Kind::Tools,
            name: "",
            server,
            who: &self.who,
            transport: self.transport,
            args: None,
            tool: None,
        })
    }

    /// Whether the tool is listed to this principal.
    pub fn sees_tool(&self, t: &ExposedTool) -> bool {
        self.visible(Kind::Tools, &t.name, &t.server)
    }

    /// Whether the rules (and the session's profile) let this principal use something of
    /// `server`: a tool they see, or its resources or prompts. A use of a server that names
    /// nothing the rules know (a method the service does not know, a host's notification) is
    /// decided by this, and so is what the server says to no one in particular.
    pub fn may_use_server(&self, catalog: &Catalog, profile: Option<&Profile>, server: &str) -> bool {
        if profile.is_some_and(|p| !p.includes_server(server)) {
            return false;
        }
        let mut tools = catalog.tools().iter().filter(|t| &*t.server == server);
        tools.any(|t| profile.is_none_or(|p| p.includes(t)) && self.sees_tool(t))
            || self.visible(Kind::Resources, "", server)
            || self.visible(Kind::Prompts, "", server)
    }

    /// Whether the tool's page is listed (and its `_meta.ui` given) to this principal.
    pub fn sees_page(&self, t: &ExposedTool) -> bool {
        self.visible(Kind::Pages, &t.name, &t.server)
    }
}

/// A request the rules refuse: what it was (kind, name as hosts know it) and which rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Denied {
    pub kind: Kind,
    pub name: String,
    pub server: Option<Arc<str>>,
    pub rule: Arc<str>,
    /// A method the service does not know, refused as a use of a server the principal may
    /// not use (then `kind` is not what was refused, and `name` is the method).
    pub method: bool,
}

/// The rule named in the trail for a method refused because its server is not the
/// principal's to use (no one rule decides that: all of them together do).
pub const NO_USE_OF_SERVER: &str = "no use of the server";

impl Denied {
    pub fn of(kind: Kind, name: &str, server: &str, decision: Decision) -> Denied {
        Denied { kind, name: name.to_string(), server: (!server.is_empty()).then(|| Arc::from(server)), rule: decision.rule, method: false }
    }

    /// A method the service does not know, to a server the principal may use nothing of.
    pub fn method(method: &str, server: &str) -> Denied {
        let name: String = method.chars().take(128).collect();
        Denied { kind: Kind::Tools, name, server: Some(Arc::from(server)), rule: Arc::from(NO_USE_OF_SERVER), method: true }
    }

    /// What was refused, as the trail's `kind` says it.
    pub fn kind_label(&self) -> &'static str {
        if self.method {
            "methods"
        } else {
            self.kind.as_str()
        }
    }

    /// What the caller is told: that it is not allowed, and nothing of the rules.
    pub fn error(&self, id: Value) -> Value {
        let what = match self.kind {
            _ if self.method => format!("the method {:?} of this server", self.name),
            Kind::Tools => format!("calling the tool {:?}", self.name),
            Kind::Pages => format!("the UI page of the tool {:?}", self.name),
            Kind::Refinements => format!("changing the UI page of the tool {:?}", self.name),
            Kind::Resources => format!("the resource {}", self.name),
            Kind::Prompts => format!("the prompt {:?}", self.name),
        };
        jsonrpc::error(id, NOT_ALLOWED, format!("not allowed: {what} is not permitted for this principal by this service's policy"))
    }
}
