//! The stdio edge: one host session over stdin/stdout, newline-delimited JSON-RPC. Ends when
//! stdin closes. Any bytes are survivable: a line that is not UTF-8 or not JSON gets a parse
//! error, a line over the size limit gets a 413-style error, and reading goes on.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_gen_ui_actors::mcp::jsonrpc::{self, code, At, Kind};
use mcp_gen_ui_actors::mcp::relayed::Relayed;
use mcp_gen_ui_actors::mcp::revision_2026;
use mcp_gen_ui_actors::messages::{sink_channel, AttachStream, Close, Incoming, SessionRef, Sink};
use mcp_gen_ui_actors::session::deps::SessionDeps;
use mcp_gen_ui_actors::session::{stateless_session_for, HostSession, StatelessTables, Transport, HOST_PROTOCOL_VERSIONS};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// One host over stdin/stdout; `profile`: the one `--profile` names (checked at start).
pub async fn run(deps: SessionDeps, max_line: usize, profile: Option<String>) {
    let profile: Option<Arc<str>> = profile.map(Arc::from);
    let session = HostSession::new("stdio".into(), Transport::Stdio, Arc::new(SessionDeps { idle_limit: Duration::MAX, ..deps.clone() }))
        .in_profile(profile.clone())
        .start_session();
    let mut stateless =
        Stateless { max_in_flight: deps.limits.max_in_flight, tables: StatelessTables::new(&deps), calls: HashMap::new(), profile };
    let (tx, mut rx) = sink_channel();
    session.attach.do_send(AttachStream { sink: tx.clone() });
    let writer = tokio::spawn(async move {
        let mut out = host_output();
        while let Some(m) = rx.recv_relayed().await {
            let mut line = match m {
                Relayed::Raw(raw) => raw.to_json(),
                Relayed::Tree(v) => serde_json::to_vec(&v).expect("a Value serializes"),
            };
            line.push(b'\n');
            if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
                break;
            }
        }
    });
    let mut input = BufReader::new(host_input());
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
        match jsonrpc::parse_body(text, deps.limits.max_batch) {
            Ok(msgs) => {
                for m in msgs {
                    let Some(m) = stateless.take(m, &tx) else { continue };
                    session.incoming.do_send(Incoming {
                        msg: m,
                        sink: None,
                        request_id: uuid::Uuid::new_v4().simple().to_string(),
                        trace: Default::default(),
                        caller: None,
                    });
                }
            }
            Err(why) => {
                let _ = tx.try_send(jsonrpc::error(Value::Null, why.code(), why.to_string()));
            }
        }
    }
    tracing::info!(component = "stdio_edge", event = "stdin_closed", "host closed stdin; shutting down");
    session.close.do_send(Close);
    drop(tx);
    // Answers still in flight get a moment to be written.
    let _ = tokio::time::timeout(Duration::from_millis(500), writer).await;
}

/// The host's end of stdin. A pipe (how most hosts start servers) is read without blocking on
/// the runtime's own thread; tokio's `stdin()` would hand every read to the blocking pool and
/// back, a thread hop per message. The pipe is opened anew through /proc, so the non-blocking
/// mode belongs to this open alone, not to fd 0 that others (a parent shell) may share.
/// Anything else (a socket, a file, a terminal) keeps tokio's way.
fn host_input() -> Box<dyn tokio::io::AsyncRead + Unpin + Send> {
    match tokio::net::unix::pipe::OpenOptions::new().open_receiver("/proc/self/fd/0") {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdin()),
    }
}

/// The host's end of stdout, likewise (stderr may be the same pipe: it stays blocking).
fn host_output() -> Box<dyn tokio::io::AsyncWrite + Unpin + Send> {
    match tokio::net::unix::pipe::OpenOptions::new().open_sender("/proc/self/fd/1") {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdout()),
    }
}

/// MCP 2026-07-28 over stdio: each request that carries its protocol version in `_meta` is a
/// call of its own (see `session::stateless`); the rest belongs to the 2025 session.
struct Stateless {
    /// `limits.maxInFlight`: stateless calls at once.
    max_in_flight: usize,
    tables: StatelessTables,
    /// The stateless calls in flight, by the host's request id: where a cancellation goes.
    calls: HashMap<String, SessionRef>,
    profile: Option<Arc<str>>,
}

impl Stateless {
    /// Serves `msg` if it is stateless; otherwise hands it back for the session.
    fn take(&mut self, msg: Value, out: &Sink) -> Option<Value> {
        match jsonrpc::kind(&msg) {
            Kind::Request if revision_2026::is_2026_request(&msg, None, HOST_PROTOCOL_VERSIONS) => {}
            Kind::Notification if jsonrpc::method(&msg) == Some("notifications/cancelled") => {
                let call = msg.at("/params/requestId").and_then(|id| self.calls.remove(&jsonrpc::id_key(id)));
                return match call {
                    Some(s) => {
                        s.incoming.do_send(Incoming {
                            msg,
                            sink: None,
                            request_id: uuid::Uuid::new_v4().simple().to_string(),
                            trace: Default::default(),
                            caller: None,
                        });
                        None
                    }
                    None => Some(msg),
                };
            }
            _ => return Some(msg),
        }
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        // One host: as many calls at once as a session may have in flight (a retry frees one).
        let max = self.max_in_flight;
        if jsonrpc::params(&msg).get("requestState").is_none() && self.tables.live.len() >= max {
            let why = format!(
                "{max} stateless calls are already in flight (limits.maxInFlightPerSession); wait for an answer before sending more"
            );
            let _ = out.try_send(jsonrpc::error(id, code::LIMITED, why));
            return None;
        }
        let meta = match revision_2026::request_meta(&msg, None) {
            Ok(m) => m,
            Err(refusal) => {
                let _ = out.try_send(refusal.to_error(id));
                return None;
            }
        };
        let who = mcp_gen_ui_actors::who::Who::anonymous();
        match stateless_session_for(&self.tables, Transport::Stdio, &msg, meta, &who, self.profile.clone()) {
            Ok(call) => {
                if self.calls.len() >= 1024 {
                    self.calls.retain(|_, s| s.connected());
                }
                self.calls.insert(jsonrpc::id_key(&id), call.clone());
                // Answers and progress go straight to stdout: this call's stream is the host's.
                call.incoming.do_send(Incoming {
                    msg,
                    sink: Some(out.clone()),
                    request_id: uuid::Uuid::new_v4().simple().to_string(),
                    trace: Default::default(),
                    caller: None,
                });
            }
            Err(err) => {
                let _ = out.try_send(err);
            }
        }
        None
    }
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
