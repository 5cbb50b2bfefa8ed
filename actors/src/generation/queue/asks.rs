//! What the rest of the service asks of the queue besides reads: a page's status, forgetting
//! or peeking at a tool's page, its cache key, the tool list changing, and the count and
//! abandonment of pages in flight at shutdown.

use super::*;

/// The longest a status call that shows the page as it is written waits for news.
const PREVIEW_EVERY: Duration = Duration::from_millis(700);

impl Handler<StatusOf> for GenerationQueue {
    type Result = ResponseActFuture<Self, PageStatus>;

    fn handle(&mut self, m: StatusOf, _ctx: &mut Self::Context) -> Self::Result {
        let feedback = self.feedback_of(&m.tool, m.personal.clone());
        Box::pin(feedback.into_actor(self).then(move |refinements, act, _| {
            let (key, _) = act.key_for(&m.tool, &refinements);
            // A forced remake in flight is the page to come; else a plain one.
            let flight = act.in_flight.get(&slot_of(&key, true)).or_else(|| act.in_flight.get(&key));
            let watching = flight.map(|f| (f.done.subscribe(), f.progress.clone()));
            let known = act.deps.pace.known();
            // A page shown as it is written is asked again often: its preview follows the text.
            let wait = if m.preview { m.wait.min(PREVIEW_EVERY) } else { m.wait };
            let lookup = (watching.is_none() && act.cache_enabled).then(|| act.cache.get.send(Get { key }));
            async move {
                if let Some((mut done, progress)) = watching {
                    let made = tokio::time::timeout(wait, done.wait_for(Option::is_some)).await;
                    return match made {
                        Ok(Ok(entry)) => entry.clone().map(PageStatus::Ready).unwrap_or(PageStatus::Idle),
                        Ok(Err(_)) => PageStatus::Idle, // aborted
                        Err(_) => PageStatus::Writing(progress.snapshot(known), if m.preview { progress.partial() } else { None }),
                    };
                }
                match lookup {
                    Some(l) => l.await.ok().flatten().map(PageStatus::Ready).unwrap_or(PageStatus::Idle),
                    None => PageStatus::Idle,
                }
            }
            .into_actor(act)
        }))
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
/// key changed anyway) so the cache holds only what can be served. A page still being made for
/// a tool that changed or went away is dropped: it would be a page of a tool that is not there.
impl Handler<ToolsUpdated> for GenerationQueue {
    type Result = ();

    fn handle(&mut self, m: ToolsUpdated, ctx: &mut Self::Context) {
        let gone: Vec<&String> = m.diff.removed.iter().chain(m.diff.changed.iter()).collect();
        for name in &gone {
            self.page_changed(name);
            self.cache.invalidate.do_send(InvalidateTool { tool_name: (*name).clone() });
        }
        let stale: Vec<String> = self.in_flight.iter().filter(|(_, f)| gone.contains(&&f.tool_name)).map(|(k, _)| k.clone()).collect();
        for slot in stale {
            if let Some(f) = self.in_flight.remove(&slot) {
                ctx.cancel_future(f.handle);
                let w = f.progress.snapshot(Default::default());
                tracing::info!(component = "generation_queue", event = "generation_dropped", tool_name = %f.tool_name, chars = w.chars, elapsed_ms = w.elapsed_ms, why = "the tool changed or was removed", "dropped a page being made");
            }
        }
        for name in &m.diff.removed {
            self.refinements.clear.do_send(Clear { key: crate::messages::HistoryKey::shared(name), every_scope: true });
        }
    }
}

impl Handler<Pending> for GenerationQueue {
    type Result = usize;

    fn handle(&mut self, _: Pending, _ctx: &mut Self::Context) -> usize {
        self.in_flight.len() + self.resolving
    }
}

impl Handler<Abandon> for GenerationQueue {
    type Result = usize;

    fn handle(&mut self, _: Abandon, ctx: &mut Self::Context) -> usize {
        let n = self.in_flight.len();
        for (_, f) in self.in_flight.drain() {
            ctx.cancel_future(f.handle);
            let w = f.progress.snapshot(Default::default());
            tracing::warn!(component = "generation_queue", event = "generation_dropped", tool_name = %f.tool_name, phase = w.phase.as_str(), chars = w.chars, elapsed_ms = w.elapsed_ms, why = "shutdown", "dropped a page being made: it is made again after the restart");
        }
        n
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
