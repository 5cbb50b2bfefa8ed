//! The families of rules, the audit trail and per-person connections.

use prometheus::{IntCounterVec, IntGaugeVec};

use super::families::Families;

/// The families of rules, the audit trail and per-person connections.
pub struct AccessMetrics {
    /// Policy decisions on calls, reads and refinements by rule (its name, or `default`) and
    /// outcome (allow, deny); lists are filtered by the same rules but not counted.
    pub policy_decisions: IntCounterVec,
    /// Rule conditions that failed on a request (a missing key, a wrong type), by rule.
    pub policy_condition_errors: IntCounterVec,
    /// Audit trail lines written or dropped.
    pub audit_lines: IntCounterVec,
    /// Per-principal connections running, by server and principal (principal values bounded).
    pub principal_connections: IntGaugeVec,
    /// Per-principal connections asked for, by server and outcome (started, missing_secret, ...).
    pub principal_starts: IntCounterVec,
    /// RFC 8693 token exchanges by server and outcome (ok, cached, refused, error).
    pub token_exchanges: IntCounterVec,
    /// A person's connection listed tools other than the server's learned list (reported,
    /// not mixed in).
    pub principal_tool_lists_differ: IntCounterVec,
}

impl AccessMetrics {
    pub(super) fn new(r: &Families) -> AccessMetrics {
        AccessMetrics {
            policy_decisions: r.counters(
                "policy_decisions_total",
                "Calls, reads and refinements decided by the policy, by rule (or default) and outcome",
                &["rule", "outcome"],
            ),
            policy_condition_errors: r.counters(
                "policy_condition_errors_total",
                "Rule conditions that could not be evaluated on a request (they never grant), by rule",
                &["rule"],
            ),
            audit_lines: r.counters(
                "audit_lines_total",
                "Audit trail lines by outcome: written, or dropped (the sink could not keep up or failed)",
                &["outcome"],
            ),
            principal_connections: r.gauges(
                "principal_connections",
                "Per-principal upstream connections running, by server, principal (the first 100 principals by name, the rest _other) and the credential that named them (token, jwt)",
                &["server", "principal", "source"],
            ),
            principal_starts: r.counters(
                "principal_starts_total",
                "Per-principal upstream connections asked for, by server and outcome",
                &["server", "outcome"],
            ),
            token_exchanges: r.counters(
                "token_exchanges_total",
                "RFC 8693 token exchanges for per-principal connections, by server and outcome",
                &["server", "outcome"],
            ),
            principal_tool_lists_differ: r.counters(
                "principal_tool_lists_differ_total",
                "A person's connection listed other tools than the server's learned list (not mixed in)",
                &["server"],
            ),
        }
    }
}
