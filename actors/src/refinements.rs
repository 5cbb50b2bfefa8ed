//! `Refinements`: owns each tool's refinement history (what the user asked to change, when, and
//! which cached page it replaced). The feedback texts, in order, go into the cache key and the
//! most recent ones into the prompt.

use std::collections::HashMap;

use actix::prelude::*;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Refinement {
    /// Unix milliseconds.
    pub at: u64,
    pub feedback: String,
    /// The cache key of the page this refinement replaced.
    pub replaced_key: Option<String>,
}

#[derive(Default)]
pub struct Refinements {
    by_tool: HashMap<String, Vec<Refinement>>,
}

impl Actor for Refinements {
    type Context = Context<Self>;
}

/// Appends one; answers the tool's feedback texts in order, the new one last.
#[derive(Message)]
#[rtype(result = "Vec<String>")]
pub struct Append {
    pub tool: String,
    pub feedback: String,
    pub replaced_key: Option<String>,
}

impl Handler<Append> for Refinements {
    type Result = MessageResult<Append>;

    fn handle(&mut self, m: Append, _ctx: &mut Self::Context) -> Self::Result {
        let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
        let list = self.by_tool.entry(m.tool).or_default();
        list.push(Refinement { at, feedback: m.feedback, replaced_key: m.replaced_key });
        MessageResult(list.iter().map(|r| r.feedback.clone()).collect())
    }
}

/// The full history of a tool (oldest first).
#[derive(Message)]
#[rtype(result = "Vec<Refinement>")]
pub struct History {
    pub tool: String,
}

impl Handler<History> for Refinements {
    type Result = MessageResult<History>;

    fn handle(&mut self, m: History, _ctx: &mut Self::Context) -> Self::Result {
        MessageResult(self.by_tool.get(&m.tool).cloned().unwrap_or_default())
    }
}

/// Forgets a tool's history (on request, or when the tool is gone). Answers how many there were.
#[derive(Message)]
#[rtype(result = "usize")]
pub struct Clear {
    pub tool: String,
}

impl Handler<Clear> for Refinements {
    type Result = usize;

    fn handle(&mut self, m: Clear, _ctx: &mut Self::Context) -> usize {
        self.by_tool.remove(&m.tool).map(|v| v.len()).unwrap_or(0)
    }
}
