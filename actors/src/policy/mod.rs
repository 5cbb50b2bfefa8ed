//! Who may call what: an ordered list of rules, each matching kinds of request and names (tool,
//! prompt and resource globs, server globs), with a condition over the request in CEL (the
//! principal and its claims, the transport, the server, the tool, the arguments, and what the
//! tool says of itself: its annotations and title). The first
//! rule that matches and whose condition holds decides; none does: the default. Compiled once
//! at start or reload ([`Policy`], pure); swapped whole on reload and its decisions cached per
//! principal ([`Policies`]), so a call pays a map lookup, not an evaluation, unless a
//! condition reads the arguments.

pub mod approval;
pub mod approvals;
mod cache;
pub mod quota;
pub mod quotas;
mod rules;

pub use cache::{Decision, Policies};
pub use rules::{
    remembered_facts, Applies, ApproveSpec, By, Condition, ConditionError, Effect, EvalError, EvalFailure, FactsSource, Kind, LimitSpec,
    Policy, Prefix, Rule, RuleError, RuleSpec, Subject, ToolFacts, Verdict,
};
