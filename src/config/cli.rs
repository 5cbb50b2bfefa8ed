//! Command line. Flags override environment variables (`MCP_GEN_UI_*`), which override the
//! config file, which overrides defaults. `settings::resolve` applies that order.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum UpstreamTransportArg {
    StreamableHttp,
    Sse,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum HostTransportArg {
    Http,
    Stdio,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ProviderArg {
    Anthropic,
    Openai,
    Ollama,
    Offline,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum LogFormatArg {
    Text,
    Json,
}

#[derive(Debug, Parser, Default)]
#[command(name = "mcp-gen-ui", version, about = "Gives every plain MCP tool server an interactive MCP Apps UI.", long_about = None)]
pub struct Args {
    /// JSON config file (see --print-config-schema).
    #[arg(long, env = "MCP_GEN_UI_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// stdio upstream: the command and its arguments, shell-style quoted.
    #[arg(long, env = "MCP_GEN_UI_UPSTREAM", value_name = "CMD ARGS...")]
    pub upstream: Option<String>,

    /// Remote upstream URL (Streamable HTTP endpoint, or the /sse URL with --upstream-transport sse).
    #[arg(long, env = "MCP_GEN_UI_UPSTREAM_URL", value_name = "URL")]
    pub upstream_url: Option<String>,

    /// Transport of a remote upstream.
    #[arg(long, env = "MCP_GEN_UI_UPSTREAM_TRANSPORT", value_enum)]
    pub upstream_transport: Option<UpstreamTransportArg>,

    /// "Name: value" header for a remote upstream; repeatable.
    #[arg(long = "upstream-header", value_name = "NAME: VALUE")]
    pub upstream_headers: Vec<String>,

    /// KEY=VALUE environment variable for a stdio upstream, or KEY to pass this service's own
    /// value through; repeatable. Nothing else of this service's environment reaches the upstream
    /// beyond PATH, HOME, USER, LOGNAME, SHELL, TERM, LANG, LC_*, TZ and TMPDIR.
    #[arg(long = "upstream-env", value_name = "KEY[=VALUE]")]
    pub upstream_env: Vec<String>,

    /// How long a request waits for the upstream's answer (each progress notification restarts
    /// the wait) [default: 120000].
    #[arg(long, env = "MCP_GEN_UI_UPSTREAM_TIMEOUT_MS", value_name = "MS")]
    pub upstream_timeout_ms: Option<u64>,

    /// Several servers behind one endpoint: a Claude Desktop (mcpServers) or VS Code (servers)
    /// file, used as it is; read again on SIGHUP and when it changes.
    #[arg(long, env = "MCP_GEN_UI_SERVERS_FILE", value_name = "FILE")]
    pub servers_file: Option<PathBuf>,

    /// How hosts connect: http (Streamable HTTP /mcp and legacy SSE /sse) or stdio.
    #[arg(long, env = "MCP_GEN_UI_TRANSPORT", value_enum)]
    pub transport: Option<HostTransportArg>,

    /// Each person's credentials for servers marked perPrincipal: a JSON file
    /// {"alice": {"GITHUB_TOKEN": "..."}} readable by this user only (0600).
    #[arg(long, env = "MCP_GEN_UI_PRINCIPAL_SECRETS", value_name = "FILE")]
    pub principal_secrets: Option<PathBuf>,

    /// With --transport stdio: serve the profile NAME of the config file's `profiles` (over
    /// HTTP each profile is at /mcp/NAME).
    #[arg(long, env = "MCP_GEN_UI_PROFILE", value_name = "NAME")]
    pub profile: Option<String>,

    /// ADDR:PORT for the HTTP transport [default: 127.0.0.1:8080].
    #[arg(long, env = "MCP_GEN_UI_LISTEN", value_name = "ADDR:PORT")]
    pub listen: Option<String>,

    /// HTTP worker threads [default: half the CPUs, at least one].
    #[arg(long, env = "MCP_GEN_UI_WORKERS", value_name = "N")]
    pub workers: Option<usize>,

    /// Origin allowed besides localhost ones (e.g. https://app.example.com); repeatable.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,

    /// Host header value allowed besides localhost ones (e.g. mcp.internal:8080); repeatable.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,

    /// Address or CIDR range of a reverse proxy whose Forwarded / X-Forwarded-* headers are
    /// believed (e.g. 172.16.0.0/12); repeatable. From anyone else they are ignored.
    #[arg(long = "trusted-proxy", value_name = "CIDR")]
    pub trusted_proxies: Vec<String>,

    /// Bearer token that hosts must send (Authorization: Bearer TOKEN) on /mcp, /sse, /messages
    /// and /metrics; repeatable. MCP_GEN_UI_AUTH_TOKEN adds one more.
    #[arg(long = "auth-token", value_name = "TOKEN")]
    pub auth_tokens: Vec<String>,

    /// No authentication, even when listening on a non-loopback address (where a token is
    /// otherwise generated at start).
    #[arg(long)]
    pub no_auth: bool,

    /// Serve /metrics and /healthz also on this ADDR:PORT, without authentication (for
    /// Prometheus on a private network).
    #[arg(long, env = "MCP_GEN_UI_METRICS_LISTEN", value_name = "ADDR:PORT")]
    pub metrics_listen: Option<String>,

    /// OAuth: accept access tokens (JWTs) issued by this authorization server (its issuer URL).
    #[arg(long, env = "MCP_GEN_UI_OAUTH_ISSUER", value_name = "URL")]
    pub oauth_issuer: Option<String>,

    /// OAuth: the audience (`aud`) tokens must be issued for.
    #[arg(long, env = "MCP_GEN_UI_OAUTH_AUDIENCE", value_name = "AUDIENCE")]
    pub oauth_audience: Option<String>,

    /// OAuth: the authorization server's JWKS URL (its signing keys).
    #[arg(long, env = "MCP_GEN_UI_OAUTH_JWKS_URL", value_name = "URL")]
    pub oauth_jwks_url: Option<String>,

    /// LLM provider; unset: the one whose API key is in the environment, else offline.
    #[arg(long, env = "MCP_GEN_UI_PROVIDER", value_enum)]
    pub provider: Option<ProviderArg>,

    /// Extra instructions for every generated page (house style, language, brand colour).
    #[arg(long = "prompt", value_name = "TEXT", conflicts_with = "prompt_file")]
    pub prompt: Option<String>,

    /// Read the extra instructions for every generated page from FILE.
    #[arg(long = "prompt-file", value_name = "FILE")]
    pub prompt_file: Option<std::path::PathBuf>,

    /// LLM model name.
    #[arg(long, env = "MCP_GEN_UI_MODEL")]
    pub model: Option<String>,

    /// LLM API base URL.
    #[arg(long, env = "MCP_GEN_UI_LLM_BASE_URL", value_name = "URL")]
    pub llm_base_url: Option<String>,

    /// Persist generated UIs in this folder.
    #[arg(long, env = "MCP_GEN_UI_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,

    /// Share pages, refinements and generations with other replicas through this Redis
    /// (redis://[user:password@]host:port[/db]); sets cache.type redis.
    #[arg(long, env = "MCP_GEN_UI_REDIS_URL", value_name = "URL")]
    pub redis_url: Option<String>,

    /// Do not cache UIs.
    #[arg(long)]
    pub no_cache: bool,

    /// Debug logging.
    #[arg(long)]
    pub debug: bool,

    /// Log format.
    #[arg(long, env = "MCP_GEN_UI_LOG_FORMAT", value_enum)]
    pub log_format: Option<LogFormatArg>,

    /// Log level (error, warn, info, debug, trace) or a tracing filter directive.
    #[arg(long, env = "MCP_GEN_UI_LOG_LEVEL", value_name = "LEVEL")]
    pub log_level: Option<String>,

    /// Also write every page made to DIR/<tool>.html.
    #[arg(long, env = "MCP_GEN_UI_EXPORT_DIR", value_name = "DIR")]
    pub export_dir: Option<PathBuf>,

    /// Wrap the bundled demo upstream (weather tools); no other upstream flag.
    #[arg(long)]
    pub demo: bool,

    /// Print the config file's JSON Schema and exit.
    #[arg(long)]
    pub print_config_schema: bool,

    /// Print the metrics reference (every family, its type, labels and when it appears, as
    /// Markdown) and exit.
    #[arg(long)]
    pub print_metrics_reference: bool,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the bundled demo MCP server on stdio (what --demo wraps).
    DemoUpstream,
    /// Exit 0 if URL answers 2xx (for container health checks).
    Healthcheck {
        #[arg(default_value = "http://127.0.0.1:8080/healthz")]
        url: String,
    },
    /// Validate the configuration without starting anything; print what it would serve; exit 2
    /// naming the file and field when it is not valid (the other flags apply as for a run).
    Check {
        /// JSON config file (as --config).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// The servers file (as --servers-file).
        #[arg(long, value_name = "FILE")]
        servers_file: Option<PathBuf>,
        /// The principal secrets file (as --principal-secrets).
        #[arg(long, value_name = "FILE")]
        principal_secrets: Option<PathBuf>,
        /// Every warning is an error (exit 2), as `checkStrict` makes it for a start.
        #[arg(long)]
        strict: bool,
        /// Also start every server as a run would, check every configured tool name against
        /// what they serve, print their tools and what each configured person may call, and
        /// stop them (at most 30 s for their lists).
        #[arg(long)]
        connect: bool,
    },
    /// Shows the tools a running service holds because they changed or are new (with what
    /// changed), or accepts one (`--accept SERVER/TOOL`). Asks the service at URL as an admin,
    /// with the token in MCP_GEN_UI_TOKEN.
    Pins {
        /// The running service's MCP endpoint.
        #[arg(long, default_value = "http://127.0.0.1:8080/mcp")]
        url: String,
        /// Accept this held tool (its server and its own name, as `_ui_tool_changes` shows them).
        #[arg(long, value_name = "SERVER/TOOL")]
        accept: Option<String>,
        /// The fingerprint shown (required with --accept), so that a later change is not
        /// accepted unseen.
        #[arg(long, requires = "accept")]
        fingerprint: Option<String>,
    },
    /// Make every tool's UI, write them to DIR/<tool>.html (or --export-dir), and exit.
    Export {
        /// Where to write the pages.
        dir: Option<PathBuf>,
    },
}
