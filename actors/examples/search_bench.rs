//! Benchmark (prints figures, asserts nothing): tool search in-process at 5,000 tools. Builds a
//! profile's index over a synthetic catalog of tools named and described as real servers do
//! (verbs, nouns, a sentence, a few described properties), then times 2,000 plain-language
//! queries: p50, p99 and max, and the index build; baseline: a linear scan that only lowercases
//! each tool's text and checks one word, in the same process.
//!
//!     cargo run --profile dist -p mcp-gen-ui-actors --example search_bench [tools]

use std::sync::Arc;
use std::time::Instant;

use mcp_gen_ui_actors::servers::catalog::ExposedTool;
use mcp_gen_ui_actors::servers::search::ToolIndex;
use serde_json::json;

const VERBS: &[&str] = &[
    "get", "list", "create", "update", "delete", "search", "read", "write", "move", "sync", "export", "import", "archive", "share",
    "convert",
];
const NOUNS: &[&str] = &[
    "issue",
    "pull_request",
    "file",
    "folder",
    "calendar_event",
    "invoice",
    "customer",
    "ticket",
    "message",
    "channel",
    "repository",
    "branch",
    "commit",
    "dashboard",
    "alert",
    "metric",
    "document",
    "spreadsheet",
    "contact",
    "order",
    "product",
    "payment",
    "user",
    "team",
    "project",
    "task",
    "note",
    "image",
    "report",
    "database_row",
    "secret",
    "deployment",
    "container",
    "cluster",
    "bucket",
    "email",
    "meeting",
    "page",
];
const SERVERS: &[&str] =
    &["github", "gitlab", "jira", "slack", "drive", "notion", "stripe", "shopify", "grafana", "k8s", "s3", "gmail", "calendar", "linear"];
const QUERIES: &[&str] = &[
    "open a new issue about the login bug",
    "find the invoice for customer 42",
    "send a message to the team channel",
    "list my meetings tomorrow",
    "delete the old branch",
    "export the sales report as a spreadsheet",
    "share the design document with Bob",
    "archive finished tasks",
    "what alerts fired last night",
    "move the file to the archive folder",
    "convert the image to png",
    "show the deployment status",
];

fn catalog(n: usize) -> Vec<ExposedTool> {
    (0..n)
        .map(|i| {
            let (v, o, s) = (VERBS[i % VERBS.len()], NOUNS[(i / VERBS.len()) % NOUNS.len()], SERVERS[i % SERVERS.len()]);
            let name = format!("{s}__{v}_{o}_{}", i / (VERBS.len() * NOUNS.len()));
            let noun = o.replace('_', " ");
            let def = json!({"name": name, "description": format!("{v} a {noun} in {s}. Returns the {noun} with its id, owner and dates."),
                "inputSchema": {"type": "object", "properties": {
                    "id": {"type": "string", "description": format!("The {noun} id")},
                    "query": {"type": "string", "description": format!("Text to match in the {noun}")},
                    "limit": {"type": "integer"}}}});
            ExposedTool {
                server: Arc::from(s),
                bare: name.clone(),
                name: name.clone(),
                def: Arc::new(def),
                page: format!("ui://{name}"),
                hash: String::new(),
                ui: true,
            }
        })
        .collect()
}

fn percentile(v: &[f64], p: f64) -> f64 {
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5000);
    let tools = catalog(n);
    let t = Instant::now();
    let index = ToolIndex::build(tools.iter().map(|t| (t.name.as_str(), t)));
    let build_ms = t.elapsed().as_secs_f64() * 1000.0;
    let texts: Vec<String> = tools.iter().map(|t| t.def.to_string()).collect();
    let rounds = 2000;
    let mut searched = Vec::with_capacity(rounds);
    let mut scanned = Vec::with_capacity(rounds);
    let mut found = 0;
    for i in 0..rounds {
        // Every query differs (the tokenizer memoizes what it has seen): a task and a number.
        let q = format!("{} {i}", QUERIES[i % QUERIES.len()]);
        let q = q.as_str();
        let t = Instant::now();
        found += index.search(q, 10).len();
        searched.push(t.elapsed().as_secs_f64() * 1000.0);
        // Baseline: a scan of every tool for the query's first word, the least any search must do.
        let word = q.split(' ').next().unwrap_or_default();
        let t = Instant::now();
        found += texts.iter().filter(|x| x.to_lowercase().contains(word)).count();
        scanned.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    searched.sort_by(|a, b| a.total_cmp(b));
    scanned.sort_by(|a, b| a.total_cmp(b));
    println!("{n} tools; index built in {build_ms:.1} ms; {rounds} queries ({found} results)");
    println!(
        "search (BM25)  p50 {:.3} ms  p99 {:.3} ms  max {:.3} ms",
        percentile(&searched, 0.5),
        percentile(&searched, 0.99),
        searched[rounds - 1]
    );
    println!("scan baseline  p50 {:.3} ms  p99 {:.3} ms", percentile(&scanned, 0.5), percentile(&scanned, 0.99));
    println!(
        "RESULT {}",
        json!({"tools": n, "build_ms": build_ms, "p50_ms": percentile(&searched, 0.5), "p99_ms": percentile(&searched, 0.99), "scan_p99_ms": percentile(&scanned, 0.99)})
    );
}
