//! What each `_ui_*` tool does, one file each with the same shape (as mini-redis's commands):
//! `run(&Ctx, its arguments) -> the tool result`, a plain async function over the actors'
//! ports. The host session spawns one per call (`calls.rs`) and answers with its result.

mod approvals;
mod inspect;
mod list;
mod page_status;
mod refine;
mod refresh_tools;
mod regenerate;
mod remake;
mod tool_changes;

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;

use super::{error_result, UiCall};
use crate::messages::HistoryKey;
use crate::servers::catalog::Catalog;
use crate::session::deps::SessionDeps;
use crate::trace::TraceCx;

/// The request a `_ui_*` call came in: its id for the logs, its span for the trace.
pub struct Origin {
    pub request_id: String,
    pub trace: TraceCx,
}

/// What every command is given.
pub struct Ctx {
    pub deps: Arc<SessionDeps>,
    /// What the caller may see (`_ui_list` shows only pages it may read).
    pub access: crate::session::access::Access,
    /// The profile the caller connected to (`_ui_list` shows its tools only).
    pub profile: Option<Arc<crate::servers::profiles::Profile>>,
    pub catalog: Arc<Catalog>,
    /// With `refinements.scope: principal`, the caller when they are not an admin (their
    /// refinements are theirs alone); None otherwise (refinements are everyone's).
    pub own: Option<Arc<str>>,
    pub origin: Origin,
    /// Progress for long calls (refine, regenerate), sent on the call's own stream.
    pub progress: mpsc::UnboundedSender<Value>,
}

impl Ctx {
    /// The history key of the caller's own refinements of `tool` (principal scope).
    fn personal(&self, tool: &str) -> Option<HistoryKey> {
        self.own.as_ref().map(|p| HistoryKey::personal(tool, p))
    }

    /// What shapes the caller's page: the shared refinements, then their own.
    async fn feedback_of(&self, tool: &str) -> Vec<String> {
        let mut all = self.deps.refinements.feedback(&HistoryKey::shared(tool)).await;
        if let Some(k) = self.personal(tool) {
            all.extend(self.deps.refinements.feedback(&k).await);
        }
        all
    }

    /// The refusal for a tool without a page (the one rule, naming the setting), if it has none.
    fn without_page(&self, tool: &str) -> Option<Value> {
        match self.catalog.tool(tool).map(|t| self.deps.page_rule(t)) {
            Some(Err(why)) => Some(error_result(&format!("{tool:?} has no UI page: {why}"))),
            _ => None,
        }
    }
}

/// Runs one call.
pub async fn run(call: UiCall, cx: Ctx) -> Value {
    match call {
        UiCall::List => list::run(&cx).await,
        UiCall::Inspect { tool } => inspect::run(&cx, &tool).await,
        UiCall::RefreshTools => refresh_tools::run(&cx).await,
        UiCall::Regenerate { tool, clear_refinements } => regenerate::run(cx, &tool, clear_refinements).await,
        UiCall::Refine { tool, feedback } => refine::run(cx, &tool, feedback).await,
        UiCall::PageStatus { tool, wait_ms, html, make, preview } => page_status::run(&cx, &tool, wait_ms, html, make, preview).await,
        UiCall::ToolChanges => tool_changes::list(&cx).await,
        UiCall::Approvals => approvals::list(&cx).await,
        UiCall::Approve { id, approve } => approvals::decide(&cx, &id, approve).await,
        UiCall::AcceptToolChange { server, tool, fingerprint } => tool_changes::accept(&cx, &server, &tool, fingerprint.as_deref()).await,
    }
}
