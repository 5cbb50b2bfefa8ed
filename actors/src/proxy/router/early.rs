//! What a server says of a task before the service knows the task: servers may send a task's
//! first status (server-everything: "Gathering sources") before the `tools/call` answer that
//! names the task, so at that moment it names a task no one has. Held here briefly, by the
//! server's own id, and handed to the task's maker once its call's answer made the task: whose
//! it is is then known by construction (the one call whose answer named it), never guessed.
//! What no answer claims in time goes to no one, as any unknown task's words do.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a message waits for the answer that names its task (the answer follows within
/// milliseconds; this leaves room for a loaded machine).
pub const HOLD_FOR: Duration = Duration::from_secs(3);
/// Messages held at most per server (a server that names tasks it never makes fills only this).
pub const MAX_HELD: usize = 64;

/// A status held is at most this large (a status is a few hundred bytes; a server cannot make
/// the service hold its largest messages by naming tasks it never made).
const MAX_BYTES: usize = 4096;

/// Whether `msg` is small enough to hold.
pub fn small(msg: &Value) -> bool {
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, msg).is_ok() && counter.0 <= MAX_BYTES
}

/// Counts bytes, and stops the writer past the bound.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        if self.0 > MAX_BYTES {
            return Err(std::io::Error::other("too large to hold"));
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Held {
    upstream: String,
    /// `log` or `notification`, as metrics count what goes to no one.
    kind: &'static str,
    at: Instant,
    msg: Value,
}

/// The messages held for tasks not yet made, oldest first.
#[derive(Default)]
pub struct Early {
    held: VecDeque<Held>,
}

impl Early {
    /// Holds `msg` (of `kind`) naming the server's task `upstream`; returns the kinds of the
    /// held ones that made room (each goes to no one).
    pub fn hold(&mut self, upstream: &str, kind: &'static str, msg: Value, now: Instant) -> Vec<&'static str> {
        let mut dropped = self.expire(now);
        while self.held.len() >= MAX_HELD {
            dropped.extend(self.held.pop_front().map(|h| h.kind));
        }
        self.held.push_back(Held { upstream: upstream.to_string(), kind, at: now, msg });
        dropped
    }

    /// Takes what was held for `upstream`, in the order the server said it.
    pub fn take(&mut self, upstream: &str) -> Vec<Value> {
        if !self.held.iter().any(|h| h.upstream == upstream) {
            return Vec::new();
        }
        let (theirs, rest): (VecDeque<Held>, VecDeque<Held>) = self.held.drain(..).partition(|h| h.upstream == upstream);
        self.held = rest;
        theirs.into_iter().map(|h| h.msg).collect()
    }

    /// Lets go of what waited [`HOLD_FOR`]; returns their kinds (each goes to no one).
    pub fn expire(&mut self, now: Instant) -> Vec<&'static str> {
        let mut gone = Vec::new();
        while self.held.front().is_some_and(|h| now.duration_since(h.at) >= HOLD_FOR) {
            gone.extend(self.held.pop_front().map(|h| h.kind));
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_is_held_goes_to_the_task_it_names_in_order_and_only_once() {
        let mut e = Early::default();
        let now = Instant::now();
        e.hold("t-1", "notification", json!(1), now);
        e.hold("t-2", "log", json!("other"), now);
        e.hold("t-1", "notification", json!(2), now);
        assert_eq!(e.take("t-1"), vec![json!(1), json!(2)]);
        assert!(e.take("t-1").is_empty(), "taken once");
        assert!(e.take("t-3").is_empty(), "nothing named it");
        assert_eq!(e.take("t-2"), vec![json!("other")]);
    }

    #[test]
    fn what_no_answer_claims_in_time_goes_to_no_one() {
        let mut e = Early::default();
        let now = Instant::now();
        e.hold("t-1", "notification", json!(1), now);
        e.hold("t-2", "log", json!(2), now + HOLD_FOR / 2);
        assert!(e.expire(now + HOLD_FOR - Duration::from_millis(1)).is_empty(), "not yet");
        assert_eq!(e.expire(now + HOLD_FOR), vec!["notification"]);
        assert!(e.take("t-1").is_empty(), "let go");
        assert_eq!(e.take("t-2"), vec![json!(2)], "the younger one still waits");
    }

    #[test]
    fn only_a_small_message_is_held() {
        assert!(small(&json!({"method": "notifications/tasks/status", "params": {"taskId": "t", "statusMessage": "x".repeat(1000)}})));
        assert!(!small(&json!({"params": {"statusMessage": "x".repeat(MAX_BYTES)}})));
    }

    #[test]
    fn a_server_naming_tasks_it_never_makes_fills_only_its_bound() {
        let mut e = Early::default();
        let now = Instant::now();
        let dropped: usize = (0..MAX_HELD + 10).map(|i| e.hold(&format!("t-{i}"), "log", json!(i), now).len()).sum();
        assert_eq!(dropped, 10, "the oldest make room");
        assert!(e.take("t-0").is_empty());
        assert_eq!(e.take(&format!("t-{}", MAX_HELD + 9)).len(), 1);
        assert_eq!(e.held.len(), MAX_HELD - 1);
    }
}
