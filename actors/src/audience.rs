//! Pure: the one delivery rule for what a server says toward hosts without answering a request
//! of theirs (log lines, resource updates, list changes, anything else it notifies). Whatever
//! is tied to a host request (answers, progress, a request's own log lines, server requests
//! that name it) goes to that request's session through the route table and never comes here;
//! server requests that name no request are placed by `routes::Routes::asker`.
//!
//! The rule, in the order it is checked (cheap facts first, the rules last):
//! 1. A person's own connection (a `perPrincipal` server) speaks only to that person.
//! 2. A log line reaches only sessions that asked for logs at its level or a more verbose one.
//! 3. A resource update reaches only sessions subscribed to that resource.
//! 4. The person must be allowed by the rules (and the session's profile) to use the server
//!    (log lines, list changes, other notifications) or to read the resource (updates).
//!
//! A changed tool list reaches only sessions that see one of the tools that changed.

use std::sync::Arc;

use serde_json::Value;

use crate::mcp::jsonrpc::At;
use crate::mcp::{jsonrpc, revision_2026};

/// What a server's notification is, as the service decides who may hear it. This is the one
/// list of what may reach people without naming its owner; every kind not in it is `Other`,
/// which reaches only an owner the service knows (the request it names or whose stream
/// carried it, the one person whose calls could have caused it, a person's own connection)
/// and is otherwise kept back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Said {
    /// `notifications/progress`: owned by the request whose token it carries.
    Progress,
    /// `notifications/cancelled`: the server withdrew a request it sent a host (owned by it).
    Cancelled,
    /// `notifications/tools/list_changed`: the service lists the tools again; hosts hear of it
    /// by the tools each may see.
    ToolsChanged,
    /// Server-wide: any other `notifications/*/list_changed` (resources, prompts).
    ListChanged,
    /// `notifications/resources/updated`: owned by the subscriptions to that resource.
    ResourceUpdated,
    /// `notifications/message`: a log line; its request's, else its one caller's, else
    /// server-wide to those who asked for logs (never while several people's calls could
    /// have caused it).
    Log,
    /// `notifications/elicitation/complete`: owned by the host that was sent the
    /// elicitation it names.
    ElicitationComplete,
    /// `notifications/tasks/status`: owned by the person whose call made the task.
    TaskStatus,
    /// `notifications/subscriptions/acknowledged`: the service's own listen.
    ListenAcknowledged,
    /// Anything else.
    Other,
}

impl Said {
    pub fn of(method: &str) -> Said {
        match method {
            "notifications/progress" => Said::Progress,
            "notifications/cancelled" => Said::Cancelled,
            "notifications/tools/list_changed" => Said::ToolsChanged,
            "notifications/resources/updated" => Said::ResourceUpdated,
            "notifications/message" => Said::Log,
            "notifications/elicitation/complete" => Said::ElicitationComplete,
            "notifications/tasks/status" => Said::TaskStatus,
            "notifications/subscriptions/acknowledged" => Said::ListenAcknowledged,
            m if m.starts_with("notifications/") && m.ends_with("/list_changed") && m.matches('/').count() == 2 => Said::ListChanged,
            _ => Said::Other,
        }
    }
}

/// Where a message comes from: the server (as configured) and, for a person's own connection,
/// whose it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    pub server: Arc<str>,
    /// Set for a `perPrincipal` server's connection: the person's key.
    pub owner: Option<Arc<str>>,
}

/// What a message is about, as far as the rule cares.
#[derive(Debug, Clone, PartialEq)]
pub enum About {
    /// `notifications/message` at this level (None: the server named none).
    Log { level: Option<String> },
    /// `notifications/resources/updated` for this URI, as hosts know it (a page made here is
    /// about its tool's server).
    Resource { uri: String },
    /// Anything else the server says to everyone (list changes, other notifications).
    Server,
}

impl About {
    /// What `msg` (a server's notification, URIs already as hosts know them) is about.
    pub fn of(msg: &Value) -> About {
        match jsonrpc::method(msg) {
            Some("notifications/message") => About::Log { level: msg.at("/params/level").and_then(Value::as_str).map(str::to_string) },
            Some("notifications/resources/updated") => {
                About::Resource { uri: msg.at("/params/uri").and_then(Value::as_str).unwrap_or_default().to_string() }
            }
            _ => About::Server,
        }
    }
}

/// A server's message and who it may reach.
#[derive(Debug, Clone, PartialEq)]
pub struct Heard {
    pub origin: Origin,
    pub about: About,
}

/// Tools of one server that were added, changed or removed, by the names hosts know.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsChange {
    pub server: Arc<str>,
    pub names: Vec<String>,
}

/// What a session knows of itself when the rule asks. `may_use` and `may_read` ask the rules
/// (cached per principal), so they are asked last.
pub trait Listener {
    /// The person who opened the session.
    fn owner(&self) -> &str;
    /// The log level the session asked for (`logging/setLevel`, a 2026 request's `logLevel`).
    fn log_level(&self) -> Option<&str>;
    fn subscribed(&self, uri: &str) -> bool;
    /// The rules and the session's profile let its person use something of `server`.
    fn may_use(&self, server: &str) -> bool;
    /// The rules and the session's profile let its person read `uri` of `server`.
    fn may_read(&self, uri: &str, server: &str) -> bool;
    /// The rules and the session's profile show its person the tool `name` of `server`.
    fn sees_tool(&self, name: &str, server: &str) -> bool;
}

/// Whether the session may hear it (only the owner part: no session facts needed). The host
/// table asks this before it sends anything, so a person's connection reaches no one else.
pub fn owner_admits(origin: &Origin, owner: &str) -> bool {
    origin.owner.as_deref().is_none_or(|o| o == owner)
}

/// The delivery rule: whether `listener` may hear `heard`.
pub fn admits(listener: &impl Listener, heard: &Heard) -> bool {
    if !owner_admits(&heard.origin, listener.owner()) {
        return false;
    }
    let server = &heard.origin.server;
    match &heard.about {
        About::Log { level } => revision_2026::log_wanted(level.as_deref(), listener.log_level()) && listener.may_use(server),
        About::Resource { uri } => listener.subscribed(uri) && listener.may_read(uri, server),
        About::Server => listener.may_use(server),
    }
}

/// Whether a changed tool list concerns `listener`: its person sees one of the tools that
/// changed (`None`: what changed is not known tool by tool, as after a reload: everyone).
pub fn tools_change_admits(listener: &impl Listener, change: Option<&ToolsChange>) -> bool {
    change.is_none_or(|c| c.names.iter().any(|n| listener.sees_tool(n, &c.server)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct L {
        owner: &'static str,
        level: Option<&'static str>,
        subscribed: &'static [&'static str],
        denied_servers: &'static [&'static str],
        denied_uris: &'static [&'static str],
    }

    impl Listener for L {
        fn owner(&self) -> &str {
            self.owner
        }
        fn log_level(&self) -> Option<&str> {
            self.level
        }
        fn subscribed(&self, uri: &str) -> bool {
            self.subscribed.contains(&uri)
        }
        fn may_use(&self, server: &str) -> bool {
            !self.denied_servers.contains(&server)
        }
        fn may_read(&self, uri: &str, server: &str) -> bool {
            self.may_use(server) && !self.denied_uris.contains(&uri)
        }
        fn sees_tool(&self, name: &str, server: &str) -> bool {
            self.may_use(server) && !name.starts_with("hidden")
        }
    }

    const ALICE: L =
        L { owner: "alice", level: Some("info"), subscribed: &["note://alice", "note://shared"], denied_servers: &[], denied_uris: &[] };
    const BOB: L = L {
        owner: "bob",
        level: Some("debug"),
        subscribed: &["note://alice", "note://shared"],
        denied_servers: &["secret"],
        denied_uris: &["note://alice"],
    };
    const QUIET: L = L { owner: "alice", level: None, subscribed: &[], denied_servers: &[], denied_uris: &[] };

    fn heard(server: &str, owner: Option<&str>, msg: Value) -> Heard {
        Heard { origin: Origin { server: Arc::from(server), owner: owner.map(Arc::from) }, about: About::of(&msg) }
    }

    fn log(level: &str) -> Value {
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": level, "data": "x"}})
    }

    fn updated(uri: &str) -> Value {
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
    }

    #[test]
    fn only_the_named_kinds_are_anything_but_other() {
        assert_eq!(Said::of("notifications/prompts/list_changed"), Said::ListChanged);
        assert_eq!(Said::of("notifications/resources/list_changed"), Said::ListChanged);
        assert_eq!(Said::of("notifications/tools/list_changed"), Said::ToolsChanged);
        assert_eq!(Said::of("notifications/message"), Said::Log);
        assert_eq!(Said::of("notifications/tasks/status"), Said::TaskStatus);
        assert_eq!(Said::of("notifications/progress"), Said::Progress);
        assert_eq!(Said::of("notifications/cancelled"), Said::Cancelled);
        assert_eq!(Said::of("notifications/subscriptions/acknowledged"), Said::ListenAcknowledged);
        for other in [
            "notifications/tasks",
            "notifications/x/list_changed/more",
            "notifications/custom",
            "x-admin/list_changed",
            "notifications/list_changed",
            "",
        ] {
            assert_eq!(Said::of(other), Said::Other, "{other}");
        }
    }

    #[test]
    fn a_persons_own_connection_speaks_only_to_that_person() {
        let h = heard("mine", Some("alice"), log("error"));
        assert!(admits(&ALICE, &h));
        assert!(!admits(&BOB, &h), "bob asked for every level, yet alice's process is not his");
        let list = heard("mine", Some("alice"), json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}));
        assert!(!admits(&BOB, &list));
        assert!(owner_admits(&list.origin, "alice") && !owner_admits(&list.origin, "bob"));
        assert!(owner_admits(&heard("shared", None, log("info")).origin, "bob"));
    }

    #[test]
    fn logs_only_to_who_asked_at_that_level_and_may_use_the_server() {
        assert!(!admits(&QUIET, &heard("shared", None, log("emergency"))), "no level asked: no logs");
        assert!(admits(&ALICE, &heard("shared", None, log("info"))));
        assert!(!admits(&ALICE, &heard("shared", None, log("debug"))), "below the level asked");
        assert!(admits(&BOB, &heard("shared", None, log("debug"))));
        assert!(!admits(&BOB, &heard("secret", None, log("error"))), "a server the rules deny him");
    }

    #[test]
    fn updates_only_to_subscribers_who_may_read_it() {
        assert!(admits(&ALICE, &heard("shared", None, updated("note://alice"))));
        assert!(!admits(&BOB, &heard("shared", None, updated("note://alice"))), "subscribed, but the rules deny the resource");
        assert!(admits(&BOB, &heard("shared", None, updated("note://shared"))));
        assert!(!admits(&QUIET, &heard("shared", None, updated("note://shared"))), "not subscribed");
        assert!(!admits(&BOB, &heard("secret", None, updated("note://shared"))), "a server the rules deny him");
    }

    #[test]
    fn other_notifications_to_who_may_use_the_server() {
        let changed = json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"});
        assert!(admits(&QUIET, &heard("secret", None, changed.clone())));
        assert!(!admits(&BOB, &heard("secret", None, changed.clone())));
        assert!(admits(&BOB, &heard("shared", None, changed)));
    }

    #[test]
    fn a_tool_list_change_reaches_who_sees_a_changed_tool() {
        let change =
            |server: &str, names: &[&str]| ToolsChange { server: Arc::from(server), names: names.iter().map(|n| n.to_string()).collect() };
        assert!(tools_change_admits(&BOB, Some(&change("shared", &["hidden_a", "open"]))));
        assert!(!tools_change_admits(&BOB, Some(&change("shared", &["hidden_a", "hidden_b"]))), "his view did not change");
        assert!(!tools_change_admits(&BOB, Some(&change("secret", &["open"]))));
        assert!(tools_change_admits(&BOB, None), "a change not known tool by tool");
    }
}
