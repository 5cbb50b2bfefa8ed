//! The audit trail's events and the handle that hands them to the writer (a thread of the
//! service shell that owns the sinks). One JSON line per event: a tool call, a page read, a
//! refinement or regeneration, a denial, an admin action, a session opened or closed, a
//! configuration reload.
//!
//! Handing over never waits: the queue is bounded, and a line that does not fit is dropped and
//! counted. With `audit.required`, a call is admitted only with a place in the queue reserved
//! for its line and while the writer can write ([`Audit::admit`]), so no call goes unrecorded.
//! With several people, each has a share of the queue (a quarter of it): one person's flood
//! fills their own share, dropping (or, required, refusing) their lines first, never another's.
//! A call's line is written when it ends; a call that never ends (its session went) is written
//! as `abandoned` when its [`Pending`] is dropped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use prometheus::IntCounter;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::mcp::jsonrpc::At;
use crate::who::Who;

/// Whole arguments longer than this (as JSON) are recorded by their digest only.
pub const MAX_WHOLE_ARGS: usize = 64 * 1024;
/// Names and details longer than this are cut (they come from hosts).
const MAX_TEXT: usize = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    ToolCall,
    PageRead,
    Refinement,
    Regenerate,
    Denied,
    AdminAction,
    /// A resource or page subscribed to (`resources/subscribe`, or one of a listen request's).
    Subscribe,
    /// A server's own resource read (`resources/read` of what is not a page made here).
    ResourceRead,
    /// `prompts/get`.
    PromptGet,
    /// `completion/complete` (of a prompt's or a resource template's argument).
    Completion,
    /// A method the service does not know, passed to the server (`tool` names the method).
    Method,
    /// A task's `tasks/get`, `tasks/result` or `tasks/cancel` (`tool`: the tool whose call made
    /// it; `detail`: the method).
    Task,
    /// A notification from a host that is not the protocol's own housekeeping, passed to the
    /// servers its person may use (`tool` names it).
    Notification,
    /// A server's tool changed since it was pinned, or a new tool was held (`outcome`: passed,
    /// held; `detail`: both fingerprints and what changed); an admin's acceptance is an
    /// `admin_action`.
    ToolChanged,
    /// A call held by an `approve` rule (`detail`: the request's id and who may approve).
    ApprovalRequested,
    /// A held call approved (`principal`: who approved; `detail`: the request and whose call).
    Approved,
    /// A held call declined (`principal`: who declined).
    Declined,
    /// A held call no one decided in time.
    Expired,
    SessionOpen,
    SessionClose,
    ConfigReload,
}

/// One line of the trail.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    #[serde(serialize_with = "rfc3339")]
    pub time: SystemTime,
    pub event: Event,
    pub principal: Arc<str>,
    /// Which credential named the principal (`token`, `jwt`, `anonymous`): a label and a
    /// subject may spell the same name.
    pub source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<Arc<str>>,
    /// The tool (or prompt, or resource URI) as hosts name it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What a denial was of (tools, pages, refinements, resources, prompts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// The rule that denied (or `default`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<Arc<str>>,
    /// Whose credentials a call to a per-principal server went with (never the credentials).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credentials: Option<Arc<str>>,
    pub outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// SHA-256 of the arguments as JSON: shows which calls had the same arguments without
    /// keeping them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args_sha256: Option<String>,
    /// The arguments themselves, only with `audit.arguments: true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

fn rfc3339<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&humantime::format_rfc3339_millis(*t))
}

impl Entry {
    pub fn new(event: Event, principal: &Who) -> Entry {
        Entry {
            time: SystemTime::now(),
            event,
            principal: principal.name.clone(),
            source: principal.source.as_str(),
            session: None,
            transport: None,
            server: None,
            tool: None,
            kind: None,
            rule: None,
            credentials: None,
            outcome: "ok",
            duration_ms: None,
            request_id: None,
            trace_id: None,
            args_sha256: None,
            args: None,
            detail: None,
        }
    }

    /// An event of the service itself (a reload): no principal.
    pub fn system(event: Event, detail: impl Into<String>) -> Entry {
        let mut e = Entry::new(event, &Who::anonymous());
        e.principal = Arc::from("mcp-gen-ui");
        e.detail = Some(bounded(&detail.into()));
        e
    }

    pub fn tool(mut self, name: &str) -> Entry {
        self.tool = Some(bounded(name));
        self
    }

    pub fn detail(mut self, d: &str) -> Entry {
        self.detail = Some(bounded(d));
        self
    }

    /// The arguments: their digest, and themselves when `whole` (and not too long).
    pub fn args(mut self, args: Option<&Value>, whole: bool) -> Entry {
        let Some(args) = args else { return self };
        let text = args.to_string();
        self.args_sha256 = Some(hex::encode(Sha256::digest(text.as_bytes())));
        if whole && text.len() <= MAX_WHOLE_ARGS {
            self.args = Some(args.clone());
        }
        self
    }

    pub fn to_line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("an entry serializes");
        line.push('\n');
        line
    }
}

/// Host-sent text is cut to a bound (JSON escapes what is left where it lands).
pub fn bounded(s: &str) -> String {
    if s.len() <= MAX_TEXT {
        return s.to_string();
    }
    let mut end = MAX_TEXT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The trail cannot take the line of a call now (`audit.required`): the call is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the audit trail cannot be written right now (audit.required is on): calls are refused until it can; retry shortly")]
pub struct Unavailable;

struct Inner {
    /// Boxed: a bounded channel makes all its slots at once, and 10,000 lines' worth of
    /// entries would be 3.5 MB held while the trail is off.
    tx: SyncSender<Box<Entry>>,
    /// Lines queued or reserved (at most `capacity`).
    queued: AtomicUsize,
    capacity: usize,
    /// The most lines one person may have queued or reserved (`capacity` while people are not
    /// told apart), and how many each has.
    share: AtomicUsize,
    per_person: Mutex<HashMap<Arc<str>, usize>>,
    /// The writer's last write succeeded (or it recovered since).
    healthy: AtomicBool,
    /// `audit` has a sink (a reload may turn it on or off).
    on: AtomicBool,
    required: AtomicBool,
    whole_args: AtomicBool,
    dropped: IntCounter,
    /// When the writer began the write it is in (`messages::monotonic_ms`; 0: not writing). A
    /// sink that blocks (a FIFO nobody reads, a hung disk) never fails: it never returns.
    writing_since_ms: AtomicU64,
}

/// A write that has not returned in this long means the sink is stuck: `audit.required`
/// refuses calls until it returns.
pub const STALLED_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

impl Inner {
    /// A place in the queue for one of `person`'s lines, within the queue and their share.
    fn reserve(&self, person: &Arc<str>) -> bool {
        use crate::process::locks::Recover;
        let before = self.queued.fetch_add(1, Ordering::AcqRel);
        if before >= self.capacity {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        let share = self.share.load(Ordering::Relaxed);
        if share >= self.capacity {
            return true;
        }
        let mut people = self.per_person.guard();
        let held = people.entry(person.clone()).or_insert(0);
        if *held >= share {
            drop(people);
            self.queued.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        *held += 1;
        true
    }

    /// Places of these people's lines given back (written, kept by the writer, or lost).
    fn release<'a>(&self, people: impl Iterator<Item = &'a Arc<str>>) {
        use crate::process::locks::Recover;
        let mut n = 0;
        let mut held = self.per_person.guard();
        for p in people {
            n += 1;
            if let Some(c) = held.get_mut(p) {
                *c -= 1;
                if *c == 0 {
                    held.remove(p);
                }
            }
        }
        drop(held);
        self.queued.fetch_sub(n, Ordering::AcqRel);
    }

    fn stalled(&self) -> bool {
        let since = self.writing_since_ms.load(Ordering::Acquire);
        since != 0 && crate::messages::monotonic_ms().saturating_sub(since) >= STALLED_AFTER.as_millis() as u64
    }
}

/// The writer's side: entries to write, and what it tells the handles.
pub struct Feed {
    pub rx: Receiver<Box<Entry>>,
    inner: Arc<Inner>,
}

impl Feed {
    /// Entries taken off the queue are done with: written, kept or dropped. Until then they
    /// count as pending, so a shutdown waits for them to reach the sink, and against their
    /// person's share.
    pub fn done(&self, entries: &[Entry]) {
        self.inner.release(entries.iter().map(|e| &e.principal));
    }

    /// Lines queued or being written.
    pub fn pending(&self) -> usize {
        self.inner.queued.load(Ordering::Acquire)
    }

    /// Whether the sink is writing (with `required`, calls are refused while it is not).
    pub fn set_healthy(&self, ok: bool) {
        if self.inner.healthy.swap(ok, Ordering::AcqRel) != ok {
            let required = self.inner.required.load(Ordering::Relaxed);
            match ok {
                true => tracing::info!(component = "audit", event = "recovered", "the audit trail is being written again"),
                false => tracing::error!(
                    component = "audit",
                    event = "unwritable",
                    required,
                    "the audit trail cannot be written{}",
                    if required {
                        "; calls are refused until it can (audit.required)"
                    } else {
                        "; lines are dropped and counted in mcp_gen_ui_audit_lines_total{outcome=\"dropped\"}"
                    }
                ),
            }
        }
    }

    pub fn dropped(&self, n: u64) {
        self.inner.dropped.inc_by(n);
    }

    /// The writer starts (`true`) or ends a write to the sinks: one that does not end in
    /// [`STALLED_AFTER`] makes `audit.required` refuse calls.
    pub fn writing(&self, on: bool) {
        let at = if on { crate::messages::monotonic_ms() } else { 0 };
        self.inner.writing_since_ms.store(at, Ordering::Release);
    }

    /// `audit.required`: lines that failed are kept and tried again (calls are refused
    /// meanwhile), not dropped.
    pub fn required(&self) -> bool {
        self.inner.required.load(Ordering::Acquire)
    }

    /// The most lines that may wait (kept lines count against it).
    pub fn capacity(&self) -> usize {
        self.inner.capacity
    }
}

/// Where sessions and the edge hand their events (cheap to clone; off: nothing is recorded).
#[derive(Clone, Default)]
pub struct Audit {
    inner: Option<Arc<Inner>>,
}

impl Audit {
    pub fn off() -> Audit {
        Audit { inner: None }
    }

    /// A trail with room for `capacity` lines waiting; the writer reads the [`Feed`].
    pub fn start(capacity: usize, required: bool, whole_args: bool, dropped: IntCounter) -> (Audit, Feed) {
        let capacity = capacity.max(1);
        let (tx, rx) = std::sync::mpsc::sync_channel(capacity);
        let inner = Arc::new(Inner {
            tx,
            queued: AtomicUsize::new(0),
            capacity,
            share: AtomicUsize::new(capacity),
            per_person: Mutex::new(HashMap::new()),
            healthy: AtomicBool::new(true),
            on: AtomicBool::new(true),
            required: AtomicBool::new(required),
            whole_args: AtomicBool::new(whole_args),
            dropped,
            writing_since_ms: AtomicU64::new(0),
        });
        (Audit { inner: Some(inner.clone()) }, Feed { rx, inner })
    }

    /// The edge tells several people apart: from now on each has a share of the queue (a
    /// quarter of it) that their lines and reserved places may take.
    pub fn share_per_person(&self) {
        if let Some(i) = &self.inner {
            i.share.store((i.capacity / 4).max(1), Ordering::Relaxed);
        }
    }

    /// A reload: on or off, required or not, whole arguments or their digest, from now on.
    pub fn configure(&self, on: bool, required: bool, whole_args: bool) {
        if let Some(i) = &self.inner {
            i.on.store(on, Ordering::Release);
            i.required.store(required, Ordering::Release);
            i.whole_args.store(whole_args, Ordering::Release);
        }
    }

    pub fn is_on(&self) -> bool {
        self.inner.as_ref().is_some_and(|i| i.on.load(Ordering::Acquire))
    }

    /// Whether calls record their arguments whole.
    pub fn whole_args(&self) -> bool {
        self.inner.as_ref().is_some_and(|i| i.whole_args.load(Ordering::Acquire))
    }

    /// Lines that will not be written (a shutdown gave up on them): counted as dropped.
    pub fn count_dropped(&self, n: u64) {
        if let Some(i) = &self.inner {
            i.dropped.inc_by(n);
        }
    }

    /// Lines queued or being written (shutdown waits for them).
    pub fn pending(&self) -> usize {
        self.inner.as_ref().map_or(0, |i| i.queued.load(Ordering::Acquire))
    }

    /// Records an event now (best effort: dropped and counted when the queue, or its person's
    /// share of it, is full).
    pub fn record(&self, entry: Entry) {
        let Some(inner) = self.inner.as_ref().filter(|i| i.on.load(Ordering::Acquire)) else { return };
        if !inner.reserve(&entry.principal) {
            inner.dropped.inc();
            return;
        }
        Self::send(inner, entry);
    }

    fn send(inner: &Inner, entry: Entry) {
        match inner.tx.try_send(Box::new(entry)) {
            Ok(()) => {}
            Err(TrySendError::Full(e) | TrySendError::Disconnected(e)) => {
                inner.release(std::iter::once(&e.principal));
                inner.dropped.inc();
            }
        }
    }

    /// A call about to start whose line is written when it ends. With `audit.required`, only
    /// while the trail can be written, with a place kept for the line.
    pub fn admit(&self, entry: Entry) -> Result<Option<Pending>, Unavailable> {
        let Some(inner) = self.inner.as_ref().filter(|i| i.on.load(Ordering::Acquire)) else { return Ok(None) };
        let reserved = if inner.required.load(Ordering::Acquire) {
            if !inner.healthy.load(Ordering::Acquire) || inner.stalled() || !inner.reserve(&entry.principal) {
                return Err(Unavailable);
            }
            true
        } else {
            false
        };
        Ok(Some(Pending { inner: inner.clone(), entry: Some(entry), reserved, started: Instant::now() }))
    }
}

/// How a call's answer reads in the trail: `ok`, `error` (a JSON-RPC error) or `tool_error`
/// (a result with `isError`).
pub fn outcome_of(answer: &Value) -> &'static str {
    if crate::mcp::jsonrpc::get(answer, "error").is_some() {
        "error"
    } else if answer.at("/result/isError").and_then(Value::as_bool) == Some(true) {
        "tool_error"
    } else {
        "ok"
    }
}

mod pending;
pub use pending::Pending;

#[cfg(test)]
mod tests;
