#[test]
fn known_methods_are_borrowed_and_others_kept_as_sent() {
    assert!(matches!(known("tools/call"), std::borrow::Cow::Borrowed("tools/call")));
    assert!(matches!(known("vendor/thing"), std::borrow::Cow::Owned(ref m) if m == "vendor/thing"));
    assert_eq!(known("other"), "other");
}

use super::*;

/// Session "A" is person a's, and so on.
fn who(session: &str) -> Option<Arc<str>> {
    Some(Arc::from(session.to_lowercase()))
}

fn call(id: Value, token: Option<&str>) -> Value {
    let mut m = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "x"}});
    if let Some(t) = token {
        m["params"]["_meta"] = json!({"progressToken": t});
    }
    m
}

#[test]
fn same_host_ids_from_two_sessions_never_collide_and_map_back() {
    let mut r: Routes<u8> = Routes::default();
    let (mut a, mut b) = (call(json!(1), None), call(json!(1), None));
    let ua = r.outgoing(&"A".into(), who("A"), &mut a, 1);
    let ub = r.outgoing(&"B".into(), who("B"), &mut b, 2);
    assert_ne!(ua, ub);
    let mut answer = json!({"jsonrpc": "2.0", "id": ub, "result": {}});
    let p = r.answered(&mut answer).unwrap();
    assert_eq!((p.reply, p.session.as_deref(), &answer["id"]), (2, Some("B"), &json!(1)));
    assert!(r.answered(&mut json!({"jsonrpc": "2.0", "id": ub, "result": {}})).is_none(), "answered once");
}

#[test]
fn progress_tokens_are_unique_upstream_and_restored() {
    let mut r: Routes<()> = Routes::default();
    let (mut a, mut b) = (call(json!("q"), Some("tok")), call(json!("q"), Some("tok")));
    r.outgoing(&"A".into(), who("A"), &mut a, ());
    r.outgoing(&"B".into(), who("B"), &mut b, ());
    let (ta, tb) = (a["params"]["_meta"]["progressToken"].clone(), b["params"]["_meta"]["progressToken"].clone());
    assert_ne!(ta, tb);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": tb, "progress": 5}});
    let p = r.progress(&note).unwrap();
    assert_eq!((p.session.as_str(), &p.msg["params"]["progressToken"], &p.related), ("B", &json!("tok"), &json!("q")));
    r.answered(&mut json!({"jsonrpc": "2.0", "id": b["id"], "result": {}}));
    assert!(r.progress(&note).is_none(), "no progress after the answer");
}

#[test]
fn cancellation_names_the_upstream_id() {
    let mut r: Routes<()> = Routes::default();
    let mut a = call(json!(7), Some("t"));
    let up = r.outgoing(&"A".into(), who("A"), &mut a, ());
    assert_eq!(r.cancel(&"B".into(), &json!(7)), None, "another session cannot cancel it");
    assert_eq!(r.cancel(&"A".into(), &json!(7)), Some(json!(up)));
    assert!(r.answered(&mut json!({"jsonrpc": "2.0", "id": up, "result": {}})).is_none(), "a late answer is dropped");
}

#[test]
fn of_a_persons_requests_in_flight_the_newest_call_carries_what_names_none() {
    let mut r: Routes<()> = Routes::default();
    assert_eq!(r.newest_of(None), None);
    r.internal("tools/list", ());
    assert_eq!(r.newest_of(None), None, "the proxy's own requests are nobody's");
    let mut a = call(json!(1), None);
    r.outgoing(&"A".into(), who("A"), &mut a, ());
    let mut ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    // Another session of the same person.
    r.outgoing(&"A2".into(), who("A"), &mut ping, ());
    assert_eq!(r.newest_of(Some("a")), Some(("A".into(), json!(1))), "a tools/call wins over a newer ping");
    assert_eq!(r.newest_of(None), Some(("A".into(), json!(1))));
    assert_eq!(r.newest_of(Some("b")), None, "alice's requests are never bob's");
    let mut b = call(json!(1), None);
    r.outgoing(&"B".into(), who("B"), &mut b, ());
    assert_eq!(r.newest_of(Some("a")), Some(("A".into(), json!(1))), "bob's newer call does not make alice's anyone else's");
    assert_eq!(r.newest_of(Some("b")), Some(("B".into(), json!(1))));
    // A session whose person is not known is matched by no person.
    r.outgoing(&"X".into(), None, &mut call(json!(2), None), ());
    assert_eq!(r.newest_of(Some("x")), None);
    let id = r.server_request(&"A".into(), json!("up-5"));
    assert_eq!(r.server_request_cancelled(&json!("up-5")), Some(("A".to_string(), id.clone())));
    r.server_request_done(&id);
    assert_eq!(r.server_request_cancelled(&json!("up-5")), None);
}

#[test]
fn of_one_persons_requests_the_newest_call_asks() {
    // Many tables, each with its own hash order: the choice cannot come from the order.
    for _ in 0..20 {
        let mut r: Routes<()> = Routes::default();
        let ping = |id: u64| json!({"jsonrpc": "2.0", "id": format!("ping-{id}"), "method": "ping"});
        for i in 0..5 {
            r.outgoing(&"A".into(), who("A"), &mut ping(i), ());
        }
        r.outgoing(&"A".into(), who("A"), &mut call(json!("old call"), None), ());
        std::thread::sleep(Duration::from_millis(2));
        r.outgoing(&"A2".into(), who("A"), &mut call(json!("new call"), None), ());
        for i in 5..10 {
            r.outgoing(&"A".into(), who("A"), &mut ping(i), ());
        }
        assert_eq!(r.newest_of(Some("a")), Some(("A2".into(), json!("new call"))));
    }
}

/// Every way a call ends takes it out of what can carry a message at once: nothing of it
/// lingers for a while after (there is no window in which it still counts).
#[test]
fn a_call_that_ended_any_way_carries_nothing_more() {
    type End = fn(&mut Routes<()>, u64);
    let ends: [(&str, End); 6] = [
        ("answered", |r, up| drop(r.answered(&mut json!({"jsonrpc": "2.0", "id": up, "result": {}})))),
        ("cancelled", |r, _| drop(r.cancel(&"A".into(), &json!(1)))),
        ("given up", |r, up| drop(r.give_up(&json!(up)))),
        ("never sent", |r, up| drop(r.abandon(up))),
        ("session deleted", |r, _| r.drop_session(&"A".into())),
        ("expired", |r, _| assert_eq!(r.expired(Instant::now() + Duration::from_secs(121)).len(), 1)),
    ];
    for (how, end) in ends {
        let mut r: Routes<()> = Routes::default();
        let up = r.outgoing(&"A".into(), who("A"), &mut call(json!(1), None), ());
        assert_eq!(r.newest_of(Some("a")), Some(("A".into(), json!(1))), "{how}: in flight, it is hers");
        end(&mut r, up);
        assert_eq!(r.newest_of(Some("a")), None, "{how}: ended, it carries nothing");
        assert_eq!(r.newest_of(None), None, "{how}");
        assert_eq!(r.pending_len(), 0, "{how}");
        assert!(!r.is_pending(&json!(up)), "{how}");
    }
}

#[test]
fn what_a_task_asks_goes_to_whoever_waits_on_its_result_not_to_a_poll() {
    let mut r: Routes<()> = Routes::default();
    let mut wait = jsonrpc::request(json!("w"), "tasks/result", json!({"taskId": "t1"}));
    r.outgoing(&"W".into(), who("A"), &mut wait, ());
    std::thread::sleep(Duration::from_millis(2));
    let mut poll = jsonrpc::request(json!("p"), "tasks/get", json!({"taskId": "t1"}));
    r.outgoing(&"P".into(), who("A"), &mut poll, ());
    assert_eq!(r.waiting_on_task("t1", "a"), Some(("W".to_string(), json!("w"))), "the newer poll waits on nothing");
    assert_eq!(r.waiting_on_task("t1", "b"), None, "nor is another person's wait theirs");
}

#[test]
fn a_lost_link_fails_everything_once() {
    let mut r: Routes<u8> = Routes::default();
    r.internal("initialize", 1);
    r.outgoing(&"A".into(), who("A"), &mut call(json!(1), Some("t")), 2);
    let failed: Vec<u8> = r.fail_all().into_iter().map(|p| p.reply).collect();
    assert_eq!(failed.len(), 2);
    assert!(r.fail_all().is_empty() && r.newest_of(None).is_none());
}

#[test]
fn requests_expire_unless_progress_keeps_them_alive() {
    let mut r: Routes<u8> = Routes::new(Duration::from_millis(100));
    let mut quiet = call(json!(1), None);
    let quiet_up = r.outgoing(&"A".into(), who("A"), &mut quiet, 1);
    let mut busy = call(json!(2), Some("t"));
    r.outgoing(&"A".into(), who("A"), &mut busy, 2);
    let later = Instant::now() + Duration::from_millis(150);
    assert!(r.expired(Instant::now()).is_empty());
    std::thread::sleep(Duration::from_millis(60));
    let note = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": busy["params"]["_meta"]["progressToken"], "progress": 1}});
    assert!(r.progress(&note).is_some());
    let gone = r.expired(later);
    assert_eq!(gone.len(), 1, "only the request without progress expires");
    assert_eq!((gone[0].pending.reply, &gone[0].up_id), (1, &json!(quiet_up)));
    assert_eq!(r.host_of(&json!(quiet_up)), None);
    assert_eq!(r.host_of(&busy["id"]), Some(("A".to_string(), json!(2))));
    assert_eq!(r.pending_len(), 1);
}

#[test]
fn a_leaving_session_takes_its_routes() {
    let mut r: Routes<()> = Routes::default();
    let mut a = call(json!(1), Some("t"));
    let up = r.outgoing(&"A".into(), who("A"), &mut a, ());
    r.drop_session(&"A".into());
    assert!(r.answered(&mut json!({"jsonrpc": "2.0", "id": up, "result": {}})).is_none());
}

#[test]
fn a_task_a_call_made_is_the_hosts_when_it_asked_for_one_else_run_for_the_call() {
    let mut r: Routes<u8> = Routes::default();
    let (mut asked, mut plain) = (call(json!(1), None), call(json!(2), None));
    let ua = r.outgoing_kept(&"A".into(), who("A"), &mut asked, 1, true);
    let ub = r.outgoing_kept(&"B".into(), who("B"), &mut plain, 2, true);
    r.pass_task(ua);
    assert_eq!(r.task_answer(&json!(ua), "t-a"), TaskAnswer::Pass);
    assert_eq!(r.task_answer(&json!(ub), "t-b"), TaskAnswer::Run { session: "B".into(), request: plain.clone() });
    assert_eq!(r.task_answer(&json!(999), "t-x"), TaskAnswer::Unknown, "no call waits");
    let mut unkept = call(json!(3), None);
    let uc = r.outgoing_kept(&"C".into(), who("C"), &mut unkept, 3, false);
    assert_eq!(r.task_answer(&json!(uc), "t-c"), TaskAnswer::Unknown, "a call not kept cannot be run again");
}

#[test]
fn two_servers_never_ask_one_session_under_the_same_id() {
    let (mut web, mut mine): (Routes<u8>, Routes<u8>) = (Routes::default(), Routes::default());
    let a = web.server_request(&"A".into(), json!(1));
    let b = mine.server_request(&"A".into(), json!(1));
    assert_ne!(a, b, "the session's table of what it owes is keyed by this id alone");
}
