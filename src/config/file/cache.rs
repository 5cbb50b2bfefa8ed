//! The `cache` section: where pages are kept (memory, a folder, Redis) and how much.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum CacheType {
    #[default]
    Memory,
    Filesystem,
    /// Shared by every replica through Redis at `redisUrl` (memory stays in front).
    Redis,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// The UI cache.
pub struct CacheConfig {
    /// Keep written pages (off: every read writes its page again).
    pub enabled: bool,
    #[serde(rename = "type")]
    pub kind: CacheType,
    /// Folder for `filesystem`.
    pub dir: Option<PathBuf>,
    /// The most pages kept; the least recently used go first.
    pub max_entries: u64,
    /// A page larger than this is served but not kept.
    pub max_entry_size_bytes: u64,
    /// The most bytes of pages kept in all.
    pub max_total_size_bytes: u64,
    /// How long a page is kept, in seconds. Unset: until evicted, its tool changes, or it is
    /// regenerated.
    pub ttl_seconds: Option<u64>,
    /// A page served because of a transient failure (timeout, rate limit, overload, server or
    /// network error) is kept at most this long; the first read after that asks the LLM again.
    pub fallback_ttl_secs: u64,
    /// For `redis`: redis://[user:password@]host:port[/db]. Pages, refinement histories,
    /// classifications and generation leases are shared by every replica using it.
    pub redis_url: Option<String>,
    /// For `redis`: every key and the events channel start with this, so that several
    /// deployments can share one Redis.
    pub redis_key_prefix: String,
    /// For `redis`: the longest any Redis operation may take; past it the replica serves from
    /// its own memory (or the template) and generates on its own.
    pub redis_timeout_ms: u64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            enabled: true,
            kind: CacheType::Memory,
            dir: None,
            max_entries: 100,
            max_entry_size_bytes: 512_000,
            max_total_size_bytes: 52_428_800,
            ttl_seconds: None,
            fallback_ttl_secs: 600,
            redis_url: None,
            redis_key_prefix: "mcp-gen-ui:".into(),
            redis_timeout_ms: 500,
        }
    }
}
