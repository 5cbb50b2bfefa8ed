//! Making a page again (bypassing the cache) with the tool's refinements as they are now, for
//! `_ui_regenerate` and `_ui_refine`: answered within the read budget, with progress while it
//! waits; hosts are told when the new page is there.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::Ctx;
use crate::messages::{ReadUi, ReadWait};
use crate::session::deps::SessionDeps;
use crate::session::ui_tools::{error_result, ok_result};

/// `extra`: what the caller adds to the answer; `personal`: a person's own page.
pub(super) async fn run(cx: Ctx, tool: &str, extra: Value, personal: Option<crate::messages::HistoryKey>) -> Value {
    let Some(exposed) = cx.catalog.tool(tool) else {
        return error_result(&format!("the upstream no longer has a tool named {tool:?}"));
    };
    let started = Instant::now();
    let _ = cx.progress.send(json!({"progress": 0, "message": format!("generating the UI for {tool}")}));
    let read = cx.deps.queue.read.send(ReadUi {
        tool: (*exposed.def).clone(),
        request_id: cx.origin.request_id,
        force: true,
        personal,
        trace: cx.origin.trace,
        wait: ReadWait::Budget,
    });
    tokio::pin!(read);
    // A tick each second while the LLM works; none after the answer (the spec forbids it).
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + Duration::from_secs(1), Duration::from_secs(1));
    let read = loop {
        tokio::select! {
            res = &mut read => match res {
                Ok(r) => break r,
                Err(_) => return error_result("the generation queue stopped"),
            },
            _ = ticks.tick() => {
                let secs = started.elapsed().as_secs();
                let _ = cx.progress.send(json!({"progress": secs, "message": format!("still generating the UI for {tool} ({secs} s)")}));
            }
        }
    };
    let took = started.elapsed().as_millis() as u64;
    let entry = &read.entry;
    let summary = match (&read.writing, &entry.fallback_reason) {
        // Still being written: the queue tells the hosts when it is stored.
        (Some(w), _) => format!(
            "The UI for {tool} is being written ({} characters after {} s). Reads get it as soon as it is stored; hosts subscribed to {} hear notifications/resources/updated then.",
            w.chars,
            w.elapsed_ms / 1000,
            exposed.page
        ),
        (None, None) => format!("The UI for {tool} was regenerated ({}) in {took} ms.", entry.kind.as_str()),
        (None, Some(r)) => format!("The UI for {tool} is the template UI ({r}); it took {took} ms."),
    };
    if read.writing.is_none() {
        announce(&cx.deps, &exposed.page);
    }
    let mut data = json!({
        "toolName": tool,
        "uri": exposed.page,
        "kind": if read.writing.is_some() { json!("writing") } else { json!(entry.kind) },
        "provisional": read.writing.is_some(),
        "fallbackReason": if read.writing.is_some() { Value::Null } else { json!(entry.fallback_reason) },
        "durationMs": took,
        "message": summary,
    });
    if let (Some(d), Some(x)) = (data.as_object_mut(), extra.as_object()) {
        d.extend(x.clone());
    }
    ok_result(data)
}

/// Tells every host that the page `uri` changed (subscribers get resources/updated, UI hosts
/// resources/list_changed).
fn announce(deps: &SessionDeps, uri: &str) {
    deps.fleet.announce_page(uri);
}
