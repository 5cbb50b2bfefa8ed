//! Every message the actors exchange, and the "ports" (bundles of `Recipient`s) through which
//! they reach each other. Actors know these types, never each other's: an actor file imports
//! this module and no other actor file, so each actor can be driven by fakes in its tests and
//! the dependency arrows point one way (edges -> sessions -> router -> transports).

use std::sync::Arc;

use actix::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::page::{UiEntry, Writing};
use crate::upstream::UpstreamError;

mod history_key;
mod sink;
pub use history_key::HistoryKey;
#[cfg(test)]
pub(crate) use sink::sink_channel_of;
pub use sink::{sink_channel, Sink, SinkRx, STREAM_BOUND};

pub type SessionId = String;

// ---------------------------------------------------------------- host session

/// One message from the host. `sink`, when set, is the stream this request's answer (and its
/// progress and related server requests) goes to; it closes after the answer.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Incoming {
    pub msg: Value,
    pub sink: Option<Sink>,
    /// Set at the edge (the host's `x-request-id`, or a new one); follows the work in the logs.
    pub request_id: String,
    /// The edge's span for it (the HTTP request), when tracing is on.
    pub trace: crate::trace::TraceCx,
    /// Who the edge authenticated this request as (None: the stdio edge, or a test): the
    /// session's person with the token and claims of this request (a refreshed token).
    pub caller: Option<Arc<crate::who::Who>>,
}

/// The session stream (stdio out, legacy SSE stream, Streamable HTTP GET stream) opened.
#[derive(Message)]
#[rtype(result = "()")]
pub struct AttachStream {
    pub sink: Sink,
}

/// The host went away (stdin closed, DELETE, shutdown).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Close;

/// What the upstream side tells sessions.
#[derive(Message, Clone, Debug)]
#[rtype(result = "()")]
pub enum HostEvent {
    /// A notification for this session; `related` is its host request it belongs to, if any.
    Notify { msg: Value, related: Option<Value> },
    /// A notification naming no request that is this session's person's (theirs is the only
    /// call that could have caused it): on the session stream, or for a stateless call, which
    /// has none, on the stream of `related`, its request.
    ForCaller { msg: Value, related: Option<Value> },
    /// What a server says to no request in particular (a log line, a resource update, a list
    /// change): the session hears it only if the delivery rule (`audience::admits`) admits it.
    Heard { msg: Value, heard: Arc<crate::audience::Heard> },
    /// The tool list changed (`None`: not known tool by tool, as after a reload).
    ToolsChanged(Option<Arc<crate::audience::ToolsChange>>),
    /// The set or content of ui:// resources changed (refine, regenerate).
    UiResourcesChanged,
}

impl HostEvent {
    /// A server's (or, for pages made here, a tool's server's) notification for whoever the
    /// delivery rule admits.
    pub fn heard(msg: Value, origin: crate::audience::Origin) -> HostEvent {
        let about = crate::audience::About::of(&msg);
        HostEvent::Heard { msg, heard: Arc::new(crate::audience::Heard { origin, about }) }
    }
}

/// A server-to-client request (sampling, elicitation, roots) for this host. The answer is the
/// host's JSON-RPC response (its id is restored by the caller).
#[derive(Message)]
#[rtype(result = "Value")]
pub struct ServerRequest {
    pub msg: Value,
    pub related: Option<Value>,
    /// The key a 2026 upstream gave this request in its `input_required` answer: a stateless
    /// host is asked under the same key.
    pub key: Option<String>,
}

/// How the upstream side reaches one host session.
#[derive(Clone)]
pub struct SessionPort {
    pub event: Recipient<HostEvent>,
    pub request: Recipient<ServerRequest>,
}

/// What a task made for a 2026 host is waiting for and how it ended, as its watch saw it
/// (`session::task_watch`): `(outcome, input requests by key)`.
#[derive(Message)]
#[rtype(result = "(Option<crate::mcp::tasks_2026::Outcome>, serde_json::Map<String, Value>)")]
pub struct InspectTask;

/// A 2026 host's `tasks/update`: its answers to the task's input requests, by key.
#[derive(Message)]
#[rtype(result = "()")]
pub struct AnswerTask(pub serde_json::Map<String, Value>);

/// How a task's watch is reached.
#[derive(Clone)]
pub struct WatchPort {
    pub inspect: Recipient<InspectTask>,
    pub answer: Recipient<AnswerTask>,
    pub stop: Recipient<Close>,
}

/// How an edge reaches one host session: shared, since every request looks its session up
/// (a `Recipient` clone allocates twice in actix, and this holds three).
#[derive(Clone)]
pub struct SessionRef(Arc<SessionPorts>);

impl SessionRef {
    pub fn new(ports: SessionPorts) -> Self {
        SessionRef(Arc::new(ports))
    }
}

impl std::ops::Deref for SessionRef {
    type Target = SessionPorts;

    fn deref(&self) -> &SessionPorts {
        &self.0
    }
}

pub struct SessionPorts {
    pub incoming: Recipient<Incoming>,
    pub attach: Recipient<AttachStream>,
    pub close: Recipient<Close>,
    pub flags: Arc<SessionFlags>,
    /// The profile the session serves: a request on another profile's path does not find it.
    pub profile: Option<Arc<str>>,
}

/// What an edge may know of a session without asking it (the session sets them).
#[derive(Default)]
pub struct SessionFlags {
    /// The host declared sampling, elicitation or roots: then requests may be sent to it on a
    /// call's stream, so the edge answers POSTs with SSE rather than plain JSON.
    pub streams: std::sync::atomic::AtomicBool,
    /// The host renders MCP Apps: the edge may answer its reads of ready `ui://` pages itself.
    pub ui: std::sync::atomic::AtomicBool,
    /// When the edge last answered for the session itself (ms on a monotonic clock that starts
    /// with the process): the session is not idle meanwhile.
    edge_seen_ms: std::sync::atomic::AtomicU64,
}

impl SessionFlags {
    /// The edge answered for the session just now.
    pub fn touch(&self) {
        self.edge_seen_ms.store(monotonic_ms(), std::sync::atomic::Ordering::Relaxed);
    }

    /// How long since the edge last answered for the session.
    pub fn edge_idle(&self) -> std::time::Duration {
        let seen = self.edge_seen_ms.load(std::sync::atomic::Ordering::Relaxed);
        std::time::Duration::from_millis(monotonic_ms().saturating_sub(seen))
    }
}

/// Milliseconds on a monotonic clock that starts a day before the process first reads it, so
/// it is never 0 (0 can mean "never") and a time a while back is never negative.
pub fn monotonic_ms() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let day = std::time::Duration::from_secs(86_400);
    START.get_or_init(|| std::time::Instant::now().checked_sub(day).unwrap_or_else(std::time::Instant::now)).elapsed().as_millis() as u64
}

impl SessionPorts {
    pub fn connected(&self) -> bool {
        self.incoming.connected()
    }
}

// ---------------------------------------------------------------- upstream connection

/// A point-in-time view of the upstream for sessions and the edge (published on every change).
#[derive(Debug, Clone, Default)]
pub struct Status {
    pub ready: bool,
    pub tools: ToolList,
    /// The upstream's `initialize` result (capabilities, serverInfo, instructions, ...).
    pub init: Option<Arc<Value>>,
    pub last_error: Option<String>,
    /// The last error cannot go away by trying again (a missing program, a refused address):
    /// hosts are told to fix the servers file, at once, not to retry shortly.
    pub lasting: bool,
    pub restarts: u64,
    pub describe: String,
}

/// A list of tool definitions, each held once and shared (a server's list, the registry, the
/// catalog and its listeners point at the same definitions).
pub type ToolList = Arc<Vec<Arc<Value>>>;

/// A server's list as it came, made shareable.
pub fn tool_list(tools: Vec<Value>) -> ToolList {
    Arc::new(tools.into_iter().map(Arc::new).collect())
}

impl Status {
    /// The upstream's tool named `name`, as it lists it.
    pub fn tool(&self, name: &str) -> Option<&Value> {
        self.tools.iter().map(|t| &**t).find(|t| t.get("name").and_then(Value::as_str) == Some(name))
    }

    /// The names of the upstream's tools, in its order.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().filter_map(|t| t.get("name").and_then(Value::as_str))
    }
}

/// What changed between two tool lists, by name (`servers::tool_refresh::diff`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolsDiff {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<String>,
    pub unchanged: Vec<String>,
}

impl ToolsDiff {
    pub fn is_change(&self) -> bool {
        !(self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty())
    }
}

/// Re-lists the upstream's tools now; answers what changed.
#[derive(Message)]
#[rtype(result = "Result<ToolsDiff, UpstreamError>")]
pub struct RefreshTools;

/// The tool list changed (refresh, list_changed, reconnect).
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct ToolsUpdated {
    pub diff: ToolsDiff,
    /// The definitions hosts see now (shared with the catalog, not copied).
    pub tools: ToolList,
}

/// A session left: release the upstream subscriptions it held (the upstream side knows which).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Unregister {
    pub session: SessionId,
}

/// A host subscribes to (or unsubscribes from) an upstream resource. The first subscriber's
/// request goes upstream (so its answer, error or not, is the upstream's own); later ones are
/// answered by the upstream connection.
#[derive(Message)]
#[rtype(result = "Value")]
pub struct Subscribe {
    pub session: SessionId,
    pub msg: Value,
}

/// Graceful stop: the link guard closes stdin / ends the HTTP session.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown;

/// How sessions and the `_ui_*` tools reach the upstream connection's actor (the proxy path
/// itself goes through the shared [`crate::proxy::router::Router`], not through these).
#[derive(Clone)]
pub struct UpstreamPort {
    pub refresh: Recipient<RefreshTools>,
    pub unregister: Recipient<Unregister>,
    pub subscribe: Recipient<Subscribe>,
    pub shutdown: Recipient<Shutdown>,
}

// ---------------------------------------------------------------- generation queue

/// Read (or make) the page for a tool, with its refinements as they are now (the queue asks
/// for them). `force` skips the cache lookup (regenerate).
#[derive(Message)]
#[rtype(result = "PageRead")]
pub struct ReadUi {
    pub tool: Value,
    pub request_id: String,
    pub force: bool,
    /// `refinements.scope: principal`: the caller's own refinements (their history key), read
    /// after the shared ones. None: the shared page.
    pub personal: Option<HistoryKey>,
    /// The span of the read that asked: a generation it starts is its child, and a read that
    /// joins one in flight links to it.
    pub trace: crate::trace::TraceCx,
    /// How long the read may wait for a page being written.
    pub wait: ReadWait,
}

/// How long a read waits for the page it asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadWait {
    /// A host's read: `generation.timeoutMs`, then the provisional page (the generation goes on).
    Budget,
    /// Until the page is made (warming, export): never a provisional page.
    Whole,
}

/// A read's answer: the page, or (`writing` set) the provisional template shown while the page
/// is being written. A provisional page is never kept as the answer to later reads.
#[derive(Debug, Clone, MessageResponse)]
pub struct PageRead {
    pub entry: Arc<UiEntry>,
    pub writing: Option<Writing>,
}

impl PageRead {
    pub fn page(entry: Arc<UiEntry>) -> Self {
        PageRead { entry, writing: None }
    }

    pub fn provisional(&self) -> bool {
        self.writing.is_some()
    }
}

/// Where a tool's page is now, without starting a generation: what a provisional page asks
/// (through `_ui_page_status`) until its page is written. Waits at most `wait` for a page being
/// written to be done.
#[derive(Message)]
#[rtype(result = "PageStatus")]
pub struct StatusOf {
    pub tool: Value,
    /// As in [`ReadUi`].
    pub personal: Option<HistoryKey>,
    pub wait: std::time::Duration,
    /// The page's text so far is wanted (to show it as it is written): the wait is short.
    pub preview: bool,
}

#[derive(Debug, Clone, MessageResponse)]
pub enum PageStatus {
    /// Being written: how far, and (when asked for) the page's text so far.
    Writing(Writing, Option<String>),
    /// Made: the page a read gets now (written, or the template with its reason).
    Ready(Arc<UiEntry>),
    /// Neither made nor being made (a read would start it).
    Idle,
}

/// Shutdown: stop every generation still running, and say in the log which were dropped.
#[derive(Message)]
#[rtype(result = "usize")]
pub struct Abandon;

/// Forgets what was learnt about a tool (its classification) so the next generation asks again.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ForgetTool {
    pub tool: Value,
}

/// The cached page for a tool (with its refinements as they are now), if any, without
/// generating one.
#[derive(Message)]
#[rtype(result = "Option<Arc<UiEntry>>")]
pub struct Peek {
    pub tool: Value,
    /// As in [`ReadUi`].
    pub personal: Option<HistoryKey>,
}

/// The cache key a read of the tool would use now (for `_ui_inspect`, and the key a
/// refinement replaces).
#[derive(Message)]
#[rtype(result = "String")]
pub struct KeyFor {
    pub tool: Value,
    /// As in [`ReadUi`].
    pub personal: Option<HistoryKey>,
}

/// How many reads are waiting on a lookup or generation (shutdown drains to zero).
#[derive(Message)]
#[rtype(result = "usize")]
pub struct Pending;

#[derive(Clone)]
pub struct QueuePort {
    pub read: Recipient<ReadUi>,
    pub status: Recipient<StatusOf>,
    pub peek: Recipient<Peek>,
    pub key_for: Recipient<KeyFor>,
    pub forget: Recipient<ForgetTool>,
    pub pending: Recipient<Pending>,
    pub abandon: Recipient<Abandon>,
}

// ---------------------------------------------------------------- cache

#[derive(Message)]
#[rtype(result = "Option<Arc<UiEntry>>")]
pub struct Get {
    pub key: String,
}

/// Stores an entry (memory, then disk). Answers once both are done, so a read that follows
/// sees it. Entries over `maxEntrySizeBytes` are served but not kept.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct Put {
    pub entry: Arc<UiEntry>,
}

/// Drops every entry of a tool (regenerate, tool removed).
#[derive(Message)]
#[rtype(result = "usize")]
pub struct InvalidateTool {
    pub tool_name: String,
}

/// Drops a tool's pages (or one key of it) from this replica's memory only: another replica
/// replaced or dropped them in the shared store (`cache.type: redis`).
#[derive(Message)]
#[rtype(result = "()")]
pub struct ForgetLocal {
    pub tool_name: String,
    /// One page; None: every page of the tool.
    pub key: Option<String>,
}

#[derive(Clone)]
pub struct CachePort {
    pub get: Recipient<Get>,
    pub put: Recipient<Put>,
    pub invalidate: Recipient<InvalidateTool>,
}

// ---------------------------------------------------------------- refinements

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Refinement {
    /// Unix milliseconds.
    pub at: u64,
    pub feedback: String,
    /// The cache key of the page this refinement replaced.
    pub replaced_key: Option<String>,
    /// Who asked for it (a principal's name; histories from before have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// Appends one; answers the tool's feedback texts in order, the new one last.
#[derive(Message)]
#[rtype(result = "Vec<String>")]
pub struct Append {
    pub key: HistoryKey,
    pub feedback: String,
    pub replaced_key: Option<String>,
    /// Who asks for it (`Who::name`).
    pub by: String,
}

/// The full history of a tool (oldest first).
#[derive(Message)]
#[rtype(result = "Vec<Refinement>")]
pub struct History {
    pub key: HistoryKey,
}

/// Forgets a tool's history (on request, or when the tool is gone). Answers how many there were.
#[derive(Message)]
#[rtype(result = "usize")]
pub struct Clear {
    pub key: HistoryKey,
    /// The tool is gone: every principal's own refinements of it go too (this process's).
    pub every_scope: bool,
}

#[derive(Clone)]
pub struct RefinementsPort {
    pub append: Recipient<Append>,
    pub history: Recipient<History>,
    pub clear: Recipient<Clear>,
}

impl RefinementsPort {
    /// The feedback texts of a tool, oldest first (empty when the actor is gone).
    pub async fn feedback(&self, key: &HistoryKey) -> Vec<String> {
        self.history.send(History { key: key.clone() }).await.unwrap_or_default().into_iter().map(|r| r.feedback).collect()
    }
}
