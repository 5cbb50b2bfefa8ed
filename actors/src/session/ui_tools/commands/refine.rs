//! `_ui_refine`: a refinement in plain words appended to the caller's history (principal
//! scope) or everyone's, and the page made again with it.

use serde_json::{json, Value};

use super::{remake, Ctx};
use crate::messages::{Append, HistoryKey, KeyFor};

pub(super) async fn run(cx: Ctx, tool: &str, feedback: String) -> Value {
    if let Some(refused) = cx.without_page(tool) {
        return refused;
    }
    let t = cx.catalog.tool(tool).map(|t| (*t.def).clone()).unwrap_or(Value::Null);
    let mine = cx.personal(tool);
    let replaced = cx.deps.queue.key_for.send(KeyFor { tool: t, personal: mine.clone() }).await.ok();
    // Principal scope: a person's refinement is theirs; an admin's is everyone's.
    let whose = mine.clone().unwrap_or_else(|| HistoryKey::shared(tool));
    let by = cx.access.who.name.to_string();
    let all = cx.deps.refinements.append.send(Append { key: whose, feedback, replaced_key: replaced, by }).await.unwrap_or_default();
    let scope = if mine.is_some() { "yours" } else { "shared" };
    remake::run(cx, tool, json!({"refinements": all.len(), "scope": scope}), mine).await
}
