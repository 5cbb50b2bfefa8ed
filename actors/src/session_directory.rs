//! `SessionDirectory`: owns the map from session id to `HostSession` for the HTTP edges, so that
//! a POST can find the session a header or query names.

use std::collections::HashMap;

use actix::prelude::*;

use crate::host_session::{Close, HostSession};
use crate::upstream_connection::SessionId;

/// A session as the edges see it: where to send, and whether its answers may need a stream.
#[derive(Clone)]
pub struct SessionRef {
    pub addr: Addr<HostSession>,
    /// Set once the host declared sampling, elicitation or roots (see `HostSession::streams_flag`).
    pub streams: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

#[derive(Default)]
pub struct SessionDirectory {
    sessions: HashMap<SessionId, SessionRef>,
    metrics: Option<std::sync::Arc<crate::metrics::Metrics>>,
}

impl SessionDirectory {
    pub fn new(metrics: std::sync::Arc<crate::metrics::Metrics>) -> Self {
        SessionDirectory { sessions: HashMap::new(), metrics: Some(metrics) }
    }
}

impl Actor for SessionDirectory {
    type Context = Context<Self>;
}

impl Supervised for SessionDirectory {
    fn restarting(&mut self, _ctx: &mut Self::Context) {
        if let Some(m) = &self.metrics {
            crate::contain::note_restart("session_directory", m);
        }
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct Insert {
    pub id: SessionId,
    pub session: SessionRef,
}

impl Handler<Insert> for SessionDirectory {
    type Result = ();

    fn handle(&mut self, m: Insert, _ctx: &mut Self::Context) {
        self.sessions.insert(m.id, m.session);
    }
}

#[derive(Message)]
#[rtype(result = "Option<SessionRef>")]
pub struct Lookup {
    pub id: SessionId,
}

impl Handler<Lookup> for SessionDirectory {
    type Result = Option<SessionRef>;

    fn handle(&mut self, m: Lookup, _ctx: &mut Self::Context) -> Self::Result {
        self.sessions.get(&m.id).filter(|s| s.addr.connected()).cloned()
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct Remove {
    pub id: SessionId,
}

impl Handler<Remove> for SessionDirectory {
    type Result = ();

    fn handle(&mut self, m: Remove, _ctx: &mut Self::Context) {
        self.sessions.remove(&m.id);
    }
}

/// Closes every session (shutdown).
#[derive(Message)]
#[rtype(result = "usize")]
pub struct CloseAll;

impl Handler<CloseAll> for SessionDirectory {
    type Result = usize;

    fn handle(&mut self, _: CloseAll, _ctx: &mut Self::Context) -> usize {
        let n = self.sessions.len();
        for (_, s) in self.sessions.drain() {
            s.addr.do_send(Close);
        }
        n
    }
}
