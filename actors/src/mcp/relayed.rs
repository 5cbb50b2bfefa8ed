//! An upstream's message on its way to a host: a tree, or, for the usual answer (a plain
//! result), the result's bytes as the upstream wrote them. Such an answer is routed by its id
//! and written out with the host's id in front of those bytes: building the result's tree,
//! dropping it and serializing it again were a tenth of a proxied call's CPU. Whatever looks
//! at a result (a task, a 2026 result type, results shaped or renamed) takes the tree.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::mcp::jsonrpc;

/// A message travelling toward a host.
#[derive(Debug, Clone)]
pub enum Relayed {
    Tree(Value),
    Raw(RawResult),
}

/// `{"jsonrpc": "2.0", "id": <id>, "result": {...}}` with the result kept as read.
#[derive(Debug, Clone)]
pub struct RawResult {
    /// The upstream's id until the route is found, then the host's.
    pub id: Value,
    result: Box<RawValue>,
    /// `result.isError` is `true` (a tool's own failure), once read ([`RawResult::plain`]).
    is_error: Option<bool>,
}

/// The envelope of a plain result: exactly these three members, nothing else.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<'a> {
    jsonrpc: &'a str,
    id: Value,
    result: Box<RawValue>,
}

/// What is read of a result: members that send it the tree's way, and `isError`.
#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(rename = "isError")]
    is_error: Option<bool>,
    #[serde(borrow, default)]
    task: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "resultType")]
    result_type: Option<&'a RawValue>,
}

impl RawResult {
    /// A line that is an answer with an object result under a string or number id; None for
    /// anything else, which is then read as a tree.
    pub fn read(line: &str) -> Option<RawResult> {
        // Requests and notifications are not tried. An object only: serde would read an array
        // into the envelope by position.
        if !line.trim_start().starts_with('{') || !line.contains("\"result\"") {
            return None;
        }
        // A CR is whitespace between tokens here (a string cannot hold one), but a host that
        // reads lines the universal way would cut the answer there: the tree's way drops it.
        if line.contains('\r') {
            return None;
        }
        let env: Envelope = serde_json::from_str(line).ok()?;
        let result = env.result.get();
        if env.jsonrpc != "2.0" || !(env.id.is_string() || env.id.is_number()) || !result.starts_with('{') {
            return None;
        }
        // Skipping a value (what `RawValue` does) lets through what building a tree refuses:
        // that goes the tree's way, and is refused there as before.
        if !reads_as_a_tree(result.as_bytes()) {
            return None;
        }
        Some(RawResult { id: env.id, result: env.result, is_error: None })
    }

    /// The result, read only for what sends it the tree's way (`task`, `resultType`) and for
    /// `isError`: Ok when it may go out as read, Err (given back) when not.
    pub fn plain(mut self) -> Result<RawResult, RawResult> {
        match self.peek() {
            Some((true, is_error)) => {
                self.is_error = Some(is_error);
                Ok(self)
            }
            _ => Err(self),
        }
    }

    /// Whether the result is a tool's own failure (`isError: true`), as the tree would say.
    pub fn is_error(&self) -> bool {
        self.is_error.unwrap_or_else(|| match self.peek() {
            Some((_, is_error)) => is_error,
            // A duplicate or non-boolean `isError`: the tree's reading (the last one counts).
            None => serde_json::from_str::<Value>(self.result.get()).is_ok_and(|r| r.get("isError") == Some(&Value::Bool(true))),
        })
    }

    /// (whether the result is plain, `isError`); None when `isError` is not one boolean.
    fn peek(&self) -> Option<(bool, bool)> {
        let peek: Peek = serde_json::from_str(self.result.get()).ok()?;
        Some((peek.task.is_none() && peek.result_type.is_none(), peek.is_error == Some(true)))
    }

    /// The whole answer as a tree.
    pub fn into_value(self) -> Value {
        // `read` let through only what reads as a tree; should one not, the host is told so
        // (never a result made up).
        let result: Value = match serde_json::from_str(self.result.get()) {
            Ok(result) => result,
            Err(e) => {
                tracing::warn!(component = "upstream", event = "unreadable_result", error = %e, "an upstream result could not be read as a tree; answered with an error");
                return jsonrpc::error(self.id, jsonrpc::code::INTERNAL_ERROR, format!("the server's result could not be read ({e})"));
            }
        };
        let mut answer = serde_json::Map::with_capacity(3);
        answer.insert("jsonrpc".into(), "2.0".into());
        answer.insert("id".into(), self.id);
        answer.insert("result".into(), result);
        Value::Object(answer)
    }

    /// The answer's JSON text: the id written, the result's bytes copied as they came.
    pub fn to_json(&self) -> Vec<u8> {
        let result = self.result.get();
        let mut out = Vec::with_capacity(result.len() + 48);
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        // An id is a string or a number: writing it cannot fail.
        let _ = serde_json::to_writer(&mut out, &self.id);
        out.extend_from_slice(b",\"result\":");
        out.extend_from_slice(result.as_bytes());
        out.push(b'}');
        out
    }
}

/// The deepest a result kept as read may nest: within what the tree's parser takes
/// (`serde_json` stops at 128 levels).
const MAX_DEPTH: usize = 100;
/// The most digits of a number kept as read: f64 overflows past 309 integer digits, and a tree
/// refuses such a number.
const MAX_DIGITS: usize = 300;

/// Whether valid JSON, read by skipping it, also reads as a tree: building one refuses nesting
/// over 128, a lone surrogate escape and a number out of f64's range, which skipping lets pass.
/// Conservative: a number with an exponent, or of more than `MAX_DIGITS` digits, is refused.
fn reads_as_a_tree(json: &[u8]) -> bool {
    let (mut i, mut depth, mut digits, mut in_number) = (0usize, 0usize, 0usize, false);
    while let Some(&b) = json.get(i) {
        i += 1;
        match b {
            b'0'..=b'9' => {
                in_number = true;
                digits += 1;
                if digits > MAX_DIGITS {
                    return false;
                }
                continue;
            }
            b'-' | b'.' => {
                in_number = true;
                continue;
            }
            b'e' | b'E' if in_number => return false,
            _ => (in_number, digits) = (false, 0),
        }
        match b {
            b'"' => match string_end(json, i) {
                Some(end) => i = end,
                None => return false,
            },
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return false;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
}

/// Past the closing quote of the string whose text starts at `i`; None when an escape in it
/// does not read as text (a surrogate without its pair).
fn string_end(json: &[u8], mut i: usize) -> Option<usize> {
    loop {
        match *json.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' if json.get(i + 1) == Some(&b'u') => {
                let unit = hex4(json, i + 2)?;
                i += 6;
                match unit {
                    0xD800..=0xDBFF => {
                        // A high surrogate reads only with a low one right after it.
                        if json.get(i..i + 2) != Some(b"\\u") || !(0xDC00..=0xDFFF).contains(&hex4(json, i + 2)?) {
                            return None;
                        }
                        i += 6;
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => {}
                }
            }
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

fn hex4(json: &[u8], at: usize) -> Option<u16> {
    u16::from_str_radix(std::str::from_utf8(json.get(at..at + 4)?).ok()?, 16).ok()
}

impl Relayed {
    pub fn into_value(self) -> Value {
        match self {
            Relayed::Tree(v) => v,
            Relayed::Raw(r) => r.into_value(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_plain_result_is_kept_as_read_and_reads_back_the_same() {
        let line = r#"{"result":{"content":[{"type":"text","text":"Echo: hi \"x\" é"}],"z":1, "a":[1,2]},"jsonrpc":"2.0","id":5}"#;
        let raw = RawResult::read(line).expect("a result").plain().expect("a plain one");
        assert!(!raw.is_error());
        let tree: Value = serde_json::from_str(line).unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&raw.to_json()).unwrap(), tree);
        assert_eq!(RawResult::read(line).unwrap().into_value(), tree);
        // The result's own bytes, order and spacing kept.
        assert!(String::from_utf8(raw.to_json()).unwrap().ends_with(r#""z":1, "a":[1,2]}}"#));
    }

    #[test]
    fn the_host_id_is_written_in_place_of_the_upstream_one() {
        let mut raw = RawResult::read(r#"{"jsonrpc":"2.0","id":"up-1","result":{}}"#).unwrap();
        raw.id = json!("host \"7\"");
        assert_eq!(serde_json::from_slice::<Value>(&raw.to_json()).unwrap(), json!({"jsonrpc": "2.0", "id": "host \"7\"", "result": {}}));
    }

    #[test]
    fn is_error_is_read() {
        let read = |line: &str| RawResult::read(line).unwrap();
        assert!(read(r#"{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[]}}"#).is_error());
        assert!(read(r#"{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[]}}"#).plain().unwrap().is_error());
        assert!(!read(r#"{"jsonrpc":"2.0","id":1,"result":{"isError":false}}"#).plain().unwrap().is_error());
        assert!(!read(r#"{"jsonrpc":"2.0","id":1,"result":{"isError":null}}"#).plain().unwrap().is_error());
    }

    #[test]
    fn results_something_here_looks_at_are_not_plain() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"isError":"yes"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"isError":true,"isError":false}}"#,
        ] {
            let raw = RawResult::read(line).expect("still an answer with a result");
            assert!(raw.plain().is_err(), "{line}");
        }
    }

    #[test]
    fn anything_but_an_answer_with_an_object_result_is_left_to_the_tree() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"extra":true}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":[1],"result":{}}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":[1]}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":"text"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"result":1}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#,
            r#"["2.0",1,{"result":{}}]"#,
        ] {
            assert!(RawResult::read(line).is_none(), "{line}");
        }
    }

    #[test]
    fn a_result_with_a_carriage_return_between_tokens_goes_the_trees_way_without_it() {
        let line = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[],\r\"x\":1}}";
        assert!(RawResult::read(line).is_none(), "kept as read, its CR would reach the host");
        let tree: Value = serde_json::from_str(line).unwrap();
        assert!(!serde_json::to_string(&tree).unwrap().contains('\r'));
    }

    #[test]
    fn a_result_too_deep_for_a_tree_is_not_kept_as_read() {
        let nested = |n: usize| format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":{}1{}}}}}"#, "[".repeat(n), "]".repeat(n));
        assert!(RawResult::read(&nested(MAX_DEPTH - 1)).is_some());
        assert!(RawResult::read(&nested(MAX_DEPTH)).is_none(), "the result's own object is a level");
        assert!(RawResult::read(&nested(5000)).is_none());
        // Brackets inside strings are text, escaped quotes too.
        let text = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"t":"\"{}"}}}}"#, "[".repeat(500));
        assert!(RawResult::read(&text).is_some());
        // Whatever is kept as read reads back as a tree.
        let deepest = RawResult::read(&nested(MAX_DEPTH - 1)).unwrap();
        assert!(deepest.into_value()["result"]["a"].is_array());
    }

    #[test]
    fn what_a_tree_refuses_is_not_kept_as_read() {
        let line = |result: &str| format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
        for refused in [r#"{"t":"\ud800"}"#, r#"{"t":"\udc00 x"}"#, r#"{"t":"\ud83d\u0041"}"#, r#"{"n":1e400}"#, r#"{"n":1.5E3}"#] {
            assert!(RawResult::read(&line(refused)).is_none(), "{refused}");
            assert!(serde_json::from_str::<Value>(&line(refused)).is_err() || refused.contains('E'), "{refused}");
        }
        let long = format!(r#"{{"n":{}}}"#, "9".repeat(MAX_DIGITS + 1));
        assert!(RawResult::read(&line(&long)).is_none());
        for kept in [r#"{"t":"\ud83d\ude00 ok","u":"\u00e9\\u"}"#, r#"{"n":-1.25,"b":[true,false,null],"e":"1e400"}"#] {
            let raw = RawResult::read(&line(kept)).unwrap_or_else(|| panic!("{kept}"));
            assert_eq!(raw.into_value(), serde_json::from_str::<Value>(&line(kept)).unwrap(), "{kept}");
        }
    }

    #[test]
    fn an_unreadable_result_is_an_error_never_a_made_up_one() {
        let raw = RawResult { id: json!(3), result: RawValue::from_string(r#"{"n":1e400}"#.into()).unwrap(), is_error: None };
        let answer = raw.into_value();
        assert_eq!(answer["id"], json!(3));
        assert_eq!(answer["error"]["code"], json!(jsonrpc::code::INTERNAL_ERROR), "{answer}");
        assert!(answer.get("result").is_none());
    }

    #[test]
    fn is_error_reads_as_the_tree_does() {
        let read = |r: &str| RawResult::read(&format!(r#"{{"jsonrpc":"2.0","id":1,"result":{r}}}"#)).unwrap();
        assert!(read(r#"{"task":{"taskId":"t"},"isError":true}"#).is_error(), "not plain, still an error");
        assert!(read(r#"{"isError":false,"isError":true}"#).is_error(), "the last one counts");
        assert!(!read(r#"{"isError":true,"isError":false}"#).is_error());
        assert!(!read(r#"{"isError":"true"}"#).is_error());
    }
}
