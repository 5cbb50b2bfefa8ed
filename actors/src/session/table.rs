//! The HTTP edges' table of sessions: session id -> how to reach that session. A plain shared
//! map rather than an actor: every POST looks a session up, and a lookup through a mailbox on
//! another thread would put that thread on every call's path. Sessions add themselves when an
//! edge opens them and leave when they stop.

use std::collections::HashMap;
use std::sync::RwLock;

use crate::locks::RecoverRw;
use crate::messages::{Close, SessionId, SessionRef};

#[derive(Default)]
pub struct SessionTable {
    sessions: RwLock<HashMap<SessionId, SessionRef>>,
}

impl SessionTable {
    pub fn insert(&self, id: SessionId, session: SessionRef) {
        self.sessions.writing().insert(id, session);
    }

    /// The live session with this id.
    pub fn get(&self, id: &str) -> Option<SessionRef> {
        self.sessions.reading().get(id).filter(|s| s.connected()).cloned()
    }

    pub fn remove(&self, id: &str) {
        self.sessions.writing().remove(id);
    }

    pub fn len(&self) -> usize {
        self.sessions.reading().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Closes every session (shutdown); answers how many there were.
    pub fn close_all(&self) -> usize {
        let all: Vec<SessionRef> = self.sessions.writing().drain().map(|(_, s)| s).collect();
        for s in &all {
            s.close.do_send(Close);
        }
        all.len()
    }
}
