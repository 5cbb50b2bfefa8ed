//! A 2026 upstream's `input_required` answer, seen from the call's host: each input request
//! goes to the host as a server request (a session host answers it on its stream; a stateless
//! host gets an `input_required` round of its own under the same key), and once every answer
//! is in, the call goes to the upstream again with them and the request state. The route stays
//! in the router meanwhile, so progress, cancellation and the final answer find the host.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::jsonrpc::{self, code};
use crate::messages::ServerRequest;
use crate::router::{InputRound, Router};

/// Input requests one round may carry: each becomes a request to the host, and the answer is
/// the upstream's to size.
const MAX_INPUTS: usize = 64;

/// Runs a round in the background: what the router is given (`Router::set_input_runner`).
pub fn spawn(router: Arc<Router>, round: InputRound) {
    tokio::spawn(ask_host(router, round));
}

/// One round for the upstream request `up_id` of `session`, which `answer` asked for input;
/// `request` is the call as it was sent.
pub async fn ask_host(router: Arc<Router>, round: InputRound) {
    let InputRound { up_id, session, request, answer } = round;
    let result = answer.get("result").cloned().unwrap_or(Value::Null);
    let wanted = result.get("inputRequests").and_then(Value::as_object).cloned().unwrap_or_default();
    if wanted.len() > MAX_INPUTS {
        let why = format!("the upstream asked for {} inputs at once (at most {MAX_INPUTS}); the call was given up", wanted.len());
        return router.give_up(&up_id, code::INTERNAL_ERROR, why);
    }
    let mut asks = Vec::new();
    for (key, ask) in wanted {
        let method = ask.get("method").and_then(Value::as_str).unwrap_or_default().to_string();
        let Some((target, host_side_id)) = router.server_request_target(json!(format!("input:{key}")), Some(&up_id)) else {
            return router.give_up(&up_id, code::INTERNAL_ERROR, format!("the upstream asked for {method}, but the host is gone"));
        };
        if target.session != session {
            router.server_request_done(&host_side_id);
            return router.give_up(&up_id, code::INTERNAL_ERROR, "the call's host is gone".into());
        }
        let params = ask.get("params").cloned().unwrap_or(json!({}));
        let msg = jsonrpc::request(json!(host_side_id.clone()), &method, params);
        let port = target.port.request.clone();
        let related = target.related.clone();
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
                return router.give_up(&up_id, c, format!("the host could not answer the upstream's {method}: {m}"));
            }
            _ => return router.give_up(&up_id, code::INTERNAL_ERROR, format!("the host did not answer the upstream's {method}")),
        }
    }
    if !router.is_pending(&up_id) {
        return; // cancelled or timed out while the host was answering
    }
    if let Err(why) = router.send(with_answers(request, responses, result.get("requestState"))) {
        router.give_up(&up_id, code::UPSTREAM_UNAVAILABLE, why);
    }
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
