//! `subscriptions/listen` for a stateless host: the request stays open and its stream carries
//! the change notifications it asked for (and that `server/discover` promised), each tagged
//! with the subscription. Each resource is planned as a `resources/subscribe` would be (the
//! rules, the profile), recorded, and refused by name when it may not be heard.

use serde_json::{json, Value};

use super::{Call, Listen};
use crate::audit::Event;
use crate::mcp::jsonrpc::{self, code};
use crate::mcp::{revision_2026, ui_meta};
use crate::messages::Subscribe;
use crate::session::plan::{self, Facts, Plan};
use crate::session::HostSession;

/// Resource URIs one listen request may name (more are refused by name).
const MAX_LISTENED: usize = 256;

impl HostSession {
    /// `subscriptions/listen`: the request stays open and its stream carries the change
    /// notifications asked for, each tagged with the subscription (the request's id). Only what
    /// `server/discover` promised and the rules allow is honoured; the acknowledgement says
    /// which, and names what was refused and why. A session-era host is answered at once.
    pub(in crate::session) fn listen(&mut self, msg: Value) {
        let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
        if self.call().is_none() {
            let why = format!(
                "subscriptions/listen is part of MCP {} (stateless); in this session use resources/subscribe, and the session stream (GET) for changes",
                revision_2026::VERSION
            );
            return self.answer(jsonrpc::error(id, code::METHOD_NOT_FOUND, why));
        }
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
            tasks: Vec::new(),
            settling: Default::default(),
        };
        let (tasks, mut refused) = self.listened_tasks(&wanted);
        let mut honoured = serde_json::Map::new();
        for (k, on) in
            [("toolsListChanged", listen.tools), ("promptsListChanged", listen.prompts), ("resourcesListChanged", listen.resources)]
        {
            if on {
                honoured.insert(k.into(), json!(true));
            }
        }
        let asked_uris = wanted.get("resourceSubscriptions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let mut uris: Vec<String> = asked_uris.iter().filter_map(Value::as_str).map(str::to_string).collect();
        uris.sort();
        uris.dedup();
        let mut subscribed = Vec::new();
        let can_subscribe = has("resources", "subscribe");
        // Past the bound, one entry says how many were left out (the answer stays small whatever
        // the host sent).
        if uris.len() > MAX_LISTENED {
            let left_out = uris.len() - MAX_LISTENED;
            uris.truncate(MAX_LISTENED);
            refused.push(json!({"uri": null, "reason": format!("{left_out} more resources were not taken: one listen request may name at most {MAX_LISTENED}")}));
        }
        for uri in uris {
            match self.listen_to(&id, &uri, can_subscribe) {
                Ok(()) => subscribed.push(json!(uri)),
                Err(reason) => refused.push(json!({"uri": crate::audit::bounded(&uri), "reason": reason})),
            }
        }
        if !subscribed.is_empty() {
            honoured.insert("resourceSubscriptions".into(), Value::Array(subscribed));
        }
        if !tasks.is_empty() {
            honoured.insert("taskIds".into(), json!(tasks));
        }
        let listen = Listen { tasks, ..listen };
        let mut params = json!({"notifications": honoured});
        if !refused.is_empty() {
            params["refused"] = Value::Array(refused);
        }
        let ack = jsonrpc::notification("notifications/subscriptions/acknowledged", params);
        let Some(call) = self.call_mut() else { return };
        call.listen = Some(listen);
        if let Some((ack, id)) = call.for_listener(ack) {
            self.send_related(ack, Some(&id));
        }
    }

    /// One resource of a listen request, planned as `resources/subscribe` would be: kept, or
    /// why not (a denial is recorded as one).
    fn listen_to(&mut self, listen_id: &Value, uri: &str, can_subscribe: bool) -> Result<(), String> {
        let mut msg = jsonrpc::request(listen_id.clone(), "resources/subscribe", json!({"uri": uri}));
        let profile = self.profile_now().map_err(|gone| gone.to_string())?;
        let facts = Facts { ui: self.ui(), profile: profile.as_deref() };
        let catalog = self.deps.fleet.catalog();
        let deps = self.deps.clone();
        match plan::plan(&mut msg, &deps.fleet, &catalog, facts, &|t| deps.page_rule(t), &self.access()) {
            Plan::SubscribePage { uri, .. } => {
                self.audit_listened(listen_id, &uri, None);
                self.ui_subscriptions.insert(uri);
                Ok(())
            }
            Plan::Subscribe { server, uri, .. } if can_subscribe => {
                self.audit_listened(listen_id, &uri, Some(server.name.clone()));
                self.subscribe_upstream(uri);
                Ok(())
            }
            Plan::Subscribe { .. } => Err("the server behind it does not support resource subscriptions".into()),
            Plan::Denied(denied) => {
                self.audit_denied(&msg, &denied);
                Err(denied.error(Value::Null)["error"]["message"].as_str().unwrap_or("not allowed").to_string())
            }
            Plan::Refuse(err) => Err(err["error"]["message"].as_str().unwrap_or("refused").to_string()),
            _ => Err("not a resource that can be listened to".into()),
        }
    }

    /// A resource a listen request now hears of: one line in the trail.
    fn audit_listened(&self, listen_id: &Value, uri: &str, server: Option<std::sync::Arc<str>>) {
        if self.deps.audit.is_on() {
            let mut e = self.request_entry(Event::Subscribe, listen_id).tool(uri);
            e.server = server;
            e.outcome = "ok";
            self.deps.audit.record(e);
        }
    }

    /// Holds an upstream subscription for a listening host. The upstream side files it under
    /// this session, and releases it when the session stops, whenever that is.
    fn subscribe_upstream(&mut self, uri: String) {
        if self.subscriptions.contains(&uri) {
            return;
        }
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
            // Sent only for the tasks it took (see `listen_tasks`).
            "notifications/tasks" => !listen.tasks.is_empty(),
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
