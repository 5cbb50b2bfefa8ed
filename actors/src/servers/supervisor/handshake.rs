//! The handshake with an upstream server, on every (re)connect: `server/discover` first (an
//! MCP 2026-07-28 server answers it; then no initialize), else `initialize` and
//! `notifications/initialized`; then every page of `tools/list`.

use std::time::Duration;

use actix::prelude::*;
use serde_json::{json, Value};

use super::{ServerSupervisor, State};
use crate::mcp::jsonrpc;
use crate::mcp::revision_2026;
use crate::proxy::router::{Hearers, Router};
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
            "capabilities": client_capabilities(may_ask(&self.spec, self.router.hearers())),
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

/// Whether the server is offered the capabilities whose requests need an owner (sampling,
/// elicitation, roots): only where whose each request is can be known by construction. A
/// connection of one person's, or an endpoint that cannot tell people apart, is always one
/// person's; shared by several people, only a Streamable HTTP server can say whose a request
/// is (it sends it on the stream of the call it belongs to). A stdio pipe or a legacy SSE
/// stream carries everyone's requests on one channel: such a server is not invited to ask.
pub fn may_ask(spec: &UpstreamSpec, hearers: &Hearers) -> bool {
    *hearers != Hearers::People || matches!(spec, UpstreamSpec::StreamableHttp { .. })
}

/// What the proxy declares in `initialize`. It answers sampling, elicitation and roots by
/// asking the host whose request it is, so it declares them where it can know that (`ask`);
/// a sampling or elicitation asked as a task goes to a host that runs it as one, or is asked
/// plainly of one that does not (the server gets the result at once).
fn client_capabilities(ask: bool) -> Value {
    match ask {
        true => json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true},
            "tasks": {"requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}}}}),
        false => json!({}),
    }
}

/// What the proxy declares to a 2026 upstream on every request: it answers sampling,
/// elicitation and roots by asking the host whose call it is; and, to a server that offers the
/// tasks extension (`tasks`), that it takes tasks: it runs them for the calls that made them
/// (`proxy::task_runs`), so a task-only tool works for every host.
fn upstream_meta(tasks: bool) -> serde_json::Map<String, Value> {
    let mut caps = json!({"sampling": {}, "elicitation": {}, "roots": {}});
    if tasks {
        caps["extensions"] = json!({revision_2026::TASKS_EXTENSION: {}});
    }
    let meta = json!({
        revision_2026::META_VERSION: revision_2026::VERSION,
        revision_2026::META_CAPS: caps,
        revision_2026::META_CLIENT: {"name": "mcp-gen-ui", "version": env!("CARGO_PKG_VERSION")},
    });
    meta.as_object().cloned().unwrap_or_default()
}

/// Asks for `server/discover`. A 2026 upstream answers with the versions it speaks; the proxy
/// then speaks 2026 to it, and the answer stands in for initialize's. Any error, or no
/// version in common, means the session era.
async fn discover(router: &Router) -> Option<Value> {
    let rx = router.internal_request("server/discover", json!({"_meta": upstream_meta(false)}));
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
    let tasks =
        result.pointer("/capabilities/extensions").and_then(|e| e.get(revision_2026::TASKS_EXTENSION)).is_some_and(Value::is_object);
    router.set_upstream_meta(Some(upstream_meta(tasks)));
    let server_info = result.get("_meta").and_then(|m| m.get(revision_2026::META_SERVER)).or_else(|| result.get("serverInfo")).cloned();
    let mut init = json!({
        "protocolVersion": revision_2026::VERSION,
        "capabilities": result.get("capabilities").cloned().unwrap_or(json!({})),
        "serverInfo": server_info.unwrap_or(json!({"name": "?", "version": "?"})),
    });
    if let Some(i) = result.get("instructions") {
        init["instructions"] = i.clone();
    }
    if tasks {
        // The extension as 2025 hosts read it: tool calls run as tasks, which can be cancelled
        // (2026 has no tasks/list).
        init["capabilities"]["tasks"] = json!({"cancel": {}, "requests": {"tools": {"call": {}}}});
    }
    tracing::info!(component = "upstream", event = "modern", "upstream speaks MCP 2026-07-28 (stateless): no initialize");
    Some(init)
}

/// Every page of `tools/list`, within `bounds`. A server without tools (no capability) has an
/// empty list.
pub(super) async fn list_all_tools(router: &Router, bounds: ListBounds) -> Result<Vec<Value>, UpstreamError> {
    list_bounded(router, "tools/list", "tools", INIT_TIMEOUT, bounds).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn only_a_server_that_can_say_whose_a_request_is_may_ask_when_several_people_share_it() {
        let stdio = UpstreamSpec::Stdio { command: "s".into(), args: vec![], env: vec![], cwd: None };
        let url = url::Url::parse("http://127.0.0.1:1/mcp").unwrap();
        let http = UpstreamSpec::StreamableHttp { url: url.clone(), headers: vec![], bearer: None };
        let sse = UpstreamSpec::Sse { url, headers: vec![] };
        for spec in [&stdio, &http, &sse] {
            assert!(may_ask(spec, &Hearers::OnePerson), "{}: one person", spec.transport());
            assert!(may_ask(spec, &Hearers::Person(Arc::from("alice"))), "{}: a person's own", spec.transport());
        }
        assert!(may_ask(&http, &Hearers::People), "a call's own stream says whose");
        assert!(!may_ask(&stdio, &Hearers::People) && !may_ask(&sse, &Hearers::People), "one channel for everyone says nothing");
        let offered = client_capabilities(true);
        assert!(["sampling", "elicitation", "roots", "tasks"].iter().all(|c| offered.get(c).is_some()), "{offered}");
        assert_eq!(client_capabilities(false), json!({}), "not invited: nothing it would ask with is declared");
    }
}
