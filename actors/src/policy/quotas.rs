//! Where quotas are counted: in Redis when replicas share one (every replica counts the same
//! window), else in this process; a Redis that does not answer is counted here meanwhile
//! (per replica, and logged), so a quota still holds on each.

use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::policy::quota::{Counters, Quota, Taken};
use crate::store::redis::RedisStore;

#[derive(Default)]
pub struct Quotas {
    here: Counters,
    shared: OnceLock<RedisStore>,
}

impl Quotas {
    pub fn new() -> Arc<Quotas> {
        Arc::default()
    }

    /// Counts in Redis from now on (set once, by the wiring).
    pub fn share(&self, store: RedisStore) {
        let _ = self.shared.set(store);
    }

    /// Counts in this process at once when no Redis is shared (None: counted in Redis, ask
    /// [`Quotas::take`]): no future for the common case.
    pub fn take_here(&self, quotas: &[Quota]) -> Option<Result<(), (Quota, u64)>> {
        if self.shared.get().is_some() {
            return None;
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        for q in quotas {
            if let Taken::Used { retry_in } = self.here.take(q, now) {
                return Some(Err((q.clone(), retry_in)));
            }
        }
        Some(Ok(()))
    }

    /// Counts one call against each quota, in order; the first used up refuses it (those
    /// before it have counted it: a refused call is rare, and a quota errs on the side of less).
    pub async fn take(&self, quotas: &[Quota]) -> Result<(), (Quota, u64)> {
        for q in quotas {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
            let taken = match self.shared.get() {
                Some(store) => {
                    let (w, retry_in) = q.window(now);
                    match store.take_quota(&q.key, w, q.calls, q.per_secs).await {
                        Ok(true) => Taken::Ok,
                        Ok(false) => Taken::Used { retry_in },
                        Err(_) => {
                            tracing::warn!(component = "quota", event = "counted_here", rule = %q.rule, "Redis did not answer: quota {:?} counted by this replica alone meanwhile", &*q.rule);
                            self.here.take(q, now)
                        }
                    }
                }
                None => self.here.take(q, now),
            };
            if let Taken::Used { retry_in } = taken {
                return Err((q.clone(), retry_in));
            }
        }
        Ok(())
    }
}
