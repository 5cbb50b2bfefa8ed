//! `logging`: level (or filter directive), format, and where logs go: never stdout when stdout
//! carries the stdio transport.

use crate::config::cli::{Args, LogFormatArg};
use crate::config::file::{self as config, Config, ConfigError, HostTransport, LogFormat};

pub(super) fn resolve(args: &Args, cfg: &mut Config) -> Result<(), ConfigError> {
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
    check_level(&cfg.logging.level, level_field)?;

    if cfg.logging.destination == config::LogDestination::Stdout
        && cfg.server.transport == HostTransport::Stdio
        && cfg.logging.file.is_none()
    {
        return Err(ConfigError::new(
            "logging.destination",
            "stdout carries the MCP messages with --transport stdio: log to stderr or set logging.file",
        ));
    }
    Ok(())
}

/// A bare word must be a level; anything with `=` or `,` is a tracing filter directive.
fn check_level(level: &str, field: &str) -> Result<(), ConfigError> {
    const LEVELS: &[&str] = &["error", "warn", "info", "debug", "trace", "off"];
    let why = if !level.contains(['=', ',']) {
        match LEVELS.contains(&level.to_ascii_lowercase().as_str()) {
            true => return Ok(()),
            false => "unknown level".to_string(),
        }
    } else {
        match tracing_subscriber::EnvFilter::builder().parse(level) {
            Ok(_) => return Ok(()),
            Err(e) => e.to_string(),
        }
    };
    Err(ConfigError::new(field, format!("{level:?} is not a level (error, warn, info, debug, trace) or filter directive: {why}")))
}
