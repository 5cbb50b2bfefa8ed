//! DNS-rebinding protection: the Host and Origin headers must name this machine or an entry of
//! the allow-lists. Pure functions, so the rules are tested without a server.

/// Hosts that are always local.
const LOCAL: &[&str] = &["localhost", "127.0.0.1", "[::1]", "::1"];

/// `host:port` or `[v6]:port` into the host (IPv6 literals keep their brackets) and the port.
/// Only digits are a port: `a:b` stays whole, for the caller's checks to refuse. The one
/// splitter of the edge (the forwarded-header checks and the preview use it too).
pub fn split_port(host: &str) -> (&str, Option<&str>) {
    if let Some(rest) = host.strip_prefix('[') {
        return match rest.find(']') {
            Some(i) => (&host[..i + 2], host[i + 2..].strip_prefix(':')),
            None => (host, None),
        };
    }
    match host.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => (h, Some(p)),
        _ => (host, None),
    }
}

/// `host:port` or `[v6]:port` without the port.
fn strip_port(host: &str) -> &str {
    split_port(host).0
}

fn is_local(host: &str) -> bool {
    let h = strip_port(host);
    LOCAL.iter().any(|l| l.eq_ignore_ascii_case(h))
}

/// An IP literal (`10.0.0.5:9464`, `[fd00::1]:8080`). A DNS-rebinding page can only make the
/// browser send its own host name, never an address: so a Host that is an address is always
/// allowed (Prometheus and orchestrators' health checks reach the service by address).
fn is_ip_literal(host: &str) -> bool {
    let h = strip_port(host);
    h.parse::<std::net::Ipv4Addr>().is_ok()
        || h.strip_prefix('[').and_then(|v| v.strip_suffix(']')).is_some_and(|v| v.parse::<std::net::Ipv6Addr>().is_ok())
}

pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    if is_local(host) || is_ip_literal(host) || allowed.iter().any(|a| a == "*") {
        return true;
    }
    let bare = strip_port(host);
    allowed.iter().any(|a| a.eq_ignore_ascii_case(host) || a.eq_ignore_ascii_case(bare))
}

pub fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    if allowed.iter().any(|a| a == "*" || a.eq_ignore_ascii_case(origin)) {
        return true;
    }
    match url::Url::parse(origin) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => u.host_str().is_some_and(is_local),
        _ => false,
    }
}

/// Which header a request was refused for; the text says how to allow it.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum Refused {
    #[error("Host {0:?} is not allowed (DNS rebinding protection); start mcp-gen-ui with --allowed-host {host} to accept it", host = strip_port(.0))]
    Host(String),
    #[error("Origin {0:?} is not allowed (DNS rebinding protection); start mcp-gen-ui with --allowed-origin {0} to accept it")]
    Origin(String),
}

/// Checks both headers.
pub fn check(host: Option<&str>, origin: Option<&str>, allowed_hosts: &[String], allowed_origins: &[String]) -> Result<(), Refused> {
    if let Some(h) = host.filter(|h| !host_allowed(h, allowed_hosts)) {
        return Err(Refused::Host(h.to_string()));
    }
    if let Some(o) = origin.filter(|o| !origin_allowed(o, allowed_origins)) {
        return Err(Refused::Origin(o.to_string()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_hosts_pass() {
        for h in ["localhost", "localhost:8080", "127.0.0.1:1", "[::1]:8080", "LOCALHOST"] {
            assert!(host_allowed(h, &[]), "{h}");
        }
    }

    #[test]
    fn foreign_hosts_fail_unless_listed() {
        assert!(!host_allowed("evil.example.com", &[]));
        assert!(!host_allowed("localhost.evil.com:80", &[]));
        assert!(host_allowed("10.0.0.5:9464", &[]) && host_allowed("[fd00::1]:8080", &[]), "an address cannot be a rebinding");
        assert!(!host_allowed("10.0.0.5.evil.com", &[]));
        assert!(host_allowed("mcp.internal:8080", &["mcp.internal".into()]));
        assert!(host_allowed("anything", &["*".into()]));
    }

    #[test]
    fn origins() {
        assert!(origin_allowed("http://localhost:6274", &[]));
        assert!(origin_allowed("http://127.0.0.1", &[]));
        assert!(!origin_allowed("http://evil.example.com", &[]));
        assert!(!origin_allowed("null", &[]));
        assert!(origin_allowed("https://app.example.com", &["https://app.example.com".into()]));
    }

    #[test]
    fn error_names_the_header_and_the_fix() {
        let e = check(Some("evil.example.com:8080"), None, &[], &[]).unwrap_err();
        assert_eq!(e, Refused::Host("evil.example.com:8080".into()));
        assert!(e.to_string().contains("--allowed-host evil.example.com to"));
        let e = check(Some("localhost"), Some("http://evil.example.com"), &[], &[]).unwrap_err();
        assert!(matches!(e, Refused::Origin(_)) && e.to_string().contains("--allowed-origin http://evil.example.com"));
    }
}
