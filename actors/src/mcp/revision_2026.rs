//! MCP 2026-07-28, the stateless era: what a request must carry, how its answers are dressed,
//! and how server-to-client requests become multi-round-trip (`input_required`) results. Pure
//! functions over JSON; the edges and `HostSession` call them.
//!
//! A 2026 request has no session: its protocol version, client capabilities and client info
//! travel in `params._meta` under the keys below, and every result says what kind it is
//! (`resultType`). Lists and reads say how long they may be reused (`ttlMs`, `cacheScope`).

use serde_json::{json, Map, Value};

use crate::mcp::jsonrpc::{self, code, At};

/// The stateless revision this service speaks (to hosts and to upstreams).
pub const VERSION: &str = "2026-07-28";
pub const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
pub const META_CLIENT: &str = "io.modelcontextprotocol/clientInfo";
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub const META_SERVER: &str = "io.modelcontextprotocol/serverInfo";
pub const META_SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";

/// 2026 error codes (the spec's schema names in comments).
pub mod errors {
    /// HeaderMismatch: a required header is missing, malformed or disagrees with the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// MissingRequiredClientCapability: `data.requiredCapabilities` names what is missing.
    pub const MISSING_CAPABILITY: i64 = -32021;
    /// UnsupportedProtocolVersion: `data.requested`, `data.supported`.
    pub const UNSUPPORTED_VERSION: i64 = -32022;
}

/// The tasks extension's name (`mcp::tasks_2026` makes tasks of it).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Methods of the 2025 era that 2026 removed: a stateless request for them is "not found".
pub const REMOVED_METHODS: &[&str] = &["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"];

/// What a 2026 request declared about its client.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestMeta {
    pub version: String,
    pub capabilities: Value,
    pub client_info: Option<Value>,
    pub log_level: Option<String>,
}

/// Whether a message belongs to the stateless era: it carries a protocol version in `_meta`,
/// or the HTTP header names a revision that is not one of the session era's.
pub fn is_2026_request(msg: &Value, header_version: Option<&str>, session_versions: &[&str]) -> bool {
    if msg.at("/params/_meta").and_then(|m| m.get(META_VERSION)).is_some() {
        return true;
    }
    header_version.map(str::trim).is_some_and(|v| !v.is_empty() && !session_versions.contains(&v))
}

/// An error to answer a stateless request with, before it reaches a session.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl Refusal {
    fn new(code: i64, message: impl Into<String>) -> Self {
        Refusal { code, message: message.into(), data: None }
    }

    /// A header that is missing, malformed or disagrees with the body (-32020).
    pub fn header(message: impl Into<String>) -> Self {
        Refusal::new(errors::HEADER_MISMATCH, message)
    }

    /// The JSON-RPC error for the request `id`.
    pub fn to_error(&self, id: Value) -> Value {
        match &self.data {
            Some(d) => jsonrpc::error_with_data(id, self.code, self.message.clone(), d.clone()),
            None => jsonrpc::error(id, self.code, self.message.clone()),
        }
    }
}

/// Checks a stateless request's `_meta` (and the HTTP version header, when there is one), in
/// the order the spec's validation runs: required keys, header agreement, then support.
pub fn request_meta(msg: &Value, header_version: Option<&str>) -> Result<RequestMeta, Refusal> {
    let meta = msg.at("/params/_meta").and_then(Value::as_object);
    let get = |k: &str| meta.and_then(|m| m.get(k));
    let mut missing = Vec::new();
    if !get(META_VERSION).is_some_and(Value::is_string) {
        missing.push(META_VERSION);
    }
    if !get(META_CAPS).is_some_and(Value::is_object) {
        missing.push(META_CAPS);
    }
    if !missing.is_empty() {
        return Err(Refusal::new(
            code::INVALID_PARAMS,
            format!(
                "Invalid params: missing _meta keys: {} (every {VERSION} request carries its protocol version and client capabilities in params._meta)",
                missing.join(", ")
            ),
        ));
    }
    let version = get(META_VERSION).and_then(Value::as_str).unwrap_or_default().to_string();
    if let Some(h) = header_version {
        if h.trim() != version {
            return Err(Refusal::header(format!(
                "the MCP-Protocol-Version header ({:?}) does not match params._meta protocolVersion ({version:?})",
                h.trim()
            )));
        }
    }
    if version != VERSION {
        let mut r = Refusal::new(
            errors::UNSUPPORTED_VERSION,
            format!("protocol version {version:?} is not supported; this server speaks {VERSION} (stateless) and the 2025 revisions through initialize"),
        );
        r.data = Some(json!({"requested": version, "supported": [VERSION]}));
        return Err(r);
    }
    Ok(RequestMeta {
        version,
        capabilities: get(META_CAPS).cloned().unwrap_or(json!({})),
        client_info: get(META_CLIENT).cloned(),
        log_level: get(META_LOG_LEVEL).and_then(Value::as_str).map(str::to_string),
    })
}

/// The name a request's `Mcp-Name` header must carry, for the methods that need one.
pub fn expected_name(msg: &Value) -> Option<&str> {
    let p = jsonrpc::params(msg);
    match jsonrpc::method(msg)? {
        "tools/call" | "prompts/get" => p.get("name").and_then(Value::as_str),
        "resources/read" => p.get("uri").and_then(Value::as_str),
        "tasks/get" | "tasks/update" | "tasks/cancel" => p.get("taskId").and_then(Value::as_str),
        _ => None,
    }
}

/// A header's value as text: surrounding whitespace is not significant, and `=?base64?...?=`
/// carries what plain ASCII cannot.
pub fn header_text(value: &str) -> Result<String, Refusal> {
    let v = value.trim();
    let Some(encoded) = v.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) else {
        return Ok(v.to_string());
    };
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|_| Refusal::header(format!("the header value {v:?} is not valid base64 in its =?base64?...?= form")))?;
    String::from_utf8(bytes).map_err(|_| Refusal::header(format!("the header value {v:?} does not decode to UTF-8 text")))
}

/// Checks `Mcp-Method` (case-sensitive value) and `Mcp-Name` against the body. Surrounding
/// whitespace in a value is not significant; either may come base64-encoded.
pub fn check_headers(msg: &Value, method_header: Option<&str>, name_header: Option<&str>) -> Result<(), Refusal> {
    let method = jsonrpc::method(msg).unwrap_or_default();
    let method_header = method_header.map(header_text).transpose()?;
    let name_header = name_header.map(header_text).transpose()?;
    match method_header.as_deref() {
        None => return Err(Refusal::header(format!("the Mcp-Method header is required; send Mcp-Method: {method}"))),
        Some(h) if h != method => {
            return Err(Refusal::header(format!("the Mcp-Method header ({h:?}) does not match the body's method ({method:?})")))
        }
        Some(_) => {}
    }
    if let Some(name) = expected_name(msg) {
        match name_header.as_deref() {
            None => return Err(Refusal::header(format!("the Mcp-Name header is required for {method}; send Mcp-Name: {name}"))),
            Some(h) if h != name => {
                return Err(Refusal::header(format!("the Mcp-Name header ({h:?}) does not match the body's {method} target ({name:?})")))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// The HTTP status for a plain-JSON answer to a stateless request.
pub fn http_status(answer: &Value) -> u16 {
    match answer.at("/error/code").and_then(Value::as_i64) {
        Some(code::METHOD_NOT_FOUND) => 404,
        Some(errors::HEADER_MISMATCH | errors::MISSING_CAPABILITY | errors::UNSUPPORTED_VERSION) => 400,
        Some(code::PARSE_ERROR | code::INVALID_REQUEST | code::INVALID_PARAMS) => 400,
        _ => 200,
    }
}

/// How long a result may be reused, and by whom (SEP-2549).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caching {
    pub ttl_ms: u64,
    pub public: bool,
}

/// The caching hints this service can stand behind for a method's result: lists change when
/// the upstream says so and are dressed per client (private, reuse never guaranteed); `None`
/// for methods whose results are not cacheable.
pub fn caching_for(method: &str) -> Option<Caching> {
    match method {
        "server/discover" | "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" | "resources/read" => {
            Some(Caching { ttl_ms: 0, public: false })
        }
        _ => None,
    }
}

/// Dresses a session-era answer for a stateless host: `resultType` on results, caching hints
/// where they belong (an upstream's own hints are kept when stricter), our identity in
/// `_meta`, and error codes the 2026 revision renamed.
pub fn dress_answer(mut answer: Value, caching: Option<Caching>, server_info: &Value) -> Value {
    if let Some(result) = answer.get_mut("result").and_then(Value::as_object_mut) {
        result.entry("resultType").or_insert_with(|| json!("complete"));
        if let Some(c) = caching {
            let upstream_ttl = result.get("ttlMs").and_then(Value::as_u64);
            let ttl = upstream_ttl.map_or(c.ttl_ms, |t| t.min(c.ttl_ms));
            result.insert("ttlMs".into(), json!(ttl));
            let upstream_private = result.get("cacheScope").and_then(Value::as_str) == Some("private");
            let scope = if c.public && !upstream_private { "public" } else { "private" };
            result.insert("cacheScope".into(), json!(scope));
        }
        let meta = result.entry("_meta").or_insert_with(|| json!({}));
        if let Some(m) = meta.as_object_mut() {
            m.entry(META_SERVER).or_insert_with(|| server_info.clone());
        }
        return answer;
    }
    if let Some(err) = answer.get_mut("error").and_then(Value::as_object_mut) {
        // SEP-2164: "resource not found" is invalid params now, with the uri in data.
        if err.get("code").and_then(Value::as_i64) == Some(code::RESOURCE_NOT_FOUND) {
            err.insert("code".into(), json!(code::INVALID_PARAMS));
        }
    }
    answer
}

/// The `server/discover` result, from what the upstream declared (its capabilities already
/// merged with ours).
pub fn discover_result(capabilities: Value, server_info: &Value, instructions: Option<&Value>) -> Value {
    let mut r = json!({
        "resultType": "complete",
        "supportedVersions": [VERSION],
        "capabilities": stateless_capabilities(capabilities),
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {META_SERVER: server_info},
    });
    if let Some(i) = instructions {
        r["instructions"] = i.clone();
    }
    r
}

/// Capabilities as a stateless host sees them: change notifications and subscriptions arrive
/// on `subscriptions/listen`; `logging/setLevel` is gone (a request's logLevel replaces it).
pub fn stateless_capabilities(mut caps: Value) -> Value {
    if let Some(obj) = caps.as_object_mut() {
        obj.remove("logging");
        // 2026 has tasks as an extension, run for tool calls (`mcp::tasks_2026`).
        let tasks = obj.remove("tasks");
        if tasks.as_ref().and_then(|t| t.at("/requests/tools/call")).is_some_and(Value::is_object) {
            let ext = obj.entry("extensions").or_insert_with(|| json!({}));
            if let Some(e) = ext.as_object_mut() {
                e.insert(TASKS_EXTENSION.into(), json!({}));
            }
        }
    }
    caps
}

/// Whether `caps` declares `cap.flag: true` (`tools.listChanged`, `resources.subscribe`, ...).
pub fn declares(caps: &Value, cap: &str, flag: &str) -> bool {
    caps.get(cap).and_then(|c| c.get(flag)).and_then(Value::as_bool) == Some(true)
}

/// Which client capability a server-to-client request needs.
pub fn capability_for(method: &str) -> Option<&'static str> {
    match method {
        "sampling/createMessage" => Some("sampling"),
        "elicitation/create" => Some("elicitation"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

/// The key an input request goes under: the method's noun and a counter, stable within a call.
pub fn input_key(method: &str, n: u64) -> String {
    let noun = match method {
        "elicitation/create" => "elicitation",
        "sampling/createMessage" => "sampling",
        "roots/list" => "roots",
        other => other.split('/').next().unwrap_or("input"),
    };
    format!("{noun}_{n}")
}

/// An `input_required` result asking for `requests` (key -> server request).
pub fn input_required(requests: &[(String, Value)], state: &str) -> Value {
    let mut wanted = Map::new();
    for (key, req) in requests {
        let mut entry = json!({"method": jsonrpc::method(req).unwrap_or_default()});
        if let Some(p) = req.get("params").filter(|p| !p.is_null()) {
            entry["params"] = p.clone();
        }
        wanted.insert(key.clone(), entry);
    }
    json!({"resultType": "input_required", "inputRequests": wanted, "requestState": state})
}

/// Takes the multi-round-trip fields out of a retried request's params, leaving the request as
/// it was first sent: `(inputResponses, requestState)`.
pub fn take_round_trip(msg: &mut Value) -> (Option<Value>, Option<String>) {
    let Some(p) = msg.get_mut("params").and_then(Value::as_object_mut) else {
        return (None, None);
    };
    let responses = p.remove("inputResponses");
    let state = p.remove("requestState").and_then(|s| s.as_str().map(str::to_string));
    (responses, state)
}

/// Whether `retry` asks for the same thing as `original` (method and target), so that a
/// request state cannot be replayed onto a different call.
pub fn same_call(original: &Value, retry: &Value) -> bool {
    jsonrpc::method(original) == jsonrpc::method(retry)
        && expected_name(original) == expected_name(retry)
        && jsonrpc::params(original).get("arguments") == jsonrpc::params(retry).get("arguments")
}

/// Whether an input response is shaped like an answer to `method` (an object with the field
/// that answer cannot lack).
pub fn valid_response(method: &str, response: &Value) -> bool {
    let Some(obj) = response.as_object() else { return false };
    match method {
        "elicitation/create" => obj.get("action").is_some_and(Value::is_string),
        "sampling/createMessage" => obj.contains_key("content") || obj.contains_key("role"),
        "roots/list" => obj.get("roots").is_some_and(Value::is_array),
        _ => true,
    }
}

/// What of a client's capabilities the upstream may ask for through the proxy: the ones it
/// answers by asking that client (sampling, elicitation, roots).
pub fn answerable(caps: &Value) -> Value {
    let mut out = Map::new();
    for k in ["sampling", "elicitation", "roots"] {
        if let Some(v) = caps.get(k).filter(|v| !v.is_null()) {
            out.insert(k.into(), v.clone());
        }
    }
    Value::Object(out)
}

/// Sets `params._meta[key]` of a request (making `params` and `_meta` objects if need be).
pub fn set_request_meta(msg: &mut Value, key: &str, value: Value) {
    if !msg.get("params").is_some_and(Value::is_object) {
        msg["params"] = json!({});
    }
    let meta = msg["params"].as_object_mut().expect("made an object above").entry("_meta").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    meta[key] = value;
}

/// The stateless request's own `_meta` keys are the host's; the upstream must not see them
/// (it speaks to the proxy, with the proxy's own identity).
pub fn strip_request_meta(msg: &mut Value) {
    if let Some(meta) = msg.pointer_mut("/params/_meta").and_then(Value::as_object_mut) {
        // The log level stays: a 2026 upstream sends log messages only to a request that asks.
        for k in [META_VERSION, META_CAPS, META_CLIENT] {
            meta.remove(k);
        }
        if meta.is_empty() {
            if let Some(p) = msg.get_mut("params").and_then(Value::as_object_mut) {
                p.remove("_meta");
            }
        }
    }
}

/// Log severities, least to most severe (RFC 5424 names, as MCP uses them).
const LEVELS: &[&str] = &["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/// The log level `name` names, if it is one (as a host's `logging/setLevel` asks for it).
pub fn log_level(name: &str) -> Option<&'static str> {
    LEVELS.iter().find(|l| **l == name).copied()
}

/// Whether a `notifications/message` at `level` goes to a host that asked for `wanted` (none:
/// a stateless host that did not ask gets no log messages).
pub fn log_wanted(level: Option<&str>, wanted: Option<&str>) -> bool {
    let rank = |l: &str| LEVELS.iter().position(|x| *x == l);
    match (level.and_then(rank), wanted.and_then(rank)) {
        (Some(l), Some(w)) => l >= w,
        (None, Some(_)) => true,
        (_, None) => false,
    }
}

#[cfg(test)]
mod tests;
