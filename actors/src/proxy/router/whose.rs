//! The words of the one rule for whose a server's message is: whose the connection is
//! ([`Hearers`]), and why a server request went to no host ([`Unrouted`]).

use std::sync::Arc;

/// Whose what a connection says is when the message itself names no owner (no request, task,
/// subscription or elicitation of anyone's): the one rule that replaces any guess from which
/// calls were in flight (see ARCHITECTURE.md, the invariant "What a server sends toward hosts has one owner").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hearers {
    /// A person's own connection (`perPrincipal`): all it says is theirs, and it speaks only to
    /// their sessions.
    Person(Arc<str>),
    /// The endpoint cannot tell people apart (authentication off, one principal, the stdio
    /// edge): all it says is the one person's.
    OnePerson,
    /// Several people share the connection: what names no owner is no one's (a server request
    /// is refused, a log line or notification goes to the service's own log and metrics).
    People,
}

impl Hearers {
    /// A connection of `owner`'s own, else one shared by `several` people or by one.
    pub fn of(owner: Option<Arc<str>>, several: bool) -> Hearers {
        match owner {
            Some(o) => Hearers::Person(o),
            None if several => Hearers::People,
            None => Hearers::OnePerson,
        }
    }
}

/// Why a server-to-client request went to no host (the server is answered with an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unrouted {
    /// Its person has no connected session (or none that could be asked).
    NoHost,
    /// It names no request, task or person, and several people share the server: whose it is
    /// cannot be known, and it is not guessed.
    OwnerUnknown,
    /// The host request it names has ended.
    RequestGone,
    /// It names a task the service does not know (expired, forgotten, another server's).
    UnknownTask,
}

impl Unrouted {
    pub fn label(self) -> &'static str {
        match self {
            Unrouted::NoHost => "no_host",
            Unrouted::OwnerUnknown => "owner_unknown",
            Unrouted::RequestGone => "request_gone",
            Unrouted::UnknownTask => "unknown_task",
        }
    }

    /// What the server is told.
    pub fn why(self, method: &str, server: &str) -> String {
        match self {
            Unrouted::NoHost => format!("no connected host can answer {method} right now"),
            Unrouted::OwnerUnknown => format!(
                "mcp-gen-ui cannot tell whose this {method} is: server {server} is shared by several people and the request names no call of theirs, and it never guesses across people; send it on the call's own stream (Streamable HTTP), inside a task, or run the server perPrincipal"
            ),
            Unrouted::RequestGone => format!("the request this {method} belongs to has ended"),
            Unrouted::UnknownTask => format!("this {method} names a task mcp-gen-ui does not know (expired or forgotten)"),
        }
    }
}
