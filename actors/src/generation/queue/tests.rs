//! `GenerationQueue` driven through its messages, offline (no LLM: every page is the template),
//! with a fake cache and refinements store behind its ports.

use futures::future::join_all;
use serde_json::json;
use tokio::sync::Semaphore;

use super::*;
use crate::generation::pipeline::GenSettings;
use crate::generation::prompts::Prompts;
use crate::generation::templates::UiPages;
use crate::messages::ToolsDiff;
use crate::metrics::Metrics;

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
        self.log.push(format!("history {}", m.tool));
        vec![Refinement { at: 0, feedback: "bigger".into(), replaced_key: None }]
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
        self.log.push(format!("clear {}", m.tool));
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
        let log = Log::default();
        let gate = Arc::new(Semaphore::new(if gated { 0 } else { Semaphore::MAX_PERMITS }));
        let store = FakeStore { log: log.clone(), entries: HashMap::new(), gate: gate.clone() }.start();
        let cache = CachePort { get: store.clone().recipient(), put: store.clone().recipient(), invalidate: store.clone().recipient() };
        let deps = Deps {
            llm: None,
            prompts: Arc::new(Prompts::load(None).expect("the built-in prompts")),
            pages: Arc::new(UiPages::new()),
            metrics: Arc::new(Metrics::new()),
            settings: GenSettings {
                budget: Duration::from_secs(30),
                max_retries: 0,
                temperature: 0.2,
                max_tokens: 1000,
                theme: "light".into(),
                debug_dir: None,
                redact: false,
                fallback_ttl: Duration::from_secs(60),
                style_guide: None,
            },
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
    ReadUi { tool, request_id: "test".into(), force, personal: None, trace: Default::default() }
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
    let entries: Vec<Arc<UiEntry>> = in_time("the reads", join_all(reads)).await.into_iter().map(|r| r.unwrap()).collect();
    assert!(entries.iter().all(|e| Arc::ptr_eq(e, &entries[0])), "every reader gets the one page");
    assert_eq!(entries[0].tool_name, "weather");
    assert_eq!(entries[0].fallback_reason.as_deref(), Some("offline"));
    f.settle().await;
    assert_eq!(f.log.with("get").len(), 1, "{:?}", f.log.with(""));
    assert_eq!(f.log.with("put"), vec!["put weather"]);
    assert_eq!(f.port.pending.send(Pending).await.unwrap(), 0);

    // The next read finds the stored page: a lookup, no generation.
    f.gate.add_permits(1);
    let again = in_time("the cached read", f.port.read.send(read_of(weather(), false))).await.unwrap();
    assert_eq!(again.key, entries[0].key);
    f.settle().await;
    assert_eq!((f.log.with("get").len(), f.log.with("put").len()), (2, 1));
}

#[actix::test]
async fn a_read_is_keyed_by_the_tools_refinements_which_the_queue_asks_for() {
    let f = Fixture::new(false);
    let entry = f.port.read.send(read_of(weather(), false)).await.unwrap();
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
    let first = f.port.read.send(read_of(weather(), false)).await.unwrap();
    f.settle().await;
    assert_eq!((f.log.with("get").len(), f.log.with("put").len()), (1, 1));
    f.pages.store("weather", f.pages.revision("weather"), json!({"contents": []}), "template", None);
    assert!(f.pages.get("weather").is_some());

    let forced = in_time("the forced read", f.port.read.send(read_of(weather(), true))).await.unwrap();
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
    let forced = in_time("the forced read, while the plain one waits", f.port.read.send(read_of(weather(), true))).await.unwrap();
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
