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
//! (a hash: tool hash -> rich|minimal), `lease:<cache key>` (the replica making that page);
//! the channel `events` carries [`Event`]s as JSON.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use redis::aio::ConnectionManager;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::locks::Recover;
use crate::messages::Refinement;
use crate::metrics::Metrics;
use crate::page::UiType;
use crate::page::{UiEntry, ENTRY_FORMAT};

/// How long a lease lives without renewal: a replica that dies mid-generation holds the key at
/// most this long. The holder renews it every third of it.
pub const LEASE_TTL: Duration = Duration::from_millis(3000);

/// The longest a page lives in Redis (unless `cache.ttlSeconds` or a fallback expiry is
/// shorter), so that pages of tools nobody uses any more go away by themselves.
pub const PAGE_MAX_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

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

/// What one replica tells the others (the `events` channel).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Event {
    /// A page was stored under `key`. `forced`: it replaces the tool's page (regenerate,
    /// refine), so hosts subscribed to `ui://<tool>` are told.
    Stored { origin: String, key: String, tool: String, forced: bool },
    /// A tool's refinement history changed (appended or cleared).
    Refined { origin: String, tool: String },
    /// Every page of a tool was dropped (regenerate, refine, the tool changed or went away).
    ToolInvalidated { origin: String, tool: String },
    /// Local only: the subscription was (re)opened; events may have been missed before it.
    #[serde(skip)]
    Resubscribed,
}

impl Event {
    /// The replica that sent it (None for local events).
    pub fn origin(&self) -> Option<&str> {
        match self {
            Event::Stored { origin, .. } | Event::Refined { origin, .. } | Event::ToolInvalidated { origin, .. } => Some(origin),
            Event::Resubscribed => None,
        }
    }
}

/// Redis did not answer in time, refused, or was skipped after a recent failure.
#[derive(Debug, Clone, PartialEq)]
pub struct Unavailable(pub String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redis unavailable: {}", self.0)
    }
}

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

/// Whether `url` is one this build can connect to (no I/O; the error never quotes the URL).
pub fn check_url(url: &str) -> Result<(), String> {
    redis::Client::open(url).map(|_| ()).map_err(|e| format!("{:?}", e.kind()))
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
    pub fn open(settings: RedisSettings, metrics: Arc<Metrics>) -> Result<Self, String> {
        let client = redis::Client::open(settings.url.as_str()).map_err(|e| e.to_string())?;
        let server = client.get_connection_info().addr().to_string();
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(settings.timeout))
            .set_response_timeout(Some(settings.timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(100))
            .set_max_delay(Duration::from_secs(1));
        let conn = ConnectionManager::new_lazy_with_config(client.clone(), config).map_err(|e| e.to_string())?;
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
                Some(lock(&self.inner.last_error).clone().unwrap_or_else(|| "not connected yet".into()))
            },
            replica: self.inner.replica.clone(),
        }
    }

    fn key(&self, rest: &str) -> String {
        format!("{}{rest}", self.inner.settings.prefix)
    }

    /// Runs one operation under the timeout; records the outcome for health and metrics.
    async fn run<T>(&self, op: &'static str, f: impl Future<Output = redis::RedisResult<T>>) -> Result<T, Unavailable> {
        if let Some(until) = *lock(&self.inner.skip_until) {
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
        *lock(&self.inner.skip_until) = None;
        if !self.inner.ok.swap(true, Ordering::Relaxed) {
            tracing::info!(component = "redis", event = "redis_back", server = %self.inner.server, "Redis answers again: pages, refinements and leases are shared again");
        }
        self.inner.metrics.redis_connected.set(i64::from(self.inner.subscribed.load(Ordering::Relaxed)));
    }

    fn mark_failed(&self, op: &'static str, why: String) -> Unavailable {
        self.inner.metrics.redis_errors.with_label_values(&[op]).inc();
        *lock(&self.inner.skip_until) = Some(Instant::now() + BREAKER);
        if self.inner.ok.swap(false, Ordering::Relaxed) {
            tracing::warn!(component = "redis", event = "redis_unavailable", server = %self.inner.server, op, error = %why, "Redis failed: this replica serves from its own cache and generates alone until it is back");
        } else {
            tracing::debug!(component = "redis", event = "redis_error", op, error = %why, "Redis operation failed");
        }
        self.inner.metrics.redis_connected.set(0);
        *lock(&self.inner.last_error) = Some(why.clone());
        Unavailable(why)
    }

    // ------------------------------------------------------------------ pages

    /// The page stored under `key`, if any (corrupt or other-format entries count as absent).
    pub async fn get_page(&self, key: &str) -> Result<Option<UiEntry>, Unavailable> {
        let mut c = self.inner.conn.clone();
        let k = self.key(&format!("page:{key}"));
        let raw: Option<Vec<u8>> = self.run("page_get", async move { redis::cmd("GET").arg(k).query_async(&mut c).await }).await?;
        let Some(raw) = raw else { return Ok(None) };
        // A page is up to 512 KB of JSON: parsed on the blocking pool.
        let parsed = tokio::task::spawn_blocking(move || serde_json::from_slice::<UiEntry>(&raw)).await;
        match parsed {
            Ok(Ok(e)) if e.format == ENTRY_FORMAT => Ok(Some(e)),
            Ok(Ok(_)) => Ok(None),
            _ => {
                tracing::warn!(component = "redis", event = "corrupt_entry", cache_key = %key, "skipping a page in Redis that does not parse");
                Ok(None)
            }
        }
    }

    /// Stores a page for `ttl` and files it under its tool.
    pub async fn put_page(&self, entry: Arc<UiEntry>, ttl: Duration) -> Result<(), Unavailable> {
        let (page_key, tool_key) = (self.key(&format!("page:{}", entry.key)), self.key(&format!("tool-pages:{}", entry.tool_name)));
        let key = entry.key.clone();
        let json = tokio::task::spawn_blocking(move || serde_json::to_vec(&*entry))
            .await
            .map_err(|e| Unavailable(e.to_string()))?
            .map_err(|e| Unavailable(e.to_string()))?;
        let ms = ttl.as_millis().max(1) as u64;
        let mut c = self.inner.conn.clone();
        self.run("page_put", async move {
            redis::pipe()
                .atomic()
                .cmd("SET")
                .arg(&page_key)
                .arg(json)
                .arg("PX")
                .arg(ms)
                .ignore()
                .cmd("SADD")
                .arg(&tool_key)
                .arg(&key)
                .ignore()
                .cmd("PEXPIRE")
                .arg(&tool_key)
                .arg(PAGE_MAX_TTL.as_millis() as u64)
                .ignore()
                .query_async::<()>(&mut c)
                .await
        })
        .await
    }

    /// Drops every page of a tool; answers how many keys it had.
    pub async fn delete_tool_pages(&self, tool: &str) -> Result<usize, Unavailable> {
        let tool_key = self.key(&format!("tool-pages:{tool}"));
        let mut c = self.inner.conn.clone();
        let tk = tool_key.clone();
        let keys: Vec<String> = self.run("page_delete", async move { redis::cmd("SMEMBERS").arg(tk).query_async(&mut c).await }).await?;
        let mut c = self.inner.conn.clone();
        let mut del = redis::cmd("DEL");
        del.arg(&tool_key);
        for k in &keys {
            del.arg(self.key(&format!("page:{k}")));
        }
        self.run("page_delete", async move { del.query_async::<()>(&mut c).await }).await?;
        Ok(keys.len())
    }

    // ------------------------------------------------------------------ refinements

    /// Appends one refinement; answers the tool's whole history, oldest first.
    pub async fn push_refinement(&self, tool: &str, r: &Refinement) -> Result<Vec<Refinement>, Unavailable> {
        let k = self.key(&format!("refinements:{tool}"));
        let json = serde_json::to_string(r).unwrap_or_default();
        let mut c = self.inner.conn.clone();
        let (items,): (Vec<String>,) = self
            .run("refinements", async move {
                redis::pipe()
                    .atomic()
                    .cmd("RPUSH")
                    .arg(&k)
                    .arg(json)
                    .ignore()
                    .cmd("LRANGE")
                    .arg(&k)
                    .arg(0)
                    .arg(-1)
                    .query_async(&mut c)
                    .await
            })
            .await?;
        Ok(parse_history(tool, items))
    }

    pub async fn refinements(&self, tool: &str) -> Result<Vec<Refinement>, Unavailable> {
        let k = self.key(&format!("refinements:{tool}"));
        let mut c = self.inner.conn.clone();
        let items: Vec<String> =
            self.run("refinements", async move { redis::cmd("LRANGE").arg(k).arg(0).arg(-1).query_async(&mut c).await }).await?;
        Ok(parse_history(tool, items))
    }

    /// Forgets a tool's history; answers how many refinements it had.
    pub async fn clear_refinements(&self, tool: &str) -> Result<usize, Unavailable> {
        let k = self.key(&format!("refinements:{tool}"));
        let mut c = self.inner.conn.clone();
        let (n,): (usize,) =
            self.run("refinements", async move {
                redis::pipe().atomic().cmd("LLEN").arg(&k).cmd("DEL").arg(&k).ignore().query_async(&mut c).await
            })
            .await?;
        Ok(n)
    }

    // ------------------------------------------------------------------ classifications

    pub async fn classification(&self, tool_hash: &str) -> Result<Option<UiType>, Unavailable> {
        let (k, f) = (self.key("classifications"), tool_hash.to_string());
        let mut c = self.inner.conn.clone();
        let v: Option<String> =
            self.run("classifications", async move { redis::cmd("HGET").arg(k).arg(f).query_async(&mut c).await }).await?;
        Ok(v.and_then(|s| parse_ui_type(&s)))
    }

    pub async fn classifications(&self) -> Result<HashMap<String, UiType>, Unavailable> {
        let k = self.key("classifications");
        let mut c = self.inner.conn.clone();
        let all: HashMap<String, String> =
            self.run("classifications", async move { redis::cmd("HGETALL").arg(k).query_async(&mut c).await }).await?;
        Ok(all.into_iter().filter_map(|(h, v)| parse_ui_type(&v).map(|t| (h, t))).collect())
    }

    pub async fn remember_classification(&self, tool_hash: &str, t: UiType) -> Result<(), Unavailable> {
        let (k, f) = (self.key("classifications"), tool_hash.to_string());
        let v = match t {
            UiType::Rich => "rich",
            UiType::Minimal => "minimal",
        };
        let mut c = self.inner.conn.clone();
        self.run("classifications", async move { redis::cmd("HSET").arg(k).arg(f).arg(v).query_async::<()>(&mut c).await }).await
    }

    pub async fn forget_classification(&self, tool_hash: &str) -> Result<(), Unavailable> {
        let (k, f) = (self.key("classifications"), tool_hash.to_string());
        let mut c = self.inner.conn.clone();
        self.run("classifications", async move { redis::cmd("HDEL").arg(k).arg(f).query_async::<()>(&mut c).await }).await
    }

    // ------------------------------------------------------------------ leases

    /// `SET lease:<key> <replica> NX PX <ttl>`: true when this replica now holds the key.
    pub async fn try_lease(&self, key: &str) -> Result<bool, Unavailable> {
        let k = self.key(&format!("lease:{key}"));
        let (me, ms) = (self.inner.replica.clone(), self.inner.settings.lease_ttl.as_millis() as u64);
        let mut c = self.inner.conn.clone();
        let set: Option<String> = self
            .run("lease", async move { redis::cmd("SET").arg(k).arg(me).arg("NX").arg("PX").arg(ms).query_async(&mut c).await })
            .await?;
        Ok(set.is_some())
    }

    /// Extends our lease; false when it is no longer ours (it expired and another took it).
    pub async fn renew_lease(&self, key: &str) -> Result<bool, Unavailable> {
        static RENEW: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
            redis::Script::new(
                "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end",
            )
        });
        let k = self.key(&format!("lease:{key}"));
        let (me, ms) = (self.inner.replica.clone(), self.inner.settings.lease_ttl.as_millis() as u64);
        let mut c = self.inner.conn.clone();
        let n: i64 = self.run("lease", async move { RENEW.key(k).arg(me).arg(ms).invoke_async(&mut c).await }).await?;
        Ok(n == 1)
    }

    /// Deletes the lease if it is still ours (never another replica's).
    pub async fn release_lease(&self, key: &str) -> Result<bool, Unavailable> {
        static RELEASE: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
            redis::Script::new("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end")
        });
        let k = self.key(&format!("lease:{key}"));
        let me = self.inner.replica.clone();
        let mut c = self.inner.conn.clone();
        let n: i64 = self.run("lease", async move { RELEASE.key(k).arg(me).invoke_async(&mut c).await }).await?;
        Ok(n == 1)
    }

    // ------------------------------------------------------------------ events

    /// Sends an event to every replica (this one hears it too, and ignores its own).
    pub async fn publish(&self, ev: &Event) -> Result<(), Unavailable> {
        let json = serde_json::to_string(ev).unwrap_or_default();
        let ch = self.key("events");
        let mut c = self.inner.conn.clone();
        self.run("publish", async move { redis::cmd("PUBLISH").arg(ch).arg(json).query_async::<()>(&mut c).await }).await
    }

    /// Starts the subscription loop and the health ping (needs a Tokio runtime).
    pub fn start(&self) {
        let me = self.clone();
        tokio::spawn(async move { me.subscription_loop().await });
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                let ok = me.inner.ok.load(Ordering::Relaxed);
                tokio::time::sleep(if ok { Duration::from_secs(5) } else { BREAKER }).await;
                let mut c = me.inner.conn.clone();
                let _ = me.run("ping", async move { redis::cmd("PING").query_async::<String>(&mut c).await }).await;
            }
        });
    }

    async fn subscription_loop(&self) {
        let channel = self.key("events");
        let mut backoff = Duration::from_millis(200);
        loop {
            let opened = tokio::time::timeout(self.inner.settings.timeout * 2, async {
                let mut ps = self.inner.client.get_async_pubsub().await?;
                ps.subscribe(&channel).await?;
                Ok::<_, redis::RedisError>(ps)
            })
            .await;
            match opened {
                Ok(Ok(mut ps)) => {
                    backoff = Duration::from_millis(200);
                    self.inner.subscribed.store(true, Ordering::Relaxed);
                    self.inner.metrics.redis_connected.set(i64::from(self.inner.ok.load(Ordering::Relaxed)));
                    tracing::info!(component = "redis", event = "subscribed", server = %self.inner.server, replica = %self.inner.replica, "listening to the other replicas' changes");
                    let _ = self.inner.events.send(Event::Resubscribed);
                    let mut stream = ps.on_message();
                    while let Some(msg) = stream.next().await {
                        match msg.get_payload::<String>().ok().and_then(|p| serde_json::from_str::<Event>(&p).ok()) {
                            Some(ev) => {
                                let _ = self.inner.events.send(ev);
                            }
                            None => tracing::debug!(component = "redis", event = "bad_event", "skipping an event that does not parse"),
                        }
                    }
                    self.inner.subscribed.store(false, Ordering::Relaxed);
                    self.inner.metrics.redis_connected.set(0);
                    let why = "the subscription connection closed".to_string();
                    self.mark_failed("subscribe", why);
                }
                Ok(Err(e)) => {
                    self.mark_failed("subscribe", e.to_string());
                }
                Err(_) => {
                    self.mark_failed("subscribe", "subscribing took longer than twice cache.redisTimeoutMs".into());
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.guard()
}

fn parse_ui_type(s: &str) -> Option<UiType> {
    match s {
        "rich" => Some(UiType::Rich),
        "minimal" => Some(UiType::Minimal),
        _ => None,
    }
}

fn parse_history(tool: &str, items: Vec<String>) -> Vec<Refinement> {
    items
        .into_iter()
        .filter_map(|s| match serde_json::from_str(&s) {
            Ok(r) => Some(r),
            Err(_) => {
                tracing::warn!(component = "redis", event = "corrupt_refinement", tool_name = %tool, "skipping a refinement in Redis that does not parse");
                None
            }
        })
        .collect()
}

/// How long a page lives in Redis: its fallback expiry, `cache.ttlSeconds`, at most
/// [`PAGE_MAX_TTL`]. None: already expired (not worth storing).
pub fn page_ttl(entry: &UiEntry, cache_ttl: Option<Duration>, now_ms: u64) -> Option<Duration> {
    let mut ttl = cache_ttl.unwrap_or(PAGE_MAX_TTL).min(PAGE_MAX_TTL);
    if let Some(at) = entry.expires_at {
        if at <= now_ms {
            return None;
        }
        ttl = ttl.min(Duration::from_millis(at - now_ms));
    }
    Some(ttl)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_travel_as_tagged_json() {
        let ev = Event::Stored { origin: "r1".into(), key: "k".into(), tool: "t".into(), forced: true };
        let json = serde_json::to_string(&ev).unwrap();
        assert_eq!(json, r#"{"type":"stored","origin":"r1","key":"k","tool":"t","forced":true}"#);
        assert_eq!(serde_json::from_str::<Event>(&json).unwrap(), ev);
        assert_eq!(ev.origin(), Some("r1"));
        assert!(serde_json::from_str::<Event>(r#"{"type":"resubscribed"}"#).is_err(), "local events never come from the wire");
    }

    #[test]
    fn page_ttls_follow_the_fallback_expiry_and_the_cache_ttl() {
        let mut e: UiEntry = serde_json::from_value(serde_json::json!({
            "format": ENTRY_FORMAT, "key": "k", "toolName": "t", "html": "", "kind": "generated", "uiType": null,
            "generatedAt": 0, "durationMs": 0, "provider": "", "model": "", "promptVersion": "", "templateVersion": "",
            "fallbackReason": null, "warnings": [], "repairs": [], "requestId": "", "inputTokens": 0, "outputTokens": 0
        }))
        .unwrap();
        assert_eq!(page_ttl(&e, None, 1000), Some(PAGE_MAX_TTL));
        assert_eq!(page_ttl(&e, Some(Duration::from_secs(60)), 1000), Some(Duration::from_secs(60)));
        e.expires_at = Some(11_000);
        assert_eq!(page_ttl(&e, Some(Duration::from_secs(60)), 1000), Some(Duration::from_secs(10)));
        assert_eq!(page_ttl(&e, None, 11_000), None);
    }

    #[tokio::test]
    async fn a_redis_that_is_not_there_fails_fast_and_says_so() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let settings = RedisSettings {
            url: format!("redis://127.0.0.1:{port}"),
            prefix: "t:".into(),
            timeout: Duration::from_millis(300),
            lease_ttl: LEASE_TTL,
        };
        let metrics = Arc::new(Metrics::new());
        let store = RedisStore::open(settings, metrics.clone()).unwrap();
        let started = Instant::now();
        assert!(store.get_page("k").await.is_err());
        assert!(store.try_lease("k").await.is_err(), "skipped: it failed less than a second ago");
        assert!(started.elapsed() < Duration::from_millis(700));
        let h = store.health();
        assert_eq!(h.status, "degraded");
        assert_eq!(h.server, format!("127.0.0.1:{port}"));
        assert!(h.error.is_some());
        assert_eq!(metrics.redis_errors.with_label_values(&["page_get"]).get(), 1);
        assert!(RedisStore::open(RedisSettings { url: "http://x".into(), ..store.inner.settings.clone() }, metrics).is_err());
    }
}
