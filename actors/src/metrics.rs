//! Prometheus metrics. One registry per process, shared by `Arc`; the families are registered
//! once here so that names and label sets live in one place.

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry, TextEncoder,
};

pub const PREFIX: &str = "mcp_gen_ui";

pub struct Metrics {
    registry: Registry,
    /// Host requests by MCP method and outcome (ok, error, cancelled).
    pub requests: IntCounterVec,
    /// Whether the per-server families carry a `server` label: not with one server behind
    /// `--upstream` (its series read as they always have), yes with several.
    per_server: bool,
    /// Upstream round trip by (server and) MCP method.
    upstream_latency: HistogramVec,
    upstream_restarts: IntCounterVec,
    /// 1 while the upstream is initialized and its tools listed.
    upstream_connected: IntGaugeVec,
    /// Open host sessions by transport (stdio, sse, streamable-http).
    pub host_sessions: IntGaugeVec,
    /// ui:// reads by how the page was made (template, generated, ...).
    pub ui_reads: IntCounterVec,
    /// Wall time of a generation (classification, attempts, backoff) by tool and outcome.
    pub generation_duration: HistogramVec,
    pub cache_hits: IntCounter,
    pub cache_misses: IntCounter,
    pub cache_entries: IntGauge,
    pub cache_bytes: IntGauge,
    /// Pages served as a fallback, by reason (offline, minimal, TIMEOUT, RATE_LIMIT, not_html, ...).
    pub fallbacks: IntCounterVec,
    pub llm_requests: IntCounterVec,
    /// LLM requests by the tool whose page they were for: a page made once is one or two
    /// (classification, page), more only after a failure, a rejection or a cut answer.
    pub llm_requests_by_tool: IntCounterVec,
    /// Tokens by provider, model and direction (input, output).
    pub llm_tokens: IntCounterVec,
    pub generations_in_flight: IntGauge,
    pub generations_queued: IntGauge,
    /// Lines or events from the upstream that were not JSON-RPC (skipped; the link kept reading).
    upstream_bad_frames: IntCounterVec,
    /// Upstream requests that ran past `upstream.requestTimeoutMs` (answered with an error, cancelled upstream).
    upstream_timeouts: IntCounterVec,
    /// Singleton actors restarted by their supervisor after they stopped (a contained panic).
    pub actor_restarts: IntCounterVec,
    /// Messages dropped because a bounded queue was full (by queue), or late progress dropped.
    pub dropped_messages: IntCounterVec,
    /// Requests refused by a limit or by authentication, by reason.
    pub refusals: IntCounterVec,
    /// Pages remade in the background because their tool's result shape was learnt.
    pub shape_regenerations: IntCounter,
    /// Redis operations that failed or timed out, by operation (`cache.type: redis`).
    pub redis_errors: IntCounterVec,
    /// 1 while Redis answers and this replica hears the others' changes.
    pub redis_connected: IntGauge,
    /// Reads that found another replica making their page and waited, by how the wait ended
    /// (page, takeover, budget, unavailable).
    pub lease_waits: IntCounterVec,
    /// Generations taken over from a replica whose lease expired (it died or hung).
    pub lease_takeovers: IntCounter,
    /// `generation.warm`: pages made ahead of any read (`done`) of those to make (`total`).
    pub warm_pages: IntGaugeVec,
    /// Finished spans not delivered to the trace collector (queue full, export failed), by why.
    pub trace_spans_dropped: IntCounterVec,
}

/// How a wait on another replica's generation ends (label values of `lease_waits`).
pub const LEASE_WAIT_OUTCOMES: &[&str] = &["page", "takeover", "budget", "unavailable"];

/// Why a request was refused (label values of `refusals`).
/// The Redis operations (`redis_store`), as `mcp_gen_ui_redis_errors_total{op}` labels.
pub const REDIS_OPS: &[&str] =
    &["page_get", "page_put", "page_delete", "refinements", "classifications", "lease", "publish", "subscribe", "ping"];

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
];

/// The singleton actors under a supervisor (label values of `actor_restarts`).
pub const SUPERVISED_ACTORS: &[&str] = &["generation_queue", "ui_cache", "refinements", "upstream_connection"];
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

const KNOWN_METHODS: &[&str] = &[
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

impl Metrics {
    /// One server behind `--upstream`: the per-server families have no `server` label.
    pub fn new() -> Self {
        Self::build(false)
    }

    /// Several servers: the per-server families are labelled by `server`.
    pub fn per_server() -> Self {
        Self::build(true)
    }

    fn server_label<'a>(&self, server: &'a str) -> Vec<&'a str> {
        if self.per_server {
            vec![server]
        } else {
            Vec::new()
        }
    }

    pub fn upstream_restarts(&self, server: &str) -> IntCounter {
        self.upstream_restarts.with_label_values(&self.server_label(server))
    }

    pub fn upstream_connected(&self, server: &str) -> IntGauge {
        self.upstream_connected.with_label_values(&self.server_label(server))
    }

    pub fn upstream_bad_frames(&self, server: &str) -> IntCounter {
        self.upstream_bad_frames.with_label_values(&self.server_label(server))
    }

    pub fn upstream_timeouts(&self, server: &str) -> IntCounter {
        self.upstream_timeouts.with_label_values(&self.server_label(server))
    }

    pub fn upstream_latency(&self, server: &str, method: &str) -> Histogram {
        let mut labels = self.server_label(server);
        labels.push(method);
        self.upstream_latency.with_label_values(&labels)
    }

    /// Creates a server's series at zero (a server that never connects still shows as 0).
    pub fn preinit_server(&self, server: &str) {
        self.upstream_restarts(server);
        self.upstream_connected(server).set(0);
        self.upstream_bad_frames(server);
        self.upstream_timeouts(server);
    }

    /// Drops a server's series (it was removed from the servers file).
    pub fn forget_server(&self, server: &str) {
        if self.per_server {
            let _ = self.upstream_restarts.remove_label_values(&[server]);
            let _ = self.upstream_connected.remove_label_values(&[server]);
            let _ = self.upstream_bad_frames.remove_label_values(&[server]);
            let _ = self.upstream_timeouts.remove_label_values(&[server]);
        }
    }

    fn build(per_server: bool) -> Self {
        let server: &[&str] = if per_server { &["server"] } else { &[] };
        let server_method: &[&str] = if per_server { &["server", "method"] } else { &["method"] };
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new(format!("{PREFIX}_requests_total"), "Host requests by MCP method and outcome"),
            &["method", "outcome"],
        )
        .expect("valid metric");
        let upstream_latency = HistogramVec::new(
            HistogramOpts::new(format!("{PREFIX}_upstream_call_duration_seconds"), "Upstream round-trip time by MCP method")
                .buckets(vec![0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0]),
            server_method,
        )
        .expect("valid metric");
        let upstream_restarts = IntCounterVec::new(
            Opts::new(format!("{PREFIX}_upstream_restarts_total"), "Times the upstream was restarted or reconnected"),
            server,
        )
        .expect("valid metric");
        let upstream_connected = IntGaugeVec::new(
            Opts::new(format!("{PREFIX}_upstream_connected"), "1 while the upstream is initialized and its tools listed"),
            server,
        )
        .expect("valid metric");
        let host_sessions =
            IntGaugeVec::new(Opts::new(format!("{PREFIX}_host_sessions"), "Open host sessions by transport"), &["transport"])
                .expect("valid metric");
        let ui_reads =
            IntCounterVec::new(Opts::new(format!("{PREFIX}_ui_reads_total"), "ui:// resource reads by the kind of page served"), &["kind"])
                .expect("valid metric");
        let generation_duration = HistogramVec::new(
            HistogramOpts::new(format!("{PREFIX}_generation_duration_seconds"), "UI generation wall time by tool and outcome")
                // Pages from hosted models take 15 s to minutes.
                .buckets(vec![0.05, 0.25, 1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0, 600.0]),
            &["tool", "outcome"],
        )
        .expect("valid metric");
        let cache_hits =
            IntCounter::new(format!("{PREFIX}_cache_hits_total"), "ui:// reads answered from the cache").expect("valid metric");
        let cache_misses =
            IntCounter::new(format!("{PREFIX}_cache_misses_total"), "ui:// reads that had to make a page").expect("valid metric");
        let cache_entries = IntGauge::new(format!("{PREFIX}_cache_entries"), "Pages in the cache").expect("valid metric");
        let cache_bytes = IntGauge::new(format!("{PREFIX}_cache_bytes"), "Bytes of HTML in the cache").expect("valid metric");
        let fallbacks = IntCounterVec::new(
            Opts::new(format!("{PREFIX}_fallbacks_total"), "Pages served instead of a generated one, by reason"),
            &["reason"],
        )
        .expect("valid metric");
        let llm_requests = IntCounterVec::new(
            Opts::new(format!("{PREFIX}_llm_requests_total"), "LLM requests by provider, model and outcome"),
            &["provider", "model", "outcome"],
        )
        .expect("valid metric");
        let llm_requests_by_tool = IntCounterVec::new(
            Opts::new(format!("{PREFIX}_llm_requests_by_tool_total"), "LLM requests by the tool whose page they were for"),
            &["tool"],
        )
        .expect("valid metric");
        let llm_tokens = IntCounterVec::new(
            Opts::new(format!("{PREFIX}_llm_tokens_total"), "LLM tokens by provider, model and direction"),
            &["provider", "model", "direction"],
        )
        .expect("valid metric");
        let generations_in_flight =
            IntGauge::new(format!("{PREFIX}_generations_in_flight"), "Generations holding a concurrency slot").expect("valid metric");
        let generations_queued =
            IntGauge::new(format!("{PREFIX}_generations_queued"), "Generations waiting for a concurrency slot").expect("valid metric");
        let upstream_bad_frames = IntCounterVec::new(
            Opts::new(
                format!("{PREFIX}_upstream_bad_frames_total"),
                "Upstream lines or SSE events skipped because they were not UTF-8, JSON or JSON-RPC",
            ),
            server,
        )
        .expect("valid metric");
        let upstream_timeouts = IntCounterVec::new(
            Opts::new(
                format!("{PREFIX}_upstream_timeouts_total"),
                "Upstream requests that ran past upstream.requestTimeoutMs and were cancelled",
            ),
            server,
        )
        .expect("valid metric");
        let actor_restarts = IntCounterVec::new(
            Opts::new(format!("{PREFIX}_actor_restarts_total"), "Actors restarted by their supervisor, by actor"),
            &["actor"],
        )
        .expect("valid metric");
        let dropped_messages = IntCounterVec::new(
            Opts::new(format!("{PREFIX}_dropped_messages_total"), "Messages dropped at a bound (full stream or queue) or as late progress"),
            &["reason"],
        )
        .expect("valid metric");
        let refusals = IntCounterVec::new(
            Opts::new(format!("{PREFIX}_refusals_total"), "Requests refused by a limit or by authentication, by reason"),
            &["reason"],
        )
        .expect("valid metric");
        let redis_errors = IntCounterVec::new(
            Opts::new(format!("{PREFIX}_redis_errors_total"), "Redis operations that failed or timed out, by operation"),
            &["op"],
        )
        .expect("valid metric");
        let redis_connected =
            IntGauge::new(format!("{PREFIX}_redis_connected"), "1 while Redis answers and the replicas' change events arrive")
                .expect("valid metric");
        let lease_waits = IntCounterVec::new(
            Opts::new(format!("{PREFIX}_lease_waits_total"), "Reads that waited for another replica's generation, by how the wait ended"),
            &["outcome"],
        )
        .expect("valid metric");
        let lease_takeovers = IntCounter::new(
            format!("{PREFIX}_lease_takeovers_total"),
            "Generations taken over from a replica whose lease expired before it stored the page",
        )
        .expect("valid metric");
        let warm_pages = IntGaugeVec::new(
            Opts::new(format!("{PREFIX}_warm_pages"), "generation.warm: pages made before anyone asked (done) of those selected (total)"),
            &["state"],
        )
        .expect("valid metric");
        let trace_spans_dropped = IntCounterVec::new(
            Opts::new(
                format!("{PREFIX}_trace_spans_dropped_total"),
                "Finished spans not delivered to the trace collector: queue_full or export_failed",
            ),
            &["reason"],
        )
        .expect("valid metric");
        let shape_regenerations = IntCounter::new(
            format!("{PREFIX}_shape_regenerations_total"),
            "Pages remade in the background once their tool's result shape was learnt",
        )
        .expect("valid metric");
        for c in [
            Box::new(requests.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(warm_pages.clone()),
            Box::new(trace_spans_dropped.clone()),
            Box::new(shape_regenerations.clone()),
            Box::new(redis_errors.clone()),
            Box::new(redis_connected.clone()),
            Box::new(lease_waits.clone()),
            Box::new(lease_takeovers.clone()),
            Box::new(refusals.clone()),
            Box::new(upstream_bad_frames.clone()),
            Box::new(upstream_timeouts.clone()),
            Box::new(actor_restarts.clone()),
            Box::new(dropped_messages.clone()),
            Box::new(upstream_latency.clone()),
            Box::new(upstream_restarts.clone()),
            Box::new(upstream_connected.clone()),
            Box::new(host_sessions.clone()),
            Box::new(ui_reads.clone()),
            Box::new(generation_duration.clone()),
            Box::new(cache_hits.clone()),
            Box::new(cache_misses.clone()),
            Box::new(cache_entries.clone()),
            Box::new(cache_bytes.clone()),
            Box::new(fallbacks.clone()),
            Box::new(llm_requests.clone()),
            Box::new(llm_requests_by_tool.clone()),
            Box::new(llm_tokens.clone()),
            Box::new(generations_in_flight.clone()),
            Box::new(generations_queued.clone()),
        ] {
            registry.register(c).expect("metric names are unique");
        }
        let build_info =
            IntGaugeVec::new(Opts::new(format!("{PREFIX}_build_info"), "Always 1; the labels say which build runs"), &["version"])
                .expect("valid metric");
        registry.register(Box::new(build_info.clone())).expect("metric names are unique");
        build_info.with_label_values(&[env!("CARGO_PKG_VERSION")]).set(1);
        // Sessions by transport start at zero so that dashboards see every series from the start.
        for t in ["stdio", "sse", "streamable-http"] {
            host_sessions.with_label_values(&[t]).set(0);
        }
        for a in SUPERVISED_ACTORS {
            actor_restarts.with_label_values(&[a]);
        }
        for r in DROP_REASONS {
            dropped_messages.with_label_values(&[r]);
        }
        for r in REFUSAL_REASONS {
            refusals.with_label_values(&[r]);
        }
        for op in REDIS_OPS {
            redis_errors.with_label_values(&[op]);
        }
        for o in LEASE_WAIT_OUTCOMES {
            lease_waits.with_label_values(&[o]);
        }
        if !per_server {
            // One unlabelled series each, present from the start.
            let none: &[&str] = &[];
            upstream_restarts.with_label_values(none);
            upstream_connected.with_label_values(none).set(0);
            upstream_bad_frames.with_label_values(none);
            upstream_timeouts.with_label_values(none);
        }
        Metrics {
            registry,
            per_server,
            requests,
            upstream_latency,
            upstream_restarts,
            upstream_connected,
            host_sessions,
            ui_reads,
            generation_duration,
            cache_hits,
            cache_misses,
            cache_entries,
            cache_bytes,
            fallbacks,
            llm_requests,
            llm_requests_by_tool,
            llm_tokens,
            generations_in_flight,
            generations_queued,
            upstream_bad_frames,
            upstream_timeouts,
            actor_restarts,
            dropped_messages,
            refusals,
            warm_pages,
            shape_regenerations,
            redis_errors,
            redis_connected,
            lease_waits,
            lease_takeovers,
            trace_spans_dropped,
        }
    }

    /// Creates every series whose labels are known up front at zero, so dashboards and alerts
    /// see them before the first event (an absent series is not a zero).
    pub fn preinit(&self, provider: &str, model: &str) {
        for m in KNOWN_METHODS {
            for o in ["ok", "error", "cancelled"] {
                self.requests.with_label_values(&[m, o]);
            }
        }
        for r in FALLBACK_REASONS {
            self.fallbacks.with_label_values(&[r]);
        }
        for k in ["generated", "repaired", "template", "emergency"] {
            self.ui_reads.with_label_values(&[k]);
        }
        if provider != "offline" {
            for o in ["ok", "TIMEOUT", "RATE_LIMIT", "INVALID_REQUEST", "SERVER_ERROR", "NETWORK_ERROR", "CONTENT_FILTERED", "ABORTED"] {
                self.llm_requests.with_label_values(&[provider, model, o]);
            }
            for d in ["input", "output"] {
                self.llm_tokens.with_label_values(&[provider, model, d]);
            }
        }
    }

    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        TextEncoder::new().encode(&self.registry.gather(), &mut buf).expect("text encoding cannot fail");
        String::from_utf8(buf).expect("prometheus text is UTF-8")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_families_with_prefix() {
        let m = Metrics::new();
        m.requests.with_label_values(&["tools/call", "ok"]).inc();
        let text = m.render();
        assert!(text.contains("mcp_gen_ui_requests_total{method=\"tools/call\",outcome=\"ok\"} 1"));
        assert!(text.contains("mcp_gen_ui_host_sessions{transport=\"stdio\"} 0"));
    }

    #[test]
    fn unknown_methods_share_one_label() {
        assert_eq!(method_label("tools/call"), "tools/call");
        assert_eq!(method_label("x/y/z"), "other");
    }
}
