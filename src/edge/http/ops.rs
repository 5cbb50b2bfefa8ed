//! Operations endpoints: liveness, readiness, Prometheus metrics.

use actix_web::{web, HttpResponse};
use serde_json::json;

use super::Edge;

pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// Ready = the upstream is initialized and its tools are listed. A shared cache (Redis) that
/// is down does not make a replica unready (it serves on its own meanwhile): `redis.status`
/// says "degraded" and why.
pub async fn readyz(edge: web::Data<Edge>) -> HttpResponse {
    let s = edge.router.status();
    let mut body = if s.ready {
        // Which protocol revision the upstream was found to speak (2026-07-28: stateless).
        let protocol = s.init.as_ref().and_then(|i| i.get("protocolVersion").cloned()).unwrap_or(serde_json::Value::Null);
        json!({"status": "ready", "upstream": s.describe, "protocol": protocol, "tools": s.tools.len(), "restarts": s.restarts})
    } else {
        json!({"status": "not ready", "upstream": s.describe, "error": s.last_error, "restarts": s.restarts})
    };
    if let Some(shared) = &edge.shared {
        body["redis"] = serde_json::to_value(shared.health()).unwrap_or_default();
    }
    if s.ready {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}

pub async fn metrics(edge: web::Data<Edge>) -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain; version=0.0.4; charset=utf-8").body(edge.metrics.render())
}
