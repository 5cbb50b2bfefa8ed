//! The `_ui_*` tools this service adds. Here, pure: their definitions and the checking of their
//! arguments into a typed call (errors say what is valid); `commands/`: what each does, one
//! file each, over the actors' ports; `calls`: a host session answering one.

mod calls;
pub mod commands;

use serde_json::{json, Value};

use crate::mcp::bad_arguments::BadArguments;
pub use crate::mcp::ui_meta::UI_TOOL_PREFIX as PREFIX;
use crate::mcp::ui_meta::{PAGE_STATUS_MAX_WAIT_MS, PAGE_STATUS_TOOL};

#[derive(Debug, Clone, PartialEq)]
pub enum UiCall {
    List,
    Inspect {
        tool: String,
    },
    Regenerate {
        tool: String,
        clear_refinements: bool,
    },
    RefreshTools,
    Refine {
        tool: String,
        feedback: String,
    },
    /// A provisional page asking how far its page has got (app-only); `make`: a page that is
    /// not made or being made is started (the call_tool page opening a tool's page).
    PageStatus {
        tool: String,
        wait_ms: u64,
        html: bool,
        make: bool,
        /// The page as it is being written is wanted (inert), the answer sooner.
        preview: bool,
    },
    /// The tools held by their pins, with what changed (admins).
    ToolChanges,
    /// The held calls the caller may decide, and their own.
    Approvals,
    /// A decision on a held call.
    Approve {
        id: String,
        approve: bool,
    },
    /// An admin accepts a held tool, at the fingerprint shown when given.
    AcceptToolChange {
        server: String,
        tool: String,
        fingerprint: Option<String>,
    },
}

pub fn definitions() -> Vec<Value> {
    let tool_name = json!({"type": "string", "description": "Name of an upstream tool (see _ui_list)"});
    let meta = json!({"ui": {"visibility": ["model"]}});
    vec![
        json!({"name": "_ui_list", "title": "List tool UIs", "description": "Lists every upstream tool with its UI: type, whether it is cached, refinement count, and whether UIs are enabled for it.",
            "inputSchema": {"type": "object", "properties": {}}, "annotations": {"readOnlyHint": true}, "_meta": meta}),
        json!({"name": "_ui_inspect", "title": "Inspect a tool UI", "description": "Shows how a tool's UI was made: cache key, when, how long, model, prompt and template versions, refinement history, input schema, fallback reason and validation warnings.",
            "inputSchema": {"type": "object", "properties": {"toolName": tool_name}, "required": ["toolName"]}, "annotations": {"readOnlyHint": true}, "_meta": meta}),
        json!({"name": "_ui_regenerate", "title": "Regenerate a tool UI", "description": "Makes a tool's UI again, bypassing and replacing the cached one. clearRefinements also forgets the refinements.",
            "inputSchema": {"type": "object", "properties": {"toolName": tool_name, "clearRefinements": {"type": "boolean", "default": false}}, "required": ["toolName"]},
            "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false}, "_meta": meta}),
        json!({"name": "_ui_refresh_tools", "title": "Refresh tools", "description": "Lists the upstream's tools again and reports which were added, removed, changed or unchanged.",
            "inputSchema": {"type": "object", "properties": {}}, "annotations": {"readOnlyHint": false, "idempotentHint": true}, "_meta": meta}),
        json!({"name": "_ui_refine", "title": "Refine a tool UI", "description": "Changes a tool's UI as described in plain words (for example \"show the forecast as a table, hottest day first\"). The UI is regenerated at once with every refinement so far.",
            "inputSchema": {"type": "object", "properties": {"toolName": tool_name, "feedback": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "What to change, in plain words"}}, "required": ["toolName", "feedback"]},
            "annotations": {"readOnlyHint": false, "destructiveHint": false}, "_meta": meta}),
        json!({"name": PAGE_STATUS_TOOL, "title": "Page status", "description": "For a tool's provisional page: how far the page being written for it has got, and the page once written. Called by the page, not the model.",
            "inputSchema": {"type": "object", "properties": {"toolName": tool_name,
                "waitMs": {"type": "integer", "minimum": 0, "maximum": PAGE_STATUS_MAX_WAIT_MS, "default": 0, "description": "Wait at most this long for the page to be done"},
                "html": {"type": "boolean", "default": false, "description": "Include the written page"},
                "make": {"type": "boolean", "default": false, "description": "Start the page when it is not made or being made"},
                "preview": {"type": "boolean", "default": false, "description": "Include the page as it is being written, made inert (no scripts, styles, links or images)"}}, "required": ["toolName"]},
            "annotations": {"readOnlyHint": true}, "_meta": {"ui": {"visibility": ["app"]}}}),
    ]
}

/// The page that shows approvers the calls waiting for them.
pub const APPROVALS_PAGE: &str = "ui://mcp-gen-ui/approvals";

/// The tools of held calls, listed where some rule holds calls for approval. A decision is a
/// person's act, never a model's (whose context may hold what the caller put in the
/// arguments): `_ui_approve` is the approvals page's alone (visibility `app`); the model may
/// open the page with `_ui_approvals`.
pub fn approval_definitions() -> Vec<Value> {
    let meta = json!({"ui": {"visibility": ["model", "app"], "resourceUri": APPROVALS_PAGE}});
    vec![
        json!({"name": "_ui_approvals", "title": "Calls waiting for approval", "description": "Lists the tool calls held by an approve rule that you may approve or decline (each with its id, who asked, the tool and the arguments), and your own calls waiting.",
            "inputSchema": {"type": "object", "properties": {}}, "annotations": {"readOnlyHint": true}, "_meta": meta}),
        json!({"name": "_ui_approve", "title": "Approve or decline a call", "description": "Approves or declines a held tool call by its id (from _ui_approvals). An approved call is made once, with exactly its arguments.",
            "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}, "decision": {"type": "string", "enum": ["approve", "decline"]}}, "required": ["id", "decision"]},
            "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true}, "_meta": {"ui": {"visibility": ["app"]}}}),
    ]
}

/// The admin tools of pinned tools, listed where something can be held. Neither is the
/// model's: a held tool's new text is what is not to reach a model, and accepting it is an
/// admin's act (`mcp-gen-ui pins`, or an app).
pub fn pin_definitions() -> Vec<Value> {
    let meta = json!({"ui": {"visibility": ["app"]}});
    vec![
        json!({"name": "_ui_tool_changes", "title": "Held tool changes", "description": "Lists the tools held because their definition changed since it was accepted, or because they are new (policy.onToolChange / policy.onNewTool): each with its server, both fingerprints and every changed part, old and new. For admins.",
            "inputSchema": {"type": "object", "properties": {}}, "annotations": {"readOnlyHint": true}, "_meta": meta}),
        json!({"name": "_ui_accept_tool_change", "title": "Accept a tool change", "description": "Accepts a held tool's definition as it is now, so it is listed and callable again. Give the fingerprint _ui_tool_changes showed, so that a later change is not accepted unseen. For admins.",
            "inputSchema": {"type": "object", "properties": {"server": {"type": "string", "description": "The tool's server"}, "toolName": {"type": "string", "description": "The server's own name for the tool"},
                "fingerprint": {"type": "string", "description": "The fingerprint shown by _ui_tool_changes"}}, "required": ["server", "toolName", "fingerprint"]},
            "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true}, "_meta": meta}),
    ]
}

fn string_arg(args: &Value, name: &str) -> Result<String, BadArguments> {
    match args.get(name) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Some(Value::String(_)) => Err(BadArguments(format!("{name} must not be empty"))),
        Some(other) => Err(BadArguments(format!("{name} must be a string, not {other}"))),
        None => Err(BadArguments(format!("{name} is required"))),
    }
}

/// Parses a call; `known` are the upstream's tool names, and `shown` says which of them the
/// caller may see (only those are named in the "valid tool names" list).
pub fn parse(name: &str, args: &Value, known: &[String], shown: &dyn Fn(&str) -> bool) -> Result<UiCall, BadArguments> {
    let tool = || -> Result<String, BadArguments> {
        let t = string_arg(args, "toolName")?;
        if known.contains(&t) {
            Ok(t)
        } else {
            let visible: Vec<&str> = known.iter().map(String::as_str).filter(|n| shown(n)).collect();
            Err(BadArguments(format!(
                "unknown tool {t:?}; valid tool names: {}",
                if visible.is_empty() { "(none that you may use)".into() } else { visible.join(", ") }
            )))
        }
    };
    match name {
        "_ui_list" => Ok(UiCall::List),
        "_ui_refresh_tools" => Ok(UiCall::RefreshTools),
        "_ui_tool_changes" => Ok(UiCall::ToolChanges),
        "_ui_approvals" => Ok(UiCall::Approvals),
        "_ui_approve" => {
            let approve = match string_arg(args, "decision")?.as_str() {
                "approve" => true,
                "decline" => false,
                other => return Err(BadArguments(format!("decision must be \"approve\" or \"decline\", not {other:?}"))),
            };
            Ok(UiCall::Approve { id: string_arg(args, "id")?, approve })
        }
        "_ui_accept_tool_change" => {
            // Required: a change made after the admin looked is never accepted unseen.
            let fingerprint = Some(string_arg(args, "fingerprint")?);
            Ok(UiCall::AcceptToolChange { server: string_arg(args, "server")?, tool: string_arg(args, "toolName")?, fingerprint })
        }
        "_ui_inspect" => Ok(UiCall::Inspect { tool: tool()? }),
        "_ui_regenerate" => {
            let clear = match args.get("clearRefinements") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(other) => return Err(BadArguments(format!("clearRefinements must be true or false, not {other}"))),
            };
            Ok(UiCall::Regenerate { tool: tool()?, clear_refinements: clear })
        }
        "_ui_refine" => {
            let t = tool()?;
            let feedback = string_arg(args, "feedback")?;
            if feedback.chars().count() > 2000 {
                return Err(BadArguments::new("feedback is longer than 2000 characters; say it shorter"));
            }
            Ok(UiCall::Refine { tool: t, feedback })
        }
        PAGE_STATUS_TOOL => {
            let t = tool()?;
            let wait_ms = match args.get("waitMs") {
                None | Some(Value::Null) => 0,
                Some(v) => v.as_u64().filter(|n| *n <= PAGE_STATUS_MAX_WAIT_MS).ok_or_else(|| {
                    BadArguments(format!("waitMs must be a whole number of milliseconds from 0 to {PAGE_STATUS_MAX_WAIT_MS}, not {v}"))
                })?,
            };
            let flag = |key: &str| match args.get(key) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(other) => Err(BadArguments(format!("{key} must be true or false, not {other}"))),
            };
            Ok(UiCall::PageStatus { tool: t, wait_ms, html: flag("html")?, make: flag("make")?, preview: flag("preview")? })
        }
        other => Err(BadArguments(format!(
            "unknown tool {other:?}; this service adds _ui_list, _ui_inspect, _ui_regenerate, _ui_refresh_tools, _ui_refine, {PAGE_STATUS_TOOL}, with pinned tools _ui_tool_changes and _ui_accept_tool_change, and with approvals _ui_approvals and _ui_approve"
        ))),
    }
}

/// A tool result with one text block and the same data as structuredContent.
pub fn ok_result(data: Value) -> Value {
    json!({"content": [{"type": "text", "text": serde_json::to_string_pretty(&data).unwrap_or_default()}], "structuredContent": data})
}

pub fn error_result(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

/// An error result that also says what did work.
pub fn error_result_with(message: &str, data: Value) -> Value {
    json!({"content": [{"type": "text", "text": message}], "structuredContent": data, "isError": true})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Vec<String> {
        vec!["get_forecast".into(), "set_units".into()]
    }

    #[test]
    fn parses_each_call() {
        assert_eq!(parse("_ui_list", &json!({}), &known(), &|_| true), Ok(UiCall::List));
        assert_eq!(
            parse("_ui_inspect", &json!({"toolName": "set_units"}), &known(), &|_| true),
            Ok(UiCall::Inspect { tool: "set_units".into() })
        );
        assert_eq!(
            parse("_ui_regenerate", &json!({"toolName": "set_units", "clearRefinements": true}), &known(), &|_| true),
            Ok(UiCall::Regenerate { tool: "set_units".into(), clear_refinements: true })
        );
        assert_eq!(
            parse("_ui_refine", &json!({"toolName": "get_forecast", "feedback": " a table "}), &known(), &|_| true),
            Ok(UiCall::Refine { tool: "get_forecast".into(), feedback: "a table".into() })
        );
    }

    #[test]
    fn errors_say_what_is_valid() {
        let e = parse("_ui_inspect", &json!({"toolName": "nope"}), &known(), &|_| true).unwrap_err();
        assert!(e.0.contains("get_forecast, set_units"), "{e}");
        assert!(parse("_ui_inspect", &json!({}), &known(), &|_| true).unwrap_err().0.contains("toolName is required"));
        let hidden = parse("_ui_inspect", &json!({"toolName": "nope"}), &known(), &|n| n != "set_units").unwrap_err().0;
        assert!(hidden.contains("get_forecast") && !hidden.contains("set_units"), "only what the caller may see is named: {hidden}");
        assert!(parse("_ui_refine", &json!({"toolName": "set_units", "feedback": 3}), &known(), &|_| true)
            .unwrap_err()
            .0
            .contains("must be a string"));
        assert!(parse("_ui_regenerate", &json!({"toolName": "set_units", "clearRefinements": "yes"}), &known(), &|_| true)
            .unwrap_err()
            .0
            .contains("true or false"));
        assert!(parse("_ui_bogus", &json!({}), &known(), &|_| true).unwrap_err().0.contains("_ui_refine"));
    }

    #[test]
    fn page_status_bounds_its_wait() {
        assert_eq!(
            parse(PAGE_STATUS_TOOL, &json!({"toolName": "set_units", "waitMs": 2500, "html": true}), &known(), &|_| true),
            Ok(UiCall::PageStatus { tool: "set_units".into(), wait_ms: 2500, html: true, make: false, preview: false })
        );
        for bad in [json!(10_001), json!(-1), json!(1.5), json!("soon")] {
            let e = parse(PAGE_STATUS_TOOL, &json!({"toolName": "set_units", "waitMs": bad}), &known(), &|_| true).unwrap_err();
            assert!(e.0.contains("from 0 to 10000"), "{e}");
        }
        let app_only = definitions().into_iter().find(|d| d["name"] == PAGE_STATUS_TOOL).unwrap();
        assert_eq!(app_only["_meta"]["ui"]["visibility"], json!(["app"]), "hidden from the model");
    }

    #[test]
    fn definitions_are_well_formed() {
        for d in definitions() {
            assert!(d["name"].as_str().unwrap().starts_with(PREFIX));
            assert_eq!(d["inputSchema"]["type"], "object");
        }
    }
}
