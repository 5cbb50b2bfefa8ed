//! `GenerationQueue` driven through its messages, offline (no LLM: every page is the template),
//! with a fake cache and refinements store behind its ports.

use futures::future::join_all;
use serde_json::json;
use tokio::sync::Semaphore;

use super::*;
use crate::generation::pipeline::GenSettings;
use crate::generation::prompts::Prompts;
use crate::generation::templates::UiPages;
use crate::messages::{Put, ToolsDiff};
use crate::metrics::Metrics;

use crate::generation::llm::{LlmClient, LlmError, LlmRequest, LlmResponse, SharedLlm};
use crate::messages::{Append, Refinement};
use crate::test_support::Log;

/// Answers once every message sent before it was handled.
#[derive(Message)]
#[rtype(result = "()")]
struct Flush;

/// The cache (a plain map) and the refinements' `Clear`. Lookups wait for a permit of `gate`.
struct FakeStore {
    log: Log,
    entries: HashMap<String, Arc<UiEntry>>,
    gate: Arc<Semaphore>,
}

impl Actor for FakeStore {
    type Context = Context<Self>;
}

impl Handler<Get> for FakeStore {
    type Result = ResponseFuture<Option<Arc<UiEntry>>>;

    fn handle(&mut self, m: Get, _ctx: &mut Self::Context) -> Self::Result {
        self.log.push(format!("get {}", m.key));
        let hit = self.entries.get(&m.key).cloned();
        let gate = self.gate.clone();
        Box::pin(async move {
            gate.acquire().await.expect("the gate stays open").forget();
            hit
        })
    }
}

impl Handler<Put> for FakeStore {
    type Result = bool;

    fn handle(&mut self, m: Put, _ctx: &mut Self::Context) -> bool {
        self.log.push(format!("put {}", m.entry.tool_name));
        self.entries.insert(m.entry.key.clone(), m.entry);
        true
    }
}

impl Handler<InvalidateTool> for FakeStore {
    type Result = usize;

    fn handle(&mut self, m: InvalidateTool, _ctx: &mut Self::Context) -> usize {
        self.log.push(format!("invalidate {}", m.tool_name));
        0
    }
}

impl Handler<History> for FakeStore {
    type Result = Vec<Refinement>;

    fn handle(&mut self, m: History, _ctx: &mut Self::Context) -> Self::Result {
        self.log.push(format!("history {}", m.key.stored()));
        vec![Refinement { at: 0, feedback: "bigger".into(), replaced_key: None, by: None }]
    }
}

impl Handler<Append> for FakeStore {
    type Result = Vec<String>;

    fn handle(&mut self, m: Append, _ctx: &mut Self::Context) -> Self::Result {
        vec![m.feedback]
    }
}

impl Handler<Clear> for FakeStore {
    type Result = usize;

    fn handle(&mut self, m: Clear, _ctx: &mut Self::Context) -> usize {
        self.log.push(format!("clear {}", m.key.stored()));
        0
    }
}

impl Handler<Flush> for FakeStore {
    type Result = ();

    fn handle(&mut self, _: Flush, _ctx: &mut Self::Context) {}
}

struct Fixture {
    queue: Addr<GenerationQueue>,
    port: QueuePort,
    store: Addr<FakeStore>,
    pages: Arc<ReadyPages>,
    log: Log,
    /// Opens the fake cache's lookups: one permit answers one `Get`.
    gate: Arc<Semaphore>,
}

impl Fixture {
    /// An offline queue with the cache on; `gated`: lookups wait for [`Fixture::gate`].
    fn new(gated: bool) -> Self {
        Self::build(gated, None, Duration::from_secs(30))
    }

    /// A queue whose pages come from `llm`; a host's read waits `read_wait`.
    fn with_llm(llm: SharedLlm, read_wait: Duration) -> Self {
        Self::build(false, Some(llm), read_wait)
    }

    fn build(gated: bool, llm: Option<SharedLlm>, read_wait: Duration) -> Self {
        let log = Log::default();
        let gate = Arc::new(Semaphore::new(if gated { 0 } else { Semaphore::MAX_PERMITS }));
        let store = FakeStore { log: log.clone(), entries: HashMap::new(), gate: gate.clone() }.start();
        let cache = CachePort { get: store.clone().recipient(), put: store.clone().recipient(), invalidate: store.clone().recipient() };
        let deps = Deps {
            llm,
            prompts: Arc::new(Prompts::load(None).expect("the built-in prompts")),
            pages: Arc::new(UiPages::new()),
            metrics: Arc::new(Metrics::new()),
            settings: GenSettings {
                read_wait,
                ceiling: Duration::from_secs(60),
                limits: Default::default(),
                max_retries: 0,
                temperature: 0.2,
                max_tokens: 1000,
                theme: "light".into(),
                debug_dir: None,
                redact: false,
                fallback_ttl: Duration::from_secs(60),
                style_guide: None,
            },
            pace: Default::default(),
        };
        let pages = ReadyPages::new();
        let refinements =
            RefinementsPort { append: store.clone().recipient(), history: store.clone().recipient(), clear: store.clone().recipient() };
        let queue = GenerationQueue::new(cache, refinements, deps, "config".into(), true, 2, None).with_pages(Some(pages.clone())).start();
        Fixture { port: GenerationQueue::port(&queue), queue, store, pages, log, gate }
    }

    /// Every message the queue sent the store so far has been handled.
    async fn settle(&self) {
        self.store.send(Flush).await.unwrap();
    }
}

fn weather() -> Value {
    json!({"name": "weather", "description": "Forecast", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}})
}

fn read_of(tool: Value, force: bool) -> ReadUi {
    ReadUi { tool, request_id: "test".into(), force, personal: None, trace: Default::default(), wait: ReadWait::Budget }
}

async fn in_time<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), f).await.unwrap_or_else(|_| panic!("{what} in time"))
}

#[actix::test]
async fn concurrent_reads_of_one_tool_make_one_lookup_and_one_store() {
    let f = Fixture::new(true);
    // Sent now, before any is handled: the queue sees all eight while the first lookup waits.
    let reads: Vec<_> = (0..8).map(|_| f.port.read.send(read_of(weather(), false))).collect();
    // Each read first asks for the tool's refinements, then joins the key's lookup.
    in_time("the reads to join", async {
        while f.log.with("history").len() < 8 || f.port.pending.send(Pending).await.unwrap() != 1 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    f.gate.add_permits(1);
    let entries: Vec<Arc<UiEntry>> = in_time("the reads", join_all(reads)).await.into_iter().map(|r| r.unwrap().entry).collect();
    assert!(entries.iter().all(|e| Arc::ptr_eq(e, &entries[0])), "every reader gets the one page");
    assert_eq!(entries[0].tool_name, "weather");
    assert_eq!(entries[0].fallback_reason.as_ref().map(|r| r.as_str()), Some("offline"));
    f.settle().await;
    assert_eq!(f.log.with("get").len(), 1, "{:?}", f.log.with(""));
    assert_eq!(f.log.with("put"), vec!["put weather"]);
    assert_eq!(f.port.pending.send(Pending).await.unwrap(), 0);

    // The next read finds the stored page: a lookup, no generation.
    f.gate.add_permits(1);
    let again = in_time("the cached read", f.port.read.send(read_of(weather(), false))).await.unwrap().entry;
    assert_eq!(again.key, entries[0].key);
    f.settle().await;
    assert_eq!((f.log.with("get").len(), f.log.with("put").len()), (2, 1));
}

#[actix::test]
async fn a_read_is_keyed_by_the_tools_refinements_which_the_queue_asks_for() {
    let f = Fixture::new(false);
    let entry = f.port.read.send(read_of(weather(), false)).await.unwrap().entry;
    assert_eq!(f.log.with("history"), vec!["history weather"]);
    let with_them = crate::generation::cache_key::cache_key(
        "weather",
        &crate::page::tool_hash(&weather()),
        &crate::generation::cache_key::refinements_hash(&["bigger".to_string()]),
        "config",
    );
    assert_eq!(entry.key, with_them);
}

#[actix::test]
async fn a_forced_read_skips_the_lookup_stores_a_new_page_and_drops_the_ready_one() {
    let f = Fixture::new(false);
    let first = f.port.read.send(read_of(weather(), false)).await.unwrap().entry;
    f.settle().await;
    assert_eq!((f.log.with("get").len(), f.log.with("put").len()), (1, 1));
    f.pages.store("weather", f.pages.revision("weather"), json!({"contents": []}), "template", None);
    assert!(f.pages.get("weather").is_some());

    let forced = in_time("the forced read", f.port.read.send(read_of(weather(), true))).await.unwrap().entry;
    assert_eq!(forced.key, first.key, "same tool, same refinements: same key");
    assert!(!Arc::ptr_eq(&forced, &first), "a new page, not the cached one");
    f.settle().await;
    assert_eq!(f.log.with("get").len(), 1, "no lookup for a forced read: {:?}", f.log.with(""));
    assert_eq!(f.log.with("put").len(), 2);
    assert!(f.pages.get("weather").is_none(), "the regenerated page replaces the ready one");
}

#[actix::test]
async fn a_forced_read_does_not_join_a_plain_read_in_flight() {
    let f = Fixture::new(true);
    let plain = f.port.read.send(read_of(weather(), false));
    assert_eq!(f.port.pending.send(Pending).await.unwrap(), 1, "the plain read waits on its lookup");
    // The plain read may be answered with the old cached page; the forced one must not wait for it.
    let forced = in_time("the forced read, while the plain one waits", f.port.read.send(read_of(weather(), true))).await.unwrap().entry;
    assert_eq!(forced.tool_name, "weather");
    assert_eq!(f.port.pending.send(Pending).await.unwrap(), 1, "the plain read still waits");
    f.gate.add_permits(1);
    in_time("the plain read", plain).await.unwrap();
    f.settle().await;
    assert_eq!((f.log.with("get").len(), f.log.with("put").len()), (1, 2));
}

#[actix::test]
async fn a_removed_tool_loses_pages_and_refinements_a_changed_one_only_its_pages() {
    let f = Fixture::new(false);
    for tool in ["gone", "edited", "kept"] {
        f.pages.store(tool, f.pages.revision(tool), json!({}), "template", None);
    }
    let diff = ToolsDiff { removed: vec!["gone".into()], changed: vec!["edited".into()], unchanged: vec!["kept".into()], added: vec![] };
    f.queue.send(ToolsUpdated { diff, tools: Arc::new(Vec::new()) }).await.unwrap();
    f.settle().await;
    assert_eq!(f.log.with("invalidate"), vec!["invalidate gone", "invalidate edited"]);
    assert_eq!(f.log.with("clear"), vec!["clear gone"]);
    assert!(f.pages.get("gone").is_none());
    assert!(f.pages.get("edited").is_none());
    assert!(f.pages.get("kept").is_some());
}

const PACED_PAGE: &str = r#"<!doctype html>
<html><head><title>PACED-PAGE</title></head>
<body><form id="f"><input id="c"><button>Go</button></form><pre id="out"></pre>
<script type="module">
import { App } from "@modelcontextprotocol/ext-apps";
const app = new App({ name: "t", version: "1" });
app.ontoolresult = (r) => { document.getElementById("out").textContent = JSON.stringify(r); };
window.addEventListener("error", (e) => console.error(e));
await app.connect();
document.getElementById("f").addEventListener("submit", async (e) => { e.preventDefault();
  const r = await app.callServerTool({ name: "weather", arguments: { city: document.getElementById("c").value } });
  document.getElementById("out").textContent = JSON.stringify(r); });
</script></body></html>"#;

/// A provider paced like a hosted one, scaled down: each answer streams `parts` pieces of a
/// page, one every `every`, counted into the request's progress. Notes each request, and each
/// request dropped before its answer was complete.
struct PacedLlm {
    every: Duration,
    parts: usize,
    fail_first: usize,
    asked: std::sync::atomic::AtomicUsize,
    dropped: Arc<std::sync::atomic::AtomicUsize>,
}

impl PacedLlm {
    fn new(every_ms: u64, parts: usize) -> Arc<Self> {
        Arc::new(PacedLlm {
            every: Duration::from_millis(every_ms),
            parts,
            fail_first: 0,
            asked: Default::default(),
            dropped: Default::default(),
        })
    }

    fn asked(&self) -> usize {
        self.asked.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Counts a request dropped before it finished.
struct DropNote(Arc<std::sync::atomic::AtomicUsize>, bool);

impl Drop for DropNote {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

impl LlmClient for PacedLlm {
    fn provider(&self) -> &'static str {
        "paced"
    }

    fn model(&self) -> &str {
        "paced-1"
    }

    fn complete(&self, req: LlmRequest) -> futures::future::BoxFuture<'static, Result<LlmResponse, LlmError>> {
        let n = self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let (every, parts, fail) = (self.every, self.parts, n < self.fail_first);
        let dropped = self.dropped.clone();
        Box::pin(async move {
            let mut note = DropNote(dropped, false);
            if req.max_tokens == crate::generation::pipeline::CLASSIFY_TOKENS {
                note.1 = true;
                return Ok(LlmResponse { text: "rich".into(), ..Default::default() });
            }
            if fail {
                note.1 = true;
                return Err(LlmError::new(crate::page::LlmFailure::ServerError, "scripted failure"));
            }
            let page = PACED_PAGE.to_string();
            let piece = page.len() / parts + 1;
            for chunk in page.as_bytes().chunks(piece) {
                tokio::time::sleep(every).await;
                if let Some(p) = &req.progress {
                    p.received(std::str::from_utf8(chunk).unwrap_or_default());
                }
            }
            note.1 = true;
            Ok(LlmResponse { text: page, ..Default::default() })
        })
    }
}

#[actix::test]
async fn a_read_past_its_budget_gets_the_provisional_page_and_the_generation_goes_on() {
    let llm = PacedLlm::new(60, 10); // about 600 ms of writing
    let f = Fixture::with_llm(llm.clone(), Duration::from_millis(150));
    let started = Instant::now();
    let first = f.port.read.send(read_of(weather(), false)).await.unwrap();
    assert!(started.elapsed() < Duration::from_millis(500), "the read waited its budget only: {:?}", started.elapsed());
    let writing = first.writing.expect("the provisional page");
    assert!(first.entry.html.contains("mcp-gen-ui-provisional"), "the template that follows the writing");
    assert!(writing.elapsed_ms >= 100, "{writing:?}");
    f.settle().await;
    assert!(f.log.with("put").is_empty(), "a provisional page is never stored: {:?}", f.log.with(""));

    // The page's own status call follows it, and is answered when it is written.
    let status = f.port.status.send(StatusOf { tool: weather(), personal: None, wait: Duration::from_secs(5), preview: false });
    let status = in_time("the status call", status).await.unwrap();
    let PageStatus::Ready(written) = status else { panic!("the written page, got {status:?}") };
    assert!(written.html.contains("PACED-PAGE") && written.fallback_reason.is_none());
    f.settle().await;
    assert_eq!(f.log.with("put"), vec!["put weather"], "stored once");

    // Every later read gets it, with no generation.
    let again = in_time("the second read", f.port.read.send(read_of(weather(), false))).await.unwrap();
    assert!(again.writing.is_none() && again.entry.html.contains("PACED-PAGE"));
    assert_eq!(llm.asked(), 2, "one classification and one page: nothing asked again");
    assert_eq!(llm.dropped.load(std::sync::atomic::Ordering::SeqCst), 0, "no request was dropped");
}

#[actix::test]
async fn a_page_being_made_for_a_tool_that_changed_is_dropped_and_its_readers_get_the_template() {
    let llm = PacedLlm::new(100, 50); // 5 s of writing
    let f = Fixture::with_llm(llm.clone(), Duration::from_secs(30));
    let read = f.port.read.send(read_of(weather(), false));
    in_time("the page to be asked for", async {
        while llm.asked() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let diff = ToolsDiff { changed: vec!["weather".into()], ..Default::default() };
    f.queue.send(ToolsUpdated { diff, tools: Arc::new(Vec::new()) }).await.unwrap();
    let answer = in_time("the reader's answer", read).await.unwrap();
    assert_eq!(answer.entry.fallback_reason.as_ref().map(|r| r.as_str()), Some("ABORTED"));
    assert!(answer.writing.is_none());
    assert_eq!(llm.dropped.load(std::sync::atomic::Ordering::SeqCst), 1, "the request was dropped");
    assert_eq!(f.port.pending.send(Pending).await.unwrap(), 0);
    f.settle().await;
    assert!(f.log.with("put").is_empty(), "nothing of the old tool is stored");
}

#[actix::test]
async fn a_page_that_failed_is_tried_again_later_each_time() {
    let llm = Arc::new(PacedLlm { fail_first: 100, ..Arc::try_unwrap(PacedLlm::new(1, 1)).ok().unwrap() });
    let f = Fixture::with_llm(llm.clone(), Duration::from_secs(30));
    let mut kept = Vec::new();
    for _ in 0..2 {
        let e = f.port.read.send(ReadUi { force: true, ..read_of(weather(), false) }).await.unwrap().entry;
        assert_eq!(e.fallback_reason.as_ref().map(|r| r.as_str()), Some("SERVER_ERROR"));
        kept.push(e.expires_at.unwrap().saturating_sub(e.generated_at));
    }
    // max_retries is 0: one request a generation (and one classification first).
    assert_eq!(llm.asked(), 3);
    let secs: Vec<u64> = kept.iter().map(|ms| (ms + 500) / 1000).collect();
    assert_eq!(secs, vec![30, 60], "the template is kept longer after each failure in a row");
}

#[actix::test]
async fn a_read_waits_only_while_the_pace_says_the_page_can_come_in_time() {
    // 50 pieces a tenth of a second apart: about 5 s for a short page, far slower than the
    // expected length allows within the budget: the provisional page soon after the first text.
    let slow = PacedLlm::new(100, 50);
    let f = Fixture::with_llm(slow.clone(), Duration::from_secs(15));
    let started = Instant::now();
    let first = in_time("the slow read", f.port.read.send(read_of(weather(), false))).await.unwrap();
    assert!(first.writing.is_some(), "the provisional page");
    assert!(started.elapsed() < Duration::from_secs(3), "not the 15 s budget: {:?}", started.elapsed());
    // A fast model's page comes on the first read.
    let fast = PacedLlm::new(5, 10);
    let f = Fixture::with_llm(fast.clone(), Duration::from_secs(30));
    let first = in_time("the fast read", f.port.read.send(read_of(weather(), false))).await.unwrap();
    assert!(first.writing.is_none() && first.entry.html.contains("PACED-PAGE"), "the written page on the first read");
    assert_eq!(fast.asked(), 2, "one classification, one page");
}
