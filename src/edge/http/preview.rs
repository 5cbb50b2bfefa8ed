//! `/preview`: a page that renders any tool's `ui://` resource the way a web host does, so a
//! person can try the UIs without an MCP host. The View runs in an inner sandboxed iframe inside
//! a sandbox proxy served from a different origin (127.0.0.1 and localhost on the same port are
//! different origins), with the resource's CSP applied, speaking JSON-RPC over postMessage.

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

use super::Edge;

const PREVIEW: &str = include_str!("../../../templates/preview.html");
const SANDBOX: &str = include_str!("../../../templates/sandbox.html");

/// The other loopback name for the same port: a different origin for the sandbox proxy.
pub fn sandbox_origin(host: &str) -> String {
    let (name, port) = match host.rsplit_once(':') {
        Some((n, p)) if !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) => (n, Some(p)),
        _ => (host, None),
    };
    let other = match name.to_ascii_lowercase().as_str() {
        "127.0.0.1" => "localhost",
        "localhost" => "127.0.0.1",
        "[::1]" => "localhost",
        // Any other name: same origin. The inner iframe still has an opaque origin of its own.
        _ => name,
    };
    match port {
        Some(p) => format!("http://{other}:{p}"),
        None => format!("http://{other}"),
    }
}

pub async fn page(req: HttpRequest, edge: web::Data<Edge>) -> HttpResponse {
    if let Err(r) = edge.guard(&req) {
        return r;
    }
    let host = req.connection_info().host().to_string();
    let sandbox = format!("{}/preview/sandbox", sandbox_origin(&host));
    // A data: icon, so that the browser asks for no /favicon.ico (a 404 in the console).
    let html = PREVIEW.replace("__SANDBOX_URL_JSON__", &json!(sandbox).to_string()).replacen(
        "<head>",
        r#"<head><link rel="icon" href="data:,">"#,
        1,
    );
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header(("cache-control", "no-store"))
        .insert_header(("content-security-policy", format!("default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:; frame-src {}; connect-src 'self'", sandbox_origin(&host))))
        .body(html)
}

/// The sandbox's CSP. Only the preview page that uses it may frame it: the origin that serves
/// /preview for this sandbox origin (the other loopback name, same port), or the same origin.
/// CSP cannot name an IPv6 literal (Chromium logs an error for `http://[::1]:*` on every load and
/// ignores it), so a preview opened at http://[::1] cannot frame its sandbox: use localhost.
pub fn sandbox_csp(host: Option<&str>) -> String {
    let parent = host
        .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':')))
        .map(|h| format!(" {}", sandbox_origin(h)))
        .unwrap_or_default();
    format!(
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; media-src data: blob:; font-src data:; frame-ancestors 'self'{parent}"
    )
}

pub async fn sandbox(req: HttpRequest, edge: web::Data<Edge>) -> HttpResponse {
    if let Err(r) = edge.guard(&req) {
        return r;
    }
    let host = req.headers().get("host").and_then(|h| h.to_str().ok());
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header(("cache-control", "no-store"))
        // The View inherits this policy (srcdoc) and adds the resource's own CSP on top.
        .insert_header(("content-security-policy", sandbox_csp(host)))
        .body(SANDBOX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sandbox_is_on_the_other_loopback_name() {
        assert_eq!(sandbox_origin("127.0.0.1:8080"), "http://localhost:8080");
        assert_eq!(sandbox_origin("localhost:9000"), "http://127.0.0.1:9000");
        assert_eq!(sandbox_origin("mcp.internal:8080"), "http://mcp.internal:8080");
        assert_eq!(sandbox_origin("localhost"), "http://127.0.0.1");
        assert_eq!(sandbox_origin("[::1]:8080"), "http://localhost:8080");
    }

    #[test]
    fn only_the_preview_page_may_frame_the_sandbox() {
        let csp = |h| sandbox_csp(Some(h)).rsplit_once("frame-ancestors ").unwrap().1.to_string();
        assert_eq!(csp("localhost:8080"), "'self' http://127.0.0.1:8080");
        assert_eq!(csp("127.0.0.1:9000"), "'self' http://localhost:9000");
        assert_eq!(csp("mcp.internal:8080"), "'self' http://mcp.internal:8080");
        assert_eq!(csp("evil; script-src *"), "'self'", "nothing but a host name gets into the policy");
        assert!(sandbox_csp(None).ends_with("frame-ancestors 'self'"));
        assert!(!sandbox_csp(Some("[::1]:8080")).contains('['), "CSP cannot name IPv6 literals");
    }
}
