//! `ServerSupervisor`: supervises one upstream server. It connects (and reconnects with
//! backoff), runs the handshake (`handshake`), lists the tools and keeps the registry, holds
//! upstream subscriptions on behalf of hosts (`subscriptions`), and answers what the upstream
//! asks of hosts (`inbound`). The proxy path does not pass through it: it installs the link in
//! the shared [`Router`], whose route table host sessions use directly, and the link's reader
//! hands answers and progress straight to the router. Everything else the upstream says
//! comes here as a typed message.
//!
//! It runs on an arbiter of its own (see `wiring`), so the link's I/O tasks have a thread that
//! nothing else routes messages on.

mod handshake;
mod inbound;
mod subscriptions;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::{json, Value};

use handshake::list_all_tools;
pub use handshake::{may_ask, UPSTREAM_PROTOCOL_VERSION};

use crate::mcp::jsonrpc::{self, code};
use crate::messages::ToolsDiff;
use crate::messages::{HostEvent, RefreshTools, SessionId, Shutdown, Status, ToolsUpdated, UpstreamPort};
use crate::metrics::Metrics;
use crate::process::contain;
use crate::proxy::router::Router;
use crate::servers::catalog::Naming;
use crate::servers::listing::ListBounds;
use crate::servers::registry::Registry;
use crate::servers::tool_refresh;
use crate::upstream::{self, LinkEvent, LinkGuard, LinkLimits, UpstreamError, UpstreamSpec};

const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Connect failures of a lasting kind in a row before hosts are told to fix the configuration.
const LASTING_AFTER: u32 = 2;
/// An upstream that stayed up this long is healthy again: the next failure starts at 1 s.
const STABLE_AFTER: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum State {
    Connecting,
    Ready,
    Down,
    Stopped,
}

pub struct ServerSupervisor {
    /// The server's name (the servers file's key; `default` behind `--upstream`).
    name: Arc<str>,
    /// How its names and URIs reach hosts.
    naming: Naming,
    /// Where its tool list goes (the catalog hosts see is made from every server's).
    registry: Arc<Registry>,
    spec: UpstreamSpec,
    router: Arc<Router>,
    metrics: Arc<Metrics>,
    limits: LinkLimits,
    state: State,
    generation: u64,
    guard: Option<LinkGuard>,
    last_error: Option<String>,
    /// Connect failures in a row that retrying cannot fix (`ConnectError::lasting`).
    lasting_failures: u32,
    backoff: Duration,
    ready_since: Option<Instant>,
    restarts: u64,
    init: Option<Arc<Value>>,
    tools: crate::messages::ToolList,
    /// Upstream resource subscriptions held on behalf of hosts: uri -> the sessions holding it
    /// (a set, so a session leaving releases exactly what it held, however often it asked).
    subscriptions: HashMap<String, HashSet<SessionId>>,
    /// A 2026 upstream's `subscriptions/listen` the proxy holds (its id), carrying list changes
    /// and updates of the subscribed resources.
    listen: Option<Value>,
    self_addr: Option<Addr<ServerSupervisor>>,
    /// Told about every change to the tool list (the generation queue drops stale pages).
    listeners: Vec<Recipient<ToolsUpdated>>,
    /// `toolRefresh`: re-list the tools this often (None: only on list_changed and on request).
    refresh_interval: Option<Duration>,
    /// `upstream.maxTools`, `upstream.maxToolListBytes`: what its tool list may hold.
    list_bounds: ListBounds,
    /// Whose connection this is: the server's, or one person's (see [`Role`]).
    role: Role,
}

/// Whose connection a supervisor keeps.
#[derive(Debug, Clone)]
pub enum Role {
    /// The server's one connection: its tool list is the server's.
    Server,
    /// One person's connection to a per-principal server: the first such list is the server's;
    /// a later one that differs is reported, not mixed in (pages stay the team's).
    Principal(Arc<str>),
}

impl ServerSupervisor {
    pub fn new(spec: UpstreamSpec, naming: Naming, router: Arc<Router>, registry: Arc<Registry>, metrics: Arc<Metrics>) -> Self {
        ServerSupervisor {
            name: router.server().clone(),
            naming,
            registry,
            spec,
            router,
            metrics,
            limits: LinkLimits::default(),
            state: State::Connecting,
            generation: 0,
            guard: None,
            last_error: None,
            lasting_failures: 0,
            backoff: Duration::from_secs(1),
            ready_since: None,
            restarts: 0,
            init: None,
            tools: Arc::new(Vec::new()),
            subscriptions: HashMap::new(),
            listen: None,
            self_addr: None,
            listeners: Vec::new(),
            refresh_interval: None,
            list_bounds: ListBounds { max_items: 10_000, max_bytes: 16 << 20, fields: ("upstream.maxTools", "upstream.maxToolListBytes") },
            role: Role::Server,
        }
    }

    /// What its tool list may hold (`upstream.maxTools`, `upstream.maxToolListBytes`).
    pub fn with_list_bounds(mut self, max_tools: usize, max_bytes: usize) -> Self {
        self.list_bounds.max_items = max_tools;
        self.list_bounds.max_bytes = max_bytes;
        self
    }

    /// Someone to tell about tool list changes.
    /// This connection is one person's (`perPrincipal`).
    pub fn for_principal(mut self, principal: Arc<str>) -> Self {
        self.role = Role::Principal(principal);
        self
    }

    pub fn with_listener(mut self, r: Recipient<ToolsUpdated>) -> Self {
        self.listeners.push(r);
        self
    }

    /// `upstream.maxMessageBytes` (the request timeout lives in the router's table).
    pub fn with_limits(mut self, limits: LinkLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Periodic re-listing of the tools (`toolRefresh.enabled`).
    pub fn with_refresh_interval(mut self, every: Option<Duration>) -> Self {
        self.refresh_interval = every;
        self
    }

    /// The port sessions use to reach this actor.
    pub fn port(addr: &Addr<Self>) -> UpstreamPort {
        UpstreamPort {
            refresh: addr.clone().recipient(),
            unregister: addr.clone().recipient(),
            subscribe: addr.clone().recipient(),
            shutdown: addr.clone().recipient(),
        }
    }

    /// Tells the router (and so every session and the edge) what the upstream looks like now.
    pub(super) fn publish(&self) {
        self.router.publish(Status {
            ready: self.state == State::Ready,
            tools: self.tools.clone(),
            init: self.init.clone(),
            last_error: self.last_error.clone(),
            lasting: self.lasting_failures >= LASTING_AFTER,
            restarts: self.restarts,
            describe: self.spec.describe(),
        });
    }

    /// Installs a new tool list: the registry rebuilds the catalog hosts see (dropping the
    /// ready pages of changed and removed tools first), then hosts (when `announce`) and
    /// listeners hear what changed, by the names hosts know.
    pub(super) fn apply_tools(&mut self, tools: Vec<Value>, announce: bool) -> ToolsDiff {
        self.tools = crate::messages::tool_list(tools);
        let d = match &self.role {
            Role::Server => self.registry.set_tools(&self.name, self.tools.clone()),
            Role::Principal(who) => {
                let (differs, d) = self.registry.learn_tools(&self.name, self.tools.clone());
                if differs {
                    self.metrics.access.principal_tool_lists_differ.with_label_values(&[&self.name]).inc();
                    tracing::warn!(component = "principals", event = "tool_list_differs", server = %self.name, principal = %who, "{who}'s connection to {} lists other tools than the server's list; the server's list stays (pages are the team's)", self.name);
                }
                d
            }
        };
        self.publish();
        if d.is_change() {
            tracing::info!(component = "upstream", event = "tools_changed", server = %self.name, added = ?d.added, removed = ?d.removed, changed = ?d.changed, "upstream tool list changed");
            if announce {
                let names = d.added.iter().chain(&d.removed).chain(&d.changed).cloned().collect();
                let change = crate::audience::ToolsChange { server: self.name.clone(), names };
                self.router.broadcast(HostEvent::ToolsChanged(Some(Arc::new(change))));
            }
            let tools = Arc::new(self.registry.catalog().definitions());
            for l in &self.listeners {
                l.do_send(ToolsUpdated { diff: d.clone(), tools: tools.clone() });
            }
        }
        d
    }

    pub(super) fn connect(&mut self, ctx: &mut Context<Self>) {
        self.state = State::Connecting;
        self.generation += 1;
        let gen = self.generation;
        let spec = self.spec.clone();
        tracing::info!(component = "upstream", event = "connecting", upstream = %spec.describe(), "connecting to the upstream");
        let limits = self.limits;
        // Answers and progress are routed on the link's reader task itself (no hop).
        let router = self.router.clone();
        let naming = self.naming.clone();
        let fast: upstream::FastPath = Arc::new(move |msg| inbound::to_router(&router, &naming, msg, None));
        let fut = async move { upstream::connect(&spec, limits, Some(fast)).await };
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
            if gen != act.generation || act.state == State::Stopped {
                return;
            }
            match res {
                Ok(link) => {
                    let (tx, rx, guard) = link.split();
                    act.router.set_link(Some(tx));
                    act.guard = Some(guard);
                    // The reader side: answers and progress go straight to the router (no
                    // mailbox hop); the rest comes to this actor.
                    let (router, addr) = (act.router.clone(), ctx.address());
                    tokio::spawn(inbound::dispatch(rx, router, act.naming.clone(), addr, gen));
                    act.initialize(ctx, gen);
                }
                Err(UpstreamError::Connect(why)) if why.lasting() => act.lost_for_good(ctx, why.to_string()),
                Err(why) => {
                    act.lasting_failures = 0;
                    act.lost(ctx, why.to_string())
                }
            }
        }));
    }

    pub(super) fn became_ready(&mut self, init: Value, tools: Vec<Value>) {
        let name = init.pointer("/serverInfo/name").and_then(Value::as_str).unwrap_or("?").to_string();
        self.init = Some(Arc::new(init));
        self.state = State::Ready;
        self.ready_since = Some(Instant::now());
        self.last_error = None;
        self.lasting_failures = 0;
        // One server's first listing just fills the registry; after a restart, or when one of
        // several servers comes up, hosts hear of the change.
        let first = self.restarts == 0 && self.tools.is_empty();
        self.apply_tools(tools, !(first && self.naming == Naming::Bare));
        self.metrics.upstream_connected(&self.name).set(1);
        tracing::info!(component = "upstream", event = "ready", server = %name, tools = self.tools.len(), restarts = self.restarts, "upstream initialized and tools listed");
        // Subscriptions die with the old connection: take them out again.
        self.listen = None;
        if self.router.upstream_is_2026() {
            self.listen_upstream();
            return;
        }
        for uri in self.subscriptions.keys() {
            drop(self.router.internal_request("resources/subscribe", json!({"uri": uri})));
        }
    }

    /// The link could not be set up and trying again cannot help until the servers file (or
    /// the server) changes: hosts are told so rather than to retry shortly. Attempts go on at
    /// the longest backoff, so a server that comes back is found.
    /// A first such failure may be a server restarting behind a proxy (a 404 for a moment):
    /// only the same kind again in a row counts as lasting.
    fn lost_for_good(&mut self, ctx: &mut Context<Self>, why: String) {
        self.lasting_failures += 1;
        if self.lasting_failures < LASTING_AFTER {
            return self.lost(ctx, why);
        }
        self.backoff = MAX_BACKOFF;
        self.lost_with(ctx, why, "check this server's entry in the servers file (mcp-gen-ui keeps trying every 30 s)");
    }

    /// The link is gone or could not be set up: fail what is in flight, schedule a restart.
    pub(super) fn lost(&mut self, ctx: &mut Context<Self>, why: String) {
        self.lost_with(ctx, why, "mcp-gen-ui is restarting the upstream, retry shortly");
    }

    fn lost_with(&mut self, ctx: &mut Context<Self>, why: String, advice: &str) {
        if self.state == State::Stopped {
            return;
        }
        let lasting = self.lasting_failures >= LASTING_AFTER;
        tracing::warn!(component = "upstream", event = "lost", error = %why, lasting, retry_in_ms = self.backoff.as_millis() as u64, "upstream connection lost");
        self.generation += 1;
        self.guard = None;
        self.state = State::Down;
        self.metrics.upstream_connected(&self.name).set(0);
        self.last_error = Some(why.clone());
        self.publish();
        let whose = match &self.naming {
            Naming::Bare => String::new(),
            Naming::Prefixed(_) => format!("server {}: ", self.name),
        };
        self.router.fail_all(&format!("{whose}{why}; {advice}"));
        if self.ready_since.is_some_and(|t| t.elapsed() >= STABLE_AFTER) {
            self.backoff = Duration::from_secs(1);
        }
        self.ready_since = None;
        let delay = self.backoff;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        ctx.run_later(delay, |act, ctx| {
            if act.state == State::Down {
                act.restarts += 1;
                act.metrics.upstream_restarts(&act.name).inc();
                act.connect(ctx);
            }
        });
    }
}

impl Actor for ServerSupervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.self_addr = Some(ctx.address());
        // A supervisor restarts an actor that stopped; after Shutdown there is nothing to start.
        if self.state == State::Stopped {
            return;
        }
        self.publish();
        self.connect(ctx);
        // Deadlines are checked a few times per timeout (at most every 250 ms).
        let tick = (self.router.timeout() / 4).clamp(Duration::from_millis(20), Duration::from_millis(250));
        ctx.run_interval(tick, |act, _| act.router.expire());
        if let Some(every) = self.refresh_interval {
            let addr = ctx.address();
            let refresher = tool_refresh::periodic(every, move || {
                let addr = addr.clone();
                async move {
                    match addr.send(RefreshTools).await {
                        Ok(Ok(_)) => true,
                        Ok(Err(why)) => {
                            tracing::warn!(component = "upstream", event = "periodic_refresh_failed", error = %why, "periodic tool refresh failed; backing off");
                            false
                        }
                        Err(_) => false,
                    }
                }
            });
            ctx.spawn(refresher.into_actor(self));
        }
    }
}

impl Supervised for ServerSupervisor {
    fn restarting(&mut self, _ctx: &mut Self::Context) {
        // A fresh start: the old link goes (its guard ends it) and what waited on it fails.
        if self.state == State::Stopped {
            return; // stopped on purpose (Shutdown): not a failure
        }
        self.generation += 1;
        self.guard = None;
        self.state = State::Connecting;
        self.router.fail_all("mcp-gen-ui restarted its upstream connection; retry shortly");
        contain::note_restart("upstream_connection", &self.metrics);
    }
}

impl Handler<RefreshTools> for ServerSupervisor {
    type Result = ResponseActFuture<Self, Result<ToolsDiff, UpstreamError>>;

    fn handle(&mut self, _: RefreshTools, _ctx: &mut Self::Context) -> Self::Result {
        let ready = self.state == State::Ready;
        let why = self.last_error.clone().unwrap_or_else(|| "the upstream is still starting".into());
        let router = self.router.clone();
        let gen = self.generation;
        let bounds = self.list_bounds;
        Box::pin(
            async move {
                if !ready {
                    return Err(UpstreamError::NotReady(why));
                }
                list_all_tools(&router, bounds).await
            }
            .into_actor(self)
            .map(move |res, act, _| {
                let tools = res?;
                if gen != act.generation {
                    return Err(UpstreamError::Restarted("refresh"));
                }
                Ok(act.apply_tools(tools, true))
            }),
        )
    }
}

/// Something the link's reader passes on (see `inbound::dispatch`); stale after a reconnect.
struct LinkMsg {
    gen: u64,
    ev: LinkEvent,
}

impl Message for LinkMsg {
    type Result = ();
}

impl Handler<LinkMsg> for ServerSupervisor {
    type Result = ();

    fn handle(&mut self, item: LinkMsg, ctx: &mut Self::Context) {
        if item.gen != self.generation {
            return;
        }
        match item.ev {
            LinkEvent::Message(m) | LinkEvent::Passed(m) => self.on_message(ctx, m, None),
            LinkEvent::OnStream { msg, request } => self.on_message(ctx, msg, Some(request)),
            LinkEvent::Bad(why) => {
                self.metrics.upstream_bad_frames(&self.name).inc();
                tracing::warn!(component = "upstream", event = "bad_frame", error = %why, "skipped something the upstream sent that is not JSON-RPC");
            }
            LinkEvent::Oversized { id, bytes } => {
                self.metrics.upstream_bad_frames(&self.name).inc();
                let limit = self.limits.max_message_bytes;
                match id {
                    // Goes the way the real answer would have: mapped back to its host.
                    Some(id) => {
                        self.router.on_response(jsonrpc::error(id, code::UPSTREAM_UNAVAILABLE, upstream::oversized_message(bytes, limit)))
                    }
                    None => tracing::warn!(
                        component = "upstream",
                        event = "oversized_unmatched",
                        bytes,
                        limit,
                        "an oversized upstream message answers no request that can be read; it fails no one"
                    ),
                }
            }
            LinkEvent::Closed(why) => self.lost(ctx, why),
        }
    }
}

impl Handler<Shutdown> for ServerSupervisor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Shutdown, ctx: &mut Self::Context) -> Self::Result {
        self.state = State::Stopped;
        self.generation += 1;
        self.router.set_link(None);
        self.metrics.upstream_connected(&self.name).set(0);
        let guard = self.guard.take();
        ctx.stop();
        tracing::info!(component = "upstream", event = "shutdown", "closing the upstream connection");
        // The child gets its stdin closed and a grace period, then its process group is killed.
        Box::pin(async move {
            if let Some(g) = guard {
                g.close(Duration::from_secs(2)).await;
            }
        })
    }
}
