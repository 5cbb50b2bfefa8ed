//! Pure: the wire of MCP 2025-11-25 tasks as the service reads it: which tool runs as a task,
//! which answer made one, and the related-task `_meta` that ties a message to a task.

use crate::mcp::jsonrpc::At;
use serde_json::{json, Value};

/// `_meta` key that ties a request, notification or result to a task.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The task id of `_meta["io.modelcontextprotocol/related-task"]` in a message's params or
/// result, if any.
pub fn related_task(msg: &Value) -> Option<&str> {
    ["/params/_meta", "/result/_meta"]
        .iter()
        .find_map(|p| msg.at(p).and_then(|m| m.get(RELATED_TASK)).and_then(|r| r.get("taskId")).and_then(Value::as_str))
}

/// Sets the related-task id wherever the message carries one.
pub fn set_related_task(msg: &mut Value, id: &str) {
    for p in ["/params/_meta", "/result/_meta"] {
        if let Some(r) = msg.pointer_mut(p).and_then(|m| m.get_mut(RELATED_TASK)).and_then(Value::as_object_mut) {
            r.insert("taskId".into(), json!(id));
        }
    }
}

/// Takes the related-task `_meta` out of a message (and `_meta` with it when nothing else is
/// left): for a host that was never shown the task.
pub fn drop_related_task(msg: &mut Value) {
    for p in ["/params", "/result"] {
        let Some(owner) = msg.pointer_mut(p).and_then(Value::as_object_mut) else { continue };
        if let Some(meta) = owner.get_mut("_meta").and_then(Value::as_object_mut) {
            meta.remove(RELATED_TASK);
            if meta.is_empty() {
                owner.remove("_meta");
            }
        }
    }
}

/// The task a `tools/call` answer made (`result.task`, 2025-11-25), if it is one.
pub fn created_task(answer: &Value) -> Option<&Value> {
    answer.at("/result/task").filter(|t| t.get("taskId").is_some_and(Value::is_string))
}

/// What a tool says of being run as a task (`execution.taskSupport`): `required`, `optional`,
/// or None (forbidden, or not said).
pub fn task_support(def: &Value) -> Option<&str> {
    def.at("/execution/taskSupport").and_then(Value::as_str).filter(|s| matches!(*s, "required" | "optional"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_a_host_never_saw_is_not_named_to_it() {
        let mut asked = json!({"params": {"message": "which?", "_meta": {RELATED_TASK: {"taskId": "t-1"}}}});
        drop_related_task(&mut asked);
        assert_eq!(asked, json!({"params": {"message": "which?"}}));
        let mut kept = json!({"params": {"_meta": {RELATED_TASK: {"taskId": "t-1"}, "other": 1}}});
        drop_related_task(&mut kept);
        assert_eq!(kept, json!({"params": {"_meta": {"other": 1}}}), "the rest of _meta stays");
    }

    #[test]
    fn related_task_ids_are_read_and_rewritten_in_params_and_results() {
        let mut m = json!({"params": {"_meta": {RELATED_TASK: {"taskId": "up"}}}});
        assert_eq!(related_task(&m), Some("up"));
        set_related_task(&mut m, "a:up");
        assert_eq!(related_task(&m), Some("a:up"));
        let r = json!({"result": {"content": [], "_meta": {RELATED_TASK: {"taskId": "x"}}}});
        assert_eq!(related_task(&r), Some("x"));
        assert_eq!(task_support(&json!({"execution": {"taskSupport": "required"}})), Some("required"));
        assert_eq!(task_support(&json!({"execution": {"taskSupport": "forbidden"}})), None);
        assert!(created_task(&json!({"result": {"task": {"taskId": "t"}}})).is_some());
        assert!(created_task(&json!({"result": {"content": []}})).is_none());
    }
}
