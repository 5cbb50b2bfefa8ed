//! `_ui_approvals` and `_ui_approve`: the calls held by `approve` rules that the caller may
//! decide (and their own, waiting), and a decision. An approver must be one the rule names,
//! may see the tool, and never decides their own call unless the rule asks the caller.

use std::sync::Arc;

use serde_json::{json, Value};

use super::Ctx;
use crate::audit::{Entry, Event};
use crate::policy::approval::{self, State};
use crate::policy::Kind;
use crate::session::ui_tools::{error_result, ok_result};

pub(super) async fn list(cx: &Ctx) -> Value {
    let who = &cx.access.who;
    let mut yours = Vec::new();
    let mut theirs = Vec::new();
    for r in cx.deps.approvals.pending().await {
        if *r.person_key == *who.key {
            yours.push(approval::shown(&r));
        } else if approval::may_decide(who, &r).is_ok() && cx.access.visible(Kind::Tools, &r.tool, &r.server) {
            theirs.push(approval::shown(&r));
        }
    }
    ok_result(json!({"pending": theirs, "yours": yours}))
}

pub(super) async fn decide(cx: &Ctx, id: &str, approve: bool) -> Value {
    let who = &cx.access.who;
    let book = &cx.deps.approvals;
    let Some(r) = book.get(id).await.filter(|r| r.state == State::Pending) else {
        return error_result(&format!(
            "no approval request {id:?} is pending (it was decided, it expired, or there is none): _ui_approvals lists them"
        ));
    };
    if let Err(why) = approval::may_decide(who, &r) {
        return error_result(&why.to_string());
    }
    if !cx.access.visible(Kind::Tools, &r.tool, &r.server) {
        return error_result(&format!("you may not use {}, so you may not approve calls of it", r.tool));
    }
    let by = who.name.to_string();
    let to = if approve { State::Approved { by: by.clone() } } else { State::Declined { by: by.clone() } };
    let decided = match book.decide(id, to).await {
        Ok(d) => d,
        Err(why) => return error_result(&why.to_string()),
    };
    let (event, outcome) = if approve { (Event::Approved, "approved") } else { (Event::Declined, "declined") };
    cx.deps.metrics.approvals.with_label_values(&[&decided.rule, outcome]).inc();
    let mut line = Entry::system(event, format!("request {id}: {}'s call", decided.person));
    line.principal = Arc::from(by.as_str());
    line.source = who.source.as_str();
    line.server = Some(Arc::from(decided.server.as_str()));
    line.rule = Some(Arc::from(decided.rule.as_str()));
    cx.deps.audit.record(line.tool(&decided.tool).args(Some(&decided.arguments), cx.deps.audit.whole_args()));
    cx.deps.fleet.announce_page(crate::session::ui_tools::APPROVALS_PAGE);
    tracing::info!(component = "policy", event = outcome, request = %id, by = %by, person = %decided.person, tool = %decided.tool, "a held call was {outcome}");
    ok_result(json!({"decided": approval::shown(&decided)}))
}
