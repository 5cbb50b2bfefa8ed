//! The spans of a host's requests: one server span per request (from it arriving to its answer
//! leaving), and one client span per upstream round trip, named and dressed by the
//! OpenTelemetry MCP conventions (`{mcp.method.name} {target}`).

use serde_json::Value;

use crate::mcp::jsonrpc::{self, At};
use crate::mcp::relayed::Relayed;
use crate::trace::{attr, Attr, Kind, Span, TraceCx};

/// What a span says of one request, read from its message.
struct Target<'a> {
    /// Whether the tool's name goes into the span's name (its attribute is kept either way).
    name_tool: bool,
    method: &'a str,
    tool: Option<&'a str>,
    prompt: Option<&'a str>,
    uri: Option<&'a str>,
}

impl<'a> Target<'a> {
    fn of(msg: &'a Value) -> Self {
        let method = jsonrpc::method(msg).unwrap_or_default();
        let params = jsonrpc::params(msg);
        let s = |k: &str| params.get(k).and_then(Value::as_str);
        Target {
            name_tool: true,
            method,
            tool: (method == "tools/call").then(|| s("name")).flatten(),
            prompt: (method == "prompts/get").then(|| s("name")).flatten(),
            uri: method.starts_with("resources/").then(|| s("uri")).flatten(),
        }
    }

    /// `tools/call weather`: the low-cardinality target only (never the URI).
    fn name(&self) -> String {
        match self.tool.filter(|_| self.name_tool).or(self.prompt) {
            Some(t) => format!("{} {}", self.method, bounded(t)),
            None => self.method.to_string(),
        }
    }

    fn attrs(&self, id: &Value) -> Vec<Attr> {
        let mut a = vec![Attr::new(attr::MCP_METHOD, bounded(self.method)), Attr::new(attr::JSONRPC_REQUEST_ID, bounded(&id_text(id)))];
        if let Some(t) = self.tool {
            a.push(Attr::new(attr::TOOL_NAME, bounded(t)));
            a.push(Attr::new(attr::GENAI_OPERATION, "execute_tool"));
        }
        if let Some(p) = self.prompt {
            a.push(Attr::new(attr::PROMPT_NAME, bounded(p)));
        }
        if let Some(u) = self.uri {
            a.push(Attr::new(attr::MCP_RESOURCE_URI, bounded(u)));
        }
        a
    }
}

/// Host-sent values are bounded before they become attributes (a collector stores them).
fn bounded(s: &str) -> String {
    const MAX: usize = 256;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

fn id_text(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What the session knows of itself for its spans.
pub(super) struct SessionSide<'a> {
    pub log_id: &'a str,
    pub era: &'static str,
    pub version: Option<&'a str>,
    /// `pipe` (stdio) or `tcp` (HTTP).
    pub network: &'static str,
    pub request_id: &'a str,
    /// Whether a tool name is one of ours or the servers': only those go into span names,
    /// which collectors index (a host making up names must not make up span names).
    pub known_tool: &'a dyn Fn(&str) -> bool,
}

/// The server span of a host request. Its parent is the host's trace context from
/// `params._meta` when the message carries one, else the edge's (the HTTP span).
pub(super) fn request_span(msg: &Value, id: &Value, edge: TraceCx, s: &SessionSide) -> Span {
    let parent = TraceCx::from_meta(msg).or(edge);
    let mut target = Target::of(msg);
    if target.tool.is_some_and(|t| !(s.known_tool)(t)) {
        target.name_tool = false;
    }
    Span::start_with(target.name(), Kind::Server, &parent, || {
        let mut a = target.attrs(id);
        a.push(Attr::new(attr::MCP_SESSION, s.log_id.to_string()));
        a.push(Attr::new(attr::ERA, s.era));
        a.push(Attr::new(attr::NETWORK_TRANSPORT, s.network));
        a.push(Attr::new(attr::REQUEST_ID, s.request_id.to_string()));
        if let Some(v) = s.version {
            a.push(Attr::new(attr::MCP_PROTOCOL_VERSION, v.to_string()));
        }
        a
    })
}

/// The client span of one upstream round trip, under the request's span.
/// `name_tool`: the tool is one the catalog knows by this name (see `SessionSide::known_tool`).
pub(super) fn upstream_span(
    msg: &Value,
    parent: &TraceCx,
    server: &str,
    transport: &'static str,
    request_id: &str,
    name_tool: bool,
) -> Span {
    if !parent.is_some() {
        return Span::none();
    }
    let mut target = Target::of(msg);
    target.name_tool = name_tool;
    let id = jsonrpc::id(msg).cloned().unwrap_or(Value::Null);
    Span::start_with(target.name(), Kind::Client, parent, || {
        let mut a = target.attrs(&id);
        a.push(Attr::new(attr::SERVER, server.to_string()));
        a.push(Attr::new(attr::NETWORK_TRANSPORT, if transport == "stdio" { "pipe" } else { "tcp" }));
        a.push(Attr::new("mcp_gen_ui.upstream.transport", transport));
        a.push(Attr::new(attr::REQUEST_ID, request_id.to_string()));
        a
    })
}

/// [`finish`] for an answer that may be a plain result kept as read.
pub(super) fn finish_relayed(span: &Span, answer: &Relayed) {
    match answer {
        Relayed::Tree(answer) => finish(span, answer),
        Relayed::Raw(raw) if span.recording() && raw.is_error() => span.set(attr::ERROR_TYPE, "tool_error"),
        Relayed::Raw(_) => {}
    }
}

/// Records how a request ended on its span: a JSON-RPC error's code and kind.
pub(super) fn finish(span: &Span, answer: &Value) {
    if !span.recording() {
        return;
    }
    match answer.get("error") {
        Some(e) => {
            let code = e.get("code").and_then(Value::as_i64).unwrap_or(0);
            span.set(attr::RPC_STATUS_CODE, code.to_string());
            let message = e.get("message").and_then(Value::as_str).unwrap_or_default();
            span.fail(code.to_string(), bounded(message));
        }
        None if answer.at("/result/isError") == Some(&Value::Bool(true)) => {
            // A tool's own failure is an answer, not a protocol error (MCP semconv).
            span.set(attr::ERROR_TYPE, "tool_error");
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_carry_the_tool_or_prompt_but_never_a_uri_and_values_are_bounded() {
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "weather"}});
        assert_eq!(Target::of(&call).name(), "tools/call weather");
        let read = json!({"jsonrpc": "2.0", "id": "a", "method": "resources/read", "params": {"uri": "ui://weather"}});
        let t = Target::of(&read);
        assert_eq!(t.name(), "resources/read");
        let attrs = t.attrs(&json!("a"));
        assert!(attrs.iter().any(|a| a.key.as_str() == attr::MCP_RESOURCE_URI && a.value.as_str() == "ui://weather"));
        assert!(attrs.iter().any(|a| a.key.as_str() == attr::JSONRPC_REQUEST_ID && a.value.as_str() == "a"));
        let mut made_up = Target::of(&call);
        made_up.name_tool = false;
        assert_eq!(made_up.name(), "tools/call", "a name nobody has stays out of span names");
        assert!(made_up.attrs(&json!(7)).iter().any(|a| a.key.as_str() == attr::TOOL_NAME && a.value.as_str() == "weather"));
        let long = "é".repeat(400);
        assert!(bounded(&long).len() <= 260);
    }
}
