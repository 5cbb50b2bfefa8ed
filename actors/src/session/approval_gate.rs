//! A tool call under an `approve` rule: held, not forwarded, until someone the rule names
//! approves that exact call (its person, server, tool and arguments). The caller's own
//! confirmation is asked of their host (`elicitation/create`); other approvers decide with
//! `_ui_approve` while the call waits (progress keeps it alive), up to the rule's `expires`.
//! A call whose host gave up is approved all the same: the same call made again passes, once.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::{json, Value};

use super::plan::After;
use super::HostSession;
use crate::audit::{Entry, Event};
use crate::mcp::jsonrpc::{self, At};
use crate::mcp::ui_meta;
use crate::messages::{HostEvent, ServerRequest};
use crate::policy::approval::{self, Approvers, Request, State};
use crate::policy::approvals::now_ms;
use crate::servers::fleet::Server;
use crate::session::ui_tools::APPROVALS_PAGE;

/// How often a waiting call's host hears it is still waiting (with a progress token).
const PROGRESS_EVERY: Duration = Duration::from_secs(10);
/// What of the arguments a confirmation shows.
const SHOWN_ARGS: usize = 2000;
/// Arguments longer than this (as JSON) cannot be held for an approval.
const MAX_SHOWN_ARGS: usize = 64 * 1024;

/// How a held call ends.
enum Outcome {
    /// Its approval taken: it goes.
    Go,
    /// Approved: it goes once it takes its approval (not taken if its host gave up meanwhile,
    /// so that the same call made again finds it).
    Approved {
        call: String,
        id: String,
    },
    Refused(String),
}

/// What approvers are told of the approvals page.
const PAGE_SAYS: &str = "The calls waiting for your approval, with Approve and Decline";

/// The `resources/list` entry of the approvals page.
pub(super) fn approvals_resource(domain: Option<&str>, dialect: ui_meta::Dialect) -> Value {
    json!({
        "uri": APPROVALS_PAGE, "name": "Approvals", "title": "Calls waiting for approval", "description": PAGE_SAYS,
        "mimeType": dialect.mime(), "_meta": ui_meta::page_meta(domain, PAGE_SAYS, dialect),
    })
}

impl HostSession {
    pub(super) fn read_approvals_page(&mut self, id: Value) {
        let dialect = self.dialect().unwrap_or(ui_meta::Dialect::McpApps);
        let content = json!({
            "uri": APPROVALS_PAGE, "mimeType": dialect.mime(), "text": crate::generation::templates::approvals_page(),
            "_meta": ui_meta::page_meta(self.deps.ui_domain.as_deref(), PAGE_SAYS, dialect),
        });
        self.answer(jsonrpc::result(id, json!({"contents": [content]})));
    }

    pub(super) fn forward_governed(&mut self, ctx: &mut Context<Self>, server: Arc<Server>, msg: Value, after: After) {
        let held = match &after {
            After::ToolResult { exposed } => {
                self.access().approval(exposed, &server.name, msg.at("/params/arguments")).map(|r| (exposed.clone(), r))
            }
            _ => None,
        };
        let Some((tool, (rule, spec))) = held else { return self.forward_within_quotas(ctx, server, msg, after) };
        let args = msg.at("/params/arguments").cloned().unwrap_or(json!({}));
        // What an approver is shown is kept until the request is decided: bounded.
        if serde_json::to_string(&args).map_or(0, |a| a.len()) > MAX_SHOWN_ARGS {
            let why = format!("this call needs an approval (rule {rule:?}), and its arguments are over {} KiB, more than an approver can be shown; it was not made", MAX_SHOWN_ARGS / 1024);
            return self.refuse_held(&msg, why);
        }
        let call = approval::call_digest(&self.who.key, &server.name, &tool, Some(&args));
        let now = now_ms();
        let draft = Request {
            id: approval::new_id(),
            person: self.who.name.to_string(),
            person_key: self.who.key.to_string(),
            server: server.name.to_string(),
            tool,
            arguments: args,
            call,
            rule: rule.to_string(),
            approvers: Approvers::from(&spec),
            requested_at: now,
            expires_at: now + spec.expires_secs * 1000,
            state: State::Pending,
        };
        let elicits = spec.caller && self.negotiated.as_ref().is_some_and(|n| n.client_caps.get("elicitation").is_some());
        let progress = msg.at("/params/_meta/progressToken").cloned();
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let (book, addr, fleet) = (self.deps.approvals.clone(), ctx.address(), self.deps.fleet.clone());
        let (who, metrics, audit) = (self.who.name.to_string(), self.metrics.clone(), self.deps.audit.clone());
        let fut = async move {
            if let Some(by) = book.take(&draft.call).await {
                tracing::info!(component = "policy", event = "approved_call", rule = %draft.rule, by = %by, "a held call's approval was taken by the same call made again");
                return Outcome::Go;
            }
            let fresh = draft.id.clone();
            let r = match book.request(draft).await {
                Ok(r) => r,
                Err(why) => return Outcome::Refused(why.to_string()),
            };
            if r.id == fresh {
                metrics.approvals.with_label_values(&[&r.rule, "requested"]).inc();
                let mut line = Entry::system(
                    Event::ApprovalRequested,
                    format!("request {} for {}, to be approved by {}", r.id, who, r.approvers.describe()),
                );
                line.principal = Arc::from(who.as_str());
                line.server = Some(Arc::from(r.server.as_str()));
                line.rule = Some(Arc::from(r.rule.as_str()));
                audit.record(line.tool(&r.tool).args(Some(&r.arguments), audit.whole_args()));
                fleet.announce_page(APPROVALS_PAGE);
            }
            if elicits && r.id == fresh {
                // The call that made the request asks; the same call made meanwhile waits on it.
                confirm(&addr, &id, &r, &book, &who).await;
            } else if !elicits && r.approvers == (Approvers { caller: true, ..Default::default() }) {
                return Outcome::Refused(format!(
                    "this call needs your confirmation (rule {:?}, request {}), and your host cannot ask you (it does not declare elicitation): confirm it yourself on the approvals page (the page of _ui_approvals, ui://mcp-gen-ui/approvals), then make the same call again",
                    r.rule, r.id
                ));
            }
            let mut waited = 0u64;
            let ended = book
                .wait(&r.id, PROGRESS_EVERY, || {
                    waited += PROGRESS_EVERY.as_secs();
                    if let Some(token) = &progress {
                        let params = json!({"progressToken": token, "progress": waited, "message": format!("waiting for {} to approve (request {})", r.approvers.describe(), r.id)});
                        addr.do_send(HostEvent::Notify { msg: jsonrpc::notification("notifications/progress", params), related: Some(id.clone()) });
                    }
                })
                .await;
            fleet.announce_page(APPROVALS_PAGE);
            ended_as(&ended, &metrics, &audit)
        };
        ctx.spawn(fut.into_actor(self).map(move |outcome, act, ctx| act.after_approval(ctx, outcome, server, msg, after)));
    }

    /// A held call once its approval is decided: made, or refused saying why.
    fn after_approval(&mut self, ctx: &mut Context<Self>, outcome: Outcome, server: Arc<Server>, msg: Value, after: After) {
        let key = jsonrpc::id(&msg).map(jsonrpc::id_key).unwrap_or_default();
        if !self.in_flight.contains_key(&key) {
            return; // the host gave up: an approval stays for the same call made again
        }
        // Approved, perhaps long ago: the tool is still where it was and still the person's
        // to call (a reload, or the tool held since, stops it).
        if matches!(outcome, Outcome::Go | Outcome::Approved { .. }) {
            if let Some(why) = self.no_longer_callable(&server, &msg, &after) {
                return self.refuse_held(&msg, why);
            }
        }
        match outcome {
            Outcome::Go => self.forward_within_quotas(ctx, server, msg, after),
            Outcome::Approved { call, id } => {
                let book = self.deps.approvals.clone();
                ctx.spawn(async move { book.take(&call).await }.into_actor(self).map(move |taken, act, ctx| match taken {
                    Some(_) => act.forward_within_quotas(ctx, server, msg, after),
                    None => act.refuse_held(&msg, format!("the approval of request {id} was used by the same call made again")),
                }));
            }
            Outcome::Refused(why) => self.refuse_held(&msg, why),
        }
    }

    fn no_longer_callable(&self, server: &Server, msg: &Value, after: &After) -> Option<String> {
        let After::ToolResult { exposed } = after else { return None };
        let catalog = self.deps.fleet.catalog();
        let same =
            catalog.tool(exposed).is_some_and(|t| t.server == server.name) || self.deps.fleet.bare().is_some_and(|b| b.name == server.name);
        if !same {
            return Some(format!("{exposed} is no longer served as it was when the call was held (it changed or went); it was not made"));
        }
        let allowed = self.access().check(crate::policy::Kind::Tools, exposed, &server.name, msg.at("/params/arguments")).allowed;
        (!allowed).then(|| format!("the rules no longer allow you {exposed}; the approved call was not made"))
    }

    fn refuse_held(&mut self, msg: &Value, why: String) {
        let id = jsonrpc::id(msg).cloned().unwrap_or(Value::Null);
        self.answer(jsonrpc::result(id, json!({"content": [{"type": "text", "text": why}], "isError": true})));
    }
}

/// The caller confirms their own call in their host: accepted with `approve: true`, or declined.
async fn confirm(addr: &Addr<HostSession>, related: &Value, r: &Request, book: &crate::policy::approvals::Approvals, who: &str) {
    let mut shown = serde_json::to_string_pretty(&r.arguments).unwrap_or_default();
    if shown.len() > SHOWN_ARGS {
        let cut = (0..=SHOWN_ARGS).rev().find(|i| shown.is_char_boundary(*i)).unwrap_or(0);
        shown.truncate(cut);
        shown.push_str(" ...");
    }
    let message = format!("Run {} with these arguments? (rule {:?})\n{shown}", r.tool, r.rule);
    let schema = json!({"type": "object", "properties": {"approve": {"type": "boolean", "title": format!("Run {}", r.tool), "default": false}}, "required": ["approve"]});
    let ask = json!({"jsonrpc": "2.0", "id": format!("mcp-gen-ui-approval-{}", r.id), "method": "elicitation/create", "params": {"message": message, "requestedSchema": schema}});
    let answer = addr.send(ServerRequest { msg: ask, related: Some(related.clone()), key: None }).await.unwrap_or(Value::Null);
    let accepted =
        answer.at("/result/action").and_then(Value::as_str) == Some("accept") && answer.at("/result/content/approve") == Some(&json!(true));
    let to = if accepted { State::Approved { by: who.to_string() } } else { State::Declined { by: who.to_string() } };
    let _ = book.decide(&r.id, to).await;
}

/// A held call's end: approved, or refused saying why.
fn ended_as(r: &Request, metrics: &crate::metrics::Metrics, audit: &crate::audit::Audit) -> Outcome {
    match &r.state {
        State::Approved { .. } => Outcome::Approved { call: r.call.clone(), id: r.id.clone() },
        State::Declined { by } => {
            Outcome::Refused(format!("{by} declined this call (request {}, rule {:?}); it was not made", r.id, r.rule))
        }
        State::Expired => {
            metrics.approvals.with_label_values(&[&r.rule, "expired"]).inc();
            let mut line = Entry::system(Event::Expired, format!("request {} for {}: no one decided in time", r.id, r.person));
            line.server = Some(Arc::from(r.server.as_str()));
            line.rule = Some(Arc::from(r.rule.as_str()));
            audit.record(line.tool(&r.tool));
            Outcome::Refused(format!(
                "no one approved this call in time (request {}, rule {:?}); it was not made: make it again to ask again",
                r.id, r.rule
            ))
        }
        State::Pending => Outcome::Refused(format!("request {} is still pending", r.id)),
    }
}
