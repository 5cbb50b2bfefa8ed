//! `_ui_tool_changes` and `_ui_accept_tool_change` (admins): the tools held by their pins, with
//! what changed, and an admin accepting one. Accepting lists the server again, so its hosts
//! hear the tool is back (tools/list_changed) and its page is made as for any new tool.

use serde_json::{json, Value};

use super::Ctx;
use crate::messages::RefreshTools;
use crate::session::ui_tools::{error_result, ok_result};

pub(super) async fn list(cx: &Ctx) -> Value {
    let Some(pins) = cx.deps.fleet.registry().pins() else {
        return ok_result(json!({"held": [], "note": "tools are not pinned here"}));
    };
    let held: Vec<Value> = pins
        .held()
        .iter()
        .map(|h| {
            let mut v = h.describe();
            if let Some(s) = cx.deps.fleet.by_name(&h.server) {
                v["name"] = json!(s.naming.name_out(&h.tool));
            }
            v
        })
        .collect();
    ok_result(json!({"held": held}))
}

pub(super) async fn accept(cx: &Ctx, server: &str, tool: &str, fingerprint: Option<&str>) -> Value {
    let Some(pins) = cx.deps.fleet.registry().pins() else {
        return error_result("tools are not pinned here: nothing is held");
    };
    let Some(s) = cx.deps.fleet.by_name(server) else {
        let names: Vec<String> = cx.deps.fleet.servers().iter().map(|s| s.name.to_string()).collect();
        return error_result(&format!("no server named {server:?}; the servers are {}", names.join(", ")));
    };
    if let Err(why) = pins.accept(server, tool, fingerprint, &cx.access.who.name) {
        return error_result(&why.to_string());
    }
    // Listed again: the accepted tool is in the catalog, and hosts and the page maker hear it.
    let relisted = matches!(s.port.refresh.send(RefreshTools).await, Ok(Ok(_)));
    ok_result(json!({"accepted": {"server": server, "tool": tool, "name": s.naming.name_out(tool)}, "relisted": relisted}))
}
