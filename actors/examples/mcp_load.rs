//! A small MCP load client for benchmarks (prints figures, asserts nothing), built on rmcp, the
//! official Rust SDK. It connects to TARGET, runs `calls` tools/call requests of `tool` with
//! `concurrency` in flight on one session, and prints one line: `calls rps p50_ms p99_ms`.
//!
//! TARGET is a Streamable HTTP URL (`http://127.0.0.1:8080/mcp`, through the proxy or any other
//! server), or `stdio:CMD ARGS...` to spawn a stdio server and talk to it directly (the baseline
//! the proxy's added latency is measured against).
//!
//!     cargo run --profile dist -p mcp-gen-ui-actors --example mcp_load -- TARGET [calls] [concurrency] [tool] [args-json]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};

async fn run_calls(
    peer: Peer<RoleClient>,
    calls: usize,
    concurrency: usize,
    tool: String,
    args: serde_json::Map<String, Value>,
) -> (Duration, Vec<Duration>) {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency.max(1) {
        let (peer, next, tool, args) = (peer.clone(), next.clone(), tool.clone(), args.clone());
        workers.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < calls {
                let t = Instant::now();
                let r = peer.call_tool(CallToolRequestParams::new(tool.clone()).with_arguments(args.clone())).await;
                match r {
                    Ok(res) if res.is_error != Some(true) => lat.push(t.elapsed()),
                    Ok(res) => panic!("{tool} answered an error: {:?}", res.content),
                    Err(e) => panic!("tools/call failed: {e}"),
                }
            }
            lat
        }));
    }
    let mut all = Vec::with_capacity(calls);
    for w in workers {
        all.extend(w.await.expect("a worker finished"));
    }
    (started.elapsed(), all)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let target = args.get(1).expect("usage: mcp_load TARGET [calls] [concurrency] [tool] [args-json]").clone();
    let calls: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let concurrency: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(8);
    let tool = args.get(4).cloned().unwrap_or_else(|| "get-sum".into());
    let tool_args: Value = args.get(5).and_then(|a| serde_json::from_str(a).ok()).unwrap_or(json!({"a": 1, "b": 2}));
    let tool_args = tool_args.as_object().cloned().unwrap_or_default();

    let (elapsed, mut lat) = if let Some(cmd) = target.strip_prefix("stdio:") {
        let mut words = cmd.split_whitespace();
        let mut command = tokio::process::Command::new(words.next().expect("a command after stdio:"));
        command.args(words);
        let transport = TokioChildProcess::new(command).expect("the stdio server starts");
        let client = ().serve(transport).await.expect("initialize");
        let out = run_calls(client.peer().clone(), calls, concurrency, tool, tool_args).await;
        let _ = client.cancel().await;
        out
    } else {
        let client = ().serve(StreamableHttpClientTransport::from_uri(target.as_str())).await.expect("initialize");
        let out = run_calls(client.peer().clone(), calls, concurrency, tool, tool_args).await;
        let _ = client.cancel().await;
        out
    };
    lat.sort();
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)].as_secs_f64() * 1000.0;
    println!("{} {:.0} {:.3} {:.3}", lat.len(), lat.len() as f64 / elapsed.as_secs_f64(), pct(0.50), pct(0.99));
}
