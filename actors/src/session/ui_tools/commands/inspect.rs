//! `_ui_inspect`: how a tool's page was made, and what shapes it for the caller.

use serde_json::{json, Value};

use super::Ctx;
use crate::messages::{History, HistoryKey, KeyFor, Peek, Refinement};
use crate::session::ui_tools::ok_result;

pub(super) async fn run(cx: &Ctx, tool: &str) -> Value {
    if let Some(refused) = cx.without_page(tool) {
        return refused;
    }
    let t = cx.catalog.tool(tool).map(|t| (*t.def).clone()).unwrap_or(Value::Null);
    let refinements = &cx.deps.refinements;
    // What applies to the caller: the shared history, then (principal scope) their own.
    let shared = refinements.history.send(History { key: HistoryKey::shared(tool) }).await.unwrap_or_default();
    let mut history: Vec<Value> = shared.iter().map(|r| scoped(r, "shared")).collect();
    if let Some(k) = cx.personal(tool) {
        let mine = refinements.history.send(History { key: k }).await.unwrap_or_default();
        history.extend(mine.iter().map(|r| scoped(r, "yours")));
    }
    let key = cx.deps.queue.key_for.send(KeyFor { tool: t.clone(), personal: cx.personal(tool) }).await.unwrap_or_default();
    let e = cx.deps.queue.peek.send(Peek { tool: t.clone(), personal: cx.personal(tool) }).await.ok().flatten();
    ok_result(json!({
        "toolName": tool,
        "cacheKey": key,
        "cached": e.is_some(),
        "kind": e.as_ref().map(|e| e.kind),
        "uiType": e.as_ref().and_then(|e| e.ui_type),
        "generatedAt": e.as_ref().map(|e| e.generated_at),
        "durationMs": e.as_ref().map(|e| e.duration_ms),
        "provider": e.as_ref().map(|e| e.provider.clone()),
        "model": e.as_ref().map(|e| e.model.clone()),
        "promptVersion": e.as_ref().map(|e| e.prompt_version.clone()),
        "templateVersion": e.as_ref().map(|e| e.template_version.clone()),
        "fallbackReason": e.as_ref().and_then(|e| e.fallback_reason.clone()),
        "expiresAt": e.as_ref().and_then(|e| e.expires_at),
        "validationWarnings": e.as_ref().map(|e| e.warnings.clone()).unwrap_or_default(),
        "repairs": e.as_ref().map(|e| e.repairs.clone()).unwrap_or_default(),
        "requestId": e.as_ref().map(|e| e.request_id.clone()),
        "tokens": e.as_ref().map(|e| json!({"input": e.input_tokens, "output": e.output_tokens})),
        "refinements": history,
        "inputSchema": t.get("inputSchema").cloned().unwrap_or(Value::Null),
    }))
}

/// A history entry with whose it is.
fn scoped(r: &Refinement, scope: &str) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or_default();
    v["scope"] = json!(scope);
    v
}
