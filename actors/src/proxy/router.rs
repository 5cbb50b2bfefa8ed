//! The proxy path to one upstream server, shared by every thread: host sessions (on the HTTP
//! workers) forward through it directly, and the upstream link's reader delivers answers and
//! progress through it, so no single actor's mailbox sits in the middle of every call. It holds
//! the route table (ids, progress tokens, server-to-client requests; see `routes`), the link's
//! sender and the published upstream status; the hosts it answers are the shared [`Hosts`]. Locks are held for map operations only, never
//! across I/O or an await. The server's supervisor (`servers::supervisor`) keeps supervision:
//! it connects, initializes, publishes the status, and installs or removes the link here.

use crate::mcp::jsonrpc::At;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::{oneshot, watch};

use crate::audience::Origin;
use crate::mcp::jsonrpc::{self, code};
use crate::mcp::relayed::Relayed;
use crate::mcp::revision_2026;
use crate::messages::{HostEvent, SessionId, SessionPort, Status};
use crate::metrics::Metrics;
use crate::process::locks::{Recover, RecoverRw};
use crate::proxy::hosts::Hosts;
use crate::proxy::routes::Routes;
use crate::upstream::{LinkTx, SendError, UpstreamError};

mod early;
mod reply;
mod task_paths;
mod to_hosts;
mod whose;

pub use reply::Reply;
pub use to_hosts::{Named, Unnamed};
pub use whose::{Hearers, Unrouted};

/// How long a host request waits for a (re)starting upstream before it is answered with an error.
pub const READY_WAIT: Duration = Duration::from_secs(10);
/// Input rounds one call may take with a 2026 upstream (each needs the host's answers).
const MAX_INPUT_ROUNDS: u32 = 32;

pub struct Router {
    routes: Mutex<Routes<Reply>>,
    link: RwLock<Option<LinkTx>>,
    status: watch::Sender<Arc<Status>>,
    hosts: Arc<Hosts>,
    /// The server's name, as metrics label it.
    server: Arc<str>,
    /// How errors made here name the server to hosts: "server NAME: " with several, nothing
    /// with one.
    whose: String,
    /// The server's prefix with several servers (task ids are named by it for hosts).
    prefix: Option<Arc<str>>,
    /// Whose what the server says is when it names no owner (see [`Hearers`]).
    hearers: Hearers,
    /// A person's own connection (a `perPrincipal` server): that person's key. It speaks only
    /// to their sessions.
    owner: Option<Arc<str>>,
    /// The session that most recently sent a request: where server-to-client requests go when
    /// no request is in flight (and it is the only person's who could be asked).
    last_active: Mutex<Option<SessionId>>,
    metrics: Arc<Metrics>,
    /// Set while the upstream speaks MCP 2026-07-28: the `_meta` every request to it carries.
    upstream_meta: RwLock<Option<serde_json::Map<String, Value>>>,
    /// What the server said of a task before the answer that makes it (see `early`).
    early: Mutex<early::Early>,
}

/// A server's time bounds on the proxy path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Times {
    /// `upstream.requestTimeoutMs` (per server): how long a request waits without progress.
    pub request_timeout: Duration,
}

impl Times {
    pub fn new(request_timeout: Duration) -> Times {
        Times { request_timeout }
    }
}

/// Where a server-to-client request goes.
pub struct Target {
    pub session: SessionId,
    pub port: SessionPort,
    /// The host request it relates to (its stream carries the request).
    pub related: Option<Value>,
}

impl Router {
    /// `prefix`: several servers are behind the endpoint (this is the server's prefix), so errors
    /// made here say whose they are and task ids are named by it.
    /// `hearers`: whose what it says is when it names no owner (a person's own connection
    /// speaks only to that person's sessions).
    pub fn new(
        server: Arc<str>,
        prefix: Option<Arc<str>>,
        times: Times,
        describe: String,
        hosts: Arc<Hosts>,
        metrics: Arc<Metrics>,
        hearers: Hearers,
    ) -> Arc<Self> {
        let owner = match &hearers {
            Hearers::Person(p) => Some(p.clone()),
            _ => None,
        };
        let (status, _) = watch::channel(Arc::new(Status { describe, ..Status::default() }));
        let whose = if prefix.is_some() { format!("server {server}: ") } else { String::new() };
        Arc::new(Router {
            whose,
            prefix,
            routes: Mutex::new(Routes::new(times.request_timeout)),
            link: RwLock::new(None),
            status,
            hosts,
            server,
            hearers,
            owner,
            last_active: Mutex::new(None),
            metrics,
            upstream_meta: RwLock::new(None),
            early: Mutex::new(early::Early::default()),
        })
    }

    fn routes(&self) -> std::sync::MutexGuard<'_, Routes<Reply>> {
        // A panic while holding the lock leaves plain maps behind: still usable.
        self.routes.guard()
    }

    // ------------------------------------------------------------ status (published by the actor)

    pub fn publish(&self, status: Status) {
        self.status.send_replace(Arc::new(status));
    }

    /// The upstream as last published.
    pub fn status(&self) -> Arc<Status> {
        self.status.borrow().clone()
    }

    /// Whether the upstream declared `capability` (`tools`, `resources`, ...) when it started.
    pub fn declared(&self, capability: &str) -> bool {
        let status = self.status.borrow();
        let init = status.init.as_ref();
        init.and_then(|i| i.get("capabilities")?.get(capability)).is_some_and(|c| !c.is_null())
    }

    /// The status once the upstream is ready, or why it is not after `limit`.
    pub async fn ready(&self, limit: Duration) -> Result<Arc<Status>, UpstreamError> {
        let mut rx = self.status.subscribe();
        // A lasting failure is said at once: waiting cannot change it.
        let waited = tokio::time::timeout(limit, rx.wait_for(|s| s.ready || s.lasting)).await;
        match waited {
            Ok(Ok(s)) if s.ready => Ok(s.clone()),
            _ => {
                let status = self.status();
                let why = status.last_error.clone().unwrap_or_else(|| "the upstream is still starting".into());
                Err(if status.lasting { UpstreamError::Misconfigured(why) } else { UpstreamError::NotReady(why) })
            }
        }
    }

    /// Waits (at most `limit`) until the upstream is ready or has failed at least once.
    pub async fn settled(&self, limit: Duration) {
        let mut rx = self.status.subscribe();
        let _ = tokio::time::timeout(limit, rx.wait_for(|s| s.ready || s.last_error.is_some())).await;
    }

    // ------------------------------------------------------------ the link (installed by the actor)

    pub fn set_link(&self, tx: Option<LinkTx>) {
        *self.link.writing() = tx;
    }

    /// The upstream speaks MCP 2026-07-28 (`Some`: what each request declares in `_meta`), or
    /// the session era (`None`, also while it is being probed).
    pub fn set_upstream_meta(&self, meta: Option<serde_json::Map<String, Value>>) {
        *self.upstream_meta.writing() = meta;
    }

    pub fn upstream_is_2026(&self) -> bool {
        self.upstream_meta.reading().is_some()
    }

    /// Whether the upstream speaks 2026-07-28 with the tasks extension (the service declares
    /// it on every request there).
    pub fn runs_tasks_2026(&self) -> bool {
        let meta = self.upstream_meta.reading();
        let caps = meta.as_ref().and_then(|m| m.get(revision_2026::META_CAPS));
        caps.and_then(|c| c.get("extensions")).and_then(|e| e.get(revision_2026::TASKS_EXTENSION)).is_some()
    }

    /// Queues a message for the upstream. Refuses when the link is down or its queue is full
    /// (an upstream that stopped reading); the error says which, for the host.
    pub fn send(&self, mut msg: Value) -> Result<(), UpstreamError> {
        if let Some(meta) = self.upstream_meta.reading().as_ref() {
            match jsonrpc::kind(&msg) {
                // Every 2026 request says who is asking; the proxy is the upstream's client.
                // (The capabilities a host session set for its own request stay.)
                jsonrpc::Kind::Request => {
                    for (k, v) in meta {
                        let set = msg.at("/params/_meta").and_then(|m| m.get(k)).is_some();
                        if !(set && k == revision_2026::META_CAPS) {
                            revision_2026::set_request_meta(&mut msg, k, v.clone());
                        } else if let Some(ext) = v.get("extensions") {
                            // The extensions are the service's own (it runs the server's tasks).
                            if let Some(caps) = msg.pointer_mut("/params/_meta").and_then(|m| m.get_mut(k)).and_then(Value::as_object_mut) {
                                caps.insert("extensions".into(), ext.clone());
                            }
                        }
                    }
                }
                // 2026 keeps only cancellation among client notifications.
                jsonrpc::Kind::Notification if jsonrpc::method(&msg) != Some("notifications/cancelled") => return Ok(()),
                _ => {}
            }
        }
        // A copy of the sender, so that no lock is held while the message is serialized and
        // written (a restart installs a new link meanwhile without waiting).
        let link = self.link.reading().clone();
        let Some(tx) = link else {
            return Err(UpstreamError::Down(self.status().last_error.clone().unwrap_or_else(|| "the upstream link is closed".into())));
        };
        // Serialized (and, to a stdio upstream, written) here, on the sender's thread.
        tx.send(msg).map_err(|e| match e {
            SendError::Full => {
                self.metrics.dropped_messages.with_label_values(&["upstream_queue_full"]).inc();
                UpstreamError::QueueFull
            }
            SendError::Closed => UpstreamError::LinkClosed,
        })
    }

    /// A request of the proxy's own (initialize, tools/list pages, subscriptions).
    pub fn internal_request(&self, method: &str, params: Value) -> oneshot::Receiver<Value> {
        let (tx, rx) = oneshot::channel();
        let id = self.routes().internal(method, Reply::Tree(tx));
        if let Err(why) = self.send(jsonrpc::request(id, method, params)) {
            // Answered at once, so the caller does not wait for a timeout.
            if let Some(p) = self.routes().abandon(id) {
                let _ = p.reply.send(jsonrpc::error(json!(id), code::UPSTREAM_UNAVAILABLE, why.to_string()));
            }
        }
        rx
    }

    /// A lasting request of the proxy's own (`subscriptions/listen` to a 2026 upstream): no
    /// deadline; the receiver resolves when the upstream ends it. Returns its id too, to cancel.
    pub fn lasting_request(&self, method: &str, params: Value) -> (Value, oneshot::Receiver<Value>) {
        let (tx, rx) = oneshot::channel();
        let id = self.routes().internal_lasting(method, Reply::Tree(tx));
        if let Err(why) = self.send(jsonrpc::request(id, method, params)) {
            if let Some(p) = self.routes().abandon(id) {
                let _ = p.reply.send(jsonrpc::error(json!(id), code::UPSTREAM_UNAVAILABLE, why.to_string()));
            }
        }
        (json!(id), rx)
    }

    /// Stops or restarts the deadline of a host's request (see `Routes::hold`).
    pub fn hold_route(&self, session: &SessionId, host_req: &Value, hold: bool) {
        self.routes().hold(session, host_req, hold);
    }

    /// Ends a lasting request: forgotten here, cancelled upstream.
    pub fn end_lasting(&self, id: &Value) {
        if self.routes().give_up(id).is_some() {
            let _ = self.send(jsonrpc::notification("notifications/cancelled", json!({"requestId": id, "reason": "resubscribing"})));
        }
    }

    // ------------------------------------------------------------ sessions

    /// The server's name.
    pub fn server(&self) -> &Arc<str> {
        &self.server
    }

    /// Whose what the server says is when it names no owner.
    pub fn hearers(&self) -> &Hearers {
        &self.hearers
    }

    /// The server's prefix, with several servers.
    pub fn prefix(&self) -> Option<&str> {
        self.prefix.as_deref()
    }

    /// Whose each task is.
    pub fn tasks(&self) -> &crate::proxy::tasks::Tasks {
        self.hosts.tasks()
    }

    /// A session left: its requests are no longer answered.
    pub fn unregister(&self, session: &SessionId) {
        let mut last = self.last_active.guard();
        if last.as_ref() == Some(session) {
            *last = None;
        }
        drop(last);
        self.routes().drop_session(session);
    }

    /// Whether `session` is still connected (a session that stopped has left).
    pub fn is_registered(&self, session: &SessionId) -> bool {
        self.hosts.contains(session)
    }

    /// Where what this connection says comes from (see `audience`).
    pub fn origin(&self) -> Origin {
        Origin { server: self.server.clone(), owner: self.owner.clone() }
    }

    /// To every session the delivery rule may admit (a person's own connection: only theirs);
    /// each session applies the rest of the rule.
    pub fn broadcast(&self, ev: HostEvent) {
        self.hosts.broadcast_from(&self.origin(), ev);
    }

    /// To every session of `person` the delivery rule may admit.
    pub fn broadcast_to(&self, person: &str, ev: HostEvent) {
        self.hosts.broadcast_to(&self.origin(), person, ev);
    }

    /// How to reach `session` (never another person's, from a person's own connection).
    fn port(&self, session: &SessionId) -> Option<SessionPort> {
        self.hosts.port(session, self.owner.as_deref())
    }

    // ------------------------------------------------------------ host -> upstream

    /// Sends a host request now, if the upstream is ready: its route is in the table before this
    /// returns, so a cancellation the host sends next (even in the same batch) finds it. The
    /// receiver resolves to the answer with the host's own id (an error when the request could
    /// not be sent; closed when the host cancelled it). `Err(msg)`: not ready, nothing was sent.
    pub fn try_forward(self: &Arc<Self>, session: &SessionId, msg: Value) -> Result<oneshot::Receiver<Value>, Value> {
        let (tx, rx) = oneshot::channel();
        self.try_forward_to(session, msg, Reply::Tree(tx)).map(|_| rx)
    }

    /// [`Router::try_forward`] for a session that takes a plain result as read
    /// (`mcp::relayed`).
    pub fn try_forward_relayed(self: &Arc<Self>, session: &SessionId, msg: Value) -> Result<oneshot::Receiver<Relayed>, Value> {
        let (tx, rx) = oneshot::channel();
        self.try_forward_to(session, msg, Reply::Relayed(tx)).map(|_| rx)
    }

    fn try_forward_to(self: &Arc<Self>, session: &SessionId, mut msg: Value, reply: Reply) -> Result<(), Value> {
        if !self.status.borrow().ready {
            return Err(msg);
        }
        let host_id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let mut last = self.last_active.guard();
        if last.as_deref() != Some(session.as_str()) {
            *last = Some(session.clone()); // the same session's next call allocates nothing here
        }
        drop(last);
        let modern = self.upstream_is_2026();
        let keep = matches!(jsonrpc::method(&msg), Some("tools/call" | "prompts/get" | "resources/read")) && modern;
        // A host's own task of a 2026 server: asked for by the extension the service declares
        // anyway, so the call goes without `task`, and the task the server makes is the host's.
        let asks_task = keep && jsonrpc::method(&msg) == Some("tools/call") && task_paths::take_task(&mut msg);
        let owner = self.hosts.owner_of(session);
        let up_id = self.routes().outgoing_kept(session, owner, &mut msg, reply, keep);
        if asks_task {
            self.routes().pass_task(up_id);
        }
        if modern && jsonrpc::method(&msg) == Some("tasks/result") {
            self.wait_on_task(session, up_id, &msg);
            return Ok(());
        }
        if let Err(why) = self.send(msg) {
            if let Some(p) = self.routes().abandon(up_id) {
                let why = format!("{}{why}; retry shortly", self.whose);
                let _ = p.reply.send(jsonrpc::error(host_id, code::UPSTREAM_UNAVAILABLE, why));
            }
        }
        Ok(())
    }

    /// [`Router::try_forward`], waiting (bounded) for a (re)starting upstream first. Resolves to
    /// the answer, or Null when the host cancelled it (nothing is to be sent).
    pub async fn forward(self: &Arc<Self>, session: SessionId, msg: Value) -> Value {
        let host_id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let msg = match self.try_forward(&session, msg) {
            Ok(rx) => return rx.await.unwrap_or(Value::Null),
            Err(msg) => msg,
        };
        if let Err(why) = self.ready(READY_WAIT).await {
            return jsonrpc::error(host_id, code::UPSTREAM_UNAVAILABLE, format!("{why}{}", why.retry_advice()));
        }
        match self.try_forward(&session, msg) {
            Ok(rx) => rx.await.unwrap_or(Value::Null),
            Err(_) => jsonrpc::error(host_id, code::UPSTREAM_UNAVAILABLE, "the upstream restarted again; retry shortly"),
        }
    }

    /// A host notification to pass on (cancelled, roots/list_changed, ...); a cancellation's
    /// request id is translated to the upstream's.
    pub fn forward_notification(&self, session: &SessionId, mut msg: Value) {
        if jsonrpc::method(&msg) == Some("notifications/cancelled") {
            let Some(host_req) = msg.at("/params/requestId").cloned() else {
                return;
            };
            let Some(up_id) = self.routes().cancel(session, &host_req) else {
                return;
            };
            msg["params"]["requestId"] = up_id;
        }
        let _ = self.send(msg);
    }

    // ------------------------------------------------------------ failure and time

    /// The link is gone: every request in flight is answered with `why` at once.
    pub fn fail_all(&self, why: &str) {
        self.set_link(None);
        let describe = self.status().describe.clone();
        let failed = self.routes().fail_all();
        for p in failed {
            let id = p.host_id.unwrap_or(Value::Null);
            let _ = p.reply.send(jsonrpc::error_with_data(id, code::UPSTREAM_UNAVAILABLE, why.to_string(), json!({"upstream": describe})));
        }
    }

    pub fn timeout(&self) -> Duration {
        self.routes().timeout()
    }

    /// Requests past `upstream.requestTimeoutMs` (progress restarts the wait): the host gets an
    /// error naming the timeout, the upstream a cancellation.
    pub fn expire(&self) {
        let timeout = self.timeout();
        let expired = self.routes().expired(Instant::now());
        let let_go = self.early.guard().expire(Instant::now());
        self.kept_back_early(let_go);
        for e in expired {
            self.metrics.upstream_timeouts(&self.server).inc();
            tracing::warn!(component = "upstream", event = "request_timeout", method = %e.pending.method, timeout_ms = timeout.as_millis() as u64, "upstream request timed out; cancelled");
            let reason = format!(
                "the upstream did not answer {} within {} ms (upstream.requestTimeoutMs); the request was cancelled",
                e.pending.method,
                timeout.as_millis()
            );
            let _ = self.send(jsonrpc::notification("notifications/cancelled", json!({"requestId": e.up_id, "reason": reason})));
            let id = e.pending.host_id.unwrap_or(Value::Null);
            let _ = e.pending.reply.send(jsonrpc::error(id, code::UPSTREAM_UNAVAILABLE, reason));
        }
    }
}
