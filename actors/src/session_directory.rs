//! `SessionDirectory`: owns the map from session id to `HostSession` for the HTTP edges, so that
//! a POST can find the session a header or query names.

use std::collections::HashMap;

use actix::prelude::*;

use crate::host_session::{Close, HostSession};
use crate::upstream_connection::SessionId;

#[derive(Default)]
pub struct SessionDirectory {
    sessions: HashMap<SessionId, Addr<HostSession>>,
}

impl Actor for SessionDirectory {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct Insert {
    pub id: SessionId,
    pub addr: Addr<HostSession>,
}

impl Handler<Insert> for SessionDirectory {
    type Result = ();

    fn handle(&mut self, m: Insert, _ctx: &mut Self::Context) {
        self.sessions.insert(m.id, m.addr);
    }
}

#[derive(Message)]
#[rtype(result = "Option<Addr<HostSession>>")]
pub struct Lookup {
    pub id: SessionId,
}

impl Handler<Lookup> for SessionDirectory {
    type Result = Option<Addr<HostSession>>;

    fn handle(&mut self, m: Lookup, _ctx: &mut Self::Context) -> Self::Result {
        self.sessions.get(&m.id).filter(|a| a.connected()).cloned()
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
        for (_, a) in self.sessions.drain() {
            a.do_send(Close);
        }
        n
    }
}
