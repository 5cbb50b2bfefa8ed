//! Ollama (`POST {base}/api/chat`, non-streaming).

use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::{http, post_json, ErrorCode, LlmClient, LlmError, LlmRequest, LlmResponse};

pub struct Ollama {
    client: reqwest::Client,
    base: String,
    key: Option<String>,
    model: String,
}

impl Ollama {
    pub const DEFAULT_BASE: &'static str = "http://127.0.0.1:11434";
    pub const DEFAULT_MODEL: &'static str = "qwen2.5-coder:14b";

    pub fn new(base: Option<&str>, key: Option<String>, model: Option<&str>) -> Self {
        Ollama {
            client: http(),
            base: base.unwrap_or(Self::DEFAULT_BASE).trim_end_matches('/').to_string(),
            key,
            model: model.unwrap_or(Self::DEFAULT_MODEL).to_string(),
        }
    }
}

pub(crate) fn parse(v: &Value) -> Result<LlmResponse, LlmError> {
    if let Some(e) = v.get("error").and_then(Value::as_str) {
        return Err(LlmError::new(ErrorCode::ServerError, e.to_string()));
    }
    let text = v
        .pointer("/message/content")
        .and_then(Value::as_str)
        .ok_or_else(|| LlmError::new(ErrorCode::ServerError, "the answer has no message content"))?;
    Ok(LlmResponse {
        text: text.to_string(),
        input_tokens: v.get("prompt_eval_count").and_then(Value::as_u64).unwrap_or(0),
        output_tokens: v.get("eval_count").and_then(Value::as_u64).unwrap_or(0),
    })
}

impl LlmClient for Ollama {
    fn provider(&self) -> &'static str {
        "ollama"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn complete(&self, req: LlmRequest) -> BoxFuture<'static, Result<LlmResponse, LlmError>> {
        let mut rb = self.client.post(format!("{}/api/chat", self.base)).header("x-request-id", &req.request_id);
        if let Some(k) = &self.key {
            rb = rb.bearer_auth(k);
        }
        let body = json!({
            "model": self.model,
            "stream": false,
            "messages": [{"role": "system", "content": req.system}, {"role": "user", "content": req.user}],
            "options": {"temperature": req.temperature, "num_predict": req.max_tokens},
        });
        Box::pin(async move { parse(&post_json(rb, &body).await?) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_message_and_counts() {
        let v = json!({"message": {"role": "assistant", "content": "<html>"}, "done": true, "prompt_eval_count": 3, "eval_count": 4});
        assert_eq!(parse(&v).unwrap(), LlmResponse { text: "<html>".into(), input_tokens: 3, output_tokens: 4 });
        assert_eq!(parse(&json!({"done": true})).unwrap_err().code, ErrorCode::ServerError);
    }
}
