//! Ollama (`POST {base}/api/chat`), streamed: one JSON object a line (NDJSON), each with
//! `message.content`; the last has `"done": true`, `done_reason` and the token counts.

use serde_json::{json, Value};

use super::stream::{Chunk, Decoder, Line, Lines, Stop};
use super::{from_stream_error, Endpoint, ErrorCode, LlmError, LlmRequest, LlmResponse, Wire};

/// The Ollama chat wire format.
#[derive(Default)]
pub struct Chat;

impl Wire for Chat {
    const NAME: &'static str = "ollama";
    const DEFAULT_BASE: &'static str = "http://127.0.0.1:11434";
    const DEFAULT_MODEL: &'static str = "qwen2.5-coder:14b";
    const STREAM_TYPE: Option<&'static str> = None;

    fn request(&self, ep: &Endpoint, req: &LlmRequest) -> (reqwest::RequestBuilder, Value) {
        let rb = ep.client.post(format!("{}/api/chat", ep.base)).header("x-request-id", &req.request_id);
        let body = json!({
            "model": ep.model,
            "stream": true,
            "messages": [{"role": "system", "content": req.system}, {"role": "user", "content": req.user}],
            "options": {"temperature": req.temperature, "num_predict": req.max_tokens},
        });
        (ep.bearer(rb), body)
    }

    fn decoder(&self) -> Box<dyn Decoder> {
        Box::new(Objects { lines: Lines::with_limit(1 << 20) })
    }

    fn parse(v: &Value) -> Result<LlmResponse, LlmError> {
        parse(v)
    }
}

/// The streamed answer's lines.
struct Objects {
    lines: Lines,
}

impl Decoder for Objects {
    fn feed(&mut self, bytes: &[u8]) -> Vec<Chunk> {
        let mut out = Vec::new();
        for l in self.lines.feed(bytes) {
            line(l, &mut out);
        }
        out
    }

    fn finish(&mut self) -> Vec<Chunk> {
        let mut out = Vec::new();
        if let Some(l) = self.lines.finish() {
            line(l, &mut out);
        }
        out
    }
}

fn line(l: Line, out: &mut Vec<Chunk>) {
    let text = match l {
        Line::TooLong => return out.push(Chunk::Failed(LlmError::new(ErrorCode::ServerError, "the answer carried a line over 1 MB"))),
        Line::Text(t) if t.trim().is_empty() => return,
        Line::Text(t) => t,
    };
    let Ok(v) = serde_json::from_str::<Value>(&text) else {
        return out.push(Chunk::Failed(LlmError::new(ErrorCode::ServerError, "the answer carried a line that is not JSON")));
    };
    if let Some(e) = v.get("error").and_then(Value::as_str) {
        return out.push(Chunk::Failed(from_stream_error("", e)));
    }
    if let Some(t) = v.pointer("/message/content").and_then(Value::as_str) {
        out.push(Chunk::Text(t.to_string()));
    }
    if v.get("done").and_then(Value::as_bool) == Some(true) {
        let n = |k: &str| v.get(k).and_then(Value::as_u64);
        out.push(Chunk::Usage { input: n("prompt_eval_count"), output: n("eval_count") });
        let cut = v.get("done_reason").and_then(Value::as_str) == Some("length");
        out.push(Chunk::Stop(if cut { Stop::Truncated } else { Stop::Done }));
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
    let cut = v.get("done_reason").and_then(Value::as_str) == Some("length");
    Ok(LlmResponse::with_usage(text.to_string(), v, "/prompt_eval_count", "/eval_count").truncated(cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_message_and_counts() {
        let v = json!({"message": {"role": "assistant", "content": "<html>"}, "done": true, "prompt_eval_count": 3, "eval_count": 4});
        assert_eq!(parse(&v).unwrap(), LlmResponse { text: "<html>".into(), input_tokens: 3, output_tokens: 4, stop: Stop::Done });
        assert_eq!(parse(&json!({"done": true})).unwrap_err().code, ErrorCode::ServerError);
    }

    fn decode(wire: &str) -> Vec<Chunk> {
        let mut d = Chat.decoder();
        let mut out = Vec::new();
        for b in wire.as_bytes().chunks(2) {
            out.extend(d.feed(b));
        }
        out.extend(d.finish());
        out
    }

    #[test]
    fn decodes_a_streamed_answer() {
        let wire = concat!(
            "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"<html>\"},\"done\":false}\n",
            "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"</html>\"},\"done\":false}\n",
            "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"length\",\"prompt_eval_count\":3,\"eval_count\":4}",
        );
        assert_eq!(
            decode(wire),
            vec![
                Chunk::Text("<html>".into()),
                Chunk::Text("</html>".into()),
                Chunk::Text(String::new()),
                Chunk::Usage { input: Some(3), output: Some(4) },
                Chunk::Stop(Stop::Truncated),
            ]
        );
        assert!(matches!(&decode("{\"error\":\"model 'x' not found\"}\n")[..], [Chunk::Failed(e)] if e.message.contains("not found")));
    }
}
