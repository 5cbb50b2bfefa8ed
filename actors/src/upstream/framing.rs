//! Newline-delimited JSON-RPC framing for stdio upstreams, bounded in memory.
//!
//! A stdio upstream writes one JSON-RPC message (or batch) per line. The framer turns the bytes
//! it reads into [`Frame`]s: good messages, bad lines (named, so the caller can count and skip
//! them without dropping the link), and oversized lines. An oversized line is never held whole:
//! past the limit its bytes only stream through [`OwnId`], which reads the message's own
//! top-level `id` (never one nested in what it carries), so the caller can fail that one
//! request. Memory stays O(`max_message_bytes`) whatever the upstream writes.

use serde_json::Value;

use crate::mcp::jsonrpc::{self, Kind};
use crate::mcp::own_id::OwnId;
use crate::mcp::relayed::RawResult;
/// Reasons quoted in [`BadFrame`] are cut to this many characters.
const REASON_CHARS: usize = 100;

/// One unit of upstream output.
#[derive(Debug, Clone)]
pub enum Frame {
    /// A valid JSON-RPC message (a batch yields one per element).
    Message(Value),
    /// An answer with a plain result, kept as read (`mcp::relayed`).
    Raw(RawResult),
    /// A line (or batch element) that cannot be used; skip it and keep reading.
    Bad(BadFrame),
    /// A line longer than the limit; `id` is the message's own JSON-RPC id, if it has one
    /// that can be read, and `bytes` the line's length (without its line ending).
    Oversized { id: Option<Value>, bytes: usize },
}

/// The same frame: a result kept as read equals the same answer as a tree.
impl PartialEq for Frame {
    fn eq(&self, other: &Frame) -> bool {
        let tree = |f: &Frame| match f {
            Frame::Message(v) => Some(v.clone()),
            Frame::Raw(r) => Some(r.clone().into_value()),
            _ => None,
        };
        match (self, other) {
            (Frame::Bad(a), Frame::Bad(b)) => a == b,
            (Frame::Oversized { id: a, bytes: x }, Frame::Oversized { id: b, bytes: y }) => a == b && x == y,
            (a, b) => tree(a).is_some() && tree(a) == tree(b),
        }
    }
}

/// Why a line was refused. The strings are short reasons, never the payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadFrame {
    NotUtf8,
    NotJson(String),
    NotJsonRpc(String),
}

impl std::fmt::Display for BadFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadFrame::NotUtf8 => write!(f, "the line is not UTF-8"),
            BadFrame::NotJson(why) => write!(f, "the line is not JSON: {why}"),
            BadFrame::NotJsonRpc(why) => write!(f, "the line is not a JSON-RPC message: {why}"),
        }
    }
}

/// An oversized line being skipped: its own id as read so far, its length so far, and its last
/// byte (a `\r` before the newline is not counted).
#[derive(Debug)]
struct Discard {
    id: OwnId,
    bytes: usize,
    last: Option<u8>,
}

impl Discard {
    fn push(&mut self, seg: &[u8]) {
        self.id.feed(seg);
        self.bytes += seg.len();
        self.last = seg.last().copied().or(self.last);
    }
}

/// Incremental line framer: feed bytes as they arrive, take out whole frames.
#[derive(Debug)]
pub struct LineFramer {
    max: usize,
    /// The partial line, at most `max + 1` bytes (the extra byte may be a `\r` that is stripped).
    buf: Vec<u8>,
    /// Set while the current line is over the limit.
    discard: Option<Discard>,
}

impl LineFramer {
    /// A framer that refuses lines longer than `max_message_bytes` (line ending excluded).
    pub fn new(max_message_bytes: usize) -> Self {
        LineFramer { max: max_message_bytes, buf: Vec::new(), discard: None }
    }

    /// Takes a chunk of output; returns the frames of the lines it completes. A partial line
    /// stays buffered (or, past the limit, summarised) until its newline arrives.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Frame> {
        let mut out = Vec::new();
        let mut rest = chunk;
        while let Some(pos) = rest.iter().position(|b| *b == b'\n') {
            let seg = &rest[..pos];
            rest = &rest[pos + 1..];
            if self.buf.is_empty() && self.discard.is_none() && seg.len() <= self.max.saturating_add(1) {
                // The whole line is in this chunk: no copy.
                self.line(seg, &mut out);
            } else {
                self.push(seg);
                self.end_line(&mut out);
            }
        }
        self.push(rest);
        out
    }

    /// At end of stream: the frames of a last line that had no newline, if any.
    pub fn finish(&mut self) -> Vec<Frame> {
        let mut out = Vec::new();
        if !self.buf.is_empty() || self.discard.is_some() {
            self.end_line(&mut out);
        }
        out
    }

    /// Bytes held for the current partial line (for tests of the memory bound).
    #[doc(hidden)]
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Adds bytes of the current line, switching to discard mode once it passes the limit.
    fn push(&mut self, seg: &[u8]) {
        if seg.is_empty() {
            return;
        }
        if let Some(d) = &mut self.discard {
            d.push(seg);
            return;
        }
        // `max + 1`: a line of exactly `max` bytes may still carry a `\r` before its newline.
        if self.buf.len() + seg.len() <= self.max.saturating_add(1) {
            self.buf.extend_from_slice(seg);
            return;
        }
        let mut d = Discard { id: OwnId::new(), bytes: 0, last: None };
        d.push(&std::mem::take(&mut self.buf));
        d.push(seg);
        self.discard = Some(d);
    }

    fn end_line(&mut self, out: &mut Vec<Frame>) {
        if let Some(d) = self.discard.take() {
            let bytes = d.bytes - usize::from(d.last == Some(b'\r'));
            out.push(Frame::Oversized { id: d.id.answers(), bytes });
            return;
        }
        let line = std::mem::take(&mut self.buf);
        self.line(&line, out);
    }

    /// One whole line (without its `\n`, at most `max + 1` bytes).
    fn line(&self, raw: &[u8], out: &mut Vec<Frame>) {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.len() > self.max {
            out.push(Frame::Oversized { id: OwnId::of(line), bytes: line.len() });
            return;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let Ok(text) = std::str::from_utf8(line) else {
            out.push(Frame::Bad(BadFrame::NotUtf8));
            return;
        };
        if let Some(raw) = RawResult::read(text) {
            out.push(Frame::Raw(raw));
            return;
        }
        let value: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                out.push(Frame::Bad(BadFrame::NotJson(short(&e.to_string()))));
                return;
            }
        };
        match value {
            Value::Array(items) if items.is_empty() => {
                out.push(Frame::Bad(BadFrame::NotJsonRpc("an empty batch is not a valid JSON-RPC message".into())));
            }
            Value::Array(items) => out.extend(items.into_iter().map(classify)),
            other => out.push(classify(other)),
        }
    }
}

fn classify(v: Value) -> Frame {
    match jsonrpc::kind(&v) {
        Kind::Invalid(why) => Frame::Bad(BadFrame::NotJsonRpc(short(&why))),
        _ => Frame::Message(v),
    }
}

fn short(s: &str) -> String {
    if s.chars().count() <= REASON_CHARS {
        return s.to_string();
    }
    let mut cut: String = s.chars().take(REASON_CHARS).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(id: i64) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "result": {}})
    }

    fn line(v: &Value) -> Vec<u8> {
        let mut s = serde_json::to_vec(v).unwrap();
        s.push(b'\n');
        s
    }

    #[test]
    fn whole_lines_and_partial_lines() {
        let mut f = LineFramer::new(1024);
        let mut bytes = line(&msg(1));
        bytes.extend(line(&msg(2)));
        let (a, b) = bytes.split_at(30);
        let mut frames = f.feed(a);
        assert!(frames.is_empty(), "no newline yet");
        frames.extend(f.feed(b));
        assert_eq!(frames, vec![Frame::Message(msg(1)), Frame::Message(msg(2))]);
        assert!(f.finish().is_empty());
        assert_eq!(f.buffered(), 0);
    }

    #[test]
    fn plain_results_are_kept_as_read_and_the_rest_are_trees() {
        let mut f = LineFramer::new(1024);
        let frames = f.feed(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":1}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":1,\"message\":\"m\"}}\n[{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}]\n");
        assert!(matches!(&frames[..], [Frame::Raw(r), Frame::Message(_), Frame::Message(_)] if r.id == json!(1)), "{frames:?}");
        assert_ne!(frames[0], Frame::Message(msg(1)), "equal only to the same answer");
    }

    #[test]
    fn a_result_nested_deeper_than_a_tree_takes_is_refused_as_before() {
        let mut f = LineFramer::new(1 << 20);
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"a\":{}1{}}}}}\n", "[".repeat(300), "]".repeat(300));
        assert!(matches!(&f.feed(line.as_bytes())[..], [Frame::Bad(BadFrame::NotJson(_))]));
        // Text a tree cannot hold (half a surrogate pair), likewise.
        let half = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"\\ud83d\"}}\n";
        assert!(matches!(&f.feed(half)[..], [Frame::Bad(BadFrame::NotJson(_))]));
    }

    #[test]
    fn crlf_and_blank_lines() {
        let mut f = LineFramer::new(1024);
        let frames = f.feed(b"\n\r\n   \n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\r\n\n");
        assert_eq!(frames, vec![Frame::Message(json!({"jsonrpc": "2.0", "method": "x"}))]);
    }

    #[test]
    fn bad_lines_are_named_and_do_not_stop_framing() {
        let mut f = LineFramer::new(1024);
        let frames = f.feed(b"\xff\xfe\nnot json\n{\"a\":1}\n[]\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
        assert_eq!(frames.len(), 5);
        assert_eq!(frames[0], Frame::Bad(BadFrame::NotUtf8));
        assert!(matches!(&frames[1], Frame::Bad(BadFrame::NotJson(_))));
        assert!(matches!(&frames[2], Frame::Bad(BadFrame::NotJsonRpc(why)) if why.contains("jsonrpc")));
        assert!(matches!(&frames[3], Frame::Bad(BadFrame::NotJsonRpc(why)) if why.contains("empty batch")));
        assert_eq!(frames[4], Frame::Message(msg(1)));
    }

    #[test]
    fn reasons_do_not_quote_the_payload() {
        let mut f = LineFramer::new(1 << 20);
        let junk = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"{}\" trailing {}\n", "x".repeat(5000), "y".repeat(5000));
        match &f.feed(junk.as_bytes())[..] {
            [Frame::Bad(BadFrame::NotJson(why))] => assert!(why.chars().count() <= REASON_CHARS + 1, "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn batches_yield_each_element() {
        let mut f = LineFramer::new(1024);
        let frames = f.feed(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}},3,{\"jsonrpc\":\"2.0\",\"method\":\"n\"}]\n");
        assert_eq!(frames.len(), 3);
        assert_eq!(frames[0], Frame::Message(msg(1)));
        assert!(matches!(frames[1], Frame::Bad(BadFrame::NotJsonRpc(_))));
        assert!(matches!(frames[2], Frame::Message(_)));
    }

    #[test]
    fn finish_takes_an_unterminated_last_line() {
        let mut f = LineFramer::new(1024);
        let bytes = serde_json::to_vec(&msg(9)).unwrap();
        assert!(f.feed(&bytes).is_empty());
        assert_eq!(f.finish(), vec![Frame::Message(msg(9))]);
        assert!(f.finish().is_empty());
    }

    #[test]
    fn oversized_line_is_not_buffered_and_keeps_its_id() {
        let max = 1000;
        let mut f = LineFramer::new(max);
        let big = json!({"jsonrpc": "2.0", "id": 42, "result": {"text": "z".repeat(100_000)}});
        let bytes = line(&big);
        let mut frames = Vec::new();
        for c in bytes.chunks(777) {
            frames.extend(f.feed(c));
            assert!(f.buffered() <= max + 1, "{}", f.buffered());
        }
        assert_eq!(frames, vec![Frame::Oversized { id: Some(json!(42)), bytes: bytes.len() - 1 }]);
        // The framer is back to normal for the next line.
        assert_eq!(f.feed(&line(&msg(1))), vec![Frame::Message(msg(1))]);
        assert_eq!(f.buffered(), 0);
    }

    #[test]
    fn oversized_id_found_in_the_tail() {
        let mut f = LineFramer::new(100);
        let text = format!("{{\"jsonrpc\":\"2.0\",\"result\":{{\"t\":\"{}\"}},\"id\" : \"req-7\"}}\n", "q".repeat(20_000));
        let frames = f.feed(text.as_bytes());
        assert_eq!(frames, vec![Frame::Oversized { id: Some(json!("req-7")), bytes: text.len() - 1 }]);
    }

    #[test]
    fn oversized_without_id() {
        let mut f = LineFramer::new(10);
        let frames = f.feed(&[b'a'; 50_000]);
        assert!(frames.is_empty());
        assert_eq!(f.buffered(), 0, "only what reads its id");
        assert_eq!(f.feed(b"\r\n"), vec![Frame::Oversized { id: None, bytes: 50_000 }]);
    }

    #[test]
    fn limit_is_on_the_line_without_its_ending() {
        let v = msg(1);
        let n = serde_json::to_vec(&v).unwrap().len();
        let mut exact = serde_json::to_vec(&v).unwrap();
        exact.extend(b"\r\n");
        assert_eq!(LineFramer::new(n).feed(&exact), vec![Frame::Message(v.clone())]);
        assert!(matches!(LineFramer::new(n - 1).feed(&exact)[..], [Frame::Oversized { bytes, .. }] if bytes == n));
        // Byte by byte, the same answers.
        let mut f = LineFramer::new(n - 1);
        let frames: Vec<Frame> = exact.iter().flat_map(|b| f.feed(&[*b])).collect();
        assert!(matches!(frames[..], [Frame::Oversized { bytes, .. }] if bytes == n));
    }

    /// bob's arguments, echoed first, carry alice's upstream id; the server's own id comes last
    /// (as the TypeScript SDK writes answers): the oversized answer is bob's (issue 60, item 4).
    #[test]
    fn an_oversized_answer_is_the_request_it_names_not_one_an_argument_names() {
        let echoed = format!(
            "{{\"result\":{{\"structuredContent\":{{\"id\":7,\"padding\":\"{}\"}},\"content\":[]}},\"jsonrpc\":\"2.0\",\"id\":8}}\n",
            "p".repeat(20_000)
        );
        for chunk in [7, 4096, echoed.len()] {
            let mut f = LineFramer::new(1000);
            let frames: Vec<Frame> = echoed.as_bytes().chunks(chunk).flat_map(|c| f.feed(c)).collect();
            assert_eq!(frames, vec![Frame::Oversized { id: Some(json!(8)), bytes: echoed.len() - 1 }], "in chunks of {chunk}");
        }
        // With no id of its own it fails no one.
        let orphan = format!("{{\"result\":{{\"id\":7,\"t\":\"{}\"}},\"jsonrpc\":\"2.0\"}}\n", "p".repeat(5000));
        assert_eq!(LineFramer::new(1000).feed(orphan.as_bytes()), vec![Frame::Oversized { id: None, bytes: orphan.len() - 1 }]);
    }
}
