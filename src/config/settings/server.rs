//! `server` and `limits`: the host transport, the listener, the allow-lists, worker threads,
//! body and session bounds, and the separate metrics listener.

use std::net::SocketAddr;

use crate::config::cli::{Args, HostTransportArg};
use crate::config::file::{Config, ConfigError, HostTransport};

/// The listener as resolved, with the field it came from (errors about it name that field).
pub(super) struct Listener {
    pub addr: SocketAddr,
    pub field: &'static str,
    pub workers: usize,
}

pub(super) fn resolve(args: &Args, cfg: &mut Config) -> Result<Listener, ConfigError> {
    if let Some(t) = args.transport {
        cfg.server.transport = match t {
            HostTransportArg::Http => HostTransport::Http,
            HostTransportArg::Stdio => HostTransport::Stdio,
        };
    }
    if let Some(l) = &args.listen {
        cfg.server.listen = l.clone();
    }
    let listen_field = if args.listen.is_some() { "--listen" } else { "server.listen" };
    let listen: SocketAddr = cfg.server.listen.parse().map_err(|_| {
        ConfigError::new(listen_field, format!("{:?} is not ADDR:PORT (e.g. 127.0.0.1:8080 or 0.0.0.0:8080)", cfg.server.listen))
    })?;
    cfg.server.allowed_origins.extend(args.allowed_origins.iter().cloned());
    cfg.server.allowed_hosts.extend(args.allowed_hosts.iter().cloned());
    if let Some(w) = args.workers {
        cfg.server.workers = Some(w);
    }
    let workers_field = if args.workers.is_some() { "--workers" } else { "server.workers" };
    let workers = match cfg.server.workers {
        Some(0) => return Err(ConfigError::new(workers_field, "must be at least 1 (or unset: one per CPU)")),
        Some(n) if n > 256 => return Err(ConfigError::new(workers_field, format!("{n} is more than 256 worker threads"))),
        Some(n) => n,
        None => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2),
    };
    if cfg.limits.max_sessions == 0 {
        return Err(ConfigError::new("limits.maxSessions", "must be at least 1"));
    }
    if cfg.limits.max_in_flight_per_session == 0 {
        return Err(ConfigError::new("limits.maxInFlightPerSession", "must be at least 1"));
    }
    if cfg.server.sse_keepalive_secs == 0 {
        return Err(ConfigError::new("server.sseKeepaliveSecs", "must be at least 1"));
    }
    if cfg.server.max_body_bytes < 1024 {
        return Err(ConfigError::new("server.maxBodyBytes", "must be at least 1024"));
    }
    Ok(Listener { addr: listen, field: listen_field, workers })
}

/// `--metrics-listen` / `server.metricsListen`: an address of its own.
pub(super) fn metrics_listen(args: &Args, cfg: &mut Config, listener: &Listener) -> Result<Option<SocketAddr>, ConfigError> {
    let (listen, listen_field) = (listener.addr, listener.field);
    if let Some(m) = &args.metrics_listen {
        cfg.server.metrics_listen = Some(m.clone());
    }
    let metrics_listen = match &cfg.server.metrics_listen {
        None => None,
        Some(m) => {
            let field = if args.metrics_listen.is_some() { "--metrics-listen" } else { "server.metricsListen" };
            let addr: SocketAddr =
                m.parse().map_err(|_| ConfigError::new(field, format!("{m:?} is not ADDR:PORT (e.g. 0.0.0.0:9464 or 127.0.0.1:9464)")))?;
            if addr == listen && addr.port() != 0 {
                return Err(ConfigError::new(field, format!("{m} is also the main listener ({listen_field}); give it another port")));
            }
            Some(addr)
        }
    };
    Ok(metrics_listen)
}
