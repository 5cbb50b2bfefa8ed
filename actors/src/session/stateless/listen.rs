//! `subscriptions/listen` for a stateless host: the request stays open and its stream carries
//! the change notifications it asked for (and that `server/discover` promised), each tagged
//! with the subscription.

use serde_json::{json, Value};

use super::{Call, Listen};
use crate::mcp::jsonrpc::{self, code};
use crate::mcp::{revision_2026, ui_meta};
use crate::messages::Subscribe;
use crate::session::plan;
use crate::session::HostSession;

impl HostSession {
    /// `subscriptions/listen`: the request stays open and its stream carries the change
    /// notifications asked for, each tagged with the subscription (the request's id). Only what
    /// `server/discover` promised is honoured; the acknowledgement says which.
    pub(in crate::session) fn listen(&mut self, msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        let Some(wanted) = msg.pointer("/params/notifications").and_then(Value::as_object).cloned() else {
            return self.answer(jsonrpc::error(id, code::INVALID_PARAMS, "params.notifications is required: which changes to hear of (toolsListChanged, promptsListChanged, resourcesListChanged, resourceSubscriptions)"));
        };
        let caps = revision_2026::stateless_capabilities(ui_meta::merge_capabilities(&self.deps.fleet.capabilities(), self.dialect()));
        let has = |cap: &str, flag: &str| revision_2026::declares(&caps, cap, flag);
        let asked = |k: &str| wanted.get(k).and_then(Value::as_bool) == Some(true);
        let listen = Listen {
            id: id.clone(),
            tools: asked("toolsListChanged") && has("tools", "listChanged"),
            prompts: asked("promptsListChanged") && has("prompts", "listChanged"),
            resources: asked("resourcesListChanged") && has("resources", "listChanged"),
        };
        let mut honoured = serde_json::Map::new();
        for (k, on) in
            [("toolsListChanged", listen.tools), ("promptsListChanged", listen.prompts), ("resourcesListChanged", listen.resources)]
        {
            if on {
                honoured.insert(k.into(), json!(true));
            }
        }
        let mut uris: Vec<String> = wanted
            .get("resourceSubscriptions")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).take(256).map(str::to_string).collect())
            .unwrap_or_default();
        uris.sort();
        uris.dedup();
        let mut subscribed = Vec::new();
        for uri in uris {
            if self.ui() && plan::is_our_page(&self.deps.fleet, &self.deps.fleet.catalog(), &uri) {
                self.ui_subscriptions.insert(uri.clone());
                subscribed.push(json!(uri));
            } else if has("resources", "subscribe") {
                self.subscribe_upstream(uri.clone());
                subscribed.push(json!(uri));
            }
        }
        if !subscribed.is_empty() {
            honoured.insert("resourceSubscriptions".into(), Value::Array(subscribed));
        }
        let ack = jsonrpc::notification("notifications/subscriptions/acknowledged", json!({"notifications": honoured}));
        let Some(call) = self.call_mut() else { return };
        call.listen = Some(listen);
        if let Some((ack, id)) = call.for_listener(ack) {
            self.send_related(ack, Some(&id));
        }
    }

    /// Holds an upstream subscription for a listening host. The upstream side files it under
    /// this session, and releases it when the session stops, whenever that is.
    fn subscribe_upstream(&mut self, uri: String) {
        if let Some((server, own)) = self.deps.fleet.server_for_uri(&uri) {
            let msg = jsonrpc::request(json!(format!("listen:{uri}")), "resources/subscribe", json!({"uri": own}));
            server.port.subscribe.do_send(Subscribe { session: self.id.clone(), msg });
            self.subscriptions.insert(uri);
        }
    }
}

impl Call {
    /// A change notification for a listening host, tagged with its subscription, and the
    /// listen request whose stream carries it; `None` when the host did not ask for it (or is
    /// not listening).
    pub(in crate::session) fn for_listener(&self, mut msg: Value) -> Option<(Value, Value)> {
        let listen = self.listen.as_ref()?;
        let wanted = match jsonrpc::method(&msg)? {
            "notifications/tools/list_changed" => listen.tools,
            "notifications/prompts/list_changed" => listen.prompts,
            "notifications/resources/list_changed" => listen.resources,
            // Sent only for URIs this session subscribed (see HostEvent::ResourceUpdated).
            "notifications/resources/updated" | "notifications/subscriptions/acknowledged" => true,
            _ => false,
        };
        if !wanted {
            return None;
        }
        if !msg.get("params").is_some_and(Value::is_object) {
            msg["params"] = json!({});
        }
        if let Some(params) = msg["params"].as_object_mut() {
            let meta = params.entry("_meta").or_insert_with(|| json!({}));
            if let Some(m) = meta.as_object_mut() {
                m.insert(revision_2026::META_SUBSCRIPTION.into(), listen.id.clone());
            }
        }
        Some((msg, listen.id.clone()))
    }
}
