//! A read waiting for its key's lookup-or-generation. A host's read waits while the page can
//! still come within its budget (`generation.timeoutMs`, the upper bound), judged from the
//! model's pace (`pace::keep_waiting`); then it is answered with the provisional page (the
//! template, showing the page as it is written) while the generation goes on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{watch, OnceCell};

use crate::generation::pace;
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
    /// The page, once made; or the provisional page, at `until` or as soon as the page cannot
    /// be made by then. `arrived`: when the read came.
    pub async fn answer(mut self, arrived: Instant, until: Option<Instant>) -> PageRead {
        let made = match until {
            None => Ok(self.done.wait_for(Option::is_some).await.map(|e| e.clone())),
            Some(t) => self.in_time(arrived, t).await,
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
                PageRead { entry: page, writing: Some(self.progress.snapshot(self.deps.pace.known())) }
            }
        }
    }

    /// Waits for the page while it can come by `until`, looking again every `LOOK_EVERY`.
    async fn in_time(&mut self, arrived: Instant, until: Instant) -> Result<Result<Option<Arc<UiEntry>>, watch::error::RecvError>, ()> {
        /// How often a waiting read looks at the pace again.
        const LOOK_EVERY: Duration = Duration::from_millis(50);
        loop {
            let now = Instant::now();
            let left = until.saturating_duration_since(now);
            let waited = now.duration_since(arrived).as_millis() as u64;
            let seen = self.progress.seen();
            if !pace::keep_waiting(&seen, self.deps.pace.known(), waited, left.as_millis() as u64) {
                self.deps.pace.note_pace(&seen);
                return Err(());
            }
            let look = (now + LOOK_EVERY).min(until);
            match tokio::time::timeout_at(look.into(), self.done.wait_for(Option::is_some)).await {
                Ok(r) => return Ok(r.map(|e| e.clone())),
                Err(_) if look >= until => return Err(()),
                Err(_) => {}
            }
        }
    }
}
