//! `_ui_page_status` (app-only): where a tool's page is, for its provisional page, waiting a
//! little for one being written.

use std::time::Duration;

use serde_json::{json, Value};

use super::Ctx;
use crate::generation::preview;
use crate::messages::{PageStatus, ReadUi, ReadWait, StatusOf};
use crate::session::ui_tools::error_result;

pub(super) async fn run(cx: &Ctx, tool: &str, wait_ms: u64, html: bool, make: bool, preview: bool) -> Value {
    if let Some(refused) = cx.without_page(tool) {
        return refused;
    }
    let Some(t) = cx.catalog.tool(tool) else { return error_result(&format!("the upstream no longer has a tool named {tool:?}")) };
    let ask = StatusOf { tool: (*t.def).clone(), personal: cx.personal(tool), wait: Duration::from_millis(wait_ms), preview };
    match cx.deps.queue.status.send(ask).await {
        Ok(PageStatus::Idle) if make => made(cx, t, html).await,
        Ok(PageStatus::Writing(w, Some(partial))) => {
            // Parsing the model's text is CPU work: on the blocking pool, not the session's thread.
            let tree = tokio::task::spawn_blocking(move || preview::inert_tree(&partial)).await.unwrap_or_default();
            let mut a = answer(tool, PageStatus::Writing(w, None), html);
            a["structuredContent"]["preview"] = tree;
            a
        }
        Ok(status) => answer(tool, status, html),
        Err(_) => error_result("the generation queue stopped"),
    }
}

/// A page nobody has asked for yet, read as a host's read would: the written page, or (past the
/// read budget) the provisional one, which follows the writing itself.
async fn made(cx: &Ctx, t: &crate::servers::catalog::ExposedTool, with_html: bool) -> Value {
    let read = ReadUi {
        tool: (*t.def).clone(),
        request_id: cx.origin.request_id.clone(),
        force: false,
        personal: cx.personal(&t.name),
        trace: cx.origin.trace.clone(),
        wait: ReadWait::Budget,
    };
    let Ok(read) = cx.deps.queue.read.send(read).await else { return error_result("the generation queue stopped") };
    let state = if read.writing.is_some() { "provisional" } else { "ready" };
    let mut data = json!({"toolName": t.name, "state": state, "kind": read.entry.kind, "bytes": read.entry.html.len()});
    if with_html {
        data["html"] = json!(read.entry.html);
    }
    json!({"content": [{"type": "text", "text": format!("The page for {} is {state}.", t.name)}], "structuredContent": data})
}

/// The page (when asked for) goes in `structuredContent` only: the text says what happened in
/// a line, so a host that shows results is not handed the HTML twice.
fn answer(tool: &str, status: PageStatus, with_html: bool) -> Value {
    let (data, line) = match status {
        PageStatus::Writing(w, _) => (
            json!({"toolName": tool, "state": "writing", "phase": w.phase, "chars": w.chars, "attempt": w.attempt, "elapsedMs": w.elapsed_ms, "etaMs": w.eta_ms}),
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
            let mut d = json!({"toolName": tool, "state": "template", "kind": e.kind, "fallbackReason": reason, "failed": failed});
            if with_html {
                d["html"] = json!(e.html);
            }
            (d, line)
        }
        PageStatus::Idle => (json!({"toolName": tool, "state": "idle"}), format!("No page for {tool} is made or being made.")),
    };
    json!({"content": [{"type": "text", "text": line}], "structuredContent": data})
}
