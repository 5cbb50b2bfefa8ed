//! The `_ui_*` tools, called by a UI host: answered here (see `ui_tools::commands`), never
//! forwarded, with progress on the call's own stream; the ones that ask the LLM count
//! against `limits.llmCallsPerMinute`.

use std::time::Instant;

use actix::prelude::*;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::mcp::jsonrpc;
use crate::messages::HostEvent;
use crate::policy::Kind;
use crate::rate_window;
use crate::session::access::Denied;
use crate::session::ui_tools::{self, commands};
use crate::session::HostSession;

impl HostSession {
    /// `_ui_*` tools: answered here (see `ui_tools::commands`), never forwarded.
    pub(in crate::session) fn ui_tool_call(&mut self, ctx: &mut Context<Self>, msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let params = jsonrpc::params(&msg).clone();
        let name = params.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        let mut args = params.get("arguments").cloned().unwrap_or(json!({}));
        let profile = match self.profile_now() {
            Ok(p) => p,
            Err(gone) => return self.answer(gone.answer(id)),
        };
        let progress = params.pointer("/_meta/progressToken").cloned();
        let deps = self.deps.clone();
        self.with_catalog(ctx, id.clone(), move |act, ctx, catalog| {
            // In a profile: its tools, named as it shows them or as the catalog does.
            let known: Vec<String> =
                catalog.tools().iter().filter(|t| profile.as_deref().is_none_or(|p| p.includes(t))).map(|t| t.name.clone()).collect();
            if let (Some(p), Some(t)) = (profile.as_deref(), args.get("toolName").and_then(Value::as_str)) {
                args["toolName"] = json!(p.resolve(t));
            }
            let access = act.access();
            let shown = |n: &str| catalog.tool(n).is_some_and(|t| access.sees_tool(t) || access.sees_page(t));
            let call = match ui_tools::parse(&name, &args, &known, &shown) {
                Ok(c) => c,
                Err(why) => return act.answer(jsonrpc::result(id, ui_tools::error_result(&why.to_string()))),
            };
            // The tool it names, under the same rules as any read or refinement of its page.
            if let Some(denied) = act.denied_ui_call(&call, &catalog) {
                let key = jsonrpc::id_key(&id);
                if let Some(line) = act.in_flight.get_mut(&key).and_then(|f| f.audit.as_mut()) {
                    line.denied(denied.kind.as_str(), denied.rule.clone());
                }
                tracing::info!(component = "policy", event = "denied", session = %act.log_id, principal = %act.who.name, kind = denied.kind.as_str(), name = %denied.name, rule = %denied.rule, "a _ui_* call was denied by the policy");
                return act.answer(denied.error(id));
            }
            if matches!(call, ui_tools::UiCall::Refine { .. } | ui_tools::UiCall::Regenerate { .. }) {
                if let Err(why) = act.take_llm_call() {
                    return act.answer(jsonrpc::result(id, ui_tools::error_result(&why.to_string())));
                }
            }
            // Progress for long calls (refine, regenerate) goes on this request's stream.
            let (ptx, mut prx) = mpsc::unbounded_channel::<Value>();
            let addr = ctx.address();
            let req_id = id.clone();
            if let Some(token) = progress {
                actix::spawn(async move {
                    while let Some(p) = prx.recv().await {
                        let mut params = p;
                        params["progressToken"] = token.clone();
                        addr.do_send(HostEvent::Notify {
                            msg: jsonrpc::notification("notifications/progress", params),
                            related: Some(req_id.clone()),
                        });
                    }
                });
            }
            let cx = commands::Ctx {
                deps,
                access: act.access(),
                profile,
                catalog,
                own: act.own(),
                origin: commands::Origin { request_id: act.request_id_of(&id), trace: act.trace_of(&id) },
                progress: ptx,
            };
            let fut = commands::run(call, cx);
            ctx.spawn(fut.into_actor(act).map(move |result, act, _| act.answer(jsonrpc::result(id, result))));
        });
    }

    /// Whether the rules refuse what a `_ui_*` call does to the tool it names: reading about
    /// its page (inspect, status) or changing it (refine, regenerate).
    fn denied_ui_call(&self, call: &ui_tools::UiCall, catalog: &crate::servers::catalog::Catalog) -> Option<Denied> {
        use ui_tools::UiCall;
        let (kind, tool) = match call {
            UiCall::Inspect { tool } | UiCall::PageStatus { tool, .. } => (Kind::Pages, tool),
            UiCall::Refine { tool, .. } | UiCall::Regenerate { tool, .. } => (Kind::Refinements, tool),
            UiCall::List | UiCall::Approvals | UiCall::Approve { .. } => return None,
            // It lists every server's tools again, hidden ones included: admins only.
            UiCall::RefreshTools | UiCall::ToolChanges | UiCall::AcceptToolChange { .. } if self.who.admin => return None,
            UiCall::RefreshTools | UiCall::ToolChanges | UiCall::AcceptToolChange { .. } => {
                let name = match call {
                    UiCall::RefreshTools => "_ui_refresh_tools",
                    UiCall::ToolChanges => "_ui_tool_changes",
                    _ => "_ui_accept_tool_change",
                };
                let rule = std::sync::Arc::from(format!("{name} is for admins (server.auth.admins)"));
                return Some(Denied { kind: Kind::Tools, name: name.into(), server: None, rule, method: false });
            }
        };
        let server = catalog.tool(tool).map(|t| t.server.to_string()).unwrap_or_default();
        let decision = self.access().check(kind, tool, &server, None);
        (!decision.allowed).then(|| Denied::of(kind, tool, &server, decision))
    }

    /// Counts one call that asks the LLM against `limits.llmCallsPerMinute` (a sliding minute
    /// per principal: every session of one person, and their stateless calls, share it), or
    /// says when the next one may be made.
    pub(in crate::session) fn take_llm_call(&mut self) -> Result<(), Throttled> {
        let limit = self.deps.limits.llm_calls_per_minute;
        let now = Instant::now();
        let taken = rate_window::take_for(&self.deps.llm_windows, &self.who.key, limit, now);
        let who = if &*self.who.key == crate::session::ANONYMOUS {
            "this service's hosts together".to_string()
        } else {
            self.who.key.to_string()
        };
        taken.map_err(|wait| {
            self.metrics.refusals.with_label_values(&["llm_calls_per_minute"]).inc();
            Throttled { who, limit, retry_in_secs: wait.as_secs() + 1 }
        })
    }
}

/// A principal's calls that ask the LLM are over `limits.llmCallsPerMinute`.
#[derive(Debug, thiserror::Error)]
#[error("{who} made {limit} calls that ask the LLM (_ui_refine, _ui_regenerate) in the last minute (limits.llmCallsPerMinute); retry in {retry_in_secs} s")]
pub(in crate::session) struct Throttled {
    who: String,
    limit: u32,
    retry_in_secs: u64,
}
