//! Prometheus metrics. One registry per process, shared by `Arc`; the families are registered
//! once here so that names and label sets live in one place.

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

pub const PREFIX: &str = "mcp_gen_ui";

pub struct Metrics {
    registry: Registry,
    /// Host requests by MCP method and outcome (ok, error, cancelled).
    pub requests: IntCounterVec,
    /// Upstream round trip by MCP method.
    pub upstream_latency: HistogramVec,
    pub upstream_restarts: IntCounter,
    /// 1 while the upstream is initialized and its tools listed.
    pub upstream_connected: IntGauge,
    /// Open host sessions by transport (stdio, sse, streamable-http).
    pub host_sessions: IntGaugeVec,
    /// ui:// reads by how the page was made (template, generated, ...).
    pub ui_reads: IntCounterVec,
}

/// MCP methods get their own label value; anything else is "other" so labels stay bounded.
pub fn method_label(method: &str) -> &'static str {
    const KNOWN: &[&str] = &[
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
    KNOWN
        .iter()
        .find(|m| **m == method)
        .copied()
        .unwrap_or("other")
}

impl Metrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new(
                format!("{PREFIX}_requests_total"),
                "Host requests by MCP method and outcome",
            ),
            &["method", "outcome"],
        )
        .expect("valid metric");
        let upstream_latency = HistogramVec::new(
            HistogramOpts::new(
                format!("{PREFIX}_upstream_call_duration_seconds"),
                "Upstream round-trip time by MCP method",
            )
            .buckets(vec![
                0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
            ]),
            &["method"],
        )
        .expect("valid metric");
        let upstream_restarts = IntCounter::new(
            format!("{PREFIX}_upstream_restarts_total"),
            "Times the upstream was restarted or reconnected",
        )
        .expect("valid metric");
        let upstream_connected = IntGauge::new(
            format!("{PREFIX}_upstream_connected"),
            "1 while the upstream is initialized and its tools listed",
        )
        .expect("valid metric");
        let host_sessions = IntGaugeVec::new(
            Opts::new(
                format!("{PREFIX}_host_sessions"),
                "Open host sessions by transport",
            ),
            &["transport"],
        )
        .expect("valid metric");
        let ui_reads = IntCounterVec::new(
            Opts::new(
                format!("{PREFIX}_ui_reads_total"),
                "ui:// resource reads by the kind of page served",
            ),
            &["kind"],
        )
        .expect("valid metric");
        for c in [
            Box::new(requests.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(upstream_latency.clone()),
            Box::new(upstream_restarts.clone()),
            Box::new(upstream_connected.clone()),
            Box::new(host_sessions.clone()),
            Box::new(ui_reads.clone()),
        ] {
            registry.register(c).expect("metric names are unique");
        }
        // Sessions by transport start at zero so that dashboards see every series from the start.
        for t in ["stdio", "sse", "streamable-http"] {
            host_sessions.with_label_values(&[t]).set(0);
        }
        Metrics {
            registry,
            requests,
            upstream_latency,
            upstream_restarts,
            upstream_connected,
            host_sessions,
            ui_reads,
        }
    }

    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut buf)
            .expect("text encoding cannot fail");
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
