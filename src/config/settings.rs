//! Resolves flags, environment and config file into the settings the service runs with, and
//! validates them. Pure: no I/O besides reading the config file named by a flag.

use std::net::SocketAddr;
use std::path::PathBuf;

use mcp_gen_ui_actors::upstream::UpstreamSpec;

use crate::config::cli::{Args, HostTransportArg, LogFormatArg, ProviderArg, UpstreamTransportArg};
use crate::config::file::{self as config, Config, ConfigError, HostTransport, LogFormat, Provider, UpstreamTransport};
pub use crate::config::tokens::Secret;
use crate::config::tokens::{check_token, read_tokens_file, StaticToken};

#[derive(Debug, Clone)]
pub struct Settings {
    pub upstream: UpstreamSpec,
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
    pub config: Config,
}

/// Authentication of the HTTP edge, from flags, environment and the config file.
#[derive(Debug, Clone, Default)]
pub struct AuthSettings {
    /// `--no-auth` / `server.auth.disabled`.
    pub disabled: bool,
    /// From `--auth-token`, MCP_GEN_UI_AUTH_TOKEN and `server.auth.tokens`, labelled by source.
    pub tokens: Vec<StaticToken>,
    pub tokens_file: Option<PathBuf>,
    /// What the tokens file held at start (it is read again on SIGHUP).
    pub file_tokens: Vec<StaticToken>,
    pub oauth: Option<OAuthSettings>,
}

impl AuthSettings {
    /// Whether any way in is configured (tokens, a tokens file, OAuth).
    pub fn configured(&self) -> bool {
        !self.tokens.is_empty() || self.tokens_file.is_some() || self.oauth.is_some()
    }
}

#[derive(Debug, Clone)]
pub struct OAuthSettings {
    pub issuer: String,
    pub audience: String,
    pub jwks_url: url::Url,
    pub required_scopes: Vec<String>,
    pub resource: Option<String>,
}

/// The longest timeout a setting may ask for (24 h, in milliseconds).
const MAX_TIMEOUT_MS: u64 = 86_400_000;

/// Reads `KEY` from the process environment; injectable for tests.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

pub fn resolve(args: &Args, env: EnvLookup) -> Result<Settings, ConfigError> {
    let mut cfg = match &args.config {
        Some(p) => config::load(p)?,
        None => Config::default(),
    };
    let mut warnings = Vec::new();

    // --- upstream ---
    let flag_upstream = args.upstream.is_some() || args.upstream_url.is_some();
    if args.demo && flag_upstream {
        return Err(ConfigError::new("--demo", "--demo wraps the bundled demo upstream; drop --upstream/--upstream-url, or drop --demo"));
    }
    if let Some(cmdline) = &args.upstream {
        let words = shell_words::split(cmdline).map_err(|e| {
            ConfigError::new("--upstream", format!("cannot split {cmdline:?} into words: {e}; quote it like a shell command"))
        })?;
        let Some((cmd, rest)) = words.split_first() else {
            return Err(ConfigError::new(
                "--upstream",
                "is empty; give the command that starts the MCP server, e.g. --upstream \"npx -y @modelcontextprotocol/server-memory\"",
            ));
        };
        cfg.upstream.command = Some(cmd.clone());
        cfg.upstream.args = rest.to_vec();
        cfg.upstream.url = None;
        cfg.upstream.transport = Some(UpstreamTransport::Stdio);
    }
    if let Some(url) = &args.upstream_url {
        cfg.upstream.url = Some(url.clone());
        cfg.upstream.command = None;
        cfg.upstream.transport = Some(UpstreamTransport::StreamableHttp);
    }
    if let Some(t) = args.upstream_transport {
        if args.upstream.is_some() || (cfg.upstream.url.is_none() && cfg.upstream.command.is_some()) {
            return Err(ConfigError::new(
                "--upstream-transport",
                "applies to a remote upstream (--upstream-url); a --upstream command always speaks stdio",
            ));
        }
        cfg.upstream.transport = Some(match t {
            UpstreamTransportArg::StreamableHttp => UpstreamTransport::StreamableHttp,
            UpstreamTransportArg::Sse => UpstreamTransport::Sse,
        });
    }
    for h in &args.upstream_headers {
        let Some((k, v)) = h.split_once(':') else {
            return Err(ConfigError::new("--upstream-header", format!("{h:?} is not \"Name: value\"")));
        };
        cfg.upstream.headers.insert(k.trim().to_string(), v.trim().to_string());
    }
    for e in &args.upstream_env {
        match e.split_once('=') {
            Some((k, v)) if !k.is_empty() => {
                cfg.upstream.env.insert(k.to_string(), v.to_string());
            }
            None if !e.is_empty() => match env(e) {
                // KEY alone: this service's own value passes through, as named.
                Some(v) => {
                    cfg.upstream.env.insert(e.clone(), v);
                }
                None => warnings
                    .push(format!("--upstream-env {e}: {e} is not set in this service's environment, so the upstream does not get it")),
            },
            _ => return Err(ConfigError::new("--upstream-env", format!("{e:?} is not KEY=VALUE or KEY"))),
        }
    }
    if let Some(ms) = args.upstream_timeout_ms {
        cfg.upstream.request_timeout_ms = ms;
    }
    // Deadlines are Instant + this: an unbounded value would overflow the clock.
    let timeout_field = if args.upstream_timeout_ms.is_some() { "--upstream-timeout-ms" } else { "upstream.requestTimeoutMs" };
    if !(1..=MAX_TIMEOUT_MS).contains(&cfg.upstream.request_timeout_ms) {
        return Err(ConfigError::new(timeout_field, format!("must be from 1 to {MAX_TIMEOUT_MS} (milliseconds, 24 h)")));
    }
    if cfg.upstream.max_message_bytes < 1024 {
        return Err(ConfigError::new("upstream.maxMessageBytes", "must be at least 1024 (bytes)"));
    }
    let demo = args.demo;
    let upstream = if demo {
        let exe = std::env::current_exe()
            .map_err(|e| ConfigError::new("--demo", format!("cannot find this program's own path to start the demo upstream: {e}")))?;
        UpstreamSpec::Stdio { command: exe.to_string_lossy().into_owned(), args: vec!["demo-upstream".into()], env: Vec::new(), cwd: None }
    } else {
        upstream_spec(&cfg)?
    };

    // --- host side ---
    if let Some(t) = args.transport {
        cfg.server.transport = match t {
            HostTransportArg::Http => HostTransport::Http,
            HostTransportArg::Stdio => HostTransport::Stdio,
        };
    }
    if let Some(l) = &args.listen {
        cfg.server.listen = l.clone();
    }
    let listen_field = if args.listen.is_some() { "--listen" } else { "server.listen" };
    let listen: SocketAddr = cfg.server.listen.parse().map_err(|_| {
        ConfigError::new(listen_field, format!("{:?} is not ADDR:PORT (e.g. 127.0.0.1:8080 or 0.0.0.0:8080)", cfg.server.listen))
    })?;
    cfg.server.allowed_origins.extend(args.allowed_origins.iter().cloned());
    cfg.server.allowed_hosts.extend(args.allowed_hosts.iter().cloned());
    if let Some(w) = args.workers {
        cfg.server.workers = Some(w);
    }
    let workers_field = if args.workers.is_some() { "--workers" } else { "server.workers" };
    let workers = match cfg.server.workers {
        Some(0) => return Err(ConfigError::new(workers_field, "must be at least 1 (or unset: one per CPU)")),
        Some(n) if n > 256 => return Err(ConfigError::new(workers_field, format!("{n} is more than 256 worker threads"))),
        Some(n) => n,
        None => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2),
    };
    if cfg.limits.max_sessions == 0 {
        return Err(ConfigError::new("limits.maxSessions", "must be at least 1"));
    }
    if cfg.limits.max_in_flight_per_session == 0 {
        return Err(ConfigError::new("limits.maxInFlightPerSession", "must be at least 1"));
    }
    if cfg.server.sse_keepalive_secs == 0 {
        return Err(ConfigError::new("server.sseKeepaliveSecs", "must be at least 1"));
    }
    if cfg.server.max_body_bytes < 1024 {
        return Err(ConfigError::new("server.maxBodyBytes", "must be at least 1024"));
    }
    let auth = auth_settings(args, env, &mut cfg, &mut warnings)?;
    if cfg.server.transport == HostTransport::Stdio && auth.configured() {
        warnings.push("tokens and OAuth (server.auth) protect the HTTP transport; with --transport stdio the host that starts the process is trusted and they are not used".into());
    }
    if let Some(m) = &args.metrics_listen {
        cfg.server.metrics_listen = Some(m.clone());
    }
    let metrics_listen = match &cfg.server.metrics_listen {
        None => None,
        Some(m) => {
            let field = if args.metrics_listen.is_some() { "--metrics-listen" } else { "server.metricsListen" };
            let addr: SocketAddr =
                m.parse().map_err(|_| ConfigError::new(field, format!("{m:?} is not ADDR:PORT (e.g. 0.0.0.0:9464 or 127.0.0.1:9464)")))?;
            if addr == listen && addr.port() != 0 {
                return Err(ConfigError::new(field, format!("{m} is also the main listener ({listen_field}); give it another port")));
            }
            Some(addr)
        }
    };

    // --- llm ---
    if let Some(p) = args.provider {
        cfg.llm.provider = Some(match p {
            ProviderArg::Anthropic => Provider::Anthropic,
            ProviderArg::Openai => Provider::Openai,
            ProviderArg::Ollama => Provider::Ollama,
            ProviderArg::Offline => Provider::Offline,
        });
    }
    if let Some(m) = &args.model {
        cfg.llm.model = Some(m.clone());
    }
    if let Some(u) = &args.llm_base_url {
        cfg.llm.base_url = Some(u.clone());
    }
    if let Some(u) = &cfg.llm.base_url {
        let field = if args.llm_base_url.is_some() { "--llm-base-url" } else { "llm.baseUrl" };
        http_url(u, field)?;
    }
    if cfg.llm.api_key.is_some() {
        warnings.push("llm.apiKey is set in the config file: prefer the provider's environment variable (ANTHROPIC_API_KEY, OPENAI_API_KEY, OLLAMA_API_KEY) so the key stays out of files".into());
    }
    let has_key = |p: Provider| p.key_var().and_then(env).is_some_and(|k| !k.is_empty()) || cfg.llm.api_key.is_some();
    let (provider, provider_reason) = match cfg.llm.provider {
        Some(p) => {
            if matches!(p, Provider::Anthropic | Provider::Openai) && !has_key(p) && cfg.llm.base_url.is_none() {
                let var = p.key_var().expect("keyed provider");
                return Err(ConfigError::new(
                    "llm.provider",
                    format!("{} needs an API key: set {var} (or choose --provider offline)", p.name()),
                ));
            }
            (p, "chosen by flag, environment or config".to_string())
        }
        None => {
            let keyed =
                [Provider::Anthropic, Provider::Openai].into_iter().find(|p| p.key_var().and_then(env).is_some_and(|k| !k.is_empty()));
            match keyed {
                Some(p) => (p, format!("{} is set in the environment", p.key_var().expect("keyed"))),
                None => (Provider::Offline, "no provider named and no API key in the environment".into()),
            }
        }
    };

    // --- cache ---
    if let Some(d) = &args.cache_dir {
        cfg.cache.dir = Some(d.clone());
        cfg.cache.kind = config::CacheType::Filesystem;
    }
    if args.no_cache || args.debug {
        cfg.cache.enabled = false;
    }
    if let Some(u) = &args.redis_url {
        if args.cache_dir.is_some() {
            return Err(ConfigError::new(
                "--redis-url",
                "--redis-url shares the cache through Redis and --cache-dir keeps it in a folder: give one of them",
            ));
        }
        cfg.cache.redis_url = Some(u.clone());
        cfg.cache.kind = config::CacheType::Redis;
    }
    if cfg.cache.kind == config::CacheType::Redis {
        let field = if args.redis_url.is_some() { "--redis-url" } else { "cache.redisUrl" };
        let Some(u) = &cfg.cache.redis_url else {
            return Err(ConfigError::new(
                "cache.redisUrl",
                "cache.type is redis but no Redis is given: set cache.redisUrl or pass --redis-url redis://host:6379",
            ));
        };
        redis_url(u, field)?;
        if cfg.cache.redis_timeout_ms == 0 || cfg.cache.redis_timeout_ms > 60_000 {
            return Err(ConfigError::new("cache.redisTimeoutMs", "must be between 1 and 60000 (milliseconds)"));
        }
        if cfg.cache.redis_key_prefix.chars().any(char::is_whitespace) {
            return Err(ConfigError::new("cache.redisKeyPrefix", "must not contain spaces"));
        }
    }
    if cfg.cache.kind == config::CacheType::Filesystem && cfg.cache.dir.is_none() {
        return Err(ConfigError::new(
            "cache.dir",
            "cache.type is filesystem but no folder is given: set cache.dir or pass --cache-dir DIR",
        ));
    }
    if cfg.generation.max_concurrent_generations == 0 {
        return Err(ConfigError::new("generation.maxConcurrentGenerations", "must be at least 1"));
    }
    if !(1..=MAX_TIMEOUT_MS).contains(&cfg.generation.timeout_ms) {
        return Err(ConfigError::new("generation.timeoutMs", format!("must be from 1 to {MAX_TIMEOUT_MS} (milliseconds, 24 h)")));
    }

    // --- logging ---
    if let Some(l) = &args.log_level {
        cfg.logging.level = l.clone();
    }
    if args.debug {
        cfg.logging.level = "debug".into();
    }
    if let Some(f) = args.log_format {
        cfg.logging.format = match f {
            LogFormatArg::Text => LogFormat::Text,
            LogFormatArg::Json => LogFormat::Json,
        };
    }
    let level_field = if args.log_level.is_some() { "--log-level" } else { "logging.level" };
    valid_level(&cfg.logging.level).map_err(|e| {
        ConfigError::new(
            level_field,
            format!("{:?} is not a level (error, warn, info, debug, trace) or filter directive: {e}", cfg.logging.level),
        )
    })?;

    if cfg.logging.destination == config::LogDestination::Stdout
        && cfg.server.transport == HostTransport::Stdio
        && cfg.logging.file.is_none()
    {
        return Err(ConfigError::new(
            "logging.destination",
            "stdout carries the MCP messages with --transport stdio: log to stderr or set logging.file",
        ));
    }
    let api_key = provider.key_var().and_then(env).filter(|k| !k.is_empty()).or_else(|| cfg.llm.api_key.clone()).map(Secret);
    if let Some(text) = &args.prompt {
        cfg.generation.style_guide = Some(text.clone());
    }
    if let Some(path) = &args.prompt_file {
        let text =
            std::fs::read_to_string(path).map_err(|e| ConfigError::new("--prompt-file", format!("cannot read {}: {e}", path.display())))?;
        cfg.generation.style_guide = Some(text);
    }
    if let Some(g) = &cfg.generation.style_guide {
        let field = if args.prompt.is_some() {
            "--prompt"
        } else if args.prompt_file.is_some() {
            "--prompt-file"
        } else {
            "generation.styleGuide"
        };
        if g.trim().is_empty() {
            return Err(ConfigError::new(field, "is empty: give the instructions, or leave it out"));
        }
        if g.len() > 4000 {
            return Err(ConfigError::new(
                field,
                format!("is {} characters; keep it under 4000 (it is sent with every generation)", g.len()),
            ));
        }
    }
    if let Some(d) = &cfg.ui.domain {
        let ok = !d.is_empty() && d.len() <= 253 && d.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':'));
        if !ok {
            return Err(ConfigError::new(
                "ui.domain",
                format!("{d:?} is not a host name (letters, digits, '.', '-', an optional ':port'; no scheme or path)"),
            ));
        }
    }
    if let Some(t) = &cfg.generation.theme {
        if t != "light" && t != "dark" {
            return Err(ConfigError::new("generation.theme", format!("{t:?} is not light or dark")));
        }
    }
    if cfg.cache.max_entries == 0 || cfg.cache.max_total_size_bytes == 0 {
        return Err(ConfigError::new(
            "cache.maxEntries",
            "cache.maxEntries and cache.maxTotalSizeBytes must be at least 1 (use --no-cache to turn the cache off)",
        ));
    }
    Ok(Settings {
        upstream,
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
        debug_dir: args.debug.then(|| cfg.logging.debug_dir.clone().unwrap_or_else(|| std::env::temp_dir().join("mcp-gen-ui-debug"))),
        export_dir: args.export_dir.clone(),
        auth,
        metrics_listen,
        config: cfg,
    })
}

/// Tokens from every source (all are accepted), the tokens file, OAuth from flags over the
/// config file, and `--no-auth`, which cannot be combined with any of them. Errors name the
/// field and never quote a token.
fn auth_settings(args: &Args, env: EnvLookup, cfg: &mut Config, warnings: &mut Vec<String>) -> Result<AuthSettings, ConfigError> {
    let mut tokens = Vec::new();
    let mut add = |label: String, field: &str, t: &str| -> Result<(), ConfigError> {
        check_token(t).map_err(|why| ConfigError::new(field, format!("the token {why}")))?;
        if t.len() < 16 {
            warnings.push(format!("{label}: the token is shorter than 16 characters, which is easy to guess"));
        }
        tokens.push(StaticToken { label, value: Secret(t.to_string()) });
        Ok(())
    };
    for (i, t) in args.auth_tokens.iter().enumerate() {
        add(format!("--auth-token[{i}]"), "--auth-token", t)?;
    }
    if let Some(t) = env("MCP_GEN_UI_AUTH_TOKEN").filter(|t| !t.is_empty()) {
        add("MCP_GEN_UI_AUTH_TOKEN".into(), "MCP_GEN_UI_AUTH_TOKEN", &t)?;
    }
    for (i, t) in cfg.server.auth.tokens.iter().enumerate() {
        add(format!("server.auth.tokens[{i}]"), &format!("server.auth.tokens[{i}]"), t)?;
    }
    let tokens_file = cfg.server.auth.tokens_file.clone();
    let file_tokens = match &tokens_file {
        Some(path) => {
            let t = read_tokens_file(path).map_err(|e| ConfigError::new("server.auth.tokensFile", e))?;
            if t.is_empty() {
                warnings.push(format!(
                    "server.auth.tokensFile: {} has no tokens yet: its tokens are accepted after the next SIGHUP",
                    path.display()
                ));
            }
            t
        }
        None => Vec::new(),
    };

    let flags = [&args.oauth_issuer, &args.oauth_audience, &args.oauth_jwks_url];
    if flags.iter().any(|f| f.is_some()) {
        let o = cfg.server.auth.oauth.get_or_insert_with(Default::default);
        if let Some(v) = &args.oauth_issuer {
            o.issuer = Some(v.clone());
        }
        if let Some(v) = &args.oauth_audience {
            o.audience = Some(v.clone());
        }
        if let Some(v) = &args.oauth_jwks_url {
            o.jwks_url = Some(v.clone());
        }
    }
    let oauth = match &cfg.server.auth.oauth {
        None => None,
        Some(o) => {
            let need = |v: &Option<String>, field: &str, flag: &str, what: &str| {
                v.clone().filter(|s| !s.trim().is_empty()).ok_or_else(|| {
                    ConfigError::new(
                        format!("server.auth.oauth.{field}"),
                        format!("is required when OAuth is configured: {what} (or pass {flag})"),
                    )
                })
            };
            let issuer = need(&o.issuer, "issuer", "--oauth-issuer", "the authorization server's issuer URL, which tokens carry in iss")?;
            let issuer_field = if args.oauth_issuer.is_some() { "--oauth-issuer" } else { "server.auth.oauth.issuer" };
            http_url(&issuer, issuer_field)?;
            let audience = need(
                &o.audience,
                "audience",
                "--oauth-audience",
                "the audience tokens are issued for (aud), usually this server's /mcp URL",
            )?;
            let jwks = need(
                &o.jwks_url,
                "jwksUrl",
                "--oauth-jwks-url",
                "where the authorization server publishes its signing keys (its jwks_uri)",
            )?;
            let jwks_field = if args.oauth_jwks_url.is_some() { "--oauth-jwks-url" } else { "server.auth.oauth.jwksUrl" };
            let jwks_url = http_url(&jwks, jwks_field)?;
            if let Some((i, _)) = o.required_scopes.iter().enumerate().find(|(_, s)| s.is_empty() || s.contains(char::is_whitespace)) {
                return Err(ConfigError::new(
                    format!("server.auth.oauth.requiredScopes[{i}]"),
                    "a scope is one word: no spaces, not empty",
                ));
            }
            if let Some(r) = &o.resource {
                http_url(r, "server.auth.oauth.resource")?;
            }
            Some(OAuthSettings { issuer, audience, jwks_url, required_scopes: o.required_scopes.clone(), resource: o.resource.clone() })
        }
    };
    let disabled = args.no_auth || cfg.server.auth.disabled;
    let auth = AuthSettings { disabled, tokens, tokens_file, file_tokens, oauth };
    if disabled && auth.configured() {
        let field = if args.no_auth { "--no-auth" } else { "server.auth.disabled" };
        let what = if !auth.tokens.is_empty() {
            auth.tokens[0].label.split('[').next().unwrap_or("a token").to_string()
        } else if auth.tokens_file.is_some() {
            "server.auth.tokensFile".to_string()
        } else {
            "OAuth (server.auth.oauth)".to_string()
        };
        return Err(ConfigError::new(field, format!("turns authentication off, but {what} is configured: drop one of them")));
    }
    Ok(auth)
}

/// A bare word must be a level; anything with `=` or `,` is a tracing filter directive.
fn valid_level(level: &str) -> Result<(), String> {
    const LEVELS: &[&str] = &["error", "warn", "info", "debug", "trace", "off"];
    if !level.contains(['=', ',']) {
        return if LEVELS.contains(&level.to_ascii_lowercase().as_str()) { Ok(()) } else { Err("unknown level".into()) };
    }
    tracing_subscriber::EnvFilter::builder().parse(level).map(|_| ()).map_err(|e| e.to_string())
}

/// A Redis URL this build can use: redis:// or unix://, never quoted back (it may hold a password).
fn redis_url(raw: &str, field: &str) -> Result<(), ConfigError> {
    let u = url::Url::parse(raw).map_err(|_| ConfigError::new(field, "is not a valid URL; give redis://[user:password@]host:port[/db]"))?;
    match u.scheme() {
        "redis" | "redis+unix" | "unix" => mcp_gen_ui_actors::store::redis_store::check_url(raw).map_err(|why| {
            ConfigError::new(field, format!("is not a Redis URL this service can use ({why}); give redis://[user:password@]host:port[/db]"))
        }),
        "rediss" => Err(ConfigError::new(
            field,
            "rediss:// (TLS) is not built in: reach Redis over a private network or a TLS tunnel, with redis://",
        )),
        other => Err(ConfigError::new(field, format!("uses {other}:// ; give redis://[user:password@]host:port[/db]"))),
    }
}

fn http_url(raw: &str, field: &str) -> Result<url::Url, ConfigError> {
    let u = url::Url::parse(raw)
        .map_err(|e| ConfigError::new(field, format!("{raw:?} is not a valid URL ({e}); give a full http:// or https:// URL")))?;
    if !matches!(u.scheme(), "http" | "https") {
        return Err(ConfigError::new(field, format!("{raw:?} must use http:// or https://")));
    }
    Ok(u)
}

fn upstream_spec(cfg: &Config) -> Result<UpstreamSpec, ConfigError> {
    let up = &cfg.upstream;
    if up.transport.is_none() && up.command.is_none() && up.url.is_none() {
        return Err(ConfigError::new(
            "upstream",
            "no upstream given: pass --upstream \"CMD ARGS\" (stdio), --upstream-url URL (HTTP), --demo, or set upstream.command / upstream.url in the config file",
        ));
    }
    let transport = up.transport.unwrap_or(if up.command.is_some() { UpstreamTransport::Stdio } else { UpstreamTransport::StreamableHttp });
    match transport {
        UpstreamTransport::Stdio => {
            let Some(command) = up.command.clone().filter(|c| !c.trim().is_empty()) else {
                return Err(ConfigError::new(
                    "upstream",
                    "no upstream given: pass --upstream \"CMD ARGS\" (stdio), --upstream-url URL (HTTP), --demo, or set upstream.command / upstream.url in the config file",
                ));
            };
            Ok(UpstreamSpec::Stdio {
                command,
                args: up.args.clone(),
                env: up.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                cwd: up.cwd.clone(),
            })
        }
        t => {
            let Some(raw) = &up.url else {
                return Err(ConfigError::new(
                    "upstream.url",
                    format!(
                        "upstream.transport is {} but no URL is given: pass --upstream-url URL or set upstream.url",
                        if t == UpstreamTransport::Sse { "sse" } else { "streamable-http" }
                    ),
                ));
            };
            let url = http_url(raw, "upstream.url")?;
            let headers = up.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            Ok(if t == UpstreamTransport::Sse { UpstreamSpec::Sse { url, headers } } else { UpstreamSpec::StreamableHttp { url, headers } })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(v: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("mcp-gen-ui").chain(v.iter().copied())).unwrap()
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn stdio_upstream_is_shell_split() {
        let s = resolve(&args(&["--upstream", "node 'my server.js' --x"]), &no_env).unwrap();
        match s.upstream {
            UpstreamSpec::Stdio { command, args, .. } => {
                assert_eq!(command, "node");
                assert_eq!(args, vec!["my server.js", "--x"]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_upstream_names_the_field() {
        let e = resolve(&args(&[]), &no_env).unwrap_err();
        assert_eq!(e.field, "upstream");
    }

    #[test]
    fn bad_url_names_the_field() {
        let e = resolve(&args(&["--upstream-url", "localhost:3000/mcp"]), &no_env).unwrap_err();
        assert_eq!(e.field, "upstream.url");
        let e = resolve(&args(&["--upstream-url", "ftp://x/mcp"]), &no_env).unwrap_err();
        assert!(e.message.contains("http"));
    }

    #[test]
    fn demo_conflicts_with_upstream() {
        let e = resolve(&args(&["--demo", "--upstream", "x"]), &no_env).unwrap_err();
        assert_eq!(e.field, "--demo");
    }

    #[test]
    fn provider_defaults_follow_keys() {
        let s = resolve(&args(&["--demo"]), &no_env).unwrap();
        assert_eq!(s.provider, Provider::Offline);
        let env = |k: &str| (k == "OPENAI_API_KEY").then(|| "sk-test".to_string());
        let s = resolve(&args(&["--demo"]), &env).unwrap();
        assert_eq!(s.provider, Provider::Openai);
        assert!(s.provider_reason.contains("OPENAI_API_KEY"));
        let e = resolve(&args(&["--demo", "--provider", "anthropic"]), &no_env).unwrap_err();
        assert!(e.message.contains("ANTHROPIC_API_KEY"));
    }

    #[test]
    fn timeouts_are_bounded() {
        let e = resolve(&args(&["--demo", "--upstream-timeout-ms", "18446744073709551615"]), &no_env).unwrap_err();
        assert_eq!(e.field, "--upstream-timeout-ms");
        assert_eq!(resolve(&args(&["--demo", "--upstream-timeout-ms", "0"]), &no_env).unwrap_err().field, "--upstream-timeout-ms");
        assert!(resolve(&args(&["--demo", "--upstream-timeout-ms", "86400000"]), &no_env).is_ok());
    }

    #[test]
    fn headers_env_and_listen_are_checked() {
        assert_eq!(
            resolve(&args(&["--upstream-url", "http://h/mcp", "--upstream-header", "nocolon"]), &no_env).unwrap_err().field,
            "--upstream-header"
        );
        assert_eq!(resolve(&args(&["--upstream", "x", "--upstream-env", "=v"]), &no_env).unwrap_err().field, "--upstream-env");
        assert_eq!(resolve(&args(&["--demo", "--listen", "8080"]), &no_env).unwrap_err().field, "--listen");
        assert_eq!(resolve(&args(&["--demo", "--log-level", "loud!!"]), &no_env).unwrap_err().field, "--log-level");
    }

    #[test]
    fn stdout_logs_conflict_with_the_stdio_transport() {
        let dir = std::env::temp_dir().join(format!("mcp-gen-ui-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.json");
        std::fs::write(&file, r#"{"logging": {"destination": "stdout"}}"#).unwrap();
        let path = file.to_str().unwrap();
        assert_eq!(
            resolve(&args(&["--demo", "--config", path, "--transport", "stdio"]), &no_env).unwrap_err().field,
            "logging.destination"
        );
        assert!(resolve(&args(&["--demo", "--config", path]), &no_env).unwrap().log_stdout);
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn write_config(name: &str, text: &str) -> (PathBuf, String) {
        let dir = std::env::temp_dir().join(format!("mcp-gen-ui-auth-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.json");
        std::fs::write(&file, text).unwrap();
        let path = file.to_str().unwrap().to_string();
        (dir, path)
    }

    #[test]
    fn tokens_come_from_every_source_with_their_labels() {
        let (dir, cfg) = write_config("sources", "");
        std::fs::write(dir.join("tokens"), "# comment\n\nfile-token-000000001\n").unwrap();
        std::fs::write(
            &cfg,
            format!(r#"{{"server": {{"auth": {{"tokens": ["config-token-0000001"], "tokensFile": {:?}}}}}}}"#, dir.join("tokens")),
        )
        .unwrap();
        let env = |k: &str| (k == "MCP_GEN_UI_AUTH_TOKEN").then(|| "env-token-0000000001".to_string());
        let s = resolve(
            &args(&["--demo", "--config", &cfg, "--auth-token", "flag-token-000000001", "--auth-token", "flag-token-000000002"]),
            &env,
        )
        .unwrap();
        let labels: Vec<&str> = s.auth.tokens.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, vec!["--auth-token[0]", "--auth-token[1]", "MCP_GEN_UI_AUTH_TOKEN", "server.auth.tokens[0]"]);
        assert_eq!(s.auth.file_tokens.len(), 1);
        assert_eq!(s.auth.file_tokens[0].label, "server.auth.tokensFile:3");
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert!(!format!("{:?}", s.auth).contains("flag-token"), "Debug never prints a token");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn auth_errors_name_the_field_and_never_the_token() {
        let e = resolve(&args(&["--demo", "--auth-token", "has space"]), &no_env).unwrap_err();
        assert_eq!(e.field, "--auth-token");
        assert!(!e.message.contains("has space"), "{e}");
        let e = resolve(&args(&["--demo", "--no-auth", "--auth-token", "flag-token-000000001"]), &no_env).unwrap_err();
        assert_eq!(e.field, "--no-auth");
        assert!(e.message.contains("--auth-token"), "{e}");
        let (dir, cfg) = write_config("missing-file", r#"{"server": {"auth": {"tokensFile": "/nonexistent/tokens"}}}"#);
        assert_eq!(resolve(&args(&["--demo", "--config", &cfg]), &no_env).unwrap_err().field, "server.auth.tokensFile");
        std::fs::write(&cfg, r#"{"server": {"auth": {"disabled": true, "tokens": ["config-token-0000001"]}}}"#).unwrap();
        assert_eq!(resolve(&args(&["--demo", "--config", &cfg]), &no_env).unwrap_err().field, "server.auth.disabled");
        std::fs::write(&cfg, r#"{"server": {"auth": {"oauth": {"issuer": "http://as", "jwksUrl": "http://as/jwks"}}}}"#).unwrap();
        assert_eq!(resolve(&args(&["--demo", "--config", &cfg]), &no_env).unwrap_err().field, "server.auth.oauth.audience");
        std::fs::write(&cfg, r#"{"server": {"auth": {"oauth": {"issuer": "http://as", "audience": "a", "jwksUrl": "http://as/jwks", "requiredScopes": ["a b"]}}}}"#).unwrap();
        assert_eq!(resolve(&args(&["--demo", "--config", &cfg]), &no_env).unwrap_err().field, "server.auth.oauth.requiredScopes[0]");
        std::fs::write(&cfg, r#"{"server": {"auth": {"oauth": {"issuer": "http://as", "audience": "a"}}}}"#).unwrap();
        assert_eq!(resolve(&args(&["--demo", "--config", &cfg]), &no_env).unwrap_err().field, "server.auth.oauth.jwksUrl");
        assert_eq!(
            resolve(&args(&["--demo", "--config", &cfg, "--oauth-jwks-url", "jwks"]), &no_env).unwrap_err().field,
            "--oauth-jwks-url"
        );
        let s = resolve(&args(&["--demo", "--config", &cfg, "--oauth-jwks-url", "http://as/keys"]), &no_env).unwrap();
        assert_eq!(s.auth.oauth.unwrap().jwks_url.as_str(), "http://as/keys");
        std::fs::remove_dir_all(dir).unwrap();
        let s = resolve(
            &args(&["--demo", "--oauth-issuer", "http://as", "--oauth-audience", "x", "--oauth-jwks-url", "http://as/jwks"]),
            &no_env,
        )
        .unwrap();
        assert!(s.auth.configured());
        assert_eq!(resolve(&args(&["--demo", "--oauth-issuer", "http://as"]), &no_env).unwrap_err().field, "server.auth.oauth.audience");
    }

    #[test]
    fn metrics_listen_is_an_address_of_its_own() {
        let s = resolve(&args(&["--demo", "--metrics-listen", "127.0.0.1:9464"]), &no_env).unwrap();
        assert_eq!(s.metrics_listen, Some("127.0.0.1:9464".parse().unwrap()));
        assert_eq!(resolve(&args(&["--demo", "--metrics-listen", "9464"]), &no_env).unwrap_err().field, "--metrics-listen");
        let e = resolve(&args(&["--demo", "--listen", "127.0.0.1:9000", "--metrics-listen", "127.0.0.1:9000"]), &no_env).unwrap_err();
        assert_eq!(e.field, "--metrics-listen");
        let short = resolve(&args(&["--demo", "--auth-token", "short"]), &no_env).unwrap();
        assert!(short.warnings.iter().any(|w| w.contains("--auth-token[0]") && w.contains("16")), "{:?}", short.warnings);
    }

    #[test]
    fn redis_needs_a_url_and_never_quotes_it() {
        let s = resolve(&args(&["--demo", "--redis-url", "redis://:hunter2@cache:6379/2"]), &no_env).unwrap();
        assert_eq!(s.config.cache.kind, config::CacheType::Redis);
        assert_eq!(s.config.cache.redis_url.as_deref(), Some("redis://:hunter2@cache:6379/2"));
        let e = resolve(&args(&["--demo", "--redis-url", "rediss://:hunter2@cache:6379"]), &no_env).unwrap_err();
        assert_eq!(e.field, "--redis-url");
        assert!(!e.message.contains("hunter2"), "{e}");
        let e = resolve(&args(&["--demo", "--redis-url", "http://cache"]), &no_env).unwrap_err();
        assert_eq!(e.field, "--redis-url");
        let e = resolve(&args(&["--demo", "--redis-url", "redis://cache", "--cache-dir", "/tmp/x"]), &no_env).unwrap_err();
        assert_eq!(e.field, "--redis-url");
        let (dir, cfg) = write_config("redis", r#"{"cache": {"type": "redis"}}"#);
        assert_eq!(resolve(&args(&["--demo", "--config", &cfg]), &no_env).unwrap_err().field, "cache.redisUrl");
        std::fs::write(&cfg, r#"{"cache": {"type": "redis", "redisUrl": "redis://cache", "redisTimeoutMs": 0}}"#).unwrap();
        assert_eq!(resolve(&args(&["--demo", "--config", &cfg]), &no_env).unwrap_err().field, "cache.redisTimeoutMs");
        std::fs::write(&cfg, r#"{"cache": {"type": "redis", "redisUrl": "redis//cache"}}"#).unwrap();
        assert_eq!(resolve(&args(&["--demo", "--config", &cfg]), &no_env).unwrap_err().field, "cache.redisUrl");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn sse_transport_applies_to_urls_only() {
        let s = resolve(&args(&["--upstream-url", "http://127.0.0.1:1/sse", "--upstream-transport", "sse"]), &no_env).unwrap();
        assert!(matches!(s.upstream, UpstreamSpec::Sse { .. }));
        assert_eq!(resolve(&args(&["--upstream", "x", "--upstream-transport", "sse"]), &no_env).unwrap_err().field, "--upstream-transport");
    }
}
