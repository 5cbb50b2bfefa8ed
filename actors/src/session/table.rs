//! The HTTP edges' table of sessions: session id -> how to reach that session, and who opened
//! it. A plain shared map rather than an actor: every POST looks a session up, and a lookup
//! through a mailbox on another thread would put that thread on every call's path. Sessions
//! add themselves when an edge opens them and leave when they stop.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::messages::{Close, SessionId, SessionRef};
use crate::process::locks::RecoverRw;

/// Who opened a session: the principal the edge authenticated (`anonymous` without auth).
pub type Owner = Arc<str>;

#[derive(Default)]
pub struct SessionTable {
    sessions: RwLock<Sessions>,
}

#[derive(Default)]
struct Sessions {
    by_id: HashMap<SessionId, (SessionRef, Owner)>,
    /// How many each principal has open (a share is checked on every new one: no walk).
    per_owner: HashMap<Owner, usize>,
}

/// What a lookup by id found, for the principal asking.
pub enum Lookup {
    Found(SessionRef),
    /// The session exists but another principal opened it: answered as if it did not exist.
    Foreign,
    Missing,
}

impl SessionTable {
    pub fn insert(&self, id: SessionId, session: SessionRef, owner: Owner) {
        let mut all = self.sessions.writing();
        *all.per_owner.entry(owner.clone()).or_default() += 1;
        if let Some((_, before)) = all.by_id.insert(id, (session, owner)) {
            all.forget_one(&before);
        }
    }

    /// The live session with this id, if `principal` opened it.
    pub fn lookup(&self, id: &str, principal: &str) -> Lookup {
        match self.sessions.reading().by_id.get(id).filter(|(s, _)| s.connected()) {
            None => Lookup::Missing,
            Some((s, owner)) if &**owner == principal => Lookup::Found(s.clone()),
            Some(_) => Lookup::Foreign,
        }
    }

    pub fn remove(&self, id: &str) {
        let mut all = self.sessions.writing();
        if let Some((_, owner)) = all.by_id.remove(id) {
            all.forget_one(&owner);
        }
        // A burst of sessions has ended: the table's room and the sessions' freed pages go
        // back (a long-lived endpoint sees bursts of reconnecting hosts).
        if all.by_id.capacity() > 256 && all.by_id.len() * 4 < all.by_id.capacity() {
            let keep = all.by_id.len() * 2;
            all.by_id.shrink_to(keep);
            all.per_owner.shrink_to_fit();
            crate::process::memory::after_large_work();
        }
    }

    pub fn len(&self) -> usize {
        self.sessions.reading().by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sessions `principal` has open.
    pub fn count_of(&self, principal: &str) -> usize {
        self.sessions.reading().per_owner.get(principal).copied().unwrap_or(0)
    }

    /// Closes every session (shutdown); answers how many there were.
    pub fn close_all(&self) -> usize {
        let mut table = self.sessions.writing();
        table.per_owner.clear();
        let all: Vec<SessionRef> = table.by_id.drain().map(|(_, (s, _))| s).collect();
        drop(table);
        for s in &all {
            s.close.do_send(Close);
        }
        all.len()
    }
}

impl Sessions {
    fn forget_one(&mut self, owner: &Owner) {
        if let Some(n) = self.per_owner.get_mut(owner) {
            *n -= 1;
            if *n == 0 {
                self.per_owner.remove(owner);
            }
        }
    }
}

/// A short, stable name for a session id in logs: enough to follow one session, useless to
/// take it over (ids are bearer-like: whoever holds one could name it).
pub fn log_name(id: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(id.as_bytes());
    hex::encode(&d[..4])
}
