//! `_ui_page_status` (app-only): where a tool's page is, for its provisional page, waiting a
//! little for one being written.

use std::time::Duration;

use serde_json::{json, Value};

use super::Ctx;
use crate::messages::{PageStatus, StatusOf};
use crate::session::ui_tools::error_result;

pub(super) async fn run(cx: &Ctx, tool: &str, wait_ms: u64, html: bool) -> Value {
    if let Some(refused) = cx.without_page(tool) {
        return refused;
    }
    let Some(t) = cx.catalog.tool(tool) else { return error_result(&format!("the upstream no longer has a tool named {tool:?}")) };
    let ask = StatusOf { tool: (*t.def).clone(), personal: cx.personal(tool), wait: Duration::from_millis(wait_ms) };
    match cx.deps.queue.status.send(ask).await {
        Ok(status) => answer(tool, status, html),
        Err(_) => error_result("the generation queue stopped"),
    }
}

/// The page (when asked for) goes in `structuredContent` only: the text says what happened in
/// a line, so a host that shows results is not handed the HTML twice.
fn answer(tool: &str, status: PageStatus, with_html: bool) -> Value {
    let (data, line) = match status {
        PageStatus::Writing(w) => (
            json!({"toolName": tool, "state": "writing", "phase": w.phase, "chars": w.chars, "attempt": w.attempt, "elapsedMs": w.elapsed_ms}),
            format!("The page for {tool} is being written ({}, {} characters, {} s).", w.phase.as_str(), w.chars, w.elapsed_ms / 1000),
        ),
        PageStatus::Ready(e) if e.fallback_reason.is_none() => {
            let mut d = json!({"toolName": tool, "state": "ready", "kind": e.kind, "generatedAt": e.generated_at, "bytes": e.html.len()});
            if with_html {
                d["html"] = json!(e.html);
            }
            (d, format!("The page for {tool} is written ({} bytes).", e.html.len()))
        }
        PageStatus::Ready(e) => {
            let reason = e.fallback_reason.clone();
            let failed = reason.as_ref().is_some_and(|r| r.is_failure());
            let line = format!("The page for {tool} is the template ({}).", reason.as_ref().map(|r| r.as_str()).unwrap_or("no reason"));
            (json!({"toolName": tool, "state": "template", "kind": e.kind, "fallbackReason": reason, "failed": failed}), line)
        }
        PageStatus::Idle => (json!({"toolName": tool, "state": "idle"}), format!("No page for {tool} is made or being made.")),
    };
    json!({"content": [{"type": "text", "text": line}], "structuredContent": data})
}
