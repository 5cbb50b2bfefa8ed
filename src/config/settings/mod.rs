//! Resolves flags, environment and config file into the settings the service runs with, and
//! validates them, one section at a time (a file each). Pure: no I/O besides reading the
//! config file and the files it names.

mod auth;
mod cache;
mod cel_hints;
pub mod generation;
mod llm;
mod logging;
pub mod people;
pub mod policy;
pub mod server;
pub mod servers;
#[cfg(test)]
mod tests;
pub mod traces;
mod upstream;
pub mod vars;

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::config::cli::Args;
use crate::config::file::{self as config, CacheType, Config, ConfigError, HostTransport, LogFormat, Provider};
pub use crate::config::tokens::Secret;
pub use auth::{AuthSettings, OAuthSettings};

/// The upstream servers and how hosts see their names.
#[derive(Debug, Clone)]
pub struct Upstreams {
    pub servers: Vec<servers::ServerSettings>,
    /// One server behind `--upstream`, `--upstream-url`, `--demo` or `upstream`: its names and
    /// URIs pass unchanged. Otherwise names are `<server>__<tool>`.
    pub bare: bool,
    /// The servers file, read again on SIGHUP and when it changes.
    pub file: Option<PathBuf>,
    /// What gave the servers file (`--servers-file` or `serversFile`): errors about the file
    /// as a whole name it.
    pub file_named_by: &'static str,
    /// Entries marked `disabled`: kept in the file, not started.
    pub disabled: Vec<String>,
    /// What is said once at start and by `check`, never a warning (other clients' keys).
    pub notes: Vec<String>,
    /// What every entry of the servers file falls back to.
    pub defaults: servers::Defaults,
}

impl Upstreams {
    /// What logs and start-up lines say of them (never arguments, paths or credentials): one
    /// server by its transport and program, several each by its name first (a fleet's first
    /// server is never taken for the only one).
    pub fn describe(&self) -> String {
        match (self.bare, self.servers.as_slice()) {
            (true, [one]) => one.spec.describe(),
            (_, list) => {
                let each: Vec<String> = list
                    .iter()
                    .map(|s| {
                        let per = if s.per_principal.is_some() { ", one connection per person" } else { "" };
                        format!("{} ({}{per})", s.name, s.spec.describe())
                    })
                    .collect();
                format!("{} server{}: {}", list.len(), if list.len() == 1 { "" } else { "s" }, each.join(", "))
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub upstreams: Upstreams,
    pub demo: bool,
    pub host_transport: HostTransport,
    pub listen: SocketAddr,
    pub allowed_origins: Vec<String>,
    pub allowed_hosts: Vec<String>,
    pub max_body_bytes: usize,
    pub session_idle_timeout: std::time::Duration,
    pub sse_keepalive: std::time::Duration,
    /// HTTP worker threads.
    pub workers: usize,
    pub provider: Provider,
    /// Why this provider: for the startup log.
    pub provider_reason: String,
    pub log_level: String,
    pub log_format: LogFormat,
    pub log_file: Option<PathBuf>,
    pub log_stdout: bool,
    /// Warnings to log once logging is up (a key in the config file, ...).
    pub warnings: Vec<String>,
    /// The provider's API key (environment first, then the config file).
    pub api_key: Option<Secret>,
    /// `--debug`: where prompts, answers and pages are written.
    pub debug_dir: Option<PathBuf>,
    pub export_dir: Option<PathBuf>,
    /// Who may use the HTTP edge (tokens, OAuth), resolved from every source.
    pub auth: AuthSettings,
    /// `--metrics-listen`: a second listener for /metrics and /healthz, without auth.
    pub metrics_listen: Option<SocketAddr>,
    /// `tracing` / `OTEL_*`: where spans are exported; None when tracing is off.
    pub tracing: Option<traces::TraceSettings>,
    /// `server.trustedProxies`: the only peers whose forwarded headers are honoured.
    pub trusted_proxies: Vec<server::IpRange>,
    /// `server.sandboxListen`: a listener for the preview's sandbox alone.
    pub sandbox_listen: Option<SocketAddr>,
    /// `server.sandboxOrigin`: where browsers reach that listener, when behind a proxy.
    pub sandbox_origin: Option<url::Url>,
    /// `policy`: the rules, compiled (None: everything is allowed).
    pub policy: Option<std::sync::Arc<mcp_gen_ui_actors::policy::Policy>>,
    /// `policy.onToolChange` and `policy.onNewTool`.
    pub pins: mcp_gen_ui_actors::servers::pins::PinModes,
    /// `audit`: the trail's settings.
    pub audit: policy::AuditSettings,
    /// `principalSecrets`: each person's credentials for `perPrincipal` servers.
    pub principal_secrets: PrincipalSecrets,
    /// `profiles`: compiled, in force at start.
    pub profiles: Vec<std::sync::Arc<mcp_gen_ui_actors::servers::profiles::Profile>>,
    /// `--profile`: the profile served on stdio.
    pub profile: Option<String>,
    /// `--config`: read again for `policy` and `audit` on SIGHUP and when it changes.
    pub config_file: Option<PathBuf>,
    pub config: Config,
}

/// `principalSecrets` and what `perPrincipal` servers need of the rest.
#[derive(Debug, Clone)]
pub struct PrincipalSecrets {
    pub file: Option<PathBuf>,
    pub max_processes: usize,
    pub idle: std::time::Duration,
}

fn principals(args: &Args, cfg: &Config, upstreams: &Upstreams, auth: &AuthSettings) -> Result<PrincipalSecrets, ConfigError> {
    let p = &cfg.principal_secrets;
    let (file, field) = match &args.principal_secrets {
        Some(f) => (Some(f.clone()), "--principal-secrets"),
        None => (p.file.clone(), "principalSecrets.file"),
    };
    if !(1..=10_000).contains(&p.max_processes) {
        return Err(ConfigError::new("principalSecrets.maxProcesses", "must be 1 to 10000"));
    }
    if !(1..=86_400 * 7).contains(&p.idle_secs) {
        return Err(ConfigError::new("principalSecrets.idleSecs", "must be 1 to 604800 (a week)"));
    }
    // A server's entry is in the servers file when there is one: its errors name that file.
    let in_file = |e: ConfigError| match &upstreams.file {
        Some(f) => e.in_file(f),
        None => e,
    };
    for s in upstreams.servers.iter() {
        let Some(pp) = &s.per_principal else { continue };
        let at = format!("servers.{}.perPrincipal", s.name);
        if cfg.server.transport == HostTransport::Stdio || !auth.configured() {
            return Err(in_file(ConfigError::new(
                at,
                "acts as each person, which needs to know who calls: serve HTTP with tokens (--auth-token alice:TOKEN) or OAuth",
            )));
        }
        if !pp.secrets.is_empty() && file.is_none() {
            return Err(in_file(ConfigError::new(
                at,
                format!(
                    "names {} with ${{principal:...}}: give the principal secrets file (--principal-secrets FILE)",
                    pp.secrets.join(", ")
                ),
            )));
        }
        if pp.exchange.is_some() && auth.oauth.is_none() {
            return Err(in_file(ConfigError::new(
                format!("servers.{}.tokenExchange", s.name),
                "exchanges the caller's OAuth access token: configure OAuth (server.auth.oauth)",
            )));
        }
    }
    if let Some(f) = &file {
        crate::principals::load_secrets(f).map_err(|why| ConfigError::new(field, why.to_string()))?;
    }
    Ok(PrincipalSecrets { file, max_processes: p.max_processes, idle: std::time::Duration::from_secs(p.idle_secs) })
}

/// The longest timeout a setting may ask for (24 h, in milliseconds).
pub(super) const MAX_TIMEOUT_MS: u64 = 86_400_000;

/// Reads `KEY` from the process environment; injectable for tests.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

impl Settings {
    /// The folder (`cache.type: filesystem`) that pages, refinements and what was learnt
    /// (classifications, result shapes) persist in. Refinements and what was learnt are kept
    /// there even with the page cache off (`--no-cache`), so this does not ask whether it is on;
    /// the start-up check that the folder is writable covers all of them.
    pub fn cache_dir(&self) -> Option<&std::path::Path> {
        let c = &self.config.cache;
        (c.kind == CacheType::Filesystem).then_some(c.dir.as_deref()).flatten()
    }

    /// Whether the edge tells several people apart (the HTTP transport with OAuth, a tokens
    /// file or tokens of more than one principal). Then a shared server's message that names
    /// no owner is no one's, and only admins shape the shared pages.
    pub fn several_people(&self) -> bool {
        self.host_transport != HostTransport::Stdio && self.auth.several_people()
    }
}

pub fn resolve(args: &Args, env: EnvLookup) -> Result<Settings, ConfigError> {
    let mut cfg = match &args.config {
        Some(p) => config::load(p)?,
        None => Config::default(),
    };
    let mut warnings = Vec::new();
    let upstreams = upstreams(args, env, &mut cfg, &mut warnings)?;
    if cfg.upstream.caller_window_ms.is_some() {
        warnings.push("upstream.callerWindowMs is no longer used: whose a server's message is comes from what it names (a request, a task, a subscription) or whose the connection is, never from which calls just ended; remove the field".into());
    }
    let listener = server::resolve(args, &mut cfg)?;
    let auth = auth::resolve(args, env, &mut cfg, &mut warnings)?;
    if cfg.refinements.scope == config::RefinementScope::Principal && !auth.configured() {
        return Err(ConfigError::new(
            "refinements.scope",
            "\"principal\" keeps each person's refinements to themselves, which needs authentication to tell people apart: give labelled tokens (--auth-token alice:TOKEN) or OAuth, or use \"shared\"",
        ));
    }
    if cfg.server.transport == HostTransport::Stdio && auth.configured() {
        warnings.push("tokens and OAuth (server.auth) protect the HTTP transport; with --transport stdio the host that starts the process is trusted and they are not used".into());
    }
    let metrics_listen = server::metrics_listen(args, &mut cfg, &listener)?;
    let server::EdgeTrust { trusted_proxies, sandbox_listen, sandbox_origin } = server::edge_trust(&cfg, &mut warnings)?;
    let llm = llm::resolve(args, env, &mut cfg, &mut warnings)?;
    cache::resolve(args, &mut cfg)?;
    if !cfg.cache.enabled && generation::warm_globs(&cfg)?.is_some() {
        warnings.push("generation.warm is on but the cache is off (--no-cache or --debug): pages made ahead would be kept nowhere, so none are warmed".into());
    }
    logging::resolve(args, &mut cfg)?;
    generation::resolve(args, &mut cfg)?;
    let tracing = traces::resolve(env, &cfg)?;
    let policy::Live { policy, pins, audit, profiles } = policy::resolve(&cfg)?;
    let principal_secrets = principals(args, &cfg, &upstreams, &auth)?;
    let profile = match &args.profile {
        None => None,
        Some(_) if cfg.server.transport != HostTransport::Stdio => {
            return Err(ConfigError::new("--profile", "serves a profile on --transport stdio; over HTTP each profile is at /mcp/<name>"))
        }
        Some(name) if profiles.iter().any(|p| &*p.name == name.as_str()) => Some(name.clone()),
        Some(name) => {
            let known: Vec<&str> = profiles.iter().map(|p| &*p.name).collect();
            return Err(ConfigError::new(
                "--profile",
                format!(
                    "{name:?} is not a profile of the config file (profiles: {})",
                    if known.is_empty() { "none".into() } else { known.join(", ") }
                ),
            ));
        }
    };
    let (listen, workers, demo) = (listener.addr, listener.workers, args.demo);
    let (provider, provider_reason, api_key) = (llm.provider, llm.reason, llm.api_key);
    let settings = Settings {
        upstreams,
        demo,
        host_transport: cfg.server.transport,
        listen,
        allowed_origins: cfg.server.allowed_origins.clone(),
        allowed_hosts: cfg.server.allowed_hosts.clone(),
        max_body_bytes: cfg.server.max_body_bytes,
        session_idle_timeout: std::time::Duration::from_secs(cfg.server.session_idle_timeout_secs),
        sse_keepalive: std::time::Duration::from_secs(cfg.server.sse_keepalive_secs),
        workers,
        provider,
        provider_reason,
        log_level: cfg.logging.level.clone(),
        log_format: cfg.logging.format,
        log_file: cfg.logging.file.clone(),
        log_stdout: cfg.logging.destination == config::LogDestination::Stdout,
        warnings,
        api_key,
        // A folder of this user's own, made private at start (see generation::debug_files).
        debug_dir: args.debug.then(|| {
            cfg.logging.debug_dir.clone().unwrap_or_else(|| {
                // SAFETY: getuid has no preconditions.
                let uid = unsafe { libc::getuid() };
                std::env::temp_dir().join(format!("mcp-gen-ui-debug-{uid}"))
            })
        }),
        export_dir: args.export_dir.clone(),
        auth,
        metrics_listen,
        tracing,
        trusted_proxies,
        sandbox_listen,
        sandbox_origin,
        policy,
        pins,
        audit,
        principal_secrets,
        profiles: profiles.into_iter().map(std::sync::Arc::new).collect(),
        profile,
        config_file: args.config.clone(),
        config: cfg,
    };
    Ok(settings)
}

/// One server (`--upstream`, `--upstream-url`, `--demo`, `upstream`), or several (the servers
/// file, `servers`): never both.
fn upstreams(args: &Args, env: EnvLookup, cfg: &mut Config, warnings: &mut Vec<String>) -> Result<Upstreams, ConfigError> {
    if let Some(f) = &args.servers_file {
        cfg.servers_file = Some(f.clone());
    }
    let one =
        args.upstream.is_some() || args.upstream_url.is_some() || args.demo || cfg.upstream.command.is_some() || cfg.upstream.url.is_some();
    let many = cfg.servers_file.is_some() || cfg.servers.is_some();
    let field = if args.servers_file.is_some() {
        "--servers-file"
    } else if cfg.servers_file.is_some() {
        "serversFile"
    } else {
        "servers"
    };
    if many && one {
        return Err(ConfigError::new(
            field,
            "runs several servers, and --upstream, --upstream-url, --demo or the upstream section runs one: give one or the other",
        ));
    }
    if cfg.servers_file.is_some() && cfg.servers.is_some() {
        return Err(ConfigError::new(field, "the servers come from a file or from the servers section: give one of them"));
    }
    // The one upstream's checks and limits apply either way (they are the servers' defaults).
    let spec = if many { None } else { Some(upstream::resolve(args, env, cfg, warnings)?) };
    upstream::limits(args, cfg)?;
    let defaults = servers::Defaults {
        request_timeout_ms: cfg.upstream.request_timeout_ms,
        max_message_bytes: cfg.upstream.max_message_bytes,
        max_tools: cfg.upstream.max_tools,
        max_tool_list_bytes: cfg.upstream.max_tool_list_bytes,
    };
    if let Some(spec) = spec {
        let one = servers::ServerSettings {
            name: "default".into(),
            prefix: "default".into(),
            spec,
            request_timeout: std::time::Duration::from_millis(cfg.upstream.request_timeout_ms),
            max_message_bytes: usize::try_from(cfg.upstream.max_message_bytes).unwrap_or(usize::MAX),
            max_tools: cfg.upstream.max_tools,
            max_tool_list_bytes: cfg.upstream.max_tool_list_bytes,
            curation: Default::default(),
            required: true,
            per_principal: None,
        };
        return Ok(Upstreams {
            servers: vec![one],
            bare: true,
            file: None,
            file_named_by: field,
            disabled: Vec::new(),
            notes: Vec::new(),
            defaults,
        });
    }
    let servers::Read { servers: list, warnings: more, disabled, notes } = match (&cfg.servers_file, &cfg.servers) {
        (Some(file), _) => servers::read_file(file, field, env, defaults)?,
        (None, Some(map)) => servers::resolve(map, "servers", env, defaults, None)?,
        (None, None) => unreachable!("many means one of them is set"),
    };
    warnings.extend(more);
    if list.is_empty() {
        return Err(ConfigError::new(field, "lists no server that is not disabled: nothing to serve"));
    }
    Ok(Upstreams { servers: list, bare: false, file: cfg.servers_file.clone(), file_named_by: field, disabled, notes, defaults })
}

/// A full http:// or https:// URL, or an error naming `field` (showing the URL without its
/// credentials and query, which may be secrets).
pub(super) fn http_url(raw: &str, field: &str) -> Result<url::Url, ConfigError> {
    let shown = crate::config::redact::url(raw);
    let u = url::Url::parse(raw)
        .map_err(|e| ConfigError::new(field, format!("{shown:?} is not a valid URL ({e}); give a full http:// or https:// URL")))?;
    if !matches!(u.scheme(), "http" | "https") {
        return Err(ConfigError::new(field, format!("{shown:?} must use http:// or https://")));
    }
    Ok(u)
}
