//! Pure: MCP 2026-07-28's tasks (the `io.modelcontextprotocol/tasks` extension) made from
//! what a 2025-11-25 server says, the way `revision_2026` dresses the rest. A 2026 host never
//! asks for a task: it declares the extension on a request, and the service decides (a tool that
//! runs as a task is run as one). It sees a task flat (`resultType: "task"`, `ttlMs`,
//! `pollIntervalMs`), polls it with `tasks/get`, which carries the result, the error or the
//! input it waits for, answers input with `tasks/update` and cancels with `tasks/cancel`, both
//! acknowledged empty. `tasks/result` and `tasks/list` are not part of it.

use serde_json::{json, Map, Value};

use crate::mcp::jsonrpc::{self, At};
use crate::mcp::revision_2026::errors;
use crate::mcp::tasks::RELATED_TASK;

/// The extension's name, as a request declares it in its client capabilities.
pub use crate::mcp::revision_2026::TASKS_EXTENSION as EXTENSION;
/// Task methods of 2025-11-25 that the extension does not have.
pub const NOT_IN_2026: &[&str] = &["tasks/result", "tasks/list"];

/// Whether a 2026 request's client capabilities declare the extension.
pub fn declared(capabilities: &Value) -> bool {
    capabilities.get("extensions").and_then(|e| e.get(EXTENSION)).is_some_and(Value::is_object)
}

/// The error for a request that needs the extension and did not declare it.
pub fn missing_extension(id: Value, what: &str) -> Value {
    jsonrpc::error_with_data(
        id,
        errors::MISSING_CAPABILITY,
        format!(
            "{what} needs the {EXTENSION} extension: declare it in the request's client capabilities (extensions[\"{EXTENSION}\"] = {{}})"
        ),
        json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}}),
    )
}

/// A task as 2026 names its fields (`ttl` -> `ttlMs`, `pollInterval` -> `pollIntervalMs`,
/// whole milliseconds), from a 2025 task object.
fn task_fields(task: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for key in ["taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt"] {
        if let Some(v) = task.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    let ms = |v: Option<&Value>| v.and_then(Value::as_f64).map(|f| json!(f.max(0.0).round() as u64));
    out.insert("ttlMs".into(), ms(task.get("ttl")).unwrap_or(Value::Null));
    if let Some(p) = ms(task.get("pollInterval")).filter(|p| p.as_u64() != Some(0)) {
        out.insert("pollIntervalMs".into(), p);
    }
    out
}

/// A 2026 server's task (flat, as its `tools/call` or `tasks/get` gives it) as 2025-11-25 names
/// it: the status fields only (`ttlMs` -> `ttl`, `pollIntervalMs` -> `pollInterval`); what
/// 2026 carries inline (the result, the error, the input requests) is `tasks/result`'s in 2025.
pub fn task_2025(task: &Value) -> Value {
    let mut out = Map::new();
    let Some(task) = task.as_object() else { return Value::Object(out) };
    for key in ["taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt"] {
        if let Some(v) = task.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    out.insert("ttl".into(), task.get("ttlMs").filter(|t| t.is_u64()).cloned().unwrap_or(Value::Null));
    if let Some(p) = task.get("pollIntervalMs").filter(|p| p.is_u64()) {
        out.insert("pollInterval".into(), p.clone());
    }
    Value::Object(out)
}

/// A 2026 server's `tools/call` answer that made a task (`resultType: "task"`, flat), as 2025
/// hosts (and the service's own task table) read one: `result.task`.
pub fn created_2025(answer: Value) -> Value {
    let Some(result) = answer.get("result") else { return answer };
    let task = task_2025(result);
    let id = jsonrpc::id(&answer).cloned().unwrap_or(Value::Null);
    jsonrpc::result(id, json!({ "task": task }))
}

/// A `tools/call` answer that made a task (`result.task`, 2025), as a 2026 host is given it:
/// flat, `resultType: "task"`.
pub fn created(answer: Value) -> Value {
    let Some(task) = answer.at("/result/task").and_then(Value::as_object) else { return answer };
    let mut result = task_fields(task);
    result.insert("resultType".into(), json!("task"));
    let id = jsonrpc::id(&answer).cloned().unwrap_or(Value::Null);
    jsonrpc::result(id, Value::Object(result))
}

/// How a task ended, as its server's `tasks/result` said.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A result (a tool error, `isError`, is a result too: 2026 calls that `completed`).
    Result(Value),
    /// A JSON-RPC error: the task `failed`.
    Error(Value),
}

impl Outcome {
    /// From a `tasks/result` answer (its related-task `_meta` dropped: 2026 has none).
    pub fn of(answer: &Value) -> Outcome {
        match (answer.get("result"), answer.get("error")) {
            (Some(r), _) => {
                let mut r = r.clone();
                if let Some(meta) = r.get_mut("_meta").and_then(Value::as_object_mut) {
                    meta.remove(RELATED_TASK);
                    if meta.is_empty() {
                        r.as_object_mut().map(|o| o.remove("_meta"));
                    }
                }
                Outcome::Result(r)
            }
            (None, Some(e)) => Outcome::Error(e.clone()),
            (None, None) => Outcome::Error(
                json!({"code": jsonrpc::code::INTERNAL_ERROR, "message": "the server's tasks/result answer held neither a result nor an error"}),
            ),
        }
    }
}

/// `tasks/get` for a 2026 host: the server's task (`result` of its `tasks/get`), with how it
/// ended when it has (`outcome`) and what it waits for when it waits for input (`inputs`).
pub fn detailed(id: Value, task: &Value, outcome: Option<&Outcome>, inputs: Option<Map<String, Value>>) -> Value {
    let mut out = task.as_object().map(task_fields).unwrap_or_default();
    match outcome {
        Some(Outcome::Result(r)) => {
            out.insert("status".into(), json!("completed"));
            // A 2026 CallToolResult carries its resultType, inline too (the official client's
            // task runner, ext-tasks, refuses a result without it).
            let mut r = r.clone();
            if let Some(o) = r.as_object_mut() {
                o.entry("resultType").or_insert(json!("complete"));
            }
            out.insert("result".into(), r);
        }
        Some(Outcome::Error(e)) => {
            out.insert("status".into(), json!("failed"));
            let mut err = Map::new();
            for k in ["code", "message", "data"] {
                if let Some(v) = e.get(k) {
                    err.insert(k.into(), v.clone());
                }
            }
            out.insert("error".into(), Value::Object(err));
        }
        None => {}
    }
    if let Some(inputs) = inputs.filter(|i| !i.is_empty()) {
        if outcome.is_none() {
            out.insert("status".into(), json!("input_required"));
            out.insert("inputRequests".into(), Value::Object(inputs));
        }
    }
    out.insert("resultType".into(), json!("complete"));
    jsonrpc::result(id, Value::Object(out))
}

/// The empty acknowledgement of `tasks/update` and `tasks/cancel`.
pub fn ack(id: Value) -> Value {
    jsonrpc::result(id, json!({"resultType": "complete"}))
}

/// Whether a 2025 status is an end (`completed`, `failed`, `cancelled`).
pub fn terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_is_flat_with_2026_names_and_its_end_inline() {
        let made = created(
            json!({"jsonrpc": "2.0", "id": 1, "result": {"task": {"taskId": "t", "status": "working", "ttl": 60000, "pollInterval": 1000.4, "createdAt": "x", "lastUpdatedAt": "y"}}}),
        );
        assert_eq!(
            made["result"],
            json!({"taskId": "t", "status": "working", "ttlMs": 60000, "pollIntervalMs": 1000, "createdAt": "x", "lastUpdatedAt": "y", "resultType": "task"})
        );
        let unbounded = created(json!({"id": 1, "result": {"task": {"taskId": "t", "status": "working", "ttl": null}}}));
        assert_eq!(unbounded["result"]["ttlMs"], Value::Null, "ttlMs is always there");
        let task = json!({"taskId": "t", "status": "failed", "ttl": 5});
        let tool_error = Outcome::of(&json!({"result": {"isError": true, "content": [], "_meta": {RELATED_TASK: {"taskId": "t"}}}}));
        let got = detailed(json!(2), &task, Some(&tool_error), None);
        assert_eq!(got["result"]["status"], "completed", "a tool error is a result in 2026");
        assert_eq!(
            got["result"]["result"],
            json!({"isError": true, "content": [], "resultType": "complete"}),
            "no related-task meta inline; a 2026 result's own type"
        );
        let failed = detailed(json!(2), &task, Some(&Outcome::of(&json!({"error": {"code": -32603, "message": "boom"}}))), None);
        assert_eq!((failed["result"]["status"].clone(), failed["result"]["error"]["code"].clone()), (json!("failed"), json!(-32603)));
        assert!(failed["result"].get("result").is_none());
        let waiting = detailed(
            json!(3),
            &json!({"taskId": "t", "status": "working"}),
            None,
            Some(Map::from_iter([("input_1".to_string(), json!({"method": "elicitation/create", "params": {}}))])),
        );
        assert_eq!(waiting["result"]["status"], "input_required");
        assert_eq!(waiting["result"]["resultType"], "complete");
    }

    #[test]
    fn the_extension_is_declared_per_request() {
        assert!(declared(&json!({"extensions": {EXTENSION: {}}})));
        assert!(!declared(&json!({"tasks": {}})));
        let e = missing_extension(json!(1), "tasks/get");
        assert_eq!(e["error"]["code"], errors::MISSING_CAPABILITY);
        assert_eq!(e["error"]["data"]["requiredCapabilities"]["extensions"][EXTENSION], json!({}));
    }

    #[test]
    fn a_2026_servers_task_reads_the_2025_way_and_back() {
        let flat = json!({"id": 4, "result": {"resultType": "task", "taskId": "t1", "status": "working", "statusMessage": "go",
            "createdAt": "c", "lastUpdatedAt": "u", "ttlMs": 60000, "pollIntervalMs": 300, "result": {"content": []}, "inputRequests": {}}});
        let made = created_2025(flat);
        assert_eq!(made["id"], 4);
        assert_eq!(
            made["result"]["task"],
            json!({"taskId": "t1", "status": "working", "statusMessage": "go", "createdAt": "c", "lastUpdatedAt": "u", "ttl": 60000, "pollInterval": 300})
        );
        // And back to 2026 for a 2026 host: the same task.
        let again = created(made);
        assert_eq!(again["result"]["ttlMs"], 60000);
        assert_eq!(again["result"]["pollIntervalMs"], 300);
        assert_eq!(again["result"]["resultType"], "task");
        let bare = task_2025(&json!({"taskId": "t2", "status": "completed", "ttlMs": "odd", "pollIntervalMs": -1}));
        assert_eq!(bare, json!({"taskId": "t2", "status": "completed", "ttl": null}), "what is not a number is not passed on");
        assert_eq!(created_2025(json!({"id": 1, "error": {"code": 1}}))["error"]["code"], 1, "an error stays one");
    }
}
