//! `mcp-gen-ui pins`: an admin's view of the tools a running service holds (what changed, old
//! and new) and their acceptance, from a terminal. It is an MCP client of the service's own
//! `_ui_tool_changes` and `_ui_accept_tool_change`, so the service's rules (admins only), its
//! trail and its replicas apply as to any host.

use std::process::ExitCode;
use std::time::Duration;

use serde_json::{json, Value};

const TOKEN_ENV: &str = "MCP_GEN_UI_TOKEN";

pub fn run(url: &str, accept: Option<&str>, fingerprint: Option<&str>) -> ExitCode {
    let call = match accept.map(|a| a.split_once('/')) {
        None => ("_ui_tool_changes", json!({})),
        Some(Some((server, tool))) if !server.is_empty() && !tool.is_empty() => {
            let Some(f) = fingerprint else {
                eprintln!("mcp-gen-ui pins: --accept needs --fingerprint, the one `mcp-gen-ui pins` showed: a change made since is never accepted unseen");
                return ExitCode::from(2);
            };
            ("_ui_accept_tool_change", json!({"server": server, "toolName": tool, "fingerprint": f}))
        }
        Some(_) => {
            eprintln!("mcp-gen-ui pins: --accept takes SERVER/TOOL (as `mcp-gen-ui pins` lists them)");
            return ExitCode::from(2);
        }
    };
    let token = std::env::var(TOKEN_ENV).ok();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime builds");
    match rt.block_on(call_tool(url, token.as_deref(), call.0, call.1)) {
        Ok(result) if result.get("isError") == Some(&json!(true)) => {
            eprintln!("mcp-gen-ui pins: {}", text_of(&result));
            ExitCode::FAILURE
        }
        Ok(result) => {
            print!("{}", shown(&result));
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("mcp-gen-ui pins: {url}: {why}");
            ExitCode::FAILURE
        }
    }
}

/// One session: initialize (as a UI host, which the `_ui_*` tools need), the call, goodbye.
async fn call_tool(url: &str, token: Option<&str>, tool: &str, args: Value) -> Result<Value, String> {
    let client = mcp_gen_ui_actors::process::tls::client_builder().timeout(Duration::from_secs(30)).build().map_err(|e| e.to_string())?;
    let ui = json!({"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}});
    let init = json!({"protocolVersion": "2025-06-18", "capabilities": {"extensions": ui}, "clientInfo": {"name": "mcp-gen-ui pins", "version": env!("CARGO_PKG_VERSION")}});
    let post = |body: Value, sid: Option<String>| {
        let mut r = client.post(url).header("Accept", "application/json, text/event-stream").json(&body);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        if let Some(s) = sid {
            r = r.header("Mcp-Session-Id", s).header("MCP-Protocol-Version", "2025-06-18");
        }
        r.send()
    };
    let r = post(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}), None).await.map_err(|e| e.to_string())?;
    if !r.status().is_success() {
        let hint = if r.status() == 401 { format!(" (set {TOKEN_ENV} to an admin's token)") } else { String::new() };
        return Err(format!("initialize answered {}{hint}", r.status()));
    }
    let sid = r.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_string);
    answer(r, 1).await?;
    post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), sid.clone()).await.map_err(|e| e.to_string())?;
    let r = post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": args}}), sid.clone())
        .await
        .map_err(|e| e.to_string())?;
    let got = answer(r, 2).await;
    if let Some(s) = sid {
        let mut d = client.delete(url).header("Mcp-Session-Id", s);
        if let Some(t) = token {
            d = d.bearer_auth(t);
        }
        let _ = d.send().await;
    }
    let got = got?;
    match (got.get("result"), got.get("error")) {
        (Some(r), _) => Ok(r.clone()),
        (None, Some(e)) => Err(e.get("message").and_then(Value::as_str).unwrap_or("an error").to_string()),
        _ => Err("an answer with neither a result nor an error".into()),
    }
}

/// The answer to request `id`, as plain JSON or among a stream's events.
async fn answer(r: reqwest::Response, id: u64) -> Result<Value, String> {
    let body = r.text().await.map_err(|e| e.to_string())?;
    let candidates = body.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).chain(std::iter::once(body.trim()));
    candidates
        .filter_map(|c| serde_json::from_str::<Value>(c).ok())
        .find(|m| m.get("id") == Some(&json!(id)))
        .ok_or_else(|| format!("no answer to request {id} in: {}", body.chars().take(200).collect::<String>()))
}

fn text_of(result: &Value) -> String {
    result.pointer("/content/0/text").and_then(Value::as_str).unwrap_or_default().to_string()
}

/// What a person reads: each held tool with its difference, or what was accepted.
fn shown(result: &Value) -> String {
    let data = result.get("structuredContent").cloned().unwrap_or_default();
    if let Some(a) = data.get("accepted") {
        let s = |k: &str| a[k].as_str().unwrap_or("").escape_debug().to_string();
        return format!("accepted {}/{} ({})\n", s("server"), s("tool"), s("name"));
    }
    let held = data.get("held").and_then(Value::as_array).cloned().unwrap_or_default();
    if held.is_empty() {
        return "no tool is held\n".into();
    }
    let mut out = String::new();
    for h in held {
        // Names and texts come from the server: escaped, so that none can steer the terminal.
        let s = |k: &str| h.get(k).and_then(Value::as_str).unwrap_or("").escape_debug().to_string();
        let what = if h["new"] == json!(true) { "new".to_string() } else { format!("changed {}", s("acceptedFingerprint")) };
        out += &format!(
            "{}/{} (listed as {}), held since {}: {what} -> {}\n",
            s("server"),
            s("tool"),
            s("name"),
            s("since"),
            s("fingerprint")
        );
        for (part, d) in h.get("diff").and_then(Value::as_object).into_iter().flatten() {
            out += &format!("  {part}\n    was: {}\n    now: {}\n", compact(&d["was"]), compact(&d["now"]));
        }
        out += &format!("  accept: mcp-gen-ui pins --accept {}/{} --fingerprint {}\n", s("server"), s("tool"), s("fingerprint"));
    }
    out
}

fn compact(v: &Value) -> String {
    match v {
        Value::String(s) => s.escape_debug().to_string(),
        Value::Null => "(none)".into(),
        other => other.to_string(),
    }
}
