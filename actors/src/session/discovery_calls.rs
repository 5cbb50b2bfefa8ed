//! A session answering search mode's own tools: `search_tools` (ranked over the profile's
//! tools, only those the principal may see), `describe_tools` (their definitions as the profile
//! shows them), and the read of `call_tool`'s page. `call_tool` itself never comes here: the
//! plan makes it the direct call it stands for.

use actix::prelude::*;
use serde_json::{json, Value};

use super::discovery::{self, SearchCall, CALL_TOOL_PAGE};
use super::HostSession;
use crate::mcp::jsonrpc::{self, code};
use crate::mcp::ui_meta;
use crate::servers::catalog::Catalog;
use crate::servers::profiles::Profile;
use crate::servers::search::{Hit, ToolIndex, MAX_RESULTS};

impl HostSession {
    pub(super) fn search_call(&mut self, ctx: &mut Context<Self>, id: Value, call: SearchCall) {
        let profile = match self.profile_now() {
            Ok(Some(p)) => p,
            _ => return self.answer(jsonrpc::error(id, code::INVALID_REQUEST, "search tools are a profile's (/mcp/<profile>)")),
        };
        let catalog = self.deps.fleet.catalog();
        match call {
            SearchCall::Describe { names } => {
                let answer = self.describe(&profile, &catalog, &names);
                self.answer(jsonrpc::result(id, discovery::result(answer)))
            }
            SearchCall::Search { query, limit } => match profile.index_for(&catalog) {
                Some(index) => {
                    let hits = self.visible_hits(&profile, &catalog, &index, &query, limit);
                    self.answer(jsonrpc::result(id, discovery::result(json!({"tools": hits}))))
                }
                // The first search of a catalog makes its index: CPU work, off this thread.
                None => {
                    let (p, c) = (profile.clone(), catalog.clone());
                    let built = tokio::task::spawn_blocking(move || p.build_index(&c));
                    ctx.spawn(built.into_actor(self).map(move |index, act, _| match index {
                        Ok(index) => {
                            let hits = act.visible_hits(&profile, &catalog, &index, &query, limit);
                            act.answer(jsonrpc::result(id, discovery::result(json!({"tools": hits}))));
                        }
                        Err(_) => act.answer(jsonrpc::error(id, code::INTERNAL_ERROR, "the search index could not be made; try again")),
                    }));
                }
            },
        }
    }

    /// The best tools for `query` this principal may see, best first.
    fn visible_hits(&self, profile: &Profile, catalog: &Catalog, index: &ToolIndex, query: &str, limit: usize) -> Vec<Value> {
        let access = self.access();
        let filtered = access.policies.is_on();
        let mut out = Vec::new();
        for Hit { name, summary, score } in index.search(query, if filtered { MAX_RESULTS } else { limit }) {
            if filtered && !catalog.tool(profile.resolve(&name)).is_some_and(|t| access.sees_tool(t)) {
                continue;
            }
            out.push(json!({"name": name, "description": summary, "score": score}));
            if out.len() == limit {
                break;
            }
        }
        out
    }

    /// The definitions of `names` (as the profile shows them); names it has not, said so.
    fn describe(&self, profile: &Profile, catalog: &Catalog, names: &[String]) -> Value {
        let access = self.access();
        let mut tools = Vec::new();
        let mut unknown = Vec::new();
        for n in names {
            match catalog.tool(profile.resolve(n)).filter(|t| profile.includes(t) && access.sees_tool(t)) {
                Some(t) => tools.push(profile.present(t, (*t.def).clone())),
                None => unknown.push(n.clone()),
            }
        }
        let mut answer = json!({"tools": tools});
        if !unknown.is_empty() {
            answer["unknown"] = json!(unknown);
        }
        answer
    }

    /// `call_tool`'s page: the same for every call (it opens the called tool's page itself).
    pub(super) fn read_call_tool_page(&mut self, id: Value) {
        let dialect = self.dialect().unwrap_or(ui_meta::Dialect::McpApps);
        let content = json!({
            "uri": CALL_TOOL_PAGE,
            "mimeType": dialect.mime(),
            "text": crate::generation::templates::call_tool_page(),
            "_meta": ui_meta::page_meta(self.deps.ui_domain.as_deref(), "Opens the page of the tool call_tool called", dialect),
        });
        self.answer(jsonrpc::result(id, json!({"contents": [content]})));
    }
}

/// The `call_tool` definition for this host: with its page when the host renders pages.
pub(super) fn search_definitions(dialect: Option<ui_meta::Dialect>) -> Vec<Value> {
    let [search, describe, call] = discovery::definitions();
    let call = match dialect {
        Some(d) => ui_meta::decorate_tool(&call, CALL_TOOL_PAGE, d),
        None => call,
    };
    vec![search, describe, call]
}

/// The `resources/list` entry of `call_tool`'s page.
pub(super) fn call_tool_resource(domain: Option<&str>, dialect: ui_meta::Dialect) -> Value {
    json!({
        "uri": CALL_TOOL_PAGE,
        "name": "call_tool UI",
        "title": "call_tool: the page of the tool it calls",
        "description": "Opens the page of the tool call_tool called",
        "mimeType": dialect.mime(),
        "_meta": ui_meta::page_meta(domain, "Opens the page of the tool call_tool called", dialect),
    })
}
