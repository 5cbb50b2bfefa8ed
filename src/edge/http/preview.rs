//! `/preview`: a page that renders any tool's `ui://` resource the way a web host does, so a
//! person can try the UIs without an MCP host. The View runs in an inner sandboxed iframe inside
//! a sandbox proxy served from a different origin (127.0.0.1 and localhost on the same port are
//! different origins), with the resource's CSP applied, speaking JSON-RPC over postMessage.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

use std::sync::Arc;

use super::forwarded::{self, Reach};
use super::{guard, Edge};
use crate::config::settings::server::IpRange;

const PREVIEW: &str = include_str!("../../../templates/preview.html");
const SANDBOX: &str = include_str!("../../../templates/sandbox.html");

/// `server.sandboxListen` and `server.sandboxOrigin`: where the sandbox is served when the
/// preview is opened on a host name other than localhost.
#[derive(Debug, Clone)]
pub struct SandboxPlace {
    pub port: u16,
    /// Where browsers reach it (behind a proxy); None: the preview's host name, that port.
    pub origin: Option<String>,
}

/// The other loopback name for the same port: a different origin for the sandbox proxy, with no
/// listener of its own. None for any other name.
pub fn loopback_sandbox(reach: &Reach) -> Option<String> {
    let other = match reach.name().as_str() {
        "127.0.0.1" => "localhost",
        "localhost" => "127.0.0.1",
        "[::1]" => "localhost",
        _ => return None,
    };
    Some(match super::guard::split_port(&reach.host).1 {
        Some(p) => format!("{}://{other}:{p}", reach.scheme),
        None => format!("{}://{other}", reach.scheme),
    })
}

/// The sandbox's origin for a preview reached at `reach`: the other loopback name, else the
/// sandbox listener. None: the sandbox cannot have an origin of its own here.
pub fn sandbox_origin(reach: &Reach, place: Option<&SandboxPlace>) -> Option<String> {
    if let Some(o) = loopback_sandbox(reach) {
        return Some(o);
    }
    let place = place?;
    Some(match &place.origin {
        Some(o) => o.trim_end_matches('/').to_string(),
        None => {
            let name = super::guard::split_port(&reach.host).0;
            format!("{}://{name}:{}", reach.scheme, place.port)
        }
    })
}

/// Whom the sandbox believes about where it may be reached, on either listener.
pub struct SandboxTrust {
    pub allowed_hosts: Arc<Vec<String>>,
    pub allowed_origins: Arc<Vec<String>>,
    pub trusted_proxies: Arc<Vec<IpRange>>,
}

/// A preview page's origin the sandbox may be framed by: a localhost origin, an allowed
/// origin, or an origin whose host name is listed in the allowed hosts. An address is not
/// enough here (anyone can serve a page from one).
pub fn parent_allowed(origin: &str, allowed_hosts: &[String], allowed_origins: &[String]) -> bool {
    if guard::origin_allowed(origin, allowed_origins) {
        return true;
    }
    let Ok(u) = url::Url::parse(origin) else { return false };
    let Some(name) = u.host_str() else { return false };
    let with_port = u.port().map(|p| format!("{name}:{p}"));
    name.parse::<std::net::IpAddr>().is_err()
        && !name.starts_with('[')
        && allowed_hosts
            .iter()
            .any(|h| h != "*" && (h.eq_ignore_ascii_case(name) || with_port.as_deref().is_some_and(|w| h.eq_ignore_ascii_case(w))))
}

/// JSON for a `<script>`: no `<`, `>` or `&` can close the element or start a comment.
fn script_json(v: &serde_json::Value) -> String {
    v.to_string().replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026")
}

pub async fn page(req: HttpRequest, edge: web::Data<Edge>) -> HttpResponse {
    if let Err(r) = edge.guard(&req) {
        return r;
    }
    let Some(reach) = forwarded::reach(&req, &edge.trusted_proxies) else {
        return HttpResponse::BadRequest().content_type("text/plain; charset=utf-8").body("the Host header is not a host name\n");
    };
    let Some(sandbox) = sandbox_origin(&reach, edge.sandbox.as_ref()) else {
        let why = format!(
            "The preview runs each page in a sandbox that must have an origin of its own, and on {} it would share this page's origin.\n\
             Open it on localhost (http://localhost:PORT/preview) or http://127.0.0.1:PORT/preview, or start mcp-gen-ui with\n\
             server.sandboxListen (ADDR:PORT: the sandbox on another port) and, behind a proxy, server.sandboxOrigin.\n",
            reach.host
        );
        return HttpResponse::build(StatusCode::SERVICE_UNAVAILABLE)
            .content_type("text/plain; charset=utf-8")
            .insert_header(("cache-control", "no-store"))
            .body(why);
    };
    // A data: icon, so that the browser asks for no /favicon.ico (a 404 in the console).
    let html = PREVIEW.replace("__SANDBOX_URL_JSON__", &script_json(&json!(format!("{sandbox}/preview/sandbox")))).replacen(
        "<head>",
        r#"<head><link rel="icon" href="data:,">"#,
        1,
    );
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header(("cache-control", "no-store"))
        .insert_header(("vary", forwarded::VARY))
        // No site may frame the preview (its buttons spend LLM calls).
        .insert_header(("x-frame-options", "DENY"))
        .insert_header((
            "content-security-policy",
            format!("default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:; frame-src {sandbox}; connect-src 'self'; frame-ancestors 'none'"),
        ))
        .body(html)
}

/// The sandbox's CSP. Only the preview page that uses it may frame it: the origin it names in
/// `?host=` (checked: scheme and host name only), the other loopback name of its own host, or
/// its own origin. CSP cannot name an IPv6 literal (Chromium logs an error for
/// `http://[::1]:*` on every load and ignores it), so a preview opened at http://[::1] cannot
/// frame its sandbox: use localhost.
pub fn sandbox_csp(reach: Option<&Reach>, parent: Option<&str>) -> String {
    let mut ancestors = vec!["'self'".to_string()];
    if let Some(o) = reach.filter(|r| !r.host.starts_with('[')).and_then(loopback_sandbox) {
        ancestors.push(o);
    }
    if let Some(p) = parent.and_then(|p| url::Url::parse(p).ok()).filter(|u| matches!(u.scheme(), "http" | "https") && u.path() == "/") {
        let origin = p.origin().ascii_serialization();
        if let Some(host) = origin.split_once("://").map(|(_, h)| h.to_string()) {
            if forwarded::valid_host(&host) && !host.starts_with('[') && !ancestors.contains(&origin) {
                ancestors.push(origin);
            }
        }
    }
    format!(
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; media-src data: blob:; font-src data:; frame-ancestors {}",
        ancestors.join(" ")
    )
}

/// The sandbox proxy: a static page with nothing in it, on the main port (reached under the
/// other loopback name) or on `server.sandboxListen`.
pub async fn sandbox(req: HttpRequest, trust: Option<web::Data<SandboxTrust>>) -> HttpResponse {
    let Some(trust) = trust else {
        return HttpResponse::InternalServerError().body("the sandbox is not set up on this listener\n");
    };
    let header = |n: &str| req.headers().get(n).and_then(|v| v.to_str().ok());
    if let Err(why) = guard::check(header("host"), header("origin"), &trust.allowed_hosts, &trust.allowed_origins) {
        return HttpResponse::Forbidden().content_type("text/plain; charset=utf-8").body(format!("{why}\n"));
    }
    let reach = forwarded::reach(&req, &trust.trusted_proxies);
    // Only a preview this service serves may frame its sandbox: a parent named in ?host= must be
    // an origin the service may be reached at, never any site that links here.
    let parent = web::Query::<std::collections::HashMap<String, String>>::from_query(req.query_string())
        .ok()
        .and_then(|q| q.get("host").cloned())
        .filter(|p| parent_allowed(p, &trust.allowed_hosts, &trust.allowed_origins));
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header(("cache-control", "no-store"))
        // The View inherits this policy (srcdoc) and adds the resource's own CSP on top.
        .insert_header(("content-security-policy", sandbox_csp(reach.as_ref(), parent.as_deref())))
        .body(SANDBOX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(host: &str) -> Reach {
        Reach { scheme: "http", host: host.into() }
    }

    #[test]
    fn the_sandbox_is_on_the_other_loopback_name_or_its_own_listener() {
        assert_eq!(sandbox_origin(&at("127.0.0.1:8080"), None).unwrap(), "http://localhost:8080");
        assert_eq!(sandbox_origin(&at("localhost:9000"), None).unwrap(), "http://127.0.0.1:9000");
        assert_eq!(sandbox_origin(&at("localhost"), None).unwrap(), "http://127.0.0.1");
        assert_eq!(sandbox_origin(&at("[::1]:8080"), None).unwrap(), "http://localhost:8080");
        assert_eq!(sandbox_origin(&at("mcp.internal:8080"), None), None, "never the preview's own origin");
        let place = SandboxPlace { port: 8081, origin: None };
        assert_eq!(sandbox_origin(&at("mcp.internal:8080"), Some(&place)).unwrap(), "http://mcp.internal:8081");
        let proxied = SandboxPlace { port: 8081, origin: Some("https://sandbox.example.com/".into()) };
        let https = Reach { scheme: "https", host: "mcp.example.com".into() };
        assert_eq!(sandbox_origin(&https, Some(&proxied)).unwrap(), "https://sandbox.example.com");
    }

    #[test]
    fn only_the_preview_page_may_frame_the_sandbox() {
        let csp = |h: &str, p: Option<&str>| sandbox_csp(Some(&at(h)), p).rsplit_once("frame-ancestors ").unwrap().1.to_string();
        assert_eq!(csp("localhost:8080", None), "'self' http://127.0.0.1:8080");
        assert_eq!(csp("127.0.0.1:9000", None), "'self' http://localhost:9000");
        assert_eq!(csp("mcp.internal:8081", Some("http://mcp.internal:8080")), "'self' http://mcp.internal:8080");
        assert_eq!(csp("mcp.internal:8081", Some("http://x; script-src *")), "'self'", "nothing but an origin gets into the policy");
        assert!(sandbox_csp(None, None).ends_with("frame-ancestors 'self'"));
        assert!(!sandbox_csp(Some(&at("[::1]:8080")), None).contains('['), "CSP cannot name IPv6 literals");
    }

    #[test]
    fn only_origins_the_service_is_reached_at_may_frame_the_sandbox() {
        let hosts = vec!["mcp.example.com".to_string()];
        assert!(parent_allowed("http://localhost:8080", &[], &[]));
        assert!(parent_allowed("https://mcp.example.com", &hosts, &[]));
        assert!(parent_allowed("https://app.example.org", &[], &["https://app.example.org".into()]));
        assert!(!parent_allowed("https://evil.example", &hosts, &[]));
        assert!(!parent_allowed("http://203.0.113.7", &hosts, &[]), "an address is not enough");
        assert!(!parent_allowed("https://mcp.example.com.evil.example", &hosts, &[]));
        assert!(!parent_allowed("javascript:alert(1)", &hosts, &[]));
    }

    #[test]
    fn json_in_a_script_cannot_close_it() {
        let j = script_json(&json!("</script><script>alert(1)</script>"));
        assert!(!j.contains('<') && !j.contains('>'), "{j}");
    }
}
