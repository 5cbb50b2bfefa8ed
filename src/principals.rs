//! Each person's credentials for the servers marked `perPrincipal`: the principal secrets file
//! (read at start, again on SIGHUP and when it changes; refused unless only its owner can read
//! it), and the starter that makes a person's own connection: the server's entry with that
//! person's `${principal:NAME}` values filled in, or a token exchanged for theirs, supervised on
//! one of the servers' arbiters like any server. Nothing here logs a secret.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use actix::{ArbiterHandle, Recipient, Supervisor};
use mcp_gen_ui_actors::messages::ToolsUpdated;
use mcp_gen_ui_actors::metrics::Metrics;
use mcp_gen_ui_actors::proxy::hosts::Hosts;
use mcp_gen_ui_actors::proxy::router::{Hearers, Router, Times};
use mcp_gen_ui_actors::servers::catalog::Naming;
use mcp_gen_ui_actors::servers::fleet::Fleet;
use mcp_gen_ui_actors::servers::principals::{PrincipalRefusal, StartPrincipal, Started};
use mcp_gen_ui_actors::servers::registry::Registry;
use mcp_gen_ui_actors::servers::supervisor::ServerSupervisor;
use mcp_gen_ui_actors::upstream::token_exchange::{Bearer, Exchanged};
use mcp_gen_ui_actors::upstream::{LinkLimits, UpstreamSpec};
use mcp_gen_ui_actors::who::Who;

use crate::config::file_error::FileError;
use crate::config::settings::servers::{ServerSettings, PRINCIPAL_VAR};

/// Principal name -> secret name -> value.
pub type SecretMap = HashMap<String, HashMap<String, String>>;

/// Reads the secrets file: a JSON object of objects of strings, readable by its owner only.
pub fn load_secrets(path: &Path) -> Result<SecretMap, FileError> {
    let meta = std::fs::metadata(path).map_err(FileError::read(path))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(FileError::Exposed { path: path.to_path_buf(), mode });
    }
    let text = std::fs::read_to_string(path).map_err(FileError::read(path))?;
    serde_json::from_str::<SecretMap>(&text).map_err(|e| FileError::NotJson {
        path: path.to_path_buf(),
        expected: r#"{"principal": {"NAME": "value"}}"#,
        line: e.line(),
        column: e.column(),
    })
}

/// The secrets in force (swapped whole on a reload).
#[derive(Default)]
pub struct Secrets {
    map: RwLock<Arc<SecretMap>>,
}

impl Secrets {
    pub fn new(map: SecretMap) -> Arc<Secrets> {
        Arc::new(Secrets { map: RwLock::new(Arc::new(map)) })
    }

    fn current(&self) -> Arc<SecretMap> {
        self.map.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the secrets; the principals whose secrets changed (their connections restart).
    pub fn replace(&self, new: SecretMap) -> Vec<String> {
        let old = self.current();
        let changed =
            old.keys().chain(new.keys()).filter(|p| old.get(*p) != new.get(*p)).cloned().collect::<std::collections::BTreeSet<_>>();
        *self.map.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(new);
        changed.into_iter().collect()
    }
}

/// `text` with each `${principal:NAME}` replaced by the person's value; the names missing.
fn fill(text: &str, mine: Option<&HashMap<String, String>>, missing: &mut Vec<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(PRINCIPAL_VAR) {
        out.push_str(&rest[..i]);
        let after = &rest[i + PRINCIPAL_VAR.len()..];
        let Some(end) = after.find('}') else { break };
        let name = &after[..end];
        match mine.and_then(|m| m.get(name)) {
            Some(v) => out.push_str(v),
            None if !missing.iter().any(|m| m == name) => missing.push(name.to_string()),
            None => {}
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Makes a person's own connection to one server.
pub struct Starter {
    pub settings: ServerSettings,
    pub naming: Naming,
    pub hosts: Arc<Hosts>,
    pub registry: Arc<Registry>,
    pub metrics: Arc<Metrics>,
    pub listeners: Vec<Recipient<ToolsUpdated>>,
    pub arbiter: ArbiterHandle,
    pub secrets: Arc<Secrets>,
}

impl Starter {
    /// The server's spec with `who`'s credentials.
    /// The server's spec with `who`'s credentials, and the exchange of their token if the
    /// server takes an exchanged one.
    fn spec_for(&self, who: &Who) -> Result<(UpstreamSpec, Option<Arc<Exchanged>>), PrincipalRefusal> {
        let server: Arc<str> = Arc::from(self.settings.name.as_str());
        let map = self.secrets.current();
        let mine = map.get(&*who.name);
        let mut missing = Vec::new();
        let mut spec = self.settings.spec.clone();
        match &mut spec {
            UpstreamSpec::Stdio { env, .. } => env.iter_mut().for_each(|(_, v)| *v = fill(v, mine, &mut missing)),
            UpstreamSpec::StreamableHttp { headers, .. } | UpstreamSpec::Sse { headers, .. } => {
                headers.iter_mut().for_each(|(_, v)| *v = fill(v, mine, &mut missing))
            }
        }
        if !missing.is_empty() {
            return Err(PrincipalRefusal::MissingSecrets { server, principal: who.name.clone(), names: missing });
        }
        let exchange = self.settings.per_principal.as_ref().and_then(|p| p.exchange.clone());
        let mut exchanged = None;
        if let (Some(cfg), UpstreamSpec::StreamableHttp { bearer, .. }) = (exchange, &mut spec) {
            let Some(token) = who.token.clone() else {
                return Err(PrincipalRefusal::NeedsAccessToken { server, principal: who.name.clone() });
            };
            let x = Arc::new(Exchanged::new(cfg, token, server, self.metrics.access.token_exchanges.clone()));
            *bearer = Some(Bearer(x.clone()));
            exchanged = Some(x);
        }
        Ok((spec, exchanged))
    }
}

impl StartPrincipal for Starter {
    fn start(&self, who: &Who) -> Result<Started, PrincipalRefusal> {
        let (spec, exchanged) = self.spec_for(who)?;
        let s = &self.settings;
        let name: Arc<str> = Arc::from(s.name.as_str());
        let prefix = match &self.naming {
            Naming::Prefixed(p) => Some(p.clone()),
            Naming::Bare => None,
        };
        let describe = format!("{} for {}", s.spec.describe(), who.name);
        let router = Router::new(
            name,
            prefix,
            Times::new(s.request_timeout),
            describe,
            self.hosts.clone(),
            self.metrics.clone(),
            Hearers::Person(who.key.clone()),
        );
        let mut supervisor = ServerSupervisor::new(spec, self.naming.clone(), router.clone(), self.registry.clone(), self.metrics.clone())
            .for_principal(who.name.clone())
            .with_limits(LinkLimits { max_message_bytes: s.max_message_bytes })
            .with_list_bounds(s.max_tools, s.max_tool_list_bytes);
        for l in &self.listeners {
            supervisor = supervisor.with_listener(l.clone());
        }
        let addr = Supervisor::start_in_arbiter(&self.arbiter, move |_| supervisor);
        Ok(Started { router, stop: addr.recipient(), exchanged })
    }
}

/// Stops people's connections idle past their server's idle time, every few seconds.
pub fn reap_idle(fleet: Arc<Fleet>) {
    actix_web::rt::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(2));
        loop {
            tick.tick().await;
            for s in fleet.servers().iter() {
                if let Some(pool) = &s.pool {
                    pool.reap_idle();
                }
            }
        }
    });
}

/// Reads the secrets file again on SIGHUP and when it changes; a person whose secrets changed
/// has their connections stopped (the next call starts them with the new ones). A file that
/// does not check out keeps the secrets in force.
pub fn watch(file: PathBuf, secrets: Arc<Secrets>, fleet: Arc<Fleet>) -> std::io::Result<()> {
    let path = file.clone();
    crate::reload::watch(file, move |why| match load_secrets(&path) {
        Ok(map) => {
            let changed = secrets.replace(map);
            for s in fleet.servers().iter() {
                if let Some(pool) = &s.pool {
                    for p in &changed {
                        pool.forget(p);
                    }
                }
            }
            tracing::info!(
                component = "principals",
                event = "secrets_reloaded",
                reason = why,
                changed = changed.len(),
                "{why}: the principal secrets were read again ({} people's changed)",
                changed.len()
            );
        }
        Err(e) => {
            tracing::error!(component = "principals", event = "secrets_reload_failed", reason = why, error = %e, "{why}: the principal secrets were not reloaded (the ones in force stay): {e}")
        }
    })
}

/// The port of a per-principal server as a whole: there is no one connection to refresh,
/// unregister from or subscribe through (each person's is their own).
pub struct OnDemand {
    pub server: Arc<str>,
}

impl actix::Actor for OnDemand {
    type Context = actix::Context<Self>;
}

impl actix::Handler<mcp_gen_ui_actors::messages::RefreshTools> for OnDemand {
    type Result = Result<mcp_gen_ui_actors::messages::ToolsDiff, mcp_gen_ui_actors::upstream::UpstreamError>;
    fn handle(&mut self, _: mcp_gen_ui_actors::messages::RefreshTools, _: &mut Self::Context) -> Self::Result {
        Ok(Default::default())
    }
}

impl actix::Handler<mcp_gen_ui_actors::messages::Unregister> for OnDemand {
    type Result = ();
    fn handle(&mut self, _: mcp_gen_ui_actors::messages::Unregister, _: &mut Self::Context) {}
}

impl actix::Handler<mcp_gen_ui_actors::messages::Subscribe> for OnDemand {
    type Result = actix::MessageResult<mcp_gen_ui_actors::messages::Subscribe>;
    fn handle(&mut self, s: mcp_gen_ui_actors::messages::Subscribe, _: &mut Self::Context) -> Self::Result {
        use mcp_gen_ui_actors::mcp::jsonrpc;
        let id = jsonrpc::id(&s.msg).cloned().unwrap_or(serde_json::Value::Null);
        let why = format!("server {} acts as each person: subscriptions to its resources are not offered", self.server);
        actix::MessageResult(jsonrpc::error(id, jsonrpc::code::METHOD_NOT_FOUND, why))
    }
}

impl actix::Handler<mcp_gen_ui_actors::messages::Shutdown> for OnDemand {
    type Result = ();
    fn handle(&mut self, _: mcp_gen_ui_actors::messages::Shutdown, _: &mut Self::Context) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_filled_in_and_missing_names_said() {
        let mine: HashMap<String, String> = [("TOKEN".to_string(), "t-alice".to_string())].into();
        let mut missing = Vec::new();
        assert_eq!(fill("Bearer ${principal:TOKEN}", Some(&mine), &mut missing), "Bearer t-alice");
        assert!(missing.is_empty());
        assert_eq!(fill("${principal:TOKEN} ${principal:OTHER} ${principal:OTHER}", Some(&mine), &mut missing), "t-alice  ");
        assert_eq!(missing, ["OTHER"]);
        let mut missing = Vec::new();
        fill("${principal:TOKEN}", None, &mut missing);
        assert_eq!(missing, ["TOKEN"], "a person without an entry has none of them, and gets no one else's");
    }

    #[test]
    fn a_file_others_can_read_is_refused_and_errors_quote_no_value() {
        let dir = std::env::temp_dir().join(format!("secrets-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("secrets.json");
        std::fs::write(&f, r#"{"alice": {"TOKEN": "s3cr3t-value"}}"#).unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = load_secrets(&f).unwrap_err();
        assert!(matches!(e, FileError::Exposed { mode: 0o644, .. }) && e.to_string().contains("chmod 600"), "{e}");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(load_secrets(&f).unwrap()["alice"]["TOKEN"], "s3cr3t-value");
        std::fs::write(&f, r#"{"alice": {"TOKEN": 42, "x": "s3cr3t-value"}}"#).unwrap();
        let e = load_secrets(&f).unwrap_err();
        assert!(matches!(e, FileError::NotJson { line: 1, .. }) && !e.to_string().contains("s3cr3t"), "{e}");
        let s = Secrets::new(load_secrets(&dir.join("none.json")).unwrap_or_default());
        std::fs::write(&f, r#"{"alice": {"TOKEN": "new"}, "bob": {"TOKEN": "b"}}"#).unwrap();
        assert_eq!(s.replace(load_secrets(&f).unwrap()), ["alice", "bob"]);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
