//! Upstream subscriptions held on behalf of hosts: ref-counted per (resource, session), so a
//! session leaving releases exactly what it held; the first holder's request goes upstream
//! (its answer is the upstream's own), later ones are answered here. With a 2026 upstream
//! they ride the one `subscriptions/listen` the supervisor holds, reopened when the set
//! changes and after the upstream ends it.

use std::time::Duration;

use actix::prelude::*;
use serde_json::{json, Value};

use super::ServerSupervisor;
use crate::mcp::jsonrpc::{self, code};
use crate::mcp::revision_2026;
use crate::messages::{SessionId, Subscribe, Unregister};

impl ServerSupervisor {
    /// (Re)opens the one `subscriptions/listen` held with a 2026 upstream: list changes it
    /// declares, and the resources hosts subscribed to. The old one, if any, is cancelled.
    pub(super) fn listen_upstream(&mut self) {
        if let Some(old) = self.listen.take() {
            self.router.end_lasting(&old);
        }
        let caps = self.init.as_ref().and_then(|i| i.get("capabilities").cloned()).unwrap_or(json!({}));
        let has = |cap: &str, flag: &str| revision_2026::declares(&caps, cap, flag);
        let mut wanted = serde_json::Map::new();
        for (key, cap) in [("toolsListChanged", "tools"), ("promptsListChanged", "prompts"), ("resourcesListChanged", "resources")] {
            if has(cap, "listChanged") {
                wanted.insert(key.into(), json!(true));
            }
        }
        if has("resources", "subscribe") && !self.subscriptions.is_empty() {
            wanted.insert("resourceSubscriptions".into(), json!(self.subscriptions.keys().collect::<Vec<_>>()));
        }
        if wanted.is_empty() {
            return;
        }
        let (id, rx) = self.router.lasting_request("subscriptions/listen", json!({"notifications": wanted}));
        self.listen = Some(id.clone());
        let gen = self.generation;
        let addr = self.self_addr.clone();
        tokio::spawn(async move {
            let end = rx.await.unwrap_or(Value::Null);
            if end.is_null() {
                return; // ended by us (resubscribing) or with the connection
            }
            if end.pointer("/error/code").and_then(Value::as_i64) == Some(code::METHOD_NOT_FOUND) {
                tracing::warn!(
                    component = "upstream",
                    event = "listen_refused",
                    "the upstream does not serve subscriptions/listen: list changes and resource updates will not reach hosts"
                );
                return;
            }
            // Ended by the upstream, gracefully or with a broken stream: listen again shortly
            // (at most every 2 s however often it fails).
            tokio::time::sleep(Duration::from_secs(2)).await;
            if let Some(a) = addr {
                a.do_send(Relisten { gen, id });
            }
        });
    }

    /// `session` no longer holds `uri`; the upstream subscription goes with its last holder.
    pub(super) fn drop_holder(&mut self, uri: &str, session: &SessionId) {
        let Some(holders) = self.subscriptions.get_mut(uri) else { return };
        holders.remove(session);
        if holders.is_empty() {
            self.subscriptions.remove(uri);
            self.release_upstream(uri);
        }
    }

    pub(super) fn release_upstream(&mut self, uri: &str) {
        if self.router.upstream_is_2026() {
            self.listen_upstream();
        } else {
            drop(self.router.internal_request("resources/unsubscribe", json!({"uri": uri})));
        }
    }
}

/// A notification from our listen stream, without the tag that names our subscription (hosts
/// have their own).
pub(super) fn without_subscription(mut msg: Value) -> Value {
    if let Some(meta) = msg.pointer_mut("/params/_meta").and_then(Value::as_object_mut) {
        meta.remove(revision_2026::META_SUBSCRIPTION);
        if meta.is_empty() {
            if let Some(p) = msg.get_mut("params").and_then(Value::as_object_mut) {
                p.remove("_meta");
            }
        }
    }
    msg
}

/// The listen stream ended on the upstream's side: open it again if nothing changed meanwhile.
struct Relisten {
    gen: u64,
    id: Value,
}

impl Message for Relisten {
    type Result = ();
}

impl Handler<Relisten> for ServerSupervisor {
    type Result = ();

    fn handle(&mut self, r: Relisten, _ctx: &mut Self::Context) {
        if r.gen == self.generation && self.listen.as_ref() == Some(&r.id) {
            self.listen = None;
            self.listen_upstream();
        }
    }
}

/// A session left: release its upstream subscriptions (its routes left the router already).
impl Handler<Unregister> for ServerSupervisor {
    type Result = ();

    fn handle(&mut self, u: Unregister, _ctx: &mut Self::Context) {
        let held: Vec<String> = self.subscriptions.iter().filter(|(_, h)| h.contains(&u.session)).map(|(uri, _)| uri.clone()).collect();
        for uri in held {
            self.drop_holder(&uri, &u.session);
        }
    }
}

impl Handler<Subscribe> for ServerSupervisor {
    type Result = ResponseActFuture<Self, Value>;

    fn handle(&mut self, s: Subscribe, _ctx: &mut Self::Context) -> Self::Result {
        let uri = s.msg.pointer("/params/uri").and_then(Value::as_str).unwrap_or_default().to_string();
        let subscribe = jsonrpc::method(&s.msg) == Some("resources/subscribe");
        let id = jsonrpc::id(&s.msg).cloned().unwrap_or(Value::Null);
        if !subscribe {
            self.drop_holder(&uri, &s.session);
            return Box::pin(fut::ready(jsonrpc::result(id, json!({}))));
        }
        let held = self.subscriptions.get(&uri).is_some_and(|h| !h.is_empty());
        if held || self.router.upstream_is_2026() {
            self.subscriptions.entry(uri).or_default().insert(s.session);
            if !held {
                // 2026: subscriptions ride on our one listen stream, opened again with the new set.
                self.listen_upstream();
            }
            return Box::pin(fut::ready(jsonrpc::result(id, json!({}))));
        }
        let router = self.router.clone();
        let session = s.session.clone();
        Box::pin(async move { router.forward(s.session, s.msg).await }.into_actor(self).map(move |answer, act, _| {
            if answer.get("result").is_some() {
                if act.router.is_registered(&session) {
                    act.subscriptions.entry(uri).or_default().insert(session);
                } else if !act.subscriptions.contains_key(&uri) {
                    act.release_upstream(&uri); // the session left while the upstream answered
                }
            }
            answer
        }))
    }
}
