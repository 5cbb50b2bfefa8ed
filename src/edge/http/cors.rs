//! CORS for browser hosts on `/mcp`, `/sse` and `/messages`: a web page on an origin the
//! DNS-rebinding check allows (localhost ones, and `--allowed-origin`) may call the service from
//! the browser. Its preflight is answered here, before authentication (a browser sends no
//! credentials on it), and its answers, refusals included, carry what it needs to read them.
//! Other origins get no CORS headers at all (the Origin check refuses their requests anyway).

use actix_web::body::{BoxBody, EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{web, HttpResponse};

use super::{guard, Edge};

/// Request headers an MCP client sends besides the CORS-safelisted ones.
const ALLOWED_HEADERS: &[&str] =
    &["authorization", "content-type", "mcp-session-id", "mcp-protocol-version", "last-event-id", "mcp-method", "mcp-name", "x-request-id"];
/// 2026-07-28 hosts repeat marked tool arguments in `Mcp-Param-<name>` headers.
const PARAM_PREFIX: &str = "mcp-param-";
const EXPOSED: &str = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate";
const METHODS: &str = "GET, POST, DELETE, OPTIONS";

/// The request headers of a preflight's `Access-Control-Request-Headers` that may be sent:
/// the MCP ones and `Mcp-Param-*`, lower case; None if it asks for anything else.
pub fn allowed_request_headers(asked: &str) -> Option<String> {
    let mut out = Vec::new();
    for h in asked.split(',').map(|h| h.trim().to_ascii_lowercase()).filter(|h| !h.is_empty()) {
        let param = h
            .strip_prefix(PARAM_PREFIX)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        if !(ALLOWED_HEADERS.contains(&h.as_str()) || param) || h.len() > 128 {
            return None;
        }
        out.push(h);
    }
    if out.len() > 64 {
        return None;
    }
    Some(out.join(", "))
}

/// The CORS layer of the resources browser hosts use (in `layers::mcp_endpoint`).
pub async fn browser_hosts<B: MessageBody, Fut>(
    req: ServiceRequest,
    next: impl FnOnce(ServiceRequest) -> Fut,
) -> Result<ServiceResponse<EitherBody<B, BoxBody>>, actix_web::Error>
where
    Fut: std::future::Future<Output = Result<ServiceResponse<B>, actix_web::Error>>,
{
    let origin = req.headers().get(actix_web::http::header::ORIGIN).and_then(|v| v.to_str().ok()).map(str::to_string);
    let allowed = match (&origin, req.app_data::<web::Data<Edge>>()) {
        (Some(o), Some(edge)) => guard::origin_allowed(o, &edge.allowed_origins),
        _ => false,
    };
    if req.method() == Method::OPTIONS && req.headers().contains_key("access-control-request-method") {
        let asked = req.headers().get("access-control-request-headers").and_then(|v| v.to_str().ok()).unwrap_or("");
        let res = match (allowed, allowed_request_headers(asked)) {
            (true, Some(headers)) => {
                let mut r = HttpResponse::NoContent();
                r.insert_header(("access-control-allow-origin", origin.clone().unwrap_or_default()))
                    .insert_header(("access-control-allow-methods", METHODS))
                    .insert_header(("access-control-max-age", "600"))
                    .insert_header(("vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"));
                if !headers.is_empty() {
                    r.insert_header(("access-control-allow-headers", headers));
                }
                r.finish()
            }
            // No CORS headers: the browser refuses the request itself.
            _ => HttpResponse::build(StatusCode::FORBIDDEN)
                .insert_header(("vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"))
                .content_type("text/plain; charset=utf-8")
                .body("this origin, or a header it asks to send, is not allowed (start mcp-gen-ui with --allowed-origin ORIGIN)\n"),
        };
        return Ok(req.into_response(res).map_into_right_body());
    }
    let mut res = next(req).await?;
    let headers = res.headers_mut();
    headers.append(actix_web::http::header::VARY, HeaderValue::from_static("Origin"));
    if let (true, Some(o)) = (allowed, origin.and_then(|o| HeaderValue::from_str(&o).ok())) {
        headers.insert(HeaderName::from_static("access-control-allow-origin"), o);
        headers.insert(HeaderName::from_static("access-control-expose-headers"), HeaderValue::from_static(EXPOSED));
    }
    Ok(res.map_into_left_body())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preflight_headers_are_the_mcp_ones_and_params() {
        assert_eq!(
            allowed_request_headers("Content-Type, Authorization, mcp-session-id, Mcp-Param-Region").as_deref(),
            Some("content-type, authorization, mcp-session-id, mcp-param-region")
        );
        assert_eq!(allowed_request_headers("").as_deref(), Some(""));
        assert_eq!(allowed_request_headers("cookie"), None);
        assert_eq!(allowed_request_headers("mcp-param-"), None);
        assert_eq!(allowed_request_headers("mcp-param-a b"), None);
    }
}
