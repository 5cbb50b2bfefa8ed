//! Input rounds for a stateless host: server requests gathered into an `input_required`
//! answer, the call parked under a fresh request state, and the host's retry with answers
//! resuming it.

use std::time::Instant;

use actix::prelude::*;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::{self_ref, Input, GATHER, PARK_LIMIT};
use crate::mcp::jsonrpc::{self, code};
use crate::mcp::revision_2026;
use crate::messages::{ServerRequest, Sink};
use crate::session::outlet::Outlet;
use crate::session::{Era, HostSession};

impl HostSession {
    /// A request to a stateless session: the first one starts the call (its own `_meta` keys
    /// stay here); a later one is the host's retry with answers. `Some` hands the request on to
    /// the usual handling.
    pub(in crate::session) fn stateless_request(
        &mut self,
        ctx: &mut Context<Self>,
        mut msg: Value,
        sink: Option<Sink>,
        request_id: &str,
    ) -> Option<(Value, Option<Sink>)> {
        let Era::Stateless(call) = &mut self.era else { return Some((msg, sink)) };
        // A task's input comes in tasks/update's own inputResponses: no round of a call.
        let round_trip = jsonrpc::method(&msg) != Some("tasks/update");
        let (responses, presented) = if round_trip { revision_2026::take_round_trip(&mut msg) } else { (None, None) };
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let Some(original) = call.original.clone() else {
            call.set_leg(&msg);
            // A first call that carries answers has nothing to answer yet: they are ignored.
            revision_2026::strip_request_meta(&mut msg);
            call.method = jsonrpc::method(&msg).unwrap_or_default().to_string();
            call.original = Some(msg.clone());
            call.host_id = Some(id.clone());
            call.reply_id = Some(id);
            return Some((msg, sink));
        };
        let refuse = |why: &str| {
            if let Some(s) = &sink {
                let err = jsonrpc::error(
                    id.clone(),
                    code::INVALID_PARAMS,
                    format!("Invalid or expired requestState: {why}; call again without it"),
                );
                let _ = s.try_send(err);
            }
        };
        if !revision_2026::same_call(&original, &msg) {
            refuse("it was issued for a different request (method, name or arguments differ)");
            return None;
        }
        if presented.is_none() || presented != call.state {
            refuse("it was already used"); // two retries raced with one state: one wins
            return None;
        }
        if let Some(held) = call.held.take() {
            // The call ended while parked: its answer goes to this retry.
            if let Some(old) = call.state.take() {
                call.parked.remove(&old);
            }
            call.reply_id = Some(id);
            let answer = self.stateless_answer(held);
            if let Some(s) = &sink {
                let _ = s.try_send(answer);
            }
            self.stateless_finish();
            return None;
        }
        let key = jsonrpc::id_key(call.host_id.as_ref().unwrap_or(&Value::Null));
        let Some(f) = self.in_flight.get_mut(&key) else {
            refuse("that call has already finished");
            return None;
        };
        if f.sink.as_ref().is_some_and(|o| !o.is_closed()) {
            refuse("that call is already being resumed by another request");
            return None;
        }
        // The state is spent: the next round (if any) gets a new one.
        if let Some(old) = call.state.take() {
            call.parked.remove(&old);
        }
        call.parked_since = None;
        call.hung_up = false;
        if round_trip {
            call.set_leg(&msg);
        }
        f.sink = sink.map(Outlet::new);
        if let (Some(host_id), Some(router)) = (call.host_id.clone(), f.route.as_ref()) {
            router.hold_route(&self.id, &host_id, false);
        }
        f.request_id = request_id.to_string();
        call.reply_id = Some(id);
        let responses = responses.and_then(|r| r.as_object().cloned()).unwrap_or_default();
        for (k, answer) in responses {
            let Some(input) = call.inputs.get(&k) else { continue }; // unknown keys are ignored
            let method = jsonrpc::method(&input.request).unwrap_or_default();
            if !revision_2026::valid_response(method, &answer) {
                continue; // asked again below, rather than passing garbage upstream
            }
            let input = call.inputs.remove(&k).expect("present");
            let host_side_id = jsonrpc::id(&input.request).cloned().unwrap_or(Value::Null);
            let _ = input.reply.send(jsonrpc::result(host_side_id, answer));
        }
        if !call.inputs.is_empty() {
            self.flush_inputs(ctx);
        }
        None
    }

    /// A server request during a stateless call: it waits here until the host answers it in a
    /// retry. A capability the host did not declare is refused at once.
    pub(in crate::session) fn stateless_server_request(&mut self, ctx: &mut Context<Self>, r: ServerRequest) -> ResponseFuture<Value> {
        let id = jsonrpc::id(&r.msg).cloned().unwrap_or(Value::Null);
        let method = jsonrpc::method(&r.msg).unwrap_or_default().to_string();
        let Some(cap) = revision_2026::capability_for(&method) else {
            return Box::pin(async move {
                jsonrpc::error(id, code::METHOD_NOT_FOUND, format!("{method} cannot be asked of a {} host", revision_2026::VERSION))
            });
        };
        if self.negotiated.as_ref().is_none_or(|n| n.client_caps.get(cap).is_none()) {
            return Box::pin(async move {
                jsonrpc::error_with_data(
                    id,
                    revision_2026::errors::MISSING_CAPABILITY,
                    format!("the host did not declare the {cap} capability, so it cannot answer {method}"),
                    json!({"requiredCapabilities": {cap: {}}}),
                )
            });
        }
        let Era::Stateless(call) = &mut self.era else {
            return Box::pin(async move {
                jsonrpc::error(id, code::INTERNAL_ERROR, format!("{method} reached a session that is not stateless"))
            });
        };
        if call.listen.is_some() {
            return Box::pin(async move {
                jsonrpc::error(id, code::METHOD_NOT_FOUND, format!("the host is only listening for changes; it cannot answer {method}"))
            });
        }
        call.counter += 1;
        // A 2026 upstream's own key is kept (its host may expect it); otherwise one of ours.
        let key = match r.key.filter(|k| !k.is_empty() && k.len() <= 256 && !call.inputs.contains_key(k)) {
            Some(k) => k,
            None => revision_2026::input_key(&method, call.counter),
        };
        let (tx, rx) = oneshot::channel();
        call.inputs.insert(key, Input { request: r.msg, reply: tx });
        if !call.flush_scheduled {
            call.flush_scheduled = true;
            ctx.run_later(GATHER, |act, ctx| {
                if let Some(c) = act.call_mut() {
                    c.flush_scheduled = false;
                }
                act.flush_inputs(ctx);
            });
        }
        Box::pin(async move {
            match tokio::time::timeout(PARK_LIMIT, rx).await {
                Ok(Ok(answer)) => answer,
                _ => jsonrpc::error(id, code::INTERNAL_ERROR, format!("the host did not answer {method} (it did not retry the call)")),
            }
        })
    }

    /// Answers the host's current request with the inputs still wanted, and parks the call
    /// under a new request state. Nothing happens while the host holds no open request.
    fn flush_inputs(&mut self, ctx: &mut Context<Self>) {
        let info = self.server_info();
        let me = self_ref(ctx, self.flags.clone());
        let Era::Stateless(call) = &mut self.era else { return };
        if call.inputs.is_empty() {
            return;
        }
        let key = jsonrpc::id_key(call.host_id.as_ref().unwrap_or(&Value::Null));
        let Some(mut outlet) = self.in_flight.get_mut(&key).and_then(|f| f.sink.take()) else { return };
        // Unguessable and single use: a tampered or replayed state finds nothing.
        let state = uuid::Uuid::new_v4().simple().to_string() + &uuid::Uuid::new_v4().simple().to_string();
        let wanted: Vec<(String, Value)> = call.inputs.iter().map(|(k, i)| (k.clone(), i.request.clone())).collect();
        let answer = jsonrpc::result(call.reply_id.clone().unwrap_or(Value::Null), revision_2026::input_required(&wanted, &state));
        let answer = revision_2026::dress_answer(answer, None, &info);
        call.parked.insert(state.clone(), me, self.who.key.clone());
        call.state = Some(state);
        call.parked_since = Some(Instant::now());
        // While the host answers, the upstream request's deadline does not run.
        if let (Some(host_id), Some(router)) = (call.host_id.clone(), self.in_flight.get(&key).and_then(|f| f.route.as_ref())) {
            router.hold_route(&self.id, &host_id, true);
        }
        // The request's stream ends with this answer (the outlet is dropped once it is out).
        if self.push(&mut outlet, answer, "request").is_none() && outlet.backlogged() {
            self.draining.push(outlet);
        }
    }
}
