//! What an upstream asks of this host (sampling, elicitation, roots). A session host gets the
//! request on the stream of the call that caused it and its answer comes back through
//! `dispatch`; a stateless host gets it in an input round (see `stateless`).

use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;
use tokio::sync::oneshot;

use super::{Era, HostSession};
use crate::mcp::jsonrpc::{self, code};
use crate::mcp::revision_2026;
use crate::messages::ServerRequest;

/// A host that does not answer a sampling/elicitation request in this time gets an error sent
/// upstream instead (a person may be typing an elicitation answer, so this is generous).
const SERVER_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

impl Handler<ServerRequest> for HostSession {
    type Result = ResponseFuture<Value>;

    fn handle(&mut self, r: ServerRequest, ctx: &mut Self::Context) -> Self::Result {
        if let Era::Stateless(_) = self.era {
            return self.stateless_server_request(ctx, r);
        }
        let id = jsonrpc::id(&r.msg).cloned().unwrap_or(Value::Null);
        let method = jsonrpc::method(&r.msg).unwrap_or_default().to_string();
        let declared = |cap: &str| self.negotiated.as_ref().is_some_and(|n| n.client_caps.get(cap).is_some());
        if let Some(cap) = revision_2026::capability_for(&method).filter(|cap| !declared(cap)) {
            let why = format!("the host did not declare the {cap} capability, so it cannot answer {method}");
            return Box::pin(async move { jsonrpc::error(id, code::METHOD_NOT_FOUND, why) });
        }
        // Asked as a task of a host that does not run them: asked plainly (the server takes the
        // result at once).
        let mut msg = r.msg;
        let runs = self.negotiated.as_ref().map(|n| n.task_requests).unwrap_or_default();
        let as_task = match method.as_str() {
            "sampling/createMessage" => runs.0,
            "elicitation/create" => runs.1,
            _ => true,
        };
        if !as_task {
            if let Some(p) = msg.get_mut("params").and_then(Value::as_object_mut) {
                p.remove("task");
            }
        }
        let (tx, rx) = oneshot::channel();
        self.owed.insert(jsonrpc::id_key(&id), tx);
        self.send_related(msg, r.related.as_ref());
        Box::pin(async move {
            match tokio::time::timeout(SERVER_REQUEST_TIMEOUT, rx).await {
                Ok(Ok(answer)) => answer,
                _ => jsonrpc::error(id, code::INTERNAL_ERROR, format!("the host did not answer {method}")),
            }
        })
    }
}
