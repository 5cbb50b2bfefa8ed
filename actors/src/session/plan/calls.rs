//! Pure: where a `tools/call` goes: the server the catalog says, under the tool's own name; a
//! profile's own tools and search tools; refusals that say why (ambiguous, hidden, held).

use serde_json::{json, Value};

use super::{param, unknown, After, Plan};
use crate::mcp::jsonrpc::{self, code, At};
use crate::servers::catalog::{Catalog, Route};
use crate::servers::fleet::Fleet;
use crate::servers::profiles::{Discovery, Profile};
use crate::session::discovery;

/// `tools/call` in a profile: its search tools, or one of its tools (by the name the profile
/// shows, or the catalog's, which its page's calls use); nothing outside it.
pub(super) fn profile_call(msg: &mut Value, id: Value, fleet: &Fleet, catalog: &Catalog, profile: &Profile) -> Plan {
    let name = param(msg, "/params/name").to_string();
    if profile.discovery == Discovery::Search {
        match name.as_str() {
            "search_tools" | "describe_tools" => {
                let args = msg.at("/params/arguments").cloned().unwrap_or(Value::Null);
                return match discovery::parse(&name, &args) {
                    Ok(call) => Plan::Search(call),
                    Err(why) => Plan::Refuse(jsonrpc::error(id, code::INVALID_PARAMS, why.0)),
                };
            }
            "call_tool" => {
                if let Err(refused) = discovery::unwrap_call_tool(msg, profile, catalog) {
                    return Plan::Refuse(refused);
                }
                return tool_call(msg, id, fleet, catalog);
            }
            _ => {}
        }
    }
    let own = profile.resolve(&name).to_string();
    if !catalog.tool(&own).is_some_and(|t| profile.includes(t)) {
        let why = format!("no tool named {name:?} in profile {:?}; tools/list shows its tools", &*profile.name);
        return Plan::Refuse(jsonrpc::error(id, code::INVALID_PARAMS, why));
    }
    msg["params"]["name"] = json!(own);
    tool_call(msg, id, fleet, catalog)
}

/// `tools/call`: to the server the catalog says, under the tool's own name.
pub(super) fn tool_call(msg: &mut Value, id: Value, fleet: &Fleet, catalog: &Catalog) -> Plan {
    let name = param(msg, "/params/name").to_string();
    match catalog.route(&name) {
        Route::Tool(t) => {
            let Some(server) = fleet.by_name(&t.server) else { return Plan::Refuse(unknown(id, "tool", &name)) };
            if t.bare != name {
                msg["params"]["name"] = json!(t.bare);
            }
            Plan::Forward { server, after: After::ToolResult { exposed: t.name.clone() } }
        }
        Route::Ambiguous(candidates) => {
            let why = format!("more than one server has a tool named {name:?}: call one of {}", candidates.join(", "));
            Plan::Refuse(jsonrpc::error_with_data(id, code::INVALID_PARAMS, why, json!({"candidates": candidates})))
        }
        Route::Hidden(server) => {
            let why = format!("the tool {name:?} of server {server} is hidden by this service's configuration (tools.allow / tools.deny)");
            Plan::Refuse(jsonrpc::error(id, code::INVALID_PARAMS, why))
        }
        Route::Held(h) => {
            let what = if h.new { "is new" } else { "changed since it was accepted" };
            let why = format!(
                "the tool {name:?} of server {} {what}, and is held until an admin accepts it (policy.onToolChange / policy.onNewTool): _ui_tool_changes shows what changed, _ui_accept_tool_change accepts it",
                h.server
            );
            Plan::Refuse(jsonrpc::error_with_data(
                id,
                crate::session::access::NOT_ALLOWED,
                why,
                json!({"server": &*h.server, "tool": h.bare, "held": true}),
            ))
        }
        // A server with bare names decides for itself what it has; prefixed ones do not have it.
        Route::Unknown => match fleet.bare() {
            Some(server) => Plan::Forward { server, after: After::ToolResult { exposed: name } },
            None => Plan::Refuse(unknown(id, "tool", &name)),
        },
    }
}
