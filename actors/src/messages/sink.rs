//! The stream a session writes toward a host, and the edge's end of it.

use serde_json::Value;

use crate::mcp::relayed::Relayed;
use tokio::sync::mpsc;

/// Where a session's outgoing messages are written by the edge. Bounded: a host that does not
/// read its stream has that stream closed, never unbounded memory. Each message is boxed in
/// the channel: its first block is 32 slots, taken when the stream opens, and 32 pointers are
/// 256 bytes where 32 values were 2.3 KB for every open stream, read or not.
#[derive(Debug, Clone)]
pub struct Sink(mpsc::Sender<Box<Relayed>>, bool);

impl Sink {
    /// The same stream, which the edge writes as one plain-JSON body: it carries answers only,
    /// so what else a request's server says goes elsewhere (the session stream), never lost
    /// in a body that has no room for it.
    pub fn answers_only(self) -> Sink {
        Sink(self.0, true)
    }

    pub fn carries_only_answers(&self) -> bool {
        self.1
    }

    pub fn try_send(&self, msg: Value) -> Result<(), mpsc::error::TrySendError<Value>> {
        use mpsc::error::TrySendError::{Closed, Full};
        self.try_send_relayed(Relayed::Tree(msg)).map_err(|e| match e {
            Full(m) => Full(m.into_value()),
            Closed(m) => Closed(m.into_value()),
        })
    }

    /// A message, or an answer with its result as read (`mcp::relayed`).
    pub fn try_send_relayed(&self, msg: Relayed) -> Result<(), mpsc::error::TrySendError<Relayed>> {
        use mpsc::error::TrySendError::{Closed, Full};
        self.0.try_send(Box::new(msg)).map_err(|e| match e {
            Full(m) => Full(*m),
            Closed(m) => Closed(*m),
        })
    }

    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }

    /// Done once the edge has stopped reading (the host went away).
    pub async fn closed(&self) {
        self.0.closed().await
    }
}

/// The edge's end of a [`Sink`].
#[derive(Debug)]
pub struct SinkRx(mpsc::Receiver<Box<Relayed>>);

impl SinkRx {
    pub async fn recv(&mut self) -> Option<Value> {
        self.0.recv().await.map(|m| m.into_value())
    }

    /// [`SinkRx::recv`] for a reader that writes a result as read without its tree.
    pub async fn recv_relayed(&mut self) -> Option<Relayed> {
        self.0.recv().await.map(|m| *m)
    }

    pub fn try_recv(&mut self) -> Result<Value, mpsc::error::TryRecvError> {
        self.0.try_recv().map(|m| m.into_value())
    }
}

/// Messages one stream may hold unread before it is closed.
pub const STREAM_BOUND: usize = 1024;

/// A new stream for the edge to write out.
pub fn sink_channel() -> (Sink, SinkRx) {
    let (tx, rx) = mpsc::channel(STREAM_BOUND);
    (Sink(tx, false), SinkRx(rx))
}

/// A stream of `bound` messages (tests of a host that reads slowly).
#[cfg(test)]
pub(crate) fn sink_channel_of(bound: usize) -> (Sink, SinkRx) {
    let (tx, rx) = mpsc::channel(bound);
    (Sink(tx, false), SinkRx(rx))
}
