//! The `tracing` section: OpenTelemetry trace export over OTLP/HTTP. Every key has its standard
//! `OTEL_*` variable, which wins over the file (as the environment does everywhere here).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// Traces: off unless an endpoint is given (here or in `OTEL_EXPORTER_OTLP_ENDPOINT` /
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
pub struct TracingConfig {
    /// The collector's base URL; traces go to `<endpoint>/v1/traces`
    /// (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub endpoint: Option<String>,
    /// The full URL traces are posted to, used as it is (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
    pub traces_endpoint: Option<String>,
    /// The full URL the audit trail is posted to as OTLP logs
    /// (`OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`); default `<endpoint>/v1/logs`.
    pub logs_endpoint: Option<String>,
    /// Headers sent with every export, such as an API key (`OTEL_EXPORTER_OTLP_HEADERS`,
    /// `key=value,key2=value2`). Their values never reach the logs.
    pub headers: BTreeMap<String, String>,
    /// `http/protobuf`, the only one spoken (`OTEL_EXPORTER_OTLP_PROTOCOL`).
    pub protocol: String,
    /// `service.name` of the spans (`OTEL_SERVICE_NAME`).
    pub service_name: String,
    /// More resource attributes (`OTEL_RESOURCE_ATTRIBUTES`, `key=value,...`).
    pub resource_attributes: BTreeMap<String, String>,
    /// always_on, always_off, traceidratio, parentbased_always_on (default),
    /// parentbased_always_off or parentbased_traceidratio (`OTEL_TRACES_SAMPLER`).
    pub sampler: String,
    /// The ratio of the traceidratio samplers, 0 to 1 (`OTEL_TRACES_SAMPLER_ARG`).
    pub sampler_arg: Option<f64>,
    /// Finished spans waiting for export; more are dropped and counted in
    /// `mcp_gen_ui_trace_spans_dropped_total` (`OTEL_BSP_MAX_QUEUE_SIZE`).
    pub max_queue_size: usize,
    /// Spans per export request (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
    pub max_export_batch_size: usize,
    /// Milliseconds between exports (`OTEL_BSP_SCHEDULE_DELAY`).
    pub schedule_delay_ms: u64,
    /// Milliseconds one export may take (`OTEL_EXPORTER_OTLP_TIMEOUT`).
    pub export_timeout_ms: u64,
}

impl Default for TracingConfig {
    fn default() -> Self {
        TracingConfig {
            endpoint: None,
            traces_endpoint: None,
            logs_endpoint: None,
            headers: BTreeMap::new(),
            protocol: "http/protobuf".into(),
            service_name: "mcp-gen-ui".into(),
            resource_attributes: BTreeMap::new(),
            sampler: "parentbased_always_on".into(),
            sampler_arg: None,
            max_queue_size: 2048,
            max_export_batch_size: 512,
            schedule_delay_ms: 5000,
            export_timeout_ms: 10_000,
        }
    }
}
