//! OpenAI Chat Completions (`POST {base}/chat/completions`), and any server that speaks it.

use serde_json::{json, Value};

use super::{Endpoint, ErrorCode, LlmError, LlmRequest, LlmResponse, Wire};

/// The Chat Completions wire format.
#[derive(Default)]
pub struct ChatCompletions;

impl Wire for ChatCompletions {
    const NAME: &'static str = "openai";
    const DEFAULT_BASE: &'static str = "https://api.openai.com/v1";
    const DEFAULT_MODEL: &'static str = "gpt-4.1";

    fn request(&self, ep: &Endpoint, req: &LlmRequest) -> (reqwest::RequestBuilder, Value) {
        let rb = ep
            .client
            .post(format!("{}/chat/completions", ep.base))
            .header("x-request-id", &req.request_id)
            .header("X-Client-Request-Id", &req.request_id);
        let body = json!({
            "model": ep.model,
            "temperature": req.temperature,
            "max_tokens": req.max_tokens,
            "messages": [{"role": "system", "content": req.system}, {"role": "user", "content": req.user}],
        });
        (ep.bearer(rb), body)
    }

    fn parse(v: &Value) -> Result<LlmResponse, LlmError> {
        parse(v)
    }
}

pub(crate) fn parse(v: &Value) -> Result<LlmResponse, LlmError> {
    let choice = v.pointer("/choices/0").ok_or_else(|| LlmError::new(ErrorCode::ServerError, "the answer has no choices"))?;
    if choice.get("finish_reason").and_then(Value::as_str) == Some("content_filter") {
        return Err(LlmError::new(ErrorCode::ContentFiltered, "the provider's content filter stopped the answer"));
    }
    if let Some(refusal) = choice.pointer("/message/refusal").and_then(Value::as_str) {
        return Err(LlmError::new(ErrorCode::ContentFiltered, format!("the model refused: {refusal}")));
    }
    let text = choice
        .pointer("/message/content")
        .and_then(Value::as_str)
        .ok_or_else(|| LlmError::new(ErrorCode::ServerError, "the answer has no message content"))?;
    Ok(LlmResponse::with_usage(text.to_string(), v, "/usage/prompt_tokens", "/usage/completion_tokens"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_choices_and_filters() {
        let v = json!({"choices": [{"message": {"content": "<html></html>"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 5, "completion_tokens": 7}});
        assert_eq!(parse(&v).unwrap().output_tokens, 7);
        assert_eq!(
            parse(&json!({"choices": [{"message": {"content": ""}, "finish_reason": "content_filter"}]})).unwrap_err().code,
            ErrorCode::ContentFiltered
        );
        assert_eq!(parse(&json!({"choices": []})).unwrap_err().code, ErrorCode::ServerError);
    }
}
