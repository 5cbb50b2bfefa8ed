//! OpenAI Chat Completions (`POST {base}/chat/completions`), and any server that speaks it,
//! streamed: `data:` chunks with `choices[0].delta.content`, one with `finish_reason`, a last
//! one with `usage` (asked for with `stream_options.include_usage`), then `data: [DONE]`.

use serde_json::{json, Value};

use super::stream::{Chunk, Decoder, Stop};
use super::{from_stream_error, Endpoint, ErrorCode, LlmError, LlmRequest, LlmResponse, Wire};
use crate::mcp::sse;

/// The Chat Completions wire format.
#[derive(Default)]
pub struct ChatCompletions;

impl Wire for ChatCompletions {
    const NAME: &'static str = "openai";
    const DEFAULT_BASE: &'static str = "https://api.openai.com/v1";
    const DEFAULT_MODEL: &'static str = "gpt-4.1";
    const STREAM_TYPE: Option<&'static str> = Some("text/event-stream");

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
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        (ep.bearer(rb), body)
    }

    fn decoder(&self) -> Box<dyn Decoder> {
        Box::new(Chunks { sse: sse::Parser::with_limit(1 << 20) })
    }

    fn parse(v: &Value) -> Result<LlmResponse, LlmError> {
        parse(v)
    }
}

/// The streamed answer's chunks.
struct Chunks {
    sse: sse::Parser,
}

impl Decoder for Chunks {
    fn feed(&mut self, bytes: &[u8]) -> Vec<Chunk> {
        let mut out = Vec::new();
        for ev in self.sse.feed(bytes) {
            chunk(&ev, &mut out);
        }
        out
    }
}

fn chunk(ev: &sse::Event, out: &mut Vec<Chunk>) {
    if ev.oversized {
        return out.push(Chunk::Failed(LlmError::new(ErrorCode::ServerError, "the answer carried a chunk over 1 MB")));
    }
    let data = ev.data.trim();
    if data.is_empty() || data == "[DONE]" {
        return;
    }
    let Ok(v) = serde_json::from_str::<Value>(data) else {
        return out.push(Chunk::Failed(LlmError::new(ErrorCode::ServerError, "the answer carried a chunk that is not JSON")));
    };
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        let etype = err.get("type").or_else(|| err.get("code")).and_then(Value::as_str).unwrap_or_default();
        let message = err.get("message").and_then(Value::as_str).unwrap_or_default();
        return out.push(Chunk::Failed(from_stream_error(etype, message)));
    }
    if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
        let n = |k: &str| u.get(k).and_then(Value::as_u64);
        out.push(Chunk::Usage { input: n("prompt_tokens"), output: n("completion_tokens") });
    }
    let Some(choice) = v.pointer("/choices/0") else { return };
    if let Some(refusal) = choice.pointer("/delta/refusal").and_then(Value::as_str).filter(|r| !r.is_empty()) {
        let text: String = refusal.chars().take(300).collect();
        return out.push(Chunk::Failed(LlmError::new(ErrorCode::ContentFiltered, format!("the model refused: {text}"))));
    }
    if let Some(t) = choice.pointer("/delta/content").and_then(Value::as_str) {
        out.push(Chunk::Text(t.to_string()));
    }
    match choice.get("finish_reason").and_then(Value::as_str) {
        Some("length") => out.push(Chunk::Stop(Stop::Truncated)),
        Some("content_filter") => {
            out.push(Chunk::Failed(LlmError::new(ErrorCode::ContentFiltered, "the provider's content filter stopped the answer")))
        }
        Some(_) => out.push(Chunk::Stop(Stop::Done)),
        None => {}
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
    let cut = choice.get("finish_reason").and_then(Value::as_str) == Some("length");
    Ok(LlmResponse::with_usage(text.to_string(), v, "/usage/prompt_tokens", "/usage/completion_tokens").truncated(cut))
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

    fn decode(wire: &str) -> Vec<Chunk> {
        let mut d = ChatCompletions.decoder();
        let mut out = Vec::new();
        for b in wire.as_bytes().chunks(3) {
            out.extend(d.feed(b));
        }
        out.extend(d.finish());
        out
    }

    #[test]
    fn decodes_a_streamed_answer_with_usage() {
        let wire = concat!(
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"<html>\"},\"finish_reason\":null}]}\n\n",
            ": keep-alive\n\n",
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
            "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":12}}\n\n",
            "data: [DONE]\n\n",
        );
        assert_eq!(
            decode(wire),
            vec![
                Chunk::Text(String::new()),
                Chunk::Text("<html>".into()),
                Chunk::Stop(Stop::Truncated),
                Chunk::Usage { input: Some(9), output: Some(12) },
            ]
        );
    }

    #[test]
    fn stream_errors_filters_and_refusals_fail_the_answer() {
        let e = decode("data: {\"error\":{\"message\":\"slow down\",\"type\":\"rate_limit_exceeded\"}}\n\n");
        assert!(matches!(&e[..], [Chunk::Failed(e)] if e.code == ErrorCode::RateLimit));
        let f = decode("data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"content_filter\"}]}\n\n");
        assert!(matches!(&f[..], [Chunk::Failed(e)] if e.code == ErrorCode::ContentFiltered));
        let r = decode("data: {\"choices\":[{\"delta\":{\"refusal\":\"no\"}}]}\n\n");
        assert!(matches!(&r[..], [Chunk::Failed(e)] if e.code == ErrorCode::ContentFiltered));
        assert_eq!(parse(&json!({"choices": [{"message": {"content": "x"}, "finish_reason": "length"}]})).unwrap().stop, Stop::Truncated);
    }
}
