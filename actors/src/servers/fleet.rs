//! The upstream servers behind this endpoint, as sessions and the edge see them: each with its
//! router (the proxy path to it) and its supervisor's port, the registry of every server's
//! tools, and the connected hosts every router reaches. One server behind `--upstream` is a
//! fleet of one whose names pass unchanged ([`Naming::Bare`]).
//!
//! The set of servers can change while hosts stay connected (the servers file reloaded): the
//! list is an `Arc` swapped under a lock, and each request works with the list it took.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::catalog::{Catalog, Naming};
use super::names;
use super::registry::Registry;
use crate::messages::{HostEvent, SessionId, SessionPort, Unregister, UpstreamPort};
use crate::process::locks::{Recover, RecoverRw};
use crate::proxy::hosts::Hosts;
use crate::proxy::router::Router;
use crate::upstream::UpstreamError;

/// One upstream server.
pub struct Server {
    pub name: Arc<str>,
    pub naming: Naming,
    pub router: Arc<Router>,
    pub port: UpstreamPort,
    /// `/readyz` is 200 only when every required server is ready.
    pub required: bool,
    /// stdio, streamable-http or sse (see `UpstreamSpec::transport`).
    pub transport: &'static str,
    /// `perPrincipal`: each person's calls go to their own connection, kept here; `router` then
    /// only stands for the server (its tool list, its readiness: on demand).
    pub pool: Option<Arc<super::principals::PrincipalPool>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("name", &self.name).field("naming", &self.naming).finish_non_exhaustive()
    }
}

impl Server {
    /// Its state in one word, for errors and `/readyz`.
    pub fn state(&self) -> &'static str {
        let s = self.router.status();
        match (s.ready, s.last_error.is_some()) {
            (true, _) => "ready",
            (false, true) => "down",
            (false, false) => "starting",
        }
    }
}

pub struct Fleet {
    servers: RwLock<Arc<Vec<Arc<Server>>>>,
    hosts: Arc<Hosts>,
    registry: Arc<Registry>,
    /// Prompt names hosts were listed (`<server>__<prompt>`, or a shortened one), so that
    /// `prompts/get` finds the server; bounded.
    prompts: Mutex<HashMap<String, (Arc<str>, String)>>,
}

/// Prompt names remembered at most (a list this long is re-learnt when it is listed again).
const MAX_PROMPT_NAMES: usize = 10_000;

impl Fleet {
    pub fn new(hosts: Arc<Hosts>, registry: Arc<Registry>) -> Arc<Self> {
        Arc::new(Fleet { servers: RwLock::new(Arc::default()), hosts, registry, prompts: Mutex::default() })
    }

    pub fn servers(&self) -> Arc<Vec<Arc<Server>>> {
        self.servers.reading().clone()
    }

    pub fn hosts(&self) -> &Arc<Hosts> {
        &self.hosts
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The tools hosts see now.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.registry.catalog()
    }

    /// Adds a server, or replaces the one of the same name.
    pub fn insert(&self, server: Arc<Server>) {
        let mut guard = self.servers.writing();
        let mut list: Vec<Arc<Server>> = guard.iter().filter(|s| s.name != server.name).cloned().collect();
        list.push(server);
        *guard = Arc::new(list);
    }

    /// Takes a server out (its tools leave the catalog separately, through the registry).
    pub fn remove(&self, name: &str) -> Option<Arc<Server>> {
        let mut guard = self.servers.writing();
        let gone = guard.iter().find(|s| &*s.name == name).cloned();
        *guard = Arc::new(guard.iter().filter(|s| &*s.name != name).cloned().collect());
        gone
    }

    pub fn by_name(&self, name: &str) -> Option<Arc<Server>> {
        self.servers().iter().find(|s| &*s.name == name).cloned()
    }

    /// The server whose names pass unchanged (the one behind `--upstream`), if there is one: it
    /// has every name no catalog entry has.
    pub fn bare(&self) -> Option<Arc<Server>> {
        let servers = self.servers();
        match servers.as_slice() {
            [only] if only.naming == Naming::Bare => Some(only.clone()),
            _ => None,
        }
    }

    /// The server a resource URI a host used belongs to, and the URI as that server knows it.
    pub fn server_for_uri(&self, uri: &str) -> Option<(Arc<Server>, String)> {
        if let Some(s) = self.bare() {
            return Some((s, uri.to_string()));
        }
        let (prefix, original) = names::split_uri(uri)?;
        let server = self.servers().iter().find(|s| matches!(&s.naming, Naming::Prefixed(p) if &**p == prefix)).cloned()?;
        Some((server, original))
    }

    /// Remembers that hosts know `server`'s prompt `own` as `shown`.
    pub fn remember_prompt(&self, shown: &str, server: &Arc<str>, own: &str) {
        let mut map = self.prompts.guard();
        if map.len() >= MAX_PROMPT_NAMES {
            map.clear();
        }
        map.insert(shown.to_string(), (server.clone(), own.to_string()));
    }

    /// The server and its own name for the prompt hosts call `name`: as listed, else by the
    /// `<server>__` it starts with.
    pub fn route_prompt(&self, name: &str) -> Option<(Arc<Server>, String)> {
        if let Some((server, own)) = self.prompts.guard().get(name).cloned() {
            return Some((self.by_name(&server)?, own));
        }
        self.servers().iter().find_map(|s| match &s.naming {
            Naming::Prefixed(p) => name.strip_prefix(&format!("{p}{}", names::SEPARATOR)).map(|own| (s.clone(), own.to_string())),
            Naming::Bare => None,
        })
    }

    // ------------------------------------------------------------ hosts

    /// A session of `owner`'s (the person who opened it) connected.
    pub fn register(&self, session: SessionId, port: SessionPort, owner: Arc<str>) {
        self.hosts.register(session, port, owner);
    }

    /// A session left: every server forgets its routes and releases its subscriptions.
    pub fn unregister(&self, session: &SessionId) {
        self.hosts.unregister(session);
        for s in self.servers().iter() {
            s.router.unregister(session);
            s.port.unregister.do_send(Unregister { session: session.clone() });
        }
    }

    pub fn broadcast(&self, ev: HostEvent) {
        self.hosts.broadcast(ev);
    }

    /// A page made here changed: its subscribers whom the rules let see it hear
    /// `resources/updated` (about its tool's server), UI hosts `resources/list_changed`.
    pub fn announce_page(&self, uri: &str) {
        let server = self.catalog().by_page(uri).map(|t| t.server.clone()).unwrap_or_else(|| Arc::from(""));
        let msg = crate::mcp::jsonrpc::notification("notifications/resources/updated", serde_json::json!({"uri": uri}));
        self.hosts.broadcast(HostEvent::heard(msg, crate::audience::Origin { server, owner: None }));
        self.hosts.broadcast(HostEvent::UiResourcesChanged);
    }

    // ------------------------------------------------------------ readiness

    /// Waits (at most `limit`) until the servers can be listed. One server behind `--upstream`
    /// must be ready (else the error says why); with several, each must be ready or have
    /// failed once, and a list is then made of the ones that are up.
    pub async fn settled(&self, limit: Duration) -> Result<(), UpstreamError> {
        if let Some(s) = self.bare() {
            return s.router.ready(limit).await.map(|_| ());
        }
        let servers = self.servers();
        futures::future::join_all(servers.iter().map(|s| s.router.settled(limit))).await;
        Ok(())
    }

    // ------------------------------------------------------------ who hosts talk to

    /// The capabilities hosts are told (before this service's own additions): the upstream's
    /// with one server; with several, what any ready server declares.
    pub fn capabilities(&self) -> Value {
        if let Some(s) = self.bare() {
            return s.router.status().init.as_ref().and_then(|i| i.get("capabilities").cloned()).unwrap_or(json!({}));
        }
        let mut caps = Map::new();
        for s in self.servers().iter() {
            let status = s.router.status();
            let Some(c) = status.init.as_ref().and_then(|i| i.get("capabilities")).and_then(Value::as_object) else { continue };
            for key in ["tools", "prompts", "resources", "logging", "completions"] {
                let Some(v) = c.get(key).filter(|v| v.is_object()) else { continue };
                let entry = caps.entry(key).or_insert_with(|| json!({}));
                for flag in ["listChanged", "subscribe"] {
                    if v.get(flag) == Some(&json!(true)) {
                        entry[flag] = json!(true);
                    }
                }
            }
        }
        // Tasks: what any server can do with them (each task goes back to the server that made it).
        let mut tasks = Map::new();
        for s in self.servers().iter() {
            let status = s.router.status();
            let Some(t) = status.init.as_ref().and_then(|i| i.pointer("/capabilities/tasks")).and_then(Value::as_object) else { continue };
            for key in ["list", "cancel"] {
                if t.get(key).is_some_and(Value::is_object) {
                    tasks.insert(key.into(), json!({}));
                }
            }
            if t.get("requests").and_then(|r| r.pointer("/tools/call")).is_some_and(Value::is_object) {
                tasks.insert("requests".into(), json!({"tools": {"call": {}}}));
            }
        }
        if !tasks.is_empty() {
            caps.insert("tasks".into(), Value::Object(tasks));
        }
        // The list is ours: it changes whenever any server's does, or a server comes or goes.
        caps.insert("tools".into(), json!({"listChanged": true}));
        if let Some(p) = caps.get_mut("prompts") {
            p["listChanged"] = json!(true);
        }
        Value::Object(caps)
    }

    /// Who answers: the upstream with one server; this service with several.
    pub fn server_info(&self) -> Value {
        let ours = json!({"name": "mcp-gen-ui", "version": env!("CARGO_PKG_VERSION")});
        match self.bare() {
            Some(s) => s.router.status().init.as_ref().and_then(|i| i.get("serverInfo").cloned()).unwrap_or(ours),
            None => ours,
        }
    }

    /// The instructions hosts are given: the upstream's; with several servers, each one's
    /// under its name, after a line that says how names are made.
    pub fn instructions(&self) -> Option<Value> {
        if let Some(s) = self.bare() {
            return s.router.status().init.as_ref().and_then(|i| i.get("instructions").cloned());
        }
        let mut text = String::from(
            "Several MCP servers are behind this endpoint. Each tool and prompt is named <server>__<name>; resources carry their server in their URI.",
        );
        for s in self.servers().iter() {
            let status = s.router.status();
            if let Some(i) = status.init.as_ref().and_then(|i| i.get("instructions")).and_then(Value::as_str) {
                text.push_str(&format!("\n\n[{}]\n{i}", s.name));
            }
        }
        Some(json!(text))
    }
}
