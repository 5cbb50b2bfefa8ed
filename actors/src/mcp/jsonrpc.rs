//! JSON-RPC 2.0 message helpers.
//!
//! The proxy forwards messages as `serde_json::Value` rather than typed MCP structs: a typed
//! round trip would drop fields this build does not know (new `_meta` keys, new content types,
//! newer protocol revisions), and transparency is the product's promise.

use serde_json::{json, Map, Value};

/// Objects up to this many keys are searched by comparing keys, not by hashing the one asked
/// for: `serde_json`'s ordered map hashes every lookup with SipHash, and JSON-RPC envelopes and
/// their params are a handful of keys (hashing keys, in lookups and while parsing, was about 7%
/// of a proxied call's CPU; scanning for the lookups saved 1.6% in an A/B, issue 53).
const SCAN_UP_TO: usize = 8;

/// `obj.get(key)`, by a scan when `obj` is small (a map's keys are unique: the same answer).
pub fn field<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if obj.len() <= SCAN_UP_TO {
        obj.iter().find_map(|(k, v)| (k == key).then_some(v))
    } else {
        obj.get(key)
    }
}

/// [`field`] of a value that may not be an object.
pub fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.as_object().and_then(|o| field(o, key))
}

/// `Value::pointer` walked by keys: `pointer` allocates a string for each token it unescapes,
/// which was 3% of a proxied call's CPU (issue 53). The same answer for every path; one with
/// an escape (`~`) goes to `pointer`.
pub trait At {
    fn at(&self, path: &str) -> Option<&Value>;
}

impl At for Value {
    fn at(&self, path: &str) -> Option<&Value> {
        if path.is_empty() {
            return Some(self);
        }
        if path.contains('~') {
            return self.pointer(path);
        }
        path.strip_prefix('/')?.split('/').try_fold(self, |cur, key| match cur {
            Value::Object(m) => field(m, key),
            // As `pointer` reads an index: digits, no sign, no leading zero.
            Value::Array(a) if key == "0" || (!key.starts_with(['0', '+']) && !key.is_empty()) => {
                key.parse::<usize>().ok().and_then(|i| a.get(i))
            }
            _ => None,
        })
    }
}

/// JSON-RPC error codes used by the proxy.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// MCP: resource not found.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// Implementation-defined: the upstream is not reachable right now.
    pub const UPSTREAM_UNAVAILABLE: i64 = -32001;
    /// Implementation-defined: request body over the configured cap.
    pub const PAYLOAD_TOO_LARGE: i64 = -32000;
    /// A limit of this service refused the request (`limits.*`); the message says which.
    pub const LIMITED: i64 = -32004;
}

/// What kind of JSON-RPC message a value is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Request,
    Notification,
    Response,
    Invalid(String),
}

/// Classifies a message, naming what is wrong with an invalid one.
pub fn kind(msg: &Value) -> Kind {
    let Some(obj) = msg.as_object() else {
        return Kind::Invalid("a JSON-RPC message must be a JSON object".into());
    };
    // One pass over the keys: this runs several times for every message.
    let (mut version, mut id, mut method, mut outcome) = (None, None, None, false);
    let mut look = |k: &str, v| match k {
        "jsonrpc" => version = Some(v),
        "id" => id = Some(v),
        "method" => method = Some(v),
        "result" | "error" => outcome = true,
        _ => {}
    };
    if obj.len() <= SCAN_UP_TO {
        obj.iter().for_each(|(k, v)| look(k, v));
    } else {
        for k in ["jsonrpc", "id", "method", "result", "error"] {
            if let Some(v) = obj.get(k) {
                look(k, v);
            }
        }
    }
    if version.and_then(Value::as_str) != Some("2.0") {
        return Kind::Invalid("\"jsonrpc\" must be the string \"2.0\"".into());
    }
    if let Some(method) = method {
        if !method.is_string() {
            return Kind::Invalid("\"method\" must be a string".into());
        }
        if let Some(id) = id {
            if !valid_id(id) {
                return Kind::Invalid("\"id\" must be a string or an integer".into());
            }
            return Kind::Request;
        }
        return Kind::Notification;
    }
    if id.is_some() && outcome {
        return Kind::Response;
    }
    Kind::Invalid("a message needs \"method\" (request or notification) or \"result\"/\"error\" with an \"id\" (response)".into())
}

fn valid_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

pub fn method(msg: &Value) -> Option<&str> {
    get(msg, "method").and_then(Value::as_str)
}

pub fn id(msg: &Value) -> Option<&Value> {
    get(msg, "id")
}

pub fn params(msg: &Value) -> &Value {
    get(msg, "params").unwrap_or(&Value::Null)
}

pub fn request(id: impl Into<Value>, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params})
}

pub fn notification(method: &str, params: Value) -> Value {
    if params.is_null() {
        json!({"jsonrpc": "2.0", "method": method})
    } else {
        json!({"jsonrpc": "2.0", "method": method, "params": params})
    }
}

pub fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub fn error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

pub fn error_with_data(id: Value, code: i64, message: impl Into<String>, data: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into(), "data": data}})
}

/// A result serialized once and answered to many requests, which differ only in their ids:
/// the answer is a short head with the id, then these bytes, shared, never copied here.
#[derive(Clone, Debug)]
pub struct PreparedResult(bytes::Bytes);

impl PreparedResult {
    pub fn new(result: &Value) -> Self {
        let json = serde_json::to_vec(result).expect("a Value serializes");
        let mut tail = Vec::with_capacity(json.len() + 12);
        tail.extend_from_slice(b",\"result\":");
        tail.extend_from_slice(&json);
        tail.push(b'}');
        PreparedResult(tail.into())
    }

    /// The answer to the request with `id`, in two parts to be written one after the other.
    pub fn answer(&self, id: &Value) -> [bytes::Bytes; 2] {
        [format!("{{\"jsonrpc\":\"2.0\",\"id\":{id}").into(), self.0.clone()]
    }
}

/// A hashable key for a JSON-RPC id (ids may be strings or numbers; `1` and `"1"` differ).
pub fn id_key(id: &Value) -> String {
    match id {
        Value::String(s) => ["s:", s].concat(),
        // A number's own Display: the Value's goes through the JSON serializer.
        Value::Number(n) => format!("n:{n}"),
        other => format!("n:{other}"),
    }
}

/// [`id_key`] for a lookup, on the stack for the ids hosts and routes use (numbers, short
/// strings): a table is looked up several times per call, and each key was an allocation.
pub fn key_of(id: &Value) -> IdKey {
    let mut short = Short { buf: [0; SHORT_KEY], len: 0 };
    let written = match id {
        Value::String(s) => short.push("s:") && short.push(s),
        Value::Number(n) => std::fmt::Write::write_fmt(&mut short, format_args!("n:{n}")).is_ok(),
        _ => false,
    };
    match written {
        true => IdKey::Short(short),
        false => IdKey::Long(id_key(id)),
    }
}

const SHORT_KEY: usize = 48;

/// A key made by [`key_of`]; reads as the `str` [`id_key`] gives.
pub enum IdKey {
    Short(Short),
    Long(String),
}

pub struct Short {
    buf: [u8; SHORT_KEY],
    len: usize,
}

impl Short {
    /// False (and nothing written) when `s` does not fit.
    fn push(&mut self, s: &str) -> bool {
        let end = self.len + s.len();
        if end > SHORT_KEY {
            return false;
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        true
    }
}

impl std::fmt::Write for Short {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.push(s).then_some(()).ok_or(std::fmt::Error)
    }
}

impl IdKey {
    pub fn as_str(&self) -> &str {
        match self {
            // Whole `str`s only are pushed, so the bytes are UTF-8.
            IdKey::Short(s) => std::str::from_utf8(&s.buf[..s.len]).unwrap_or_default(),
            IdKey::Long(s) => s,
        }
    }
}

impl std::ops::Deref for IdKey {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

/// The progress token a request carries in `params._meta.progressToken`, if any.
pub fn progress_token(msg: &Value) -> Option<&Value> {
    get(get(get(msg, "params")?, "_meta")?, "progressToken")
}

pub fn set_progress_token(msg: &mut Value, token: Value) {
    if let Some(meta) = msg.pointer_mut("/params/_meta").and_then(Value::as_object_mut) {
        meta.insert("progressToken".into(), token);
    }
}

/// Why a body holds no message; [`BodyError::code`] is the JSON-RPC error to answer with.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum BodyError {
    #[error("Parse error: the body is not valid JSON: {0}")]
    NotJson(String),
    #[error("Invalid Request: an empty batch is not a valid JSON-RPC message")]
    EmptyBatch,
    #[error("Invalid Request: a batch of {got} messages is more than the {max} one request may carry (limits.maxBatchMessages); send fewer at a time")]
    BatchTooLarge { got: usize, max: usize },
}

impl BodyError {
    /// JSON-RPC 2.0: bad JSON is a parse error, an empty array an invalid request.
    pub fn code(&self) -> i64 {
        match self {
            BodyError::NotJson(_) => code::PARSE_ERROR,
            BodyError::EmptyBatch | BodyError::BatchTooLarge { .. } => code::INVALID_REQUEST,
        }
    }
}

/// Parses a body that is one message or a batch of at most `max_batch`.
pub fn parse_body(body: &[u8], max_batch: usize) -> Result<Vec<Value>, BodyError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| BodyError::NotJson(e.to_string()))?;
    match v {
        Value::Array(items) if items.is_empty() => Err(BodyError::EmptyBatch),
        Value::Array(items) if items.len() > max_batch => Err(BodyError::BatchTooLarge { got: items.len(), max: max_batch }),
        Value::Array(items) => Ok(items),
        other => Ok(vec![other]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_answers_what_pointer_answers() {
        let v = json!({"params": {"name": "echo", "a/b": 1, "m~n": 2, "": 3, "list": [10, 11, {"k": "v"}], "arguments": null}});
        for path in [
            "",
            "/",
            "/params",
            "/params/name",
            "/params/missing",
            "/params/name/deeper",
            "/params/list/0",
            "/params/list/2/k",
            "/params/list/3",
            "/params/list/01",
            "/params/list/+1",
            "/params/list/-1",
            "/params/list/",
            "/params/a~1b",
            "/params/m~0n",
            "/params/arguments",
            "params",
            "/params//x",
        ] {
            assert_eq!(v.at(path), v.pointer(path), "{path}");
        }
    }

    #[test]
    fn id_keys_tell_strings_from_numbers() {
        assert_eq!(id_key(&json!("7")), "s:7");
        assert_eq!(id_key(&json!(7)), "n:7");
        assert_eq!(id_key(&json!(-7)), "n:-7");
        assert_ne!(id_key(&json!("7")), id_key(&json!(7)));
    }

    #[test]
    fn a_prepared_result_answers_as_the_usual_result_would() {
        let result = json!({"contents": [{"uri": "ui://t", "text": "<p>\"x\"</p>"}]});
        let prepared = PreparedResult::new(&result);
        for id in [json!(7), json!("a\"b"), json!(-1.5)] {
            let bytes: Vec<u8> = prepared.answer(&id).concat();
            let answer: Value = serde_json::from_slice(&bytes).expect("the parts make one JSON value");
            assert_eq!(answer, super::result(id, result.clone()));
        }
    }

    #[test]
    fn classifies_messages() {
        assert_eq!(kind(&request(1, "ping", json!({}))), Kind::Request);
        assert_eq!(kind(&notification("notifications/initialized", Value::Null)), Kind::Notification);
        assert_eq!(kind(&result(json!("a"), json!({}))), Kind::Response);
        assert!(matches!(kind(&json!({"id": 1})), Kind::Invalid(_)));
        assert!(matches!(kind(&json!({"jsonrpc": "1.0", "method": "x"})), Kind::Invalid(_)));
        assert!(matches!(kind(&json!({"jsonrpc": "2.0", "id": [1], "method": "x"})), Kind::Invalid(_)));
        assert!(matches!(kind(&json!(3)), Kind::Invalid(_)));
    }

    /// Messages with more keys than are scanned are classified the same (by hashed lookups).
    #[test]
    fn classifies_large_messages_alike() {
        let padded = |mut m: Value| {
            for i in 0..=SCAN_UP_TO {
                m[format!("x{i}")] = json!(i);
            }
            m
        };
        let cases = [
            request(1, "ping", json!({})),
            notification("notifications/initialized", Value::Null),
            result(json!("a"), json!({})),
            error(json!(2), code::INTERNAL_ERROR, "no"),
            json!({"id": 1}),
            json!({"jsonrpc": "1.0", "method": "x"}),
            json!({"jsonrpc": "2.0", "id": [1], "method": "x"}),
            json!({"jsonrpc": "2.0", "method": 5}),
            json!({"jsonrpc": "2.0", "id": 1}),
        ];
        for m in cases {
            let big = padded(m.clone());
            assert!(big.as_object().unwrap().len() > SCAN_UP_TO);
            assert_eq!(kind(&m), kind(&big), "{m}");
        }
    }

    #[test]
    fn field_answers_what_get_answers() {
        for n in [0, 1, SCAN_UP_TO - 1, SCAN_UP_TO, SCAN_UP_TO + 1, 40] {
            let mut m = Map::new();
            for i in 0..n {
                m.insert(format!("k{i}"), json!(i));
            }
            for key in ["k0", "k1", &format!("k{}", n.saturating_sub(1)), "k", "", "missing"] {
                assert_eq!(field(&m, key), m.get(key), "{n} keys, {key}");
            }
        }
        assert_eq!(get(&json!([1]), "0"), None);
        assert_eq!(get(&json!({"a": {"b": 1}}), "a"), Some(&json!({"b": 1})));
    }

    #[test]
    fn id_keys_keep_type() {
        assert_ne!(id_key(&json!(1)), id_key(&json!("1")));
        assert_eq!(id_key(&json!(7)), id_key(&json!(7)));
    }

    #[test]
    fn progress_token_round_trip() {
        let mut m = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"abc"}}});
        assert_eq!(progress_token(&m), Some(&json!("abc")));
        set_progress_token(&mut m, json!(42));
        assert_eq!(progress_token(&m), Some(&json!(42)));
    }

    #[test]
    fn parse_body_errors_name_the_problem() {
        let bad = parse_body(b"{", 10).unwrap_err();
        assert!(matches!(bad, BodyError::NotJson(_)) && bad.code() == code::PARSE_ERROR && bad.to_string().contains("not valid JSON"));
        assert_eq!(parse_body(b"[]", 10).unwrap_err().code(), code::INVALID_REQUEST);
        assert_eq!(parse_body(br#"[{"a":1},{"b":2}]"#, 2).unwrap().len(), 2);
        let big = parse_body(br#"[{"a":1},{"b":2},{"c":3}]"#, 2).unwrap_err();
        assert_eq!((big.code(), big.to_string().contains("limits.maxBatchMessages")), (code::INVALID_REQUEST, true), "{big}");
    }

    #[test]
    fn key_of_reads_as_id_key() {
        let long = "x".repeat(80);
        let ids = [
            json!(0),
            json!(7),
            json!(-3),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1.5),
            json!("a"),
            json!(""),
            json!("ü€"),
            json!("s:1"),
            json!(long),
            json!(null),
            json!(true),
        ];
        for id in ids {
            assert_eq!(key_of(&id).as_str(), id_key(&id), "{id}");
        }
        assert!(matches!(key_of(&json!(12)), IdKey::Short(_)));
        assert!(matches!(key_of(&json!("x".repeat(47))), IdKey::Long(_)), "47 + 2 bytes do not fit");
        assert!(matches!(key_of(&json!("x".repeat(46))), IdKey::Short(_)));
    }
}
