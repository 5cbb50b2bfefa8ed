//! The stdio edge: one host session over stdin/stdout, newline-delimited JSON-RPC. Ends when
//! stdin closes.

use std::time::Duration;

use mcp_gen_ui_actors::host_session::{AttachStream, Close, HostSession, Incoming, SessionDeps, Transport};
use mcp_gen_ui_actors::jsonrpc::{self, code};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

pub async fn run(deps: SessionDeps, max_line: usize) {
    let session =
        actix::Actor::start(HostSession::new("stdio".into(), Transport::Stdio, SessionDeps { idle_limit: Duration::MAX, ..deps }));
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    session.do_send(AttachStream { sink: tx.clone() });
    let writer = tokio::spawn(async move {
        let mut out = tokio::io::stdout();
        while let Some(v) = rx.recv().await {
            let mut line = serde_json::to_vec(&v).expect("a Value serializes");
            line.push(b'\n');
            if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
                break;
            }
        }
    });
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        let line = match lines.next_line().await {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(component = "stdio_edge", event = "read_failed", error = %e, "cannot read stdin");
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        if line.len() > max_line {
            let _ = tx.send(jsonrpc::error(
                Value::Null,
                code::PAYLOAD_TOO_LARGE,
                format!("message is larger than the {max_line} byte limit (server.maxBodyBytes)"),
            ));
            continue;
        }
        match jsonrpc::parse_body(line.as_bytes()) {
            Ok(msgs) => {
                for m in msgs {
                    session.do_send(Incoming { msg: m, sink: None, request_id: uuid::Uuid::new_v4().simple().to_string() });
                }
            }
            Err(why) => {
                let _ = tx.send(jsonrpc::error(Value::Null, code::PARSE_ERROR, format!("Parse error: {why}")));
            }
        }
    }
    tracing::info!(component = "stdio_edge", event = "stdin_closed", "host closed stdin; shutting down");
    session.do_send(Close);
    drop(tx);
    // Answers still in flight get a moment to be written.
    let _ = tokio::time::timeout(Duration::from_millis(500), writer).await;
}
