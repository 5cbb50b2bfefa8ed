//! The `events` channel: what one replica tells the others, the subscription loop that feeds
//! them to a local broadcast (with `Resubscribed` after every (re)subscription), and the
//! health ping.

use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::StreamExt;
use serde::{Deserialize, Serialize};

use super::{RedisStore, Unavailable, BREAKER};

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
    /// An admin accepted a held tool's definition (`pin`, opaque here): every replica lets it
    /// through.
    PinAccepted { origin: String, server: String, tool: String, pin: serde_json::Value },
    /// An approval request was made or decided (or expired): waiting calls and approvers' pages
    /// look again.
    ApprovalDecided { origin: String, id: String },
    /// Local only: the subscription was (re)opened; events may have been missed before it.
    #[serde(skip)]
    Resubscribed,
}

impl Event {
    /// The replica that sent it (None for local events).
    pub fn origin(&self) -> Option<&str> {
        match self {
            Event::Stored { origin, .. }
            | Event::Refined { origin, .. }
            | Event::ToolInvalidated { origin, .. }
            | Event::PinAccepted { origin, .. }
            | Event::ApprovalDecided { origin, .. } => Some(origin),
            Event::Resubscribed => None,
        }
    }
}

impl RedisStore {
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
