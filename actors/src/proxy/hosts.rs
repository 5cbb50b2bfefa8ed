//! The connected host sessions, as every server's router reaches them: by id, for server
//! requests and notifications meant for one host, or all of them for a broadcast. Shared by
//! the routers of every server (a session registers once, whatever the number of servers).

use std::collections::HashMap;
use std::sync::RwLock;

use crate::locks::RecoverRw;
use crate::messages::{HostEvent, SessionId, SessionPort};

#[derive(Default)]
pub struct Hosts {
    sessions: RwLock<HashMap<SessionId, SessionPort>>,
}

impl Hosts {
    pub fn register(&self, session: SessionId, port: SessionPort) {
        self.sessions.writing().insert(session, port);
    }

    pub fn unregister(&self, session: &SessionId) {
        self.sessions.writing().remove(session);
    }

    /// Whether `session` is still connected (a session that stopped has left).
    pub fn contains(&self, session: &SessionId) -> bool {
        self.sessions.reading().contains_key(session)
    }

    pub fn port(&self, session: &SessionId) -> Option<SessionPort> {
        self.sessions.reading().get(session).cloned()
    }

    /// Sends an event to every connected host session.
    pub fn broadcast(&self, ev: HostEvent) {
        for port in self.sessions.reading().values() {
            port.event.do_send(ev.clone());
        }
    }

    pub fn len(&self) -> usize {
        self.sessions.reading().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
