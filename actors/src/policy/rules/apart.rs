//! What the rules kept apart from the walk that decides do: quotas (`effect: limit`) and
//! approvals (`effect: approve`) act on the calls the rules allow.

use std::sync::Arc;

use super::{EvalFailure, Policy, Subject};

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

/// The rules kept apart, as the session asks of them.
impl Policy {
    pub fn has_limits(&self) -> bool {
        self.limits.iter().any(|(_, a)| matches!(a, Apart::Limit(_)))
    }

    /// The quotas a call counts against: every limit rule whose names match and whose
    /// condition holds (or cannot be evaluated).
    pub fn limits(&self, s: &Subject, failures: &mut Vec<EvalFailure>) -> Vec<Applies<'_>> {
        let mut out = Vec::new();
        for (i, (rule, apart)) in self.limits.iter().enumerate() {
            if let Apart::Limit(limit) = apart {
                if rule.matches(s) && self.holds(self.rules.len() + i, rule, s, failures) {
                    out.push(Applies { rule: &rule.name, limit });
                }
            }
        }
        out
    }

    pub fn has_approvals(&self) -> bool {
        self.limits.iter().any(|(_, a)| matches!(a, Apart::Approve(_)))
    }

    /// The first approval rule a call matches (its condition holding or failing): the call
    /// waits for an approval under it.
    pub fn approval(&self, s: &Subject, failures: &mut Vec<EvalFailure>) -> Option<(&Arc<str>, &ApproveSpec)> {
        self.limits.iter().enumerate().find_map(|(i, (rule, apart))| match apart {
            Apart::Approve(a) if rule.matches(s) && self.holds(self.rules.len() + i, rule, s, failures) => Some((&rule.name, a)),
            _ => None,
        })
    }

    /// The quotas, in order: each rule's name and its limit.
    pub fn quotas(&self) -> impl Iterator<Item = (&Arc<str>, &LimitSpec)> {
        self.limits.iter().filter_map(|(r, a)| match a {
            Apart::Limit(l) => Some((&r.name, l)),
            Apart::Approve(_) => None,
        })
    }

    /// The approval rules, in order: each rule's name and who approves.
    pub fn approval_rules(&self) -> impl Iterator<Item = (&Arc<str>, &ApproveSpec)> {
        self.limits.iter().filter_map(|(r, a)| match a {
            Apart::Approve(s) => Some((&r.name, s)),
            Apart::Limit(_) => None,
        })
    }
}
