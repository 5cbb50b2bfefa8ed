//! LLM clients. One trait, one file per provider, errors mapped to the seed design's codes so
//! the generation pipeline decides about retries without knowing any provider.

mod anthropic;
mod errors;
mod ollama;
mod openai;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Serialize;

pub use anthropic::Anthropic;
pub use errors::{classify_status, parse_retry_after};
pub use ollama::Ollama;
pub use openai::OpenAi;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    Timeout,
    RateLimit,
    InvalidRequest,
    ServerError,
    NetworkError,
    ContentFiltered,
    Aborted,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::RateLimit => "RATE_LIMIT",
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::ServerError => "SERVER_ERROR",
            ErrorCode::NetworkError => "NETWORK_ERROR",
            ErrorCode::ContentFiltered => "CONTENT_FILTERED",
            ErrorCode::Aborted => "ABORTED",
        }
    }
}

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
        let retryable = matches!(code, ErrorCode::Timeout | ErrorCode::RateLimit | ErrorCode::ServerError | ErrorCode::NetworkError);
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
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmResponse {
    pub text: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// A provider. `complete` must be cancel-safe: dropping its future drops the HTTP request and
/// closes the connection, which is how the generation budget is enforced.
pub trait LlmClient: Send + Sync {
    fn provider(&self) -> &'static str;
    fn model(&self) -> &str;
    fn complete(&self, req: LlmRequest) -> BoxFuture<'static, Result<LlmResponse, LlmError>>;
}

pub type SharedLlm = Arc<dyn LlmClient>;

/// The HTTP client all providers use: no overall timeout (the budget cancels), a connect timeout.
pub(crate) fn http() -> reqwest::Client {
    reqwest::Client::builder().connect_timeout(Duration::from_secs(10)).build().expect("a default reqwest client builds")
}

/// Sends a JSON POST and maps transport failures and error statuses; returns the JSON body.
pub(crate) async fn post_json(rb: reqwest::RequestBuilder, body: &serde_json::Value) -> Result<serde_json::Value, LlmError> {
    let resp = rb.json(body).send().await.map_err(|e| errors::from_reqwest(&e))?;
    let status = resp.status();
    let retry_after = resp.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(parse_retry_after);
    let text = resp.text().await.map_err(|e| errors::from_reqwest(&e))?;
    if !status.is_success() {
        let mut err = classify_status(status.as_u16(), &text);
        err.retry_after = retry_after;
        return Err(err);
    }
    serde_json::from_str(&text).map_err(|_| {
        let mut e = LlmError::new(ErrorCode::ServerError, format!("the provider answered {status} with a body that is not JSON"));
        e.status = Some(status.as_u16());
        e
    })
}
