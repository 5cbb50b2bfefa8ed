//! A stdio link's reader moves to a home (an HTTP worker, `process::homes`) when the first one
//! joins, with what it had framed so far: nothing is lost or reordered across the move, and
//! what arrives after it is read on the home's thread (where the sessions are, so an answer
//! wakes its session without crossing threads). Its own test binary: homes are process-wide.

use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use mcp_gen_ui_actors::mcp::relayed::Relayed;
use mcp_gen_ui_actors::process::homes;
use mcp_gen_ui_actors::upstream::{connect, FastPath, LinkLimits, UpstreamSpec};
use serde_json::json;

type Seen = Arc<Mutex<Vec<(i64, ThreadId)>>>;

async fn until(seen: &Seen, n: usize) {
    for _ in 0..500 {
        if seen.lock().unwrap().len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("only {} of {n} messages arrived", seen.lock().unwrap().len());
}

#[actix::test]
async fn the_reader_moves_home_mid_line_and_loses_nothing() {
    // The upstream writes the first half of a message, waits (the home joins meanwhile), ends
    // it, then echoes whatever it is sent.
    let script = r#"printf '{"jsonrpc":"2.0","id":1,'; sleep 0.6; printf '"result":{}}\n'; exec cat"#;
    let spec = UpstreamSpec::Stdio { command: "sh".into(), args: vec!["-c".into(), script.into()], env: vec![], cwd: None };
    let seen: Seen = Arc::default();
    let theirs = seen.clone();
    let fast: FastPath = Arc::new(move |m: Relayed| {
        let m = m.into_value();
        theirs.lock().unwrap().push((m["id"].as_i64().unwrap_or(-1), std::thread::current().id()));
        None
    });
    let link = connect(&spec, LinkLimits { max_message_bytes: 1 << 20 }, Some(fast)).await.expect("sh starts");
    let (tx, _events, _guard) = link.split();

    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(seen.lock().unwrap().is_empty(), "half a message is not a message");
    let home = actix::Arbiter::new();
    let (tell, told) = tokio::sync::oneshot::channel();
    home.spawn(async move {
        homes::join_current();
        let _ = tell.send(std::thread::current().id());
    });
    let home_thread = told.await.expect("the home joined");

    until(&seen, 1).await;
    for id in 2..=50 {
        tx.send(json!({"jsonrpc": "2.0", "id": id, "result": {}})).expect("the pipe takes it");
    }
    until(&seen, 50).await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.iter().map(|(id, _)| *id).collect::<Vec<_>>(), (1..=50).collect::<Vec<_>>(), "in order, none lost");
    assert!(seen.iter().all(|(_, t)| *t == home_thread), "every message was read on the home's thread: {seen:?}");
    home.stop();
}
