//! Ollama (`POST {base}/api/chat`, non-streaming).

use serde_json::{json, Value};

use super::{Endpoint, ErrorCode, LlmError, LlmRequest, LlmResponse, Wire};

/// The Ollama chat wire format (non-streaming).
#[derive(Default)]
pub struct Chat;

impl Wire for Chat {
    const NAME: &'static str = "ollama";
    const DEFAULT_BASE: &'static str = "http://127.0.0.1:11434";
    const DEFAULT_MODEL: &'static str = "qwen2.5-coder:14b";

    fn request(&self, ep: &Endpoint, req: &LlmRequest) -> (reqwest::RequestBuilder, Value) {
        let rb = ep.client.post(format!("{}/api/chat", ep.base)).header("x-request-id", &req.request_id);
        let body = json!({
            "model": ep.model,
            "stream": false,
            "messages": [{"role": "system", "content": req.system}, {"role": "user", "content": req.user}],
            "options": {"temperature": req.temperature, "num_predict": req.max_tokens},
        });
        (ep.bearer(rb), body)
    }

    fn parse(v: &Value) -> Result<LlmResponse, LlmError> {
        parse(v)
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
    Ok(LlmResponse::with_usage(text.to_string(), v, "/prompt_eval_count", "/eval_count"))
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
