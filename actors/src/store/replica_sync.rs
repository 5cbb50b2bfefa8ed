//! What another replica's change means here (`cache.type: redis`). One task reads the shared
//! store's events and applies those of other replicas to this process's tables, through ports:
//!
//! - `refined` (a refinement appended or cleared): the tool's ready read result goes, so the
//!   next read here asks for the history again and finds the new page;
//! - `toolInvalidated` (regenerate, refine, a tool changed): our L1 copies of its pages go too;
//! - `stored`: our L1 copy of that key goes (it may be a fallback made here while Redis was
//!   away) and so does the ready result; a `forced` store (regenerate, refine) also tells the
//!   hosts here, as `_ui_refine` tells its own: `resources/updated` to subscribers of
//!   `ui://<tool>`, `resources/list_changed` to UI hosts;
//! - `pinAccepted`: an admin accepted a held tool there; it is let through here too;
//! - `approvalDecided`: calls waiting here for an approval look again;
//! - the subscription re-opened (events may have been missed): every ready result goes.

use std::sync::Arc;

use tokio::sync::broadcast::error::RecvError;

use crate::messages::ForgetLocal;
use crate::store::ready_pages::ReadyPages;
use crate::store::redis::{Event, RedisStore};

/// Called with (server, tool, pin) when another replica's admin accepted a held tool.
pub type PinAccepted = Arc<dyn Fn(&str, &str, serde_json::Value) + Send + Sync>;

/// Where remote changes land.
pub struct Targets {
    pub pages: Option<Arc<ReadyPages>>,
    pub forget: actix::Recipient<ForgetLocal>,
    /// Tells every connected host that the page of the tool it names changed.
    pub page_changed: Arc<dyn Fn(&str) + Send + Sync>,
    /// Another replica's admin accepted a held tool (server, tool, pin).
    pub pin_accepted: PinAccepted,
    /// Another replica decided an approval: calls waiting here look again.
    pub approval_decided: Arc<dyn Fn() + Send + Sync>,
}

/// Starts applying other replicas' events (needs a Tokio runtime).
pub fn start(store: &RedisStore, targets: Targets) {
    let mut events = store.events();
    let me = store.replica().to_string();
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(ev) => apply(&me, &targets, ev),
                Err(RecvError::Lagged(_)) => apply(&me, &targets, Event::Resubscribed),
                Err(RecvError::Closed) => return,
            }
        }
    });
}

fn apply(me: &str, t: &Targets, ev: Event) {
    if ev.origin() == Some(me) {
        return;
    }
    let invalidate = |tool: &str| {
        if let Some(p) = &t.pages {
            p.invalidate(tool);
        }
    };
    match ev {
        Event::Refined { tool, .. } => invalidate(&tool),
        Event::ToolInvalidated { tool, .. } => {
            t.forget.do_send(ForgetLocal { tool_name: tool.clone(), key: None });
            invalidate(&tool);
        }
        Event::Stored { key, tool, forced, .. } => {
            t.forget.do_send(ForgetLocal { tool_name: tool.clone(), key: Some(key) });
            invalidate(&tool);
            if forced {
                (t.page_changed)(&tool);
            }
        }
        Event::PinAccepted { server, tool, pin, .. } => (t.pin_accepted)(&server, &tool, pin),
        Event::ApprovalDecided { .. } => (t.approval_decided)(),
        Event::Resubscribed => {
            if let Some(p) = &t.pages {
                p.invalidate_all();
            }
        }
    }
}
