//! Pure: an approval request (a call held by an `approve` rule) and who may decide it. An
//! approval is bound to the exact call: the person, the server, the tool and a digest of the
//! canonical arguments; another argument is another call. It is single-use.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::rules::ApproveSpec;
use crate::who::Who;

/// A call waiting for an approval, as kept (here or in Redis) and shown to approvers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    pub id: String,
    /// Who called (as rules name them), and their key (whose the call is).
    pub person: String,
    pub person_key: String,
    pub server: String,
    pub tool: String,
    pub arguments: Value,
    /// [`call_digest`] of the call: what an approval is bound to.
    pub call: String,
    pub rule: String,
    pub approvers: Approvers,
    /// Unix milliseconds.
    pub requested_at: u64,
    pub expires_at: u64,
    pub state: State,
}

/// Who may decide (the rule's `approvers`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Approvers {
    pub caller: bool,
    pub admins: bool,
    pub names: Vec<String>,
    pub groups: Vec<String>,
}

impl From<&ApproveSpec> for Approvers {
    fn from(a: &ApproveSpec) -> Self {
        Approvers { caller: a.caller, admins: a.admins, names: a.names.clone(), groups: a.groups.clone() }
    }
}

impl Approvers {
    /// As people read it: `the caller`, `admins, carol or group ops`.
    pub fn describe(&self) -> String {
        let mut who: Vec<String> = Vec::new();
        if self.caller {
            who.push("the caller".into());
        }
        if self.admins {
            who.push("an admin".into());
        }
        who.extend(self.names.iter().cloned());
        who.extend(self.groups.iter().map(|g| format!("group {g}")));
        who.join(" or ")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "is")]
pub enum State {
    Pending,
    Approved { by: String },
    Declined { by: String },
    Expired,
}

impl State {
    pub fn as_str(&self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Approved { .. } => "approved",
            State::Declined { .. } => "declined",
            State::Expired => "expired",
        }
    }
}

/// What a call is, for its approval: its person, server, tool and canonical arguments.
pub fn call_digest(person_key: &str, server: &str, tool: &str, args: Option<&Value>) -> String {
    let args = crate::page::canonical(args.unwrap_or(&Value::Null));
    let subject = json!([person_key, server, tool, args]);
    hex::encode(&Sha256::digest(subject.to_string().as_bytes())[..16])
}

/// Why `who` may not decide a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotYours {
    #[error("you asked for this call: it needs {0}'s approval, not yours")]
    OwnCall(String),
    #[error("only {0} may decide this call")]
    NotAnApprover(String),
}

/// Whether `who` may decide `r` (seeing its tool is checked apart, by the rules).
pub fn may_decide(who: &Who, r: &Request) -> Result<(), NotYours> {
    let own = *who.key == *r.person_key;
    if own {
        return if r.approvers.caller { Ok(()) } else { Err(NotYours::OwnCall(r.approvers.describe())) };
    }
    let named = r.approvers.names.iter().any(|n| *n == *who.name);
    let grouped = who
        .claims
        .get("groups")
        .and_then(Value::as_array)
        .is_some_and(|gs| gs.iter().filter_map(Value::as_str).any(|g| r.approvers.groups.iter().any(|x| x == g)));
    if (r.approvers.admins && who.admin) || named || grouped {
        Ok(())
    } else {
        Err(NotYours::NotAnApprover(r.approvers.describe()))
    }
}

/// What an approver is shown of a request.
pub fn shown(r: &Request) -> Value {
    json!({
        "id": r.id, "person": r.person, "server": r.server, "tool": r.tool, "arguments": r.arguments,
        "rule": r.rule, "approvers": r.approvers.describe(), "state": r.state.as_str(),
        "requestedAt": rfc3339(r.requested_at), "expiresAt": rfc3339(r.expires_at),
    })
}

fn rfc3339(ms: u64) -> String {
    humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms)).to_string()
}

/// A request's id: random, so that none can be guessed.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn who(name: &str, admin: bool, groups: &[&str]) -> Who {
        Who::new(Arc::from(name), Arc::from(name), Arc::new(json!({"groups": groups})), admin)
    }

    fn request(approvers: Approvers) -> Request {
        Request {
            id: "1".into(),
            person: "bob".into(),
            person_key: "bob".into(),
            server: "fs".into(),
            tool: "fs__write_file".into(),
            arguments: json!({}),
            call: call_digest("bob", "fs", "fs__write_file", None),
            rule: "writes".into(),
            approvers,
            requested_at: 0,
            expires_at: 1,
            state: State::Pending,
        }
    }

    #[test]
    fn who_may_decide() {
        let admins = request(Approvers { admins: true, ..Default::default() });
        assert!(may_decide(&who("carol", true, &[]), &admins).is_ok());
        assert_eq!(may_decide(&who("dave", false, &[]), &admins), Err(NotYours::NotAnApprover("an admin".into())));
        assert!(matches!(may_decide(&who("bob", true, &[]), &admins), Err(NotYours::OwnCall(_))), "not one's own, admin or not");
        let listed = request(Approvers { names: vec!["dave".into()], groups: vec!["ops".into()], ..Default::default() });
        assert!(may_decide(&who("dave", false, &[]), &listed).is_ok());
        assert!(may_decide(&who("erin", false, &["ops"]), &listed).is_ok());
        assert!(may_decide(&who("frank", false, &["dev"]), &listed).is_err());
        let caller = request(Approvers { caller: true, ..Default::default() });
        assert!(may_decide(&who("bob", false, &[]), &caller).is_ok());
        assert!(may_decide(&who("carol", true, &[]), &caller).is_err(), "a confirmation is the caller's alone");
    }

    #[test]
    fn an_approval_is_bound_to_the_exact_call() {
        let d = |args: Value| call_digest("bob", "fs", "w", Some(&args));
        assert_eq!(d(json!({"a": 1, "b": 2})), d(json!({"b": 2, "a": 1})), "key order is not the call");
        assert_ne!(d(json!({"a": 1})), d(json!({"a": 2})));
        assert_ne!(call_digest("alice", "fs", "w", None), call_digest("bob", "fs", "w", None));
        assert_ne!(call_digest("bob", "fs", "w", None), call_digest("bob", "fs", "x", None));
    }
}
