//! Anthropic Messages API (`POST {base}/v1/messages`).

use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::{http, post_json, ErrorCode, LlmClient, LlmError, LlmRequest, LlmResponse};

pub struct Anthropic {
    client: reqwest::Client,
    base: String,
    key: String,
    model: String,
}

impl Anthropic {
    pub const DEFAULT_BASE: &'static str = "https://api.anthropic.com";
    pub const DEFAULT_MODEL: &'static str = "claude-sonnet-4-5";

    pub fn new(base: Option<&str>, key: String, model: Option<&str>) -> Self {
        Anthropic {
            client: http(),
            base: base.unwrap_or(Self::DEFAULT_BASE).trim_end_matches('/').to_string(),
            key,
            model: model.unwrap_or(Self::DEFAULT_MODEL).to_string(),
        }
    }
}

/// The text of a Messages API answer; a refusal is CONTENT_FILTERED.
pub(crate) fn parse(v: &Value) -> Result<LlmResponse, LlmError> {
    if v.get("stop_reason").and_then(Value::as_str) == Some("refusal") {
        return Err(LlmError::new(ErrorCode::ContentFiltered, "the model refused to answer"));
    }
    let text: String = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| LlmError::new(ErrorCode::ServerError, "the answer has no content array"))?
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    Ok(LlmResponse {
        text,
        input_tokens: v.pointer("/usage/input_tokens").and_then(Value::as_u64).unwrap_or(0),
        output_tokens: v.pointer("/usage/output_tokens").and_then(Value::as_u64).unwrap_or(0),
    })
}

impl LlmClient for Anthropic {
    fn provider(&self) -> &'static str {
        "anthropic"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn complete(&self, req: LlmRequest) -> BoxFuture<'static, Result<LlmResponse, LlmError>> {
        let rb = self
            .client
            .post(format!("{}/v1/messages", self.base))
            .header("x-api-key", &self.key)
            .header("anthropic-version", "2023-06-01")
            .header("x-request-id", &req.request_id);
        let body = json!({
            "model": self.model,
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
            "system": req.system,
            "messages": [{"role": "user", "content": req.user}],
            "metadata": {"user_id": "mcp-gen-ui"},
        });
        Box::pin(async move { parse(&post_json(rb, &body).await?) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_text_blocks_and_usage() {
        let v = json!({"content": [{"type": "text", "text": "<html>"}, {"type": "text", "text": "</html>"}], "usage": {"input_tokens": 10, "output_tokens": 20}, "stop_reason": "end_turn"});
        assert_eq!(parse(&v).unwrap(), LlmResponse { text: "<html></html>".into(), input_tokens: 10, output_tokens: 20 });
        assert_eq!(parse(&json!({"stop_reason": "refusal", "content": []})).unwrap_err().code, ErrorCode::ContentFiltered);
        assert_eq!(parse(&json!({"id": "x"})).unwrap_err().code, ErrorCode::ServerError);
    }
}
