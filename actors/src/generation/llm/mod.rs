//! LLM clients. One trait, one client ([`Provider`]) over one file per wire format, errors
//! mapped to the failure codes so the generation pipeline decides about retries without
//! knowing any provider. A new provider is a new [`Wire`].

mod anthropic;
mod errors;
mod ollama;
mod openai;
pub mod stream;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

pub use errors::{classify_status, from_stream_error, parse_retry_after};
use stream::{Decoder, Limits, Stop};

use crate::generation::progress::Progress;

/// Anthropic's Messages API.
pub type Anthropic = Provider<anthropic::Messages>;
/// OpenAI's Chat Completions, and any server that speaks it.
pub type OpenAi = Provider<openai::ChatCompletions>;
/// Ollama's chat API.
pub type Ollama = Provider<ollama::Chat>;

/// How a request failed: the same kinds a page's fallback reason names.
pub use crate::page::LlmFailure as ErrorCode;

#[derive(Debug, Clone, PartialEq)]
pub struct LlmError {
    pub code: ErrorCode,
    pub message: String,
    pub retryable: bool,
    /// What the provider asked for (Retry-After); honoured when it fits the budget.
    pub retry_after: Option<Duration>,
    pub status: Option<u16>,
}

impl LlmError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let retryable = matches!(
            code,
            ErrorCode::Timeout | ErrorCode::Stalled | ErrorCode::RateLimit | ErrorCode::ServerError | ErrorCode::NetworkError
        );
        LlmError { code, message: message.into(), retryable, retry_after: None, status: None }
    }
}

impl std::fmt::Display for LlmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

#[derive(Debug, Clone)]
pub struct LlmRequest {
    pub system: String,
    pub user: String,
    pub max_tokens: u32,
    pub temperature: f64,
    /// Sent as `x-request-id` (and OpenAI's `X-Client-Request-Id`) so provider logs line up.
    pub request_id: String,
    /// The LLM request's span: sent as `traceparent`, so a provider (or a gateway in front of
    /// it) that traces joins the trace.
    pub trace: crate::trace::TraceCx,
    /// How long the answer may take to begin, and to pause once begun.
    pub limits: Limits,
    /// Where the characters of the answer are counted as they stream in.
    pub progress: Option<Arc<Progress>>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmResponse {
    pub text: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Why the answer ended: `Truncated` means the page was cut at the token limit.
    pub stop: Stop,
}

impl LlmResponse {
    /// `text` with the token counts found at two JSON pointers of the answer (0 when absent).
    pub(crate) fn with_usage(text: impl Into<String>, answer: &serde_json::Value, input: &str, output: &str) -> Self {
        let count = |p: &str| answer.pointer(p).and_then(serde_json::Value::as_u64).unwrap_or(0);
        LlmResponse { text: text.into(), input_tokens: count(input), output_tokens: count(output), stop: Stop::Done }
    }

    pub(crate) fn truncated(mut self, cut: bool) -> Self {
        if cut {
            self.stop = Stop::Truncated;
        }
        self
    }
}

/// A provider. `complete` streams the answer under the request's limits, and must be
/// cancel-safe: dropping its future drops the HTTP request and closes the connection, which is
/// how the generation's ceiling and shutdown stop it.
pub trait LlmClient: Send + Sync {
    fn provider(&self) -> &'static str;
    fn model(&self) -> &str;
    fn complete(&self, req: LlmRequest) -> BoxFuture<'static, Result<LlmResponse, LlmError>>;
}

pub type SharedLlm = Arc<dyn LlmClient>;

/// Where a provider is and who we are to it: shared by every wire format.
pub struct Endpoint {
    client: reqwest::Client,
    base: String,
    key: Option<String>,
    model: String,
}

impl Endpoint {
    /// `Authorization: Bearer` with the key, when there is one.
    fn bearer(&self, rb: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.key {
            Some(k) => rb.bearer_auth(k),
            None => rb,
        }
    }
}

/// What differs between providers: how a request is built and an answer read. The HTTP
/// client, the statuses, the streaming limits and errors are shared ([`Provider`]).
pub trait Wire: Send + Sync + 'static {
    const NAME: &'static str;
    const DEFAULT_BASE: &'static str;
    const DEFAULT_MODEL: &'static str;
    /// The media type of this format's streamed answer; an answer of another type is a whole
    /// JSON answer (a compatible server that ignored `stream`). None: every answer is decoded
    /// as a stream (a whole answer is a stream of one line).
    const STREAM_TYPE: Option<&'static str>;
    /// The request (URL, headers) and its JSON body, asking for a streamed answer.
    fn request(&self, ep: &Endpoint, req: &LlmRequest) -> (reqwest::RequestBuilder, serde_json::Value);
    /// Reads the streamed answer.
    fn decoder(&self) -> Box<dyn Decoder>;
    /// Reads a whole (not streamed) JSON answer.
    fn parse(answer: &serde_json::Value) -> Result<LlmResponse, LlmError>;
}

/// A provider: an endpoint spoken to in one wire format.
pub struct Provider<W> {
    endpoint: Endpoint,
    wire: W,
}

impl<W: Wire + Default> Provider<W> {
    /// `base` and `model` fall back to the provider's defaults.
    pub fn new(base: Option<&str>, key: Option<String>, model: Option<&str>) -> Self {
        let endpoint = Endpoint {
            client: http(),
            base: base.unwrap_or(W::DEFAULT_BASE).trim_end_matches('/').to_string(),
            key,
            model: model.unwrap_or(W::DEFAULT_MODEL).to_string(),
        };
        Provider { endpoint, wire: W::default() }
    }
}

impl<W: Wire> LlmClient for Provider<W> {
    fn provider(&self) -> &'static str {
        W::NAME
    }

    fn model(&self) -> &str {
        &self.endpoint.model
    }

    fn complete(&self, req: LlmRequest) -> BoxFuture<'static, Result<LlmResponse, LlmError>> {
        let (mut rb, body) = self.wire.request(&self.endpoint, &req);
        if let Some((traceparent, tracestate)) = req.trace.headers() {
            // Checked as header values first: a bad one is left out, never a failed request.
            for (name, value) in [("traceparent", Some(traceparent)), ("tracestate", tracestate)] {
                if let Some(v) = value.and_then(|v| reqwest::header::HeaderValue::from_str(&v).ok()) {
                    rb = rb.header(name, v);
                }
            }
        }
        let decoder = self.wire.decoder();
        Box::pin(async move {
            let first = tokio::time::Instant::now() + req.limits.first_token;
            let sent = tokio::time::timeout_at(first, rb.json(&body).send()).await;
            let resp = sent.map_err(|_| stream::first_token_error(&req.limits))?.map_err(|e| errors::from_reqwest(&e))?;
            let max = stream::max_stream_bytes(req.max_tokens);
            let status = resp.status();
            let kind =
                resp.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_ascii_lowercase();
            if !status.is_success() || W::STREAM_TYPE.is_some_and(|t| !kind.starts_with(t)) {
                return whole_answer::<W>(resp, max, req.limits.stall).await;
            }
            let mut decoder = decoder;
            stream::collect(resp.bytes_stream(), decoder.as_mut(), &req.limits, first, max, req.progress.as_deref()).await
        })
    }
}

/// An answer that is not a stream: an error status with its body, or a whole JSON answer.
async fn whole_answer<W: Wire>(resp: reqwest::Response, max: usize, stall: Duration) -> Result<LlmResponse, LlmError> {
    let status = resp.status();
    let retry_after = resp.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(parse_retry_after);
    let text = read_bounded(resp, max, stall).await?;
    if !status.is_success() {
        let mut err = classify_status(status.as_u16(), &text);
        err.retry_after = retry_after;
        return Err(err);
    }
    let answer: serde_json::Value = serde_json::from_str(&text).map_err(|_| {
        let mut e =
            LlmError::new(ErrorCode::ServerError, format!("the provider answered {status} with a body that is neither a stream nor JSON"));
        e.status = Some(status.as_u16());
        e
    })?;
    W::parse(&answer)
}

/// A body read whole, refused past `max` bytes or after a silence of `stall`.
async fn read_bounded(resp: reqwest::Response, max: usize, stall: Duration) -> Result<String, LlmError> {
    use futures::StreamExt;
    let mut body = resp.bytes_stream();
    let mut buf = Vec::new();
    loop {
        let next = tokio::time::timeout(stall, body.next()).await.map_err(|_| {
            LlmError::new(ErrorCode::Stalled, format!("the answer stopped for {} ms (generation.stallMs)", stall.as_millis()))
        })?;
        let Some(part) = next else { break };
        let part = part.map_err(|e| errors::from_reqwest(&e))?;
        if buf.len() + part.len() > max {
            return Err(LlmError::new(ErrorCode::ServerError, format!("the provider's answer passed {max} bytes")));
        }
        buf.extend_from_slice(&part);
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The HTTP client all providers use: no overall timeout (the budget cancels), a connect timeout.
pub(crate) fn http() -> reqwest::Client {
    crate::process::tls::client_builder().connect_timeout(Duration::from_secs(10)).build().expect("a default reqwest client builds")
}
