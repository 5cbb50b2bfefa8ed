//! Making one page once a read found none: across replicas when they share a store (the lease
//! decides who makes it, the others wait for its page), within the concurrency slots, and
//! written to the export folder when one is set. Plain async functions the queue runs.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio::sync::Semaphore;

use crate::generation::lease::{self, Claim, Lease};
use crate::generation::pipeline::{self, Deps, Job};
use crate::messages::{CachePort, Get, InvalidateTool};
use crate::page::{FallbackReason, LlmFailure, Phase, UiEntry};
use crate::store::file_names::file_stem;
use crate::store::redis::RedisStore;
use crate::trace::{attr, Attr, Kind, Span};

/// The attributes of a Redis operation's span (OpenTelemetry database conventions).
pub(super) fn redis_attrs(operation: &'static str) -> impl FnOnce() -> Vec<Attr> {
    move || vec![Attr::new(attr::DB_SYSTEM, "redis"), Attr::new(attr::DB_OPERATION, operation)]
}

pub(super) async fn export(dir: &std::path::Path, entry: &UiEntry) {
    let path = dir.join(format!("{}.html", file_stem(&entry.tool_name)));
    let html = entry.html.clone();
    let res = tokio::task::spawn_blocking(move || {
        std::fs::create_dir_all(path.parent().expect("a file in a folder"))?;
        std::fs::write(&path, html)
    })
    .await;
    if !matches!(res, Ok(Ok(()))) {
        tracing::warn!(component = "generation_queue", event = "export_failed", tool_name = %entry.tool_name, "could not write the exported page");
    }
}

/// What [`make`] came back with.
pub(super) enum Made {
    /// Made here: store it (and release the lease, if one is held).
    Here(Box<pipeline::Outcome>, Option<Lease<RedisStore>>),
    /// Answer the readers with this and store nothing: another replica's page, or the template
    /// because that replica held the lease past any page's ceiling.
    Served(Arc<UiEntry>),
}

/// Makes the page, across replicas when there is a shared store: the lease decides who makes
/// it; the others wait for its page (as long as a page may take: twice the ceiling, which
/// leaves the holder time to wait for a slot of its own).
pub(super) async fn make(
    shared: Option<&RedisStore>,
    cache: &CachePort,
    drop_others: bool,
    th: &str,
    mut job: Job,
    slots: &Arc<Semaphore>,
    deps: &Arc<Deps>,
) -> Made {
    let Some(s) = shared else { return Made::Here(Box::new(with_slot(slots, deps, job).await), None) };
    let tool = job.tool.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
    if drop_others {
        // The old page goes everywhere first, so no replica serves it while the new one is made
        // and a waiter's lookup cannot mistake it for the new one.
        let _ = cache.invalidate.send(InvalidateTool { tool_name: tool }).await;
    }
    let get = cache.get.clone();
    let key = job.key.clone();
    let lookup = || {
        let found = get.send(Get { key: key.clone() });
        async move { found.await.ok().flatten() }
    };
    // The claim, and the wait while another replica makes the page, in one span.
    let claim = Span::start_with("redis lease", Kind::Client, &job.trace, redis_attrs("SET NX"));
    let waiting = Waiting(job.progress.clone());
    let claimed = lease::claim(s, &job.key, Instant::now() + deps.settings.ceiling * 2, &deps.metrics, lookup, || waiting.note()).await;
    claim.set(
        attr::OUTCOME,
        match &claimed {
            Claim::Found(_) => "made_by_another_replica",
            Claim::TimedOut => "ceiling_spent_waiting",
            Claim::Unavailable => "redis_unavailable",
            Claim::Held(_) => "held",
        },
    );
    drop(claim);
    let lease = match claimed {
        Claim::Found(page) => return Made::Served(page),
        Claim::TimedOut => {
            // Another replica held the lease past any page's ceiling: the template now, kept
            // nowhere, so whatever that replica stores is what the next read gets.
            let spare = pipeline::Spare { key: job.key, tool: job.tool, request_id: job.request_id, failures: job.failures };
            let why = "another replica held this page's lease past the generation ceiling";
            return Made::Served(Arc::new(pipeline::fallback_now(&spare, deps, FallbackReason::Llm(LlmFailure::Timeout), why)));
        }
        Claim::Unavailable => None,
        Claim::Held(l) => Some(l),
    };
    if lease.is_some() && job.known_type.is_none() {
        // A replica that died after classifying has still taught us.
        let read = Span::start_with("redis classification", Kind::Client, &job.trace, redis_attrs("GET"));
        job.known_type = s.classification(th).await.ok().flatten();
        drop(read);
    }
    let (store, th) = (s.clone(), th.to_string());
    let hook: crate::generation::classified_hook::Hook = Arc::new(move |t| {
        let (store, th) = (store.clone(), th.clone());
        tokio::spawn(async move { store.remember_classification(&th, t).await });
    });
    let outcome = crate::generation::classified_hook::scope(Some(hook), with_slot(slots, deps, job)).await;
    Made::Here(Box::new(outcome), lease)
}

/// Marks a generation that waits for another replica's page.
struct Waiting(Arc<crate::generation::progress::Progress>);

impl Waiting {
    fn note(&self) {
        self.0.set_phase(Phase::OtherReplica);
    }
}

/// Runs the job once a concurrency slot is free. Waiting for one spends no LLM time and no
/// reader's budget: a reader past its budget already has the provisional page.
pub(super) async fn with_slot(slots: &Arc<Semaphore>, deps: &Arc<Deps>, job: Job) -> pipeline::Outcome {
    if deps.llm.is_none() {
        return pipeline::run_contained(job, deps.clone()).await; // offline: no LLM call, no slot needed
    }
    job.progress.set_phase(Phase::Queued);
    let queued = Counted::up(&deps.metrics.generations_queued);
    let waiting = Span::start_with("ui.slot.wait", Kind::Internal, &job.trace, Vec::new);
    let permit = slots.clone().acquire_owned().await;
    waiting.set(attr::OUTCOME, if permit.is_ok() { "slot" } else { "closed" });
    drop(waiting);
    drop(queued);
    // The semaphore is never closed; a permit is always given.
    let _permit = permit.ok();
    let _running = Counted::up(&deps.metrics.generations_in_flight);
    pipeline::run_contained(job, deps.clone()).await
}

/// One in a gauge while alive: a generation dropped midway (its tool changed, shutdown) still
/// leaves the gauge right.
struct Counted(prometheus::IntGauge);

impl Counted {
    fn up(g: &prometheus::IntGauge) -> Self {
        g.inc();
        Counted(g.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.dec();
    }
}
