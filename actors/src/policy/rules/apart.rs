//! What the rules kept apart from the walk that decides do: quotas (`effect: limit`) and
//! approvals (`effect: approve`) act on the calls the rules allow.

use std::sync::Arc;

/// Who approves a call an `approve` rule matches, and for how long a request stands.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApproveSpec {
    /// The caller confirms their own call.
    pub caller: bool,
    /// Any admin (`server.auth.admins`).
    pub admins: bool,
    /// Principals by name.
    pub names: Vec<String>,
    /// JWT groups (`claims.groups`).
    pub groups: Vec<String>,
    pub expires_secs: u64,
}

/// A quota: at most `calls` calls a window of `per_secs`, counted per what `by` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitSpec {
    pub calls: u32,
    pub per_secs: u64,
    /// How the window is said (`minute`, `10 seconds`).
    pub per_label: String,
    pub by: Vec<By>,
}

/// What a quota is counted per (none: the rule's calls together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Person,
    Tool,
    Server,
}

impl By {
    pub fn as_str(self) -> &'static str {
        match self {
            By::Person => "person",
            By::Tool => "tool",
            By::Server => "server",
        }
    }
}

/// A limit rule whose names match a call and whose condition holds.
#[derive(Debug, Clone, Copy)]
pub struct Applies<'a> {
    pub rule: &'a Arc<str>,
    pub limit: &'a LimitSpec,
}

/// What a rule kept apart from the walk does to the calls it matches.
#[derive(Debug, Clone)]
pub(super) enum Apart {
    Limit(LimitSpec),
    Approve(ApproveSpec),
}
