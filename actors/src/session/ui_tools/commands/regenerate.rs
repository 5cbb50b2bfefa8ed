//! `_ui_regenerate`: the page made again from the start, the caller's refinements cleared when
//! asked. The shared page is remade only by whoever shapes it (an admin, or everyone when the
//! edge cannot tell people apart); a person who is not remakes only a page of their own.

use serde_json::{json, Value};

use super::{remake, Ctx};
use crate::messages::{Clear, ForgetTool, HistoryKey};
use crate::session::ui_tools::{error_result, ok_result};

pub(super) async fn run(cx: Ctx, tool: &str, clear_refinements: bool) -> Value {
    if let Some(refused) = cx.without_page(tool) {
        return refused;
    }
    let Some(mine) = cx.personal(tool) else {
        return shared(cx, tool, clear_refinements).await;
    };
    // A person who is not an admin (several people, or `refinements.scope: principal`): their
    // own refinements cleared when asked, and their own page remade when one is theirs. The
    // page everyone shares, and the tool's rich/minimal decision (everyone's too), stay.
    let cleared = match clear_refinements {
        true => cx.deps.refinements.clear.send(Clear { key: mine.clone(), every_scope: false }).await.unwrap_or(0),
        false => 0,
    };
    if !cx.deps.refinements.feedback(&mine).await.is_empty() {
        return remake::run(cx, tool, json!({"refinementsCleared": cleared, "scope": "yours"}), Some(mine)).await;
    }
    if cleared > 0 {
        // Nothing of theirs is left: they are served the shared page again, as it is.
        return ok_result(json!({
            "toolName": tool,
            "refinementsCleared": cleared,
            "scope": "shared",
            "message": format!("Your {cleared} refinement(s) of {tool} were cleared: you now get the page everyone shares, as it is. Regenerating that page is for admins (server.auth.admins)."),
        }));
    }
    error_result(&format!(
        "the page of {tool} is the one everyone shares, and only admins (server.auth.admins) regenerate it; \
         _ui_refine makes a page of your own, which _ui_regenerate then remakes"
    ))
}

/// The shared page remade (an admin, or everyone's when one person uses the service): the
/// shared refinements cleared when asked, and the rich/minimal decision made again.
async fn shared(cx: Ctx, tool: &str, clear_refinements: bool) -> Value {
    let cleared = match clear_refinements {
        true => cx.deps.refinements.clear.send(Clear { key: HistoryKey::shared(tool), every_scope: false }).await.unwrap_or(0),
        false => 0,
    };
    if let Some(t) = cx.catalog.tool(tool) {
        cx.deps.queue.forget.do_send(ForgetTool { tool: (*t.def).clone() });
    }
    remake::run(cx, tool, json!({"refinementsCleared": cleared, "scope": "shared"}), None).await
}
