//! Carrying out a plan that sends a request to one server (`plan::Plan::Forward`): the request
//! already names things the server's way; the answer's resource URIs are made the hosts' way
//! (a prefixed server's are namespaced back, so that a host can read what a result links to),
//! a tool's result shaped when results are, a server's own `ui://` read mapped to a clear error.

use std::sync::Arc;

use actix::prelude::*;
use serde_json::{json, Value};

use super::plan::{self, After};
use super::HostSession;
use crate::mcp::jsonrpc;
use crate::mcp::relayed::Relayed;
use crate::servers::catalog::Naming;
use crate::servers::fleet::Server;

impl HostSession {
    /// Carries out a plan's `Forward`: the request (already named the server's way) to that
    /// server; its answer made the hosts' way, as `after` says.
    pub(super) fn forward_with(&mut self, ctx: &mut Context<Self>, server: Arc<Server>, msg: Value, after: After) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        match after {
            After::Plain => self.forward_to(ctx, server, msg),
            After::UrisOut => {
                let naming = server.naming.clone();
                self.forward_to_then(ctx, server, msg, move |act, _ctx, answer| act.answer(naming.answer_out(answer)));
            }
            After::ToolResult { exposed } => {
                let shape = self.shapes_results();
                let naming = server.naming.clone();
                // A tool that runs only as a task, for a host that does not speak tasks: the
                // service runs it as one and answers with its result (`tasks`).
                let bridged = self.bridges(&msg, &exposed);
                let mut msg = msg;
                if bridged {
                    msg["params"]["task"] = json!({"ttl": super::tasks::BRIDGE_MAX.as_millis() as u64});
                }
                // A 2026 host never asks for a task: it declares the extension, and a tool that
                // runs as a task is run as one (`mcp::tasks_2026`).
                let stateless = self.call().is_some();
                if stateless {
                    if let Err(refused) = self.task_for_2026(&mut msg, &server, &exposed, bridged) {
                        return self.answer(refused);
                    }
                }
                let progress_token = jsonrpc::progress_token(&msg).cloned();
                let made_by = server.clone();
                // Nothing here looks at a plain result then: it goes out as the server wrote it.
                let as_read = !shape && !bridged && !stateless && naming == Naming::Bare;
                self.forward_relayed_then(ctx, server, msg, move |act, ctx, answer| {
                    let mut answer = match answer {
                        Relayed::Raw(raw) if as_read => match raw.plain() {
                            Ok(raw) => return act.answer_relayed(Relayed::Raw(raw)),
                            Err(raw) => raw.into_value(),
                        },
                        other => other.into_value(),
                    };
                    if crate::proxy::tasks::created_task(&answer).is_some() {
                        let bridge = bridged.then(|| crate::proxy::tasks::Bridge { host_request: id.clone(), progress_token });
                        let made = act.task_made(&made_by, &exposed, &mut answer, bridge);
                        return match (made, bridged) {
                            (Some(task), true) => act.wait_on_task(ctx, made_by, task, id),
                            (Some(_), false) if stateless => act.answer(crate::mcp::tasks_2026::created(answer)),
                            _ => act.answer(answer),
                        };
                    }
                    let answer = naming.answer_out(answer);
                    let answer = if shape { act.shaped(ctx, &exposed, answer) } else { answer };
                    act.answer(answer);
                });
            }
            // A server's own `ui://` app: its answer; an error means no such page here either.
            After::ServerUi { uri, excluded } => {
                let naming = server.naming.clone();
                self.forward_to_then(ctx, server, msg, move |act, _ctx, answer| match answer.get("error") {
                    Some(err) => act.answer(plan::not_found(id, &uri, Some(err.clone()), excluded.as_ref())),
                    None => act.answer(naming.answer_out(answer)),
                });
            }
        }
    }
}
