//! The layers in front of the MCP endpoints (`/mcp`, `/sse`, `/messages`) as one middleware:
//! the trace span outermost, then CORS (a preflight is answered before authentication, and
//! refusals stay readable by pages), then authentication. One `from_fn` instead of three:
//! each layer boxed a future and cloned its service on every request.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;

use super::{auth, cors, traces};

pub async fn mcp_endpoint<B: MessageBody + 'static>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let authenticated = move |req| auth::require(req, move |req| async move { next.call(req).await });
    traces::http_span(req, move |req| cors::browser_hosts(req, authenticated)).await
}
