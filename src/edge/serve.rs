//! Serving the HTTP edge: the listener (and the `--metrics-listen` one), authentication at
//! start (a generated token, the JWKS preload, the SIGHUP reload of the tokens file), the
//! start-up lines, and the stop on a signal.

use std::sync::Arc;

use actix_web::{web, App, HttpServer};
use mcp_gen_ui_actors::metrics::Metrics;
use mcp_gen_ui_actors::session::deps::SessionDeps;
use mcp_gen_ui_actors::session::table::SessionTable;
use mcp_gen_ui_actors::store::redis::RedisStore;

use crate::config;
use crate::config::settings::Settings;
use crate::edge;
use crate::shutdown_signal;

pub async fn serve_http(settings: &Settings, deps: SessionDeps, metrics: Arc<Metrics>, shared: Option<RedisStore>) -> std::io::Result<()> {
    let sessions = Arc::new(SessionTable::default());
    let stateless = mcp_gen_ui_actors::session::StatelessTables::new(&deps);
    let edge = edge::http::Edge {
        session: Arc::new(SessionDeps { sessions: Some(sessions.clone()), ..deps }),
        sessions: sessions.clone(),
        metrics,
        allowed_hosts: Arc::new(settings.allowed_hosts.clone()),
        allowed_origins: Arc::new(settings.allowed_origins.clone()),
        max_body_bytes: settings.max_body_bytes,
        sse_keepalive: settings.sse_keepalive,
        max_sessions: settings.config.limits.max_sessions,
        max_sessions_per_principal: settings
            .config
            .limits
            .max_sessions_per_principal
            .unwrap_or((settings.config.limits.max_sessions / 4).max(1)),
        shared: shared.clone(),
        stateless,
        body_timeout: std::time::Duration::from_secs(settings.config.server.body_timeout_secs),
        max_per_client: settings.config.server.max_connections_per_client,
        per_client: Default::default(),
        trusted_proxies: Arc::new(settings.trusted_proxies.clone()),
        sandbox: None,
    };
    let trust = sandbox_trust(&edge);
    let sandbox = sandbox_listener(settings, trust.clone())?;
    let edge = edge::http::Edge {
        sandbox: sandbox.as_ref().map(|(addr, _)| edge::http::preview::SandboxPlace {
            port: addr.port(),
            origin: settings.sandbox_origin.as_ref().map(|u| u.origin().ascii_serialization()),
        }),
        ..edge
    };
    let data = web::Data::new(edge);
    let (auth, generated) = start_auth(settings)?;
    let (app_auth, metrics_data) = (auth.clone(), data.clone());
    let server = HttpServer::new(move || {
        // Each worker is a home for the upstreams' readers (see `process::homes`).
        mcp_gen_ui_actors::process::homes::join_current();
        App::new()
            .wrap(actix_web::middleware::from_fn(edge::http::limits::per_client))
            .app_data(data.clone())
            .app_data(app_auth.clone())
            .app_data(trust.clone())
            .configure(edge::http::configure)
    })
    .workers(settings.workers)
    // Connections stop being accepted before the process runs out of file descriptors,
    // so that health checks and the upstreams' pipes still find some.
    .max_connections(connection_budget(settings.workers))
    // SSE answers go out in small writes (priming event, then the answer when the upstream
    // replies): without TCP_NODELAY, Nagle and delayed ACKs stall each one by ~40 ms.
    .tcp_nodelay(true)
    // A host that goes away closes its socket: its streams end then, not when a keep-alive
    // write finally fails (the second, 2 x server.sseKeepaliveSecs), so a burst of dropped
    // hosts gives its connections back at once. MCP hosts never half-close a request they
    // await; a proxy in front must not pass a client's half-close on (docs/operations.md).
    .h1_allow_half_closed(false)
    .shutdown_timeout(6)
    // Signals are ours (below), so shutdown knows when it started.
    .disable_signals()
    .bind(settings.listen)
    .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on {}: {e}", settings.listen)))?;
    let metrics_server = metrics_listener(settings, metrics_data)?;
    let addr = server.addrs().first().copied().unwrap_or(settings.listen);
    print_listening(settings, addr, shared.as_ref());
    print_auth(settings, addr, &auth, generated.as_ref(), metrics_server.as_ref().map(|m| m.0));
    tracing::info!(component = "main", event = "listening", address = %addr, "listening");
    let server = server.run();
    let handle = server.handle();
    let metrics_handle = metrics_server.map(|(_, s)| {
        let h = s.handle();
        actix_web::rt::spawn(s);
        h
    });
    let sandbox_handle = sandbox.map(|(addr, s)| {
        println!("  preview sandbox  http://{addr}/preview/sandbox (its own origin)");
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
        if let Some(h) = sandbox_handle {
            h.stop(true).await;
        }
        handle.stop(true).await;
    });
    let res = server.await;
    let closed = sessions.close_all();
    tracing::info!(component = "main", event = "stopped", sessions_closed = closed, "HTTP server stopped");
    res
}

/// The start-up lines: where each endpoint is, the upstream, the provider, the shared cache.
fn print_listening(settings: &Settings, addr: std::net::SocketAddr, shared: Option<&RedisStore>) {
    let base = format!("http://{addr}");
    println!("mcp-gen-ui {} listening on {base}", env!("CARGO_PKG_VERSION"));
    println!("  Streamable HTTP  {base}/mcp");
    println!("  legacy SSE       {base}/sse");
    println!("  preview          {base}/preview");
    println!("  health           {base}/healthz   ready {base}/readyz   metrics {base}/metrics");
    println!("  upstream         {}{}", settings.upstreams.describe(), if settings.demo { " (bundled demo)" } else { "" });
    println!("  UI provider      {} ({})", settings.provider.name(), settings.provider_reason);
    if let Some(s) = shared {
        let h = s.health();
        println!("  shared cache     redis {} (replica {}; pages, refinements and generations shared)", h.server, h.replica);
    }
}

/// The edge's authentication: what the settings configure, or, on a non-loopback listener with
/// nothing configured and no `--no-auth`, a token generated for this run (returned so that
/// `print_auth` shows it once). Starts the JWKS load and the SIGHUP reload of the tokens file.
fn start_auth(settings: &Settings) -> std::io::Result<(web::Data<edge::http::auth::Auth>, Option<config::settings::Secret>)> {
    let a = &settings.auth;
    let generated = if !a.disabled && !a.configured() && !edge::http::auth::is_loopback(settings.listen.ip()) {
        Some(config::tokens::generate_token()?)
    } else {
        None
    };
    let auth = web::Data::new(edge::http::auth::Auth::new(a, generated.as_ref()));
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

/// What the preview's sandbox needs to tell a preview of this service from any other page.
/// The same lists the edge holds, shared.
fn sandbox_trust(edge: &edge::http::Edge) -> web::Data<edge::http::preview::SandboxTrust> {
    web::Data::new(edge::http::preview::SandboxTrust {
        allowed_hosts: edge.allowed_hosts.clone(),
        allowed_origins: edge.allowed_origins.clone(),
        trusted_proxies: edge.trusted_proxies.clone(),
    })
}

/// `server.sandboxListen`: the preview's sandbox alone, on a port of its own (another origin).
fn sandbox_listener(
    settings: &Settings,
    trust: web::Data<edge::http::preview::SandboxTrust>,
) -> std::io::Result<Option<(std::net::SocketAddr, actix_web::dev::Server)>> {
    let Some(at) = settings.sandbox_listen else { return Ok(None) };
    let server = HttpServer::new(move || App::new().app_data(trust.clone()).configure(edge::http::configure_sandbox_listener))
        .workers(1)
        .shutdown_timeout(1)
        .disable_signals()
        .bind(at)
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on {at} (server.sandboxListen): {e}")))?;
    let addr = server.addrs().first().copied().unwrap_or(at);
    Ok(Some((addr, server.run())))
}

/// Connections each worker may hold: what the file-descriptor limit leaves after a reserve
/// for everything else (upstream pipes and sockets, files, health checks on other listeners).
/// The soft limit is first raised to the hard one, as far as the system allows.
fn connection_budget(workers: usize) -> usize {
    const RESERVE: u64 = 64;
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit write or read only the struct given.
    let soft = unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 25_000;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
        lim.rlim_cur
    };
    let total = soft.saturating_sub(RESERVE).max(16);
    usize::try_from(total / workers.max(1) as u64).unwrap_or(25_000).clamp(8, 25_000)
}

/// `--metrics-listen`: a second server with /metrics and /healthz only, never authenticated.
fn metrics_listener(
    settings: &Settings,
    data: web::Data<edge::http::Edge>,
) -> std::io::Result<Option<(std::net::SocketAddr, actix_web::dev::Server)>> {
    let Some(at) = settings.metrics_listen else { return Ok(None) };
    let server = HttpServer::new(move || App::new().app_data(data.clone()).configure(edge::http::configure_metrics_listener))
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
    auth: &edge::http::auth::Auth,
    generated: Option<&config::settings::Secret>,
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
        if edge::http::auth::is_loopback(addr.ip()) {
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
