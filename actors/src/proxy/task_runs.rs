//! A 2026 upstream's own task (the `io.modelcontextprotocol/tasks` extension), run for the call
//! that made it. The service declares the extension to such a server (a task-only tool refuses
//! a call without it, and its tool list does not say which tools are), so any call may come
//! back as a task (`resultType: "task"`). The call's host asked for a result: the service polls
//! the task (`tasks/get`) at the server's pace, passes each new status on as progress of the
//! call, asks the call's host what the task asks (`input_required`, answered by `tasks/update`),
//! and answers the call with the task's result or error. The host giving up on the call (its
//! cancellation, its deadline) cancels the task (`tasks/cancel`). Whose the task is needs no
//! table: it is the call's, whose route already names its host.
//!
//! The same run answers a host's `tasks/result` of such a task (a 2025 host's, or the watch a
//! 2026 host's task has), which a 2026 server does not have: what the task asks and its result
//! carry the related-task `_meta`, each new status goes to the task's owner as
//! `notifications/tasks/status`, and the host giving up its wait leaves the task running.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::mcp::jsonrpc::{self, code};
use crate::mcp::tasks::RELATED_TASK;
use crate::mcp::tasks_2026;
use crate::messages::SessionId;
use crate::proxy::input_rounds::{self, InputPath};

/// The longest a call waits on its task (the bridge of 2025 tasks has the same bound).
pub const MAX_RUN: Duration = Duration::from_secs(600);
/// Polls no faster or slower than this, whatever the server suggests.
const POLL_MIN: Duration = Duration::from_millis(100);
const POLL_MAX: Duration = Duration::from_secs(5);
/// Input rounds one task may take (each needs the host's answers).
const MAX_ROUNDS: u32 = 32;
/// A status message longer than this is cut before it goes to a host as progress.
const MAX_MESSAGE: usize = 1024;

/// What a run needs of the proxy path (the router implements it).
pub trait TaskPath: InputPath {
    /// A request of the service's own to the upstream; its answer.
    fn upstream_request(&self, method: &str, params: Value) -> oneshot::Receiver<Value>;
    /// The call's answer (under the upstream's id of the call), to whoever waits for it.
    fn finish(&self, answer: Value);
    /// A progress notification under the upstream's token of the call, to its host.
    fn progress(&self, msg: Value);
    /// The task said something new: the call waiting on it is alive.
    fn alive(&self, task: &str);
    /// A new status of a task hosts know (`notifications/tasks/status` with the server's id of
    /// it, 2025's fields), to its owner.
    fn status(&self, msg: Value);
}

/// One task to run for the upstream call `up_id` of `session`.
pub struct TaskRun {
    pub up_id: Value,
    pub session: SessionId,
    /// The server's id of the task.
    pub task: String,
    /// The progress token the call carries upstream, if its host asked for progress.
    pub progress_token: Option<Value>,
    /// The server's suggested pace (`pollIntervalMs`).
    pub poll: Duration,
    /// The status message the answer that made the task carried (its first status).
    pub first: Option<String>,
    /// The longest the call waits on it ([`MAX_RUN`]).
    pub limit: Duration,
    /// Some (the id hosts know the task by) when the run answers a host's `tasks/result`.
    pub for_result: Option<String>,
}

impl TaskRun {
    /// From the call as sent upstream and the server's answer that made the task (None: the
    /// answer names no usable task).
    pub fn of(up_id: Value, session: SessionId, request: &Value, answer: &Value) -> Option<TaskRun> {
        let result = answer.get("result")?;
        let task = result.get("taskId").and_then(Value::as_str).filter(|t| !t.is_empty() && t.len() <= 256)?.to_string();
        let progress_token = request.pointer("/params/_meta/progressToken").cloned();
        let first = message_of(result);
        Some(TaskRun { up_id, session, task, progress_token, poll: pace(result), first, limit: MAX_RUN, for_result: None })
    }

    /// A host's `tasks/result` (`request`, as it would go upstream: `up_id`) of the server's task
    /// `task`, which hosts know as `exposed`.
    pub fn for_result(up_id: Value, session: SessionId, request: &Value, task: String, exposed: String) -> TaskRun {
        let progress_token = request.pointer("/params/_meta/progressToken").cloned();
        // Its first poll is at once: the task may have ended long ago.
        TaskRun { up_id, session, task, progress_token, poll: Duration::ZERO, first: None, limit: MAX_RUN, for_result: Some(exposed) }
    }

    /// Whether the task goes when the wait on it does (a call's task does; a `tasks/result`
    /// is only one wait on a task its host polls).
    fn cancels(&self) -> bool {
        self.for_result.is_none()
    }

    /// The code of a wait that ended before the task (`c` for a call's): a host's wait on a
    /// task that goes on is one to make again (a 2026 host's watch does), never the task's end.
    fn early_end(&self, c: i64) -> i64 {
        if self.cancels() {
            c
        } else {
            code::UPSTREAM_UNAVAILABLE
        }
    }

    /// What an error about the run says of the task.
    fn gone(&self) -> &'static str {
        if self.cancels() {
            "; it was cancelled"
        } else {
            "; the task was left as it is"
        }
    }
}

/// The pace a task asks to be polled at, within bounds (a second when it says nothing).
pub fn pace(task: &Value) -> Duration {
    task.get("pollIntervalMs").and_then(Value::as_u64).map_or(Duration::from_secs(1), Duration::from_millis).clamp(POLL_MIN, POLL_MAX)
}

/// A task's status message, bounded.
fn message_of(task: &Value) -> Option<String> {
    task.get("statusMessage").and_then(Value::as_str).map(|m| m.chars().take(MAX_MESSAGE).collect())
}

/// Runs a task in the background.
pub fn spawn(path: Arc<dyn TaskPath>, run: TaskRun) {
    tokio::spawn(run_task(path, run));
}

/// Polls the task to its end and answers the call (see the module's doc).
pub async fn run_task(path: Arc<dyn TaskPath>, run: TaskRun) {
    let started = Instant::now();
    // A result's wait tells the status it finds first; a call's run had it with the answer.
    let mut seen: Option<(String, Option<String>)> = run.cancels().then(|| ("working".into(), None));
    let mut progress = Progress { token: run.progress_token.clone(), sent: 0, said: None };
    // The first status came with the answer that made the task.
    progress.say(&*path, run.first.clone());
    let mut rounds = 0u32;
    let mut answered: HashSet<String> = HashSet::new();
    let mut poll = run.poll;
    loop {
        tokio::time::sleep(poll).await;
        if !path.is_pending(&run.up_id) {
            // The host gave up on the call (cancelled, timed out, gone): so does the task.
            return let_go(&*path, &run);
        }
        if started.elapsed() > run.limit {
            let_go(&*path, &run);
            let why = format!("the server's task ran longer than {} s, the longest a call waits on one{}", run.limit.as_secs(), run.gone());
            return path.give_up(&run.up_id, run.early_end(code::INTERNAL_ERROR), why);
        }
        let task = match ask(&*path, "tasks/get", json!({"taskId": run.task})).await {
            Ok(t) => t,
            Err((c, why)) => {
                let_go(&*path, &run);
                // A task the server no longer knows has ended for every wait on it.
                let c = if c == code::INVALID_PARAMS { c } else { run.early_end(c) };
                return path.give_up(&run.up_id, c, format!("the server's tasks/get failed: {why}"));
            }
        };
        poll = pace(&task);
        if run.for_result.is_some() {
            // A host waiting on its task waits while the server tells it (the run's limit bounds it).
            path.alive(&run.task);
        }
        let status = task.get("status").and_then(Value::as_str).unwrap_or_default().to_string();
        let message = message_of(&task);
        let now = Some((status.clone(), message.clone()));
        if seen != now {
            // A new message is progress for the host; a new status alone keeps the call alive.
            seen = now;
            path.alive(&run.task);
            progress.say(&*path, message);
            if run.for_result.is_some() {
                path.status(jsonrpc::notification("notifications/tasks/status", tasks_2026::task_2025(&task)));
            }
        }
        match status.as_str() {
            "working" => {}
            "input_required" => {
                if let Err((c, why)) = input_round(&*path, &run, &task, &mut answered, &mut rounds).await {
                    let_go(&*path, &run);
                    return path.give_up(&run.up_id, c, why);
                }
            }
            "completed" => {
                let mut result = task.get("result").cloned().filter(Value::is_object).unwrap_or_else(|| json!({"content": []}));
                // The call's answer is a result, whatever the server wrote inside it.
                result["resultType"] = json!("complete");
                if let Some(exposed) = &run.for_result {
                    name_task(&mut result, exposed);
                }
                return path.finish(jsonrpc::result(run.up_id, result));
            }
            "failed" => {
                let error = task.get("error").and_then(Value::as_object).cloned().unwrap_or_default();
                let mut c = error.get("code").and_then(Value::as_i64).unwrap_or(code::INTERNAL_ERROR);
                if c == code::UPSTREAM_UNAVAILABLE && !run.cancels() {
                    c = code::INTERNAL_ERROR; // the task's own end, never a wait to make again
                }
                let m = error.get("message").and_then(Value::as_str).unwrap_or("the server's task failed without saying why");
                let mut answer = jsonrpc::error(run.up_id, c, m);
                if let Some(d) = error.get("data") {
                    answer["error"]["data"] = d.clone();
                }
                return path.finish(answer);
            }
            "cancelled" => return path.give_up(&run.up_id, code::INTERNAL_ERROR, "the server cancelled the call's task".into()),
            other => {
                let_go(&*path, &run);
                let other: String = other.chars().take(64).collect();
                return path.give_up(
                    &run.up_id,
                    code::INTERNAL_ERROR,
                    format!("the server's task said status {other:?}, which no task has{}", run.gone()),
                );
            }
        }
    }
}

/// The call's progress: each new status message once, numbered, when the host asked for it.
struct Progress {
    token: Option<Value>,
    sent: u64,
    said: Option<String>,
}

impl Progress {
    fn say(&mut self, path: &dyn TaskPath, message: Option<String>) {
        let (Some(token), Some(m)) = (&self.token, message) else { return };
        if self.said.as_ref() == Some(&m) {
            return;
        }
        self.sent += 1;
        path.progress(jsonrpc::notification(
            "notifications/progress",
            json!({"progressToken": token, "progress": self.sent, "message": m}),
        ));
        self.said = Some(m);
    }
}

/// What the task asks (`task` waits for input), asked of the call's host unless answered
/// already (a server may show an answered question until it took the answer in); the answers
/// go to the task. Only a round that asks counts toward the bound.
async fn input_round(
    path: &dyn TaskPath,
    run: &TaskRun,
    task: &Value,
    answered: &mut HashSet<String>,
    rounds: &mut u32,
) -> Result<(), (i64, String)> {
    let mut wanted = task.get("inputRequests").and_then(Value::as_object).cloned().unwrap_or_default();
    wanted.retain(|k, _| !answered.contains(k));
    if wanted.is_empty() {
        return Ok(()); // nothing to answer yet: poll again
    }
    *rounds += 1;
    if *rounds > MAX_ROUNDS {
        // A task that asks without end has no end to wait for.
        return Err((code::INTERNAL_ERROR, format!("the server's task asked for input more than {MAX_ROUNDS} times{}", run.gone())));
    }
    answered.extend(wanted.keys().cloned());
    if let Some(exposed) = &run.for_result {
        // Asked inside the task the host waits on: it says which.
        for ask in wanted.values_mut().filter(|a| a.is_object()) {
            if !ask.get("params").is_some_and(Value::is_object) {
                ask["params"] = json!({});
            }
            name_task(&mut ask["params"], exposed);
        }
    }
    let responses = input_rounds::ask_inputs(path, &run.up_id, &run.session, wanted).await.map_err(|(c, why)| (run.early_end(c), why))?;
    if !path.is_pending(&run.up_id) {
        return Ok(()); // the next poll sees the call gone (and cancels a call's task)
    }
    ask(path, "tasks/update", json!({"taskId": run.task, "inputResponses": responses}))
        .await
        .map(drop)
        .map_err(|(c, why)| (run.early_end(c), format!("the server's tasks/update failed: {why}")))
}

/// The result of the service's own request, or its error (code, message).
async fn ask(path: &dyn TaskPath, method: &str, params: Value) -> Result<Value, (i64, String)> {
    let answer =
        path.upstream_request(method, params).await.map_err(|_| (code::UPSTREAM_UNAVAILABLE, "the upstream went away".to_string()))?;
    if let Some(r) = answer.get("result") {
        return Ok(r.clone());
    }
    let c = answer.pointer("/error/code").and_then(Value::as_i64).unwrap_or(code::INTERNAL_ERROR);
    let m = answer.pointer("/error/message").and_then(Value::as_str).unwrap_or("no reason given");
    Err((c, m.chars().take(MAX_MESSAGE).collect()))
}

/// Names the task in `obj`'s related-task `_meta` (a `_meta` that is no object is replaced: it
/// is the server's, and unusable).
fn name_task(obj: &mut Value, exposed: &str) {
    let Some(o) = obj.as_object_mut() else { return };
    let meta = o.entry("_meta").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    meta[RELATED_TASK] = json!({"taskId": exposed});
}

/// The wait on the task ended before the task: a call's task is cancelled (no one else waits
/// for it), a task a host polls is left running.
fn let_go(path: &dyn TaskPath, run: &TaskRun) {
    if run.cancels() {
        cancel(path, &run.task);
    }
}

/// Cancels the task upstream, not waiting for the acknowledgement.
fn cancel(path: &dyn TaskPath, task: &str) {
    tracing::info!(
        component = "upstream",
        event = "upstream_task_cancelled",
        "the call a server's task ran for was given up; the task is cancelled"
    );
    drop(path.upstream_request("tasks/cancel", json!({"taskId": task})));
}

#[cfg(test)]
#[path = "task_runs/tests.rs"]
mod tests;
