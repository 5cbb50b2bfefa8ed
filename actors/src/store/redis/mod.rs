//! Redis as the store a group of replicas shares (`cache.type: redis`): pages, refinement
//! histories, classifications, generation leases, and the events that tell the other replicas
//! what changed. Not an actor: a cloneable client that `UiCache`, `Refinements` and
//! `GenerationQueue` each hold, plus one background task for the subscription.
//!
//! Redis is never on the critical path: every operation is bounded by `cache.redisTimeoutMs`
//! and answers `Err(Unavailable)` on any failure, which the callers treat as "no shared state"
//! (the L1 cache, the local history, a generation of our own). After a failure the store skips
//! Redis for a second rather than making every read wait for the timeout again, and a
//! background ping notices when it is back. The connection manager reconnects by itself; the
//! subscription is re-opened by its own loop, which announces [`Event::Resubscribed`] so that
//! listeners drop what they may have missed meanwhile.
//!
//! Keys (all under `cache.redisKeyPrefix`, default `mcp-gen-ui:`): `page:<cache key>` (a
//! `UiEntry` as JSON, with a TTL), `tool-pages:<tool>` (the page keys of a tool, to drop them
//! together), `refinements:<tool>` (a list, one JSON refinement per item), `classifications`
//! (a hash: tool hash -> rich|minimal), `lease:<cache key>` (the replica making that page),
//! `task:<task id>` (whose a task is and which server made it, see `proxy::tasks`);
//! the channel `events` carries [`Event`]s as JSON.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::aio::ConnectionManager;
use serde::Serialize;
use tokio::sync::broadcast;

mod approvals;
mod events;
mod history;
mod leases;
mod pages;
mod pins;
mod quota;
mod tasks;
#[cfg(test)]
mod tests;

use crate::metrics::Metrics;
use crate::process::locks::Recover;
pub use events::Event;
pub use pages::{page_ttl, PAGE_MAX_TTL};

/// How long a lease lives without renewal: a replica that dies mid-generation holds the key at
/// most this long. The holder renews it every third of it.
pub const LEASE_TTL: Duration = Duration::from_millis(3000);

/// After a failure, Redis is not tried again for this long (reads do not each wait a timeout).
const BREAKER: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub struct RedisSettings {
    /// `redis://[user:password@]host:port[/db]` (or `unix:///path`).
    pub url: String,
    pub prefix: String,
    /// Every operation's bound.
    pub timeout: Duration,
    pub lease_ttl: Duration,
}

/// Redis did not answer in time, refused, or was skipped after a recent failure. Callers
/// take every such failure the same way: nothing is shared just now.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("Redis unavailable: {0}")]
pub struct Unavailable(pub String);

/// What `/readyz` shows.
#[derive(Debug, Clone, Serialize)]
pub struct Health {
    /// "ok" or "degraded" (the service works either way; the replicas share nothing meanwhile).
    pub status: &'static str,
    /// Where, without credentials.
    pub server: String,
    /// Whether the change events are being received.
    pub subscribed: bool,
    pub error: Option<String>,
    pub replica: String,
}

/// Whether `url` is one this build can connect to (no I/O). The error is the kind only: the
/// client's message could quote the URL, password included.
pub fn check_url(url: &str) -> Result<(), redis::ErrorKind> {
    redis::Client::open(url).map(|_| ()).map_err(|e| e.kind())
}

#[derive(Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
}

struct Inner {
    client: redis::Client,
    conn: ConnectionManager,
    settings: RedisSettings,
    replica: String,
    server: String,
    metrics: Arc<Metrics>,
    ok: AtomicBool,
    subscribed: AtomicBool,
    last_error: Mutex<Option<String>>,
    skip_until: Mutex<Option<Instant>>,
    events: broadcast::Sender<Event>,
}

impl RedisStore {
    /// Checks the URL and prepares the connection (made on first use: a Redis that is down at
    /// start only means the replica starts alone). Needs a Tokio runtime.
    pub fn open(settings: RedisSettings, metrics: Arc<Metrics>) -> Result<Self, redis::ErrorKind> {
        let client = redis::Client::open(settings.url.as_str()).map_err(|e| e.kind())?;
        let server = client.get_connection_info().addr().to_string();
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(settings.timeout))
            .set_response_timeout(Some(settings.timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(100))
            .set_max_delay(Duration::from_secs(1));
        let conn = ConnectionManager::new_lazy_with_config(client.clone(), config).map_err(|e| e.kind())?;
        let replica = format!("{}-{}", std::process::id(), &uuid::Uuid::new_v4().simple().to_string()[..8]);
        let (events, _) = broadcast::channel(1024);
        metrics.redis_connected.set(0);
        Ok(RedisStore {
            inner: Arc::new(Inner {
                client,
                conn,
                settings,
                replica,
                server,
                metrics,
                ok: AtomicBool::new(true),
                subscribed: AtomicBool::new(false),
                last_error: Mutex::new(None),
                skip_until: Mutex::new(None),
                events,
            }),
        })
    }

    /// This process's id in leases and events.
    pub fn replica(&self) -> &str {
        &self.inner.replica
    }

    pub fn lease_ttl(&self) -> Duration {
        self.inner.settings.lease_ttl
    }

    /// Events from every replica (this one's included) and [`Event::Resubscribed`].
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }

    pub fn health(&self) -> Health {
        let ok = self.inner.ok.load(Ordering::Relaxed);
        let subscribed = self.inner.subscribed.load(Ordering::Relaxed);
        Health {
            status: if ok && subscribed { "ok" } else { "degraded" },
            server: self.inner.server.clone(),
            subscribed,
            error: if ok && subscribed {
                None
            } else {
                Some(self.inner.last_error.guard().clone().unwrap_or_else(|| "not connected yet".into()))
            },
            replica: self.inner.replica.clone(),
        }
    }

    fn key(&self, rest: &str) -> String {
        format!("{}{rest}", self.inner.settings.prefix)
    }

    /// Runs one operation under the timeout; records the outcome for health and metrics.
    async fn run<T>(&self, op: &'static str, f: impl Future<Output = redis::RedisResult<T>>) -> Result<T, Unavailable> {
        if let Some(until) = *self.inner.skip_until.guard() {
            if Instant::now() < until {
                return Err(Unavailable("it failed less than a second ago".into()));
            }
        }
        let why = match tokio::time::timeout(self.inner.settings.timeout, f).await {
            Ok(Ok(v)) => {
                self.mark_ok();
                return Ok(v);
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {} ms (cache.redisTimeoutMs)", self.inner.settings.timeout.as_millis()),
        };
        Err(self.mark_failed(op, why))
    }

    fn mark_ok(&self) {
        *self.inner.skip_until.guard() = None;
        if !self.inner.ok.swap(true, Ordering::Relaxed) {
            tracing::info!(component = "redis", event = "redis_back", server = %self.inner.server, "Redis answers again: pages, refinements and leases are shared again");
        }
        self.inner.metrics.redis_connected.set(i64::from(self.inner.subscribed.load(Ordering::Relaxed)));
    }

    fn mark_failed(&self, op: &'static str, why: String) -> Unavailable {
        self.inner.metrics.redis_errors.with_label_values(&[op]).inc();
        *self.inner.skip_until.guard() = Some(Instant::now() + BREAKER);
        if self.inner.ok.swap(false, Ordering::Relaxed) {
            tracing::warn!(component = "redis", event = "redis_unavailable", server = %self.inner.server, op, error = %why, "Redis failed: this replica serves from its own cache and generates alone until it is back");
        } else {
            tracing::debug!(component = "redis", event = "redis_error", op, error = %why, "Redis operation failed");
        }
        self.inner.metrics.redis_connected.set(0);
        *self.inner.last_error.guard() = Some(why.clone());
        Unavailable(why)
    }
}
