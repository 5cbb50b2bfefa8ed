//! The configuration file (JSON, camelCase keys), its defaults and its validation. The JSON
//! Schema shipped as `config.schema.json` is generated from these types (see the test).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A configuration error: the field and what to do about it. Exits with status 2.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid configuration: {}: {}", self.field, self.message)
    }
}

impl ConfigError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError { field: field.into(), message: message.into() }
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
    pub tool_refresh: ToolRefreshConfig,
    #[serde(default)]
    pub limits: LimitsConfig,
    #[serde(default)]
    pub results: ResultsConfig,
    #[serde(default)]
    pub ui: UiConfig,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// How the pages present themselves to hosts (MCP Apps `_meta.ui` of the `ui://` resources).
pub struct UiConfig {
    /// A sandbox domain the host requires for this server's pages (some hosts derive one and
    /// render nothing when it is wrong: set it only when the host asks for it).
    pub domain: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Shaping {
    /// Results pass through unchanged.
    #[default]
    None,
    /// `{results, meta_data, returned_file_names, returned_file_contents}` results: the model
    /// gets results, metadata and file names; the page gets the files (hosts that render MCP
    /// Apps only; others get the upstream's answer unchanged).
    Artifacts,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// What this service does with tool results (opt-in; by default they pass through untouched).
pub struct ResultsConfig {
    pub shaping: Shaping,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// What one host, or all hosts together, may use. Every refusal is counted in
/// `mcp_gen_ui_refusals_total{reason}`.
pub struct LimitsConfig {
    /// Open sessions across /mcp and /sse; beyond it a new session gets HTTP 503 with
    /// Retry-After (existing sessions are untouched).
    pub max_sessions: usize,
    /// Requests one session may have in flight; the next gets a JSON-RPC error at once.
    pub max_in_flight_per_session: usize,
    /// `_ui_refine` and `_ui_regenerate` calls (each one asks the LLM) per session per minute;
    /// beyond it the call answers an error that says when to retry. 0: no limit.
    pub llm_calls_per_minute: u32,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig { max_sessions: 1000, max_in_flight_per_session: 64, llm_calls_per_minute: 10 }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum UpstreamTransport {
    Stdio,
    Sse,
    StreamableHttp,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
/// The MCP server to wrap.
pub struct UpstreamConfig {
    /// stdio (spawn `command`), sse (legacy HTTP+SSE at `url`) or streamable-http (at `url`).
    /// Defaults to stdio when `command` is set, else streamable-http.
    pub transport: Option<UpstreamTransport>,
    /// stdio: the program to run.
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// stdio: extra environment variables.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// stdio: working directory.
    pub cwd: Option<PathBuf>,
    /// sse / streamable-http: the endpoint URL.
    pub url: Option<String>,
    /// sse / streamable-http: extra request headers (for example Authorization).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// How long a request may wait for the upstream's answer; each progress notification of
    /// that request starts the wait again. At expiry the host gets an error and the upstream a
    /// cancellation.
    #[serde(default = "default_request_timeout_ms")]
    pub request_timeout_ms: u64,
    /// A message from the upstream larger than this fails its request instead of growing memory.
    #[serde(default = "default_max_message_bytes")]
    pub max_message_bytes: u64,
}

impl Default for UpstreamConfig {
    fn default() -> Self {
        UpstreamConfig {
            transport: None,
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            request_timeout_ms: default_request_timeout_ms(),
            max_message_bytes: default_max_message_bytes(),
        }
    }
}

fn default_request_timeout_ms() -> u64 {
    120_000
}

fn default_max_message_bytes() -> u64 {
    16 * 1024 * 1024
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum HostTransport {
    #[default]
    Http,
    Stdio,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// The host side: how hosts reach this service.
pub struct ServerConfig {
    /// http (Streamable HTTP at /mcp and legacy SSE at /sse on one port) or stdio.
    pub transport: HostTransport,
    /// ADDR:PORT to listen on (http).
    pub listen: String,
    /// Origins allowed in the Origin header, besides localhost ones.
    pub allowed_origins: Vec<String>,
    /// Hosts allowed in the Host header, besides localhost ones.
    pub allowed_hosts: Vec<String>,
    /// Largest request body accepted; larger ones get 413.
    pub max_body_bytes: usize,
    /// A Streamable HTTP session idle this long, with no stream open, is closed.
    pub session_idle_timeout_secs: u64,
    /// Seconds between keep-alive comments on SSE streams. They keep idle streams open through
    /// proxies and reveal hosts that went away (a closed legacy SSE session is reaped after
    /// about two intervals).
    pub sse_keepalive_secs: u64,
    /// HTTP worker threads; host sessions live on the worker that opened them. Unset: one per
    /// CPU.
    pub workers: Option<usize>,
    /// ADDR:PORT of a second listener that serves only /metrics and /healthz, without
    /// authentication (for Prometheus on a private network). Unset: /metrics is served on the
    /// main port and takes the same tokens as /mcp.
    pub metrics_listen: Option<String>,
    /// Who may use /mcp, /sse, /messages and /metrics.
    pub auth: AuthConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            transport: HostTransport::Http,
            listen: "127.0.0.1:8080".into(),
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_body_bytes: 4 * 1024 * 1024,
            session_idle_timeout_secs: 1800,
            sse_keepalive_secs: 15,
            workers: None,
            metrics_listen: None,
            auth: AuthConfig::default(),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// Authentication on the HTTP transport: static bearer tokens, OAuth 2.1 access tokens (JWTs),
/// or both (either is accepted). With none of them, a loopback listener needs no token and any
/// other listener gets a token generated at start (printed once), unless `disabled`.
pub struct AuthConfig {
    /// No authentication at all, even on a non-loopback address. Cannot be combined with
    /// tokens or OAuth.
    pub disabled: bool,
    /// Accepted bearer tokens (prefer `tokensFile` or MCP_GEN_UI_AUTH_TOKEN: they keep tokens
    /// out of the config file).
    pub tokens: Vec<String>,
    /// A file with one accepted token per line (`#` comments and blank lines ignored), read
    /// again on SIGHUP.
    pub tokens_file: Option<PathBuf>,
    /// Accept access tokens (JWTs) from an OAuth 2.1 authorization server.
    pub oauth: Option<OAuthConfig>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// This service as an OAuth 2.1 resource server: bearer JWTs signed with RS256, ES256 or
/// EdDSA by a key of `jwksUrl`, checked for `iss`, `aud`, `exp`, `nbf` and scopes.
pub struct OAuthConfig {
    /// The authorization server's issuer identifier: a token's `iss` must equal it; named in
    /// /.well-known/oauth-protected-resource.
    pub issuer: Option<String>,
    /// A token's `aud` must be or include it (usually this server's /mcp URL).
    pub audience: Option<String>,
    /// Where the authorization server publishes its signing keys (`jwks_uri`). Fetched once,
    /// again when a token names an unknown key (at most once a minute).
    pub jwks_url: Option<String>,
    /// Every one of these must be in a token's `scope` (space-separated) or `scp` (array).
    pub required_scopes: Vec<String>,
    /// This server's resource identifier in the protected-resource metadata (RFC 9728).
    /// Default: the /mcp URL the request came to.
    pub resource: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    Anthropic,
    Openai,
    Ollama,
    Offline,
}

impl Provider {
    pub fn name(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::Openai => "openai",
            Provider::Ollama => "ollama",
            Provider::Offline => "offline",
        }
    }

    pub fn key_var(self) -> Option<&'static str> {
        match self {
            Provider::Anthropic => Some("ANTHROPIC_API_KEY"),
            Provider::Openai => Some("OPENAI_API_KEY"),
            Provider::Ollama => Some("OLLAMA_API_KEY"),
            Provider::Offline => None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// The LLM that writes UIs.
pub struct LlmConfig {
    /// anthropic, openai, ollama or offline. Unset: the provider whose API key is in the
    /// environment, else offline.
    pub provider: Option<Provider>,
    pub model: Option<String>,
    /// Base URL of the provider's API (any OpenAI-compatible server for openai).
    pub base_url: Option<String>,
    /// Prefer the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY, OLLAMA_API_KEY): a key here
    /// works but logs a warning.
    pub api_key: Option<String>,
    pub temperature: f64,
    pub max_tokens: u32,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig { provider: None, model: None, base_url: None, api_key: None, temperature: 0.2, max_tokens: 16000 }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum CacheType {
    #[default]
    Memory,
    Filesystem,
    /// Shared by every replica through Redis at `redisUrl` (memory stays in front).
    Redis,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// The UI cache.
pub struct CacheConfig {
    pub enabled: bool,
    #[serde(rename = "type")]
    pub kind: CacheType,
    /// Folder for `filesystem`.
    pub dir: Option<PathBuf>,
    pub max_entries: u64,
    pub max_entry_size_bytes: u64,
    pub max_total_size_bytes: u64,
    pub ttl_seconds: Option<u64>,
    /// A page served because of a transient failure (timeout, rate limit, overload, server or
    /// network error) is kept at most this long; the first read after that asks the LLM again.
    pub fallback_ttl_secs: u64,
    /// For `redis`: redis://[user:password@]host:port[/db]. Pages, refinement histories,
    /// classifications and generation leases are shared by every replica using it.
    pub redis_url: Option<String>,
    /// For `redis`: every key and the events channel start with this, so that several
    /// deployments can share one Redis.
    pub redis_key_prefix: String,
    /// For `redis`: the longest any Redis operation may take; past it the replica serves from
    /// its own memory (or the template) and generates on its own.
    pub redis_timeout_ms: u64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            enabled: true,
            kind: CacheType::Memory,
            dir: None,
            max_entries: 100,
            max_entry_size_bytes: 512_000,
            max_total_size_bytes: 52_428_800,
            ttl_seconds: None,
            fallback_ttl_secs: 600,
            redis_url: None,
            redis_key_prefix: "mcp-gen-ui:".into(),
            redis_timeout_ms: 500,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// UI generation.
pub struct GenerationConfig {
    /// Wall-clock budget for one generation, all retries included.
    pub timeout_ms: u64,
    pub max_retries: u32,
    pub max_concurrent_generations: usize,
    /// When set, only these tools get a UI; every tool is still proxied.
    pub enabled_tools: Option<Vec<String>>,
    /// light or dark: the theme hint given to the LLM.
    pub theme: Option<String>,
    /// A folder with system.hbs, generate.hbs and classify.hbs to use instead of the built-in
    /// prompts (changing them makes new cache keys).
    pub prompts_dir: Option<PathBuf>,
    /// Extra instructions for every generated page (a house style, a language, a brand
    /// colour). They are the operator's, so they go outside the tool-data fence, and into the
    /// cache key.
    pub style_guide: Option<String>,
    /// Record the shape (keys and JSON types, never values) of the results hosts get from each
    /// tool, give it to the next generation prompt, and remake a page made before the shape was
    /// known once, in the background.
    pub learn_result_shape: bool,
}

impl Default for GenerationConfig {
    fn default() -> Self {
        GenerationConfig {
            timeout_ms: 15_000,
            max_retries: 2,
            max_concurrent_generations: 2,
            enabled_tools: None,
            theme: None,
            prompts_dir: None,
            style_guide: None,
            learn_result_shape: false,
        }
    }
}

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
    pub format: LogFormat,
    /// stderr or stdout (ignored when `file` is set).
    pub destination: LogDestination,
    /// Append logs to this file.
    pub file: Option<PathBuf>,
    /// With --debug, prompts, raw answers and pages are written here
    /// (default: mcp-gen-ui-debug in the system's temporary folder).
    pub debug_dir: Option<PathBuf>,
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

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// Periodic re-listing of the upstream's tools.
pub struct ToolRefreshConfig {
    pub enabled: bool,
    pub interval_ms: u64,
}

impl Default for ToolRefreshConfig {
    fn default() -> Self {
        ToolRefreshConfig { enabled: false, interval_ms: 300_000 }
    }
}

/// Parses a config file; errors name the field by its JSON path.
pub fn parse(text: &str) -> Result<Config, ConfigError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let field = if path == "." { "(file)".to_string() } else { path };
        let hint = if inner.to_string().contains("unknown field") {
            "; remove it or fix its spelling (`mcp-gen-ui --print-config-schema` lists every key)"
        } else if inner.is_syntax() || inner.is_eof() {
            "; the file must be valid JSON"
        } else {
            ""
        };
        ConfigError::new(field, format!("{inner}{hint}"))
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
        let shipped = include_str!("../../config.schema.json");
        assert_eq!(shipped, schema_json(), "config.schema.json is stale: run `cargo run -- --print-config-schema > config.schema.json`");
    }

    #[test]
    fn unknown_keys_are_named() {
        let e = parse(r#"{"upstream": {"comand": "x"}}"#).unwrap_err();
        assert_eq!(e.field, "upstream.comand");
        assert!(e.message.contains("spelling"), "{e}");
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
