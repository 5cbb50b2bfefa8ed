//! One key's lookup-or-generation, as the future the queue spawns for it: the cache first,
//! then the page made (here, or by the replica holding the lease), stored, announced to the
//! other replicas and exported; and how the page came to be ([`Provenance`]), which decides
//! what the queue does when it ends.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tracing::Instrument;

use super::making::{self, export, make, Made};
use super::{GenerationQueue, Read};
use crate::generation::pipeline::{Deps, Job};
use crate::generation::progress::Progress;
use crate::messages::{Get, Put};
use crate::page::{UiEntry, UiType};
use crate::store::redis::Event;
use crate::trace::{attr, Attr, Kind, Span};

impl GenerationQueue {
    /// The lookup-or-generation of one key, as a future the queue spawns: the cache first, then
    /// the page made (here, or by the replica holding the lease), stored, announced to the
    /// other replicas and exported.
    pub(super) fn generation(
        &self,
        m: Read,
        generation: Span,
        progress: Arc<Progress>,
    ) -> impl std::future::Future<Output = (Arc<UiEntry>, Provenance, Option<(String, UiType)>)> + 'static {
        let key = m.key.clone();
        let tool_name = m.tool.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
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
            progress,
            failures: self.failures.get(&key).copied().unwrap_or(0),
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
            if let Some(hit) = cached(lookup, &generation, &deps, store).await {
                return (hit, Provenance::cached(), None);
            }
            generation.set(attr::CACHE_HIT, false);
            deps.metrics.cache_misses.inc();
            tracing::info!(component = "generation_queue", event = "cache_miss", "no cached page: making one");
            let started = Instant::now();
            let (outcome, lease) = match make(shared.as_ref(), &cache, drop_others, &th, job, &slots, &deps).await {
                Made::Here(outcome, lease) => (*outcome, lease),
                Made::Served(entry) => {
                    generation.set(attr::OUTCOME, "served_by_another_replica");
                    return (entry, Provenance { here: false, fresh: true, drop_others }, None);
                }
            };
            let entry = Arc::new(outcome.entry);
            generation.set(attr::OUTCOME, entry.kind.as_str());
            generation.set(attr::REPAIRS, entry.repairs.len() as i64);
            if let Some(reason) = &entry.fallback_reason {
                generation.set(attr::FALLBACK_REASON, reason.as_str().to_string());
            }
            deps.metrics.generation_duration.with_label_values(&[&tool_name, entry.kind.as_str()]).observe(started.elapsed().as_secs_f64());
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
            (entry, Provenance { here: true, fresh: true, drop_others }, outcome.classified.map(|c| (th, c)))
        };
        fut.instrument(span)
    }
}

/// The cache's answer to a read's lookup (None: no lookup, or a miss).
async fn cached(
    lookup: Option<actix::dev::RecipientRequest<Get>>,
    generation: &Span,
    deps: &Deps,
    store: &'static str,
) -> Option<Arc<UiEntry>> {
    let lookup = lookup?;
    let looking = Span::start_with("ui.cache.get", Kind::Internal, &generation.cx(), || vec![Attr::new("mcp_gen_ui.cache.store", store)]);
    let found = lookup.await;
    drop(looking);
    let hit = found.ok().flatten()?;
    deps.metrics.cache_hits.inc();
    tracing::debug!(component = "generation_queue", event = "cache_hit", "served from the cache");
    generation.set(attr::CACHE_HIT, true);
    generation.set(attr::OUTCOME, "cached");
    Some(hit)
}

/// How a generation's page came to be.
#[derive(Debug, Clone, Copy)]
pub(super) struct Provenance {
    /// Made by this replica (its failures are counted here).
    pub here: bool,
    /// Made now, not found in the cache.
    pub fresh: bool,
    /// A forced remake that replaces the tool's page for everyone.
    pub drop_others: bool,
}

impl Provenance {
    fn cached() -> Self {
        Provenance { here: false, fresh: false, drop_others: false }
    }
}
