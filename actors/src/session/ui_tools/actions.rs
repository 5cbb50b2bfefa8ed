//! What the `_ui_*` tools do. Plain async functions over actor addresses: the host session
//! spawns one per call and answers with its result.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::mcp::jsonrpc;
use crate::messages::{
    Append, Clear, ForgetTool, History, HostEvent, KeyFor, PageStatus, Peek, ReadUi, ReadWait, RefreshTools, StatusOf, ToolsDiff,
};
use crate::servers::catalog::Catalog;
use crate::session::deps::SessionDeps;
use crate::session::ui_tools::{error_result, error_result_with, ok_result, UiCall};
use crate::store::refinements::personal_key;
use crate::trace::TraceCx;

/// `refinements.scope: principal`: the history key of the caller's own refinements of `tool`
/// (`own` is the caller when they are not an admin; None: the shared history is theirs).
fn personal(own: &Option<Arc<str>>, tool: &str) -> Option<String> {
    own.as_ref().map(|p| personal_key(tool, p))
}

/// What shapes the caller's page: the shared refinements, then their own.
async fn feedback_of(deps: &SessionDeps, own: &Option<Arc<str>>, tool: &str) -> Vec<String> {
    let mut all = deps.refinements.feedback(tool).await;
    if let Some(k) = personal(own, tool) {
        all.extend(deps.refinements.feedback(&k).await);
    }
    all
}

/// Tells every host that the page `uri` changed (subscribers get resources/updated, UI hosts
/// resources/list_changed).
fn announce(deps: &SessionDeps, uri: &str) {
    let msg = jsonrpc::notification("notifications/resources/updated", json!({"uri": uri}));
    deps.fleet.broadcast(HostEvent::ResourceUpdated { uri: uri.to_string(), msg });
    deps.fleet.broadcast(HostEvent::UiResourcesChanged);
}

/// Re-lists every server's tools; what changed, by the names hosts know.
async fn refresh_all(deps: &SessionDeps) -> Value {
    let mut all = ToolsDiff::default();
    let mut failed = Vec::new();
    for s in deps.fleet.servers().iter() {
        match s.port.refresh.send(RefreshTools).await {
            Ok(Ok(d)) => {
                all.added.extend(d.added);
                all.removed.extend(d.removed);
                all.changed.extend(d.changed);
                all.unchanged.extend(d.unchanged);
            }
            Ok(Err(why)) => failed.push(format!("{}: {why}", s.name)),
            Err(_) => failed.push(format!("{}: its supervisor stopped", s.name)),
        }
    }
    match (failed.is_empty(), deps.fleet.single().is_some()) {
        (true, _) => ok_result(serde_json::to_value(all).unwrap_or_default()),
        (false, true) => {
            error_result(&format!("could not list the upstream's tools: {}", failed[0].split_once(": ").map_or("", |(_, w)| w)))
        }
        (false, false) => {
            let mut v = serde_json::to_value(all).unwrap_or_default();
            v["failed"] = json!(failed);
            error_result_with(&format!("could not list the tools of {}", failed.join("; ")), v)
        }
    }
}

/// The request a `_ui_*` call came in: its id for the logs, its span for the trace.
pub struct Origin {
    pub request_id: String,
    pub trace: TraceCx,
}

/// `own`: with `refinements.scope: principal`, the caller when they are not an admin (their
/// refinements are theirs alone); None otherwise (refinements are everyone's).
pub async fn run(
    call: UiCall,
    catalog: Arc<Catalog>,
    deps: SessionDeps,
    progress: mpsc::UnboundedSender<Value>,
    origin: Origin,
    own: Option<Arc<str>>,
) -> Value {
    // The one rule for which tools get a page; the refusal names the setting that decided.
    let no_page = |t: &str| match catalog.tool(t).map(|x| deps.page_rule(x)) {
        Some(Err(why)) => Some(error_result(&format!("{t:?} has no UI page: {why}"))),
        _ => None,
    };
    match call {
        UiCall::List => {
            let mut out = Vec::new();
            for t in catalog.tools() {
                let name = t.name.clone();
                let on = deps.gets_page(t);
                let fb = feedback_of(&deps, &own, &name).await;
                let entry = if on {
                    deps.queue.peek.send(Peek { tool: (*t.def).clone(), personal: personal(&own, &name) }).await.ok().flatten()
                } else {
                    None
                };
                let mut row = json!({
                    "name": name,
                    "enabled": on,
                    "uiType": entry.as_ref().and_then(|e| e.ui_type),
                    "kind": entry.as_ref().map(|e| e.kind),
                    "cached": entry.is_some(),
                    "refinements": fb.len(),
                    "fallbackReason": entry.as_ref().and_then(|e| e.fallback_reason.clone()),
                });
                if deps.fleet.single().is_none() {
                    // Several servers: which one, and what it calls the tool.
                    row["server"] = json!(&*t.server);
                    row["serverToolName"] = json!(t.bare);
                    row["uri"] = json!(t.page);
                }
                out.push(row);
            }
            ok_result(json!({"tools": out}))
        }
        UiCall::Inspect { tool } => {
            if let Some(refused) = no_page(&tool) {
                return refused;
            }
            let t = catalog.tool(&tool).map(|t| (*t.def).clone()).unwrap_or(Value::Null);
            // What applies to the caller: the shared history, then (principal scope) their own.
            let mut history: Vec<Value> = deps
                .refinements
                .history
                .send(History { tool: tool.clone() })
                .await
                .unwrap_or_default()
                .into_iter()
                .map(|r| scoped(&r, "shared"))
                .collect();
            if let Some(k) = personal(&own, &tool) {
                let mine = deps.refinements.history.send(History { tool: k }).await.unwrap_or_default();
                history.extend(mine.iter().map(|r| scoped(r, "yours")));
            }
            let key = deps.queue.key_for.send(KeyFor { tool: t.clone(), personal: personal(&own, &tool) }).await.unwrap_or_default();
            let e = deps.queue.peek.send(Peek { tool: t.clone(), personal: personal(&own, &tool) }).await.ok().flatten();
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
        UiCall::RefreshTools => refresh_all(&deps).await,
        UiCall::Regenerate { tool, clear_refinements } => {
            if let Some(refused) = no_page(&tool) {
                return refused;
            }
            // Principal scope: a person clears their own refinements; an admin the shared ones.
            let whose = personal(&own, &tool).unwrap_or_else(|| tool.clone());
            let cleared = if clear_refinements {
                deps.refinements.clear.send(Clear { tool: whose, every_scope: false }).await.unwrap_or(0)
            } else {
                0
            };
            // Starting over includes the rich/minimal decision.
            if let Some(t) = catalog.tool(&tool) {
                deps.queue.forget.do_send(ForgetTool { tool: (*t.def).clone() });
            }
            // A person with no refinements of their own regenerates the page they share with
            // everyone (as a shared remake: every replica and ready page hears of it).
            let mine = match personal(&own, &tool) {
                Some(k) if !deps.refinements.feedback(&k).await.is_empty() => Some(k),
                _ => None,
            };
            regenerate(&deps, &catalog, &tool, &progress, json!({"refinementsCleared": cleared}), origin, mine).await
        }
        UiCall::Refine { tool, feedback } => {
            if let Some(refused) = no_page(&tool) {
                return refused;
            }
            let t = catalog.tool(&tool).map(|t| (*t.def).clone()).unwrap_or(Value::Null);
            let mine = personal(&own, &tool);
            let replaced = deps.queue.key_for.send(KeyFor { tool: t, personal: mine.clone() }).await.ok();
            // Principal scope: a person's refinement is theirs; an admin's is everyone's.
            let whose = mine.clone().unwrap_or_else(|| tool.clone());
            let fb = deps.refinements.append.send(Append { tool: whose, feedback, replaced_key: replaced }).await.unwrap_or_default();
            let n = fb.len();
            let scope = if mine.is_some() { "yours" } else { "shared" };
            regenerate(&deps, &catalog, &tool, &progress, json!({"refinements": n, "scope": scope}), origin, mine).await
        }
        UiCall::PageStatus { tool, wait_ms, html } => {
            if let Some(refused) = no_page(&tool) {
                return refused;
            }
            let Some(t) = catalog.tool(&tool) else { return error_result(&format!("the upstream no longer has a tool named {tool:?}")) };
            let ask = StatusOf { tool: (*t.def).clone(), personal: personal(&own, &tool), wait: std::time::Duration::from_millis(wait_ms) };
            match deps.queue.status.send(ask).await {
                Ok(status) => page_status(&tool, status, html),
                Err(_) => error_result("the generation queue stopped"),
            }
        }
    }
}

/// `_ui_page_status`'s answer. The page (when asked for) goes in `structuredContent` only: the
/// text says what happened in a line, so a host that shows results is not handed the HTML twice.
fn page_status(tool: &str, status: PageStatus, with_html: bool) -> Value {
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

/// Makes the page again (bypassing the cache) with the tool's refinements as they are now,
/// announces it, and says what happened.
async fn regenerate(
    deps: &SessionDeps,
    catalog: &Catalog,
    tool: &str,
    progress: &mpsc::UnboundedSender<Value>,
    extra: Value,
    origin: Origin,
    personal: Option<String>,
) -> Value {
    let Some(exposed) = catalog.tool(tool) else {
        return error_result(&format!("the upstream no longer has a tool named {tool:?}"));
    };
    let started = Instant::now();
    let _ = progress.send(json!({"progress": 0, "message": format!("generating the UI for {tool}")}));
    let read = deps.queue.read.send(ReadUi {
        tool: (*exposed.def).clone(),
        request_id: origin.request_id,
        force: true,
        personal,
        trace: origin.trace,
        wait: ReadWait::Budget,
    });
    tokio::pin!(read);
    // A tick each second while the LLM works; none after the answer (the spec forbids it).
    let mut ticks =
        tokio::time::interval_at(tokio::time::Instant::now() + std::time::Duration::from_secs(1), std::time::Duration::from_secs(1));
    let read = loop {
        tokio::select! {
            res = &mut read => match res {
                Ok(r) => break r,
                Err(_) => return error_result("the generation queue stopped"),
            },
            _ = ticks.tick() => {
                let secs = started.elapsed().as_secs();
                let _ = progress.send(json!({"progress": secs, "message": format!("still generating the UI for {tool} ({secs} s)")}));
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
        announce(deps, &exposed.page);
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

/// A history entry with whose it is.
fn scoped(r: &crate::messages::Refinement, scope: &str) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or_default();
    v["scope"] = json!(scope);
    v
}
