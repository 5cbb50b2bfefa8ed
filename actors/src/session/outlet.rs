//! One stream to a host, with room for bursts. The edge drains the stream's channel
//! (`STREAM_BOUND` messages) as fast as the host reads; a burst larger than that (a hundred calls
//! answered at once, each with its progress) waits here, in order, and is pumped into the channel
//! as room frees. Only a host that stops reading loses its stream: when the overflow passes
//! `OVERFLOW_MAX` messages, or nothing has moved for `STALL`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc::error::TrySendError;

use crate::mcp::relayed::Relayed;
use crate::messages::Sink;

/// Messages that may wait beyond the channel's own bound.
pub const OVERFLOW_MAX: usize = 4096;
/// A stream whose host has taken nothing for this long, with messages waiting, is closed.
pub const STALL: Duration = Duration::from_secs(30);

pub struct Outlet {
    sink: Sink,
    overflow: VecDeque<Value>,
    /// Since when the overflow has not moved.
    stalled_since: Option<Instant>,
}

/// What became of a message.
#[derive(Debug, PartialEq)]
pub enum Sent {
    /// In the channel, for the edge to write.
    Delivered,
    /// Waiting here for room (call [`Outlet::pump`] later).
    Queued,
    /// The host closed the stream: the message comes back to go elsewhere.
    Closed(Value),
    /// The host is not reading: close this stream (drop the outlet); the message comes back.
    Overflowed(Value),
}

/// What a pump did.
#[derive(Debug, PartialEq)]
pub enum Pump {
    /// Nothing waits any more.
    Drained,
    /// Messages still wait for room.
    Waiting,
    /// The host took nothing for `STALL`, or closed the stream: drop the outlet.
    Gone,
}

impl Outlet {
    pub fn new(sink: Sink) -> Self {
        Outlet { sink, overflow: VecDeque::new(), stalled_since: None }
    }

    /// Its edge writes one plain-JSON body: answers only (see [`Sink::answers_only`]).
    pub fn carries_only_answers(&self) -> bool {
        self.sink.carries_only_answers()
    }

    pub fn is_closed(&self) -> bool {
        self.sink.is_closed()
    }

    /// How many messages wait here for room.
    pub fn waiting(&self) -> usize {
        self.overflow.len()
    }

    /// Whether messages wait here for room.
    pub fn backlogged(&self) -> bool {
        !self.overflow.is_empty()
    }

    pub fn send(&mut self, msg: Value) -> Sent {
        if !self.overflow.is_empty() {
            // Behind what already waits: order is kept.
            if self.overflow.len() >= OVERFLOW_MAX {
                return Sent::Overflowed(msg);
            }
            self.overflow.push_back(msg);
            return Sent::Queued;
        }
        match self.sink.try_send(msg) {
            Ok(()) => Sent::Delivered,
            Err(TrySendError::Closed(m)) => Sent::Closed(m),
            Err(TrySendError::Full(m)) => {
                self.overflow.push_back(m);
                self.stalled_since = Some(Instant::now());
                Sent::Queued
            }
        }
    }

    /// [`Outlet::send`] for an answer that may be a result kept as read: it goes as read when
    /// the channel takes it at once; waiting here or coming back, it is a tree.
    pub fn send_relayed(&mut self, msg: Relayed) -> Sent {
        if !self.overflow.is_empty() || matches!(msg, Relayed::Tree(_)) {
            return self.send(msg.into_value());
        }
        match self.sink.try_send_relayed(msg) {
            Ok(()) => Sent::Delivered,
            Err(TrySendError::Closed(m)) => Sent::Closed(m.into_value()),
            Err(TrySendError::Full(m)) => {
                self.overflow.push_back(m.into_value());
                self.stalled_since = Some(Instant::now());
                Sent::Queued
            }
        }
    }

    /// Moves waiting messages into the channel while it has room.
    pub fn pump(&mut self) -> Pump {
        let mut moved = false;
        while let Some(m) = self.overflow.pop_front() {
            match self.sink.try_send(m) {
                Ok(()) => moved = true,
                Err(TrySendError::Full(m)) => {
                    self.overflow.push_front(m);
                    break;
                }
                Err(TrySendError::Closed(_)) => return Pump::Gone,
            }
        }
        if self.overflow.is_empty() {
            self.stalled_since = None;
            return Pump::Drained;
        }
        if moved {
            self.stalled_since = Some(Instant::now());
        }
        if self.stalled_since.is_some_and(|t| t.elapsed() >= STALL) {
            return Pump::Gone;
        }
        Pump::Waiting
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_burst_waits_in_order_and_drains_as_the_host_reads() {
        let (tx, mut rx) = crate::messages::sink_channel_of(2);
        let mut o = Outlet::new(tx);
        let sent: Vec<Sent> = (0..5).map(|i| o.send(json!(i))).collect();
        assert_eq!(sent, [Sent::Delivered, Sent::Delivered, Sent::Queued, Sent::Queued, Sent::Queued]);
        assert_eq!(o.pump(), Pump::Waiting, "no room yet");
        let mut got = vec![rx.try_recv().unwrap(), rx.try_recv().unwrap()];
        assert_eq!(o.pump(), Pump::Waiting);
        got.extend([rx.try_recv().unwrap(), rx.try_recv().unwrap()]);
        assert_eq!(o.pump(), Pump::Drained);
        got.push(rx.try_recv().unwrap());
        assert_eq!(got, (0..5).map(|i| json!(i)).collect::<Vec<_>>(), "order is kept");
    }

    #[test]
    fn a_host_that_never_reads_overflows() {
        let (tx, _rx) = crate::messages::sink_channel_of(1);
        let mut o = Outlet::new(tx);
        assert_eq!(o.send(json!(0)), Sent::Delivered);
        for i in 0..OVERFLOW_MAX {
            assert_eq!(o.send(json!(i)), Sent::Queued);
        }
        assert_eq!(o.send(json!("one too many")), Sent::Overflowed(json!("one too many")));
    }

    #[test]
    fn a_closed_stream_gives_the_message_back() {
        let (tx, rx) = crate::messages::sink_channel_of(1);
        drop(rx);
        let mut o = Outlet::new(tx);
        assert_eq!(o.send(json!(1)), Sent::Closed(json!(1)));
        assert!(o.is_closed());
    }
}
