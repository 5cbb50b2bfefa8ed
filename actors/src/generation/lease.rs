//! One generation per key across replicas. Before making a page, a replica takes the key's lease
//! (`SET lease:<key> <replica> NX PX <ttl>`); while it works it renews it every third of the
//! TTL, and it releases it (only if still its own) after the page is stored. A replica that
//! finds the lease taken waits for the page: it wakes on the holder's `stored` event or on a
//! poll (backoff 50 ms doubling to 500 ms), within its own read's budget. A holder that dies
//! stops renewing, its lease expires within the TTL, and the next waiter to try takes over.
//!
//! The logic runs over [`LeaseStore`], which `RedisStore` implements and the unit tests fake.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

use crate::metrics::Metrics;
use crate::page::UiEntry;
use crate::store::redis::{Event, RedisStore, Unavailable};

/// What the lease logic needs from the shared store.
pub trait LeaseStore: Clone + Send + Sync + 'static {
    fn try_lease(&self, key: &str) -> impl Future<Output = Result<bool, Unavailable>> + Send;
    fn renew_lease(&self, key: &str) -> impl Future<Output = Result<bool, Unavailable>> + Send;
    fn release_lease(&self, key: &str) -> impl Future<Output = Result<bool, Unavailable>> + Send;
    fn lease_ttl(&self) -> Duration;
    /// Every replica's events (a `Stored` for the key wakes the waiters).
    fn events(&self) -> broadcast::Receiver<Event>;
}

impl LeaseStore for RedisStore {
    fn try_lease(&self, key: &str) -> impl Future<Output = Result<bool, Unavailable>> + Send {
        RedisStore::try_lease(self, key)
    }
    fn renew_lease(&self, key: &str) -> impl Future<Output = Result<bool, Unavailable>> + Send {
        RedisStore::renew_lease(self, key)
    }
    fn release_lease(&self, key: &str) -> impl Future<Output = Result<bool, Unavailable>> + Send {
        RedisStore::release_lease(self, key)
    }
    fn lease_ttl(&self) -> Duration {
        RedisStore::lease_ttl(self)
    }
    fn events(&self) -> broadcast::Receiver<Event> {
        RedisStore::events(self)
    }
}

/// How the claim on a key ended.
pub enum Claim<S: LeaseStore> {
    /// This replica holds the lease: make the page, store it, then [`Lease::release`].
    Held(Lease<S>),
    /// Another replica made the page (found after waiting, or just before the lease).
    Found(Arc<UiEntry>),
    /// The read's budget ran out while another replica was still making the page.
    TimedOut,
    /// The store did not answer: make the page here, on our own.
    Unavailable,
}

const FIRST_POLL: Duration = Duration::from_millis(50);
const MAX_POLL: Duration = Duration::from_millis(500);

/// Claims `key` for this replica, or waits for the replica that holds it, until `deadline`.
/// `lookup` looks for the page (the caller's cache, which reads through to the store);
/// `waiting` is called once, when another replica is found to hold the lease.
pub async fn claim<S, L, F>(store: &S, key: &str, deadline: Instant, metrics: &Metrics, lookup: L, waiting: impl Fn()) -> Claim<S>
where
    S: LeaseStore,
    L: Fn() -> F,
    F: Future<Output = Option<Arc<UiEntry>>>,
{
    // Subscribed before the first try, so that a store right after it is not missed.
    let mut events = store.events();
    let mut waited = false;
    let mut poll = FIRST_POLL;
    let outcome = |o: &str| metrics.lease_waits.with_label_values(&[o]).inc();
    loop {
        match store.try_lease(key).await {
            Err(_) => {
                if waited {
                    outcome("unavailable");
                }
                return Claim::Unavailable;
            }
            Ok(true) => {
                // The holder may have stored and released between our miss and this lease.
                if let Some(page) = lookup().await {
                    let _ = store.release_lease(key).await;
                    if waited {
                        outcome("page");
                    }
                    return Claim::Found(page);
                }
                if waited {
                    outcome("takeover");
                    metrics.lease_takeovers.inc();
                    tracing::warn!(component = "lease", event = "lease_takeover", cache_key = %key, "the replica making this page stopped renewing its lease: making it here");
                }
                return Claim::Held(Lease::start(store.clone(), key.to_string()));
            }
            Ok(false) => {
                if !waited {
                    waited = true;
                    waiting();
                    tracing::info!(component = "lease", event = "lease_wait", cache_key = %key, "another replica is making this page: waiting for it");
                }
                let now = Instant::now();
                if now >= deadline {
                    outcome("budget");
                    return Claim::TimedOut;
                }
                wake_on_store(&mut events, key, poll.min(deadline - now)).await;
                poll = (poll * 2).min(MAX_POLL);
                if let Some(page) = lookup().await {
                    outcome("page");
                    return Claim::Found(page);
                }
                if Instant::now() >= deadline {
                    outcome("budget");
                    return Claim::TimedOut;
                }
            }
        }
    }
}

/// Returns when a `Stored` event for `key` arrives, when events were lost, or after `nap`.
async fn wake_on_store(events: &mut broadcast::Receiver<Event>, key: &str, nap: Duration) {
    let sleep = tokio::time::sleep(nap);
    tokio::pin!(sleep);
    loop {
        tokio::select! {
            _ = &mut sleep => return,
            ev = events.recv() => match ev {
                Ok(Event::Stored { key: k, .. }) if k == key => return,
                Ok(Event::Resubscribed) | Err(broadcast::error::RecvError::Lagged(_)) => return,
                Ok(_) => {}
                // No sender any more: the polls alone.
                Err(broadcast::error::RecvError::Closed) => {
                    sleep.as_mut().await;
                    return;
                }
            },
        }
    }
}

/// A held lease, renewed in the background until released or dropped. Dropped without
/// [`Lease::release`] (a panic, a cancelled read), it simply expires.
pub struct Lease<S: LeaseStore> {
    store: S,
    key: String,
    renewal: tokio::task::JoinHandle<()>,
}

impl<S: LeaseStore> Lease<S> {
    fn start(store: S, key: String) -> Self {
        let (s, k) = (store.clone(), key.clone());
        let renewal = tokio::spawn(async move {
            let every = s.lease_ttl() / 3;
            loop {
                tokio::time::sleep(every).await;
                match s.renew_lease(&k).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(component = "lease", event = "lease_lost", cache_key = %k, "the lease on this page expired before it was renewed; another replica may make it too");
                        return;
                    }
                    // Redis is away: keep trying; the page is still made and served here.
                    Err(_) => {}
                }
            }
        });
        Lease { store, key, renewal }
    }

    /// Stops renewing and deletes the lease if it is still ours.
    pub async fn release(self) {
        self.renewal.abort();
        let _ = self.store.release_lease(&self.key).await;
    }
}

impl<S: LeaseStore> Drop for Lease<S> {
    fn drop(&mut self) {
        self.renewal.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// Leases in a map, with expiry; `down` makes every call fail.
    #[derive(Clone)]
    struct Fake {
        me: String,
        shared: Arc<Shared>,
    }

    struct Shared {
        leases: Mutex<HashMap<String, (String, Instant)>>,
        pages: Mutex<HashMap<String, Arc<UiEntry>>>,
        events: broadcast::Sender<Event>,
        down: std::sync::atomic::AtomicBool,
        ttl: Duration,
    }

    impl Fake {
        fn group(ttl: Duration) -> Arc<Shared> {
            Arc::new(Shared {
                leases: Mutex::new(HashMap::new()),
                pages: Mutex::new(HashMap::new()),
                events: broadcast::channel(64).0,
                down: false.into(),
                ttl,
            })
        }
        fn replica(shared: &Arc<Shared>, me: &str) -> Self {
            Fake { me: me.into(), shared: shared.clone() }
        }
        fn check(&self) -> Result<(), Unavailable> {
            if self.shared.down.load(std::sync::atomic::Ordering::Relaxed) {
                Err(Unavailable("down".into()))
            } else {
                Ok(())
            }
        }
        fn store_page(&self, key: &str) {
            self.shared.pages.lock().unwrap().insert(key.into(), Arc::new(entry(key, &self.me)));
            let _ = self.shared.events.send(Event::Stored { origin: self.me.clone(), key: key.into(), tool: "t".into(), forced: false });
        }
        fn lookup(&self, key: &str) -> impl Future<Output = Option<Arc<UiEntry>>> {
            let page = self.shared.pages.lock().unwrap().get(key).cloned();
            async move { page }
        }
    }

    impl LeaseStore for Fake {
        fn try_lease(&self, key: &str) -> impl Future<Output = Result<bool, Unavailable>> + Send {
            let res = self.check().map(|_| {
                let mut l = self.shared.leases.lock().unwrap();
                let now = Instant::now();
                match l.get(key) {
                    Some((_, until)) if *until > now => false,
                    _ => {
                        l.insert(key.into(), (self.me.clone(), now + self.shared.ttl));
                        true
                    }
                }
            });
            async move { res }
        }
        fn renew_lease(&self, key: &str) -> impl Future<Output = Result<bool, Unavailable>> + Send {
            let res = self.check().map(|_| {
                let mut l = self.shared.leases.lock().unwrap();
                match l.get_mut(key) {
                    Some((who, until)) if *who == self.me && *until > Instant::now() => {
                        *until = Instant::now() + self.shared.ttl;
                        true
                    }
                    _ => false,
                }
            });
            async move { res }
        }
        fn release_lease(&self, key: &str) -> impl Future<Output = Result<bool, Unavailable>> + Send {
            let res = self.check().map(|_| {
                let mut l = self.shared.leases.lock().unwrap();
                if l.get(key).is_some_and(|(who, _)| *who == self.me) {
                    l.remove(key);
                    true
                } else {
                    false
                }
            });
            async move { res }
        }
        fn lease_ttl(&self) -> Duration {
            self.shared.ttl
        }
        fn events(&self) -> broadcast::Receiver<Event> {
            self.shared.events.subscribe()
        }
    }

    fn entry(key: &str, by: &str) -> UiEntry {
        serde_json::from_value(serde_json::json!({
            "format": crate::page::ENTRY_FORMAT, "key": key, "toolName": "t", "html": by, "kind": "generated", "uiType": null,
            "generatedAt": 0, "durationMs": 0, "provider": "", "model": "", "promptVersion": "", "templateVersion": "",
            "fallbackReason": null, "warnings": [], "repairs": [], "requestId": "", "inputTokens": 0, "outputTokens": 0
        }))
        .unwrap()
    }

    fn soon(ms: u64) -> Instant {
        Instant::now() + Duration::from_millis(ms)
    }

    #[tokio::test]
    async fn the_second_replica_waits_for_the_first_ones_page() {
        let group = Fake::group(Duration::from_millis(900));
        let (a, b) = (Fake::replica(&group, "a"), Fake::replica(&group, "b"));
        let m = Metrics::new();
        let Claim::Held(lease) = claim(&a, "k", soon(5000), &m, || a.lookup("k"), || ()).await else { panic!("a holds it") };
        let maker = {
            let a = a.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(1500)).await; // longer than the TTL: renewals keep it
                a.store_page("k");
                lease.release().await;
            })
        };
        let started = Instant::now();
        match claim(&b, "k", soon(5000), &m, || b.lookup("k"), || ()).await {
            Claim::Found(p) => assert_eq!(p.html, "a"),
            _ => panic!("b gets a's page"),
        }
        assert!(started.elapsed() < Duration::from_millis(1700), "woken by the event, not a late poll");
        maker.await.unwrap();
        assert_eq!(m.lease_waits.with_label_values(&["page"]).get(), 1);
        assert_eq!(m.lease_takeovers.get(), 0);
    }

    #[tokio::test]
    async fn a_dead_holder_loses_its_lease_and_a_waiter_takes_over() {
        let group = Fake::group(Duration::from_millis(300));
        let (a, b) = (Fake::replica(&group, "a"), Fake::replica(&group, "b"));
        let m = Metrics::new();
        let Claim::Held(lease) = claim(&a, "k", soon(5000), &m, || a.lookup("k"), || ()).await else { panic!("a holds it") };
        drop(lease); // a dies: no renewal, no release
        let started = Instant::now();
        let Claim::Held(mine) = claim(&b, "k", soon(5000), &m, || b.lookup("k"), || ()).await else { panic!("b takes over") };
        assert!(started.elapsed() >= Duration::from_millis(250) && started.elapsed() < Duration::from_millis(1000));
        assert_eq!(m.lease_takeovers.get(), 1);
        assert_eq!(m.lease_waits.with_label_values(&["takeover"]).get(), 1);
        mine.release().await;
        assert!(group.leases.lock().unwrap().is_empty(), "released");
    }

    #[tokio::test]
    async fn a_waiter_gives_up_at_its_deadline() {
        let group = Fake::group(Duration::from_secs(10));
        let (a, b) = (Fake::replica(&group, "a"), Fake::replica(&group, "b"));
        let m = Metrics::new();
        let Claim::Held(_lease) = claim(&a, "k", soon(5000), &m, || a.lookup("k"), || ()).await else { panic!() };
        let started = Instant::now();
        assert!(matches!(claim(&b, "k", soon(400), &m, || b.lookup("k"), || ()).await, Claim::TimedOut));
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(390) && took < Duration::from_millis(600), "{took:?}");
        assert_eq!(m.lease_waits.with_label_values(&["budget"]).get(), 1);
    }

    #[tokio::test]
    async fn a_page_stored_just_before_the_lease_is_used_and_the_lease_given_back() {
        let group = Fake::group(Duration::from_secs(10));
        let a = Fake::replica(&group, "a");
        a.store_page("k");
        let m = Metrics::new();
        assert!(matches!(claim(&a, "k", soon(1000), &m, || a.lookup("k"), || ()).await, Claim::Found(_)));
        assert!(group.leases.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_store_that_does_not_answer_means_on_our_own() {
        let group = Fake::group(Duration::from_secs(10));
        let a = Fake::replica(&group, "a");
        group.down.store(true, std::sync::atomic::Ordering::Relaxed);
        let m = Metrics::new();
        assert!(matches!(claim(&a, "k", soon(1000), &m, || a.lookup("k"), || ()).await, Claim::Unavailable));
    }

    #[tokio::test]
    async fn a_lease_is_never_released_for_another_replica() {
        let group = Fake::group(Duration::from_millis(200));
        let (a, b) = (Fake::replica(&group, "a"), Fake::replica(&group, "b"));
        let m = Metrics::new();
        let Claim::Held(old) = claim(&a, "k", soon(5000), &m, || a.lookup("k"), || ()).await else { panic!() };
        old.renewal.abort(); // a stalls past its TTL
        tokio::time::sleep(Duration::from_millis(250)).await;
        let Claim::Held(_new) = claim(&b, "k", soon(5000), &m, || b.lookup("k"), || ()).await else { panic!() };
        old.release().await; // a wakes up and releases: b's lease must survive
        assert_eq!(group.leases.lock().unwrap().get("k").map(|(w, _)| w.clone()), Some("b".to_string()));
    }
}
