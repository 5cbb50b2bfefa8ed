//! The HTTP server span of each MCP request (`POST /mcp`, `GET /sse`, ...): from the request
//! line to the response head, with its status, so a 401, 403 or 413 is in the trace too (a 429 of the per-client limit is
//! refused before it, with no span: it is counted in `mcp_gen_ui_refusals_total`). Its
//! parent is the caller's W3C `traceparent` / `tracestate`; the session's MCP span (one per
//! JSON-RPC request in the body) is its child. Nothing is done when tracing is off.

use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::{HttpMessage, HttpRequest};
use mcp_gen_ui_actors::trace::{attr, Attr, Kind, Span, TraceCx};

/// What the edge gave a request: its id (one, whoever asks) and its span's context.
#[derive(Clone)]
struct Traced {
    request_id: String,
    cx: TraceCx,
}

pub async fn http_span<B, Fut>(
    req: ServiceRequest,
    next: impl FnOnce(ServiceRequest) -> Fut,
) -> Result<ServiceResponse<B>, actix_web::Error>
where
    Fut: std::future::Future<Output = Result<ServiceResponse<B>, actix_web::Error>>,
{
    if !mcp_gen_ui_actors::trace::enabled() {
        return next(req).await;
    }
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let parent = TraceCx::remote(header("traceparent").as_deref(), header("tracestate").as_deref());
    let request_id = super::request_id(req.request());
    let method = req.method().as_str().to_string();
    let route = req.match_pattern().unwrap_or_else(|| req.path().chars().take(64).collect());
    let span = Span::start(
        format!("{method} {route}"),
        Kind::Server,
        &parent,
        vec![
            Attr::new(attr::HTTP_METHOD, method),
            Attr::new(attr::HTTP_ROUTE, route),
            Attr::new(attr::NETWORK_PROTOCOL, "http"),
            Attr::new(attr::REQUEST_ID, request_id.clone()),
        ],
    );
    req.extensions_mut().insert(Traced { request_id, cx: span.cx() });
    let res = next(req).await;
    match &res {
        Ok(r) => {
            let status = r.status();
            span.set(attr::HTTP_STATUS, i64::from(status.as_u16()));
            if status.is_server_error() {
                span.fail(status.as_u16().to_string(), status.canonical_reason().unwrap_or("server error"));
            }
        }
        Err(e) => span.fail("actix_error", e.to_string()),
    }
    res
}

/// The request id the edge span gave this request, if it was traced.
pub(super) fn request_id(req: &HttpRequest) -> Option<String> {
    req.extensions().get::<Traced>().map(|t| t.request_id.clone())
}

/// The edge span's context, for the messages of this request (none when tracing is off).
pub fn cx(req: &HttpRequest) -> TraceCx {
    req.extensions().get::<Traced>().map(|t| t.cx.clone()).unwrap_or_default()
}
