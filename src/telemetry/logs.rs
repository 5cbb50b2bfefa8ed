//! The audit trail as OTLP logs, when traces are exported: each line one `LogRecord` (the line
//! its body, the event, principal, tool and outcome as attributes, the request's trace id),
//! queued and posted in batches by a thread of its own (`batch::Queue`), so a slow collector
//! costs the trail nothing but counted drops.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource as ProtoResource;
use opentelemetry_sdk::Resource;
use prometheus::IntCounterVec;
use prost::Message as _;

use super::batch::{Bounds, Drops, Queue};
use super::otlp::Otlp;
use crate::config::settings::traces::TraceSettings;
use mcp_gen_ui_actors::audit::Entry;

/// SeverityNumber INFO (a denial is WARN).
const INFO: i32 = 9;
const WARN: i32 = 13;

pub struct AuditLogs {
    queue: Queue<LogRecord>,
}

impl AuditLogs {
    /// Starts the export to `url`; `lines` is `mcp_gen_ui_audit_lines_total` (its
    /// `otlp_dropped` counts what does not reach the collector).
    pub fn start(settings: &TraceSettings, resource: &Resource, url: String, lines: &IntCounterVec) -> AuditLogs {
        let drops = Drops {
            full: lines.with_label_values(&["otlp_dropped"]),
            failed: lines.with_label_values(&["otlp_dropped"]),
            what: "audit lines",
            counted_in: "mcp_gen_ui_audit_lines_total{outcome=\"otlp_dropped\"}",
        };
        let exporter = Otlp::for_url(settings, resource, url);
        AuditLogs { queue: Queue::start("audit-otlp", exporter, encode, Bounds::of(settings), drops) }
    }

    pub fn push(&self, entry: &Entry, line: &str) {
        self.queue.push(record(entry, line));
    }

    pub fn flush(&self, budget: std::time::Duration) {
        let _ = self.queue.flush_within(budget);
    }
}

fn text(k: &str, v: &str) -> KeyValue {
    KeyValue { key: k.into(), value: Some(AnyValue { value: Some(any_value::Value::StringValue(v.into())) }), ..Default::default() }
}

/// One line as a log record (pure).
pub fn record(entry: &Entry, line: &str) -> LogRecord {
    let nanos = entry.time.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let event = serde_json::to_value(entry.event).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    let mut attributes =
        vec![text("mcp_gen_ui.audit.event", &event), text("enduser.id", &entry.principal), text("mcp_gen_ui.audit.outcome", entry.outcome)];
    if let Some(t) = &entry.tool {
        attributes.push(text("gen_ai.tool.name", t));
    }
    let trace_id = entry.trace_id.as_deref().and_then(hex_bytes).unwrap_or_default();
    LogRecord {
        time_unix_nano: nanos,
        observed_time_unix_nano: nanos,
        severity_number: if entry.outcome == "denied" { WARN } else { INFO },
        severity_text: if entry.outcome == "denied" { "WARN" } else { "INFO" }.into(),
        body: Some(AnyValue { value: Some(any_value::Value::StringValue(line.trim_end().to_string())) }),
        attributes,
        trace_id,
        event_name: format!("mcp_gen_ui.audit.{event}"),
        ..Default::default()
    }
}

fn hex_bytes(s: &str) -> Option<Vec<u8>> {
    (s.len() == 32).then(|| (0..16).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()).collect::<Option<Vec<u8>>>()).flatten()
}

fn encode(otlp: &Otlp, records: Vec<LogRecord>) -> Vec<u8> {
    let resource = ProtoResource { attributes: otlp.resource().attributes.0.clone(), ..Default::default() };
    let scope = InstrumentationScope { name: "mcp-gen-ui.audit".into(), version: env!("CARGO_PKG_VERSION").into(), ..Default::default() };
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(resource),
            scope_logs: vec![ScopeLogs { scope: Some(scope), log_records: records, ..Default::default() }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_gen_ui_actors::audit::Event;
    use mcp_gen_ui_actors::who::Who;

    #[test]
    fn a_line_becomes_a_record_with_its_trace() {
        let mut e = Entry::new(Event::ToolCall, &Who::anonymous()).tool("get_forecast");
        e.trace_id = Some("0af7651916cd43dd8448eb211c80319c".into());
        let r = record(&e, &e.to_line());
        assert_eq!(r.trace_id.len(), 16);
        assert_eq!(r.event_name, "mcp_gen_ui.audit.tool_call");
        let body = match r.body.unwrap().value.unwrap() {
            any_value::Value::StringValue(s) => s,
            _ => panic!(),
        };
        assert!(body.starts_with('{') && body.ends_with('}'), "{body}");
    }
}
