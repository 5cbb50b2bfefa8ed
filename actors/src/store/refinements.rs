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

use crate::contain;
pub use crate::messages::Refinement;
use crate::messages::{Append, Clear, History, RefinementsPort};
use crate::metrics::Metrics;
use crate::store::ready_pages::ReadyPages;
use crate::store::redis::{Event, RedisStore};
use crate::store::snapshot_file::{self, Writer};

type ByTool = HashMap<String, Vec<Refinement>>;

/// Between a tool's name and a principal in the history key of that principal's own
/// refinements (`refinements.scope: principal`): a control character, which neither tool
/// names hosts see nor principals' labels contain.
const PERSONAL_SEPARATOR: char = '\u{1f}';

/// The key of `principal`'s own refinements of `tool`. Histories, their files, Redis lists and
/// replica events carry it like a tool name, so the scope survives restarts and replicas.
pub fn personal_key(tool: &str, principal: &str) -> String {
    format!("{tool}{PERSONAL_SEPARATOR}{principal}")
}

/// The tool a history key belongs to (a personal key's tool, or the key itself).
pub fn tool_of_key(key: &str) -> &str {
    key.split(PERSONAL_SEPARATOR).next().unwrap_or(key)
}

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
async fn push_in_order(shared: RedisStore, tool: String, list: Vec<Refinement>) -> Pushed {
    let mut all = None;
    let mut went = list.len();
    for (n, r) in list.iter().enumerate() {
        match shared.push_refinement(&tool, r).await {
            Ok(a) => all = Some(a),
            Err(_) => {
                went = n;
                break;
            }
        }
    }
    if went > 0 {
        // Every other replica drops its ready page for the tool: its next read asks Redis.
        let _ = shared.publish(&Event::Refined { origin: shared.replica().to_string(), tool: tool.clone() }).await;
    }
    Pushed { tool, list, went, all }
}

/// What [`push_in_order`] did.
struct Pushed {
    tool: String,
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

    fn changed(&self, tool: &str) {
        if let Some(p) = &self.pages {
            p.invalidate(tool);
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
        for (tool, list) in std::mem::take(&mut self.unsynced) {
            ctx.spawn(push_in_order(shared.clone(), tool, list).into_actor(self).map(|pushed, act, _| {
                let (tool, went) = (pushed.tool.clone(), pushed.went);
                if let Some(all) = act.after_push(pushed).filter(|_| !act.unsynced.contains_key(&tool)) {
                    tracing::info!(component = "refinements", event = "written_back", tool = %tool, refinements = went, "refinements made while Redis was away are in its history now");
                    act.by_tool.insert(tool.clone(), all);
                    act.changed(&tool);
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
        let newer = self.unsynced.remove(&p.tool).unwrap_or_default();
        self.unsynced.insert(p.tool, rest.into_iter().chain(newer).collect());
        None
    }
}

impl Handler<Append> for Refinements {
    type Result = ResponseActFuture<Self, Vec<String>>;

    fn handle(&mut self, m: Append, _ctx: &mut Self::Context) -> Self::Result {
        let at = crate::page::now_ms();
        let r = Refinement { at, feedback: m.feedback, replaced_key: m.replaced_key, by: Some(m.by) };
        let list = self.by_tool.entry(m.tool.clone()).or_default();
        list.push(r.clone());
        let local = feedback_of(list);
        self.changed(&m.tool);
        let Some(shared) = self.shared.clone() else { return Box::pin(fut::ready(local)) };
        let tool = m.tool;
        // Made while Redis was away and not written back yet: those go first, in order.
        let mut pending = self.unsynced.remove(&tool).unwrap_or_default();
        pending.push(r);
        Box::pin(push_in_order(shared, tool, pending).into_actor(self).map(move |pushed, act, _| {
            let tool = pushed.tool.clone();
            match act.after_push(pushed) {
                Some(all) => {
                    let answer = feedback_of(&all);
                    act.by_tool.insert(tool, all);
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
        let local = self.by_tool.get(&m.tool).cloned().unwrap_or_default();
        let Some(shared) = self.shared.clone() else { return Box::pin(fut::ready(local)) };
        if self.unsynced.contains_key(&m.tool) {
            // Redis's copy lacks what was made while it was away: the local one is whole.
            return Box::pin(fut::ready(local));
        }
        let tool = m.tool;
        Box::pin(async move { (shared.refinements(&tool).await, tool) }.into_actor(self).map(move |(res, tool), act, _| match res {
            Ok(all) => {
                if all.is_empty() {
                    act.by_tool.remove(&tool);
                } else {
                    act.by_tool.insert(tool, all.clone());
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
            let personal: Vec<String> = self.by_tool.keys().filter(|k| *k != &m.tool && tool_of_key(k) == m.tool).cloned().collect();
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
        self.unsynced.remove(&m.tool);
        let n = self.by_tool.remove(&m.tool).map(|v| v.len()).unwrap_or(0);
        if n > 0 {
            self.changed(&m.tool);
        }
        let Some(shared) = self.shared.clone() else { return Box::pin(fut::ready(n)) };
        let (tool, every_scope) = (m.tool, m.every_scope);
        Box::pin(
            async move {
                if every_scope {
                    // Everyone's own histories of it, from the tool's index (no keyspace scan).
                    let _ = shared.clear_personal_refinements(&tool).await;
                }
                match shared.clear_refinements(&tool).await {
                    Ok(had) => {
                        let _ = shared.publish(&Event::Refined { origin: shared.replica().to_string(), tool: tool.clone() }).await;
                        (had, tool)
                    }
                    Err(_) => (n, tool),
                }
            }
            .into_actor(self)
            .map(move |(had, tool), act, _| {
                if had > 0 && n == 0 {
                    act.changed(&tool);
                }
                had.max(n)
            }),
        )
    }
}
