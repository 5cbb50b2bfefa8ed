//! One OTLP/HTTP export: spans grouped by scope under the service's resource, encoded as the
//! protobuf `ExportTraceServiceRequest`, posted with the configured headers.

use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::trace::SpanData;
use opentelemetry_sdk::Resource;
use prost::Message as _;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};

use crate::config::settings::traces::TraceSettings;

/// Why an export did not land. Never carries a header value.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("the collector could not be reached: {0}")]
    Unreachable(String),
    #[error("the collector answered HTTP {0}")]
    Refused(u16),
}

pub struct Otlp {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    resource: ResourceAttributesWithSchema,
    timeout: Duration,
}

impl Otlp {
    /// An exporter of spans to `settings.url` (`for_url` makes one to another signal's URL).
    pub fn new(settings: &TraceSettings, resource: &Resource) -> Self {
        Self::for_url(settings, resource, settings.url.clone())
    }

    pub fn for_url(settings: &TraceSettings, resource: &Resource, url: String) -> Self {
        let mut headers = HeaderMap::new();
        for (k, v) in &settings.headers {
            // Checked when the settings were read; a value that still fails is skipped.
            if let (Ok(name), Ok(mut value)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(&v.0)) {
                value.set_sensitive(true);
                headers.insert(name, value);
            }
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/x-protobuf"));
        let client = mcp_gen_ui_actors::process::tls::client_builder()
            .user_agent(concat!("mcp-gen-ui/", env!("CARGO_PKG_VERSION"), " otlp"))
            .connect_timeout(settings.export_timeout.min(Duration::from_secs(5)))
            .build()
            .unwrap_or_default();
        Otlp { client, url, headers, resource: resource.into(), timeout: settings.export_timeout }
    }

    /// The request body for `spans` (pure, so a test can decode it).
    pub fn encode(otlp: &Otlp, spans: Vec<SpanData>) -> Vec<u8> {
        ExportTraceServiceRequest { resource_spans: group_spans_by_resource_and_scope(spans, &otlp.resource) }.encode_to_vec()
    }

    /// The resource every export is made under (its attributes, as OTLP has them).
    pub fn resource(&self) -> &ResourceAttributesWithSchema {
        &self.resource
    }

    /// Posts one encoded export request.
    pub async fn post(&self, body: Vec<u8>) -> Result<(), ExportError> {
        let sent = self.client.post(&self.url).headers(self.headers.clone()).timeout(self.timeout).body(body).send().await;
        let resp = sent.map_err(|e| ExportError::Unreachable(e.without_url().to_string()))?;
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(ExportError::Refused(resp.status().as_u16()))
        }
    }
}
