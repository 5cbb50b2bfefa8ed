//! Ready `resources/read` results for `ui://` pages, keyed by tool name and a per-tool
//! revision, so that a cached read is a map lookup on the host session's own thread: no trip
//! through the refinements, queue and cache mailboxes, no schema hashing, no result building.
//!
//! Anything that can change what a tool's page is bumps that tool's revision (and drops its
//! entry): a new page stored, a refinement added or cleared, the tool changed or removed, the
//! cache invalidated. A read that started before a bump cannot store its (older) result: it
//! carries the revision it saw. Pages that expire (transient fallbacks) are checked on each hit.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::mcp::jsonrpc::PreparedResult;
use crate::page::now_ms;
use crate::process::locks::RecoverRw;

struct Ready {
    rev: u64,
    result: Arc<Value>,
    /// `result` serialized once: an edge answers a read with it and the request's id.
    prepared: PreparedResult,
    kind: &'static str,
    expires_at: Option<u64>,
}

#[derive(Default)]
pub struct ReadyPages {
    inner: RwLock<Inner>,
    /// `cache.ttlSeconds`: a ready result lives no longer than the cached page would.
    ttl_ms: Option<u64>,
}

#[derive(Default)]
struct Inner {
    revs: HashMap<String, u64>,
    ready: HashMap<String, Ready>,
    /// Bumped by `invalidate_all`; part of every tool's revision.
    epoch: u64,
}

impl Inner {
    fn rev(&self, tool: &str) -> u64 {
        self.revs.get(tool).copied().unwrap_or(0) + self.epoch
    }
}

/// A hit: the `result` of the read (also serialized) and the kind of page (for metrics).
pub struct Hit {
    pub result: Arc<Value>,
    pub prepared: PreparedResult,
    pub kind: &'static str,
}

impl ReadyPages {
    pub fn new() -> Arc<Self> {
        Arc::new(ReadyPages::default())
    }

    pub fn with_ttl(ttl: Option<std::time::Duration>) -> Arc<Self> {
        Arc::new(ReadyPages { ttl_ms: ttl.map(|t| t.as_millis() as u64), ..ReadyPages::default() })
    }

    /// The ready result for `tool`, if it is current and not expired.
    pub fn get(&self, tool: &str) -> Option<Hit> {
        let inner = self.inner.reading();
        let r = inner.ready.get(tool)?;
        if r.expires_at.is_some_and(|t| now_ms() >= t) || inner.rev(tool) != r.rev {
            return None;
        }
        Some(Hit { result: r.result.clone(), prepared: r.prepared.clone(), kind: r.kind })
    }

    /// The revision a read starts from (hand it back to [`ReadyPages::store`]).
    pub fn revision(&self, tool: &str) -> u64 {
        self.inner.reading().rev(tool)
    }

    /// Keeps a read's result, unless the tool's page changed since the read began at `rev`.
    pub fn store(&self, tool: &str, rev: u64, result: Value, kind: &'static str, expires_at: Option<u64>) {
        let prepared = PreparedResult::new(&result);
        let mut inner = self.inner.writing();
        if inner.rev(tool) != rev {
            return;
        }
        let by_ttl = self.ttl_ms.map(|t| now_ms().saturating_add(t));
        let expires_at = match (expires_at, by_ttl) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        inner.ready.insert(tool.to_string(), Ready { rev, result: Arc::new(result), prepared, kind, expires_at });
    }

    /// The tool's page is changing: forget the ready result, refuse reads begun before now.
    pub fn invalidate(&self, tool: &str) {
        let mut inner = self.inner.writing();
        *inner.revs.entry(tool.to_string()).or_insert(0) += 1;
        inner.ready.remove(tool);
    }

    /// Every tool's page may have changed (another replica's events were missed): forget them all.
    pub fn invalidate_all(&self) {
        let mut inner = self.inner.writing();
        inner.epoch += 1;
        inner.ready.clear();
    }

    pub fn len(&self) -> usize {
        self.inner.reading().ready.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_stored_read_is_served_until_its_tool_changes() {
        let p = ReadyPages::new();
        assert!(p.get("t").is_none());
        let rev = p.revision("t");
        p.store("t", rev, json!({"contents": []}), "template", None);
        assert_eq!(p.get("t").unwrap().kind, "template");
        let answer = p.get("t").unwrap().prepared.answer(&serde_json::json!(1)).concat();
        assert_eq!(String::from_utf8(answer).unwrap(), r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[]}}"#, "kept serialized too");
        p.invalidate("t");
        assert!(p.get("t").is_none());
    }

    #[test]
    fn a_read_begun_before_a_change_is_not_kept() {
        let p = ReadyPages::new();
        let rev = p.revision("t");
        p.invalidate("t"); // a refinement lands while the read runs
        p.store("t", rev, json!({"old": true}), "generated", None);
        assert!(p.get("t").is_none());
        p.store("t", p.revision("t"), json!({"new": true}), "generated", None);
        assert!(p.get("t").is_some());
    }

    #[test]
    fn invalidating_all_refuses_reads_begun_before() {
        let p = ReadyPages::new();
        p.store("t", 0, json!({}), "generated", None);
        let rev = p.revision("u");
        p.store("u", rev, json!({}), "generated", None);
        p.invalidate_all();
        assert!(p.get("t").is_none() && p.get("u").is_none() && p.is_empty());
        p.store("t", 0, json!({"old": true}), "generated", None);
        assert!(p.get("t").is_none(), "a read that began before is not kept");
    }

    #[test]
    fn expired_pages_are_not_served() {
        let p = ReadyPages::new();
        p.store("t", 0, json!({}), "template", Some(now_ms().saturating_sub(1)));
        assert!(p.get("t").is_none());
        p.store("u", 0, json!({}), "template", Some(now_ms() + 60_000));
        assert!(p.get("u").is_some());
    }
}
