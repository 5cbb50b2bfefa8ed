use serde_json::json;

use super::*;

fn counter() -> IntCounter {
    IntCounter::new("dropped", "dropped").unwrap()
}

#[test]
fn a_line_is_one_json_object_with_the_digest_not_the_arguments() {
    let who = Who::new(Arc::from("k"), Arc::from("alice"), Arc::new(json!({})), false);
    let e = Entry::new(Event::ToolCall, &who).tool("weather__get_forecast").args(Some(&json!({"city": "Oslo"})), false);
    let line = e.to_line();
    assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["event"], "tool_call");
    assert_eq!(v["principal"], "alice");
    assert!(v.get("args").is_none() && !line.contains("Oslo"), "{line}");
    assert_eq!(v["args_sha256"].as_str().unwrap().len(), 64);
    assert!(v["time"].as_str().unwrap().ends_with('Z'));
    let whole = Entry::new(Event::ToolCall, &who).args(Some(&json!({"city": "Oslo"})), true);
    assert_eq!(whole.args, Some(json!({"city": "Oslo"})));
}

#[test]
fn a_full_queue_drops_and_counts_never_waits() {
    let dropped = counter();
    let (audit, feed) = Audit::start(2, false, false, dropped.clone());
    for _ in 0..5 {
        audit.record(Entry::system(Event::ConfigReload, "x"));
    }
    assert_eq!(dropped.get(), 3);
    assert_eq!(feed.rx.try_iter().count(), 2);
}

#[test]
fn required_refuses_while_a_write_is_stuck_and_admits_once_it_returns() {
    let (audit, feed) = Audit::start(100, true, false, counter());
    let who = Who::anonymous();
    feed.writing(true);
    assert!(audit.admit(Entry::new(Event::ToolCall, &who)).is_ok(), "a write under way is no stall yet");
    // A write that began longer ago than STALLED_AFTER and has not returned.
    let long_ago = crate::messages::monotonic_ms() - STALLED_AFTER.as_millis() as u64 - 1;
    audit.inner.as_ref().unwrap().writing_since_ms.store(long_ago, Ordering::Release);
    assert_eq!(audit.admit(Entry::new(Event::ToolCall, &who)).unwrap_err(), Unavailable, "a sink that blocks is unwritable");
    feed.writing(false);
    assert!(audit.admit(Entry::new(Event::ToolCall, &who)).is_ok());
    let (best_effort, feed) = Audit::start(100, false, false, counter());
    best_effort.inner.as_ref().unwrap().writing_since_ms.store(long_ago, Ordering::Release);
    assert!(best_effort.admit(Entry::new(Event::ToolCall, &who)).is_ok(), "not required: calls go on");
    drop(feed);
}

#[test]
fn required_reserves_a_place_and_refuses_when_unwritable() {
    let (audit, feed) = Audit::start(1, true, false, counter());
    let who = Who::anonymous();
    let first = audit.admit(Entry::new(Event::ToolCall, &who)).unwrap().unwrap();
    assert_eq!(audit.admit(Entry::new(Event::ToolCall, &who)).unwrap_err(), Unavailable, "the one place is taken");
    first.finish("ok");
    let line = feed.rx.try_recv().unwrap();
    assert_eq!(line.outcome, "ok");
    feed.done(&[*line]);
    feed.set_healthy(false);
    assert!(audit.admit(Entry::new(Event::ToolCall, &who)).is_err());
    feed.set_healthy(true);
    let again = audit.admit(Entry::new(Event::ToolCall, &who)).unwrap();
    drop(again);
    assert_eq!(feed.rx.try_recv().unwrap().outcome, "abandoned", "a call that never ends is still written");
}

/// With several people, bob's flood fills his own share of the queue: his lines are dropped
/// (required: his calls refused) while alice's still find room (issue 60, item 5).
#[test]
fn one_persons_flood_takes_only_their_share_of_the_queue() {
    let (bob, alice) = (
        Who::new(Arc::from("kb"), Arc::from("bob"), Arc::new(json!({})), false),
        Who::new(Arc::from("ka"), Arc::from("alice"), Arc::new(json!({})), false),
    );
    let dropped = counter();
    let (audit, feed) = Audit::start(100, false, false, dropped.clone());
    audit.share_per_person();
    for _ in 0..1000 {
        audit.record(Entry::new(Event::Notification, &bob));
    }
    assert_eq!(dropped.get(), 975, "a quarter of the queue is his");
    for _ in 0..10 {
        audit.record(Entry::new(Event::ToolCall, &alice));
    }
    assert_eq!(dropped.get(), 975, "none of alice's is dropped");
    let queued: Vec<Entry> = feed.rx.try_iter().map(|e| *e).collect();
    assert_eq!(queued.iter().filter(|e| &*e.principal == "alice").count(), 10);
    feed.done(&queued);
    assert_eq!(feed.pending(), 0, "written: every place given back");
    // Required: his calls are refused once his share is held, hers admitted.
    let (required, _feed) = Audit::start(8, true, false, counter());
    required.share_per_person();
    let held: Vec<Pending> = (0..2).map(|_| required.admit(Entry::new(Event::ToolCall, &bob)).unwrap().unwrap()).collect();
    assert_eq!(required.admit(Entry::new(Event::ToolCall, &bob)).unwrap_err(), Unavailable, "the flooder is refused first");
    assert!(required.admit(Entry::new(Event::ToolCall, &alice)).is_ok());
    drop(held);
    // Without people told apart, one person may use the whole queue.
    let (one, _f) = Audit::start(8, true, false, counter());
    let all: Vec<Pending> = (0..8).map(|_| one.admit(Entry::new(Event::ToolCall, &bob)).unwrap().unwrap()).collect();
    assert_eq!(all.len(), 8);
}
