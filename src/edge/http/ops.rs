//! Operations endpoints: liveness, readiness, Prometheus metrics.

use actix_web::{web, HttpRequest, HttpResponse};
use mcp_gen_ui_actors::servers::fleet::Server;
use mcp_gen_ui_actors::servers::profiles::Discovery;
use serde_json::{json, Value};

use super::Edge;

pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// The tools of a server hosts are shown: what its `tools.allow` / `tools.deny` leave of its list.
fn shown_tools(catalog: &mcp_gen_ui_actors::servers::catalog::Catalog, server: &str) -> usize {
    catalog.tools().iter().filter(|t| &*t.server == server).count()
}

/// One server's state: what it is, the protocol revision it was found to speak (2026-07-28:
/// stateless), its tools (those shown, and those its own list has beyond them), its restarts and
/// its last error.
fn server_state(s: &Server, catalog: &mcp_gen_ui_actors::servers::catalog::Catalog) -> Value {
    let status = s.router.status();
    let protocol = status.init.as_ref().and_then(|i| i.get("protocolVersion").cloned()).unwrap_or(Value::Null);
    let mut v =
        json!({"name": &*s.name, "state": s.state(), "upstream": status.describe, "required": s.required, "restarts": status.restarts});
    let tools = shown_tools(catalog, &s.name);
    if let Some(pool) = &s.pool {
        // Each person's connection, started on demand: how many run (names are in the metrics,
        // whose principal labels are bounded; this endpoint does not name people).
        let (running, max) = pool.running();
        v["state"] = json!("on demand");
        v["tools"] = json!(tools);
        v["perPrincipal"] = json!({"running": running, "max": max, "idleSecs": pool.idle_after().as_secs()});
        return v;
    }
    if status.ready {
        v["protocol"] = protocol;
        // What hosts are shown, as the total is: a deny that hides tools shows here.
        v["tools"] = json!(tools);
        v["toolsHidden"] = json!(status.tools.len().saturating_sub(tools));
    } else {
        v["error"] = json!(status.last_error);
    }
    v
}

/// Ready = every required server is initialized and its tools are listed (with one server
/// behind `--upstream`, that one; the body keeps its fields at the top as well). A shared cache
/// (Redis) that is down does not make a replica unready (it serves on its own meanwhile):
/// `redis.status` says "degraded" and why.
pub async fn readyz(req: HttpRequest, edge: web::Data<Edge>) -> HttpResponse {
    // What servers run, their programs and the Redis address: not for a DNS-rebinding page.
    if let Err(r) = edge.guard(&req) {
        return r;
    }
    let fleet = &edge.session.fleet;
    let servers = fleet.servers();
    let ready = servers.iter().filter(|s| s.required).all(|s| s.router.status().ready) && !servers.is_empty();
    let catalog = fleet.catalog();
    let list: Vec<Value> = servers.iter().map(|s| server_state(s, &catalog)).collect();
    let mut body = match fleet.bare() {
        Some(one) => {
            let s = one.router.status();
            let mut b = if s.ready {
                let protocol = s.init.as_ref().and_then(|i| i.get("protocolVersion").cloned()).unwrap_or(Value::Null);
                json!({"status": "ready", "upstream": s.describe, "protocol": protocol, "tools": shown_tools(&catalog, &one.name), "restarts": s.restarts})
            } else {
                json!({"status": "not ready", "upstream": s.describe, "error": s.last_error, "restarts": s.restarts})
            };
            b["servers"] = json!(list);
            b
        }
        None => json!({"status": if ready { "ready" } else { "not ready" }, "servers": list, "tools": fleet.catalog().tools().len()}),
    };
    if let Some(shared) = &edge.shared {
        body["redis"] = serde_json::to_value(shared.health()).unwrap_or_default();
    }
    // Warming never holds readiness back: it only reports how far it has come. `done` counts
    // written pages only; tools left with the template are counted apart, by reason.
    if let Some(w) = &edge.session.warm {
        let (done, total) = w.get();
        body["warm"] = json!({"done": done, "total": total, "templates": w.templates()});
    }
    // Each profile's tools/list, in tools and bytes (serializing lists is CPU: off the worker).
    let profiles = edge.session.profiles.all();
    if !profiles.is_empty() {
        let deps = edge.session.clone();
        let sizes = web::block(move || {
            let one = |p: Option<&mcp_gen_ui_actors::servers::profiles::Profile>| {
                let (tools, bytes) = mcp_gen_ui_actors::session::lists::profile_list_size(&deps, p);
                let (path, discovery) = match p {
                    Some(p) => (format!("/mcp/{}", p.name), if p.discovery == Discovery::Search { "search" } else { "list" }),
                    None => ("/mcp".to_string(), "list"),
                };
                json!({"path": path, "discovery": discovery, "tools": tools, "listBytes": bytes})
            };
            std::iter::once(one(None)).chain(profiles.iter().map(|p| one(Some(p)))).collect::<Vec<Value>>()
        })
        .await;
        body["profiles"] = json!(sizes.unwrap_or_default());
    }
    if ready {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}

pub async fn metrics(req: HttpRequest, edge: web::Data<Edge>) -> HttpResponse {
    if let Err(r) = edge.guard(&req) {
        return r;
    }
    HttpResponse::Ok().content_type("text/plain; version=0.0.4; charset=utf-8").body(edge.metrics.render())
}
