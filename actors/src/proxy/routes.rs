//! Pure request routing between many host sessions and one upstream: the proxy's own ids for
//! requests (so ids from different hosts never collide upstream), progress tokens made unique
//! upstream and mapped back, cancellations translated, and the ids of server-to-client requests
//! handed to hosts. `T` is how an answer is delivered (a channel in the actor, `()` in tests).

use crate::mcp::jsonrpc::At;
use crate::mcp::relayed::RawResult;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::mcp::jsonrpc;

pub type SessionId = String;

pub struct Pending<T> {
    pub reply: T,
    /// The host's own id, restored on the answer; None for the proxy's own requests.
    pub host_id: Option<Value>,
    pub session: Option<SessionId>,
    /// The person whose session sent it (None: the proxy's own, or a session not known).
    pub owner: Option<Arc<str>>,
    /// Borrowed for the methods the metrics know (no allocation on every call).
    pub method: std::borrow::Cow<'static, str>,
    pub started: Instant,
    /// When the request is given up (`upstream.requestTimeoutMs`); progress moves it on.
    pub deadline: Instant,
    progress_key: Option<String>,
    /// The request as sent, kept when a 2026 upstream may answer it `input_required` (then it
    /// is sent again with the host's answers).
    resend: Option<Value>,
    /// Input rounds so far (bounded: an upstream cannot keep a call asking forever).
    pub rounds: u32,
    /// The server's id of the task a `tasks/*` request names (what the server asks inside that
    /// task goes to the host waiting on it; its status keeps the request alive).
    task: Option<String>,
    /// A 2026 upstream's task made by it is the host's own (it asked for one), not one the
    /// service runs for the call.
    pass_task: bool,
}

impl<T> Pending<T> {
    /// The server's id of the task a `tasks/*` request names.
    pub fn task(&self) -> Option<&str> {
        self.task.as_deref()
    }
}

struct ProgressRoute {
    session: SessionId,
    host_token: Value,
    host_request: Value,
    /// The key of the pending request it reports on (progress resets its deadline).
    pending_key: String,
}

/// What a 2026 upstream's answer that made a task leads to.
#[derive(Debug, PartialEq)]
pub enum TaskAnswer {
    /// The service runs it for `session`'s call (`request`, as sent).
    Run { session: SessionId, request: Value },
    /// The host asked for a task: the answer goes to it.
    Pass,
    /// No host's call waits for it (the proxy's own, cancelled, timed out).
    Unknown,
}

/// What an `input_required` answer from a 2026 upstream leads to.
pub enum Round {
    /// Ask `session`'s host, then send `request` again with the answers (the route stays).
    Ask { session: SessionId, request: Value },
    /// A request not kept for rounds (the proxy's own, or a method that cannot ask): the
    /// answer goes to whoever waits, as it is.
    NotKept,
    /// The request has asked too often: give up.
    TooMany,
    /// No such request (cancelled, timed out).
    Unknown,
}

/// A request given up at its deadline: answer the host, cancel it upstream.
pub struct Expired<T> {
    pub pending: Pending<T>,
    /// The id the upstream knows it by (for `notifications/cancelled`).
    pub up_id: Value,
}

/// A progress notification translated for the host that asked for it.
pub struct ProgressForHost {
    pub session: SessionId,
    pub msg: Value,
    /// The host request it belongs to (its stream carries the notification).
    pub related: Value,
}

pub struct Routes<T> {
    /// How long a request may wait for its answer without progress.
    timeout: Duration,
    next_id: u64,
    pending: HashMap<String, Pending<T>>,
    progress: HashMap<String, ProgressRoute>,
    /// Server-to-client requests handed to a host: our host-side id -> (session, upstream id).
    server_requests: HashMap<String, (SessionId, Value)>,
    /// URL elicitations handed to a host, by the server's `elicitationId`: whose their
    /// completion notice is (bounded: the oldest go first).
    elicitations: HashMap<String, (SessionId, Instant)>,
    /// Tasks hosts run for the server (a sampling or elicitation asked as a task), by the id
    /// the server knows (the proxy's: two hosts may hand out the same id): the host and its own
    /// id. The server's `tasks/*` about one go to that host alone.
    host_tasks: HashMap<String, (SessionId, String, Instant)>,
}

/// URL elicitations (each waits for a person to finish in a browser), and tasks hosts run for
/// the server, remembered at most each.
const MAX_ELICITATIONS: usize = 4096;

/// Remembers `id` as `session`'s in a bounded table (the oldest go first).
fn remember(table: &mut HashMap<String, (SessionId, Instant)>, id: &str, session: &SessionId) {
    if table.len() >= MAX_ELICITATIONS {
        if let Some(oldest) = table.iter().min_by_key(|(_, (_, at))| *at).map(|(k, _)| k.clone()) {
            table.remove(&oldest);
        }
    }
    let key: String = id.chars().take(256).collect();
    table.insert(key, (session.clone(), Instant::now()));
}

impl<T> Default for Routes<T> {
    fn default() -> Self {
        Routes::new(Duration::from_secs(120))
    }
}

impl<T> Routes<T> {
    pub fn new(timeout: Duration) -> Self {
        Routes {
            timeout,
            next_id: 1,
            pending: HashMap::new(),
            progress: HashMap::new(),
            server_requests: HashMap::new(),
            elicitations: HashMap::new(),
            host_tasks: HashMap::new(),
        }
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Takes out every request whose deadline has passed at `now`.
    pub fn expired(&mut self, now: Instant) -> Vec<Expired<T>> {
        let keys: Vec<String> = self.pending.iter().filter(|(_, p)| p.deadline <= now).map(|(k, _)| k.clone()).collect();
        keys.into_iter()
            .filter_map(|k| {
                let up_id = id_of_key(&k)?;
                Some(Expired { pending: self.forget(&k)?, up_id })
            })
            .collect()
    }

    /// The host session and host request behind the upstream request `up_id`, if still pending.
    pub fn host_of(&self, up_id: &Value) -> Option<(SessionId, Value)> {
        let p = self.pending.get(jsonrpc::key_of(up_id).as_str())?;
        Some((p.session.clone()?, p.host_id.clone()?))
    }

    /// How many requests are waiting (for tests and metrics).
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }
}

/// A method's name, borrowed when it is one the metrics know.
fn known(method: &str) -> std::borrow::Cow<'static, str> {
    match crate::metrics::method_label(method) {
        label if label == method => std::borrow::Cow::Borrowed(label),
        _ => std::borrow::Cow::Owned(method.to_string()),
    }
}

/// The JSON id back from an `id_key`.
fn id_of_key(key: &str) -> Option<Value> {
    serde_json::from_str(key.trim_start_matches("n:")).ok()
}

impl<T> Routes<T> {
    fn fresh_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// A request of the proxy's own; returns the id to send it with.
    pub fn internal(&mut self, method: &str, reply: T) -> u64 {
        let id = self.internal_lasting(method, reply);
        let deadline = Instant::now() + self.timeout;
        if let Some(p) = self.pending.get_mut(jsonrpc::key_of(&json!(id)).as_str()) {
            p.deadline = deadline;
        }
        id
    }

    /// A request of the proxy's own that is answered only when it ends (a subscription
    /// stream): it never times out.
    pub fn internal_lasting(&mut self, method: &str, reply: T) -> u64 {
        let id = self.fresh_id();
        let now = Instant::now();
        let p = Pending {
            reply,
            host_id: None,
            session: None,
            owner: None,
            method: known(method),
            started: now,
            deadline: now.checked_add(Duration::from_secs(10 * 365 * 86_400)).unwrap_or(now + self.timeout),
            progress_key: None,
            resend: None,
            rounds: 0,
            pass_task: false,
            task: None,
        };
        self.pending.insert(jsonrpc::id_key(&json!(id)), p);
        id
    }

    /// A host request: rewrites its id (and progress token) in `msg` and remembers how to map
    /// the answer back. Returns the upstream id.
    pub fn outgoing(&mut self, session: &SessionId, owner: Option<Arc<str>>, msg: &mut Value, reply: T) -> u64 {
        self.outgoing_kept(session, owner, msg, reply, false)
    }

    /// [`Routes::outgoing`], keeping the request as sent when `keep` (see `resend`).
    pub fn outgoing_kept(&mut self, session: &SessionId, owner: Option<Arc<str>>, msg: &mut Value, reply: T, keep: bool) -> u64 {
        let host_id = jsonrpc::id(msg).cloned().unwrap_or(Value::Null);
        let method = known(jsonrpc::method(msg).unwrap_or_default());
        let up_id = self.fresh_id();
        msg["id"] = json!(up_id);
        let pending_key = jsonrpc::id_key(&json!(up_id));
        let progress_key = jsonrpc::progress_token(msg).cloned().map(|host_token| {
            let up_token = json!(format!("p{up_id}"));
            jsonrpc::set_progress_token(msg, up_token.clone());
            let key = jsonrpc::id_key(&up_token);
            let route =
                ProgressRoute { session: session.clone(), host_token, host_request: host_id.clone(), pending_key: pending_key.clone() };
            self.progress.insert(key.clone(), route);
            key
        });
        let now = Instant::now();
        let task = match method.starts_with("tasks/") {
            true => msg.at("/params/taskId").and_then(Value::as_str).map(str::to_string),
            false => None,
        };
        let p = Pending {
            reply,
            host_id: Some(host_id),
            session: Some(session.clone()),
            owner,
            method,
            started: now,
            deadline: now + self.timeout,
            progress_key,
            resend: keep.then(|| msg.clone()),
            rounds: 0,
            pass_task: false,
            task,
        };
        self.pending.insert(pending_key, p);
        up_id
    }

    /// A 2026 upstream asked for input on `up_id`: what to do with that answer.
    pub fn input_round(&mut self, up_id: &Value, max_rounds: u32) -> Round {
        let timeout = self.timeout;
        let Some(p) = self.pending.get_mut(jsonrpc::key_of(up_id).as_str()) else { return Round::Unknown };
        let (Some(session), Some(request)) = (p.session.clone(), p.resend.clone()) else { return Round::NotKept };
        if p.rounds >= max_rounds {
            return Round::TooMany;
        }
        p.rounds += 1;
        p.deadline = Instant::now() + timeout;
        Round::Ask { session, request }
    }

    /// The call `up_id` was answered with a task of the server's (`task`): the host's own to poll
    /// when it asked for one ([`Routes::pass_task`]), else the service runs it for the call
    /// (its status keeps the call alive from now on).
    pub fn task_answer(&mut self, up_id: &Value, task: &str) -> TaskAnswer {
        let deadline = Instant::now() + self.timeout;
        let Some(p) = self.pending.get_mut(jsonrpc::key_of(up_id).as_str()) else { return TaskAnswer::Unknown };
        if p.pass_task {
            return TaskAnswer::Pass;
        }
        let (Some(session), Some(request)) = (p.session.clone(), p.resend.clone()) else { return TaskAnswer::Unknown };
        p.task = Some(task.to_string());
        p.deadline = deadline;
        TaskAnswer::Run { session, request }
    }

    /// The host of the request `up_id` asked for a task: a task its server makes is the host's.
    pub fn pass_task(&mut self, up_id: u64) {
        if let Some(p) = self.pending.get_mut(jsonrpc::id_key(&json!(up_id)).as_str()) {
            p.pass_task = true;
        }
    }

    /// Stops (`hold`) or restarts the deadline of `session`'s request `host_req`: a call waiting
    /// for its host's answers is not the upstream's delay.
    pub fn hold(&mut self, session: &SessionId, host_req: &Value, hold: bool) {
        let timeout = self.timeout;
        if let Some(p) = self.pending.values_mut().find(|p| p.session.as_ref() == Some(session) && p.host_id.as_ref() == Some(host_req)) {
            let now = Instant::now();
            p.deadline =
                if hold { now.checked_add(Duration::from_secs(10 * 365 * 86_400)).unwrap_or(now + timeout) } else { now + timeout };
        }
    }

    /// The task `task` (the server's id) said something: the requests waiting on it are alive.
    pub fn refresh_task(&mut self, task: &str) {
        let deadline = Instant::now() + self.timeout;
        for p in self.pending.values_mut().filter(|p| p.task.as_deref() == Some(task)) {
            p.deadline = deadline;
        }
    }

    /// `owner`'s newest request waiting on the task `task` (the server's id): its session and
    /// host id.
    pub fn waiting_on_task(&self, task: &str, owner: &str) -> Option<(SessionId, Value)> {
        // Only a `tasks/result` waits on it (a `tasks/get` that happens to be in flight is
        // answered at once and carries nothing the task asks).
        let waiting = self
            .pending
            .values()
            .filter(|p| p.method == "tasks/result" && p.task.as_deref() == Some(task) && p.owner.as_deref() == Some(owner));
        let p = waiting.max_by_key(|p| p.started)?;
        Some((p.session.clone()?, p.host_id.clone()?))
    }

    /// Whether `up_id` still waits for its answer (the host may have cancelled it meanwhile).
    pub fn is_pending(&self, up_id: &Value) -> bool {
        self.pending.contains_key(jsonrpc::key_of(up_id).as_str())
    }

    /// Gives up on `up_id`: the waiting host is answered by the caller.
    pub fn give_up(&mut self, up_id: &Value) -> Option<Pending<T>> {
        self.forget(&jsonrpc::key_of(up_id))
    }

    /// Forgets a request that could not be sent (the server never heard of it).
    pub fn abandon(&mut self, up_id: u64) -> Option<Pending<T>> {
        self.forget(&jsonrpc::key_of(&json!(up_id)))
    }

    fn forget(&mut self, key: &str) -> Option<Pending<T>> {
        let p = self.pending.remove(key)?;
        if let Some(k) = &p.progress_key {
            self.progress.remove(k);
        }
        Some(p)
    }

    /// The upstream answered: the waiting request, with `msg`'s id set back to the host's.
    pub fn answered(&mut self, msg: &mut Value) -> Option<Pending<T>> {
        let p = self.forget(&jsonrpc::key_of(jsonrpc::id(msg)?))?;
        if let Some(host_id) = &p.host_id {
            msg["id"] = host_id.clone();
        }
        Some(p)
    }

    /// [`Routes::answered`] for a result kept as read.
    pub fn answered_raw(&mut self, raw: &mut RawResult) -> Option<Pending<T>> {
        let p = self.forget(&jsonrpc::key_of(&raw.id))?;
        if let Some(host_id) = &p.host_id {
            raw.id = host_id.clone();
        }
        Some(p)
    }

    /// A progress notification from the upstream, with the host's own token put back. The
    /// request it reports on is alive: its deadline starts again.
    pub fn progress(&mut self, msg: &Value) -> Option<ProgressForHost> {
        let token = msg.at("/params/progressToken")?;
        let route = self.progress.get(jsonrpc::key_of(token).as_str())?;
        if let Some(p) = self.pending.get_mut(&route.pending_key) {
            p.deadline = Instant::now() + self.timeout;
        }
        let mut out = msg.clone();
        out["params"]["progressToken"] = route.host_token.clone();
        Some(ProgressForHost { session: route.session.clone(), msg: out, related: route.host_request.clone() })
    }

    /// A host cancelled its request `host_req`: forget it, and give the upstream id to cancel.
    pub fn cancel(&mut self, session: &SessionId, host_req: &Value) -> Option<Value> {
        let key = self
            .pending
            .iter()
            .find(|(_, p)| p.session.as_ref() == Some(session) && p.host_id.as_ref() == Some(host_req))
            .map(|(k, _)| k.clone())?;
        self.forget(&key)?;
        id_of_key(&key)
    }

    /// The newest host request in flight of `person` (None: of anyone) that could carry what
    /// its server asks or says without naming a request: a call, a prompt or a read if there is
    /// one, else any. Only asked once the message is known to be that person's (their own
    /// connection, or an endpoint that cannot tell people apart): which of their requests
    /// carries it is a choice among their own, never a guess at whose it is.
    pub fn newest_of(&self, person: Option<&str>) -> Option<(SessionId, Value)> {
        let rank = |p: &Pending<T>| (matches!(&*p.method, "tools/call" | "prompts/get" | "resources/read"), p.started);
        let theirs = self.pending.values().filter(|p| p.session.is_some() && p.host_id.is_some());
        let theirs = theirs.filter(|p| person.is_none_or(|o| p.owner.as_deref() == Some(o)));
        let p = theirs.max_by_key(|p| rank(p))?;
        Some((p.session.clone()?, p.host_id.clone()?))
    }

    /// Hands a server-to-client request to `session`: the id the host will see.
    pub fn server_request(&mut self, session: &SessionId, up_id: Value) -> String {
        // Unique across every server's routes: one session hears several servers' requests, and
        // its table of what it owes is keyed by this id alone (two servers' requests under one
        // id would take each other's answers).
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let host_side_id = format!("mcp-gen-ui-{}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        self.server_requests.insert(host_side_id.clone(), (session.clone(), up_id));
        host_side_id
    }

    /// A URL elicitation went to `session`.
    pub fn elicitation_sent(&mut self, elicitation: &str, session: &SessionId) {
        remember(&mut self.elicitations, elicitation, session);
    }

    /// A host answered a request of the server's with a task of its own (`task`, its id):
    /// the id the server is to know it by.
    pub fn host_task_made(&mut self, task: &str, session: &SessionId) -> String {
        if self.host_tasks.len() >= MAX_ELICITATIONS {
            if let Some(oldest) = self.host_tasks.iter().min_by_key(|(_, (_, _, at))| *at).map(|(k, _)| k.clone()) {
                self.host_tasks.remove(&oldest);
            }
        }
        let ours = format!("mcp-gen-ui-host-task-{}", self.fresh_id());
        let theirs: String = task.chars().take(256).collect();
        self.host_tasks.insert(ours.clone(), (session.clone(), theirs, Instant::now()));
        ours
    }

    /// The host running the task the server knows as `task`, and the host's own id of it.
    pub fn host_task(&self, task: &str) -> Option<(SessionId, String)> {
        self.host_tasks.get(task).map(|(s, t, _)| (s.clone(), t.clone()))
    }

    /// Whose the completion of a URL elicitation is (once).
    pub fn elicitation_done(&mut self, elicitation: &str) -> Option<SessionId> {
        let key: String = elicitation.chars().take(256).collect();
        self.elicitations.remove(&key).map(|(s, _)| s)
    }

    pub fn server_request_done(&mut self, host_side_id: &str) {
        self.server_requests.remove(host_side_id);
    }

    /// The upstream withdrew a server-to-client request: which host, under which id.
    pub fn server_request_cancelled(&self, up_id: &Value) -> Option<(SessionId, String)> {
        self.server_requests.iter().find(|(_, (_, u))| u == up_id).map(|(k, (s, _))| (s.clone(), k.clone()))
    }

    /// A session left: its requests are no longer answered.
    pub fn drop_session(&mut self, session: &SessionId) {
        self.pending.retain(|_, p| p.session.as_ref() != Some(session));
        self.progress.retain(|_, r| &r.session != session);
        self.server_requests.retain(|_, (s, _)| s != session);
        self.elicitations.retain(|_, (s, _)| s != session);
        self.host_tasks.retain(|_, (s, _, _)| s != session);
    }

    /// The link is gone: every request in flight, to be answered with an error.
    pub fn fail_all(&mut self) -> Vec<Pending<T>> {
        self.progress.clear();
        self.server_requests.clear();
        self.pending.drain().map(|(_, p)| p).collect()
    }
}

#[cfg(test)]
mod tests;
