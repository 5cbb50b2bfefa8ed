//! The threads where sessions live (the HTTP workers), known to the rest of the process so
//! that a stdio link's reader can run on one of them: an answer read there wakes its session
//! without crossing threads when the session is on that worker (always, with one worker).
//! Each hop between threads was about 7 us of CPU a call on the 2-core bench machine
//! (ARCHITECTURE.md, "Where a proxied call's CPU goes").
//!
//! Workers join once, when they start; a reader started before any did (the upstreams start
//! before the HTTP edge) waits for the first on its own thread and moves then.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use actix::ArbiterHandle;
use tokio::sync::watch;

use crate::process::locks::Recover;

struct Homes {
    list: Mutex<Vec<ArbiterHandle>>,
    next: AtomicUsize,
    /// How many have joined: a reader waiting for its home watches this.
    joined: watch::Sender<usize>,
}

fn homes() -> &'static Homes {
    static HOMES: OnceLock<Homes> = OnceLock::new();
    HOMES.get_or_init(|| Homes { list: Mutex::new(Vec::new()), next: AtomicUsize::new(0), joined: watch::channel(0).0 })
}

/// The current thread's arbiter is a home (an HTTP worker calls this as it starts; a thread
/// joins once however often it calls).
pub fn join_current() {
    thread_local! {
        static JOINED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    if JOINED.with(|j| j.replace(true)) {
        return;
    }
    let h = homes();
    let mut list = h.list.guard();
    list.push(actix::Arbiter::current());
    h.joined.send_replace(list.len());
}

/// The next home in turn (links spread over the workers), if any has joined.
pub fn next() -> Option<ArbiterHandle> {
    let h = homes();
    let list = h.list.guard();
    match list.len() {
        0 => None,
        n => Some(list[h.next.fetch_add(1, Ordering::Relaxed) % n].clone()),
    }
}

/// Resolves once a home exists (at once if one does); never, in a process without HTTP
/// workers (the stdio edge), so callers race it against their own work.
pub async fn first() -> ArbiterHandle {
    let mut joined = homes().joined.subscribe();
    loop {
        if let Some(home) = next() {
            return home;
        }
        if joined.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
