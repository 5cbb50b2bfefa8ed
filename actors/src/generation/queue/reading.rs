//! A read waiting for its key's lookup-or-generation. A host's read waits at most its budget
//! (`generation.timeoutMs`): past it, it is answered with the provisional page (the template,
//! saying that a page is being written and how far it has got) while the generation goes on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{watch, OnceCell};

use crate::generation::pipeline::{self, Deps, Spare};
use crate::generation::progress::Progress;
use crate::messages::PageRead;
use crate::page::{FallbackReason, LlmFailure, UiEntry};

/// What one read holds of the generation it waits on.
pub(super) struct Waiter {
    pub done: watch::Receiver<Option<Arc<UiEntry>>>,
    pub progress: Arc<Progress>,
    pub provisional_served: Arc<AtomicBool>,
    pub provisional: Arc<OnceCell<Arc<UiEntry>>>,
    pub deps: Arc<Deps>,
    pub spare: Spare,
}

impl Waiter {
    /// The page, once made; or, at `until`, the provisional page.
    pub async fn answer(mut self, until: Option<Instant>) -> PageRead {
        let made = {
            let waiting = self.done.wait_for(Option::is_some);
            match until {
                None => Ok(waiting.await.map(|e| e.clone())),
                Some(t) => tokio::time::timeout_at(t.into(), waiting).await.map(|r| r.map(|e| e.clone())),
            }
        };
        match made {
            Ok(Ok(Some(entry))) => PageRead::page(entry),
            // The generation was dropped (its tool changed, a restart): the template, kept nowhere.
            Ok(_) => PageRead::page(Arc::new(pipeline::fallback_now(
                &self.spare,
                &self.deps,
                FallbackReason::Llm(LlmFailure::Aborted),
                "the page was being made when its tool changed or the queue restarted",
            ))),
            Err(_) => {
                self.provisional_served.store(true, Ordering::Relaxed);
                let (spare, deps) = (&self.spare, &self.deps);
                let page = self.provisional.get_or_init(|| async move { Arc::new(pipeline::provisional(spare, deps).await) }).await.clone();
                PageRead { entry: page, writing: Some(self.progress.snapshot()) }
            }
        }
    }
}
