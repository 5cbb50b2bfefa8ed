//! mcp-gen-ui: wraps one MCP server and gives each of its tools an MCP Apps UI.

mod cli;
mod config;
mod demo_upstream;
mod export;
mod http;
mod logging;
mod settings;
mod stdio_edge;
mod tokens;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use actix::{Addr, Arbiter, Supervisor};
use actix_web::{web, App, HttpServer};
use clap::Parser;
use mcp_gen_ui_actors::cache_key::ConfigFingerprint;
use mcp_gen_ui_actors::generate::{Deps, GenSettings};
use mcp_gen_ui_actors::generation_queue::GenerationQueue;
use mcp_gen_ui_actors::learned_shapes::LearnedShapes;
use mcp_gen_ui_actors::llm::{Anthropic, Ollama, OpenAi, SharedLlm};
use mcp_gen_ui_actors::messages::Shutdown;
use mcp_gen_ui_actors::metrics::Metrics;
use mcp_gen_ui_actors::prompts::{Prompts, PROMPT_VERSION};
use mcp_gen_ui_actors::ready_pages::ReadyPages;
use mcp_gen_ui_actors::redis_store::{RedisSettings, RedisStore, LEASE_TTL};
use mcp_gen_ui_actors::refinements::Refinements;
use mcp_gen_ui_actors::replica_sync;
use mcp_gen_ui_actors::router::Router;
use mcp_gen_ui_actors::session_deps::{SessionDeps, SessionLimits};
use mcp_gen_ui_actors::session_table::SessionTable;
use mcp_gen_ui_actors::ui_cache::{CacheSettings, UiCache};
use mcp_gen_ui_actors::ui_pages::{UiPages, TEMPLATE_VERSION};
use mcp_gen_ui_actors::upstream::LinkLimits;
use mcp_gen_ui_actors::upstream_connection::UpstreamConnection;

use crate::cli::{Args, Command};
use crate::config::{HostTransport, Provider};
use crate::settings::Settings;

fn main() -> ExitCode {
    forget_empty_settings();
    let args = Args::parse();
    if args.print_config_schema {
        print!("{}", config::schema_json());
        return ExitCode::SUCCESS;
    }
    if let Some(Command::Healthcheck { url }) = &args.command {
        return healthcheck(url);
    }
    if let Some(Command::DemoUpstream) = args.command {
        return match demo_upstream::run() {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        };
    }
    let settings = match settings::resolve(&args, &|k| std::env::var(k).ok()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mcp-gen-ui: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = logging::init(&settings.log_level, settings.log_format, settings.log_file.as_deref(), settings.log_stdout) {
        eprintln!("mcp-gen-ui: invalid configuration: logging.file: cannot open it: {e}");
        return ExitCode::from(2);
    }
    for w in &settings.warnings {
        tracing::warn!(component = "config", event = "warning", "{w}");
    }
    let prompts = match Prompts::load(settings.config.generation.prompts_dir.as_deref()) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            eprintln!("mcp-gen-ui: invalid configuration: generation.promptsDir: {e}");
            return ExitCode::from(2);
        }
    };
    let export = match &args.command {
        Some(Command::Export { dir }) => match dir.clone().or_else(|| settings.export_dir.clone()) {
            Some(d) => Some(d),
            None => {
                eprintln!("mcp-gen-ui: invalid configuration: export: give the folder: mcp-gen-ui export DIR (or --export-dir DIR)");
                return ExitCode::from(2);
            }
        },
        _ => None,
    };
    match actix_web::rt::System::new().block_on(run(settings, prompts, export)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-gen-ui: {e}");
            ExitCode::FAILURE
        }
    }
}

/// An `MCP_GEN_UI_*` variable set to "" means unset: compose files write `VAR: ${VAR:-}`, and
/// an empty value must fall back to the default rather than fail flag parsing.
fn forget_empty_settings() {
    let empty: Vec<std::ffi::OsString> = std::env::vars_os()
        .filter(|(k, v)| k.to_str().is_some_and(|k| k.starts_with("MCP_GEN_UI_")) && v.is_empty())
        .map(|(k, _)| k)
        .collect();
    for k in empty {
        // SAFETY (edition 2024 wording): runs first in main, before any thread exists.
        std::env::remove_var(k);
    }
}

/// `mcp-gen-ui healthcheck URL`: exit 0 when URL answers 2xx within 3 s (for Docker's
/// HEALTHCHECK, so the runtime image needs no curl).
fn healthcheck(url: &str) -> ExitCode {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime builds");
    let ok = rt.block_on(async {
        let client = reqwest::Client::builder().timeout(Duration::from_secs(3)).build().ok()?;
        Some(client.get(url).send().await.ok()?.status().is_success())
    });
    if ok == Some(true) {
        ExitCode::SUCCESS
    } else {
        eprintln!("mcp-gen-ui: {url} is not healthy");
        ExitCode::FAILURE
    }
}

/// The provider client, or None for offline.
fn llm_client(settings: &Settings) -> Option<SharedLlm> {
    let llm = &settings.config.llm;
    let key = settings.api_key.clone().map(|k| k.0);
    let (base, model) = (llm.base_url.as_deref(), llm.model.as_deref());
    match settings.provider {
        Provider::Offline => None,
        Provider::Anthropic => Some(Arc::new(Anthropic::new(base, key.unwrap_or_default(), model))),
        Provider::Openai => Some(Arc::new(OpenAi::new(base, key, model))),
        Provider::Ollama => Some(Arc::new(Ollama::new(base, key, model))),
    }
}

/// Starts every actor: cache, refinements, generation queue, upstream connection. Singletons
/// start once, before any HTTP worker, so every worker shares the same addresses.
/// What `run` keeps besides the sessions' dependencies: the upstream actor (to shut it down) and
/// its arbiter (a thread of its own for the link's I/O).
struct Upstream {
    addr: Addr<UpstreamConnection>,
    _arbiter: Arbiter,
    /// `cache.type: redis`: the store shared with the other replicas (its health is in /readyz).
    shared: Option<RedisStore>,
}

/// The store shared by replicas (`cache.type: redis`), connected lazily: a Redis that is down
/// at start only means this replica starts alone.
fn shared_store(settings: &Settings, metrics: &Arc<Metrics>) -> Option<RedisStore> {
    let c = &settings.config.cache;
    if !c.enabled || c.kind != config::CacheType::Redis {
        return None;
    }
    let redis = RedisSettings {
        url: c.redis_url.clone()?,
        prefix: c.redis_key_prefix.clone(),
        timeout: Duration::from_millis(c.redis_timeout_ms),
        lease_ttl: LEASE_TTL,
    };
    match RedisStore::open(redis, metrics.clone()) {
        Ok(s) => {
            s.start();
            Some(s)
        }
        Err(why) => {
            tracing::error!(component = "main", event = "redis_unusable", error = %why, "cache.redisUrl cannot be used: this replica shares nothing");
            None
        }
    }
}

fn start_actors(settings: &Settings, prompts: Arc<Prompts>, metrics: Arc<Metrics>) -> (SessionDeps, Upstream) {
    let cfg = &settings.config;
    let llm = llm_client(settings);
    metrics.preinit(settings.provider.name(), llm.as_ref().map(|l| l.model()).unwrap_or(""));
    let fingerprint = ConfigFingerprint {
        prompt_version: PROMPT_VERSION.to_string(),
        prompts_hash: prompts.hash.clone(),
        template_version: TEMPLATE_VERSION.to_string(),
        provider: settings.provider.name().to_string(),
        model: llm.as_ref().map(|l| l.model().to_string()).unwrap_or_default(),
        temperature: cfg.llm.temperature,
        style_guide: cfg.generation.style_guide.clone().unwrap_or_default(),
    };
    let cache_dir = (cfg.cache.kind == config::CacheType::Filesystem).then(|| cfg.cache.dir.clone()).flatten();
    let shared = shared_store(settings, &metrics);
    let cache = UiCache::new(
        CacheSettings {
            max_entries: cfg.cache.max_entries,
            max_entry_bytes: cfg.cache.max_entry_size_bytes,
            max_total_bytes: cfg.cache.max_total_size_bytes,
            ttl: cfg.cache.ttl_seconds.map(Duration::from_secs),
            dir: cache_dir.clone(),
        },
        metrics.clone(),
    )
    .with_shared(shared.clone());
    // Singletons run under a supervisor: one that stops (a contained panic) starts again with
    // the same address, so nobody holding it notices beyond the answer that failed.
    let cache = Supervisor::start(move |_| cache);
    // What tools' results look like, learnt from hosts' calls (generation.learnResultShape).
    let shapes = cfg.generation.learn_result_shape.then(|| LearnedShapes::new(cache_dir.as_deref()));
    // Ready ui:// read results, shared by every session (none with the cache off).
    let pages = cfg.cache.enabled.then(|| ReadyPages::with_ttl(cfg.cache.ttl_seconds.map(Duration::from_secs)));
    let refinements_actor = Refinements::new(cache_dir.clone(), metrics.clone()).with_pages(pages.clone()).with_shared(shared.clone());
    let refinements = Supervisor::start(move |_| refinements_actor);
    let deps = Deps {
        llm,
        prompts,
        pages: Arc::new(UiPages::new()),
        metrics: metrics.clone(),
        settings: GenSettings {
            budget: Duration::from_millis(cfg.generation.timeout_ms),
            max_retries: cfg.generation.max_retries,
            temperature: cfg.llm.temperature,
            max_tokens: cfg.llm.max_tokens,
            theme: cfg.generation.theme.clone().unwrap_or_else(|| "light".into()),
            debug_dir: settings.debug_dir.clone(),
            redact: cfg.logging.redact_sensitive_data,
            fallback_ttl: Duration::from_secs(cfg.cache.fallback_ttl_secs),
            style_guide: cfg.generation.style_guide.clone(),
        },
    };
    let queue = GenerationQueue::new(
        UiCache::port(&cache),
        refinements.clone().recipient(),
        deps,
        fingerprint.hash(),
        cfg.cache.enabled,
        cfg.generation.max_concurrent_generations,
        settings.export_dir.clone(),
    )
    .with_state_dir(cache_dir.as_deref())
    .with_pages(pages.clone())
    .with_shapes(shapes.clone())
    .with_shared(shared.clone());
    let queue = Supervisor::start(move |_| queue);
    let refresh = cfg.tool_refresh.enabled.then(|| Duration::from_millis(cfg.tool_refresh.interval_ms));
    let router = Router::new(Duration::from_millis(cfg.upstream.request_timeout_ms), settings.upstream.describe(), metrics.clone());
    router.set_input_runner(mcp_gen_ui_actors::input_rounds::spawn);
    let connection = UpstreamConnection::new(settings.upstream.clone(), router.clone(), metrics.clone())
        .with_listener(queue.clone().recipient())
        .with_pages(pages.clone())
        .with_limits(LinkLimits { max_message_bytes: usize::try_from(cfg.upstream.max_message_bytes).unwrap_or(usize::MAX) })
        .with_refresh_interval(refresh);
    // Its own thread: the link's reader and writer run there, away from the HTTP workers and
    // from the System arbiter's generation work.
    let arbiter = Arbiter::new();
    let upstream = Supervisor::start_in_arbiter(&arbiter.handle(), move |_| connection);
    if let Some(s) = &shared {
        // Other replicas' refinements and regenerated pages reach this one's tables and hosts.
        let targets = replica_sync::Targets {
            pages: pages.clone(),
            forget: cache.clone().recipient(),
            broadcast: UpstreamConnection::port(&upstream).broadcast,
        };
        replica_sync::start(s, targets);
    }
    let deps = SessionDeps {
        router,
        upstream: UpstreamConnection::port(&upstream),
        queue: GenerationQueue::port(&queue),
        refinements: Refinements::port(&refinements),
        sessions: None,
        metrics,
        idle_limit: settings.session_idle_timeout,
        enabled_tools: cfg.generation.enabled_tools.as_ref().map(|t| Arc::new(t.iter().cloned().collect())),
        pages,
        shape_artifacts: cfg.results.shaping == config::Shaping::Artifacts,
        shapes: shapes.clone(),
        ui_domain: cfg.ui.domain.as_deref().map(Arc::from),
        stateless_llm_calls: Default::default(),
        limits: SessionLimits {
            max_in_flight: cfg.limits.max_in_flight_per_session,
            llm_calls_per_minute: cfg.limits.llm_calls_per_minute,
        },
    };
    (deps, Upstream { addr: upstream, _arbiter: arbiter, shared })
}

async fn run(settings: Settings, prompts: Arc<Prompts>, export: Option<std::path::PathBuf>) -> std::io::Result<()> {
    let metrics = Arc::new(Metrics::new());
    let (deps, upstream) = start_actors(&settings, prompts, metrics.clone());
    let queue = deps.queue.pending.clone();
    tracing::info!(component = "main", event = "provider", provider = settings.provider.name(), reason = %settings.provider_reason, "LLM provider: {} ({})", settings.provider.name(), settings.provider_reason);
    if let Some(dir) = &settings.debug_dir {
        tracing::info!(component = "main", event = "debug_dir", dir = %dir.display(), "debug: prompts, answers and pages are written to {}", dir.display());
    }
    let result = match (export, settings.host_transport) {
        (Some(dir), _) => export::run(&deps, &dir).await,
        (None, HostTransport::Stdio) => {
            eprintln!("mcp-gen-ui {}: host transport stdio; upstream {}", env!("CARGO_PKG_VERSION"), settings.upstream.describe());
            // stdin closing ends the session; SIGTERM/SIGINT end it too.
            tokio::select! {
                _ = stdio_edge::run(deps, settings.max_body_bytes) => {}
                _ = shutdown_signal() => tracing::info!(component = "main", event = "signal", "signal received; shutting down"),
            }
            Ok(())
        }
        (None, HostTransport::Http) => serve_http(&settings, deps, metrics, upstream.shared.clone()).await,
    };
    let stopping = STOPPING.get().copied().unwrap_or_else(std::time::Instant::now);
    // Shutdown stays under 10 s from the signal: HTTP drains for up to 6 s, generations still
    // running get what is left of 7.5 s to finish and be stored (the disk cache is write-through),
    // the upstream 2 s.
    let left = SHUTDOWN_BUDGET.saturating_sub(stopping.elapsed()).max(Duration::from_millis(500));
    let unfinished = mcp_gen_ui_actors::generation_queue::drain(&queue, left).await;
    if unfinished > 0 {
        tracing::warn!(
            component = "main",
            event = "generations_abandoned",
            count = unfinished,
            "generations still running at shutdown were abandoned"
        );
    }
    // Closes the child's stdin, waits for it, then kills its process group: no orphans.
    let _ = upstream.addr.send(Shutdown).await;
    tracing::info!(component = "main", event = "exit", "mcp-gen-ui stopped");
    result
}

/// When the stop signal came: shutdown steps share one budget counted from it.
static STOPPING: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
/// From the signal to the end of the generation drain; the upstream close (2 s) comes after.
const SHUTDOWN_BUDGET: Duration = Duration::from_millis(7500);

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler installs");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    let _ = STOPPING.set(std::time::Instant::now());
}

async fn serve_http(settings: &Settings, deps: SessionDeps, metrics: Arc<Metrics>, shared: Option<RedisStore>) -> std::io::Result<()> {
    let sessions = Arc::new(SessionTable::default());
    let edge = http::Edge {
        router: deps.router.clone(),
        session: SessionDeps { sessions: Some(sessions.clone()), ..deps },
        sessions: sessions.clone(),
        metrics,
        allowed_hosts: Arc::new(settings.allowed_hosts.clone()),
        allowed_origins: Arc::new(settings.allowed_origins.clone()),
        max_body_bytes: settings.max_body_bytes,
        sse_keepalive: settings.sse_keepalive,
        max_sessions: settings.config.limits.max_sessions,
        shared: shared.clone(),
        stateless: Default::default(),
    };
    let data = web::Data::new(edge);
    let (auth, generated) = start_auth(settings)?;
    let (app_auth, metrics_data) = (auth.clone(), data.clone());
    let server = HttpServer::new(move || App::new().app_data(data.clone()).app_data(app_auth.clone()).configure(http::configure))
        .workers(settings.workers)
        // SSE answers go out in small writes (priming event, then the answer when the upstream
        // replies): without TCP_NODELAY, Nagle and delayed ACKs stall each one by ~40 ms.
        .on_connect(|conn, _ext| {
            if let Some(tcp) = conn.downcast_ref::<actix_web::rt::net::TcpStream>() {
                let _ = tcp.set_nodelay(true);
            }
        })
        .shutdown_timeout(6)
        // Signals are ours (below), so shutdown knows when it started.
        .disable_signals()
        .bind(settings.listen)
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on {}: {e}", settings.listen)))?;
    let metrics_server = metrics_listener(settings, metrics_data)?;
    let addr = server.addrs().first().copied().unwrap_or(settings.listen);
    let base = format!("http://{addr}");
    println!("mcp-gen-ui {} listening on {base}", env!("CARGO_PKG_VERSION"));
    println!("  Streamable HTTP  {base}/mcp");
    println!("  legacy SSE       {base}/sse");
    println!("  preview          {base}/preview");
    println!("  health           {base}/healthz   ready {base}/readyz   metrics {base}/metrics");
    println!("  upstream         {}{}", settings.upstream.describe(), if settings.demo { " (bundled demo)" } else { "" });
    println!("  UI provider      {} ({})", settings.provider.name(), settings.provider_reason);
    if let Some(s) = &shared {
        let h = s.health();
        println!("  shared cache     redis {} (replica {}; pages, refinements and generations shared)", h.server, h.replica);
    }
    print_auth(settings, addr, &auth, generated.as_ref(), metrics_server.as_ref().map(|m| m.0));
    tracing::info!(component = "main", event = "listening", address = %addr, "listening");
    let server = server.run();
    let handle = server.handle();
    let metrics_handle = metrics_server.map(|(_, s)| {
        let h = s.handle();
        actix_web::rt::spawn(s);
        h
    });
    actix_web::rt::spawn(async move {
        shutdown_signal().await;
        tracing::info!(component = "main", event = "signal", "signal received; shutting down");
        if let Some(h) = metrics_handle {
            h.stop(true).await;
        }
        handle.stop(true).await;
    });
    let res = server.await;
    let closed = sessions.close_all();
    tracing::info!(component = "main", event = "stopped", sessions_closed = closed, "HTTP server stopped");
    res
}

/// The edge's authentication: what the settings configure, or, on a non-loopback listener with
/// nothing configured and no `--no-auth`, a token generated for this run (returned so that
/// `print_auth` shows it once). Starts the JWKS load and the SIGHUP reload of the tokens file.
fn start_auth(settings: &Settings) -> std::io::Result<(web::Data<http::auth::Auth>, Option<settings::Secret>)> {
    let a = &settings.auth;
    let generated = if !a.disabled && !a.configured() && !http::auth::is_loopback(settings.listen.ip()) {
        Some(tokens::generate_token()?)
    } else {
        None
    };
    let auth = web::Data::new(http::auth::Auth::new(a, generated.as_ref()));
    if auth.oauth().is_some() {
        let auth = auth.clone();
        actix_web::rt::spawn(async move {
            if let Some(o) = auth.oauth() {
                o.preload().await;
            }
        });
    }
    if let Some(path) = auth.tokens_file().map(std::path::Path::to_path_buf) {
        // Installed before the listening line, so a SIGHUP sent after it never kills the process.
        let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
        let auth = auth.clone();
        actix_web::rt::spawn(async move {
            while hup.recv().await.is_some() {
                match auth.reload() {
                    Ok(n) => tracing::info!(
                        component = "auth",
                        event = "tokens_reloaded",
                        tokens = n,
                        "SIGHUP: {} holds {n} tokens now",
                        path.display()
                    ),
                    Err(e) => {
                        tracing::error!(component = "auth", event = "tokens_reload_failed", error = %e, "SIGHUP: the tokens file was not reloaded (its previous tokens stay in force): {e}")
                    }
                }
            }
        });
    }
    Ok((auth, generated))
}

/// `--metrics-listen`: a second server with /metrics and /healthz only, never authenticated.
fn metrics_listener(
    settings: &Settings,
    data: web::Data<http::Edge>,
) -> std::io::Result<Option<(std::net::SocketAddr, actix_web::dev::Server)>> {
    let Some(at) = settings.metrics_listen else { return Ok(None) };
    let server = HttpServer::new(move || App::new().app_data(data.clone()).configure(http::configure_metrics_listener))
        .workers(1)
        .shutdown_timeout(1)
        .disable_signals()
        .bind(at)
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on {at} (--metrics-listen): {e}")))?;
    let addr = server.addrs().first().copied().unwrap_or(at);
    Ok(Some((addr, server.run())))
}

/// The startup lines about authentication. A generated token is printed here, once, on
/// stdout, and never logged.
fn print_auth(
    settings: &Settings,
    addr: std::net::SocketAddr,
    auth: &http::auth::Auth,
    generated: Option<&settings::Secret>,
    metrics: Option<std::net::SocketAddr>,
) {
    if let Some(m) = metrics {
        println!("  metrics, no auth http://{m}/metrics");
    }
    // 0.0.0.0 and :: are not addresses to connect to: this machine answers on loopback.
    let reach = if addr.ip().is_unspecified() { std::net::SocketAddr::from(([127, 0, 0, 1], addr.port())) } else { addr };
    let a = &settings.auth;
    if let Some(token) = generated {
        println!("  auth             a token was generated for this run (set your own with --auth-token or MCP_GEN_UI_AUTH_TOKEN; --no-auth turns authentication off):");
        println!("                   http://{reach}/mcp with the header  Authorization: Bearer {}", token.0);
        println!("                   http://{reach}/preview#token={}", token.0);
    } else if !auth.is_on() {
        if http::auth::is_loopback(addr.ip()) {
            println!("  auth             none (loopback only; --auth-token or OAuth to require tokens)");
        } else {
            println!("  auth             NONE (--no-auth): anyone who can reach {addr} can use every tool");
            tracing::warn!(component = "auth", event = "no_auth", address = %addr, "authentication is off on a non-loopback address (--no-auth)");
        }
    } else {
        let mut how = Vec::new();
        if auth.static_count() > 0 || a.tokens_file.is_some() {
            how.push(format!("{} bearer tokens", auth.static_count()));
        }
        if let Some(f) = &a.tokens_file {
            how.push(format!("tokens file {} (SIGHUP reloads it)", f.display()));
        }
        if let Some(o) = &a.oauth {
            how.push(format!("OAuth access tokens from {}", o.issuer));
        }
        println!("  auth             {}; preview: http://{reach}/preview#token=TOKEN", how.join(", "));
    }
}
