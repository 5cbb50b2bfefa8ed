//! The label values known up front (each family's series start at zero with them) and the
//! method label, which names only the methods the protocol has.

/// How a wait on another replica's generation ends (label values of `lease_waits`).
pub const LEASE_WAIT_OUTCOMES: &[&str] = &["page", "takeover", "budget", "unavailable"];

/// Why a request was refused (label values of `refusals`).
/// The Redis operations (`redis_store`), as `mcp_gen_ui_redis_errors_total{op}` labels.
pub const REDIS_OPS: &[&str] = &[
    "page_get",
    "page_put",
    "page_delete",
    "refinements",
    "classifications",
    "lease",
    "publish",
    "subscribe",
    "ping",
    "tasks",
    "pins",
    "quota",
];

pub const REFUSAL_REASONS: &[&str] = &[
    "max_sessions",
    "max_in_flight",
    "llm_calls_per_minute",
    "unauthorized",
    "forbidden",
    "connections_per_client",
    "body_timeout",
    "foreign_session",
    "max_sessions_per_principal",
    "audit_unavailable",
    "host_notifications",
    "quota",
];

/// The singleton actors under a supervisor (label values of `actor_restarts`).
pub const SUPERVISED_ACTORS: &[&str] = &["generation_queue", "ui_cache", "refinements", "upstream_connection"];
/// What a server says that can be kept back, and why (label values of `kept_back`).
pub const KEPT_BACK: [(&str, &str); 5] = [
    ("log", "owner_unknown"),
    ("notification", "owner_unknown"),
    ("notification", "no_owner"),
    ("log", "unknown_task"),
    ("notification", "unknown_task"),
];
/// Where messages can be dropped (label values of `dropped_messages`).
pub const DROP_REASONS: &[&str] = &["host_stream_full", "upstream_queue_full", "late_progress"];

/// Every reason a page can be a fallback: provider error codes, rejections, offline, minimal.
pub const FALLBACK_REASONS: &[&str] = &[
    "offline",
    "minimal",
    "TIMEOUT",
    "RATE_LIMIT",
    "INVALID_REQUEST",
    "SERVER_ERROR",
    "NETWORK_ERROR",
    "CONTENT_FILTERED",
    "ABORTED",
    "empty",
    "not_html",
    "truncated",
    "too_large",
    "external_script",
    "external_stylesheet",
    "inline_handler",
    "prompt_injection",
    "no_app_connection",
    "unresolved_import",
    "internal",
];

/// MCP methods get their own label value; anything else is "other" so labels stay bounded.
pub fn method_label(method: &str) -> &'static str {
    KNOWN_METHODS.iter().find(|m| **m == method).copied().unwrap_or("other")
}

pub(super) const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "server/discover",
];
