//! Operations endpoints: liveness, readiness, Prometheus metrics.

use actix_web::{web, HttpResponse};
use serde_json::json;

use super::Edge;

pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// Ready = the upstream is initialized and its tools are listed.
pub async fn readyz(edge: web::Data<Edge>) -> HttpResponse {
    let s = edge.router.status();
    if s.ready {
        HttpResponse::Ok().json(json!({"status": "ready", "upstream": s.describe, "tools": s.tools.len(), "restarts": s.restarts}))
    } else {
        HttpResponse::ServiceUnavailable()
            .json(json!({"status": "not ready", "upstream": s.describe, "error": s.last_error, "restarts": s.restarts}))
    }
}

pub async fn metrics(edge: web::Data<Edge>) -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain; version=0.0.4; charset=utf-8").body(edge.metrics.render())
}
