//! The router as the paths of the work it hands off: an input round's (`input_rounds`) and a
//! 2026 server's task run's (`task_runs`), each seeing only the trait it needs; and a host's
//! `tasks/result` of such a task, which the server does not have, run here.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::{Named, Router};
use crate::mcp::jsonrpc::{code, At};
use crate::mcp::relayed::Relayed;
use crate::messages::SessionId;
use crate::proxy::input_rounds::{Asked, InputPath};
use crate::proxy::task_runs::{self, TaskPath, TaskRun};
use crate::upstream::UpstreamError;

impl Router {
    /// A host's `tasks/result` (`msg`, routed as `up_id`) of a 2026 server's task, which the
    /// server does not have: the task is polled to its end for it (see `task_runs`).
    pub(super) fn wait_on_task(self: &Arc<Self>, session: &SessionId, up_id: u64, msg: &Value) {
        let up_id = json!(up_id);
        let Some(task) = msg.at("/params/taskId").and_then(Value::as_str).filter(|t| !t.is_empty()) else {
            return self.give_up(&up_id, code::INVALID_PARAMS, "Invalid params: tasks/result names no taskId".into());
        };
        let exposed = crate::proxy::tasks::exposed_id(self.prefix.as_deref(), task);
        let run = TaskRun::for_result(up_id, session.clone(), msg, task.to_string(), exposed);
        task_runs::spawn(self.clone() as Arc<dyn TaskPath>, run);
    }
}

impl InputPath for Router {
    fn ask_target(&self, up_id: &Value, key: &str) -> Option<Asked> {
        let (target, host_side_id) = self.server_request_target(json!(format!("input:{key}")), Some(up_id)).ok()?;
        Some(Asked { session: target.session, port: target.port.request, related: target.related, host_side_id })
    }

    fn server_request_done(&self, host_side_id: &str) {
        Router::server_request_done(self, host_side_id)
    }

    fn give_up(&self, up_id: &Value, code: i64, why: String) {
        Router::give_up(self, up_id, code, why)
    }

    fn is_pending(&self, up_id: &Value) -> bool {
        Router::is_pending(self, up_id)
    }

    fn send(&self, msg: Value) -> Result<(), UpstreamError> {
        Router::send(self, msg)
    }
}

impl TaskPath for Router {
    fn upstream_request(&self, method: &str, params: Value) -> oneshot::Receiver<Value> {
        self.internal_request(method, params)
    }

    fn finish(&self, mut answer: Value) {
        let pending = self.routes().answered(&mut answer);
        self.hand_over(pending, Relayed::Tree(answer))
    }

    fn progress(&self, msg: Value) {
        self.on_progress(&msg)
    }

    fn alive(&self, task: &str) {
        self.routes().refresh_task(task)
    }

    fn status(&self, mut msg: Value) {
        if let Named::Task(route) = self.task_out(&mut msg) {
            self.to_task_owner(&route, msg);
        }
    }
}

/// Takes a request's `task` out of its params; whether it had one.
pub(super) fn take_task(msg: &mut Value) -> bool {
    msg.get_mut("params").and_then(Value::as_object_mut).and_then(|p| p.remove("task")).is_some()
}
