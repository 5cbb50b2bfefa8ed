//! `generation.warm`: pages made before anyone asks. Once a server's tools are listed (and
//! whenever tools are added or change), the selected tools' pages are made one at a time, in
//! the background, through the queue like any read (its slots, single flight and cache), only
//! while no generation is running, and within `generation.warmCallsPerMinute`. Each waits for
//! its whole page. Only written pages count as done; a tool left with the template is counted
//! apart, by reason. A page already cached counts without a call. Readiness never waits.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::Value;

use crate::messages::{Peek, Pending, QueuePort, ReadUi, ReadWait, ToolsUpdated};
use crate::metrics::Metrics;
use crate::page::UiEntry;
use crate::process::locks::Recover;
use crate::rate_window;

/// How often a warm-up waiting for hosts' reads to finish looks again.
const IDLE_POLL: Duration = Duration::from_millis(100);

/// Which tools to warm, by the name hosts see (the caller decides: globs, pages enabled).
pub type Selection = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// Progress, for `/readyz` and metrics.
#[derive(Default)]
pub struct WarmProgress {
    /// Written pages.
    done: AtomicU64,
    total: AtomicU64,
    /// Tools left with the template, by its reason (`minimal`, `RATE_LIMIT`, ...).
    templates: Mutex<BTreeMap<String, u64>>,
}

impl WarmProgress {
    /// (written, total)
    pub fn get(&self) -> (u64, u64) {
        (self.done.load(Ordering::Relaxed), self.total.load(Ordering::Relaxed))
    }

    /// Tools warmed that got the template, by reason.
    pub fn templates(&self) -> BTreeMap<String, u64> {
        self.templates.guard().clone()
    }

    fn count(&self, entry: &UiEntry) {
        match &entry.fallback_reason {
            None => {
                self.done.fetch_add(1, Ordering::Relaxed);
            }
            Some(r) => *self.templates.guard().entry(r.as_str().to_string()).or_insert(0) += 1,
        }
    }
}

pub struct Warmer {
    ports: Arc<QueuePort>,
    select: Selection,
    per_minute: u32,
    window: VecDeque<Instant>,
    todo: VecDeque<(String, Value)>,
    queued: HashSet<String>,
    busy: bool,
    progress: Arc<WarmProgress>,
    metrics: Arc<Metrics>,
}

impl Warmer {
    pub fn new(ports: QueuePort, select: Selection, per_minute: u32, progress: Arc<WarmProgress>, metrics: Arc<Metrics>) -> Self {
        Warmer {
            ports: Arc::new(ports),
            select,
            per_minute,
            window: VecDeque::new(),
            todo: VecDeque::new(),
            queued: HashSet::new(),
            busy: false,
            progress,
            metrics,
        }
    }

    fn publish(&self) {
        let (done, total) = self.progress.get();
        self.metrics.warm_pages.with_label_values(&["done"]).set(i64::try_from(done).unwrap_or(i64::MAX));
        self.metrics.warm_pages.with_label_values(&["total"]).set(i64::try_from(total).unwrap_or(i64::MAX));
    }

    /// Starts the next warm page when nothing is being warmed.
    fn next(&mut self, ctx: &mut Context<Self>) {
        if self.busy {
            return;
        }
        let Some((name, tool)) = self.todo.pop_front() else { return };
        self.queued.remove(&name);
        self.busy = true;
        // The allowance is taken here; when it is spent, the page waits until it is not.
        let now = Instant::now();
        let wait = rate_window::take(&mut self.window, self.per_minute, now).err();
        if let Some(w) = wait {
            // The call is made once the wait is over: it counts then.
            self.window.push_back(now + w);
        }
        let ports = self.ports.clone();
        let job = async move {
            if let Some(w) = wait {
                tokio::time::sleep(w).await;
            }
            if let Some(cached) = ports.peek.send(Peek { tool: tool.clone(), personal: None }).await.ok().flatten() {
                return (true, Some(cached));
            }
            // A host's pages always go first: wait until no generation runs.
            while ports.pending.send(Pending).await.unwrap_or(0) > 0 {
                tokio::time::sleep(IDLE_POLL).await;
            }
            let request_id = format!("warm-{}", uuid::Uuid::new_v4().simple());
            tracing::debug!(component = "warm", event = "warm_page", requestId = %request_id, tool_name = %name, "making a page before anyone asks");
            let read =
                ReadUi { tool, request_id, force: false, personal: None, trace: crate::trace::TraceCx::none(), wait: ReadWait::Whole };
            (false, ports.read.send(read).await.ok().map(|r| r.entry))
        };
        ctx.spawn(job.into_actor(self).map(move |(cached, entry), act, ctx| {
            if cached {
                // No call was made: give the allowance back.
                act.window.pop_back();
            }
            if let Some(e) = entry {
                act.progress.count(&e);
            }
            act.publish();
            act.busy = false;
            act.next(ctx);
        }));
    }
}

impl Actor for Warmer {
    type Context = Context<Self>;
}

impl Handler<ToolsUpdated> for Warmer {
    type Result = ();

    /// Added and changed tools are (re)warmed; removed ones leave the list to do.
    fn handle(&mut self, m: ToolsUpdated, ctx: &mut Context<Self>) {
        let before = self.todo.len();
        self.todo.retain(|(n, _)| !m.diff.removed.contains(n));
        self.queued.retain(|n| !m.diff.removed.contains(n));
        // Pages no longer to make are no longer to count.
        self.progress.total.fetch_sub((before - self.todo.len()) as u64, Ordering::Relaxed);
        let by_name: std::collections::HashMap<&str, &Value> =
            m.tools.iter().filter_map(|t| Some((t.get("name")?.as_str()?, &**t))).collect();
        for name in m.diff.added.iter().chain(m.diff.changed.iter()) {
            if !(self.select)(name) {
                continue;
            }
            let Some(&def) = by_name.get(name.as_str()) else { continue };
            if self.queued.contains(name) {
                // Still waiting: make it as the tool is now.
                if let Some(slot) = self.todo.iter_mut().find(|(n, _)| n == name) {
                    slot.1 = def.clone();
                }
                continue;
            }
            self.queued.insert(name.clone());
            self.todo.push_back((name.clone(), def.clone()));
            self.progress.total.fetch_add(1, Ordering::Relaxed);
        }
        self.publish();
        self.next(ctx);
    }
}
