//! OpenAI Chat Completions (`POST {base}/chat/completions`), and any server that speaks it.

use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::{http, post_json, ErrorCode, LlmClient, LlmError, LlmRequest, LlmResponse};

pub struct OpenAi {
    client: reqwest::Client,
    base: String,
    key: Option<String>,
    model: String,
}

impl OpenAi {
    pub const DEFAULT_BASE: &'static str = "https://api.openai.com/v1";
    pub const DEFAULT_MODEL: &'static str = "gpt-4.1";

    pub fn new(base: Option<&str>, key: Option<String>, model: Option<&str>) -> Self {
        OpenAi {
            client: http(),
            base: base.unwrap_or(Self::DEFAULT_BASE).trim_end_matches('/').to_string(),
            key,
            model: model.unwrap_or(Self::DEFAULT_MODEL).to_string(),
        }
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
    Ok(LlmResponse {
        text: text.to_string(),
        input_tokens: v.pointer("/usage/prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        output_tokens: v.pointer("/usage/completion_tokens").and_then(Value::as_u64).unwrap_or(0),
    })
}

impl LlmClient for OpenAi {
    fn provider(&self) -> &'static str {
        "openai"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn complete(&self, req: LlmRequest) -> BoxFuture<'static, Result<LlmResponse, LlmError>> {
        let mut rb = self
            .client
            .post(format!("{}/chat/completions", self.base))
            .header("x-request-id", &req.request_id)
            .header("X-Client-Request-Id", &req.request_id);
        if let Some(k) = &self.key {
            rb = rb.bearer_auth(k);
        }
        let body = json!({
            "model": self.model,
            "temperature": req.temperature,
            "max_tokens": req.max_tokens,
            "messages": [{"role": "system", "content": req.system}, {"role": "user", "content": req.user}],
        });
        Box::pin(async move { parse(&post_json(rb, &body).await?) })
    }
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
