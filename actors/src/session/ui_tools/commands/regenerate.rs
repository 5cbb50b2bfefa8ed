//! `_ui_regenerate`: the page made again from the start (classification included), the
//! caller's refinements cleared when asked.

use serde_json::{json, Value};

use super::{remake, Ctx};
use crate::messages::{Clear, ForgetTool, HistoryKey};

pub(super) async fn run(cx: Ctx, tool: &str, clear_refinements: bool) -> Value {
    if let Some(refused) = cx.without_page(tool) {
        return refused;
    }
    // Principal scope: a person clears their own refinements; an admin the shared ones.
    let whose = cx.personal(tool).unwrap_or_else(|| HistoryKey::shared(tool));
    let cleared = match clear_refinements {
        true => cx.deps.refinements.clear.send(Clear { key: whose, every_scope: false }).await.unwrap_or(0),
        false => 0,
    };
    // Starting over includes the rich/minimal decision.
    if let Some(t) = cx.catalog.tool(tool) {
        cx.deps.queue.forget.do_send(ForgetTool { tool: (*t.def).clone() });
    }
    // A person with no refinements of their own regenerates the page they share with everyone
    // (as a shared remake: every replica and ready page hears of it).
    let mine = match cx.personal(tool) {
        Some(k) if !cx.deps.refinements.feedback(&k).await.is_empty() => Some(k),
        _ => None,
    };
    remake::run(cx, tool, json!({"refinementsCleared": cleared}), mine).await
}
