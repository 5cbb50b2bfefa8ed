//! Every branch of the one rule for what names no owner (`Router::unnamed`,
//! `Router::server_request_target`): decided by what the message names and whose the
//! connection is (`Hearers`), never by which calls happen to be in flight.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::{json, Value};

use super::Unnamed;
use crate::mcp::jsonrpc;
use crate::messages::{HostEvent, ServerRequest, SessionPort};
use crate::metrics::Metrics;
use crate::proxy::hosts::Hosts;
use crate::proxy::router::{Hearers, Reply, Router, Times, Unrouted};
use crate::proxy::tasks::NewTask;

/// A host session that takes whatever it is sent (only its address matters here).
struct Host;

impl Actor for Host {
    type Context = Context<Self>;
}

impl Handler<HostEvent> for Host {
    type Result = ();
    fn handle(&mut self, _: HostEvent, _: &mut Context<Self>) {}
}

impl Handler<ServerRequest> for Host {
    type Result = MessageResult<ServerRequest>;
    fn handle(&mut self, _: ServerRequest, _: &mut Context<Self>) -> Self::Result {
        MessageResult(Value::Null)
    }
}

fn router(hearers: Hearers) -> (Arc<Router>, Arc<Hosts>) {
    let hosts = Arc::new(Hosts::default());
    let metrics = Arc::new(Metrics::new());
    let r = Router::new(Arc::from("s"), None, Times::new(Duration::from_secs(60)), "test".into(), hosts.clone(), metrics, hearers);
    (r, hosts)
}

fn connect(hosts: &Hosts, session: &str, person: &str) {
    let addr = Host.start();
    let port = SessionPort { event: addr.clone().recipient(), request: addr.recipient() };
    hosts.register(session.into(), port, Arc::from(person));
}

/// A call of `person`'s in flight from `session` (its host id `host_id`).
fn calling(r: &Router, session: &str, person: &str, host_id: i64) {
    let mut msg = jsonrpc::request(host_id, "tools/call", json!({"name": "t"}));
    let (tx, _rx) = tokio::sync::oneshot::channel();
    r.routes().outgoing(&session.to_string(), Some(Arc::from(person)), &mut msg, Reply::Tree(tx));
}

fn log_line() -> Value {
    jsonrpc::notification("notifications/message", json!({"level": "info", "data": "x"}))
}

fn other() -> Value {
    jsonrpc::notification("notifications/x-said", json!({"text": "x"}))
}

fn kept(r: &Router, kind: &'static str, reason: &'static str) -> u64 {
    r.metrics.kept_back(&r.server, kind, reason).get()
}

#[actix::test]
async fn several_peoples_link_owns_nothing_whoever_is_calling() {
    let (r, hosts) = router(Hearers::People);
    connect(&hosts, "a", "alice");
    calling(&r, "a", "alice", 1); // hers alone in flight: still not known to be hers
    assert_eq!(r.unnamed(&mut log_line()), Unnamed::KeptBack { kind: "log", reason: "owner_unknown" });
    assert_eq!(r.unnamed(&mut other()), Unnamed::KeptBack { kind: "notification", reason: "owner_unknown" });
    assert_eq!(kept(&r, "log", "owner_unknown"), 1);
    assert_eq!(kept(&r, "notification", "owner_unknown"), 1);
    let asked = r.server_request_target(json!("s-1"), None).err();
    assert_eq!(asked, Some(Unrouted::OwnerUnknown));
}

#[actix::test]
async fn a_persons_own_link_speaks_to_their_newest_call_else_to_them_never_to_another() {
    let (r, hosts) = router(Hearers::Person(Arc::from("alice")));
    connect(&hosts, "a1", "alice");
    connect(&hosts, "a2", "alice");
    connect(&hosts, "b", "bob");
    // No call of hers: a log line to her sessions by the delivery rule, anything else to her.
    assert_eq!(r.unnamed(&mut log_line()), Unnamed::ServerWide);
    assert_eq!(r.unnamed(&mut other()), Unnamed::Person(Arc::from("alice")));
    // bob's call in flight (as if he could reach it) changes nothing: it is not his link.
    calling(&r, "b", "bob", 9);
    assert_eq!(r.unnamed(&mut other()), Unnamed::Person(Arc::from("alice")));
    let (target, _) = r.server_request_target(json!("s-1"), None).expect("one of hers");
    assert!(target.session.starts_with('a') && target.related.is_none(), "her idle session: {}", target.session);
    // Her calls: the newest carries it.
    calling(&r, "a1", "alice", 1);
    calling(&r, "a2", "alice", 2);
    assert_eq!(r.unnamed(&mut log_line()), Unnamed::Session("a2".into(), Some(json!(2))));
    let (target, _) = r.server_request_target(json!("s-2"), None).expect("her newest call");
    assert_eq!((target.session.as_str(), target.related), ("a2", Some(json!(2))));
}

#[actix::test]
async fn an_endpoint_of_one_person_owns_all_to_the_newest_call_else_everyone_connected() {
    let (r, hosts) = router(Hearers::OnePerson);
    assert_eq!(r.unnamed(&mut other()), Unnamed::Everyone);
    assert_eq!(r.unnamed(&mut log_line()), Unnamed::ServerWide);
    assert_eq!(r.server_request_target(json!("s-1"), None).err(), Some(Unrouted::NoHost), "nobody connected");
    connect(&hosts, "x", "anonymous");
    let (target, _) = r.server_request_target(json!("s-2"), None).expect("the one session");
    assert_eq!(target.session, "x");
    calling(&r, "x", "anonymous", 5);
    assert_eq!(r.unnamed(&mut other()), Unnamed::Session("x".into(), Some(json!(5))));
}

#[actix::test]
async fn what_names_a_task_is_its_owners_and_a_task_nobody_knows_is_no_ones() {
    let (r, hosts) = router(Hearers::Person(Arc::from("bob")));
    connect(&hosts, "a", "alice");
    let made = |upstream| NewTask {
        prefix: None,
        server: Arc::from("s"),
        upstream,
        owner: Arc::from("alice"),
        session: "a",
        tool: "research",
        ttl_ms: None,
        bridge: None,
    };
    let exposed = r.tasks().created(made("t-1")).expect("kept");
    let status = |id: &str| jsonrpc::notification("notifications/tasks/status", json!({"taskId": id, "status": "working"}));
    match r.unnamed(&mut status("t-1")) {
        Unnamed::Task(route) => assert_eq!((&*route.owner, route.exposed.as_str()), ("alice", exposed.as_str())),
        other => panic!("the task's owner's, not the link's person's: {other:?}"),
    }
    // A status of a task not known yet is held for the answer that may make it, not anyone's.
    assert_eq!(r.unnamed(&mut status("t-404")), Unnamed::Held);
    assert_eq!(r.unnamed(&mut status("t-2")), Unnamed::Held);
    assert_eq!(kept(&r, "notification", "unknown_task"), 0, "not yet no one's");
    let second = r.tasks().created(made("t-2")).expect("kept");
    let early = r.said_early("t-2");
    assert_eq!(early.len(), 1, "its maker's once it is made: {early:?}");
    assert_eq!(early[0]["params"]["taskId"], json!(second), "named the hosts' way");
    assert!(r.said_early("t-2").is_empty(), "once");
}

#[actix::test]
async fn an_elicitations_completion_goes_to_the_session_it_was_sent_to_once() {
    let (r, hosts) = router(Hearers::People);
    connect(&hosts, "a", "alice");
    r.elicitation_sent("el-1", &"a".to_string());
    let done = || jsonrpc::notification("notifications/elicitation/complete", json!({"elicitationId": "el-1"}));
    assert_eq!(r.unnamed(&mut done()), Unnamed::Session("a".into(), None));
    assert_eq!(r.unnamed(&mut done()), Unnamed::KeptBack { kind: "notification", reason: "owner_unknown" }, "once");
}

#[actix::test]
async fn server_wide_kinds_are_for_the_delivery_rule_on_any_link() {
    let (r, _) = router(Hearers::People);
    let updated = jsonrpc::notification("notifications/resources/updated", json!({"uri": "note://x"}));
    assert_eq!(r.unnamed(&mut updated.clone()), Unnamed::ServerWide);
    let changed = jsonrpc::notification("notifications/tools/list_changed", Value::Null);
    assert_eq!(r.unnamed(&mut changed.clone()), Unnamed::ServerWide);
}
