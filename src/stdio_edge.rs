//! The stdio edge: one host session over stdin/stdout, newline-delimited JSON-RPC. Ends when
//! stdin closes. Any bytes are survivable: a line that is not UTF-8 or not JSON gets a parse
//! error, a line over the size limit gets a 413-style error, and reading goes on.

use std::time::Duration;

use mcp_gen_ui_actors::host_session::{HostSession, Transport};
use mcp_gen_ui_actors::jsonrpc::{self, code};
use mcp_gen_ui_actors::messages::{sink_channel, AttachStream, Close, Incoming};
use mcp_gen_ui_actors::session_deps::SessionDeps;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

pub async fn run(deps: SessionDeps, max_line: usize) {
    let session = HostSession::new("stdio".into(), Transport::Stdio, SessionDeps { idle_limit: Duration::MAX, ..deps }).start_session();
    let (tx, mut rx) = sink_channel();
    session.attach.do_send(AttachStream { sink: tx.clone() });
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
    let mut input = BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    loop {
        line.clear();
        // At most max_line + 1 bytes are held: a longer line is answered, then skipped.
        let n = match (&mut input).take(max_line as u64 + 1).read_until(b'\n', &mut line).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(component = "stdio_edge", event = "read_failed", error = %e, "cannot read stdin");
                break;
            }
        };
        let ended = line.last() == Some(&b'\n');
        if !ended && n > max_line {
            let _ = tx.try_send(jsonrpc::error(
                Value::Null,
                code::PAYLOAD_TOO_LARGE,
                format!("message is larger than the {max_line} byte limit (server.maxBodyBytes)"),
            ));
            if !skip_line(&mut input).await {
                break;
            }
            continue;
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        match jsonrpc::parse_body(text) {
            Ok(msgs) => {
                for m in msgs {
                    session.incoming.do_send(Incoming { msg: m, sink: None, request_id: uuid::Uuid::new_v4().simple().to_string() });
                }
            }
            Err(why) => {
                let _ = tx.try_send(jsonrpc::error(Value::Null, code::PARSE_ERROR, format!("Parse error: {why}")));
            }
        }
    }
    tracing::info!(component = "stdio_edge", event = "stdin_closed", "host closed stdin; shutting down");
    session.close.do_send(Close);
    drop(tx);
    // Answers still in flight get a moment to be written.
    let _ = tokio::time::timeout(Duration::from_millis(500), writer).await;
}

/// Reads and drops the rest of an over-long line. False at the end of input.
async fn skip_line<R: tokio::io::AsyncBufRead + Unpin>(input: &mut R) -> bool {
    loop {
        let buf = match input.fill_buf().await {
            Ok([]) | Err(_) => return false,
            Ok(b) => b,
        };
        match buf.iter().position(|b| *b == b'\n') {
            Some(i) => {
                input.consume(i + 1);
                return true;
            }
            None => {
                let n = buf.len();
                input.consume(n);
            }
        }
    }
}
