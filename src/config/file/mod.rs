//! The configuration file (JSON, camelCase keys), its defaults and its validation. The JSON
//! Schema shipped as `config.schema.json` is generated from these types (see the test).

mod cache;
mod generation;
mod llm;
mod logging;
mod policy;
mod profiles;
mod server;
mod servers;
mod traces;
mod upstream;

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use cache::{CacheConfig, CacheType};
pub use generation::{
    AppsSdkMode, GenerationConfig, RefinementScope, RefinementsConfig, ResultsConfig, Shaping, ToolRefreshConfig, UiConfig, Warm,
};
pub use llm::{LlmConfig, Provider};
pub use logging::{LogDestination, LogFormat, LoggingConfig};
pub use policy::{
    AuditConfig, ByConfig, EffectConfig, KindConfig, OnNewToolConfig, OnToolChangeConfig, PerConfig, PerUnit, PolicyConfig, RuleConfig,
};
pub use profiles::{DiscoveryConfig, ProfileConfig};
pub use server::{HostTransport, LimitsConfig, PersonConfig, ServerConfig};
pub use servers::ServerEntryConfig;
pub use traces::TracingConfig;
pub use upstream::{UpstreamConfig, UpstreamTransport};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// Each person's credentials for servers marked `perPrincipal`.
pub struct PrincipalSecretsConfig {
    /// A JSON file `{"alice": {"GITHUB_TOKEN": "..."}}` keyed by principal (a token's label, a
    /// JWT's subject), readable by this service's user only (0600); read again on SIGHUP and
    /// when it changes (`--principal-secrets`).
    pub file: Option<std::path::PathBuf>,
    /// The most per-person processes and connections at once, over every server.
    pub max_processes: usize,
    /// A person's process or connection unused this long is stopped (seconds).
    pub idle_secs: u64,
}

impl Default for PrincipalSecretsConfig {
    fn default() -> Self {
        PrincipalSecretsConfig { file: None, max_processes: 64, idle_secs: 600 }
    }
}

/// A configuration error: the field and what to do about it, and the file the field is in when
/// it is not the config file (a server's entry in the servers file). Exits with status 2.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid configuration: {}{field}: {message}", file.as_ref().map(|f| format!("{}: ", f.display())).unwrap_or_default())]
pub struct ConfigError {
    pub field: String,
    pub message: String,
    pub file: Option<std::path::PathBuf>,
}

impl ConfigError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError { field: field.into(), message: message.into(), file: None }
    }

    /// The field is one of `file`'s (not the config file's).
    pub fn in_file(mut self, file: &std::path::Path) -> Self {
        self.file = Some(file.to_path_buf());
        self
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
/// mcp-gen-ui configuration. Command-line flags override environment variables, which
/// override this file, which overrides the defaults.
pub struct Config {
    #[serde(default)]
    pub upstream: UpstreamConfig,
    #[serde(default)]
    pub server: ServerConfig,
    #[serde(default)]
    pub llm: LlmConfig,
    #[serde(default)]
    pub cache: CacheConfig,
    #[serde(default)]
    pub generation: GenerationConfig,
    #[serde(default)]
    pub logging: LoggingConfig,
    #[serde(default)]
    pub tracing: TracingConfig,
    #[serde(default)]
    pub tool_refresh: ToolRefreshConfig,
    #[serde(default)]
    pub limits: LimitsConfig,
    #[serde(default)]
    pub results: ResultsConfig,
    #[serde(default)]
    pub ui: UiConfig,
    #[serde(default)]
    pub refinements: RefinementsConfig,
    /// Who may see and call what (rules with CEL conditions); read again on SIGHUP and when
    /// this file changes.
    #[serde(default)]
    pub policy: PolicyConfig,
    /// The audit trail; read again with `policy`.
    #[serde(default)]
    pub audit: AuditConfig,
    /// Named views of the servers, each at `/mcp/<name>`; read again with `policy`.
    #[serde(default)]
    pub profiles: std::collections::BTreeMap<String, ProfileConfig>,
    /// Each person's credentials for the servers marked `perPrincipal`.
    #[serde(default)]
    pub principal_secrets: PrincipalSecretsConfig,
    /// Several upstream servers behind one endpoint, by name (instead of `upstream`). Each is a
    /// Claude Desktop or VS Code entry as it is, plus fields of mcp-gen-ui's own.
    #[schemars(with = "Option<std::collections::BTreeMap<String, ServerEntryConfig>>")]
    pub servers: Option<serde_json::Map<String, serde_json::Value>>,
    /// A Claude Desktop (`mcpServers`) or VS Code (`servers`) file of servers to run behind one
    /// endpoint, read again on SIGHUP and when it changes (instead of `upstream`).
    pub servers_file: Option<std::path::PathBuf>,
    /// Every warning about the configuration stops the start (exit 2) instead of being logged:
    /// a key that means nothing, a rule, profile or server glob that matches no server or no
    /// tool (a deny that matches nothing). The tools are known once each server has listed
    /// them, so the start waits up to 30 s for that before it serves. `check --strict` is the
    /// same for `check`.
    #[serde(default)]
    pub check_strict: bool,
}

/// Parses a config file; errors name the field by its JSON path.
pub fn parse(text: &str) -> Result<Config, ConfigError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let field = if path == "." { "(file)".to_string() } else { path };
        let text = inner.to_string();
        let hint = if text.starts_with("unknown field") {
            "; remove it or fix its spelling (`mcp-gen-ui --print-config-schema` lists every key)"
        } else if inner.is_syntax() || inner.is_eof() {
            "; the file must be valid JSON"
        } else {
            ""
        };
        // serde quotes a string given where another type belongs: a token, a header, a key.
        let said = crate::config::nearest::unknown_field(&crate::config::redact::serde_message(&text));
        ConfigError::new(field, format!("{said}{hint}"))
    })
}

pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::new("--config", format!("cannot read {}: {e}", path.display())))?;
    parse(&text)
}

pub fn schema_json() -> String {
    let schema = schemars::schema_for!(Config);
    serde_json::to_string_pretty(&schema).expect("schema serializes") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_schema_matches_the_code() {
        let shipped = include_str!("../../../config.schema.json");
        assert_eq!(shipped, schema_json(), "config.schema.json is stale: run `cargo run -- --print-config-schema > config.schema.json`");
    }

    #[test]
    fn unknown_keys_are_named() {
        let e = parse(r#"{"upstream": {"comand": "x"}}"#).unwrap_err();
        assert_eq!(e.field, "upstream.comand");
        assert!(e.message.contains("spelling") && e.message.contains("did you mean `command`?"), "{e}");
    }

    #[test]
    fn wrong_types_are_named() {
        let e = parse(r#"{"generation": {"timeoutMs": "soon"}}"#).unwrap_err();
        assert_eq!(e.field, "generation.timeoutMs");
        let e = parse(r#"{"llm": {"provider": "gpt"}}"#).unwrap_err();
        assert_eq!(e.field, "llm.provider");
        assert!(e.message.contains("anthropic"), "lists the valid values: {e}");
    }

    #[test]
    fn defaults_fill_in() {
        let c = parse(r#"{"upstream": {"command": "node", "args": ["a.js"]}}"#).unwrap();
        assert_eq!(c.generation.timeout_ms, 15_000);
        assert_eq!(c.server.listen, "127.0.0.1:8080");
        assert_eq!(c.cache.max_total_size_bytes, 52_428_800);
    }

    #[test]
    fn syntax_errors_say_json() {
        let e = parse("{").unwrap_err();
        assert!(e.message.contains("valid JSON"), "{e}");
    }
}
