//! `server` and `limits`: the host transport, the listener, the allow-lists, worker threads,
//! body and session bounds, and the separate metrics listener.

use std::net::{IpAddr, SocketAddr};

use crate::config::cli::{Args, HostTransportArg};
use crate::config::file::{Config, ConfigError, HostTransport};

/// The listener as resolved, with the field it came from (errors about it name that field).
pub(super) struct Listener {
    pub addr: SocketAddr,
    pub field: &'static str,
    pub workers: usize,
}

/// An address or a CIDR range (`10.0.0.0/8`, `fd00::/8`, `127.0.0.1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    addr: IpAddr,
    prefix: u8,
}

impl IpRange {
    pub fn parse(text: &str) -> Option<IpRange> {
        let (a, p) = match text.trim().split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text.trim(), None),
        };
        let addr: IpAddr = a.parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max)?,
            None => max,
        };
        Some(IpRange { addr, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match (self.addr, ip) {
            // An IPv4 peer seen through a dual-stack socket.
            (IpAddr::V4(_), IpAddr::V6(v6)) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            _ => ip,
        };
        let bits = |a: IpAddr| -> u128 {
            match a {
                IpAddr::V4(v) => u128::from(u32::from(v)) << 96,
                IpAddr::V6(v) => u128::from(v),
            }
        };
        if self.addr.is_ipv4() != ip.is_ipv4() {
            return false;
        }
        let mask = if self.prefix == 0 { 0 } else { u128::MAX << (128 - u32::from(self.prefix)) };
        bits(self.addr) & mask == bits(ip) & mask
    }
}

/// Whom the edge believes and where the preview's sandbox lives.
pub(super) struct EdgeTrust {
    pub trusted_proxies: Vec<IpRange>,
    pub sandbox_listen: Option<SocketAddr>,
    pub sandbox_origin: Option<url::Url>,
}

/// `server.trustedProxies`, `server.sandboxListen` and `server.sandboxOrigin`, checked; and a
/// loud warning for wildcards that turn DNS-rebinding protection off.
pub(super) fn edge_trust(cfg: &Config, warnings: &mut Vec<String>) -> Result<EdgeTrust, ConfigError> {
    let mut trusted = Vec::new();
    for (i, t) in cfg.server.trusted_proxies.iter().enumerate() {
        trusted.push(IpRange::parse(t).ok_or_else(|| {
            ConfigError::new(
                format!("server.trustedProxies[{i}]"),
                format!("{t:?} is not an IP address or a CIDR range (10.0.0.0/8, fd00::/8)"),
            )
        })?);
    }
    let sandbox = match &cfg.server.sandbox_listen {
        None => None,
        Some(s) => Some(s.parse::<SocketAddr>().map_err(|_| ConfigError::new("server.sandboxListen", format!("{s:?} is not ADDR:PORT")))?),
    };
    let origin = match &cfg.server.sandbox_origin {
        None => None,
        Some(o) => {
            let u = url::Url::parse(o).ok().filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some() && u.path() == "/");
            Some(u.ok_or_else(|| {
                ConfigError::new("server.sandboxOrigin", format!("{o:?} is not an origin: give scheme://host[:port], no path"))
            })?)
        }
    };
    if origin.is_some() && sandbox.is_none() {
        return Err(ConfigError::new("server.sandboxOrigin", "names where server.sandboxListen is reached: set server.sandboxListen too"));
    }
    if cfg.server.allowed_hosts.iter().any(|h| h == "*") {
        warnings.push("server.allowedHosts / --allowed-host contains \"*\": the Host check is OFF, so any web page a user opens can reach this service through DNS rebinding; list the host names instead".into());
    }
    if cfg.server.allowed_origins.iter().any(|o| o == "*") {
        warnings.push("server.allowedOrigins / --allowed-origin contains \"*\": the Origin check is OFF, so any web page a user opens can call this service from the browser; list the origins instead".into());
    }
    Ok(EdgeTrust { trusted_proxies: trusted, sandbox_listen: sandbox, sandbox_origin: origin })
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
    cfg.server.trusted_proxies.extend(args.trusted_proxies.iter().cloned());
    if let Some(w) = args.workers {
        cfg.server.workers = Some(w);
    }
    let workers_field = if args.workers.is_some() { "--workers" } else { "server.workers" };
    let workers = match cfg.server.workers {
        Some(0) => return Err(ConfigError::new(workers_field, "must be at least 1 (or unset: half the CPUs, at least one)")),
        Some(n) if n > 256 => return Err(ConfigError::new(workers_field, format!("{n} is more than 256 worker threads"))),
        Some(n) => n,
        None => default_workers(std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)),
    };
    if cfg.limits.max_sessions == 0 {
        return Err(ConfigError::new("limits.maxSessions", "must be at least 1"));
    }
    if cfg.limits.max_sessions_per_principal == Some(0) {
        return Err(ConfigError::new(
            "limits.maxSessionsPerPrincipal",
            "must be at least 1 (leave it out for a quarter of limits.maxSessions)",
        ));
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
    if !(1..=100_000).contains(&cfg.limits.tools_per_page) {
        return Err(ConfigError::new("limits.toolsPerPage", "must be from 1 to 100000"));
    }
    if !(1..=100_000).contains(&cfg.limits.tasks_per_person) {
        return Err(ConfigError::new("limits.tasksPerPerson", "must be from 1 to 100000"));
    }
    if !(1..=10_000).contains(&cfg.limits.task_watches_per_person) {
        return Err(ConfigError::new("limits.taskWatchesPerPerson", "must be from 1 to 10000"));
    }
    if !(1..=10_000).contains(&cfg.limits.max_batch_messages) {
        return Err(ConfigError::new("limits.maxBatchMessages", "must be from 1 to 10000"));
    }
    if !(1..=7 * 86_400).contains(&cfg.server.session_idle_timeout_secs) {
        return Err(ConfigError::new("server.sessionIdleTimeoutSecs", "must be from 1 to 604800 (seconds, a week)"));
    }
    if cfg.server.sse_keepalive_secs > 3600 {
        return Err(ConfigError::new("server.sseKeepaliveSecs", "must be at most 3600 (seconds)"));
    }
    if !(1..=600).contains(&cfg.server.body_timeout_secs) {
        return Err(ConfigError::new("server.bodyTimeoutSecs", "must be from 1 to 600 (seconds)"));
    }
    if !(1..=100_000).contains(&cfg.server.max_connections_per_client) {
        return Err(ConfigError::new("server.maxConnectionsPerClient", "must be from 1 to 100000"));
    }
    Ok(Listener { addr: listen, field: listen_field, workers })
}

/// HTTP workers when `server.workers` is unset: half the CPUs, at least one. A call's session
/// and its stdio upstream's reader then share a thread on a 2-core machine (no hop between
/// threads: 36 instead of 52 us of CPU a call, and more calls a second), and the upstream
/// processes beside the service keep the other half.
fn default_workers(cpus: usize) -> usize {
    (cpus / 2).max(1)
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

#[cfg(test)]
mod tests {
    use super::{default_workers, IpRange};

    #[test]
    fn half_the_cpus_serve_hosts_and_never_none() {
        assert_eq!([1, 2, 3, 4, 16].map(default_workers), [1, 1, 1, 2, 8]);
    }

    #[test]
    fn ranges() {
        let r = IpRange::parse("10.0.0.0/8").unwrap();
        assert!(r.contains("10.1.2.3".parse().unwrap()) && !r.contains("11.0.0.1".parse().unwrap()));
        assert!(r.contains("::ffff:10.9.9.9".parse().unwrap()), "an IPv4 peer on a dual-stack socket");
        let one = IpRange::parse("127.0.0.1").unwrap();
        assert!(one.contains("127.0.0.1".parse().unwrap()) && !one.contains("127.0.0.2".parse().unwrap()));
        assert!(IpRange::parse("fd00::/8").unwrap().contains("fd12::1".parse().unwrap()));
        assert!(IpRange::parse("0.0.0.0/0").unwrap().contains("8.8.8.8".parse().unwrap()));
        for bad in ["10.0.0.0/33", "proxy.internal", "10.0.0/8", ""] {
            assert!(IpRange::parse(bad).is_none(), "{bad}");
        }
    }
}
