//! Servers that act as each person (`perPrincipal` in the servers file): one upstream
//! connection or process per principal, started on first use with that person's credentials,
//! stopped after an idle time, capped per server and in all. [`PrincipalPool`] keeps them; the
//! service shell starts them ([`StartPrincipal`]: it knows secrets, arbiters and programs). The
//! server's tool list is the server's: learned from the first connection (see the supervisor's
//! `Role`), so pages are written once for the team.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::Recipient;
use prometheus::{IntCounterVec, IntGaugeVec};

use crate::messages::Shutdown;
use crate::proxy::router::Router;
use crate::who::Who;

/// Why a principal cannot have its own connection now. Each says what to do, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrincipalRefusal {
    #[error(
        "server {server} acts as each person and needs to know who is calling: this endpoint has no authentication (give tokens or OAuth)"
    )]
    Anonymous { server: Arc<str> },
    #[error("server {server} needs {} for {principal}: add {} to {principal}'s entry in the principal secrets file (--principal-secrets); no one else's credentials are used", names.join(", "), if names.len() == 1 { "it" } else { "them" })]
    MissingSecrets { server: Arc<str>, principal: Arc<str>, names: Vec<String> },
    #[error("server {server} gets a token exchanged for the caller's OAuth access token: {principal} did not sign in with one (a static token cannot be exchanged)")]
    NeedsAccessToken { server: Arc<str>, principal: Arc<str> },
    #[error("server {server} already runs {max} connections, one per person (perPrincipalMax): try again when one is idle")]
    ServerFull { server: Arc<str>, max: usize },
    #[error("the per-person servers already run {max} connections in all (principalSecrets.maxProcesses): try again when one is idle")]
    AllFull { max: usize },
    #[error("server {server} could not be started for {principal}: {why}")]
    Failed { server: Arc<str>, principal: Arc<str>, why: String },
}

impl PrincipalRefusal {
    /// The label of `mcp_gen_ui_principal_starts_total{outcome}`.
    pub fn outcome(&self) -> &'static str {
        match self {
            PrincipalRefusal::Anonymous { .. } => "anonymous",
            PrincipalRefusal::MissingSecrets { .. } => "missing_secret",
            PrincipalRefusal::NeedsAccessToken { .. } => "no_access_token",
            PrincipalRefusal::ServerFull { .. } => "server_full",
            PrincipalRefusal::AllFull { .. } => "all_full",
            PrincipalRefusal::Failed { .. } => "failed",
        }
    }
}

/// A principal's own connection, started: its router (where its calls go) and how to stop it.
pub struct Started {
    pub router: Arc<Router>,
    pub stop: Recipient<Shutdown>,
    /// A remote server reached with the person's exchanged token: told each token they come
    /// with, so the current one is exchanged (None: no token exchange).
    pub exchanged: Option<Arc<crate::upstream::token_exchange::Exchanged>>,
}

/// Starts a principal's connection to one server (the shell's: secrets, programs, arbiters).
pub trait StartPrincipal: Send + Sync {
    fn start(&self, who: &Who) -> Result<Started, PrincipalRefusal>;
}

/// How many per-principal connections run in all, against `principalSecrets.maxProcesses`.
#[derive(Debug)]
pub struct Total {
    running: AtomicUsize,
    pub max: usize,
}

impl Total {
    pub fn new(max: usize) -> Arc<Total> {
        Arc::new(Total { running: AtomicUsize::new(0), max })
    }

    pub fn running(&self) -> usize {
        self.running.load(Ordering::Acquire)
    }
}

struct Slot {
    started: Started,
    name: Arc<str>,
    source: &'static str,
    last_used: Instant,
}

/// Principal names as a bounded set of label values: the first `MAX_LABELS` seen are
/// themselves, later ones `_other` (a metric's series stay bounded whoever signs in).
const MAX_LABELS: usize = 100;

pub struct PrincipalPool {
    server: Arc<str>,
    max: usize,
    idle: Duration,
    total: Arc<Total>,
    start: Arc<dyn StartPrincipal>,
    slots: Mutex<HashMap<Arc<str>, Slot>>,
    labels: Mutex<Vec<Arc<str>>>,
    connections: IntGaugeVec,
    starts: IntCounterVec,
}

impl PrincipalPool {
    pub fn new(
        server: Arc<str>,
        max: usize,
        idle: Duration,
        total: Arc<Total>,
        start: Arc<dyn StartPrincipal>,
        metrics: &crate::metrics::Metrics,
    ) -> PrincipalPool {
        PrincipalPool {
            server,
            max: max.max(1),
            idle,
            total,
            start,
            slots: Mutex::new(HashMap::new()),
            labels: Mutex::new(Vec::new()),
            connections: metrics.access.principal_connections.clone(),
            starts: metrics.access.principal_starts.clone(),
        }
    }

    fn label(&self, name: &Arc<str>) -> Arc<str> {
        let mut labels = self.labels.lock().unwrap_or_else(|e| e.into_inner());
        if labels.contains(name) {
            return name.clone();
        }
        if labels.len() < MAX_LABELS {
            labels.push(name.clone());
            return name.clone();
        }
        Arc::from("_other")
    }

    /// The router of `who`'s own connection, started now if it runs not yet.
    pub fn router_for(&self, who: &Who) -> Result<Arc<Router>, PrincipalRefusal> {
        if &*who.key == crate::who::ANONYMOUS {
            return Err(PrincipalRefusal::Anonymous { server: self.server.clone() });
        }
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = slots.get_mut(&who.key) {
            s.last_used = Instant::now();
            if let (Some(x), Some(token)) = (&s.started.exchanged, &who.token) {
                x.present(token);
            }
            return Ok(s.started.router.clone());
        }
        let refused = |r: PrincipalRefusal| {
            self.starts.with_label_values(&[&self.server, r.outcome()]).inc();
            Err(r)
        };
        if slots.len() >= self.max {
            return refused(PrincipalRefusal::ServerFull { server: self.server.clone(), max: self.max });
        }
        if self.total.running.fetch_add(1, Ordering::AcqRel) >= self.total.max {
            self.total.running.fetch_sub(1, Ordering::AcqRel);
            return refused(PrincipalRefusal::AllFull { max: self.total.max });
        }
        let started = match self.start.start(who) {
            Ok(s) => s,
            Err(r) => {
                self.total.running.fetch_sub(1, Ordering::AcqRel);
                return refused(r);
            }
        };
        self.starts.with_label_values(&[&self.server, "started"]).inc();
        self.connections.with_label_values(&[&self.server, &self.label(&who.name), who.source.as_str()]).inc();
        tracing::info!(component = "principals", event = "started", server = %self.server, principal = %who.name, "started server {} for {}", self.server, who.name);
        let router = started.router.clone();
        slots.insert(who.key.clone(), Slot { started, name: who.name.clone(), source: who.source.as_str(), last_used: Instant::now() });
        Ok(router)
    }

    /// Stops the connections idle longer than the idle time (called every few seconds).
    pub fn reap_idle(&self) -> usize {
        let now = Instant::now();
        self.stop_where(|s| now.duration_since(s.last_used) >= self.idle, "idle")
    }

    /// Stops `name`'s connection (their secrets changed: the next call starts it anew).
    pub fn forget(&self, name: &str) -> usize {
        self.stop_where(|s| &*s.name == name, "credentials changed")
    }

    /// Takes every connection out (shutdown, or the server left the servers file): their
    /// calls are answered with `why`; the caller awaits their stops (children must not outlive
    /// the service).
    pub fn take_all(&self, why: &str) -> Vec<Recipient<Shutdown>> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots
            .drain()
            .map(|(_, s)| {
                self.total.running.fetch_sub(1, Ordering::AcqRel);
                self.connections.with_label_values(&[&self.server, &self.label(&s.name), s.source]).dec();
                s.started.router.fail_all(why);
                s.started.stop
            })
            .collect()
    }

    fn stop_where(&self, which: impl Fn(&Slot) -> bool, why: &str) -> usize {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let gone: Vec<Arc<str>> = slots.iter().filter(|(_, s)| which(s)).map(|(k, _)| k.clone()).collect();
        for key in &gone {
            if let Some(s) = slots.remove(key) {
                self.total.running.fetch_sub(1, Ordering::AcqRel);
                self.connections.with_label_values(&[&self.server, &self.label(&s.name), s.source]).dec();
                tracing::info!(component = "principals", event = "stopped", server = %self.server, principal = %s.name, reason = why, "stopped server {} for {} ({why})", self.server, s.name);
                s.started.router.fail_all(&format!("server {}'s connection for {} stopped ({why}); retry", self.server, s.name));
                s.started.stop.do_send(Shutdown);
            }
        }
        gone.len()
    }

    /// Connections running now, and the cap.
    pub fn running(&self) -> (usize, usize) {
        (self.slots.lock().unwrap_or_else(|e| e.into_inner()).len(), self.max)
    }

    pub fn idle_after(&self) -> Duration {
        self.idle
    }
}

impl std::fmt::Debug for PrincipalPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrincipalPool").field("server", &self.server).field("max", &self.max).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
