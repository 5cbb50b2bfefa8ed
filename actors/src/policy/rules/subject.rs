//! One request as the rules see it.

use serde_json::Value;

use super::{Kind, ToolFacts};
use crate::who::Who;

/// One request as the rules see it.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub kind: Kind,
    /// The tool's or prompt's name, or the resource's URI, as hosts see it.
    pub name: &'a str,
    /// The server it belongs to ("" when no server is known for it).
    pub server: &'a str,
    pub who: &'a Who,
    /// `stdio`, `sse`, `streamable-http`.
    pub transport: &'a str,
    /// A call's arguments (None: listing, reading, or a call without arguments).
    pub args: Option<&'a Value>,
    /// What the tool says of itself (None: not looked up; `Policies` does when a rule reads it).
    pub tool: Option<&'a ToolFacts>,
}

impl Subject<'_> {
    /// The subject as known before its arguments: where only rules that never read them are
    /// evaluated, they are not copied into the condition's context.
    pub(super) fn without_args(&self) -> Self {
        let mut s = *self;
        s.args = None;
        s
    }
}
