//! `GenerationQueue`: every `ui://` read that is not ready goes through here. It owns the
//! single-flight map (one lookup-or-generation per cache key, however many reads wait on it),
//! the concurrency slots, the remembered classifications and the count of each page's failures.
//!
//! A generation is not a read's: it runs to its end in the background whatever its readers do.
//! A host's read waits for it at most `generation.timeoutMs`, then gets the provisional
//! template (`reading.rs`) and the generation goes on; once the page is stored every read gets
//! it, and hosts are told. The only aborts are the ceiling (`pipeline`), the tool changing or
//! going away, and shutdown ([`Abandon`]).
//!
//! With replicas (`cache.type: redis`) single flight spans them: a miss claims the key's lease
//! first (`lease.rs`) and either makes the page, or waits for the replica that is making it.
//! Classifications are shared as soon as they are made.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::Value;
use tokio::sync::{watch, Semaphore};

use crate::generation::cache_key::{cache_key, refinements_hash};
use crate::generation::pipeline::{self, Deps, Spare};
use crate::generation::progress::Progress;
use crate::messages::{
    Abandon, CachePort, Clear, ForgetTool, Get, History, HistoryKey, InvalidateTool, KeyFor, PageRead, PageStatus, Peek, Pending,
    QueuePort, ReadUi, ReadWait, RefinementsPort, StatusOf, ToolsUpdated,
};
use crate::page::{tool_hash, UiEntry, UiType};
use crate::process::contain;
use crate::store::learned_shapes::LearnedShapes;
use crate::store::ready_pages::ReadyPages;
use crate::store::redis::RedisStore;
use crate::store::snapshot_file::{self, Writer};
use crate::trace::{attr, Attr, Kind, Span, TraceCx};
use flight::Provenance;
use reading::Waiter;

/// Told the name of a tool whose page was just written, when a host may be showing the
/// provisional page or an older one (hosts subscribed to it hear `resources/updated`).
pub type PageWritten = Arc<dyn Fn(&str) + Send + Sync>;

/// One lookup-or-generation in flight and what its readers share.
struct InFlight {
    /// The page once made; every reader (and a status call) watches it.
    done: watch::Sender<Option<Arc<UiEntry>>>,
    progress: Arc<Progress>,
    /// A reader got the provisional page: hosts are told when the page is written.
    provisional_served: Arc<AtomicBool>,
    /// The provisional page, rendered once for every reader that could not wait.
    provisional: Arc<tokio::sync::OnceCell<Arc<UiEntry>>>,
    /// Its span: a read joining it links to it.
    generation: TraceCx,
    tool_name: String,
    /// Cancels it (the tool changed or went away, shutdown).
    handle: SpawnHandle,
}

impl InFlight {
    fn waiter(&self, deps: &Arc<Deps>, spare: Spare) -> Waiter {
        Waiter {
            done: self.done.subscribe(),
            progress: self.progress.clone(),
            provisional_served: self.provisional_served.clone(),
            provisional: self.provisional.clone(),
            deps: deps.clone(),
            spare,
        }
    }
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
    in_flight: HashMap<String, InFlight>,
    /// Reads still asking for their tool's refinements (not yet keyed).
    resolving: usize,
    classifications: HashMap<String, UiType>,
    /// With a cache folder, classifications persist (`state/classifications.json`).
    classifications_file: Option<std::path::PathBuf>,
    classifications_writer: Option<Writer<HashMap<String, UiType>>>,
    /// How many generations of each key failed in a row (the next retry waits longer).
    failures: HashMap<String, u32>,
    /// Ready read results, invalidated here when a tool's page is replaced or dropped.
    pages: Option<Arc<ReadyPages>>,
    /// The replicas' shared store: leases, classifications (None: this process alone).
    shared: Option<RedisStore>,
    /// Learnt result shapes, for generation prompts (`generation.learnResultShape`).
    shapes: Option<Arc<LearnedShapes>>,
    written: Option<PageWritten>,
}

/// Failure counts kept at most for this many keys (a key's count goes with its success).
const MAX_FAILURE_KEYS: usize = 10_000;

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
            in_flight: HashMap::new(),
            resolving: 0,
            classifications: HashMap::new(),
            classifications_file: None,
            classifications_writer: None,
            failures: HashMap::new(),
            pages: None,
            shared: None,
            shapes: None,
            written: None,
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

    /// Who tells hosts that a page was written.
    pub fn with_written(mut self, written: Option<PageWritten>) -> Self {
        self.written = written;
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
            status: addr.clone().recipient(),
            peek: addr.clone().recipient(),
            key_for: addr.clone().recipient(),
            forget: addr.clone().recipient(),
            pending: addr.clone().recipient(),
            abandon: addr.clone().recipient(),
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

    /// Counts a made page: a transient failure adds one to its key's run, anything else ends it.
    fn count_failure(&mut self, key: &str, entry: &UiEntry) {
        if entry.fallback_reason.as_ref().is_some_and(|r| r.transient()) {
            if self.failures.len() >= MAX_FAILURE_KEYS && !self.failures.contains_key(key) {
                self.failures.clear();
            }
            *self.failures.entry(key.to_string()).or_insert(0) += 1;
        } else {
            self.failures.remove(key);
        }
    }

    /// The key a read of `tool` with `refinements` uses, and the tool's hash it is made from.
    pub fn key_for(&self, tool: &Value, refinements: &[String]) -> (String, String) {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        let th = tool_hash(tool);
        (cache_key(name, &th, &refinements_hash(refinements), &self.config_hash), th)
    }

    /// The feedback a read's page is made with: the tool's shared refinements, then (principal
    /// scope) the caller's own (none when the refinements actor is away).
    fn feedback_of(&self, tool: &Value, personal: Option<HistoryKey>) -> impl std::future::Future<Output = Vec<String>> + 'static {
        let tool = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        let shared = self.refinements.history.send(History { key: HistoryKey::shared(tool) });
        let own = personal.map(|key| self.refinements.history.send(History { key }));
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
        // The futures that would have finished these died with the old context; their readers
        // see the page's channel close and get the template, and the next read starts afresh.
        self.in_flight.clear();
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

/// The single-flight slot of a read: forced reads never join a plain read (that one may be
/// answered by the old cached page).
fn slot_of(key: &str, force: bool) -> String {
    if force {
        format!("{key}#force")
    } else {
        key.to_string()
    }
}

impl Handler<ReadUi> for GenerationQueue {
    type Result = ResponseActFuture<Self, PageRead>;

    fn handle(&mut self, m: ReadUi, _ctx: &mut Self::Context) -> Self::Result {
        let arrived = Instant::now();
        let feedback = self.feedback_of(&m.tool, m.personal.clone());
        self.resolving += 1;
        Box::pin(feedback.into_actor(self).then(move |refinements, act, ctx| {
            act.resolving = act.resolving.saturating_sub(1);
            let (key, tool_hash) = act.key_for(&m.tool, &refinements);
            let deps = act.deps.clone();
            let spare = Spare { key: key.clone(), tool: m.tool.clone(), request_id: m.request_id.clone(), failures: 0 };
            let until = match m.wait {
                ReadWait::Budget => Some(arrived + deps.settings.read_wait),
                ReadWait::Whole => None,
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
            let joined = contain::contain::<Self, _, _>("generation_queue", ctx, |ctx| Some(act.enqueue(read, ctx)), || None);
            async move {
                match joined {
                    // `_span`: the span of a read that joined a generation in flight, ended
                    // when its answer is ready.
                    Some((waiter, _span)) => waiter.answer(arrived, until).await,
                    None => {
                        PageRead::page(Arc::new(pipeline::internal_fallback(&spare, &deps, "the generation queue failed on this read")))
                    }
                }
            }
            .into_actor(act)
        }))
    }
}

impl GenerationQueue {
    /// Joins the read to its key's lookup-or-generation, starting one if none runs.
    fn enqueue(&mut self, m: Read, ctx: &mut Context<Self>) -> (Waiter, Span) {
        let slot = slot_of(&m.key, m.force);
        let spare = Spare { key: m.key.clone(), tool: m.tool.clone(), request_id: m.request_id.clone(), failures: 0 };
        let name_of = |tool: &Value| tool.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        if let Some(w) = self.in_flight.get(&slot) {
            let joined = Span::start_with("ui.page.wait", Kind::Internal, &m.trace, || {
                vec![Attr::new(attr::TOOL_NAME, name_of(&m.tool)), Attr::new(attr::REQUEST_ID, m.request_id.clone())]
            });
            joined.link(&w.generation);
            return (w.waiter(&self.deps, spare), joined);
        }
        let tool_name = name_of(&m.tool);
        let generation = Span::start_with(format!("ui.page.generate {tool_name}"), Kind::Internal, &m.trace, || {
            vec![
                Attr::new(attr::TOOL_NAME, tool_name.clone()),
                Attr::new(attr::REQUEST_ID, m.request_id.clone()),
                Attr::new("mcp_gen_ui.forced", m.force),
            ]
        });
        let progress = Arc::new(Progress::default());
        let provisional_served = Arc::new(AtomicBool::new(false));
        let (done, _) = watch::channel(None);
        let generation_cx = generation.cx();
        let fut = self.generation(m, generation, progress.clone());
        let key_slot = slot.clone();
        let handle = ctx.spawn(fut.into_actor(self).map(move |(entry, made, classified), act, _| {
            act.finish(&key_slot, entry, made, classified);
        }));
        let flight =
            InFlight { done, progress, provisional_served, provisional: Arc::default(), generation: generation_cx, tool_name, handle };
        let waiter = flight.waiter(&self.deps, spare);
        self.in_flight.insert(slot, flight);
        (waiter, Span::none())
    }

    /// A generation ended: remember what it taught, count its failure, answer its readers and,
    /// when a host may be showing an older or provisional page, tell the hosts.
    fn finish(&mut self, slot: &str, entry: Arc<UiEntry>, made: Provenance, classified: Option<(String, UiType)>) {
        if let Some((th, c)) = classified {
            self.remember(th, c);
        }
        if made.drop_others {
            self.page_changed(&entry.tool_name); // a regenerated page replaces the ready one
        }
        if made.here {
            self.count_failure(&entry.key, &entry);
        }
        let Some(flight) = self.in_flight.remove(slot) else { return };
        flight.done.send_replace(Some(entry.clone()));
        // A host was shown the provisional page: hosts hear that the page is written. (A
        // remake answered in time is announced by whoever asked for it.)
        if flight.provisional_served.load(Ordering::Relaxed) && made.fresh {
            if let Some(w) = &self.written {
                w(&entry.tool_name);
            }
        }
    }
}

mod asks;
pub use asks::drain;
mod flight;
mod making;
mod reading;
#[cfg(test)]
mod tests;
