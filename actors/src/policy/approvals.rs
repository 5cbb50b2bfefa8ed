//! The approvals book: calls held by `approve` rules, kept in Redis when replicas share one
//! (a call held on one replica is approved on another) and in this process otherwise. A call
//! waits on its request ([`Approvals::wait`]); a decision wakes it, here at once and on the other
//! replicas through the `approvalDecided` event. A decided approval is taken once, by the call
//! it was given for ([`Approvals::take`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::Notify;

use super::approval::{Request, State};
use crate::process::locks::Recover;
use crate::store::redis::{Event, RedisStore};

/// Requests kept in this process at most (each expires; past it, new ones are refused).
const MAX_HERE: usize = 10_000;
/// Pending requests one person may have at once: one person's flood fills their own share.
pub const MAX_PER_PERSON: usize = 20;

/// Why a decision was not made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Undecided {
    #[error("no approval request {0:?} is pending (it was decided, it expired, or there is none)")]
    NotPending(String),
    #[error("the approvals cannot be reached right now (Redis does not answer); try again")]
    Unavailable,
    #[error("too many approval requests are waiting; try again once some are decided")]
    Full,
    #[error("you have {MAX_PER_PERSON} calls waiting for approval already; make this one again once some are decided or have expired")]
    YoursFull,
}

#[derive(Default)]
struct Here {
    requests: HashMap<String, Request>,
    /// A call's standing request.
    by_call: HashMap<String, String>,
    /// A decided approval waiting for its call: who approved, until when (ms).
    approved: HashMap<String, (String, u64)>,
}

#[derive(Default)]
pub struct Approvals {
    here: Mutex<Here>,
    shared: OnceLock<RedisStore>,
    /// Woken when a request is decided (here or, through events, elsewhere).
    woken: Notify,
}

pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl Approvals {
    pub fn new() -> Arc<Approvals> {
        Arc::default()
    }

    /// Kept in Redis from now on (set once, by the wiring).
    pub fn share(&self, store: RedisStore) {
        let _ = self.shared.set(store);
    }

    /// Another replica made or decided a request: waiting calls look again.
    pub fn decided_elsewhere(&self) {
        self.woken.notify_waiters();
    }

    /// Holds a call: its request, or the one its call has standing already.
    pub async fn request(&self, r: Request) -> Result<Request, Undecided> {
        let ttl = r.expires_at.saturating_sub(now_ms()).div_ceil(1000).max(1);
        if let Some(store) = self.shared.get() {
            let json = serde_json::to_string(&r).unwrap_or_default();
            let id = store.approval_put(&r.id, &r.call, json, ttl).await.map_err(|_| Undecided::Unavailable)?;
            if id == r.id {
                // Approvers on the other replicas hear of it (their approvals page).
                let _ = store.publish(&Event::ApprovalDecided { origin: store.replica().to_string(), id: id.clone() }).await;
            }
            return match id == r.id {
                true => Ok(r),
                false => self.get(&id).await.filter(|s| s.state == State::Pending).map_or(Ok(r), Ok),
            };
        }
        let mut h = self.here.guard();
        let now = now_ms();
        h.requests.retain(|_, x| x.expires_at + 3_600_000 > now);
        let Here { requests, by_call, .. } = &mut *h;
        by_call.retain(|_, id| requests.get(id).is_some_and(|x| x.state == State::Pending && x.expires_at > now));
        let pending_of =
            |key: &str| requests.values().filter(|x| x.person_key == key && x.state == State::Pending && x.expires_at > now).count();
        if !by_call.contains_key(&r.call) && pending_of(&r.person_key) >= MAX_PER_PERSON {
            return Err(Undecided::YoursFull);
        }
        if let Some(standing) =
            h.by_call.get(&r.call).and_then(|id| h.requests.get(id)).filter(|x| x.state == State::Pending && x.expires_at > now)
        {
            return Ok(standing.clone());
        }
        if h.requests.len() >= MAX_HERE {
            return Err(Undecided::Full);
        }
        h.by_call.insert(r.call.clone(), r.id.clone());
        h.requests.insert(r.id.clone(), r.clone());
        Ok(r)
    }

    pub async fn get(&self, id: &str) -> Option<Request> {
        match self.shared.get() {
            Some(store) => store.approval_get(id).await.ok().flatten().and_then(|j| serde_json::from_str(&j).ok()),
            None => self.here.guard().requests.get(id).cloned(),
        }
    }

    /// Every pending request that has not expired.
    pub async fn pending(&self) -> Vec<Request> {
        let now = now_ms();
        let all: Vec<Request> = match self.shared.get() {
            Some(store) => {
                store.approvals_pending().await.unwrap_or_default().iter().filter_map(|j| serde_json::from_str(j).ok()).collect()
            }
            None => self.here.guard().requests.values().cloned().collect(),
        };
        let mut all: Vec<Request> = all.into_iter().filter(|r| r.state == State::Pending && r.expires_at > now).collect();
        all.sort_by_key(|r| r.requested_at);
        all
    }

    /// Decides a pending request (`to`: approved, declined or expired): the request as decided.
    /// One past its expiry is only ever expired.
    pub async fn decide(&self, id: &str, to: State) -> Result<Request, Undecided> {
        if to != State::Expired && self.get(id).await.is_some_and(|r| r.expires_at <= now_ms()) {
            return Err(Undecided::NotPending(id.into()));
        }
        let decided = match self.shared.get() {
            Some(store) => {
                let mut r = self.get(id).await.ok_or_else(|| Undecided::NotPending(id.into()))?;
                if r.state != State::Pending {
                    return Err(Undecided::NotPending(id.into()));
                }
                r.state = to.clone();
                let json = serde_json::to_string(&r).unwrap_or_default();
                let by = match &to {
                    State::Approved { by } => by.clone(),
                    _ => String::new(),
                };
                let ttl = r.expires_at.saturating_sub(now_ms()).div_ceil(1000).max(60);
                let after = store.approval_decide(id, &r.call, json.clone(), &by, ttl).await.map_err(|_| Undecided::Unavailable)?;
                if after.as_deref() != Some(json.as_str()) {
                    return Err(Undecided::NotPending(id.into()));
                }
                let origin = store.replica().to_string();
                let _ = store.publish(&Event::ApprovalDecided { origin, id: id.to_string() }).await;
                r
            }
            None => {
                let mut h = self.here.guard();
                let r = h.requests.get_mut(id).filter(|r| r.state == State::Pending).ok_or_else(|| Undecided::NotPending(id.into()))?;
                r.state = to.clone();
                let r = r.clone();
                h.by_call.remove(&r.call);
                if let State::Approved { by } = &to {
                    let until = r.expires_at.max(now_ms() + 60_000);
                    h.approved.insert(r.call.clone(), (by.clone(), until));
                }
                r
            }
        };
        self.woken.notify_waiters();
        Ok(decided)
    }

    /// Takes the approval given for a call (once): who approved it.
    pub async fn take(&self, call: &str) -> Option<String> {
        match self.shared.get() {
            Some(store) => store.approval_take(call).await.ok().flatten(),
            None => {
                let mut h = self.here.guard();
                let now = now_ms();
                h.approved.retain(|_, (_, until)| *until > now);
                h.approved.remove(call).map(|(by, _)| by)
            }
        }
    }

    /// Waits for a request to be decided, or to expire (then it is decided `expired`): the
    /// request as it ends. `tick` is called every `every` while it waits (progress).
    pub async fn wait(&self, id: &str, every: Duration, mut tick: impl FnMut()) -> Request {
        loop {
            let woken = self.woken.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let Some(r) = self.get(id).await else {
                return self.gone(id);
            };
            if r.state != State::Pending {
                return r;
            }
            let left = Duration::from_millis(r.expires_at.saturating_sub(now_ms()));
            if left.is_zero() {
                return match self.decide(id, State::Expired).await {
                    Ok(r) => r,
                    Err(_) => self.get(id).await.unwrap_or(r),
                };
            }
            // Redis events can be missed (a resubscription): look again now and then.
            let nap = left.min(every);
            if tokio::time::timeout(nap, woken).await.is_err() {
                tick();
            }
        }
    }

    fn gone(&self, id: &str) -> Request {
        Request {
            id: id.into(),
            person: String::new(),
            person_key: String::new(),
            server: String::new(),
            tool: String::new(),
            arguments: serde_json::Value::Null,
            call: String::new(),
            rule: String::new(),
            approvers: Default::default(),
            requested_at: 0,
            expires_at: 0,
            state: State::Expired,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::approval::{call_digest, Approvers};

    fn request(id: &str, args: serde_json::Value, expires_in_ms: u64) -> Request {
        Request {
            id: id.into(),
            person: "bob".into(),
            person_key: "bob".into(),
            server: "fs".into(),
            tool: "fs__write_file".into(),
            call: call_digest("bob", "fs", "fs__write_file", Some(&args)),
            arguments: args,
            rule: "writes".into(),
            approvers: Approvers { admins: true, ..Default::default() },
            requested_at: now_ms(),
            expires_at: now_ms() + expires_in_ms,
            state: State::Pending,
        }
    }

    #[tokio::test]
    async fn a_held_call_waits_for_its_decision_and_takes_its_approval_once() {
        let book = Approvals::new();
        let r = book.request(request("a", json!({"path": "x"}), 60_000)).await.unwrap();
        assert_eq!(book.request(request("b", json!({"path": "x"}), 60_000)).await.unwrap().id, "a", "a retry joins its call's request");
        assert_eq!(book.request(request("c", json!({"path": "y"}), 60_000)).await.unwrap().id, "c", "another argument, another request");
        assert_eq!(book.pending().await.len(), 2);
        let waiting = {
            let book = book.clone();
            tokio::spawn(async move { book.wait("a", Duration::from_secs(5), || {}).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        book.decide("a", State::Approved { by: "carol".into() }).await.unwrap();
        let ended = tokio::time::timeout(Duration::from_secs(2), waiting).await.unwrap().unwrap();
        assert_eq!(ended.state, State::Approved { by: "carol".into() });
        assert_eq!(book.decide("a", State::Declined { by: "dave".into() }).await, Err(Undecided::NotPending("a".into())), "decided once");
        assert_eq!(book.take(&r.call).await.as_deref(), Some("carol"));
        assert_eq!(book.take(&r.call).await, None, "single use");
        assert_eq!(book.pending().await.len(), 1);
    }

    #[tokio::test]
    async fn one_persons_flood_fills_their_own_share_and_an_expired_request_is_not_approved() {
        let book = Approvals::new();
        for i in 0..MAX_PER_PERSON {
            book.request(request(&format!("b{i}"), json!({"i": i}), 60_000)).await.unwrap();
        }
        let over = book.request(request("over", json!({"i": "over"}), 60_000)).await;
        assert_eq!(over, Err(Undecided::YoursFull));
        assert_eq!(book.request(request("again", json!({"i": 0}), 60_000)).await.unwrap().id, "b0", "a retry joins its own request");
        let mut alice = request("a", json!({}), 60_000);
        alice.person_key = "alice".into();
        alice.call = call_digest("alice", "fs", "fs__write_file", Some(&json!({})));
        assert!(book.request(alice).await.is_ok(), "another person's share is theirs");
        let mut late = request("late", json!({"late": true}), 1);
        late.person_key = "dave".into();
        late.call = call_digest("dave", "fs", "fs__write_file", None);
        assert_eq!(book.request(late).await.unwrap().id, "late");
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(book.decide("late", State::Approved { by: "carol".into() }).await.is_err(), "past its expiry it is only expired");
    }

    #[tokio::test]
    async fn an_undecided_request_expires() {
        let book = Approvals::new();
        book.request(request("a", json!({}), 150)).await.unwrap();
        let mut ticks = 0;
        let ended = book.wait("a", Duration::from_millis(50), || ticks += 1).await;
        assert_eq!(ended.state, State::Expired);
        assert!(ticks >= 1, "progress while it waited");
        assert!(book.take(&ended.call).await.is_none());
    }
}
