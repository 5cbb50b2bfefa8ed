//! The `servers` section, and the servers file (`--servers-file`): several upstream servers
//! behind one endpoint. An entry is what a Claude Desktop `mcpServers` entry or a VS Code
//! `mcp.json` `servers` entry already says (`command`, `args`, `env`, or `type` and `url`,
//! `headers`), plus fields of this service's own. Keys of other tools are kept aside: the
//! settings honour the ones that mean something here and warn once about the rest.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
/// One upstream server, named by its key. Claude Desktop and VS Code entries work as they are.
pub struct ServerEntryConfig {
    /// stdio, sse, http (Streamable HTTP; also streamable-http, streamableHttp). Defaults to
    /// stdio with `command`, else http.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// stdio: the program to run.
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// stdio: environment variables for it. `${env:NAME}` and `${NAME}` take this service's own.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// stdio: a file of KEY=VALUE lines added to `env` (VS Code's `envFile`).
    pub env_file: Option<PathBuf>,
    /// stdio: this service's own variables passed through by name.
    #[serde(default)]
    pub env_passthrough: Vec<String>,
    /// stdio: working directory.
    pub cwd: Option<PathBuf>,
    /// sse / http: the endpoint URL.
    pub url: Option<String>,
    /// sse / http: request headers (for example Authorization).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// How long a request may wait for this server's answer [default: upstream.requestTimeoutMs].
    pub request_timeout_ms: Option<u64>,
    /// A message from this server larger than this fails its request [default: upstream.maxMessageBytes].
    pub max_message_bytes: Option<u64>,
    /// Which tools are shown and callable (globs; a hidden tool cannot be called).
    #[serde(default)]
    pub tools: ToolFilterConfig,
    /// A tool's name as shown, before the server's prefix: `{"write_file": "save"}`.
    #[serde(default)]
    pub rename: BTreeMap<String, String>,
    /// A tool's description as shown.
    #[serde(default)]
    pub descriptions: BTreeMap<String, String>,
    /// The tools that get a generated page (globs) [default: all shown tools].
    pub enabled_tools: Option<Vec<String>>,
    /// `/readyz` is 200 only when every required server is ready [default: true].
    pub required: Option<bool>,
    /// Left out of the running set (kept in the file).
    pub disabled: Option<bool>,
    /// Each person's calls reach this server as that person: one process (stdio) or connection
    /// per principal, with `${principal:NAME}` in `env` and `headers` taken from the principal
    /// secrets file, or a token exchanged for theirs (`tokenExchange`).
    pub per_principal: Option<bool>,
    /// With `perPrincipal`: the most people with a connection of their own at once [default: 16].
    pub per_principal_max: Option<usize>,
    /// With `perPrincipal` and a remote server: each person's requests carry a token obtained
    /// by RFC 8693 token exchange from the OAuth access token they signed in with.
    pub token_exchange: Option<TokenExchangeConfig>,
    /// Other tools' keys (`alwaysAllow`, `autoApprove`, `timeout`, ...), honoured where they
    /// mean something here.
    #[serde(flatten)]
    #[schemars(skip)]
    pub other: BTreeMap<String, Value>,
}

impl ServerEntryConfig {
    /// The keys an entry has for this service (as the schema names them): a key of another
    /// tool's that is near one of these is probably a slip (`tols` for `tools`).
    pub fn keys() -> Vec<String> {
        let schema = schemars::schema_for!(ServerEntryConfig);
        schema.get("properties").and_then(serde_json::Value::as_object).map(|p| p.keys().cloned().collect()).unwrap_or_default()
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolFilterConfig {
    /// Globs of the tools to show (`*` any run, `?` one character) [default: all].
    #[serde(default)]
    pub allow: Vec<String>,
    /// Globs of the tools to hide; wins over `allow`.
    #[serde(default)]
    pub deny: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
/// An RFC 8693 token exchange at the authorization server.
pub struct TokenExchangeConfig {
    /// The authorization server's token endpoint.
    pub token_endpoint: String,
    /// This service's client at the authorization server (sent with HTTP Basic).
    pub client_id: String,
    /// Its secret; `${env:NAME}` keeps it out of the file.
    pub client_secret: String,
    /// The `audience` asked for (the server's identifier at the authorization server).
    pub audience: Option<String>,
    /// The `resource` asked for (the server's URL, RFC 8707).
    pub resource: Option<String>,
    /// The scopes asked for.
    #[serde(default)]
    pub scopes: Vec<String>,
}
