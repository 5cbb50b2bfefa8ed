//! The connected host sessions, as every server's router reaches them: by id, for server
//! requests and notifications meant for one host, or all of them for a broadcast, each with the
//! person who opened it; and the tasks those people made (`tasks`), which outlive sessions. Shared by the routers of every server (a session registers once,
//! whatever the number of servers, and a person's own connections reach only that person's
//! sessions: see `audience`).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::audience;
use crate::messages::{HostEvent, SessionId, SessionPort};
use crate::process::locks::RecoverRw;
use crate::proxy::tasks::Tasks;

struct Entry {
    port: SessionPort,
    /// The person who opened the session (`Who::key`).
    owner: Arc<str>,
}

#[derive(Default)]
pub struct Hosts {
    sessions: RwLock<HashMap<SessionId, Entry>>,
    tasks: Tasks,
}

impl Hosts {
    pub fn register(&self, session: SessionId, port: SessionPort, owner: Arc<str>) {
        self.sessions.writing().insert(session, Entry { port, owner });
    }

    pub fn unregister(&self, session: &SessionId) {
        self.sessions.writing().remove(session);
    }

    /// Whether `session` is still connected (a session that stopped has left).
    pub fn contains(&self, session: &SessionId) -> bool {
        self.sessions.reading().contains_key(session)
    }

    /// How to reach `session`, if it is connected and belongs to `owner` (None: anyone's).
    pub fn port(&self, session: &SessionId, owner: Option<&str>) -> Option<SessionPort> {
        let sessions = self.sessions.reading();
        let e = sessions.get(session)?;
        owner.is_none_or(|o| *o == *e.owner).then(|| e.port.clone())
    }

    /// The person who opened `session`.
    pub fn owner_of(&self, session: &SessionId) -> Option<Arc<str>> {
        self.sessions.reading().get(session).map(|e| e.owner.clone())
    }

    /// Whose each task is (see `tasks`).
    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// A connected session of `owner`'s (None: anyone's), if there is one (the newest
    /// registered is not known: any).
    pub fn session_of(&self, owner: Option<&str>) -> Option<SessionId> {
        let sessions = self.sessions.reading();
        sessions.iter().find(|(_, e)| owner.is_none_or(|o| *e.owner == *o)).map(|(id, _)| id.clone())
    }

    /// Sends an event to every connected host session.
    pub fn broadcast(&self, ev: HostEvent) {
        for e in self.sessions.reading().values() {
            e.port.event.do_send(ev.clone());
        }
    }

    /// Sends an event to every session the origin's owner admits: a person's own connection
    /// reaches only that person's sessions (each then applies the rest of the rule itself).
    pub fn broadcast_from(&self, origin: &audience::Origin, ev: HostEvent) {
        for e in self.sessions.reading().values().filter(|e| audience::owner_admits(origin, &e.owner)) {
            e.port.event.do_send(ev.clone());
        }
    }

    /// [`Hosts::broadcast_from`], to `person`'s sessions only.
    pub fn broadcast_to(&self, origin: &audience::Origin, person: &str, ev: HostEvent) {
        let sessions = self.sessions.reading();
        for e in sessions.values().filter(|e| *e.owner == *person && audience::owner_admits(origin, &e.owner)) {
            e.port.event.do_send(ev.clone());
        }
    }

    pub fn len(&self) -> usize {
        self.sessions.reading().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
