//! Traces: OpenTelemetry spans, carried across actors by value.
//!
//! Actors share no "current span" (a message is handled on another task, often another
//! thread), so the work a request starts elsewhere takes its [`TraceCx`] along in the message,
//! next to its request id. Spans are made with the OpenTelemetry API on the tracer the service
//! installs at start ([`install`]); without one (no endpoint configured) every call here is a
//! branch on `None`: no context, no clock read, no allocation.
//!
//! Trace context arrives as W3C `traceparent` / `tracestate`, from HTTP headers or from a
//! JSON-RPC request's `params._meta` (stdio hosts and SDKs that put it there), and leaves the
//! same two ways (see [`TraceCx::inject_meta`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracer;
use serde_json::Value;

pub use opentelemetry::trace::SpanKind as Kind;
pub use opentelemetry::KeyValue as Attr;

/// Attribute names from the OpenTelemetry semantic conventions (MCP, GenAI, HTTP, Redis).
pub mod attr {
    pub const MCP_METHOD: &str = "mcp.method.name";
    pub const MCP_SESSION: &str = "mcp.session.id";
    pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
    pub const MCP_RESOURCE_URI: &str = "mcp.resource.uri";
    pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
    pub const RPC_STATUS_CODE: &str = "rpc.response.status_code";
    pub const ERROR_TYPE: &str = "error.type";
    pub const TOOL_NAME: &str = "gen_ai.tool.name";
    pub const PROMPT_NAME: &str = "gen_ai.prompt.name";
    pub const GENAI_OPERATION: &str = "gen_ai.operation.name";
    pub const GENAI_PROVIDER: &str = "gen_ai.provider.name";
    pub const GENAI_MODEL: &str = "gen_ai.request.model";
    pub const GENAI_MAX_TOKENS: &str = "gen_ai.request.max_tokens";
    pub const GENAI_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
    pub const GENAI_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
    pub const NETWORK_TRANSPORT: &str = "network.transport";
    pub const NETWORK_PROTOCOL: &str = "network.protocol.name";
    pub const HTTP_METHOD: &str = "http.request.method";
    pub const HTTP_STATUS: &str = "http.response.status_code";
    pub const HTTP_ROUTE: &str = "http.route";
    pub const DB_SYSTEM: &str = "db.system.name";
    pub const DB_OPERATION: &str = "db.operation.name";
    /// Ours: what the log lines of the same work carry as `requestId`.
    pub const REQUEST_ID: &str = "mcp_gen_ui.request_id";
    pub const SERVER: &str = "mcp_gen_ui.server";
    pub const ERA: &str = "mcp_gen_ui.era";
    pub const CACHE_HIT: &str = "mcp_gen_ui.cache.hit";
    pub const OUTCOME: &str = "mcp_gen_ui.outcome";
    /// Whose credentials a call to a per-principal server went with (a principal's name).
    pub const CREDENTIALS: &str = "mcp_gen_ui.credentials.principal";
    pub const FALLBACK_REASON: &str = "mcp_gen_ui.fallback.reason";
    pub const REPAIRS: &str = "mcp_gen_ui.repairs";
    pub const ATTEMPT: &str = "mcp_gen_ui.attempt";
}

static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// Makes spans from now on with `tracer`. Once per process; false if one was installed.
pub fn install(tracer: SdkTracer) -> bool {
    TRACER.set(tracer).is_ok()
}

pub fn enabled() -> bool {
    TRACER.get().is_some()
}

/// The longest `tracestate` passed on: the W3C limit is 32 members, 512 characters is what
/// every vendor must propagate; longer ones are dropped rather than cut mid-member.
const MAX_TRACESTATE: usize = 512;

/// Where work belongs in a trace: a span's context, or none (tracing off, or nothing to join).
#[derive(Clone, Default)]
pub struct TraceCx(Option<Context>);

impl std::fmt::Debug for TraceCx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.trace_id() {
            Some(t) => write!(f, "TraceCx({t})"),
            None => f.write_str("TraceCx(none)"),
        }
    }
}

struct Pair<'a>(&'a str, Option<&'a str>);

impl Extractor for Pair<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(self.0),
            "tracestate" => self.1,
            _ => None,
        }
    }
    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

struct Out(HashMap<String, String>);

impl Injector for Out {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_string(), value);
    }
}

impl TraceCx {
    pub fn none() -> Self {
        TraceCx(None)
    }

    /// A remote parent from W3C `traceparent` and `tracestate` values; none when tracing is off
    /// or the `traceparent` is not a valid one (it is untrusted input: the propagator checks
    /// its version, lengths and hex, and an all-zero id is refused).
    pub fn remote(traceparent: Option<&str>, tracestate: Option<&str>) -> Self {
        if !enabled() {
            return TraceCx(None);
        }
        let Some(tp) = traceparent.map(str::trim).filter(|t| t.len() <= 128 && header_safe(t)) else {
            return TraceCx(None);
        };
        // The propagator accepts control characters in tracestate values; they would make every
        // header built from this context (to upstreams, to the LLM provider) invalid.
        let ts = tracestate.filter(|s| s.len() <= MAX_TRACESTATE && header_safe(s));
        let cx = TraceContextPropagator::new().extract(&Pair(tp, ts));
        if cx.span().span_context().is_valid() {
            TraceCx(Some(cx))
        } else {
            TraceCx(None)
        }
    }

    /// From `params._meta.traceparent` / `tracestate` of a JSON-RPC message.
    pub fn from_meta(msg: &Value) -> Self {
        if !enabled() {
            return TraceCx(None);
        }
        let meta = msg.get("params").and_then(|p| p.get("_meta"));
        let get = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_str);
        TraceCx::remote(get("traceparent"), get("tracestate"))
    }

    /// This one if set, else `other`.
    pub fn or(self, other: TraceCx) -> TraceCx {
        if self.0.is_some() {
            self
        } else {
            other
        }
    }

    pub fn is_some(&self) -> bool {
        self.0.is_some()
    }

    /// The trace id in hex (32 characters), for the log lines of the same work.
    pub fn trace_id(&self) -> Option<String> {
        let cx = self.0.as_ref()?;
        let sc = cx.span().span_context().clone();
        sc.is_valid().then(|| sc.trace_id().to_string())
    }

    /// `traceparent` and `tracestate` for this context, to pass downstream.
    pub fn headers(&self) -> Option<(String, Option<String>)> {
        let cx = self.0.as_ref()?;
        let mut out = Out(HashMap::new());
        TraceContextPropagator::new().inject_context(cx, &mut out);
        let tp = out.0.remove("traceparent")?;
        Some((tp, out.0.remove("tracestate").filter(|s| !s.is_empty())))
    }

    /// Puts this context into `params._meta` of an outgoing request (replacing a host's own:
    /// the upstream's parent is our span for the call, which is the host's span's child).
    pub fn inject_meta(&self, msg: &mut Value) {
        let Some((tp, ts)) = self.headers() else {
            return;
        };
        let Some(params) = msg.as_object_mut().map(|m| m.entry("params").or_insert_with(|| Value::Object(Default::default()))) else {
            return;
        };
        let Some(params) = params.as_object_mut() else {
            return; // positional params have no _meta
        };
        let meta = params.entry("_meta").or_insert_with(|| Value::Object(Default::default()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("traceparent".into(), Value::String(tp));
            match ts {
                Some(ts) => meta.insert("tracestate".into(), Value::String(ts)),
                None => meta.remove("tracestate"),
            };
        }
    }
}

/// Visible ASCII and spaces only: what an HTTP header value may hold.
fn header_safe(s: &str) -> bool {
    s.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// The W3C headers for an outgoing HTTP message: the `_meta` trace context a session put in
/// it (see [`TraceCx::inject_meta`]), so HTTP upstreams that read only headers join too. The
/// values are parsed and written again, never copied: a message that did not pass through a
/// span of ours (a host's own `_meta`) yields only a valid context.
pub fn headers_of(msg: &Value) -> Vec<(&'static str, String)> {
    match TraceCx::from_meta(msg).headers() {
        Some((tp, Some(ts))) => vec![("traceparent", tp), ("tracestate", ts)],
        Some((tp, None)) => vec![("traceparent", tp)],
        None => Vec::new(),
    }
}

/// One span: ended when dropped (or by [`Span::end`]). Without a tracer it is nothing.
#[derive(Default)]
pub struct Span(Option<Context>);

impl Span {
    /// Starts a span under `parent` (a root span when the parent is none).
    pub fn start(name: impl Into<Cow<'static, str>>, kind: SpanKind, parent: &TraceCx, attrs: Vec<KeyValue>) -> Span {
        let Some(tracer) = TRACER.get() else {
            return Span(None);
        };
        let parent = parent.0.clone().unwrap_or_default();
        let span = tracer.span_builder(name).with_kind(kind).with_attributes(attrs).start_with_context(tracer, &parent);
        Span(Some(parent.with_span(span)))
    }

    /// A span only when tracing is on: `attrs` is not even built otherwise.
    pub fn start_with(name: impl Into<Cow<'static, str>>, kind: SpanKind, parent: &TraceCx, attrs: impl FnOnce() -> Vec<KeyValue>) -> Span {
        if !enabled() {
            return Span(None);
        }
        Span::start(name, kind, parent, attrs())
    }

    pub fn none() -> Span {
        Span(None)
    }

    /// Whether attributes set now are kept (tracing on and this trace sampled).
    pub fn recording(&self) -> bool {
        self.0.as_ref().is_some_and(|cx| cx.span().is_recording())
    }

    pub fn set(&self, key: &'static str, value: impl Into<opentelemetry::Value>) {
        if let Some(cx) = &self.0 {
            cx.span().set_attribute(KeyValue::new(key, value));
        }
    }

    /// Marks the span failed: `error.type` (a low-cardinality kind) and the status message.
    pub fn fail(&self, error_type: impl Into<opentelemetry::Value>, message: impl Into<Cow<'static, str>>) {
        if let Some(cx) = &self.0 {
            let span = cx.span();
            span.set_attribute(KeyValue::new(attr::ERROR_TYPE, error_type));
            span.set_status(Status::error(message));
        }
    }

    /// Links this span to another piece of work (a generation it waited for).
    pub fn link(&self, other: &TraceCx) {
        if let (Some(cx), Some(o)) = (&self.0, &other.0) {
            let sc = o.span().span_context().clone();
            if sc.is_valid() {
                cx.span().add_link(sc, Vec::new());
            }
        }
    }

    /// The context of this span, for the work it starts elsewhere.
    pub fn cx(&self) -> TraceCx {
        TraceCx(self.0.clone())
    }

    pub fn end(self) {}
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some(cx) = self.0.take() {
            cx.span().end();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Without an installed tracer (unit tests never install one) everything is inert.
    #[test]
    fn without_a_tracer_nothing_is_made_or_passed_on() {
        let cx = TraceCx::remote(Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), None);
        assert!(!cx.is_some());
        let span = Span::start("x", Kind::Server, &cx, vec![]);
        assert!(!span.recording());
        let mut msg = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}});
        span.cx().inject_meta(&mut msg);
        assert_eq!(msg["params"], serde_json::json!({}));
    }
}
