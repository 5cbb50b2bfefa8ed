//! The `server` and `limits` sections: how hosts connect, who may, and what each may hold.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// HTTP worker threads; host sessions live on the worker that opened them, and each stdio
    /// upstream's reader on one of them. Unset: half the CPUs, at least one (the upstream
    /// servers run beside the service and need the other half).
    pub workers: Option<usize>,
    /// ADDR:PORT of a second listener that serves only /metrics and /healthz, without
    /// authentication (for Prometheus on a private network). Unset: /metrics is served on the
    /// main port, for an admin's token or a `server.auth.metricsTokens` one when several people sign
    /// in (else the one person's).
    pub metrics_listen: Option<String>,
    /// Who may use /mcp, /sse, /messages and /metrics.
    pub auth: AuthConfig,
    /// Addresses (or CIDR ranges) of reverse proxies in front of this service. Only requests
    /// from them may say, in `Forwarded` or `X-Forwarded-Host`/`-Proto`, under which name and
    /// scheme the client reached the service (the preview's sandbox origin, the OAuth
    /// resource URL). From anyone else those headers are ignored.
    pub trusted_proxies: Vec<String>,
    /// ADDR:PORT of a listener that serves only the preview's sandbox, so that on a host name
    /// other than localhost the sandbox has an origin of its own (another port). Unset: the
    /// preview is served on loopback names only (it uses 127.0.0.1 vs localhost there).
    pub sandbox_listen: Option<String>,
    /// The origin browsers reach `sandboxListen` under when it is behind a proxy
    /// (`https://sandbox.example.com`). Unset: the preview's host name with that port.
    pub sandbox_origin: Option<String>,
    /// How long reading a request body may take, from its first byte; a slower body is cut
    /// with 408.
    pub body_timeout_secs: u64,
    /// Requests (streams included) one client address may have open at once; more get 429.
    pub max_connections_per_client: usize,
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
            trusted_proxies: Vec::new(),
            sandbox_listen: None,
            sandbox_origin: None,
            body_timeout_secs: 15,
            max_connections_per_client: 256,
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
    /// Tokens that read `/metrics` on the main port and nothing else: a Prometheus scrape's
    /// bearer token (MCP_GEN_UI_METRICS_TOKEN adds one). When more than one person can sign in,
    /// `/metrics`, which names people and their servers, is otherwise for admins only;
    /// `--metrics-listen` serves it without a token on an address of its own.
    pub metrics_tokens: Vec<String>,
    /// Accept access tokens (JWTs) from an OAuth 2.1 authorization server.
    pub oauth: Option<OAuthConfig>,
    /// Principals with the admin right (token labels, as in `alice:TOKEN`, JWT subjects, or
    /// names of `people`): with `refinements.scope: principal`, their refinements shape
    /// everyone's page. A JWT granting the scope `mcp-gen-ui:admin` has it too.
    pub admins: Vec<String>,
    /// People known by more than one credential, by the name rules, secrets, admins and the
    /// audit trail use for them: `{"alice": {"tokens": ["alice-laptop"], "subjects":
    /// ["248289761001"]}}`. Each credential listed is that one person (one set of sessions,
    /// refinements, secrets and per-person connections). Without it a token's label and a
    /// JWT's subject are different people, and a JWT whose subject spells a token's label or a
    /// person's name is refused (the service cannot tell them apart).
    pub people: std::collections::BTreeMap<String, PersonConfig>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// The credentials one person signs in with.
pub struct PersonConfig {
    /// Labels of static tokens (`label:TOKEN` in a flag, the config or the tokens file).
    pub tokens: Vec<String>,
    /// Subjects (`sub`) of OAuth access tokens from `server.auth.oauth.issuer`.
    pub subjects: Vec<String>,
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
    /// Accept an access token without `sub` as the client it names (`client_id`, else `azp`),
    /// named `client:<id>` in rules, secrets and the trail. Off: such a token is refused, so
    /// a client can never stand in for a person whose name it spells.
    pub client_ids_are_people: bool,
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
    /// With authentication on, the sessions one principal (a token's label, a JWT subject) may
    /// have open; beyond it their new session gets HTTP 503. Default: a quarter of
    /// maxSessions (at least 1), so one person cannot take every session.
    pub max_sessions_per_principal: Option<usize>,
    /// `_ui_refine` and `_ui_regenerate` calls (each one asks the LLM) per principal per minute,
    /// all of their sessions and stateless calls together (without auth: everyone together);
    /// beyond it the call answers an error that says when to retry. 0: no limit.
    pub llm_calls_per_minute: u32,
    /// Tools per `tools/list` answer: a longer list comes in pages (`nextCursor`), so that no
    /// answer is built whole for thousands of tools.
    pub tools_per_page: usize,
    /// Tasks the service keeps for one person (a task-augmented call's task, or one it runs for
    /// a host without tasks); their next task makes room from their own oldest (which then
    /// answers as an unknown task), never from anyone else's.
    pub tasks_per_person: usize,
    /// Tasks of one person's that 2026 hosts have watched at once (each holds the server's
    /// `tasks/result` open); the next stops their own oldest watch, whose task stays and is
    /// watched again when its host asks.
    pub task_watches_per_person: usize,
    /// Notifications one person's hosts may send the servers each second, all of their
    /// sessions together (`notifications/cancelled` of their own requests aside); the excess
    /// is refused (not forwarded, not in the audit trail) and counted in
    /// `mcp_gen_ui_refusals_total{reason="host_notifications"}`. 0: no limit.
    pub host_notifications_per_second: u32,
    /// Messages one HTTP request may carry as a JSON-RPC batch; a larger batch is refused
    /// whole with HTTP 400.
    pub max_batch_messages: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_sessions: 1000,
            max_sessions_per_principal: None,
            max_in_flight_per_session: 64,
            llm_calls_per_minute: 10,
            tools_per_page: 1000,
            tasks_per_person: 200,
            task_watches_per_person: 32,
            host_notifications_per_second: 50,
            max_batch_messages: 100,
        }
    }
}
