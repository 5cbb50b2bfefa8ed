//! Prometheus metrics. One registry per process, shared by `Arc`; the families are registered
//! once here so that names and label sets live in one place.

use prometheus::{Encoder, Histogram, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Registry, TextEncoder};

mod access;
mod families;
mod labels;
mod tools;

pub use access::AccessMetrics;
use families::Families;
pub use labels::*;
pub use tools::{ToolMetrics, ToolSeries, MAX_TOOL_SERIES, TOOL_OUTCOMES};

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
    /// Server-to-client requests sent to no host, by method and reason (`owner_unknown`: it
    /// names no call and several people share the server; `no_host`; `request_gone`;
    /// `unknown_task`).
    server_requests_refused: IntCounterVec,
    /// What a server said toward hosts that went to no one because it had no owner: a log
    /// line or a notification naming no request on a server several people share
    /// (`owner_unknown`), one naming a task the service does not know (`unknown_task`), or a
    /// notification of a kind that is nobody's with no one to own it (`no_owner`).
    kept_back: IntCounterVec,
    /// Tasks by (server and) what happened to them: `created`, then the statuses their server
    /// said (`input_required`, `completed`, `failed`, `cancelled`).
    tasks: IntCounterVec,
    /// Calls the service ran as tasks for hosts that do not speak tasks, by how they ended:
    /// `completed`, `error`, `cancelled`, `timeout`.
    tasks_bridged: IntCounterVec,
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
    /// Who may do what and who did: rules, the audit trail, each person's connections.
    pub access: AccessMetrics,
    /// Calls by tool (bounded).
    pub tools: ToolMetrics,
    /// Tools whose definition changed since it was pinned, or new, by server and outcome.
    pub tool_changes: IntCounterVec,
    /// Calls held for an approval, by what became of them.
    pub approvals: IntCounterVec,
    build_info: IntGaugeVec,
    /// Every family as registered, in order: what the metrics reference is made from.
    families: Vec<Family>,
}

/// A family as it was registered: its full name, Prometheus type, help and label names.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    pub name: String,
    pub kind: &'static str,
    pub help: String,
    pub labels: Vec<String>,
}

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

    pub fn server_requests_refused(&self, server: &str, method: &str, reason: &'static str) -> IntCounter {
        let method = match method {
            "sampling/createMessage" | "elicitation/create" | "roots/list" => method,
            _ => "other",
        };
        let mut labels = self.server_label(server);
        labels.extend([method, reason]);
        self.server_requests_refused.with_label_values(&labels)
    }

    /// `kind`: `log` or `notification`; `reason`: `owner_unknown`, `unknown_task` or `no_owner`.
    pub fn kept_back(&self, server: &str, kind: &'static str, reason: &'static str) -> IntCounter {
        let mut labels = self.server_label(server);
        labels.extend([kind, reason]);
        self.kept_back.with_label_values(&labels)
    }

    /// `event`: `created`, or a status a server said (others are counted as `other`).
    pub fn task(&self, server: &str, event: &str) -> IntCounter {
        let event = match event {
            "created" | "working" | "input_required" | "completed" | "failed" | "cancelled" => event,
            _ => "other",
        };
        let mut labels = self.server_label(server);
        labels.push(event);
        self.tasks.with_label_values(&labels)
    }

    /// `outcome`: `completed`, `error`, `cancelled` or `timeout`.
    pub fn task_bridged(&self, server: &str, outcome: &'static str) -> IntCounter {
        let mut labels = self.server_label(server);
        labels.push(outcome);
        self.tasks_bridged.with_label_values(&labels)
    }

    pub fn upstream_latency(&self, server: &str, method: &str) -> Histogram {
        // Every proxied answer asks for its series: the labels stay on the stack.
        let labels: &[&str] = if self.per_server { &[server, method] } else { &[method] };
        self.upstream_latency.with_label_values(labels)
    }

    /// Creates a server's series at zero (a server that never connects still shows as 0).
    pub fn preinit_server(&self, server: &str) {
        self.upstream_restarts(server);
        self.upstream_connected(server).set(0);
        self.upstream_bad_frames(server);
        self.upstream_timeouts(server);
        for (kind, reason) in KEPT_BACK {
            self.kept_back(server, kind, reason);
        }
    }

    /// Drops a server's series (it was removed from the servers file).
    pub fn forget_server(&self, server: &str) {
        if self.per_server {
            let _ = self.upstream_restarts.remove_label_values(&[server]);
            let _ = self.upstream_connected.remove_label_values(&[server]);
            let _ = self.upstream_bad_frames.remove_label_values(&[server]);
            let _ = self.upstream_timeouts.remove_label_values(&[server]);
            for (kind, reason) in KEPT_BACK {
                let _ = self.kept_back.remove_label_values(&[server, kind, reason]);
            }
        }
    }

    fn build(per_server: bool) -> Self {
        let server: &[&str] = if per_server { &["server"] } else { &[] };
        let server_method: &[&str] = if per_server { &["server", "method"] } else { &["method"] };
        let r = Families(Registry::new(), Default::default());
        // Pages from hosted models take 15 s to minutes.
        let generation_buckets = vec![0.05, 0.25, 1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0, 600.0];
        let upstream_buckets = vec![0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];
        let m = Metrics {
            per_server,
            requests: r.counters("requests_total", "Host requests by MCP method and outcome", &["method", "outcome"]),
            upstream_latency: r.histograms(
                "upstream_call_duration_seconds",
                "Upstream round-trip time by MCP method",
                server_method,
                upstream_buckets,
            ),
            upstream_restarts: r.counters("upstream_restarts_total", "Times the upstream was restarted or reconnected", server),
            upstream_connected: r.gauges("upstream_connected", "1 while the upstream is initialized and its tools listed", server),
            host_sessions: r.gauges("host_sessions", "Open host sessions by transport", &["transport"]),
            ui_reads: r.counters("ui_reads_total", "ui:// resource reads by the kind of page served", &["kind"]),
            generation_duration: r.histograms(
                "generation_duration_seconds",
                "UI generation wall time by tool and outcome",
                &["tool", "outcome"],
                generation_buckets,
            ),
            cache_hits: r.counter("cache_hits_total", "ui:// reads answered from the cache"),
            cache_misses: r.counter("cache_misses_total", "ui:// reads that had to make a page"),
            cache_entries: r.gauge("cache_entries", "Pages in the cache"),
            cache_bytes: r.gauge("cache_bytes", "Bytes of HTML in the cache"),
            fallbacks: r.counters("fallbacks_total", "Pages served instead of a generated one, by reason", &["reason"]),
            llm_requests: r.counters(
                "llm_requests_total",
                "LLM requests by provider, model and outcome",
                &["provider", "model", "outcome"],
            ),
            llm_requests_by_tool: r.counters("llm_requests_by_tool_total", "LLM requests by the tool whose page they were for", &["tool"]),
            llm_tokens: r.counters("llm_tokens_total", "LLM tokens by provider, model and direction", &["provider", "model", "direction"]),
            generations_in_flight: r.gauge("generations_in_flight", "Generations holding a concurrency slot"),
            generations_queued: r.gauge("generations_queued", "Generations waiting for a concurrency slot"),
            upstream_bad_frames: r.counters("upstream_bad_frames_total", HELP_BAD_FRAMES, server),
            upstream_timeouts: r.counters("upstream_timeouts_total", HELP_TIMEOUTS, server),
            server_requests_refused: r.counters(
                "server_requests_refused_total",
                HELP_SERVER_REQUESTS_REFUSED,
                &[server, &["method", "reason"]].concat(),
            ),
            tasks: r.counters("tasks_total", HELP_TASKS, &[server, &["event"]].concat()),
            tasks_bridged: r.counters("tasks_bridged_total", HELP_TASKS_BRIDGED, &[server, &["outcome"]].concat()),
            kept_back: r.counters("kept_back_total", HELP_KEPT_BACK, &[server, &["kind", "reason"]].concat()),
            actor_restarts: r.counters("actor_restarts_total", "Actors restarted by their supervisor, by actor", &["actor"]),
            dropped_messages: r.counters(
                "dropped_messages_total",
                "Messages dropped at a bound (full stream or queue) or as late progress",
                &["reason"],
            ),
            refusals: r.counters("refusals_total", "Requests refused by a limit or by authentication, by reason", &["reason"]),
            shape_regenerations: r
                .counter("shape_regenerations_total", "Pages remade in the background once their tool's result shape was learnt"),
            redis_errors: r.counters("redis_errors_total", "Redis operations that failed or timed out, by operation", &["op"]),
            redis_connected: r.gauge("redis_connected", "1 while Redis answers and the replicas' change events arrive"),
            lease_waits: r.counters(
                "lease_waits_total",
                "Reads that waited for another replica's generation, by how the wait ended",
                &["outcome"],
            ),
            lease_takeovers: r
                .counter("lease_takeovers_total", "Generations taken over from a replica whose lease expired before it stored the page"),
            warm_pages: r.gauges(
                "warm_pages",
                "generation.warm: pages made before anyone asked (done) of those selected (total)",
                &["state"],
            ),
            trace_spans_dropped: r.counters(
                "trace_spans_dropped_total",
                "Finished spans not delivered to the trace collector: queue_full or export_failed",
                &["reason"],
            ),
            access: AccessMetrics::new(&r),
            tools: ToolMetrics::new(&r),
            tool_changes: r.counters(
                "tool_changes_total",
                "Tools whose definition changed since it was first accepted (passed: policy.onToolChange warn; held: hold), new tools held (new_held: policy.onNewTool hold), and held tools an admin accepted (accepted), by server",
                &["server", "outcome"],
            ),
            approvals: r.counters(
                "approvals_total",
                "Calls held by an approve rule, by what happened: requested, approved, declined, expired (no one decided in time)",
                &["rule", "outcome"],
            ),
            build_info: r.gauges("build_info", "Always 1; the labels say which build runs", &["version"]),
            families: r.1.take(),
            registry: r.0,
        };
        m.zeros();
        m
    }

    /// Series whose labels are known from the start, at zero.
    fn zeros(&self) {
        self.build_info.with_label_values(&[env!("CARGO_PKG_VERSION")]).set(1);
        // Sessions by transport start at zero so that dashboards see every series from the start.
        for t in ["stdio", "sse", "streamable-http"] {
            self.host_sessions.with_label_values(&[t]).set(0);
        }
        let each = |c: &IntCounterVec, values: &[&str]| values.iter().for_each(|v| drop(c.with_label_values(&[v])));
        each(&self.actor_restarts, SUPERVISED_ACTORS);
        each(&self.dropped_messages, DROP_REASONS);
        each(&self.refusals, REFUSAL_REASONS);
        each(&self.redis_errors, REDIS_OPS);
        each(&self.lease_waits, LEASE_WAIT_OUTCOMES);
        each(&self.access.audit_lines, &["written", "dropped"]);
        if !self.per_server {
            // One unlabelled series each, present from the start.
            let none: &[&str] = &[];
            self.upstream_restarts.with_label_values(none);
            self.upstream_connected.with_label_values(none).set(0);
            self.upstream_bad_frames.with_label_values(none);
            self.upstream_timeouts.with_label_values(none);
            for (kind, reason) in KEPT_BACK {
                self.kept_back.with_label_values(&[kind, reason]);
            }
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

    /// Every family this registry has (also those with no series yet), as registered.
    pub fn families(&self) -> &[Family] {
        &self.families
    }

    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        TextEncoder::new().encode(&self.registry.gather(), &mut buf).expect("text encoding cannot fail");
        String::from_utf8(buf).expect("prometheus text is UTF-8")
    }
}

// The longer help texts, kept out of the list of families so it reads as one table.
const HELP_SERVER_REQUESTS_REFUSED: &str = "Server-to-client requests answered with an error instead of reaching a host: they named no call on a server several people share (owner_unknown), no host could answer (no_host), the request they named had ended (request_gone), or the task they named is not known (unknown_task)";
const HELP_TASKS: &str = "Tasks (long-running calls) by what happened: created, or a status their server said (working, input_required, completed, failed, cancelled)";
const HELP_TASKS_BRIDGED: &str = "Calls of task-only tools the service ran as tasks for hosts that do not speak tasks, by how they ended: completed, error, cancelled, timeout";
const HELP_KEPT_BACK: &str = "Server messages toward hosts that went to no one for want of an owner: a log line or notification naming no request on a server several people share (owner_unknown), one naming a task the service does not know (unknown_task), or a notification of no server-wide kind with no one to own it (no_owner)";
const HELP_BAD_FRAMES: &str = "Upstream lines or SSE events skipped because they were not UTF-8, JSON or JSON-RPC";
const HELP_TIMEOUTS: &str = "Upstream requests that ran past upstream.requestTimeoutMs and were cancelled";

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests;
