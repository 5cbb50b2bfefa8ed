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
    sessions: RwLock<HashMap<SessionId, (SessionRef, Owner)>>,
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
        self.sessions.writing().insert(id, (session, owner));
    }

    /// The live session with this id, if `principal` opened it.
    pub fn lookup(&self, id: &str, principal: &str) -> Lookup {
        match self.sessions.reading().get(id).filter(|(s, _)| s.connected()) {
            None => Lookup::Missing,
            Some((s, owner)) if &**owner == principal => Lookup::Found(s.clone()),
            Some(_) => Lookup::Foreign,
        }
    }

    pub fn remove(&self, id: &str) {
        let mut all = self.sessions.writing();
        all.remove(id);
        // A burst of sessions has ended: the table's room and the sessions' freed pages go
        // back (a long-lived endpoint sees bursts of reconnecting hosts).
        if all.capacity() > 256 && all.len() * 4 < all.capacity() {
            let keep = all.len() * 2;
            all.shrink_to(keep);
            crate::process::memory::after_large_work();
        }
    }

    pub fn len(&self) -> usize {
        self.sessions.reading().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sessions `principal` has open.
    pub fn count_of(&self, principal: &str) -> usize {
        self.sessions.reading().values().filter(|(_, o)| &**o == principal).count()
    }

    /// Closes every session (shutdown); answers how many there were.
    pub fn close_all(&self) -> usize {
        let all: Vec<SessionRef> = self.sessions.writing().drain().map(|(_, (s, _))| s).collect();
        for s in &all {
            s.close.do_send(Close);
        }
        all.len()
    }
}

/// A short, stable name for a session id in logs: enough to follow one session, useless to
/// take it over (ids are bearer-like: whoever holds one could name it).
pub fn log_name(id: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(id.as_bytes());
    hex::encode(&d[..4])
}
