//! Trace export: the OpenTelemetry SDK's tracer (sampling, ids, span data) with our own
//! bounded batch queue ([`batch`]) and OTLP/HTTP protobuf export ([`otlp`]), installed for
//! the actors' spans (`mcp_gen_ui_actors::trace`). Nothing here runs when tracing is off.
//!
//! Why not the SDK's batch processor and `opentelemetry-otlp`: the SDK drops spans past its
//! queue without a count anyone can read, and counts nothing when an export fails; the OTLP
//! crate brings a second HTTP client. Ours counts both in
//! `mcp_gen_ui_trace_spans_dropped_total` and posts with the reqwest the service already has.

mod batch;
pub mod logs;
mod otlp;

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::KeyValue;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use prometheus::IntCounterVec;

use crate::config::settings::traces::{SamplerChoice, TraceSettings};

/// The running export; flushed and stopped at shutdown.
pub struct Tracing {
    provider: SdkTracerProvider,
    resource: Resource,
}

impl Tracing {
    /// The audit trail's OTLP logs, under the same resource as the spans (None: no logs
    /// endpoint, only a traces one was given).
    pub fn audit_logs(&self, settings: &TraceSettings, lines: &IntCounterVec) -> Option<logs::AuditLogs> {
        let url = settings.logs_url.clone()?;
        Some(logs::AuditLogs::start(settings, &self.resource, url, lines))
    }

    /// Sends what is queued, waiting at most `budget`; spans that do not make it are counted.
    pub fn shutdown(self, budget: Duration) {
        if let Err(e) = self.provider.shutdown_with_timeout(budget) {
            tracing::warn!(component = "tracing", event = "export_shutdown", error = %e, "not every span was exported before exit");
        }
    }
}

/// Starts the export and installs the tracer the actors' spans are made with.
pub fn start(settings: &TraceSettings, dropped: IntCounterVec) -> Tracing {
    for reason in batch::DROP_REASONS {
        dropped.with_label_values(&[reason]);
    }
    let resource = Resource::builder_empty()
        .with_service_name(settings.service_name.clone())
        .with_attributes(
            [
                KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
                KeyValue::new("service.instance.id", uuid::Uuid::new_v4().to_string()),
            ]
            .into_iter()
            .chain(settings.resource.iter().map(|(k, v)| KeyValue::new(k.clone(), v.clone()))),
        )
        .build();
    let exporter = otlp::Otlp::new(settings, &resource);
    let processor = batch::BoundedBatch::start(exporter, batch::Bounds::of(settings), dropped);
    let provider = SdkTracerProvider::builder()
        .with_sampler(sampler(settings.sampler))
        .with_resource(resource.clone())
        .with_span_processor(processor)
        .build();
    mcp_gen_ui_actors::trace::install(provider.tracer("mcp-gen-ui"));
    tracing::info!(
        component = "tracing",
        event = "export",
        url = %settings.url,
        sampler = ?settings.sampler,
        headers = settings.headers.len(),
        "traces are exported over OTLP/HTTP to {}",
        settings.url
    );
    Tracing { provider, resource }
}

fn sampler(choice: SamplerChoice) -> Sampler {
    match choice {
        SamplerChoice::AlwaysOn => Sampler::AlwaysOn,
        SamplerChoice::AlwaysOff => Sampler::AlwaysOff,
        SamplerChoice::Ratio(r) => Sampler::TraceIdRatioBased(r),
        SamplerChoice::ParentOrOn => Sampler::ParentBased(Box::new(Sampler::AlwaysOn)),
        SamplerChoice::ParentOrOff => Sampler::ParentBased(Box::new(Sampler::AlwaysOff)),
        SamplerChoice::ParentOrRatio(r) => Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(r))),
    }
}
