//! A call's line in the trail, held while the call runs: written with its outcome when it
//! ends, or as `abandoned` when it is dropped unanswered (its session went).

use std::sync::Arc;
use std::time::Instant;

use super::{Audit, Entry, Event, Inner};

/// A call's line, written when the call ends (or as `abandoned` if it never does).
pub struct Pending {
    pub(super) inner: Arc<Inner>,
    pub(super) entry: Option<Entry>,
    pub(super) reserved: bool,
    pub(super) started: Instant,
}

impl Pending {
    pub fn entry_mut(&mut self) -> &mut Entry {
        self.entry.as_mut().expect("a pending line until it is written")
    }

    /// The call turned out to be refused by the rules (a `_ui_*` call naming a tool): its line
    /// is a denial, whatever the answer.
    pub fn denied(&mut self, kind: &'static str, rule: Arc<str>) {
        let e = self.entry_mut();
        e.event = Event::Denied;
        e.kind = Some(kind);
        e.rule = Some(rule);
    }

    /// The call ended with `outcome`.
    pub fn finish(mut self, outcome: &'static str) {
        self.write(outcome);
    }

    fn write(&mut self, outcome: &'static str) {
        let Some(mut entry) = self.entry.take() else { return };
        entry.outcome = if entry.event == Event::Denied { "denied" } else { outcome };
        entry.duration_ms = Some(self.started.elapsed().as_millis() as u64);
        // A reserved place is there; an unreserved line takes one if there is room.
        if self.reserved || self.inner.reserve(&entry.principal) {
            Audit::send(&self.inner, entry);
        } else {
            self.inner.dropped.inc();
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.write("abandoned");
    }
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending").field("entry", &self.entry).finish()
    }
}
