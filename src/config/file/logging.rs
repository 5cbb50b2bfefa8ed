//! The `logging` section.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogDestination {
    #[default]
    Stderr,
    /// Not with the stdio host transport, whose stdout carries MCP messages.
    Stdout,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// Logs: to stderr (default), stdout, or a file.
pub struct LoggingConfig {
    /// error, warn, info, debug, trace, or a tracing filter directive.
    pub level: String,
    /// text (for people) or json (one object a line, for collectors).
    pub format: LogFormat,
    /// stderr or stdout (ignored when `file` is set).
    pub destination: LogDestination,
    /// Append logs to this file.
    pub file: Option<PathBuf>,
    /// With --debug, prompts, raw answers and pages are written here
    /// (default: mcp-gen-ui-debug-<uid> in the system's temporary folder). It must be a private
    /// folder of this service's user (mode 0700); mcp-gen-ui makes it so when it creates it.
    pub debug_dir: Option<PathBuf>,
    /// Prompts and answers in debug logs are cut to 2,000 characters.
    pub redact_sensitive_data: bool,
}

impl Default for LoggingConfig {
    fn default() -> Self {
        LoggingConfig {
            level: "info".into(),
            format: LogFormat::Text,
            destination: LogDestination::Stderr,
            file: None,
            debug_dir: None,
            redact_sensitive_data: true,
        }
    }
}
