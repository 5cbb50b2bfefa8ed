//! `GenerationQueue`: every `ui://` read goes through here. It owns the single-flight map (one
//! lookup-or-generation per cache key, however many reads wait on it), the concurrency slots,
//! and the remembered classifications. A read's wait for a slot counts against its budget.
//!
//! With replicas (`cache.type: redis`) single flight spans them: a miss claims the key's lease
//! first (`lease.rs`) and either makes the page, or waits for the replica that is making it,
//! within the read's budget. Classifications are shared as soon as they are made.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::Value;
use tokio::sync::{oneshot, Semaphore};
use tracing::Instrument;

use crate::contain;
use crate::generation::cache_key::{cache_key, refinements_hash};
use crate::generation::pipeline::{self, Deps, Job};
use crate::messages::{
    CachePort, Clear, ForgetTool, Get, History, InvalidateTool, KeyFor, Peek, Pending, Put, QueuePort, ReadUi, RefinementsPort,
    ToolsUpdated,
};
use crate::page::UiType;
use crate::page::{tool_hash, UiEntry};
use crate::store::learned_shapes::LearnedShapes;
use crate::store::ready_pages::ReadyPages;
use crate::store::redis::{Event, RedisStore};
use crate::store::snapshot_file::{self, Writer};
use crate::trace::{attr, Attr, Kind, Span, TraceCx};
use making::{export, make, Made};

/// The reads of one key waiting for its lookup or generation, and that generation's span
/// (a read joining it links its own span to it).
struct Waiting {
    readers: Vec<oneshot::Sender<Arc<UiEntry>>>,
    generation: TraceCx,
}

pub struct GenerationQueue {
    cache: CachePort,
    /// Each read's refinements come from here; removed tools lose their histories.
    refinements: RefinementsPort,
    /// `--export-dir`: every page made is also written to `<dir>/<tool>.html`.
    export_dir: Option<std::path::PathBuf>,
    deps: Arc<Deps>,
    config_hash: String,
    cache_enabled: bool,
    slots: Arc<Semaphore>,
    waiting: HashMap<String, Waiting>,
    /// Reads still asking for their tool's refinements (not yet keyed).
    resolving: usize,
    classifications: HashMap<String, UiType>,
    /// With a cache folder, classifications persist (`state/classifications.json`).
    classifications_file: Option<std::path::PathBuf>,
    classifications_writer: Option<Writer<HashMap<String, UiType>>>,
    /// Ready read results, invalidated here when a tool's page is replaced or dropped.
    pages: Option<Arc<ReadyPages>>,
    /// The replicas' shared store: leases, classifications (None: this process alone).
    shared: Option<RedisStore>,
    /// Learnt result shapes, for generation prompts (`generation.learnResultShape`).
    shapes: Option<Arc<LearnedShapes>>,
}

impl GenerationQueue {
    pub fn new(
        cache: CachePort,
        refinements: RefinementsPort,
        deps: Deps,
        config_hash: String,
        cache_enabled: bool,
        max_concurrent: usize,
        export_dir: Option<std::path::PathBuf>,
    ) -> Self {
        GenerationQueue {
            cache,
            refinements,
            export_dir,
            deps: Arc::new(deps),
            config_hash,
            cache_enabled,
            slots: Arc::new(Semaphore::new(max_concurrent.max(1))),
            waiting: HashMap::new(),
            resolving: 0,
            classifications: HashMap::new(),
            classifications_file: None,
            classifications_writer: None,
            pages: None,
            shared: None,
            shapes: None,
        }
    }

    /// One generation per key across replicas, and classifications shared through Redis.
    pub fn with_shared(mut self, shared: Option<RedisStore>) -> Self {
        self.shared = shared;
        self
    }

    /// Learnt result shapes go into generation prompts.
    pub fn with_shapes(mut self, shapes: Option<Arc<LearnedShapes>>) -> Self {
        self.shapes = shapes;
        self
    }

    pub fn with_pages(mut self, pages: Option<Arc<ReadyPages>>) -> Self {
        self.pages = pages;
        self
    }

    fn page_changed(&self, tool: &str) {
        if let Some(p) = &self.pages {
            p.invalidate(tool);
        }
    }

    pub fn port(addr: &Addr<Self>) -> QueuePort {
        QueuePort {
            read: addr.clone().recipient(),
            peek: addr.clone().recipient(),
            key_for: addr.clone().recipient(),
            forget: addr.clone().recipient(),
            pending: addr.clone().recipient(),
        }
    }

    /// Persist classifications in `cache_dir` (with the disk cache).
    pub fn with_state_dir(mut self, cache_dir: Option<&std::path::Path>) -> Self {
        self.classifications_file = cache_dir.map(|d| snapshot_file::state_dir(d).join("classifications.json"));
        self
    }

    fn remember(&mut self, tool_hash: String, t: UiType) {
        if self.classifications.insert(tool_hash, t) != Some(t) {
            if let Some(w) = &self.classifications_writer {
                w.save(self.classifications.clone());
            }
        }
    }

    /// The key a read of `tool` with `refinements` uses, and the tool's hash it is made from.
    pub fn key_for(&self, tool: &Value, refinements: &[String]) -> (String, String) {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        let th = tool_hash(tool);
        (cache_key(name, &th, &refinements_hash(refinements), &self.config_hash), th)
    }

    /// The tool's refinements as they are now (none when the refinements actor is away).
    /// The feedback a read's page is made with: the tool's shared refinements, then (principal
    /// scope) the caller's own.
    fn feedback_of(&self, tool: &Value, personal: Option<String>) -> impl std::future::Future<Output = Vec<String>> + 'static {
        let tool = tool.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        let shared = self.refinements.history.send(History { tool });
        let own = personal.map(|p| self.refinements.history.send(History { tool: p }));
        async move {
            let mut all: Vec<String> = shared.await.unwrap_or_default().into_iter().map(|r| r.feedback).collect();
            if let Some(own) = own {
                all.extend(own.await.unwrap_or_default().into_iter().map(|r| r.feedback));
            }
            all
        }
    }
}

impl Actor for GenerationQueue {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if let Some(s) = self.shared.clone() {
            // Not `wait`: a Redis that is away must not hold the mailbox.
            ctx.spawn(async move { s.classifications().await.ok() }.into_actor(self).map(|loaded, act, _| {
                for (h, t) in loaded.unwrap_or_default() {
                    act.classifications.entry(h).or_insert(t);
                }
            }));
        }
        let Some(file) = self.classifications_file.clone() else { return };
        if self.classifications_writer.is_none() {
            self.classifications_writer = Some(Writer::start(file.clone()));
        }
        ctx.wait(snapshot_file::load::<HashMap<String, UiType>>(file).into_actor(self).map(|loaded, act, _| {
            if let Some(c) = loaded {
                act.classifications.extend(c);
            }
        }));
    }
}

impl Supervised for GenerationQueue {
    fn restarting(&mut self, _ctx: &mut Self::Context) {
        // The futures that would have answered these died with the old context; their readers
        // get the emergency answer (see `ReadUi`) and the next read starts afresh.
        self.waiting.clear();
        self.resolving = 0;
        contain::note_restart("generation_queue", &self.deps.metrics);
    }
}

/// A read with what it is keyed by.
struct Read {
    tool: Value,
    refinements: Vec<String>,
    request_id: String,
    trace: TraceCx,
    force: bool,
    /// A page of one principal's own (principal scope): remaking it leaves everyone else's.
    personal: bool,
    key: String,
    tool_hash: String,
}

impl Handler<ReadUi> for GenerationQueue {
    type Result = ResponseActFuture<Self, Arc<UiEntry>>;

    fn handle(&mut self, m: ReadUi, _ctx: &mut Self::Context) -> Self::Result {
        let arrived = Instant::now();
        let feedback = self.feedback_of(&m.tool, m.personal.clone());
        self.resolving += 1;
        Box::pin(feedback.into_actor(self).then(move |refinements, act, ctx| {
            act.resolving = act.resolving.saturating_sub(1);
            let (key, tool_hash) = act.key_for(&m.tool, &refinements);
            let deps = act.deps.clone();
            let spare = Job {
                key: key.clone(),
                tool: m.tool.clone(),
                refinements: Vec::new(),
                request_id: m.request_id.clone(),
                trace: TraceCx::none(),
                deadline: Instant::now(),
                known_type: None,
                result_shape: None,
            };
            let read = Read {
                tool: m.tool,
                refinements,
                request_id: m.request_id,
                trace: m.trace,
                force: m.force,
                personal: m.personal.is_some(),
                key,
                tool_hash,
            };
            let rx = contain::contain::<Self, _, _>("generation_queue", ctx, |ctx| Some(act.enqueue(read, arrived, ctx)), || None);
            async move {
                match rx {
                    // `_joined`: the span of a read that joined a generation in flight, ended
                    // when that page reaches it.
                    Some((rx, _joined)) => match rx.await {
                        Ok(entry) => entry,
                        Err(_) => Arc::new(pipeline::internal_fallback(&spare, &deps, "the generation queue restarted during this read")),
                    },
                    None => Arc::new(pipeline::internal_fallback(&spare, &deps, "the generation queue failed on this read")),
                }
            }
            .into_actor(act)
        }))
    }
}

impl GenerationQueue {
    /// Joins the read to the key's lookup-or-generation, starting one if none runs. The budget
    /// counts from when the read `arrived`.
    fn enqueue(&mut self, m: Read, arrived: Instant, ctx: &mut Context<Self>) -> (oneshot::Receiver<Arc<UiEntry>>, Span) {
        let key = m.key.clone();
        // Forced reads never join a plain read: that one may be answered by the old cached page.
        let slot = if m.force { format!("{key}#force") } else { key.clone() };
        let (tx, rx) = oneshot::channel();
        let name_of = |tool: &Value| tool.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        if let Some(w) = self.waiting.get_mut(&slot) {
            w.readers.push(tx);
            let joined = Span::start_with("ui.page.wait", Kind::Internal, &m.trace, || {
                vec![Attr::new(attr::TOOL_NAME, name_of(&m.tool)), Attr::new(attr::REQUEST_ID, m.request_id.clone())]
            });
            joined.link(&w.generation);
            return (rx, joined);
        }
        let tool_name = name_of(&m.tool);
        let generation = Span::start_with(format!("ui.page.generate {tool_name}"), Kind::Internal, &m.trace, || {
            vec![
                Attr::new(attr::TOOL_NAME, tool_name.clone()),
                Attr::new(attr::REQUEST_ID, m.request_id.clone()),
                Attr::new("mcp_gen_ui.forced", m.force),
            ]
        });
        self.waiting.insert(slot.clone(), Waiting { readers: vec![tx], generation: generation.cx() });
        // A forced remake drops the tool's other pages everywhere, unless it is one person's.
        let drop_others = m.force && !m.personal;
        let personal = m.personal;
        let th = m.tool_hash;
        let trace_id = generation.cx().trace_id();
        let span = tracing::info_span!("generation", requestId = %m.request_id, trace_id = trace_id.as_deref(), tool_name = %tool_name, cache_key = %key);
        let job = Job {
            key: key.clone(),
            known_type: self.classifications.get(&th).copied(),
            tool: m.tool,
            refinements: m.refinements,
            request_id: m.request_id,
            trace: generation.cx(),
            deadline: arrived + self.deps.settings.budget,
            result_shape: self.shapes.as_ref().and_then(|s| s.get(&tool_name)),
        };
        let lookup = (self.cache_enabled && !m.force).then(|| self.cache.get.send(Get { key: key.clone() }));
        let cache = self.cache.clone();
        let cache_enabled = self.cache_enabled;
        let export_dir = self.export_dir.clone();
        let deps = self.deps.clone();
        let slots = self.slots.clone();
        let shared = self.shared.clone().filter(|_| cache_enabled);
        let fut = async move {
            // The cache's own tiers: memory, then the folder or Redis (the shared store).
            let store = if shared.is_some() { "redis" } else { "local" };
            if let Some(l) = lookup {
                let looking =
                    Span::start_with("ui.cache.get", Kind::Internal, &generation.cx(), || vec![Attr::new("mcp_gen_ui.cache.store", store)]);
                let found = l.await;
                drop(looking);
                if let Ok(Some(hit)) = found {
                    deps.metrics.cache_hits.inc();
                    tracing::debug!(component = "generation_queue", event = "cache_hit", "served from the cache");
                    generation.set(attr::CACHE_HIT, true);
                    generation.set(attr::OUTCOME, "cached");
                    return (hit, None);
                }
            }
            generation.set(attr::CACHE_HIT, false);
            deps.metrics.cache_misses.inc();
            tracing::info!(component = "generation_queue", event = "cache_miss", "no cached page: making one");
            let tool_label = job.tool.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
            let started = Instant::now();
            let (outcome, lease) = match make(shared.as_ref(), &cache, drop_others, &th, job, &slots, &deps).await {
                Made::Here(outcome, lease) => (*outcome, lease),
                Made::Served(entry) => {
                    generation.set(attr::OUTCOME, "served_by_another_replica");
                    return (entry, None);
                }
            };
            let entry = Arc::new(outcome.entry);
            generation.set(attr::OUTCOME, entry.kind.as_str());
            generation.set(attr::REPAIRS, entry.repairs.len() as i64);
            if let Some(reason) = &entry.fallback_reason {
                generation.set(attr::FALLBACK_REASON, reason.clone());
            }
            deps.metrics
                .generation_duration
                .with_label_values(&[&tool_label, entry.kind.as_str()])
                .observe(started.elapsed().as_secs_f64());
            if cache_enabled {
                // Stored before the waiters hear: a read after this one finds it.
                let storing =
                    Span::start_with("ui.cache.put", Kind::Internal, &generation.cx(), || vec![Attr::new("mcp_gen_ui.cache.store", store)]);
                let stored = cache.put.send(Put { entry: entry.clone() }).await.unwrap_or(false);
                drop(storing);
                tracing::info!(
                    component = "generation_queue",
                    event = "cache_store",
                    stored,
                    kind = entry.kind.as_str(),
                    duration_ms = entry.duration_ms,
                    "page stored"
                );
            }
            if let (Some(s), Some(lease)) = (&shared, lease) {
                // Waiters on other replicas wake on this; then the lease goes.
                let stored = Event::Stored {
                    origin: s.replica().to_string(),
                    key: entry.key.clone(),
                    tool: entry.tool_name.clone(),
                    forced: drop_others,
                };
                let redis = Span::start_with("redis publish_and_release", Kind::Client, &generation.cx(), making::redis_attrs("PUBLISH"));
                let _ = s.publish(&stored).await;
                lease.release().await;
                drop(redis);
            }
            // The export is the shared pages: one person's own is not one of them.
            if let (Some(dir), false) = (export_dir, personal) {
                export(&dir, &entry).await;
            }
            (entry, outcome.classified.map(|c| (th, c)))
        };
        ctx.spawn(fut.instrument(span).into_actor(self).map(move |(entry, classified), act, _| {
            if let Some((th, c)) = classified {
                act.remember(th, c);
            }
            if drop_others {
                act.page_changed(&entry.tool_name); // a regenerated page replaces the ready one
            }
            for w in act.waiting.remove(&slot).map(|w| w.readers).unwrap_or_default() {
                let _ = w.send(entry.clone());
            }
        }));
        (rx, Span::none())
    }
}

impl Handler<ForgetTool> for GenerationQueue {
    type Result = ();

    fn handle(&mut self, m: ForgetTool, _ctx: &mut Self::Context) {
        let th = tool_hash(&m.tool);
        self.classifications.remove(&th);
        if let Some(s) = self.shared.clone() {
            tokio::spawn(async move { s.forget_classification(&th).await });
        }
    }
}

impl Handler<Peek> for GenerationQueue {
    type Result = ResponseActFuture<Self, Option<Arc<UiEntry>>>;

    fn handle(&mut self, m: Peek, _ctx: &mut Self::Context) -> Self::Result {
        if !self.cache_enabled {
            return Box::pin(fut::ready(None));
        }
        Box::pin(self.feedback_of(&m.tool, m.personal.clone()).into_actor(self).then(move |refinements, act, _| {
            let get = act.cache.get.send(Get { key: act.key_for(&m.tool, &refinements).0 });
            async move { get.await.ok().flatten() }.into_actor(act)
        }))
    }
}

impl Handler<KeyFor> for GenerationQueue {
    type Result = ResponseActFuture<Self, String>;

    fn handle(&mut self, m: KeyFor, _ctx: &mut Self::Context) -> Self::Result {
        Box::pin(
            self.feedback_of(&m.tool, m.personal.clone())
                .into_actor(self)
                .map(move |refinements, act, _| act.key_for(&m.tool, &refinements).0),
        )
    }
}

/// Removed tools lose their pages and refinements; changed tools lose their old pages (their
/// key changed anyway) so the cache holds only what can be served.
impl Handler<ToolsUpdated> for GenerationQueue {
    type Result = ();

    fn handle(&mut self, m: ToolsUpdated, _ctx: &mut Self::Context) {
        for name in m.diff.removed.iter().chain(m.diff.changed.iter()) {
            self.page_changed(name);
            self.cache.invalidate.do_send(InvalidateTool { tool_name: name.clone() });
        }
        for name in &m.diff.removed {
            self.refinements.clear.do_send(Clear { tool: name.clone(), every_scope: true });
        }
    }
}

impl Handler<Pending> for GenerationQueue {
    type Result = usize;

    fn handle(&mut self, _: Pending, _ctx: &mut Self::Context) -> usize {
        self.waiting.len() + self.resolving
    }
}

/// Waits (at most `limit`) for generations in flight to finish and be stored.
pub async fn drain(queue: &Recipient<Pending>, limit: Duration) -> usize {
    let deadline = Instant::now() + limit;
    loop {
        let n = queue.send(Pending).await.unwrap_or(0);
        if n == 0 || Instant::now() >= deadline {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

mod making;
#[cfg(test)]
mod tests;
