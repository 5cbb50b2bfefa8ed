//! The part of the check that needs the servers' tools: at start, once every server with a
//! connection of its own has listed its tools (or the wait is over), what the per-server globs
//! and the tool names of rules and profiles match. The start logs each finding as a warning,
//! or, with `checkStrict`, refuses to serve.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_gen_ui_actors::servers::fleet::Fleet;
use serde_json::Value;

use super::{with_tools, Listed, Scope};

/// What the check found once the servers listed.
#[derive(Debug, Default)]
pub struct Found {
    /// Names that match no tool, each a warning.
    pub unmatched: Vec<String>,
    /// Servers that had not listed their tools when the wait ended: their names are not judged.
    pub not_listed: Vec<String>,
}

/// Waits (polling, at most `wait`) for every server that is not per person to list its tools,
/// then checks the names against them.
pub async fn check(fleet: Arc<Fleet>, scope: Scope, wait: Duration) -> Found {
    let deadline = Instant::now() + wait;
    loop {
        let servers = fleet.servers();
        let pending = servers.iter().any(|s| s.pool.is_none() && !s.router.status().ready);
        if !pending || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let catalog = fleet.catalog();
    let mut listed = HashMap::new();
    let mut not_listed = Vec::new();
    for s in fleet.servers().iter().filter(|s| s.pool.is_none()) {
        let status = s.router.status();
        if !status.ready {
            not_listed.push(s.name.to_string());
            continue;
        }
        let own = status.tools.iter().filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_string)).collect();
        let shown = catalog.tools().iter().filter(|t| t.server == s.name).map(|t| t.name.clone()).collect();
        listed.insert(s.name.to_string(), Listed { own, shown });
    }
    Found { unmatched: with_tools(&scope, &listed), not_listed }
}

/// The check in the background of a start that serves whatever it finds: each finding a
/// warning in the log.
pub fn log_when_listed(fleet: Arc<Fleet>, scope: Scope) {
    actix_web::rt::spawn(async move {
        let found = check(fleet, scope, Duration::from_secs(60)).await;
        log(&found);
    });
}

pub fn log(found: &Found) {
    for w in &found.unmatched {
        tracing::warn!(component = "config", event = "unmatched", "{w}");
    }
    if !found.not_listed.is_empty() {
        tracing::info!(
            component = "config",
            event = "unmatched_not_checked",
            servers = %found.not_listed.join(", "),
            "the tool names configured for {} were not checked: not listed within the wait",
            found.not_listed.join(", ")
        );
    }
}
