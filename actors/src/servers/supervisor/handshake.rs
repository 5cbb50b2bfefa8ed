//! The handshake with an upstream server, on every (re)connect: `server/discover` first (an
//! MCP 2026-07-28 server answers it; then no initialize), else `initialize` and
//! `notifications/initialized`; then every page of `tools/list`.

use std::time::Duration;

use actix::prelude::*;
use serde_json::{json, Value};

use super::{ServerSupervisor, State};
use crate::mcp::jsonrpc;
use crate::mcp::revision_2026;
use crate::proxy::router::Router;
use crate::servers::listing::{await_result, list_bounded, ListBounds};
use crate::upstream::{UpstreamError, UpstreamSpec};

/// The protocol revision we ask the upstream for; it may answer with another it supports.
pub const UPSTREAM_PROTOCOL_VERSION: &str = "2025-11-25";
pub(crate) const INIT_TIMEOUT: Duration = Duration::from_secs(30);
/// A session-era upstream may ignore a method it does not know rather than refuse it.
const DISCOVER_TIMEOUT: Duration = Duration::from_secs(5);

impl ServerSupervisor {
    /// server/discover (MCP 2026-07-28), else initialize -> notifications/initialized; then
    /// tools/list (every page) -> Ready. The era is found again on every (re)connect: a
    /// restarted upstream may be a newer build.
    pub(super) fn initialize(&mut self, ctx: &mut Context<Self>, gen: u64) {
        let params = json!({
            "protocolVersion": UPSTREAM_PROTOCOL_VERSION,
            // The proxy answers these by asking a connected host, so it declares them. A sampling
            // or elicitation asked as a task goes to a host that runs it as one, or is asked
            // plainly of one that does not (the server gets the result at once).
            "capabilities": {"sampling": {}, "elicitation": {}, "roots": {"listChanged": true},
                "tasks": {"requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}}}},
            "clientInfo": {"name": "mcp-gen-ui", "version": env!("CARGO_PKG_VERSION")},
        });
        let router = self.router.clone();
        let bounds = self.list_bounds;
        router.set_upstream_meta(None);
        // Legacy HTTP+SSE has no 2026 form: no point asking.
        let probe = !matches!(self.spec, UpstreamSpec::Sse { .. });
        let fut = async move {
            if probe {
                if let Some(init) = discover(&router).await {
                    let tools = list_all_tools(&router, bounds).await?;
                    return Ok((init, tools));
                }
            }
            let rx = router.internal_request("initialize", params);
            let init = await_result(rx, INIT_TIMEOUT, "initialize").await?;
            router.send(jsonrpc::notification("notifications/initialized", Value::Null))?;
            let tools = list_all_tools(&router, bounds).await?;
            Ok::<_, UpstreamError>((init, tools))
        };
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
            if gen != act.generation || act.state == State::Stopped {
                return;
            }
            match res {
                Ok((init, tools)) => act.became_ready(init, tools),
                Err(why) => act.lost(ctx, why.to_string()),
            }
        }));
    }
}

/// What the proxy declares to a 2026 upstream on every request: it answers sampling,
/// elicitation and roots by asking the host whose call it is.
fn upstream_meta() -> serde_json::Map<String, Value> {
    let meta = json!({
        revision_2026::META_VERSION: revision_2026::VERSION,
        revision_2026::META_CAPS: {"sampling": {}, "elicitation": {}, "roots": {}},
        revision_2026::META_CLIENT: {"name": "mcp-gen-ui", "version": env!("CARGO_PKG_VERSION")},
    });
    meta.as_object().cloned().unwrap_or_default()
}

/// Asks for `server/discover`. A 2026 upstream answers with the versions it speaks; the proxy
/// then speaks 2026 to it, and the answer stands in for initialize's. Any error, or no
/// version in common, means the session era.
async fn discover(router: &Router) -> Option<Value> {
    let rx = router.internal_request("server/discover", json!({"_meta": upstream_meta()}));
    let result = match await_result(rx, DISCOVER_TIMEOUT, "server/discover").await {
        Ok(r) => r,
        Err(why) => {
            tracing::debug!(component = "upstream", event = "discover_declined", reason = %why, "upstream does not speak MCP 2026-07-28; initializing");
            return None;
        }
    };
    let speaks = result
        .get("supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(|x| x.as_str() == Some(revision_2026::VERSION)));
    if !speaks {
        return None;
    }
    router.set_upstream_meta(Some(upstream_meta()));
    let server_info = result.get("_meta").and_then(|m| m.get(revision_2026::META_SERVER)).or_else(|| result.get("serverInfo")).cloned();
    let mut init = json!({
        "protocolVersion": revision_2026::VERSION,
        "capabilities": result.get("capabilities").cloned().unwrap_or(json!({})),
        "serverInfo": server_info.unwrap_or(json!({"name": "?", "version": "?"})),
    });
    if let Some(i) = result.get("instructions") {
        init["instructions"] = i.clone();
    }
    tracing::info!(component = "upstream", event = "modern", "upstream speaks MCP 2026-07-28 (stateless): no initialize");
    Some(init)
}

/// Every page of `tools/list`, within `bounds`. A server without tools (no capability) has an
/// empty list.
pub(super) async fn list_all_tools(router: &Router, bounds: ListBounds) -> Result<Vec<Value>, UpstreamError> {
    list_bounded(router, "tools/list", "tools", INIT_TIMEOUT, bounds).await
}
