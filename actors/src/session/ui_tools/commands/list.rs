//! `_ui_list`: every tool with its page as the caller would get it.

use serde_json::{json, Value};

use super::Ctx;
use crate::messages::Peek;
use crate::servers::catalog::Naming;
use crate::session::ui_tools::ok_result;

pub(super) async fn run(cx: &Ctx) -> Value {
    let mut out = Vec::new();
    let in_profile = |t: &&crate::servers::catalog::ExposedTool| cx.profile.as_deref().is_none_or(|p| p.includes(t));
    for t in cx.catalog.tools().iter().filter(in_profile).filter(|t| cx.access.sees_tool(t) && cx.access.sees_page(t)) {
        let on = cx.deps.gets_page(t);
        let refinements = cx.feedback_of(&t.name).await.len();
        let entry = match on {
            true => cx.deps.queue.peek.send(Peek { tool: (*t.def).clone(), personal: cx.personal(&t.name) }).await.ok().flatten(),
            false => None,
        };
        let mut row = json!({
            "name": t.name,
            "enabled": on,
            "uiType": entry.as_ref().and_then(|e| e.ui_type),
            "kind": entry.as_ref().map(|e| e.kind),
            "cached": entry.is_some(),
            "refinements": refinements,
            "fallbackReason": entry.as_ref().and_then(|e| e.fallback_reason.clone()),
        });
        // A tool under a prefixed name: which server it is, and what that server calls it.
        if cx.deps.fleet.by_name(&t.server).is_some_and(|s| matches!(s.naming, Naming::Prefixed(_))) {
            row["server"] = json!(&*t.server);
            row["serverToolName"] = json!(t.bare);
            row["uri"] = json!(t.page);
        }
        out.push(row);
    }
    ok_result(json!({"tools": out}))
}
