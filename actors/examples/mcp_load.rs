//! A small MCP load client for benchmarks (prints figures, asserts nothing): opens a Streamable
//! HTTP session at URL, then runs `calls` tools/call requests of `tool` with `concurrency` in
//! flight, and prints one line: `calls rps p50_ms p99_ms`. Fast enough that the server, not the
//! client, is what is measured.
//!
//!     cargo run --release -p mcp-gen-ui-actors --example mcp_load -- URL [calls] [concurrency] [tool] [args-json]

use std::time::Instant;

use serde_json::{json, Value};

const ACCEPT: &str = "application/json, text/event-stream";

/// The JSON-RPC answer in a response body (plain JSON, or the last data event of an SSE stream).
fn answer(body: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        return Some(v);
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .filter_map(|d| serde_json::from_str(d).ok())
        .last()
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let url = args.get(1).expect("usage: mcp_load URL [calls] [concurrency] [tool] [args-json]").clone();
    let calls: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let concurrency: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(8);
    let tool = args.get(4).cloned().unwrap_or_else(|| "get-sum".into());
    let tool_args: Value = args.get(5).and_then(|a| serde_json::from_str(a).ok()).unwrap_or(json!({"a": 1, "b": 2}));

    let client = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "mcp_load", "version": "1"}}});
    let resp = client.post(&url).header("accept", ACCEPT).json(&init).send().await.expect("initialize");
    let session = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_string);
    let _ = resp.text().await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let mut rb = client.post(&url).header("accept", ACCEPT).json(&note);
    if let Some(s) = &session {
        rb = rb.header("mcp-session-id", s);
    }
    let _ = rb.send().await.expect("initialized");

    let call = |id: usize| {
        let mut rb = client
            .post(&url)
            .header("accept", ACCEPT)
            .json(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": tool_args}}));
        if let Some(s) = &session {
            rb = rb.header("mcp-session-id", s);
        }
        async move {
            let t = Instant::now();
            let body = rb.send().await.expect("tools/call").text().await.expect("body");
            let a = answer(&body).expect("a JSON-RPC answer");
            assert!(a.get("result").is_some(), "tools/call failed: {a}");
            t.elapsed().as_secs_f64() * 1000.0
        }
    };
    for i in 0..50 {
        call(i + 1).await; // warm-up
    }
    let start = Instant::now();
    let mut lat: Vec<f64> = Vec::with_capacity(calls);
    let mut next = 100;
    let mut in_flight = futures::stream::FuturesUnordered::new();
    use futures::StreamExt;
    while lat.len() < calls {
        while in_flight.len() < concurrency && next < 100 + calls {
            in_flight.push(call(next));
            next += 1;
        }
        if let Some(ms) = in_flight.next().await {
            lat.push(ms);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    lat.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    let q = |p: f64| lat[((lat.len() as f64 - 1.0) * p) as usize];
    println!("{} {:.1} {:.3} {:.3}", lat.len(), lat.len() as f64 / secs, q(0.5), q(0.99));
}
