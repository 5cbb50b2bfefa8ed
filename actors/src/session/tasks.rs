//! MCP tasks as a session carries them (the routing and ownership live in `proxy::tasks`):
//! a task-made answer to a call is recorded as the caller's, its id made the hosts' way; a
//! task's `tasks/get`, `tasks/result`, `tasks/cancel` go to the server that made it and come
//! back with the hosts' ids; `tasks/list` holds only the caller's own tasks, from every server
//! that lists them. And the bridge: a host that does not speak tasks calling a tool that runs
//! only as one gets the task's result as the call's answer, its status as progress, its
//! cancellation as the task's.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::{json, Value};

use super::HostSession;
use crate::mcp::jsonrpc::{self, code, At};
use crate::mcp::tasks_2026;
use crate::proxy::tasks::{self, Bridge, NewTask, NotKept, TaskRoute, RELATED_TASK};
use crate::servers::fleet::Server;
use crate::servers::listing::list_all;

/// The time to live the service asks for a task it runs for a host (and the longest such a
/// call waits, however much the task says it is working).
pub const BRIDGE_MAX: Duration = Duration::from_secs(600);
/// How long one server's `tasks/list` may take.
const LIST_LIMIT: Duration = Duration::from_secs(10);
/// Tasks in one page of `tasks/list`.
const PER_PAGE: usize = 100;

/// A call the session waits on as a task (the bridge): where to cancel it.
pub(super) struct Running {
    pub router: Arc<crate::proxy::router::Router>,
    pub upstream: String,
    pub exposed: String,
}

impl HostSession {
    /// Whether the host speaks tasks (it declared `capabilities.tasks`).
    pub(super) fn speaks_tasks(&self) -> bool {
        self.negotiated.as_ref().is_some_and(|n| n.tasks)
    }

    /// Whether a call of `exposed` (`msg`) is one the service runs as a task for this host: the
    /// tool runs only as one, and the host does not speak tasks (a 2025 host that did not ask
    /// for one, or a 2026 host that did not declare the extension, whose `task` is dropped).
    pub(super) fn bridges(&self, msg: &Value, exposed: &str) -> bool {
        if self.speaks_tasks() || (self.call().is_none() && msg.at("/params/task").is_some()) {
            return false;
        }
        let catalog = self.deps.fleet.catalog();
        catalog.tool(exposed).is_some_and(|t| tasks::task_support(&t.def) == Some("required"))
    }

    /// A 2026 host's `tools/call`: no `task` of its own goes on (a hint of another era); the
    /// service asks for one when the host declared the extension and the tool runs as a task,
    /// or when it runs the call as one (`bridged`: the tool runs only as a task and the host
    /// did not declare the extension), or when the tool is a 2026 server's (which decides) and
    /// the host declared the extension. Err (the answer) when the tool runs only as a task and
    /// the service does not run it so.
    pub(super) fn task_for_2026(&self, msg: &mut Value, server: &Server, exposed: &str, bridged: bool) -> Result<(), Value> {
        if let Some(p) = msg.get_mut("params").and_then(Value::as_object_mut) {
            p.remove("task");
        }
        let catalog = self.deps.fleet.catalog();
        let support = catalog.tool(exposed).and_then(|t| tasks::task_support(&t.def).map(str::to_string));
        match support.as_deref() {
            Some(_) if self.speaks_tasks() || bridged => {
                msg["params"]["task"] = json!({"ttl": BRIDGE_MAX.as_millis() as u64});
                Ok(())
            }
            Some("required") => {
                let id = jsonrpc::id(msg).cloned().unwrap_or(Value::Null);
                Err(tasks_2026::missing_extension(id, &format!("the tool {exposed:?} runs only as a task, so calling it")))
            }
            // A 2026 server's tools do not say which run as tasks: the server decides, and a
            // task it makes for a host that declared the extension is that host's.
            None if self.speaks_tasks() && self.runs_tasks_2026(&server.name) => {
                msg["params"]["task"] = json!({"ttl": BRIDGE_MAX.as_millis() as u64});
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// A `tools/call` answer that made a task: recorded as this session's person's, its id
    /// made the hosts' way in `answer`. None when it made none (or one that cannot be kept).
    pub(super) fn task_made(&self, server: &Server, tool: &str, answer: &mut Value, bridge: Option<Bridge>) -> Option<TaskRoute> {
        let task = tasks::created_task(answer)?;
        let bridged = bridge.is_some();
        let upstream = task.get("taskId").and_then(Value::as_str)?.to_string();
        let ttl_ms = task.get("ttl").and_then(Value::as_u64);
        // A stateless request ends with its answer: what the task says later is for the
        // person's listeners, not for the request that made it.
        let maker = if self.call().is_some() && !bridged { "" } else { self.id.as_str() };
        let made = self.deps.fleet.hosts().tasks().created(NewTask {
            prefix: server.router.prefix(),
            server: server.name.clone(),
            upstream: &upstream,
            owner: self.who.key.clone(),
            session: maker,
            tool,
            ttl_ms,
            bridge,
        });
        let exposed = match made {
            Ok(exposed) => exposed,
            Err(not_kept) => {
                let why = match not_kept {
                    NotKept::Unusable => "the server answered with a task the service cannot keep for you (its id is another person's task or too long)",
                    NotKept::Full => "the service keeps as many tasks as it may and none of them is yours to make room with; the task was cancelled: retry once some have ended",
                };
                tracing::warn!(component = "host_session", event = "task_not_kept", server = %server.name, reason = ?not_kept, "a task a call made is not kept: the call is answered with an error");
                if not_kept == NotKept::Full {
                    if let Some(router) = self.router_of(&server.name) {
                        cancel_upstream(&router, &upstream);
                    }
                }
                *answer = jsonrpc::error(jsonrpc::id(answer).cloned().unwrap_or(Value::Null), code::INTERNAL_ERROR, why);
                return None;
            }
        };
        answer["result"]["task"]["taskId"] = json!(exposed);
        self.metrics.task(&server.name, "created").inc();
        let task = self.deps.fleet.hosts().tasks().owned(&exposed, &self.who.key)?;
        // What the server said of it before this answer (its first status) is this call's maker's.
        if let Some(router) = self.router_of(&server.name) {
            for msg in router.said_early(&upstream) {
                router.to_task_owner(&task, msg);
            }
        }
        // A 2026 host never holds the task's result open: its watch does (`task_watch`); a
        // call the service runs as a task waits on it itself (`wait_on_task`).
        if self.call().is_some() && !bridged {
            if let Some(router) = self.router_of(&server.name) {
                super::task_watch::TaskWatch::watch(task.clone(), router, self.deps.fleet.clone(), ttl_ms);
            }
        }
        Some(task)
    }

    /// A task's `tasks/get`, `tasks/result` or `tasks/cancel` (planned: the caller's own, its
    /// params naming it the server's way); the answer names it the hosts' way.
    pub(super) fn task_request(&mut self, ctx: &mut Context<Self>, server: Arc<Server>, task: TaskRoute, msg: Value) {
        if self.call().is_some() {
            return self.task_request_2026(ctx, server, task, msg);
        }
        let result = jsonrpc::method(&msg) == Some("tasks/result");
        let naming = server.naming.clone();
        self.forward_to_then(ctx, server, msg, move |act, ctx, mut answer| {
            ids_out(&mut answer, &task.exposed);
            if result {
                answer = naming.answer_out(answer);
                if act.shapes_results() {
                    answer = act.shaped(ctx, &task.tool, answer);
                }
            }
            act.answer(answer)
        });
    }

    /// A 2026 host's `tasks/get`, `tasks/update` or `tasks/cancel` (its extension declared):
    /// the server's task with how it ended or what it waits for (from the task's watch)
    /// inline, an answer passed to the watch, or the task cancelled; the last two acknowledged
    /// empty.
    fn task_request_2026(&mut self, ctx: &mut Context<Self>, server: Arc<Server>, task: TaskRoute, mut msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let mut watch = self.deps.fleet.hosts().tasks().watch(&task.exposed);
        // A task made through another replica (or whose watch ended): watched from here now.
        if watch.is_none() && jsonrpc::method(&msg) != Some("tasks/cancel") {
            if let Some(router) = self.router_of(&task.server) {
                super::task_watch::TaskWatch::watch(task.clone(), router, self.deps.fleet.clone(), None);
                watch = self.deps.fleet.hosts().tasks().watch(&task.exposed);
            }
        }
        match jsonrpc::method(&msg).unwrap_or_default() {
            "tasks/update" => {
                let answers = msg.at("/params/inputResponses").and_then(Value::as_object).cloned().unwrap_or_default();
                if let Some(w) = watch {
                    w.answer.do_send(crate::messages::AnswerTask(answers));
                }
                self.answer(tasks_2026::ack(id))
            }
            "tasks/cancel" => self.forward_to_then(ctx, server, msg, move |act, _, _| act.answer(tasks_2026::ack(id))),
            _ => {
                if let Some(p) = msg.get_mut("params").and_then(Value::as_object_mut) {
                    p.retain(|k, _| k == "taskId");
                }
                self.forward_to_then(ctx, server, msg, move |act, ctx, answer| {
                    let Some(got) = answer.get("result").cloned() else { return act.answer(answer) };
                    let Some(watch) = watch else {
                        return act.answer(tasks_2026::detailed(id, &with_id(got, &task.exposed), None, None));
                    };
                    let inspect = watch.inspect.send(crate::messages::InspectTask);
                    ctx.spawn(inspect.into_actor(act).map(move |seen, act, _| {
                        let (outcome, inputs) = seen.unwrap_or_default();
                        let status = got.get("status").and_then(Value::as_str).unwrap_or_default().to_string();
                        let mut got = with_id(got, &task.exposed);
                        // Its end is told once the watch has it; waiting for input once there
                        // is something to answer (until then, still working).
                        let outcome = outcome.filter(|_| status != "cancelled");
                        if (tasks_2026::terminal(&status) && status != "cancelled" && outcome.is_none())
                            || (status == "input_required" && inputs.is_empty())
                        {
                            got["status"] = json!("working");
                        }
                        act.answer(tasks_2026::detailed(id, &got, outcome.as_ref(), Some(inputs)))
                    }));
                });
            }
        }
    }

    /// `tasks/list`: the caller's own tasks of every server that lists tasks and that they may
    /// use, by the hosts' ids, a page at a time (the cursor is ours: how many were shown).
    pub(super) fn tasks_list(&mut self, ctx: &mut Context<Self>, msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let offset = match msg.at("/params/cursor") {
            None | Some(Value::Null) => 0,
            Some(c) => match c.as_str().and_then(|c| c.strip_prefix("tasks:")).and_then(|n| n.parse::<usize>().ok()) {
                Some(n) => n,
                None => {
                    return self.answer(jsonrpc::error(
                        id,
                        code::INVALID_PARAMS,
                        "Invalid params: the cursor is not one tasks/list gave; list again without one",
                    ))
                }
            },
        };
        let catalog = self.deps.fleet.catalog();
        let profile = self.profile_now().ok().flatten();
        let access = self.access();
        let mut servers = Vec::new();
        for s in self.deps.fleet.servers().iter() {
            let lists = s.router.status().init.as_ref().and_then(|i| i.at("/capabilities/tasks/list")).is_some();
            if !lists || !access.may_use_server(&catalog, profile.as_deref(), &s.name) {
                continue;
            }
            let router = match &s.pool {
                None => s.router.clone(),
                Some(pool) => match pool.router_for(&self.who) {
                    Ok(r) => r,
                    Err(_) => continue, // no connection of theirs: no tasks of theirs there
                },
            };
            servers.push((s.name.clone(), router));
        }
        let tasks_table = self.deps.fleet.clone();
        let owner = self.who.key.clone();
        let fetch = async move {
            let lists = futures::future::join_all(servers.iter().map(|(_, r)| list_all(r, "tasks/list", "tasks", LIST_LIMIT))).await;
            let mut mine = Vec::new();
            for ((name, _), list) in servers.iter().zip(lists) {
                let owned = tasks_table.hosts().tasks().owned_on(name, &owner);
                match list {
                    Ok(list) => {
                        for mut t in list {
                            let Some(route) = t.get("taskId").and_then(Value::as_str).and_then(|u| owned.get(u)) else { continue };
                            t["taskId"] = json!(route.exposed);
                            mine.push(t);
                        }
                    }
                    Err(why) => {
                        tracing::warn!(component = "host_session", event = "list_failed", server = %name, method = "tasks/list", error = %why, "a server's tasks were left out of tasks/list")
                    }
                }
            }
            mine
        };
        ctx.spawn(fetch.into_actor(self).map(move |mine, act, _| {
            let page: Vec<Value> = mine.iter().skip(offset).take(PER_PAGE).cloned().collect();
            let mut result = json!({"tasks": page});
            if offset + PER_PAGE < mine.len() {
                result["nextCursor"] = json!(format!("tasks:{}", offset + PER_PAGE));
            }
            act.answer(jsonrpc::result(id, result))
        }));
    }

    /// The bridge, once the call made its task: the session waits on the task's result under
    /// the host's own request id (so what the server asks inside the task, and the task's
    /// status as progress, travel on the call's stream), and answers the call with it.
    pub(super) fn wait_on_task(&mut self, ctx: &mut Context<Self>, server: Arc<Server>, task: TaskRoute, host_id: Value) {
        let Some(f) = self.in_flight.get_mut(&jsonrpc::id_key(&host_id)) else {
            // Cancelled while the task was being made: the task goes too.
            self.cancel_task_upstream(&task);
            return self.deps.fleet.hosts().tasks().forget(&task.exposed);
        };
        let Some(router) = f.route.clone() else { return };
        f.task = Some(Running { router, upstream: task.upstream.clone(), exposed: task.exposed.clone() });
        let late = host_id.clone();
        ctx.run_later(BRIDGE_MAX, move |act, _| {
            let key = jsonrpc::id_key(&late);
            if act.in_flight.get(&key).is_some_and(|f| f.task.is_some()) {
                let why = format!(
                    "the tool runs as a task, and the task did not finish within {} s (the longest a call waits for the task it runs as); it was cancelled",
                    BRIDGE_MAX.as_secs()
                );
                act.cancel_running(&key);
                act.answer(jsonrpc::error(late, code::UPSTREAM_UNAVAILABLE, why));
            }
        });
        let wait = jsonrpc::request(host_id.clone(), "tasks/result", json!({"taskId": task.upstream}));
        let naming = server.naming.clone();
        self.forward_to_then(ctx, server, wait, move |act, ctx, answer| {
            let key = jsonrpc::id_key(&host_id);
            if let Some(f) = act.in_flight.get_mut(&key) {
                f.task = None;
            }
            act.deps.fleet.hosts().tasks().forget(&task.exposed);
            let outcome = match answer.get("error") {
                Some(e) if e.get("code").and_then(Value::as_i64) == Some(code::UPSTREAM_UNAVAILABLE) => "timeout",
                Some(_) => "error",
                None => "completed",
            };
            act.metrics.task_bridged(&task.server, outcome).inc();
            let answer = match answer.get("error") {
                // The wait ran past upstream.requestTimeoutMs with nothing from the task.
                Some(e) if e.get("code").and_then(Value::as_i64) == Some(code::UPSTREAM_UNAVAILABLE) => {
                    act.cancel_task_upstream(&task);
                    let why = e.get("message").and_then(Value::as_str).unwrap_or_default();
                    jsonrpc::error(
                        host_id,
                        code::UPSTREAM_UNAVAILABLE,
                        format!("the tool runs as a task, and waiting for it failed: {why}"),
                    )
                }
                _ => without_related_task(answer),
            };
            let answer = naming.answer_out(answer);
            let answer = if act.shapes_results() { act.shaped(ctx, &task.tool, answer) } else { answer };
            act.answer(answer)
        });
    }

    /// The host cancelled (or the wait gave up on) a call the session runs as a task: the task
    /// is cancelled on its server.
    pub(super) fn cancel_running(&mut self, key: &str) {
        if let Some(run) = self.in_flight.get_mut(key).and_then(|f| f.task.take()) {
            self.metrics.task_bridged(run.router.server(), "cancelled").inc();
            cancel_upstream(&run.router, &run.upstream);
            self.deps.fleet.hosts().tasks().forget(&run.exposed);
        }
    }

    fn cancel_task_upstream(&self, task: &TaskRoute) {
        if let Some(router) = self.router_of(&task.server) {
            cancel_upstream(&router, &task.upstream);
        }
    }

    /// Whether `server` speaks 2026-07-28 with the tasks extension, on this person's connection
    /// to it (a per-person server's shared entry never connects).
    pub(super) fn runs_tasks_2026(&self, server: &str) -> bool {
        self.router_of(server).is_some_and(|r| r.runs_tasks_2026())
    }

    /// The connection to `server` this session's person's tasks go through.
    fn router_of(&self, server: &str) -> Option<Arc<crate::proxy::router::Router>> {
        let s = self.deps.fleet.by_name(server)?;
        match &s.pool {
            None => Some(s.router.clone()),
            Some(pool) => pool.router_for(&self.who).ok(),
        }
    }
}

/// Cancels a task the service ran for a host on its server; what the server said is logged.
fn cancel_upstream(router: &crate::proxy::router::Router, upstream: &str) {
    let rx = router.internal_request("tasks/cancel", json!({"taskId": upstream}));
    let server = router.server().clone();
    actix::spawn(async move {
        let answer = tokio::time::timeout(Duration::from_secs(10), rx).await.ok().and_then(Result::ok).unwrap_or(Value::Null);
        let status = answer.at("/result/status").and_then(Value::as_str).unwrap_or("unknown");
        let error = answer.at("/error/message").and_then(Value::as_str).map(|m| m.chars().take(200).collect::<String>());
        tracing::info!(component = "host_session", event = "bridged_task_cancelled", server = %server, status, error = error.as_deref(), "a task the service ran for a host's call was cancelled on its server");
    });
}

/// A task object with the id hosts know it by.
fn with_id(mut task: Value, exposed: &str) -> Value {
    if let Some(t) = task.as_object_mut() {
        t.insert("taskId".into(), json!(exposed));
    }
    task
}

/// A task request's answer with the task named the hosts' way (`taskId` of `tasks/get` and
/// `tasks/cancel`, the related-task `_meta` of `tasks/result`).
fn ids_out(answer: &mut Value, exposed: &str) {
    if let Some(r) = answer.get_mut("result").and_then(Value::as_object_mut) {
        if r.get("taskId").is_some_and(Value::is_string) {
            r.insert("taskId".into(), json!(exposed));
        }
    }
    tasks::set_related_task(answer, exposed);
}

/// A task's result as the answer to the call it ran for: the plain call's result, with no
/// related-task `_meta` (the host never saw a task).
fn without_related_task(mut answer: Value) -> Value {
    if let Some(meta) = answer.pointer_mut("/result/_meta").and_then(Value::as_object_mut) {
        meta.remove(RELATED_TASK);
        if meta.is_empty() {
            if let Some(r) = answer.get_mut("result").and_then(Value::as_object_mut) {
                r.remove("_meta");
            }
        }
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_answer_names_the_task_the_hosts_way_and_a_bridged_result_names_none() {
        let mut got = json!({"id": 1, "result": {"taskId": "up", "status": "working"}});
        ids_out(&mut got, "s:up");
        assert_eq!(got["result"]["taskId"], "s:up");
        let mut result = json!({"id": 1, "result": {"content": [], "_meta": {RELATED_TASK: {"taskId": "up"}}}});
        ids_out(&mut result, "s:up");
        assert_eq!(result["result"]["_meta"][RELATED_TASK]["taskId"], "s:up");
        let plain = without_related_task(result);
        assert!(plain["result"].get("_meta").is_none(), "{plain}");
        let kept = without_related_task(json!({"result": {"_meta": {RELATED_TASK: {}, "other": 1}}}));
        assert_eq!(kept["result"]["_meta"], json!({"other": 1}));
    }
}
