//! Panic containment for actors. An actix actor that panics in a handler takes its arbiter
//! thread's task down (and on the System arbiter, the service), so handlers that run
//! non-trivial logic go through [`contain`]: a panic becomes a logged error, the caller gets a
//! fallback answer, and the actor stops so that its `Supervisor` restarts it with fresh
//! transient state (counted in `mcp_gen_ui_actor_restarts_total`).

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use actix::{ActorContext, Supervised};

/// The panic's message, when it has one (`panic!("...")` payloads are `&str` or `String`).
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Runs `f`; on a panic, logs it, stops the actor (its supervisor restarts it) and answers `fallback()`.
pub fn contain<A, C, R>(actor: &'static str, ctx: &mut C, f: impl FnOnce(&mut C) -> R, fallback: impl FnOnce() -> R) -> R
where
    A: Supervised,
    C: ActorContext,
{
    match catch_unwind(AssertUnwindSafe(|| f(ctx))) {
        Ok(r) => r,
        Err(p) => {
            tracing::error!(component = actor, event = "panic", error = %panic_message(p.as_ref()), "an actor handler panicked; the actor is restarted");
            ctx.stop();
            fallback()
        }
    }
}

/// Logs and counts a supervisor restart (call from `Supervised::restarting`).
pub fn note_restart(actor: &'static str, metrics: &crate::metrics::Metrics) {
    metrics.actor_restarts.with_label_values(&[actor]).inc();
    tracing::warn!(component = actor, event = "actor_restarted", "the {actor} actor stopped and was restarted by its supervisor");
}
