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
    assert_eq!(feed.rx.try_recv().unwrap().outcome, "ok");
    feed.done(1);
    feed.set_healthy(false);
    assert!(audit.admit(Entry::new(Event::ToolCall, &who)).is_err());
    feed.set_healthy(true);
    let again = audit.admit(Entry::new(Event::ToolCall, &who)).unwrap();
    drop(again);
    assert_eq!(feed.rx.try_recv().unwrap().outcome, "abandoned", "a call that never ends is still written");
}
