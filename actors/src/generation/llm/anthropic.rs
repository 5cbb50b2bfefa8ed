//! Anthropic Messages API (`POST {base}/v1/messages`).

use serde_json::{json, Value};

use super::{Endpoint, ErrorCode, LlmError, LlmRequest, LlmResponse, Wire};

/// The Messages API wire format.
#[derive(Default)]
pub struct Messages;

impl Wire for Messages {
    const NAME: &'static str = "anthropic";
    const DEFAULT_BASE: &'static str = "https://api.anthropic.com";
    const DEFAULT_MODEL: &'static str = "claude-sonnet-4-5";

    fn request(&self, ep: &Endpoint, req: &LlmRequest) -> (reqwest::RequestBuilder, Value) {
        let rb = ep
            .client
            .post(format!("{}/v1/messages", ep.base))
            .header("x-api-key", ep.key.as_deref().unwrap_or_default())
            .header("anthropic-version", "2023-06-01")
            .header("x-request-id", &req.request_id);
        let body = json!({
            "model": ep.model,
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
            "system": req.system,
            "messages": [{"role": "user", "content": req.user}],
            "metadata": {"user_id": "mcp-gen-ui"},
        });
        (rb, body)
    }

    fn parse(v: &Value) -> Result<LlmResponse, LlmError> {
        parse(v)
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
    Ok(LlmResponse::with_usage(text, v, "/usage/input_tokens", "/usage/output_tokens"))
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
