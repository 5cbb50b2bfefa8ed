//! `HostSession`: one actor per connected host. It owns what the host negotiated (protocol
//! version, capabilities, whether it renders MCP Apps), its resource subscriptions, where its
//! messages go (per-request streams and the session stream), and the server-to-client requests
//! it still owes an answer to. Edges hand it raw JSON-RPC; it answers what the proxy adds and
//! forwards the rest upstream through the shared router (`proxy::router`).
//!
//! The actor is split by job: `dispatch` (what each method does), `forward` (the way to the
//! upstream), `delivery` (streams, backlog, answers), `ui_reads` (`ui://` reads and
//! subscriptions), `ui_tools` (the `_ui_*` tools: definitions, what they do, the calls), `results` (result shaping),
//! `server_requests` (sampling, elicitation, roots for the host), and `stateless` (the MCP
//! 2026-07-28 era, one request per session).

pub mod access;
mod approval_gate;
mod delivery;
pub mod deps;
pub mod discovery;
mod discovery_calls;
mod dispatch;
mod forward;
mod hearing;
pub mod lists;
pub mod outlet;
pub mod plan;
mod quota_gate;
mod recording;
mod results;
mod routing;
mod server_requests;
mod spans;
mod stateless;
pub mod table;
mod task_watch;
mod tasks;
mod tools_cursor;
mod ui_reads;
pub mod ui_tools;

pub use crate::who::ANONYMOUS;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::mcp::{jsonrpc, ui_meta};
pub use crate::messages::{sink_channel, Sink, STREAM_BOUND};
use crate::messages::{Close, SessionFlags, SessionId, SessionPort, SessionPorts, SessionRef};
use crate::metrics::Metrics;
use crate::session::deps::SessionDeps;
use crate::session::outlet::Outlet;
pub use stateless::{session_for as stateless_session_for, StatelessTables};
pub use ui_reads::{ready_page, EdgeReader, ReadIds};

/// Protocol revisions this proxy speaks to hosts, newest first.
pub const HOST_PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    Sse,
    StreamableHttp,
}

impl Transport {
    pub fn label(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Sse => "sse",
            Transport::StreamableHttp => "streamable-http",
        }
    }
}

/// Which protocol era the session serves. What only the stateless era has lives in its
/// variant, so code for that era reaches it by matching, never by unwrapping.
enum Era {
    /// The session era (2024-11-05 to 2025-11-25): initialize, a session stream, a backlog.
    Session,
    /// One MCP 2026-07-28 request (see `stateless`).
    Stateless(Box<stateless::Call>),
}

#[derive(Debug, Clone)]
struct Negotiated {
    /// How pages are described to the host (None: it gets no UI).
    dialect: Option<ui_meta::Dialect>,
    /// The host's sampling, elicitation and roots capabilities (`revision_2026::answerable`):
    /// all that server requests are checked against.
    client_caps: Value,
    /// The protocol version agreed at initialize (for the spans).
    version: &'static str,
    /// It declared `capabilities.tasks`: it calls task-only tools as tasks itself (else the
    /// service runs them as tasks for it).
    tasks: bool,
    /// It runs a server's sampling (`.0`) or elicitation (`.1`) as a task when asked to
    /// (`capabilities.tasks.requests`).
    task_requests: (bool, bool),
}

struct InFlight {
    method: &'static str,
    sink: Option<Outlet>,
    request_id: String,
    started: Instant,
    /// The connection it went to (its cancellation goes there too): the server's, or with a
    /// per-principal server this person's.
    route: Option<Arc<crate::proxy::router::Router>>,
    /// Its server span (ended with the answer); the parent of the work it starts.
    span: crate::trace::Span,
    /// Its line in the audit trail, written with the answer (calls, page reads, `_ui_*`).
    audit: Option<crate::audit::Pending>,
    /// The task the service runs this call as (the bridge), while it waits on it.
    task: Option<tasks::Running>,
    /// A tool call's own series (`tool_calls_total`), once planned.
    tool: Option<crate::metrics::ToolSeries>,
    /// Refused by a quota (`limit` rule): its line and its series say `limited`.
    limited: bool,
}

pub struct HostSession {
    id: SessionId,
    transport: Transport,
    era: Era,
    /// Shared by every session (one Arc, not a copy of each port apiece).
    deps: Arc<SessionDeps>,
    metrics: Arc<Metrics>,
    negotiated: Option<Negotiated>,
    subscriptions: HashSet<String>,
    ui_subscriptions: HashSet<String>,
    default_sink: Option<Outlet>,
    /// Request streams whose answer went out while part of a burst still waited: kept until
    /// drained, then dropped (which ends them).
    draining: Vec<Outlet>,
    /// A `PumpStreams` is on its way.
    pump_scheduled: bool,
    self_addr: Option<Addr<HostSession>>,
    backlog: VecDeque<Value>,
    in_flight: HashMap<String, InFlight>,
    owed: HashMap<String, oneshot::Sender<Value>>,
    last_seen: Instant,
    /// Who opened the session (the edge's principal; `anonymous` without auth): its LLM
    /// allowance is the principal's (`who.key`), shared by all its sessions; an admin's
    /// refinements are everyone's with `refinements.scope: principal`; rules and the audit
    /// trail name it.
    who: Arc<crate::who::Who>,
    /// The profile it connected to (`/mcp/<profile>`, `--profile`); None: every tool.
    profile: Option<Arc<str>>,
    /// The log level the host asked for with `logging/setLevel` (None: it hears no server's
    /// log lines but those on its own requests' streams).
    log_level: Option<&'static str>,
    /// The id as logs show it: a short hash, never the id itself.
    log_id: String,
    /// What the edge may know without asking (see `SessionFlags`).
    flags: Arc<SessionFlags>,
}

impl HostSession {
    pub fn new(id: SessionId, transport: Transport, deps: Arc<SessionDeps>) -> Self {
        HostSession {
            transport,
            era: Era::Session,
            metrics: deps.metrics.clone(),
            deps,
            negotiated: None,
            subscriptions: HashSet::new(),
            ui_subscriptions: HashSet::new(),
            default_sink: None,
            draining: Vec::new(),
            pump_scheduled: false,
            self_addr: None,
            backlog: VecDeque::new(),
            in_flight: HashMap::new(),
            owed: HashMap::new(),
            last_seen: Instant::now(),
            who: crate::who::Who::anonymous(),
            profile: None,
            log_level: None,
            log_id: table::log_name(&id),
            flags: Arc::default(),
            id,
        }
    }

    /// The session belongs to `who` (its allowances are that principal's).
    pub fn owned_by(mut self, who: Arc<crate::who::Who>) -> Self {
        self.who = who;
        self
    }

    /// The session serves the profile `name` (one the edge found).
    pub fn in_profile(mut self, name: Option<Arc<str>>) -> Self {
        self.profile = name;
        self
    }

    /// The profile this session serves as it is now; Err: it went in a reload (the error to
    /// answer with says so).
    fn profile_now(&self) -> Result<Option<Arc<crate::servers::profiles::Profile>>, ProfileGone> {
        let Some(name) = &self.profile else { return Ok(None) };
        match self.deps.profiles.get(name) {
            Some(p) => Ok(Some(p)),
            None => Err(ProfileGone(name.clone())),
        }
    }

    /// What the rules allow this session's principal.
    fn access(&self) -> access::Access {
        access::Access { policies: self.deps.policies.clone(), who: self.who.clone(), transport: self.transport.label() }
    }

    /// `refinements.scope: principal` and not an admin: the principal whose own refinements
    /// shape this session's pages. None: the shared pages are this session's.
    fn own(&self) -> Option<Arc<str>> {
        (self.deps.personal_scope && !self.who.admin).then(|| self.who.key.clone())
    }

    /// Starts the session on the current arbiter (the HTTP worker serving it) and answers how
    /// an edge reaches it.
    pub fn start_session(self) -> SessionRef {
        let flags = self.flags.clone();
        let profile = self.profile.clone();
        let addr = self.start();
        SessionRef::new(SessionPorts {
            incoming: addr.clone().recipient(),
            attach: addr.clone().recipient(),
            close: addr.recipient(),
            flags,
            profile,
        })
    }

    /// The stateless call this session serves, if it serves one.
    fn call(&self) -> Option<&stateless::Call> {
        match &self.era {
            Era::Stateless(c) => Some(c),
            Era::Session => None,
        }
    }

    fn call_mut(&mut self) -> Option<&mut stateless::Call> {
        match &mut self.era {
            Era::Stateless(c) => Some(c),
            Era::Session => None,
        }
    }

    /// The `host_sessions` label: the transport, or "stateless" for a 2026 call.
    fn label(&self) -> &'static str {
        match self.era {
            Era::Stateless(_) => "stateless",
            Era::Session => self.transport.label(),
        }
    }

    fn ui(&self) -> bool {
        self.dialect().is_some()
    }

    fn dialect(&self) -> Option<ui_meta::Dialect> {
        self.negotiated.as_ref().and_then(|n| n.dialect)
    }

    /// Session era: reaps a legacy SSE session whose stream is gone, or any session idle past
    /// the limit with nothing in flight and no stream open.
    fn reap(&mut self, ctx: &mut Context<Self>) {
        // Server requests the host never answered: their waiter timed out and went away.
        self.owed.retain(|_, tx| !tx.is_closed());
        let stream_gone = self.transport == Transport::Sse && self.default_sink.as_ref().is_none_or(|s| s.is_closed());
        let stream_open = self.default_sink.as_ref().is_some_and(|s| !s.is_closed());
        let idle = self.last_seen.elapsed() > self.deps.idle_limit
            && self.flags.edge_idle() > self.deps.idle_limit
            && self.in_flight.is_empty()
            && !stream_open;
        if stream_gone || idle {
            tracing::info!(component = "host_session", event = "reaped", session = %self.log_id, stream_gone, idle, "closing host session");
            ctx.stop();
        }
    }
}

impl Actor for HostSession {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.metrics.host_sessions.with_label_values(&[self.label()]).inc();
        let addr = ctx.address();
        self.self_addr = Some(addr.clone());
        let port = SessionPort { event: addr.clone().recipient(), request: addr.recipient() };
        self.deps.fleet.register(self.id.clone(), port, self.who.key.clone());
        match self.era {
            // One call: checked often, since a host that hangs up means "cancel".
            Era::Stateless(_) => drop(ctx.run_interval(Duration::from_secs(1), |act, ctx| act.stateless_reap(ctx))),
            Era::Session => {
                tracing::info!(component = "host_session", event = "opened", session = %self.log_id, transport = self.transport.label(), "host session opened");
                self.audit_session(crate::audit::Event::SessionOpen);
                ctx.run_interval(Duration::from_secs(5), |act, ctx| act.reap(ctx));
            }
        }
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.metrics.host_sessions.with_label_values(&[self.label()]).dec();
        self.deps.fleet.unregister(&self.id);
        if let Some(t) = &self.deps.sessions {
            t.remove(&self.id);
        }
        match &mut self.era {
            Era::Stateless(call) => call.leave_parked(),
            Era::Session => tracing::info!(component = "host_session", event = "closed", session = %self.log_id, "host session closed"),
        }
        self.audit_session(crate::audit::Event::SessionClose);
        // Calls still in flight end with the session: their lines say `abandoned`.
        self.in_flight.clear();
    }
}

impl Handler<Close> for HostSession {
    type Result = ();

    fn handle(&mut self, _: Close, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

/// The profile a session serves went in a reload; every request of the session is answered so.
#[derive(Debug, thiserror::Error)]
#[error("the profile {0:?} no longer exists (the config file changed); connect to another profile")]
struct ProfileGone(Arc<str>);

impl ProfileGone {
    /// The answer to a request: not the request's fault, but no longer one this session can serve.
    fn answer(&self, id: Value) -> Value {
        jsonrpc::error(id, jsonrpc::code::INVALID_REQUEST, self.to_string())
    }
}

#[cfg(test)]
mod tests;
