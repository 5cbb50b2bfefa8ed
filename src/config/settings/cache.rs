//! `cache`: memory, a folder, or Redis shared by replicas; the flags that choose them and the
//! bounds of each.

use crate::config::cli::Args;
use crate::config::file::{self as config, Config, ConfigError};

pub(super) fn resolve(args: &Args, cfg: &mut Config) -> Result<(), ConfigError> {
    if let Some(d) = &args.cache_dir {
        cfg.cache.dir = Some(d.clone());
        cfg.cache.kind = config::CacheType::Filesystem;
    }
    if args.no_cache || args.debug {
        cfg.cache.enabled = false;
    }
    if let Some(u) = &args.redis_url {
        if args.cache_dir.is_some() {
            return Err(ConfigError::new(
                "--redis-url",
                "--redis-url shares the cache through Redis and --cache-dir keeps it in a folder: give one of them",
            ));
        }
        cfg.cache.redis_url = Some(u.clone());
        cfg.cache.kind = config::CacheType::Redis;
    }
    if cfg.cache.kind == config::CacheType::Redis {
        let field = if args.redis_url.is_some() { "--redis-url" } else { "cache.redisUrl" };
        let Some(u) = &cfg.cache.redis_url else {
            return Err(ConfigError::new(
                "cache.redisUrl",
                "cache.type is redis but no Redis is given: set cache.redisUrl or pass --redis-url redis://host:6379",
            ));
        };
        redis_url(u, field)?;
        if cfg.cache.redis_timeout_ms == 0 || cfg.cache.redis_timeout_ms > 60_000 {
            return Err(ConfigError::new("cache.redisTimeoutMs", "must be between 1 and 60000 (milliseconds)"));
        }
        if cfg.cache.redis_key_prefix.chars().any(char::is_whitespace) {
            return Err(ConfigError::new("cache.redisKeyPrefix", "must not contain spaces"));
        }
    }
    if cfg.cache.dir.is_some() && cfg.cache.kind != config::CacheType::Filesystem {
        // Silently running a memory cache beside a folder that looks persistent loses every
        // page at the next restart; say so instead.
        let kind = if cfg.cache.kind == config::CacheType::Redis { "redis" } else { "memory (the default)" };
        return Err(ConfigError::new(
            "cache.type",
            format!("cache.dir is set but cache.type is {kind}: set cache.type to \"filesystem\" to keep pages in that folder, or remove cache.dir"),
        ));
    }
    if cfg.cache.kind == config::CacheType::Filesystem && cfg.cache.dir.is_none() {
        return Err(ConfigError::new(
            "cache.dir",
            "cache.type is filesystem but no folder is given: set cache.dir or pass --cache-dir DIR",
        ));
    }
    if cfg.cache.max_entries == 0 || cfg.cache.max_total_size_bytes == 0 {
        return Err(ConfigError::new(
            "cache.maxEntries",
            "cache.maxEntries and cache.maxTotalSizeBytes must be at least 1 (use --no-cache to turn the cache off)",
        ));
    }
    Ok(())
}

/// A Redis URL this build can use: redis:// or unix://, never quoted back (it may hold a password).
fn redis_url(raw: &str, field: &str) -> Result<(), ConfigError> {
    let u = url::Url::parse(raw).map_err(|_| ConfigError::new(field, "is not a valid URL; give redis://[user:password@]host:port[/db]"))?;
    match u.scheme() {
        "redis" | "redis+unix" | "unix" => mcp_gen_ui_actors::store::redis::check_url(raw).map_err(|why| {
            ConfigError::new(
                field,
                format!("is not a Redis URL this service can use ({why:?}); give redis://[user:password@]host:port[/db]"),
            )
        }),
        "rediss" => Err(ConfigError::new(
            field,
            "rediss:// (TLS) is not built in: reach Redis over a private network or a TLS tunnel, with redis://",
        )),
        other => Err(ConfigError::new(field, format!("uses {other}:// ; give redis://[user:password@]host:port[/db]"))),
    }
}
