use super::*;
use std::sync::Arc;

fn new<'a>(owner: &str, upstream: &'a str, prefix: Option<&'a str>) -> NewTask<'a> {
    NewTask {
        prefix,
        server: Arc::from("s"),
        upstream,
        owner: Arc::from(owner),
        session: "S",
        tool: "research",
        ttl_ms: Some(60_000),
        bridge: None,
    }
}

#[test]
fn a_task_is_its_makers_and_anyone_elses_is_no_task_at_all() {
    let t = Tasks::default();
    let id = t.created(new("alice", "t-1", None)).unwrap();
    assert_eq!(id, "t-1", "one server: the server's own id");
    assert!(t.owned("t-1", "alice").is_some());
    assert_eq!(t.owned("t-1", "bob"), None, "bob's view of alice's task is an unknown id's");
    assert_eq!(t.owned("t-2", "bob"), None);
    assert_eq!(t.of_upstream("s", "t-1").unwrap().owner.as_ref(), "alice");
    assert!(t.owned_on("s", "bob").is_empty() && t.owned_on("s", "alice").contains_key("t-1"));
}

#[test]
fn with_several_servers_ids_are_named_by_server_and_never_taken_over() {
    let t = Tasks::default();
    assert_eq!(t.created(new("alice", "7", Some("a"))).unwrap(), "a:7");
    assert_eq!(t.created(new("bob", "7", Some("b"))).unwrap(), "b:7", "the same id on another server is another task");
    assert_eq!(t.created(new("bob", "7", Some("a"))), Err(NotKept::Unusable), "a server that hands out alice's id again gives bob nothing");
    assert!(t.owned("a:7", "alice").is_some());
    assert_eq!(t.created(new("alice", &"x".repeat(300), None)), Err(NotKept::Unusable), "an id too long is not taken");
}

/// bob floods: his own oldest make room for his newest; alice's are untouched, and the cost
/// of each of his is bounded by his share, not the table (issue 60, item 1).
#[test]
fn a_persons_flood_makes_room_from_their_own_tasks_only() {
    let t = Tasks::default();
    t.set_limits(TaskLimits { per_person: 50, watches_per_person: 4 });
    let alice: Vec<String> = (0..3).map(|i| t.created(new("alice", &format!("a{i}"), None)).unwrap()).collect();
    for i in 0..5_000 {
        t.created(new("bob", &format!("b{i}"), None)).unwrap();
    }
    assert_eq!((t.count_of("bob"), t.count_of("alice")), (50, 3));
    assert!(alice.iter().all(|a| t.owned(a, "alice").is_some()), "every one of alice's tasks is still hers");
    assert!(t.owned("b0", "bob").is_none() && t.owned("b4999", "bob").is_some(), "bob's oldest went, his newest stayed");
    assert_eq!(t.of_upstream("s", "b0"), None, "what named his evicted task names nothing now");
    assert_eq!(t.len(), 53);
    // Forgetting frees the share, and a task made again by its owner stays theirs.
    t.forget("b4999");
    assert_eq!(t.count_of("bob"), 49);
    assert!(t.created(new("alice", "a0", None)).is_ok());
    assert_eq!(t.count_of("alice"), 3);
}

#[test]
fn a_bridged_task_is_never_the_hosts_to_list() {
    let t = Tasks::default();
    t.created(new("alice", "listed", None)).unwrap();
    let mut bridged = new("alice", "bridged", None);
    bridged.bridge = Some(Bridge { host_request: serde_json::json!(1), progress_token: None });
    t.created(bridged).unwrap();
    let listed = t.owned_on("s", "alice");
    assert!(listed.contains_key("listed") && !listed.contains_key("bridged"), "{:?}", listed.keys());
}
