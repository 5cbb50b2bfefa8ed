//! Who may do what, as a session asks it: the policy in force, the session's principal and its
//! transport, bound together so that the plan, the lists and the `_ui_*` tools ask one thing.

use std::sync::Arc;

use serde_json::Value;

use crate::mcp::jsonrpc;
use crate::policy::{Decision, Kind, Policies, Subject};
use crate::servers::catalog::ExposedTool;
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
        self.policies.check(&Subject { kind, name, server, who: &self.who, transport: self.transport, args })
    }

    pub fn visible(&self, kind: Kind, name: &str, server: &str) -> bool {
        self.policies.visible(&Subject { kind, name, server, who: &self.who, transport: self.transport, args: None })
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
        })
    }

    /// Whether the tool is listed to this principal.
    pub fn sees_tool(&self, t: &ExposedTool) -> bool {
        self.visible(Kind::Tools, &t.name, &t.server)
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
}

impl Denied {
    pub fn of(kind: Kind, name: &str, server: &str, decision: Decision) -> Denied {
        Denied { kind, name: name.to_string(), server: (!server.is_empty()).then(|| Arc::from(server)), rule: decision.rule }
    }

    /// What the caller is told: that it is not allowed, and nothing of the rules.
    pub fn error(&self, id: Value) -> Value {
        let what = match self.kind {
            Kind::Tools => format!("calling the tool {:?}", self.name),
            Kind::Pages => format!("the UI page of the tool {:?}", self.name),
            Kind::Refinements => format!("changing the UI page of the tool {:?}", self.name),
            Kind::Resources => format!("the resource {}", self.name),
            Kind::Prompts => format!("the prompt {:?}", self.name),
        };
        jsonrpc::error(id, NOT_ALLOWED, format!("not allowed: {what} is not permitted for this principal by this service's policy"))
    }
}
