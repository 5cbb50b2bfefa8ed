//! Under which name and scheme a client reached this service. From the `Host` header of the
//! request itself; from `Forwarded` or `X-Forwarded-Host`/`X-Forwarded-Proto` only when the
//! connection comes from a configured trusted proxy (`server.trustedProxies`), never from
//! anyone else. Whatever the source, the host must be a host name or an IP literal with an
//! optional port, so it can be placed in a URL, a CSP or a page without escaping surprises.

use std::net::IpAddr;

use actix_web::HttpRequest;

use super::guard::split_port;
use crate::config::settings::server::IpRange;

/// Where the client addressed this service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    /// `http` or `https`.
    pub scheme: &'static str,
    /// `host[:port]`, checked by [`valid_host`].
    pub host: String,
}

impl Reach {
    pub fn origin(&self) -> String {
        format!("{}://{}", self.scheme, self.host)
    }

    /// The host name alone (no port), lower case.
    pub fn name(&self) -> String {
        split_port(&self.host).0.to_ascii_lowercase()
    }
}

/// The headers that may change what [`reach`] answers: responses built from it vary on them.
pub const VARY: &str = "Host, Forwarded, X-Forwarded-Host, X-Forwarded-Proto";

/// Where the client reached us, or None when what it says is not a usable host.
pub fn reach(req: &HttpRequest, trusted: &[IpRange]) -> Option<Reach> {
    let header = |n: &str| req.headers().get(n).and_then(|v| v.to_str().ok()).map(str::trim);
    let from_proxy = req.peer_addr().is_some_and(|p| trusted.iter().any(|r| r.contains(p.ip())));
    let (mut scheme, mut host) = ("http", header("host").map(str::to_string));
    if from_proxy {
        // X-Forwarded-* first: what most proxies write themselves (a Forwarded header they pass
        // through could be the client's). Of several values, the last: the nearest proxy's.
        let all = |n: &str| req.headers().get_all(n).filter_map(|v| v.to_str().ok()).collect::<Vec<_>>().join(",");
        let last = |v: String| v.rsplit(',').next().unwrap_or_default().trim().to_string();
        let (xhost, xproto, fwd) = (all("x-forwarded-host"), all("x-forwarded-proto"), all("forwarded"));
        if !xhost.is_empty() || !xproto.is_empty() {
            if !xhost.is_empty() {
                host = Some(last(xhost));
            }
            if last(xproto).eq_ignore_ascii_case("https") {
                scheme = "https";
            }
        } else if !fwd.is_empty() {
            // Elements (`for=...;host=...;proto=...`) from the nearest proxy's back: each of
            // host and proto from the nearest element that has it.
            let (mut fhost, mut fproto) = (None, None);
            for element in fwd.rsplit(',') {
                for pair in element.split(';') {
                    let Some((k, v)) = pair.trim().split_once('=') else { continue };
                    let v = v.trim().trim_matches('"');
                    match k.trim().to_ascii_lowercase().as_str() {
                        "host" if fhost.is_none() => fhost = Some(v.to_string()),
                        "proto" if fproto.is_none() => fproto = Some(v.eq_ignore_ascii_case("https")),
                        _ => {}
                    }
                }
            }
            if fhost.is_some() {
                host = fhost;
            }
            if fproto == Some(true) {
                scheme = "https";
            }
        }
    }
    host.filter(|h| valid_host(h)).map(|host| Reach { scheme, host })
}

/// The client's address: the peer's own, or, when the peer is a trusted proxy, the nearest
/// address in `X-Forwarded-For` (or `Forwarded: for=`) that is not itself a trusted proxy (the
/// entries to its left could be written by anyone).
pub fn client_ip(req: &HttpRequest, trusted: &[IpRange]) -> Option<IpAddr> {
    let peer = req.peer_addr()?.ip();
    let is_trusted = |ip: IpAddr| trusted.iter().any(|r| r.contains(ip));
    if !is_trusted(peer) {
        return Some(peer);
    }
    let header = |n: &str| req.headers().get_all(n).filter_map(|v| v.to_str().ok()).collect::<Vec<_>>().join(",");
    let mut chain: Vec<IpAddr> = Vec::new();
    let (xff, forwarded) = (header("x-forwarded-for"), header("forwarded"));
    // As in `reach`: X-Forwarded-For first, what proxies write themselves.
    if !xff.is_empty() {
        chain.extend(xff.split(',').filter_map(parse_node));
    } else if !forwarded.is_empty() {
        for element in forwarded.split(',') {
            for pair in element.split(';') {
                if let Some((k, v)) = pair.trim().split_once('=') {
                    if k.trim().eq_ignore_ascii_case("for") {
                        chain.extend(parse_node(v));
                    }
                }
            }
        }
    }
    Some(chain.into_iter().rev().find(|ip| !is_trusted(*ip)).unwrap_or(peer))
}

/// An address as forwarded headers write it: `1.2.3.4`, `"[2001:db8::1]:4711"`, `1.2.3.4:80`.
fn parse_node(v: &str) -> Option<IpAddr> {
    let v = v.trim().trim_matches('"');
    if let Ok(ip) = v.parse() {
        return Some(ip);
    }
    if let Some(inner) = v.strip_prefix('[') {
        return inner.split(']').next()?.parse().ok();
    }
    v.rsplit_once(':').and_then(|(h, _)| h.parse().ok())
}

/// `name[:port]` where name is a DNS name (letters, digits, `-`, `.`), an IPv4 literal or an
/// `[IPv6]` literal, and port is 1 to 5 digits. Nothing else: no spaces, quotes, slashes or
/// angle brackets can pass.
pub fn valid_host(host: &str) -> bool {
    if host.is_empty() || host.len() > 260 {
        return false;
    }
    if let Some(i) = host.find(']') {
        let rest = &host[i + 1..];
        if !host.starts_with('[') || !(rest.is_empty() || rest.starts_with(':')) {
            return false;
        }
    }
    let (name, port) = split_port(host);
    if let Some(p) = port {
        if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
    }
    if let Some(v6) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        return v6.parse::<std::net::Ipv6Addr>().is_ok();
    }
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| !l.is_empty() && l.len() <= 63 && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    fn req(peer: &str, headers: &[(&str, &str)]) -> HttpRequest {
        let mut r = TestRequest::default().peer_addr(peer.parse().unwrap());
        for (k, v) in headers {
            r = r.insert_header((*k, *v));
        }
        r.to_http_request()
    }

    #[test]
    fn nothing_may_follow_an_address_but_a_port() {
        assert!(valid_host("[::1]:8080") && valid_host("[::1]"));
        assert!(!valid_host("[::1]@evil.example/x"));
        assert!(!valid_host("x]@evil.example"));
    }

    #[test]
    fn the_proxys_own_headers_win_over_a_passed_through_forwarded() {
        let trusted = [IpRange::parse("10.0.0.0/8").unwrap()];
        let r = req(
            "10.1.1.1:5000",
            &[("host", "internal:8080"), ("forwarded", "host=evil.example;proto=https"), ("x-forwarded-host", "mcp.example.com")],
        );
        assert_eq!(reach(&r, &trusted).unwrap().origin(), "http://mcp.example.com");
        let r = req("10.1.1.1:5000", &[("forwarded", "host=forged.example, host=mcp.example.com;proto=https")]);
        assert_eq!(reach(&r, &trusted).unwrap().origin(), "https://mcp.example.com", "the last element is the proxy's");
        let ip = client_ip(&req("10.0.0.2:5000", &[("forwarded", "for=9.9.9.9"), ("x-forwarded-for", "198.51.100.7")]), &trusted).unwrap();
        assert_eq!(ip.to_string(), "198.51.100.7");
    }

    #[test]
    fn the_client_address_comes_from_a_trusted_proxy_only() {
        let trusted = [IpRange::parse("10.0.0.0/8").unwrap()];
        let ip = |peer: &str, h: &[(&str, &str)]| client_ip(&req(peer, h), &trusted).unwrap().to_string();
        assert_eq!(ip("203.0.113.9:5000", &[("x-forwarded-for", "1.1.1.1")]), "203.0.113.9", "a stranger's header is ignored");
        assert_eq!(ip("10.0.0.2:5000", &[("x-forwarded-for", "1.1.1.1, 198.51.100.7")]), "198.51.100.7", "the nearest untrusted entry");
        assert_eq!(
            ip("10.0.0.2:5000", &[("x-forwarded-for", "198.51.100.7, 10.0.0.3")]),
            "198.51.100.7",
            "proxies in the chain are skipped"
        );
        assert_eq!(ip("10.0.0.2:5000", &[("forwarded", r#"for="[2001:db8::1]:4711";proto=https"#)]), "2001:db8::1");
        assert_eq!(ip("10.0.0.2:5000", &[("x-forwarded-for", "not an address")]), "10.0.0.2", "nothing usable: the proxy itself");
    }

    #[test]
    fn forwarded_headers_count_only_from_trusted_proxies() {
        let trusted = [IpRange::parse("10.0.0.0/8").unwrap()];
        let forged = [("host", "127.0.0.1:8080"), ("x-forwarded-host", "evil.example"), ("x-forwarded-proto", "https")];
        assert_eq!(reach(&req("203.0.113.9:5000", &forged), &trusted).unwrap().origin(), "http://127.0.0.1:8080");
        assert_eq!(reach(&req("10.1.1.1:5000", &forged), &trusted).unwrap().origin(), "https://evil.example");
        let fwd = [("host", "internal:8080"), ("forwarded", "for=1.2.3.4;host=\"mcp.example.com\";proto=https, for=10.0.0.1")];
        assert_eq!(reach(&req("10.1.1.1:5000", &fwd), &trusted).unwrap().origin(), "https://mcp.example.com");
        assert_eq!(reach(&req("203.0.113.9:5000", &fwd), &trusted).unwrap().origin(), "http://internal:8080");
    }

    #[test]
    fn what_is_not_a_host_is_refused() {
        let trusted = [IpRange::parse("127.0.0.1").unwrap()];
        for bad in ["x.evil</script><script>alert(1)</script>", "a b", "evil.example/path", "\"quoted\"", "host:port", "[::1", "a..b"] {
            assert!(reach(&req("127.0.0.1:1", &[("host", "localhost"), ("x-forwarded-host", bad)]), &trusted).is_none(), "{bad}");
        }
        for good in ["localhost:8080", "mcp.example.com", "[::1]:8080", "10.0.0.1:443"] {
            assert!(valid_host(good), "{good}");
        }
    }
}
