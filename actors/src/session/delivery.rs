//! Where a session's messages go: each request's own stream (while it is open), else the
//! session stream, else a bounded backlog until one opens; answers end their request's
//! stream once what waits in it has gone out. Outlets hold what a stream cannot take yet and
//! the pump moves it as the host reads (see `outlet`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::Value;

use super::{Era, HostSession, InFlight};
use crate::mcp::jsonrpc;
use crate::mcp::relayed::Relayed;
use crate::messages::{AttachStream, STREAM_BOUND};
use crate::session::access::NOT_ALLOWED;
use crate::session::outlet::{self, Outlet, Pump, Sent};

/// Messages kept for a Streamable HTTP session that has no stream open right now.
const BACKLOG_LIMIT: usize = 1000;

impl HostSession {
    pub(super) fn stream_full(&self, which: &str) {
        self.metrics.dropped_messages.with_label_values(&["host_stream_full"]).inc();
        tracing::warn!(component = "host_session", event = "stream_full", session = %self.log_id, stream = which, bound = STREAM_BOUND + outlet::OVERFLOW_MAX, "the host is not reading its stream; closing that stream");
    }

    /// A stream has messages waiting for room: pump them soon (not in this turn, so the edge
    /// gets to write what the channel holds).
    pub(super) fn schedule_pump(&mut self) {
        self.schedule_pump_in(Duration::from_millis(2));
    }

    pub(super) fn schedule_pump_in(&mut self, delay: Duration) {
        if self.pump_scheduled {
            return;
        }
        if let Some(addr) = self.self_addr.clone() {
            self.pump_scheduled = true;
            actix::spawn(async move {
                tokio::time::sleep(delay).await;
                addr.do_send(PumpStreams);
            });
        }
    }

    /// Messages waiting in all of this session's outlets.
    pub(super) fn waiting(&self) -> usize {
        let request = self.in_flight.values().filter_map(|f| f.sink.as_ref()).map(Outlet::waiting).sum::<usize>();
        self.default_sink.as_ref().map_or(0, Outlet::waiting) + request + self.draining.iter().map(Outlet::waiting).sum::<usize>()
    }

    /// Hands `msg` to an outlet. The message comes back when this stream cannot take it (the
    /// host closed it, or stopped reading and the stream is to be dropped): it goes elsewhere.
    pub(super) fn push(&mut self, outlet: &mut Outlet, msg: Value, which: &str) -> Option<Value> {
        let sent = outlet.send(msg);
        self.after_send(sent, which)
    }

    /// What an outlet did with a message: the message back when it must go elsewhere.
    fn after_send(&mut self, sent: Sent, which: &str) -> Option<Value> {
        match sent {
            Sent::Delivered => None,
            Sent::Queued => {
                self.schedule_pump();
                None
            }
            Sent::Closed(m) => Some(m),
            Sent::Overflowed(m) => {
                self.stream_full(which);
                Some(m)
            }
        }
    }

    /// To the session stream; kept in a bounded backlog while none is open. A session stream
    /// the host stopped reading is closed; what it missed waits in the backlog for the next one.
    pub(super) fn send_session(&mut self, msg: Value) {
        self.send_session_relayed(Relayed::Tree(msg));
    }

    /// [`HostSession::send_session`] for what may be a result kept as read: it goes as read
    /// when the session stream takes it at once, else as a tree.
    fn send_session_relayed(&mut self, msg: Relayed) {
        if let Era::Stateless(call) = &self.era {
            let msg = msg.into_value();
            // A stateless host has no session stream: only a listener hears of changes, on
            // its listen request's stream, and only while that stream is open (never back
            // here: a listen whose stream went would pass the message round for ever).
            if let Some((msg, id)) = call.for_listener(msg) {
                if self.in_flight.get(jsonrpc::key_of(&id).as_str()).is_some_and(|f| f.sink.is_some()) {
                    self.send_related(msg, Some(&id));
                }
            }
            return;
        }
        let msg = match self.default_sink.take() {
            Some(mut o) => {
                let sent = o.send_relayed(msg);
                match self.after_send(sent, "session") {
                    None => {
                        self.default_sink = Some(o);
                        return;
                    }
                    // Closed by the host, or overflowed (the stream is dropped): kept here.
                    Some(m) => m,
                }
            }
            None => msg.into_value(),
        };
        self.backlog.push_back(msg);
        while self.backlog.len() > BACKLOG_LIMIT {
            self.backlog.pop_front();
        }
    }

    /// To the stream of the host request `related` if it is still open, else the session stream.
    /// Progress for a request already answered is dropped: it must never follow the answer.
    pub(super) fn send_related(&mut self, mut msg: Value, related: Option<&Value>) {
        if let Some(c) = self.call() {
            if !c.allows(&msg) {
                return;
            }
            c.progress_of_leg(&mut msg);
        }
        let Some(r) = related else {
            return self.send_session(msg);
        };
        let key = jsonrpc::id_key(r);
        let Some(f) = self.in_flight.get_mut(&key) else {
            if jsonrpc::method(&msg) == Some("notifications/progress") {
                self.metrics.dropped_messages.with_label_values(&["late_progress"]).inc();
                return;
            }
            return self.send_session(msg);
        };
        // A request answered as plain JSON has no room for what its server says meanwhile:
        // the session stream takes it (a stateless request has none: it asked for no stream).
        if f.sink.as_ref().is_some_and(Outlet::carries_only_answers) {
            return match self.call() {
                Some(_) => tracing::debug!(
                    component = "host_session",
                    event = "not_on_plain_answer",
                    "a message for a plain-JSON stateless request has nowhere to go"
                ),
                None => self.send_session(msg),
            };
        }
        let Some(mut outlet) = f.sink.take() else {
            return self.send_session(msg);
        };
        let Some(back) = self.push(&mut outlet, msg, "request") else {
            if let Some(f) = self.in_flight.get_mut(&key) {
                f.sink = Some(outlet);
            }
            return;
        };
        match self.call_mut() {
            // A stateless host has only this stream: it going means the host hung up.
            Some(call) => call.hung_up = true,
            None => self.send_session(back),
        }
    }

    /// Takes a request out of those in flight. The table's room goes with the last one: an
    /// idle session holds none (thousands of sessions each kept room for a few requests, 2 KB).
    pub(super) fn end_in_flight(&mut self, key: &str) -> Option<InFlight> {
        let f = self.in_flight.remove(key);
        if self.in_flight.is_empty() {
            self.in_flight = HashMap::new();
        }
        f
    }

    /// Sends the answer for a host request and closes that request's stream (once whatever
    /// waits in it has gone out).
    pub(super) fn answer(&mut self, answer: Value) {
        self.answer_relayed(Relayed::Tree(answer));
    }

    /// [`HostSession::answer`] for an answer that may be a plain result kept as read: it goes
    /// out so to a stream that takes it at once; any other way takes the tree.
    pub(super) fn answer_relayed(&mut self, answer: Relayed) {
        let id = match &answer {
            Relayed::Tree(v) => jsonrpc::id(v),
            Relayed::Raw(r) => Some(&r.id),
        };
        let Some(f) = id.and_then(|id| self.end_in_flight(&jsonrpc::key_of(id))) else {
            return; // no id, or cancelled meanwhile: the host asked us not to answer
        };
        let stateless = self.call().is_some();
        // A stateless call's answer may be held or reshaped: that takes the tree.
        let answer = match answer {
            Relayed::Raw(raw) if !stateless => Relayed::Raw(raw),
            other => Relayed::Tree(other.into_value()),
        };
        if let Relayed::Tree(tree) = &answer {
            if f.sink.is_none() && self.call_mut().is_some_and(|c| c.hold(tree)) {
                f.span.set(crate::trace::attr::OUTCOME, "parked");
                if let Some(line) = f.audit {
                    line.finish("input_required");
                }
                return; // parked: the host's retry gets it
            }
        }
        let answer = match answer {
            Relayed::Tree(tree) if stateless => Relayed::Tree(self.stateless_answer(tree)),
            other => other,
        };
        let denied = |tree: &Value| jsonrpc::get(tree, "error").and_then(|e| e.get("code")).and_then(Value::as_i64) == Some(NOT_ALLOWED);
        let (audited, outcome) = match &answer {
            _ if f.limited => ("limited", "ok"),
            Relayed::Tree(tree) if denied(tree) => ("error", "denied"),
            Relayed::Tree(tree) => (crate::audit::outcome_of(tree), if jsonrpc::get(tree, "error").is_some() { "error" } else { "ok" }),
            Relayed::Raw(raw) => (if raw.is_error() { "tool_error" } else { "ok" }, "ok"),
        };
        if let Some(line) = f.audit {
            line.finish(audited);
        }
        self.metrics.requests.with_label_values(&[f.method, outcome]).inc();
        if let Some(tool) = &f.tool {
            let by_tool = if outcome == "denied" { outcome } else { audited };
            tool.ended(by_tool, f.started.elapsed().as_secs_f64());
        }
        super::spans::finish_relayed(&f.span, &answer);
        let trace_id = f.span.cx().trace_id();
        tracing::info!(component = "host_session", event = "request_done", requestId = %f.request_id, trace_id = trace_id.as_deref(), session = %self.log_id, method = f.method, outcome, duration_ms = f.started.elapsed().as_millis() as u64, "request answered");
        let Some(mut outlet) = f.sink else {
            return self.send_session_relayed(answer);
        };
        let sent = outlet.send_relayed(answer);
        match self.after_send(sent, "request") {
            None if outlet.backlogged() => self.draining.push(outlet),
            None => {} // dropping the outlet ends the stream after the answer
            Some(m) => self.send_session(m),
        }
        if stateless {
            // The call is over; the session goes once its answer has left.
            self.stateless_finish();
        }
    }
}

impl Handler<AttachStream> for HostSession {
    type Result = ();

    fn handle(&mut self, a: AttachStream, _ctx: &mut Self::Context) {
        self.last_seen = Instant::now();
        let mut outlet = Outlet::new(a.sink);
        let backlog: Vec<Value> = self.backlog.drain(..).collect();
        for m in backlog {
            if self.push(&mut outlet, m, "session").is_some() {
                return;
            }
        }
        self.default_sink = Some(outlet);
    }
}

/// Moves what waits in the session's streams into them as the host reads (see `outlet`).
struct PumpStreams;

impl Message for PumpStreams {
    type Result = ();
}

impl Handler<PumpStreams> for HostSession {
    type Result = ();

    fn handle(&mut self, _: PumpStreams, _ctx: &mut Self::Context) {
        self.pump_scheduled = false;
        let before = self.waiting();
        let mut waiting = false;
        let mut gone = 0;
        // A stream that stalled past its limit is dropped (which ends it).
        let mut pump = |slot: &mut Option<Outlet>| match slot.as_mut().map(Outlet::pump) {
            Some(Pump::Waiting) => waiting = true,
            Some(Pump::Gone) => {
                *slot = None;
                gone += 1;
            }
            Some(Pump::Drained) | None => {}
        };
        pump(&mut self.default_sink);
        for f in self.in_flight.values_mut() {
            pump(&mut f.sink);
        }
        self.draining.retain_mut(|o| match o.pump() {
            Pump::Waiting => {
                waiting = true;
                true
            }
            Pump::Drained => false,
            Pump::Gone => {
                gone += 1;
                false
            }
        });
        for _ in 0..gone {
            self.stream_full("stalled");
        }
        if self.draining.is_empty() {
            self.stateless_drained();
        }
        if waiting {
            // A host that is reading gets the rest soon; one that is not is checked rarely
            // (until the stall limit closes its stream), not hundreds of times a second.
            let moved = self.waiting() < before;
            self.schedule_pump_in(Duration::from_millis(if moved { 2 } else { 100 }));
        }
    }
}
