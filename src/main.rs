//! mcp-gen-ui: sits in front of MCP servers (one or many, stdio or remote), proxies them to
//! any host, and gives each of their tools an MCP Apps UI page that a model writes. This file
//! parses the command line and runs one of: the service, `check`, `export`, `healthcheck`, or
//! the bundled demo server.

mod audit;
mod check;
mod check_connect;
mod config;
mod demo_upstream;
mod edge;
mod export;
mod governance;
mod logging;
mod metrics_reference;
mod pins;
mod pins_cli;
mod principals;
mod reload;
mod telemetry;
mod unmatched;
mod upstreams;
mod wiring;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use mcp_gen_ui_actors::generation::prompts::Prompts;
use mcp_gen_ui_actors::metrics::Metrics;

use crate::config::cli::{Args, Command};
use crate::config::file::HostTransport;
use crate::config::settings::Settings;

/// glibc's fastbins off: a call's many small frees then go to the per-thread cache or are
/// merged at once, instead of waiting in fastbins that every larger allocation must first
/// consolidate (`malloc_consolidate` was 1.3% of a proxied call). Measured in one A/B run each
/// way (issue 53): about 6% less CPU a call, and no more RSS (idle, and with 5,000 tools).
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tunable of the allocator, before any thread is started.
    unsafe {
        libc::mallopt(libc::M_MXFAST, 0);
    }
}

fn main() -> ExitCode {
    tune_allocator();
    forget_empty_settings();
    let args = Args::parse();
    if args.print_config_schema {
        print!("{}", config::file::schema_json());
        return ExitCode::SUCCESS;
    }
    if args.print_metrics_reference {
        return match metrics_reference::render() {
            Ok(page) => {
                print!("{page}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("mcp-gen-ui: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some(Command::Healthcheck { url }) = &args.command {
        return healthcheck(url);
    }
    if let Some(Command::Pins { url, accept, fingerprint }) = &args.command {
        return pins_cli::run(url, accept.as_deref(), fingerprint.as_deref());
    }
    if let Some(Command::Check { .. }) = &args.command {
        return check_command(args);
    }
    if let Some(Command::DemoUpstream) = args.command {
        return match demo_upstream::run() {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        };
    }
    let settings = match unmatched::resolve(&args, &|k| std::env::var(k).ok()) {
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
    for n in &settings.upstreams.notes {
        tracing::info!(component = "config", event = "note", "{n}");
    }
    if !settings.upstreams.disabled.is_empty() {
        let names = settings.upstreams.disabled.join(", ");
        tracing::info!(component = "servers", event = "disabled", servers = %names, "disabled in the servers file, not started: {names}");
    }
    if settings.config.check_strict && !settings.warnings.is_empty() {
        for w in &settings.warnings {
            eprintln!("mcp-gen-ui: checkStrict: {w}");
        }
        eprintln!("mcp-gen-ui: invalid configuration: checkStrict: {} warning(s) above; nothing was started", settings.warnings.len());
        return ExitCode::from(2);
    }
    let prompts = match Prompts::load(settings.config.generation.prompts_dir.as_deref()) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            eprintln!("mcp-gen-ui: invalid configuration: generation.promptsDir: {e}");
            return ExitCode::from(2);
        }
    };
    // A cache folder the service cannot write would lose every page and refinement while
    // /readyz stays green (the shipped image once did, on a root-owned volume): stop instead.
    if let Some(dir) = settings.cache_dir() {
        if let Err(why) = mcp_gen_ui_actors::store::ui_cache::check_writable(dir) {
            eprintln!("mcp-gen-ui: {why}");
            return ExitCode::from(2);
        }
    }
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
        Ok(code) => code,
        Err(e) => {
            eprintln!("mcp-gen-ui: {e}");
            ExitCode::FAILURE
        }
    }
}

/// An `MCP_GEN_UI_*` variable set to "" means unset: compose files write `VAR: ${VAR:-}`, and
/// an empty value must fall back to the default rather than fail flag parsing.
/// `check` (and `check --connect`): its own flags over the run's.
fn check_command(args: Args) -> ExitCode {
    let Some(Command::Check { config, servers_file, principal_secrets, strict, connect }) = &args.command else {
        return ExitCode::FAILURE;
    };
    let (strict, connect) = (*strict, *connect);
    let (config, servers_file, principal_secrets) = (config.clone(), servers_file.clone(), principal_secrets.clone());
    let mut args = Args { command: None, ..args };
    args.config = config.or(args.config);
    args.servers_file = servers_file.or(args.servers_file);
    args.principal_secrets = principal_secrets.or(args.principal_secrets);
    let code = check::run(&args, &|k| std::env::var(k).ok(), strict);
    if !connect || code != ExitCode::SUCCESS {
        return code;
    }
    check::connect(&args, strict)
}

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
        let client = mcp_gen_ui_actors::process::tls::client_builder().timeout(Duration::from_secs(3)).build().ok()?;
        Some(client.get(url).send().await.ok()?.status().is_success())
    });
    if ok == Some(true) {
        ExitCode::SUCCESS
    } else {
        eprintln!("mcp-gen-ui: {url} is not healthy");
        ExitCode::FAILURE
    }
}

/// Runs the service; exit 2 when `checkStrict` finds a configured name that matches no tool.
async fn run(settings: Settings, prompts: Arc<Prompts>, export: Option<std::path::PathBuf>) -> std::io::Result<ExitCode> {
    // One server keeps its series unlabelled; several are labelled by server.
    let metrics = Arc::new(if settings.upstreams.bare { Metrics::new() } else { Metrics::per_server() });
    // Before any actor starts, so every span has the tracer.
    let traces = settings.tracing.as_ref().map(|t| telemetry::start(t, metrics.trace_spans_dropped.clone()));
    let kept = match pins::load(&settings) {
        Ok(k) => k,
        Err(why) => {
            eprintln!("mcp-gen-ui: invalid configuration: {why}");
            return Ok(ExitCode::from(2));
        }
    };
    let gov = governance::Governance::start(&settings, &metrics, traces.as_ref(), kept);
    let (deps, upstream) = wiring::start_actors(&settings, prompts, metrics.clone(), &gov);
    // What the configured names match once the servers have listed their tools.
    let scope = unmatched::Scope::of(&settings);
    if settings.config.check_strict {
        let found = unmatched::at_start::check(deps.fleet.clone(), scope, Duration::from_secs(30)).await;
        unmatched::at_start::log(&found);
        if !found.unmatched.is_empty() {
            for w in &found.unmatched {
                eprintln!("mcp-gen-ui: checkStrict: {w}");
            }
            eprintln!("mcp-gen-ui: invalid configuration: checkStrict: {} name(s) above match no tool; stopping", found.unmatched.len());
            upstream.servers.lock().await.shutdown().await;
            return Ok(ExitCode::from(2));
        }
    } else {
        unmatched::at_start::log_when_listed(deps.fleet.clone(), scope);
    }
    if let Some(file) = settings.upstreams.file.clone() {
        upstreams::watch(upstream.servers.clone(), file, settings.upstreams.file_named_by, settings.upstreams.defaults, gov.audit())?;
    }
    if let Some(file) = settings.config_file.clone() {
        // What each principal may see can change with the rules: hosts list again.
        let fleet = deps.fleet.clone();
        governance::watch(file, gov.clone(), move || {
            // The pins' modes may have changed: every list judged again.
            fleet.registry().rejudge();
            fleet.broadcast(mcp_gen_ui_actors::messages::HostEvent::ToolsChanged(None))
        })?;
    }
    let (queue, abandon) = (deps.queue.pending.clone(), deps.queue.abandon.clone());
    tracing::info!(component = "main", event = "provider", provider = settings.provider.name(), reason = %settings.provider_reason, "LLM provider: {} ({})", settings.provider.name(), settings.provider_reason);
    if let Some(dir) = &settings.debug_dir {
        if let Err(why) = mcp_gen_ui_actors::generation::debug_files::prepare(dir) {
            tracing::error!(component = "main", event = "debug_dir_refused", error = %why, "--debug: no debug files will be written: {why}");
        }
        tracing::info!(component = "main", event = "debug_dir", dir = %dir.display(), "debug: prompts, answers and pages are written to {}", dir.display());
    }
    let result = match (export, settings.host_transport) {
        (Some(dir), _) => export::run(&deps, &dir).await,
        (None, HostTransport::Stdio) => {
            eprintln!("mcp-gen-ui {}: host transport stdio; upstream {}", env!("CARGO_PKG_VERSION"), settings.upstreams.describe());
            // stdin closing ends the session; SIGTERM/SIGINT end it too.
            tokio::select! {
                _ = edge::stdio::run(deps, settings.max_body_bytes, settings.profile.clone()) => {}
                _ = shutdown_signal() => tracing::info!(component = "main", event = "signal", "signal received; shutting down"),
            }
            Ok(())
        }
        (None, HostTransport::Http) => edge::serve::serve_http(&settings, deps, metrics, upstream.shared.clone()).await,
    };
    let stopping = STOPPING.get().copied().unwrap_or_else(std::time::Instant::now);
    // Shutdown stays under 10 s from the signal: HTTP drains for up to 6 s, generations still
    // running get what is left of 7.5 s to finish and be stored (the disk cache is write-through),
    // the upstream 2 s.
    let left = SHUTDOWN_BUDGET.saturating_sub(stopping.elapsed()).max(Duration::from_millis(500));
    let unfinished = mcp_gen_ui_actors::generation::queue::drain(&queue, left).await;
    if unfinished > 0 {
        // Each dropped page is named in the log by the queue; they are made again after a restart.
        let dropped = abandon.send(mcp_gen_ui_actors::messages::Abandon).await.unwrap_or(unfinished);
        tracing::warn!(
            component = "main",
            event = "generations_abandoned",
            count = dropped,
            "generations still running at shutdown were abandoned"
        );
    }
    // Closes the child's stdin, waits for it, then kills its process group: no orphans.
    upstream.servers.lock().await.shutdown().await;
    // The last lines of the trail (calls answered during the drain), within a second.
    let trail = gov.clone();
    tokio::task::spawn_blocking(move || trail.trail.finish(Duration::from_secs(1))).await.ok();
    if let Some(t) = traces {
        // The spans of the last requests, within the 2 s the upstream close also has.
        tokio::task::spawn_blocking(move || t.shutdown(Duration::from_secs(2))).await.ok();
    }
    tracing::info!(component = "main", event = "exit", "mcp-gen-ui stopped");
    result.map(|()| ExitCode::SUCCESS)
}

/// When the stop signal came: shutdown steps share one budget counted from it.
static STOPPING: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
/// From the signal to the end of the generation drain; the upstream close (2 s) comes after.
const SHUTDOWN_BUDGET: Duration = Duration::from_millis(7500);

pub(crate) async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler installs");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    let _ = STOPPING.set(std::time::Instant::now());
}
