//! `notifications/tasks` for a listening 2026 host: a `subscriptions/listen` that names tasks
//! (`notifications.taskIds`, the tasks extension's filter) hears each status of those tasks,
//! as `tasks/get` would tell it (the result or error inline once it ended, what it asks while
//! it waits for input). Only the person's own tasks are taken: another's id is refused exactly
//! as an unknown one, and a status reaches a listener only for a task it took.

use std::time::Duration;

use actix::{ActorFutureExt, AsyncContext, Context, WrapFuture};
use serde_json::{json, Map, Value};

use crate::mcp::jsonrpc::{self, At};
use crate::mcp::tasks_2026;
use crate::messages::InspectTask;
use crate::session::HostSession;

/// Tasks one listen request may name (more are refused by count).
pub(super) const MAX_TASKS: usize = 100;
/// A status that says the task ended comes a moment before its watch has the result: looked
/// at again this often, this many times, before it is told as the server said it.
const SETTLE_EVERY: Duration = Duration::from_millis(100);
const SETTLE_TRIES: u32 = 50;

impl HostSession {
    /// The task ids a listen request names that it may hear of (the person's own tasks, when
    /// the host declared the extension), and the others refused by id.
    pub(super) fn listened_tasks(&self, wanted: &Map<String, Value>) -> (Vec<String>, Vec<Value>) {
        let asked = wanted.get("taskIds").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let mut ids: Vec<&str> = asked.iter().filter_map(Value::as_str).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut refused = Vec::new();
        if ids.is_empty() {
            return (Vec::new(), refused);
        }
        if !self.speaks_tasks() {
            refused.push(
                json!({"taskIds": ids.len(), "reason": "task notifications need the io.modelcontextprotocol/tasks extension declared"}),
            );
            return (Vec::new(), refused);
        }
        if ids.len() > MAX_TASKS {
            refused.push(
                json!({"taskIds": ids.len() - MAX_TASKS, "reason": format!("one listen request may name at most {MAX_TASKS} tasks")}),
            );
            ids.truncate(MAX_TASKS);
        }
        let tasks = self.deps.fleet.hosts().tasks();
        let mut taken = Vec::new();
        for id in ids {
            match tasks.owned(id, &self.who.key) {
                Some(_) => taken.push(id.to_string()),
                // Another person's task is exactly an unknown one.
                None => refused.push(json!({"taskId": crate::audit::bounded(id), "reason": "task not found"})),
            }
        }
        (taken, refused)
    }

    /// A task's status (a 2025 server's `notifications/tasks/status`, its id the hosts') heard
    /// by a stateless session: to its listener as `notifications/tasks` when it listens to
    /// that task, else nowhere (2026 has no such notification). A status that says the task
    /// ended is told once the watch has its result: meanwhile newer statuses of that task wait
    /// behind it (only the newest is kept), so they are told in order and a flood costs one
    /// wait.
    pub(in crate::session) fn task_to_listener(&mut self, ctx: &mut Context<Self>, status: Value) {
        let Some(task) = status.at("/params/taskId").and_then(Value::as_str).map(str::to_string) else { return };
        let Some(listen) = self.call_mut().and_then(|c| c.listen.as_mut()).filter(|l| l.tasks.contains(&task)) else { return };
        if let Some(waiting) = listen.settling.get_mut(&task) {
            *waiting = status;
            return;
        }
        self.tell_task(ctx, task, status, 0);
    }

    /// Tells `status` of `task` as `tasks/get` would, once the watch has what it names.
    fn tell_task(&mut self, ctx: &mut Context<Self>, task: String, status: Value, tries: u32) {
        // From now until it is told, newer statuses of the task wait behind this one.
        if let Some(l) = self.call_mut().and_then(|c| c.listen.as_mut()) {
            l.settling.entry(task.clone()).or_insert(Value::Null);
        }
        let tasks = self.deps.fleet.hosts().tasks();
        let Some(watch) = tasks.owned(&task, &self.who.key).and_then(|_| tasks.watch(&task)) else {
            self.tell_listener(tasks_2026::detailed(Value::Null, &status["params"], None, None));
            if let Some(next) = self.settled(&task) {
                self.tell_task(ctx, task, next, 0);
            }
            return;
        };
        let inspect = watch.inspect.send(InspectTask);
        ctx.spawn(inspect.into_actor(self).map(move |seen, act, ctx| {
            let (outcome, inputs) = seen.unwrap_or_default();
            let said = status.at("/params/status").and_then(Value::as_str).unwrap_or_default();
            let ended = tasks_2026::terminal(said) && said != "cancelled";
            // The watch has the end a moment after the status says it: looked at again.
            if (ended && outcome.is_none() || said == "input_required" && inputs.is_empty()) && tries < SETTLE_TRIES {
                ctx.run_later(SETTLE_EVERY, move |act, ctx| act.tell_task(ctx, task, status, tries + 1));
                return;
            }
            let outcome = outcome.filter(|_| said != "cancelled");
            act.tell_listener(tasks_2026::detailed(Value::Null, &status["params"], outcome.as_ref(), Some(inputs)));
            // What came meanwhile (the newest of it) is next.
            if let Some(next) = act.settled(&task) {
                act.tell_task(ctx, task, next, 0);
            }
        }));
    }

    /// The wait of `task` is over: the newest status that came meanwhile, if one did.
    fn settled(&mut self, task: &str) -> Option<Value> {
        let l = self.call_mut()?.listen.as_mut()?;
        l.settling.remove(task).filter(|s| !s.is_null())
    }

    /// A task as `tasks/get` tells it (`detailed`'s answer), on the listen stream.
    fn tell_listener(&mut self, detailed: Value) {
        let Some(mut params) = detailed.get("result").and_then(Value::as_object).cloned() else { return };
        params.remove("resultType");
        let note = jsonrpc::notification("notifications/tasks", Value::Object(params));
        let Some(call) = self.call() else { return };
        if let Some((note, id)) = call.for_listener(note) {
            if self.in_flight.get(jsonrpc::key_of(&id).as_str()).is_some_and(|f| f.sink.is_some()) {
                self.send_related(note, Some(&id));
            }
        }
    }
}
