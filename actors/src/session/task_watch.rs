//! **TaskWatch**, one per task the service made for a 2026 host. A 2025-11-25 server hands out
//! what a task asks of its caller (an elicitation, a sampling request) only while a
//! `tasks/result` of it is open, and its result only there; a 2026 host never holds one open
//! (it polls `tasks/get` and answers with `tasks/update`). So the watch holds it open for the
//! host: a session of the task's owner in the host table (what the server asks inside the task
//! comes here, see `Router::server_request_target_in`), keeping each request under a key of its
//! own until the host answers it, and the task's end once it comes. It stops when the task's
//! time to live is over (or when the task is forgotten).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;

use crate::mcp::jsonrpc::{self, code, At};
use crate::mcp::tasks_2026::Outcome;
use crate::messages::{AnswerTask, Close, HostEvent, InspectTask, ServerRequest, SessionPort, WatchPort};
use crate::proxy::router::Router;
use crate::proxy::tasks::TaskRoute;
use crate::servers::fleet::Fleet;

/// How long a request waits for the host's answer through `tasks/update`.
const ANSWER_WAIT: Duration = Duration::from_secs(600);
/// Longest a watch lives (a task without a time to live, or a long one).
const LONGEST: Duration = Duration::from_secs(3600);
/// After a wait that failed (not the task's end: the server or the link), the next one.
const AGAIN: Duration = Duration::from_secs(1);

struct Asked {
    request: Value,
    reply: oneshot::Sender<Value>,
}

pub struct TaskWatch {
    /// Its id in the host table (never a host's).
    id: String,
    task: TaskRoute,
    router: Arc<Router>,
    fleet: Arc<Fleet>,
    ttl: Duration,
    asked: BTreeMap<String, Asked>,
    /// Keys handed out so far (a key is never used twice in a task's life).
    counter: u64,
    outcome: Option<Outcome>,
}

impl TaskWatch {
    /// Starts the watch of `task` (made through `router`) and files it with the task.
    pub fn watch(task: TaskRoute, router: Arc<Router>, fleet: Arc<Fleet>, ttl_ms: Option<u64>) {
        let ttl = ttl_ms.map(Duration::from_millis).unwrap_or(LONGEST).min(LONGEST);
        let id = format!("task-watch:{}", uuid::Uuid::new_v4().simple());
        let exposed = task.exposed.clone();
        let watch =
            TaskWatch { id: id.clone(), task, router, fleet: fleet.clone(), ttl, asked: BTreeMap::new(), counter: 0, outcome: None };
        // Registered as a session before anything of the task can come (the call that made
        // it has just been answered), so a question the server asks at once finds the watch.
        let owner = watch.task.owner.clone();
        let addr = TaskWatch::create(|ctx| {
            let port = SessionPort { event: ctx.address().recipient(), request: ctx.address().recipient() };
            fleet.register(id.clone(), port, owner);
            watch
        });
        let port = WatchPort { inspect: addr.clone().recipient(), answer: addr.clone().recipient(), stop: addr.clone().recipient() };
        if !fleet.hosts().tasks().set_watch(&exposed, port, &id) {
            addr.do_send(Close); // its task is gone already
        }
    }

    /// Holds the task's `tasks/result` open (again) under this watch's own id.
    fn wait(&mut self, ctx: &mut Context<Self>) {
        if self.outcome.is_some() {
            return;
        }
        let msg = jsonrpc::request(json!("watch"), "tasks/result", json!({"taskId": self.task.upstream}));
        let rx = match self.router.try_forward(&self.id, msg) {
            Ok(rx) => rx,
            Err(_) => {
                ctx.run_later(AGAIN, |act, ctx| act.wait(ctx));
                return;
            }
        };
        ctx.spawn(rx.into_actor(self).map(|answer, act, ctx| {
            let answer = answer.unwrap_or(Value::Null);
            let lost = answer.at("/error/code").and_then(Value::as_i64) == Some(code::UPSTREAM_UNAVAILABLE);
            if answer.is_null() || lost {
                ctx.run_later(AGAIN, |act, ctx| act.wait(ctx));
                return;
            }
            act.outcome = Some(Outcome::of(&answer));
            // What the task still asked is moot now.
            for (_, a) in std::mem::take(&mut act.asked) {
                let _ = a.reply.send(jsonrpc::error(Value::Null, code::INTERNAL_ERROR, "the task ended"));
            }
        }));
    }
}

impl Actor for TaskWatch {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.wait(ctx);
        ctx.run_later(self.ttl, |_, ctx| ctx.stop());
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        self.fleet.unregister(&self.id);
        self.fleet.hosts().tasks().watch_ended(&self.task.exposed, &self.id);
    }
}

impl Handler<ServerRequest> for TaskWatch {
    type Result = ResponseFuture<Value>;

    fn handle(&mut self, r: ServerRequest, _: &mut Self::Context) -> Self::Result {
        let id = jsonrpc::id(&r.msg).cloned().unwrap_or(Value::Null);
        // Only what the task asks is its host's to answer; the rest found the watch only
        // because its wait is the owner's one call in flight.
        if crate::mcp::tasks::related_task(&r.msg) != Some(self.task.exposed.as_str()) {
            let answer = match jsonrpc::method(&r.msg) {
                Some("roots/list") => jsonrpc::result(id, json!({"roots": []})),
                _ => jsonrpc::error(id, code::METHOD_NOT_FOUND, "no connected host can answer this right now"),
            };
            return Box::pin(async move { answer });
        }
        self.counter += 1;
        let key = format!("input_{}", self.counter);
        let request = json!({"method": jsonrpc::method(&r.msg).unwrap_or_default(), "params": jsonrpc::params(&r.msg).clone()});
        let (tx, rx) = oneshot::channel();
        self.asked.insert(key, Asked { request, reply: tx });
        // A task waiting on its host is not the server's delay.
        self.router.hold_route(&self.id, &json!("watch"), true);
        Box::pin(async move {
            match tokio::time::timeout(ANSWER_WAIT, rx).await {
                Ok(Ok(mut answer)) => {
                    answer["id"] = id;
                    answer
                }
                _ => jsonrpc::error(id, code::INTERNAL_ERROR, "the host did not answer the task's request (tasks/update) in time"),
            }
        })
    }
}

impl Handler<InspectTask> for TaskWatch {
    type Result = MessageResult<InspectTask>;

    fn handle(&mut self, _: InspectTask, _: &mut Self::Context) -> Self::Result {
        let inputs: Map<String, Value> = self.asked.iter().map(|(k, a)| (k.clone(), a.request.clone())).collect();
        MessageResult((self.outcome.clone(), inputs))
    }
}

impl Handler<AnswerTask> for TaskWatch {
    type Result = ();

    fn handle(&mut self, m: AnswerTask, _: &mut Self::Context) {
        // Keys that are unknown or answered already are ignored (the host may send again).
        for (key, response) in m.0 {
            let Some(asked) = self.asked.remove(&key) else { continue };
            if !response.is_object() {
                let _ = asked.reply.send(jsonrpc::error(Value::Null, code::INVALID_PARAMS, "the host's answer was not an object"));
                continue;
            }
            let _ = asked.reply.send(jsonrpc::result(Value::Null, response));
        }
        if self.asked.is_empty() {
            self.router.hold_route(&self.id, &json!("watch"), false);
        }
    }
}

impl Handler<HostEvent> for TaskWatch {
    type Result = ();

    /// What the server says about the task is the host's to poll for; its status also goes to
    /// the owner's sessions, where a listen that took the task tells it (`notifications/tasks`;
    /// the others let it pass). What is heard here is not passed on again.
    fn handle(&mut self, ev: HostEvent, _: &mut Self::Context) {
        let (HostEvent::Notify { msg, .. } | HostEvent::ForCaller { msg, .. }) = ev else { return };
        let its_own = msg.at("/params/taskId").and_then(Value::as_str) == Some(self.task.exposed.as_str());
        if jsonrpc::method(&msg) == Some("notifications/tasks/status") && its_own {
            self.router.broadcast_to(&self.task.owner, HostEvent::heard(msg, self.router.origin()));
        }
    }
}

impl Handler<Close> for TaskWatch {
    type Result = ();

    fn handle(&mut self, _: Close, ctx: &mut Self::Context) {
        ctx.stop();
    }
}
