//! `Refinements`: owns each tool's refinement history (what the user asked to change, when, and
//! which cached page it replaced). The feedback texts, in order, go into the cache key and the
//! most recent ones into the prompt. With a cache folder the histories persist
//! (`state/refinements.json`), so refined pages on disk stay reachable after a restart. Shared
//! (`cache.type: redis`): the histories live in Redis, one list per tool, so a refinement made
//! through any replica changes what every replica serves; the actor keeps the last history it
//! read as a local copy, answered while Redis is away.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use actix::prelude::*;

pub use crate::messages::Refinement;
use crate::messages::{Append, Clear, History, HistoryKey, RefinementsPort};
use crate::metrics::Metrics;
use crate::process::contain;
use crate::store::ready_pages::ReadyPages;
use crate::store::redis::{Event, RedisStore};
use crate::store::snapshot_file::{self, Writer};

type ByTool = HashMap<HistoryKey, Vec<Refinement>>;

pub struct Refinements {
    by_tool: ByTool,
    file: Option<PathBuf>,
    writer: Option<Writer<ByTool>>,
    metrics: Arc<Metrics>,
    /// A tool's refinements change its page: its ready read result goes.
    pages: Option<Arc<ReadyPages>>,
    /// The replicas' shared histories (None: this process alone).
    shared: Option<RedisStore>,
    /// Refinements made while Redis was away, by history, in order: written back to Redis
    /// (before any newer one) once it answers, so Redis's history does not lose them.
    unsynced: ByTool,
}

/// How often refinements made while Redis was away are offered to it again.
const WRITE_BACK_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// Pushes `list` to the shared history of `tool`, in order, until one fails, and tells the
/// other replicas if any went: how many went, and the history as Redis has it after the last.
async fn push_in_order(shared: RedisStore, key: HistoryKey, list: Vec<Refinement>) -> Pushed {
    let mut all = None;
    let mut went = list.len();
    for (n, r) in list.iter().enumerate() {
        match shared.push_refinement(&key, r).await {
            Ok(a) => all = Some(a),
            Err(_) => {
                went = n;
                break;
            }
        }
    }
    if went > 0 && key.owner.is_none() {
        // Every other replica drops its ready page for the tool: its next read asks Redis. (A
        // person's own page is never kept ready.)
        let _ = shared.publish(&Event::Refined { origin: shared.replica().to_string(), tool: key.tool.clone() }).await;
    }
    Pushed { key, list, went, all }
}

/// What [`push_in_order`] did.
struct Pushed {
    key: HistoryKey,
    list: Vec<Refinement>,
    went: usize,
    all: Option<Vec<Refinement>>,
}

impl Refinements {
    /// `cache_dir`: persist the histories there (None: memory only).
    pub fn new(cache_dir: Option<PathBuf>, metrics: Arc<Metrics>) -> Self {
        let file = cache_dir.map(|d| snapshot_file::state_dir(&d).join("refinements.json"));
        Refinements { by_tool: HashMap::new(), file, writer: None, metrics, pages: None, shared: None, unsynced: HashMap::new() }
    }

    /// Keeps the histories in Redis, shared by every replica.
    pub fn with_shared(mut self, shared: Option<RedisStore>) -> Self {
        self.shared = shared;
        self
    }

    pub fn with_pages(mut self, pages: Option<Arc<ReadyPages>>) -> Self {
        self.pages = pages;
        self
    }

    fn changed(&self, key: &HistoryKey) {
        if let (Some(p), None) = (&self.pages, &key.owner) {
            p.invalidate(&key.tool);
        }
        self.persist();
    }

    pub fn port(addr: &Addr<Self>) -> RefinementsPort {
        RefinementsPort { append: addr.clone().recipient(), history: addr.clone().recipient(), clear: addr.clone().recipient() }
    }

    fn persist(&self) {
        if let Some(w) = &self.writer {
            w.save(self.by_tool.clone());
        }
    }
}

impl Actor for Refinements {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if self.shared.is_some() {
            ctx.run_interval(WRITE_BACK_EVERY, |act, ctx| act.write_back(ctx));
        }
        let Some(file) = self.file.clone() else { return };
        if self.writer.is_none() {
            self.writer = Some(Writer::start(file.clone()));
        }
        // `wait` holds the mailbox until the histories are back: no read misses one.
        ctx.wait(snapshot_file::load::<ByTool>(file).into_actor(self).map(|loaded, act, _| {
            if let Some(h) = loaded {
                tracing::info!(component = "refinements", event = "restored", tools = h.len(), "refinement histories restored");
                act.by_tool = h;
            }
        }));
    }
}

impl Supervised for Refinements {
    fn restarting(&mut self, _ctx: &mut Self::Context) {
        contain::note_restart("refinements", &self.metrics);
    }
}

fn feedback_of(list: &[Refinement]) -> Vec<String> {
    list.iter().map(|r| r.feedback.clone()).collect()
}

impl Refinements {
    /// Offers Redis the refinements made while it was away (each history in order); what it
    /// takes leaves `unsynced`, and the other replicas hear of the change.
    fn write_back(&mut self, ctx: &mut Context<Self>) {
        let Some(shared) = self.shared.clone() else { return };
        for (key, list) in std::mem::take(&mut self.unsynced) {
            ctx.spawn(push_in_order(shared.clone(), key, list).into_actor(self).map(|pushed, act, _| {
                let (key, went) = (pushed.key.clone(), pushed.went);
                if let Some(all) = act.after_push(pushed).filter(|_| !act.unsynced.contains_key(&key)) {
                    tracing::info!(component = "refinements", event = "written_back", tool = %key.tool, refinements = went, "refinements made while Redis was away are in its history now");
                    act.by_tool.insert(key.clone(), all);
                    act.changed(&key);
                }
            }));
        }
    }

    /// What did not go is kept for the next write-back, before anything newer made meanwhile;
    /// Redis's whole history when everything went.
    fn after_push(&mut self, mut p: Pushed) -> Option<Vec<Refinement>> {
        let rest = p.list.split_off(p.went);
        if rest.is_empty() {
            return p.all;
        }
        let newer = self.unsynced.remove(&p.key).unwrap_or_default();
        self.unsynced.insert(p.key, rest.into_iter().chain(newer).collect());
        None
    }
}

impl Handler<Append> for Refinements {
    type Result = ResponseActFuture<Self, Vec<String>>;

    fn handle(&mut self, m: Append, _ctx: &mut Self::Context) -> Self::Result {
        let at = crate::page::now_ms();
        let r = Refinement { at, feedback: m.feedback, replaced_key: m.replaced_key, by: Some(m.by) };
        let list = self.by_tool.entry(m.key.clone()).or_default();
        list.push(r.clone());
        let local = feedback_of(list);
        self.changed(&m.key);
        let Some(shared) = self.shared.clone() else { return Box::pin(fut::ready(local)) };
        let key = m.key;
        // Made while Redis was away and not written back yet: those go first, in order.
        let mut pending = self.unsynced.remove(&key).unwrap_or_default();
        pending.push(r);
        Box::pin(push_in_order(shared, key, pending).into_actor(self).map(move |pushed, act, _| {
            let key = pushed.key.clone();
            match act.after_push(pushed) {
                Some(all) => {
                    let answer = feedback_of(&all);
                    act.by_tool.insert(key, all);
                    answer
                }
                // Redis is away: kept here and written back once it answers (`write_back`).
                None => local,
            }
        }))
    }
}

impl Handler<History> for Refinements {
    type Result = ResponseActFuture<Self, Vec<Refinement>>;

    fn handle(&mut self, m: History, _ctx: &mut Self::Context) -> Self::Result {
        let local = self.by_tool.get(&m.key).cloned().unwrap_or_default();
        let Some(shared) = self.shared.clone() else { return Box::pin(fut::ready(local)) };
        if self.unsynced.contains_key(&m.key) {
            // Redis's copy lacks what was made while it was away: the local one is whole.
            return Box::pin(fut::ready(local));
        }
        let key = m.key;
        Box::pin(async move { (shared.refinements(&key).await, key) }.into_actor(self).map(move |(res, key), act, _| match res {
            Ok(all) => {
                if all.is_empty() {
                    act.by_tool.remove(&key);
                } else {
                    act.by_tool.insert(key, all.clone());
                }
                all
            }
            Err(_) => local,
        }))
    }
}

impl Handler<Clear> for Refinements {
    type Result = ResponseActFuture<Self, usize>;

    fn handle(&mut self, m: Clear, _ctx: &mut Self::Context) -> Self::Result {
        if m.every_scope {
            // Personal histories of a tool that is gone would apply again to a new tool that
            // takes its name.
            let personal: Vec<HistoryKey> = self.by_tool.keys().filter(|k| k.owner.is_some() && k.tool == m.key.tool).cloned().collect();
            let removed = !personal.is_empty();
            for k in personal {
                self.by_tool.remove(&k);
                self.unsynced.remove(&k);
            }
            if removed {
                self.persist();
            }
        }
        // Cleared: what was waiting to be written back is gone with the rest.
        self.unsynced.remove(&m.key);
        let n = self.by_tool.remove(&m.key).map(|v| v.len()).unwrap_or(0);
        if n > 0 {
            self.changed(&m.key);
        }
        let Some(shared) = self.shared.clone() else { return Box::pin(fut::ready(n)) };
        let (key, every_scope) = (m.key, m.every_scope);
        Box::pin(
            async move {
                if every_scope {
                    // Everyone's own histories of it, from the tool's index (no keyspace scan).
                    let _ = shared.clear_personal_refinements(&key.tool).await;
                }
                match shared.clear_refinements(&key).await {
                    Ok(had) => {
                        if key.owner.is_none() {
                            let _ = shared.publish(&Event::Refined { origin: shared.replica().to_string(), tool: key.tool.clone() }).await;
                        }
                        (had, key)
                    }
                    Err(_) => (n, key),
                }
            }
            .into_actor(self)
            .map(move |(had, key), act, _| {
                if had > 0 && n == 0 {
                    act.changed(&key);
                }
                had.max(n)
            }),
        )
    }
}
