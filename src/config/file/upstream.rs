//! The `upstream` section: the server to wrap (a command, or a URL), its environment and limits.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// No longer used, and a warning when set: whose a server's message is was once guessed
    /// from the calls that ended within this window; it is now known by construction (the
    /// request, task or subscription it names, or whose the connection is), never from the
    /// clock. Accepted so that configurations written for earlier versions still start.
    #[serde(default)]
    pub caller_window_ms: Option<u64>,
    /// A message from the upstream larger than this fails its request instead of growing memory.
    #[serde(default = "default_max_message_bytes")]
    pub max_message_bytes: u64,
    /// The most tools an upstream may list; one that lists more is refused (not truncated),
    /// and `/readyz` says why.
    #[serde(default = "default_max_tools")]
    pub max_tools: usize,
    /// The most bytes of JSON an upstream's tool list (all pages) may take.
    #[serde(default = "default_max_tool_list_bytes")]
    pub max_tool_list_bytes: usize,
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
            caller_window_ms: None,
            max_message_bytes: default_max_message_bytes(),
            max_tools: default_max_tools(),
            max_tool_list_bytes: default_max_tool_list_bytes(),
        }
    }
}

fn default_request_timeout_ms() -> u64 {
    120_000
}

fn default_max_message_bytes() -> u64 {
    16 * 1024 * 1024
}

fn default_max_tools() -> usize {
    10_000
}

fn default_max_tool_list_bytes() -> usize {
    16 * 1024 * 1024
}
