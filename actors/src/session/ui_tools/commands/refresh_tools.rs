//! `_ui_refresh_tools`: every server lists its tools again; what changed, by the names hosts
//! know.

use serde_json::{json, Value};

use super::Ctx;
use crate::messages::{RefreshTools, ToolsDiff};
use crate::servers::catalog::Naming;
use crate::session::ui_tools::{error_result, error_result_with, ok_result};

pub(super) async fn run(cx: &Ctx) -> Value {
    let mut all = ToolsDiff::default();
    // (whose, why): a server under a prefix is named; one behind --upstream is "the upstream".
    let mut failed: Vec<(Option<String>, String)> = Vec::new();
    for s in cx.deps.fleet.servers().iter() {
        let whose = matches!(s.naming, Naming::Prefixed(_)).then(|| s.name.to_string());
        match s.port.refresh.send(RefreshTools).await {
            Ok(Ok(d)) => {
                all.added.extend(d.added);
                all.removed.extend(d.removed);
                all.changed.extend(d.changed);
                all.unchanged.extend(d.unchanged);
            }
            Ok(Err(why)) => failed.push((whose, why.to_string())),
            Err(_) => failed.push((whose, "its supervisor stopped".into())),
        }
    }
    if failed.is_empty() {
        return ok_result(serde_json::to_value(all).unwrap_or_default());
    }
    if let [(None, why)] = failed.as_slice() {
        return error_result(&format!("could not list the upstream's tools: {why}"));
    }
    let named: Vec<String> = failed.iter().map(|(w, why)| format!("{}: {why}", w.as_deref().unwrap_or("the upstream"))).collect();
    let mut v = serde_json::to_value(all).unwrap_or_default();
    v["failed"] = json!(named);
    error_result_with(&format!("could not list the tools of {}", named.join("; ")), v)
}
