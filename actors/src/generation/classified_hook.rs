//! Tells whoever runs a generation that the tool was just classified, before the page itself is
//! asked for. With replicas, the queue shares the classification at once: a replica that dies
//! while the page is being written has still taught the others whether the tool is rich or
//! minimal, so the one that takes over asks the LLM once, not twice.
//!
//! A task-local rather than a field of the job: the generation calls [`note`], and only a queue
//! that wants to hear it wraps the generation in [`scope`].

use std::future::Future;
use std::sync::Arc;

use crate::page::UiType;

pub type Hook = Arc<dyn Fn(UiType) + Send + Sync>;

tokio::task_local! {
    static HOOK: Hook;
}

/// Runs `f` with `hook` hearing every classification made inside it.
pub async fn scope<F: Future>(hook: Option<Hook>, f: F) -> F::Output {
    match hook {
        Some(h) => HOOK.scope(h, f).await,
        None => f.await,
    }
}

/// A classification was just made (no-op outside [`scope`]).
pub fn note(t: UiType) {
    let _ = HOOK.try_with(|h| h(t));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[tokio::test]
    async fn the_hook_hears_only_inside_its_scope() {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let h = heard.clone();
        note(UiType::Rich);
        scope(Some(Arc::new(move |t| h.lock().unwrap().push(t))), async { note(UiType::Minimal) }).await;
        scope(None, async { note(UiType::Rich) }).await;
        assert_eq!(*heard.lock().unwrap(), vec![UiType::Minimal]);
    }
}
