//! Requests that name one server's thing, routed to that server under the server's own name
//! for it: a tool call (by the name the catalog lists, or a bare name one server has), a
//! prompt, a completion, a resource (by its namespaced URI). With several servers the
//! resource URIs in the answers are namespaced back, so that a host can read what a result
//! links to.

use std::sync::Arc;

use actix::prelude::*;
use serde_json::{json, Value};

use super::lists::unknown;
use super::HostSession;
use crate::mcp::jsonrpc::{self, code};
use crate::servers::catalog::{Naming, Route};
use crate::servers::fleet::Server;

impl HostSession {
    /// `tools/call`: to the server the catalog says, under the tool's own name.
    pub(super) fn tool_call(&mut self, ctx: &mut Context<Self>, mut msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let name = jsonrpc::params(&msg).get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        let fleet = self.deps.fleet.clone();
        let catalog = fleet.catalog();
        let server = match catalog.route(&name) {
            Route::Tool(t) => {
                let Some(server) = fleet.by_name(&t.server) else {
                    return self.answer(unknown(id, "tool", &name));
                };
                if t.bare != name {
                    msg["params"]["name"] = json!(t.bare);
                }
                server
            }
            Route::Ambiguous(candidates) => {
                let why = format!("more than one server has a tool named {name:?}: call one of {}", candidates.join(", "));
                return self.answer(jsonrpc::error_with_data(id, code::INVALID_PARAMS, why, json!({"candidates": candidates})));
            }
            Route::Hidden(server) => {
                let why =
                    format!("the tool {name:?} of server {server} is hidden by this service's configuration (tools.allow / tools.deny)");
                return self.answer(jsonrpc::error(id, code::INVALID_PARAMS, why));
            }
            // One server decides for itself what it has; with several, nobody has it.
            Route::Unknown => match fleet.single() {
                Some(single) => single,
                None => return self.answer(unknown(id, "tool", &name)),
            },
        };
        let exposed = match catalog.route(&name) {
            Route::Tool(t) => t.name.clone(),
            _ => name,
        };
        let shape = self.shapes_results();
        self.forward_to_then(ctx, server.clone(), msg, move |act, ctx, answer| {
            let answer = with_uris_out(&server.naming, answer);
            let answer = if shape { act.shaped(ctx, &exposed, answer) } else { answer };
            act.answer(answer);
        });
    }

    /// `prompts/get`: to the server whose prompt it is.
    pub(super) fn prompt_get(&mut self, ctx: &mut Context<Self>, mut msg: Value) {
        let Some(single) = self.deps.fleet.single() else {
            let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
            let name = jsonrpc::params(&msg).get("name").and_then(Value::as_str).unwrap_or_default().to_string();
            let Some((server, own)) = self.deps.fleet.route_prompt(&name) else {
                return self.answer(unknown(id, "prompt", &name));
            };
            msg["params"]["name"] = json!(own);
            return self
                .forward_to_then(ctx, server.clone(), msg, move |act, _ctx, answer| act.answer(with_uris_out(&server.naming, answer)));
        };
        self.forward_to(ctx, single, msg);
    }

    /// `completion/complete`: to the server whose prompt or resource template it completes.
    pub(super) fn complete(&mut self, ctx: &mut Context<Self>, mut msg: Value) {
        let Some(single) = self.deps.fleet.single() else {
            let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
            let reference = msg.pointer("/params/ref").cloned().unwrap_or(Value::Null);
            let target = match reference.get("type").and_then(Value::as_str) {
                Some("ref/prompt") => {
                    let name = reference.get("name").and_then(Value::as_str).unwrap_or_default();
                    self.deps.fleet.route_prompt(name).map(|(s, own)| (s, "name", own))
                }
                Some("ref/resource") => {
                    let uri = reference.get("uri").and_then(Value::as_str).unwrap_or_default();
                    self.deps.fleet.server_for_uri(uri).map(|(s, own)| (s, "uri", own))
                }
                _ => None,
            };
            let Some((server, field, own)) = target else {
                let why = "params.ref names no prompt or resource template of a server behind this endpoint";
                return self.answer(jsonrpc::error(id, code::INVALID_PARAMS, why));
            };
            msg["params"]["ref"][field] = json!(own);
            return self.forward_to(ctx, server, msg);
        };
        self.forward_to(ctx, single, msg);
    }

    /// A resource of a server's own (not a page made here): to that server, its URI as the
    /// server knows it; the answer's URIs as hosts know them. `Err` is the host's error.
    pub(super) fn resource_route(&self, msg: &mut Value) -> Result<Arc<Server>, Value> {
        let id = jsonrpc::id(msg).cloned().unwrap_or(Value::Null);
        let uri = msg.pointer("/params/uri").and_then(Value::as_str).unwrap_or_default().to_string();
        let Some((server, own)) = self.deps.fleet.server_for_uri(&uri) else {
            let why = format!("resource not found: {uri} (no server behind this endpoint has it; resources/list shows the valid URIs)");
            return Err(jsonrpc::error_with_data(id, code::RESOURCE_NOT_FOUND, why, json!({"uri": uri})));
        };
        if own != uri {
            msg["params"]["uri"] = json!(own);
        }
        Ok(server)
    }
}

/// An answer with the server's resource URIs as hosts know them: what a read returns, what a
/// call's result links to or embeds. With one server, untouched.
pub(super) fn with_uris_out(naming: &Naming, mut answer: Value) -> Value {
    if *naming == Naming::Bare {
        return answer;
    }
    let Some(result) = answer.get_mut("result") else { return answer };
    let rename = |v: &mut Value| {
        if let Some(uri) = v.get("uri").and_then(Value::as_str) {
            v["uri"] = json!(naming.uri_out(uri));
        }
    };
    for key in ["contents", "content"] {
        for item in result.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten() {
            match item.get("type").and_then(Value::as_str) {
                Some("resource") => {
                    if let Some(r) = item.get_mut("resource") {
                        rename(r);
                    }
                }
                Some("resource_link") | None => rename(item),
                Some(_) => {}
            }
        }
    }
    // A prompt's messages may embed resources too.
    for m in result.get_mut("messages").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(r) = m.pointer_mut("/content/resource") {
            rename(r);
        }
    }
    answer
}
