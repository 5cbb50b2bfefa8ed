//! Starts, stops and reloads the upstream servers: each gets a router and a supervisor (on one
//! of a few arbiters of their own, away from the HTTP workers and the generation work), a place
//! in the registry (its tools in the catalog) and in the fleet (where sessions find it).
//!
//! The servers file is read again on SIGHUP and when it changes (checked every second, acted
//! on once it has been still for half a second): added servers start, removed ones stop
//! (their calls in flight are answered with an error naming the reason), changed ones restart,
//! and a change only to how tools are shown is applied without a restart. Hosts stay
//! connected and hear `tools/list_changed`. A file that does not parse keeps the running set.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr, Arbiter, Recipient, Supervisor};
use mcp_gen_ui_actors::audit::{Audit, Entry, Event};
use mcp_gen_ui_actors::messages::{HostEvent, Shutdown, ToolsDiff, ToolsUpdated, UpstreamPort};
use mcp_gen_ui_actors::metrics::Metrics;
use mcp_gen_ui_actors::proxy::router::{Hearers, Router, Times};
use mcp_gen_ui_actors::servers::catalog::Naming;
use mcp_gen_ui_actors::servers::fleet::{Fleet, Server};
use mcp_gen_ui_actors::servers::principals::{PrincipalPool, Total};
use mcp_gen_ui_actors::servers::supervisor::{may_ask, ServerSupervisor};
use mcp_gen_ui_actors::upstream::LinkLimits;
use tokio::sync::Mutex;

use crate::config::settings::servers::{self, Defaults, ServerSettings};

/// The running servers and what starting one needs.
pub struct ServerSet {
    fleet: Arc<Fleet>,
    metrics: Arc<Metrics>,
    bare: bool,
    /// Told about every change to the tool list (the generation queue drops stale pages; the
    /// warmer makes new ones).
    listeners: Vec<Recipient<ToolsUpdated>>,
    refresh: Option<Duration>,
    arbiters: Vec<Arbiter>,
    next_arbiter: usize,
    running: Vec<Running>,
    /// Each person's credentials and the cap over every per-principal server.
    principals: Principals,
    /// The edge tells several people apart: a shared server's message that names no owner is
    /// no one's (`Hearers::People`).
    several: bool,
}

/// What per-principal servers share.
#[derive(Clone)]
pub struct Principals {
    pub secrets: Arc<crate::principals::Secrets>,
    pub total: Arc<Total>,
    pub idle: Duration,
}

struct Running {
    settings: ServerSettings,
    /// The server's supervisor; None for a per-principal server (each person's connection
    /// has its own, in the pool).
    addr: Option<Addr<ServerSupervisor>>,
}

impl ServerSet {
    pub fn new(
        fleet: Arc<Fleet>,
        metrics: Arc<Metrics>,
        bare: bool,
        listeners: Vec<Recipient<ToolsUpdated>>,
        refresh: Option<Duration>,
        principals: Principals,
        several: bool,
    ) -> Self {
        let (arbiters, running) = (Vec::new(), Vec::new());
        ServerSet { fleet, metrics, bare, listeners, refresh, arbiters, next_arbiter: 0, running, principals, several }
    }

    /// Starts every server (at start: a few arbiters are made for them).
    pub fn start_all(&mut self, list: Vec<ServerSettings>) {
        let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        let n = list.len().clamp(1, threads);
        self.arbiters = (0..n).map(|_| Arbiter::new()).collect();
        for (i, s) in list.into_iter().enumerate() {
            self.start(s, i);
        }
    }

    fn naming(&self, s: &ServerSettings) -> Naming {
        if self.bare {
            Naming::Bare
        } else {
            Naming::Prefixed(Arc::from(s.prefix.as_str()))
        }
    }

    fn next_arbiter(&mut self) -> actix::ArbiterHandle {
        let arbiter = self.arbiters[self.next_arbiter % self.arbiters.len()].handle();
        self.next_arbiter += 1;
        arbiter
    }

    fn start(&mut self, s: ServerSettings, position: usize) {
        // Named here: the supervisor's own lines say the transport and program only.
        tracing::info!(component = "servers", event = "server_starting", server = %s.name, upstream = %s.spec.describe(), "starting the server {} ({})", s.name, s.spec.describe());
        if s.per_principal.is_some() {
            return self.start_per_principal(s, position);
        }
        let name: Arc<str> = Arc::from(s.name.as_str());
        let naming = self.naming(&s);
        self.metrics.preinit_server(&s.name);
        let prefix = match &naming {
            Naming::Prefixed(p) => Some(p.clone()),
            Naming::Bare => None,
        };
        let hearers = Hearers::of(None, self.several);
        if !may_ask(&s.spec, &hearers) {
            tracing::info!(component = "servers", event = "not_invited_to_ask", server = %s.name, "server {} is shared by several people over {}, which cannot say whose a request is: it is not offered sampling, elicitation or roots (mark it perPrincipal to let it ask its callers)", s.name, s.spec.transport());
        }
        let router = Router::new(
            name.clone(),
            prefix,
            Times::new(s.request_timeout),
            s.spec.describe(),
            self.fleet.hosts().clone(),
            self.metrics.clone(),
            hearers,
        );
        let registry = self.fleet.registry().clone();
        registry.add_server(name.clone(), naming.clone(), Arc::new(s.curation.clone()), position);
        let mut supervisor = ServerSupervisor::new(s.spec.clone(), naming.clone(), router.clone(), registry, self.metrics.clone());
        for l in &self.listeners {
            supervisor = supervisor.with_listener(l.clone());
        }
        let supervisor = supervisor
            .with_limits(LinkLimits { max_message_bytes: s.max_message_bytes })
            .with_list_bounds(s.max_tools, s.max_tool_list_bytes)
            .with_refresh_interval(self.refresh);
        let addr = Supervisor::start_in_arbiter(&self.next_arbiter(), move |_| supervisor);
        let port = ServerSupervisor::port(&addr);
        let transport = s.spec.transport();
        self.fleet.insert(Arc::new(Server { name, naming, router, port, required: s.required, transport, pool: None }));
        self.running.push(Running { settings: s, addr: Some(addr) });
    }

    /// A server that acts as each person: no connection of its own, a pool of each person's,
    /// started on first use. It stands ready (on demand); its tools come with the first.
    fn start_per_principal(&mut self, s: ServerSettings, position: usize) {
        let name: Arc<str> = Arc::from(s.name.as_str());
        let naming = self.naming(&s);
        self.metrics.preinit_server(&s.name);
        let prefix = match &naming {
            Naming::Prefixed(p) => Some(p.clone()),
            Naming::Bare => None,
        };
        let describe = format!("per principal: {}", s.spec.describe());
        // No connection of its own: nothing it says is heard but through each person's.
        let router = Router::new(
            name.clone(),
            prefix,
            Times::new(s.request_timeout),
            describe.clone(),
            self.fleet.hosts().clone(),
            self.metrics.clone(),
            Hearers::of(None, self.several),
        );
        router.publish(mcp_gen_ui_actors::messages::Status { ready: true, describe, ..Default::default() });
        let registry = self.fleet.registry().clone();
        registry.add_server(name.clone(), naming.clone(), Arc::new(s.curation.clone()), position);
        let starter = crate::principals::Starter {
            settings: s.clone(),
            naming: naming.clone(),
            hosts: self.fleet.hosts().clone(),
            registry,
            metrics: self.metrics.clone(),
            listeners: self.listeners.clone(),
            arbiter: self.next_arbiter(),
            secrets: self.principals.secrets.clone(),
        };
        let max = s.per_principal.as_ref().map_or(1, |p| p.max);
        let pool =
            PrincipalPool::new(name.clone(), max, self.principals.idle, self.principals.total.clone(), Arc::new(starter), &self.metrics);
        let on_demand = crate::principals::OnDemand { server: name.clone() }.start();
        let port = UpstreamPort {
            refresh: on_demand.clone().recipient(),
            unregister: on_demand.clone().recipient(),
            subscribe: on_demand.clone().recipient(),
            shutdown: on_demand.recipient(),
        };
        let transport = s.spec.transport();
        self.fleet.insert(Arc::new(Server { name, naming, router, port, required: s.required, transport, pool: Some(Arc::new(pool)) }));
        self.running.push(Running { settings: s, addr: None });
    }

    /// Stops a server: its calls in flight are answered with `why`, its tools leave the list.
    async fn stop(&mut self, name: &str, why: &str) {
        let Some(i) = self.running.iter().position(|r| r.settings.name == name) else { return };
        let r = self.running.remove(i);
        let diff = self.fleet.registry().remove_server(name);
        if let Some(server) = self.fleet.remove(name) {
            server.router.fail_all(why);
            if let Some(pool) = &server.pool {
                futures::future::join_all(pool.take_all(why).iter().map(|s| s.send(Shutdown))).await;
            }
        }
        self.announce(diff);
        if let Some(addr) = r.addr {
            let _ = addr.send(Shutdown).await;
        }
        self.metrics.forget_server(name);
    }

    /// Hosts and listeners hear of a change to the list.
    fn announce(&self, diff: ToolsDiff) {
        if diff.is_change() {
            self.fleet.broadcast(HostEvent::ToolsChanged(None));
            let tools = Arc::new(self.fleet.catalog().definitions());
            for l in &self.listeners {
                l.do_send(ToolsUpdated { diff: diff.clone(), tools: tools.clone() });
            }
        }
    }

    /// Applies a new list of servers (a reload).
    pub async fn apply(&mut self, new: Vec<ServerSettings>) {
        let gone: Vec<String> =
            self.running.iter().filter(|r| !new.iter().any(|n| n.name == r.settings.name)).map(|r| r.settings.name.clone()).collect();
        for name in gone {
            tracing::info!(component = "servers", event = "server_removed", server = %name, "a server left the servers file: stopping it");
            self.stop(&name, &format!("the server {name} was removed from the servers file")).await;
        }
        for (position, s) in new.into_iter().enumerate() {
            let old = self.running.iter().find(|r| r.settings.name == s.name).map(|r| r.settings.clone());
            match old {
                None => {
                    tracing::info!(component = "servers", event = "server_added", server = %s.name, upstream = %s.spec.describe(), "a server joined the servers file: starting it");
                    self.start(s, position);
                }
                Some(old) if old.needs_restart(&s) => {
                    tracing::info!(component = "servers", event = "server_changed", server = %s.name, "a server changed in the servers file: restarting it");
                    self.stop(&s.name, &format!("the server {} changed in the servers file and is restarting; retry shortly", s.name))
                        .await;
                    self.start(s, position);
                }
                Some(old) if old != s => {
                    // Only how its tools are shown: no restart.
                    let diff = self.fleet.registry().add_server(
                        Arc::from(s.name.as_str()),
                        self.naming(&s),
                        Arc::new(s.curation.clone()),
                        position,
                    );
                    if let Some(r) = self.running.iter_mut().find(|r| r.settings.name == s.name) {
                        r.settings = s;
                    }
                    self.announce(diff);
                }
                Some(_) => {}
            }
        }
    }

    /// Stops every server (shutdown): children get their stdin closed, then are killed.
    pub async fn shutdown(&mut self) {
        let all: Vec<Addr<ServerSupervisor>> = self.running.drain(..).filter_map(|r| r.addr).collect();
        let people: Vec<Recipient<Shutdown>> =
            self.fleet.servers().iter().filter_map(|s| s.pool.as_ref()).flat_map(|p| p.take_all("the service is stopping")).collect();
        futures::future::join_all(people.iter().map(|s| s.send(Shutdown))).await;
        futures::future::join_all(all.iter().map(|a| a.send(Shutdown))).await;
    }
}

/// Reads the servers file again on SIGHUP and when it changes, for as long as the service runs.
pub fn watch(set: Arc<Mutex<ServerSet>>, file: PathBuf, named_by: &'static str, defaults: Defaults, audit: Audit) -> std::io::Result<()> {
    let path = file.clone();
    crate::reload::watch(file, move |why| {
        let (set, file, audit) = (set.clone(), path.clone(), audit.clone());
        actix_web::rt::spawn(async move {
            let env = |k: &str| std::env::var(k).ok();
            match servers::read_file(&file, named_by, &env, defaults) {
                Ok(servers::Read { servers: list, warnings, disabled, .. }) if !list.is_empty() => {
                    for w in warnings {
                        tracing::warn!(component = "config", event = "warning", "{w}");
                    }
                    if !disabled.is_empty() {
                        tracing::info!(component = "servers", event = "disabled", servers = %disabled.join(", "), "disabled in the servers file, not started: {}", disabled.join(", "));
                    }
                    tracing::info!(
                        component = "servers",
                        event = "servers_reloaded",
                        reason = why,
                        servers = list.len(),
                        "reloading the servers file"
                    );
                    audit.record(Entry::system(Event::ConfigReload, format!("servers file ({why}): {} servers", list.len())));
                    set.lock().await.apply(list).await;
                }
                Ok(_) => {
                    tracing::error!(
                        component = "servers",
                        event = "servers_reload_failed",
                        reason = why,
                        "the servers file lists no server that is not disabled: the running servers stay"
                    );
                    audit.record(failed_reload(why, "it lists no server that is not disabled"));
                }
                Err(e) => {
                    tracing::error!(component = "servers", event = "servers_reload_failed", reason = why, error = %e, "the servers file was not reloaded (the running servers stay): {e}");
                    audit.record(failed_reload(why, &e.to_string()));
                }
            }
        });
    })
}

fn failed_reload(why: &str, error: &str) -> Entry {
    let mut e = Entry::system(Event::ConfigReload, format!("servers file ({why}) not reloaded: {error}"));
    e.outcome = "error";
    e
}
