//! Anthropic Messages API (`POST {base}/v1/messages`), streamed: SSE events `message_start`
//! (input tokens), `content_block_delta` (`text_delta`), `message_delta` (the stop reason and
//! output tokens), `message_stop`, `ping`, and `error`.

use serde_json::{json, Value};

use super::stream::{Chunk, Decoder, Stop};
use super::{from_stream_error, Endpoint, ErrorCode, LlmError, LlmRequest, LlmResponse, Wire};
use crate::mcp::sse;

/// The largest single event the stream may carry (a text delta is a few bytes).
const MAX_EVENT_BYTES: usize = 1 << 20;

/// The Messages API wire format.
#[derive(Default)]
pub struct Messages;

impl Wire for Messages {
    const NAME: &'static str = "anthropic";
    const DEFAULT_BASE: &'static str = "https://api.anthropic.com";
    const DEFAULT_MODEL: &'static str = "claude-sonnet-4-5";
    const STREAM_TYPE: Option<&'static str> = Some("text/event-stream");

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
            "stream": true,
        });
        (rb, body)
    }

    fn decoder(&self) -> Box<dyn Decoder> {
        Box::new(Events { sse: sse::Parser::with_limit(MAX_EVENT_BYTES) })
    }

    fn parse(v: &Value) -> Result<LlmResponse, LlmError> {
        parse(v)
    }
}

/// The text of a Messages API answer; a refusal is CONTENT_FILTERED.
pub(crate) fn parse(v: &Value) -> Result<LlmResponse, LlmError> {
    let stop = v.get("stop_reason").and_then(Value::as_str);
    if stop == Some("refusal") {
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
    Ok(LlmResponse::with_usage(text, v, "/usage/input_tokens", "/usage/output_tokens").truncated(stop == Some("max_tokens")))
}

/// The streamed answer's events.
struct Events {
    sse: sse::Parser,
}

impl Decoder for Events {
    fn feed(&mut self, bytes: &[u8]) -> Vec<Chunk> {
        let mut out = Vec::new();
        for ev in self.sse.feed(bytes) {
            event(ev, &mut out);
        }
        out
    }
}

fn event(ev: sse::Event, out: &mut Vec<Chunk>) {
    if ev.oversized {
        return out.push(Chunk::Failed(LlmError::new(ErrorCode::ServerError, "the answer carried an event over 1 MB")));
    }
    let v: Value = match serde_json::from_str(&ev.data) {
        Ok(v) => v,
        // An event with no data (a comment, a keep-alive) says nothing.
        Err(_) if ev.data.trim().is_empty() => return,
        Err(_) => return out.push(Chunk::Failed(LlmError::new(ErrorCode::ServerError, "the answer carried an event that is not JSON"))),
    };
    let count = |p: &str| v.pointer(p).and_then(Value::as_u64);
    let Some(kind) = v.get("type").and_then(Value::as_str).or(ev.event.as_deref()) else { return };
    match kind {
        "message_start" => {
            out.push(Chunk::Usage { input: count("/message/usage/input_tokens"), output: count("/message/usage/output_tokens") })
        }
        "content_block_delta" if v.pointer("/delta/type").and_then(Value::as_str) == Some("text_delta") => {
            out.push(Chunk::Text(v.pointer("/delta/text").and_then(Value::as_str).unwrap_or_default().to_string()))
        }
        "message_delta" => {
            out.push(Chunk::Usage { input: count("/usage/input_tokens"), output: count("/usage/output_tokens") });
            match v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                Some("refusal") => out.push(Chunk::Failed(LlmError::new(ErrorCode::ContentFiltered, "the model refused to answer"))),
                Some("max_tokens") => out.push(Chunk::Stop(Stop::Truncated)),
                Some(_) => out.push(Chunk::Stop(Stop::Done)),
                None => {}
            }
        }
        "error" => {
            let etype = v.pointer("/error/type").and_then(Value::as_str).unwrap_or_default();
            out.push(Chunk::Failed(from_stream_error(etype, v.pointer("/error/message").and_then(Value::as_str).unwrap_or_default())))
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_text_blocks_and_usage() {
        let v = json!({"content": [{"type": "text", "text": "<html>"}, {"type": "text", "text": "</html>"}], "usage": {"input_tokens": 10, "output_tokens": 20}, "stop_reason": "end_turn"});
        assert_eq!(parse(&v).unwrap(), LlmResponse { text: "<html></html>".into(), input_tokens: 10, output_tokens: 20, stop: Stop::Done });
        assert_eq!(parse(&json!({"stop_reason": "refusal", "content": []})).unwrap_err().code, ErrorCode::ContentFiltered);
        assert_eq!(parse(&json!({"id": "x"})).unwrap_err().code, ErrorCode::ServerError);
    }

    /// Feeds the stream one byte at a time: chunk boundaries never matter.
    fn decode(wire: &str) -> Vec<Chunk> {
        let mut d = Messages.decoder();
        let mut out = Vec::new();
        for b in wire.as_bytes().chunks(1) {
            out.extend(d.feed(b));
        }
        out.extend(d.finish());
        out
    }

    #[test]
    fn decodes_a_streamed_answer() {
        let wire = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: ping\ndata: {\"type\": \"ping\"}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"<html>é\"}}\n\n",
            "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"</html>\"}}\r\n\r\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":15}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        assert_eq!(
            decode(wire),
            vec![
                Chunk::Usage { input: Some(25), output: Some(1) },
                Chunk::Text("<html>é".into()),
                Chunk::Text("</html>".into()),
                Chunk::Usage { input: None, output: Some(15) },
                Chunk::Stop(Stop::Truncated),
            ]
        );
    }

    #[test]
    fn stream_errors_and_refusals_fail_the_answer() {
        let overloaded =
            decode("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n");
        assert!(matches!(&overloaded[..], [Chunk::Failed(e)] if e.code == ErrorCode::ServerError && e.retryable));
        let refused = decode("data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"refusal\"}}\n\n");
        assert!(matches!(refused.last(), Some(Chunk::Failed(e)) if e.code == ErrorCode::ContentFiltered));
        assert!(matches!(&decode("data: {not json\n\n")[..], [Chunk::Failed(_)]));
    }
}
