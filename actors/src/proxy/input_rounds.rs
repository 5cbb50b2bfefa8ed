//! A 2026 upstream's `input_required` answer, seen from the call's host: each input request
//! goes to the host as a server request (a session host answers it on its stream; a stateless
//! host gets an `input_required` round of its own under the same key), and once every answer
//! is in, the call goes to the upstream again with them and the request state. The route stays
//! in the router meanwhile, so progress, cancellation and the final answer find the host.

use std::sync::Arc;

use actix::Recipient;
use serde_json::{json, Map, Value};

use crate::mcp::jsonrpc::{self, code};
use crate::messages::{ServerRequest, SessionId};
use crate::upstream::UpstreamError;

/// Input requests one round may carry: each becomes a request to the host, and the answer is
/// the upstream's to size.
const MAX_INPUTS: usize = 64;
/// An input's key is the upstream's to choose (fastmcp-tasks: the task id, a colon, 16 hex
/// digits); one longer than this is not passed to hosts.
const MAX_KEY: usize = 512;

/// A 2026 upstream asked for input on the host request behind `up_id`: `answer` (its
/// `input_required` result) goes to `session`'s host, then `request` goes again.
pub struct InputRound {
    pub up_id: Value,
    pub session: SessionId,
    pub request: Value,
    pub answer: Value,
}

/// Where one input request of a round goes: a host session, under the id it will see.
pub struct Asked {
    pub session: SessionId,
    pub port: Recipient<ServerRequest>,
    /// The host request whose stream carries it.
    pub related: Option<Value>,
    pub host_side_id: String,
}

/// What a round needs of the proxy path. The router implements it; a round is handed the
/// router as this, so this module depends on nothing above it.
pub trait InputPath: Send + Sync + 'static {
    /// Where the input request `key` of the round for `up_id` goes.
    fn ask_target(&self, up_id: &Value, key: &str) -> Option<Asked>;
    fn server_request_done(&self, host_side_id: &str);
    fn give_up(&self, up_id: &Value, code: i64, why: String);
    fn is_pending(&self, up_id: &Value) -> bool;
    fn send(&self, msg: Value) -> Result<(), UpstreamError>;
}

/// Runs a round in the background.
pub fn spawn(path: Arc<dyn InputPath>, round: InputRound) {
    tokio::spawn(ask_host(path, round));
}

/// One round for the upstream request `up_id` of `session`, which `answer` asked for input;
/// `request` is the call as it was sent.
pub async fn ask_host(router: Arc<dyn InputPath>, round: InputRound) {
    let InputRound { up_id, session, request, answer } = round;
    let result = answer.get("result").cloned().unwrap_or(Value::Null);
    let wanted = result.get("inputRequests").and_then(Value::as_object).cloned().unwrap_or_default();
    let responses = match ask_inputs(&*router, &up_id, &session, wanted).await {
        Ok(r) => r,
        Err((c, why)) => return router.give_up(&up_id, c, why),
    };
    if !router.is_pending(&up_id) {
        return; // cancelled or timed out while the host was answering
    }
    if let Err(why) = router.send(with_answers(request, responses, result.get("requestState"))) {
        router.give_up(&up_id, code::UPSTREAM_UNAVAILABLE, why.to_string());
    }
}

/// Asks the host of `session` (whose request is `up_id`) what the upstream wants (`wanted`:
/// input requests by key); the answers by key, or why the call is to be given up (code, why).
pub async fn ask_inputs(
    router: &dyn InputPath,
    up_id: &Value,
    session: &SessionId,
    wanted: Map<String, Value>,
) -> Result<Map<String, Value>, (i64, String)> {
    if wanted.len() > MAX_INPUTS {
        return Err((
            code::INTERNAL_ERROR,
            format!("the upstream asked for {} inputs at once (at most {MAX_INPUTS}); the call was given up", wanted.len()),
        ));
    }
    if wanted.keys().any(|k| k.len() > MAX_KEY) {
        return Err((
            code::INTERNAL_ERROR,
            format!("the upstream named an input by a key longer than {MAX_KEY} characters; the call was given up"),
        ));
    }
    let mut asks = Vec::new();
    for (key, ask) in wanted {
        let method = ask.get("method").and_then(Value::as_str).unwrap_or_default().to_string();
        let Some(target) = router.ask_target(up_id, &key) else {
            return Err((code::INTERNAL_ERROR, format!("the upstream asked for {method}, but the host is gone")));
        };
        let host_side_id = target.host_side_id;
        if target.session != *session {
            router.server_request_done(&host_side_id);
            return Err((code::INTERNAL_ERROR, "the call's host is gone".into()));
        }
        let params = ask.get("params").cloned().unwrap_or(json!({}));
        let msg = jsonrpc::request(json!(host_side_id.clone()), &method, params);
        let (port, related) = (target.port, target.related);
        asks.push(async move {
            let res = port.send(ServerRequest { msg, related, key: Some(key.clone()) }).await;
            (key, host_side_id, method, res)
        });
    }
    let mut responses = Map::new();
    for (key, host_side_id, method, res) in futures::future::join_all(asks).await {
        router.server_request_done(&host_side_id);
        match res.ok().map(|a| (a.get("result").cloned(), a.get("error").cloned())) {
            Some((Some(r), _)) => {
                responses.insert(key, r);
            }
            Some((None, Some(err))) => {
                let c = err.get("code").and_then(Value::as_i64).unwrap_or(code::INTERNAL_ERROR);
                let m = err.get("message").and_then(Value::as_str).unwrap_or("no reason given");
                return Err((c, format!("the host could not answer the upstream's {method}: {m}")));
            }
            _ => return Err((code::INTERNAL_ERROR, format!("the host did not answer the upstream's {method}"))),
        }
    }
    Ok(responses)
}

/// The call again, with the host's answers and the upstream's request state (if it gave one).
pub fn with_answers(mut request: Value, responses: Map<String, Value>, state: Option<&Value>) -> Value {
    if !request.get("params").is_some_and(Value::is_object) {
        request["params"] = json!({});
    }
    let params = request["params"].as_object_mut().expect("made an object above");
    params.insert("inputResponses".into(), Value::Object(responses));
    match state {
        Some(s) => params.insert("requestState".into(), s.clone()),
        None => params.remove("requestState"),
    };
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_call_goes_again_with_answers_and_state_whatever_its_params_were() {
        let mut answers = Map::new();
        answers.insert("who".into(), json!({"action": "accept"}));
        let again = with_answers(json!({"id": 3, "method": "tools/call", "params": ["odd"]}), answers.clone(), Some(&json!("s1")));
        assert_eq!(again["params"]["inputResponses"]["who"]["action"], "accept");
        assert_eq!(again["params"]["requestState"], "s1");
        let stale = json!({"id": 3, "method": "tools/call", "params": {"name": "t", "requestState": "old"}});
        assert!(with_answers(stale, answers, None)["params"].get("requestState").is_none(), "no state now: none sent");
    }
}
