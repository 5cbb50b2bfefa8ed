//! `upstream`: which server to wrap (flags over the config file), its limits, and the spec the
//! supervisor connects with.

use mcp_gen_ui_actors::upstream::UpstreamSpec;

use super::{http_url, EnvLookup, MAX_TIMEOUT_MS};
use crate::config::cli::{Args, UpstreamTransportArg};
use crate::config::file::{Config, ConfigError, UpstreamTransport};

pub(super) fn resolve(args: &Args, env: EnvLookup, cfg: &mut Config, warnings: &mut Vec<String>) -> Result<UpstreamSpec, ConfigError> {
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
            // Not quoted: without its colon the whole is the value, often a credential.
            return Err(ConfigError::new(
                "--upstream-header",
                "a header has no colon between its name and its value: give it as \"Name: value\" (the value is not shown here: it may be a credential)",
            ));
        };
        check_header("--upstream-header", k.trim(), v.trim())?;
        cfg.upstream.headers.insert(k.trim().to_string(), v.trim().to_string());
    }
    for (k, v) in &cfg.upstream.headers {
        check_header(&format!("upstream.headers.{k}"), k, v)?;
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
            // Not quoted: what follows `=` is a value, perhaps a secret.
            _ => {
                return Err(ConfigError::new(
                    "--upstream-env",
                    "a variable has no name before its =: give KEY=VALUE, or KEY to pass this service's own value",
                ))
            }
        }
    }
    let upstream = if args.demo {
        let exe = std::env::current_exe()
            .map_err(|e| ConfigError::new("--demo", format!("cannot find this program's own path to start the demo upstream: {e}")))?;
        UpstreamSpec::Stdio { command: exe.to_string_lossy().into_owned(), args: vec!["demo-upstream".into()], env: Vec::new(), cwd: None }
    } else {
        upstream_spec(cfg, args.upstream_url.is_some())?
    };
    Ok(upstream)
}

/// The upstream's request timeout and message bound (every server's defaults).
pub(super) fn limits(args: &Args, cfg: &mut Config) -> Result<(), ConfigError> {
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
    if !(1..=1_000_000).contains(&cfg.upstream.max_tools) {
        return Err(ConfigError::new("upstream.maxTools", "must be from 1 to 1000000"));
    }
    if !(1024..=1 << 30).contains(&cfg.upstream.max_tool_list_bytes) {
        return Err(ConfigError::new("upstream.maxToolListBytes", "must be from 1024 to 1073741824 (bytes)"));
    }
    Ok(())
}

fn upstream_spec(cfg: &Config, args_url: bool) -> Result<UpstreamSpec, ConfigError> {
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
            // Named where it came from: the flag replaces the config file's URL.
            let field = if args_url { "--upstream-url" } else { "upstream.url" };
            let url = http_url(raw, field)?;
            let headers = up.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            Ok(if t == UpstreamTransport::Sse {
                UpstreamSpec::Sse { url, headers }
            } else {
                UpstreamSpec::StreamableHttp { url, headers, bearer: None }
            })
        }
    }
}

/// A header this service can send: a valid name, and a value without line breaks or other
/// control characters (such a value would fail every connection, long after start). The
/// error never quotes the value (it may be a credential).
pub(super) fn check_header(field: &str, name: &str, value: &str) -> Result<(), ConfigError> {
    if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Err(ConfigError::new(field, format!("{name:?} is not a valid HTTP header name (letters, digits and -)")));
    }
    if reqwest::header::HeaderValue::from_str(value).is_err() {
        return Err(ConfigError::new(
            field,
            "the value holds a line break or another control character, which no HTTP header may carry: remove it",
        ));
    }
    Ok(())
}
