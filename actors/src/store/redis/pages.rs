//! Pages in Redis: `page:<cache key>` (a `UiEntry` as JSON, with a TTL) and
//! `tool-pages:<tool>` (the page keys of a tool, to drop them together).

use std::sync::Arc;
use std::time::Duration;

use super::{RedisStore, Unavailable};
use crate::page::{UiEntry, ENTRY_FORMAT};

/// The longest a page lives in Redis (unless `cache.ttlSeconds` or a fallback expiry is
/// shorter), so that pages of tools nobody uses any more go away by themselves.
pub const PAGE_MAX_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

impl RedisStore {
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
