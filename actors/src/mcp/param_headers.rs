//! `Mcp-Param-*` headers (MCP 2026-07-28 over HTTP): a tool may mark arguments with
//! `"x-mcp-header": "Token"` in its input schema; a `tools/call` then repeats each such argument
//! in an `Mcp-Param-Token` header, so that intermediaries can route on it without reading the
//! body. The proxy checks them on calls from 2026 hosts and sends them on calls to 2026
//! upstreams. Pure functions.

use serde_json::Value;

use crate::mcp::revision_2026::{self, Refusal};

pub const PREFIX: &str = "mcp-param-";

/// The arguments a schema marks: each one's path of `properties` keys, and its header token.
pub type Marked = Vec<(Vec<String>, String)>;
/// How deep `properties` chains are followed, and how many annotations count: a schema is the
/// upstream's input and must not make a walk unbounded.
const MAX_DEPTH: usize = 8;
const MAX_ANNOTATIONS: usize = 64;

/// Each argument the schema marks for a header: its path of `properties` keys and its token.
/// Only chains of `properties` count (an annotation under `anyOf`, `items`, ... names no single
/// argument), as the SDKs read it.
pub fn annotations(schema: &Value) -> Marked {
    let mut out = Vec::new();
    let mut stack: Vec<(Vec<String>, &Value)> = vec![(Vec::new(), schema)];
    while let Some((path, node)) = stack.pop() {
        if out.len() >= MAX_ANNOTATIONS {
            break;
        }
        if !path.is_empty() {
            if let Some(token) = node.get("x-mcp-header").and_then(Value::as_str).filter(|t| valid_token(t)) {
                out.push((path.clone(), token.to_string()));
            }
        }
        if path.len() >= MAX_DEPTH {
            continue;
        }
        if let Some(props) = node.get("properties").and_then(Value::as_object) {
            for (k, v) in props {
                let mut p = path.clone();
                p.push(k.clone());
                stack.push((p, v));
            }
        }
    }
    out.sort();
    out
}

/// An HTTP field-name token (RFC 9110).
fn valid_token(t: &str) -> bool {
    !t.is_empty() && t.len() <= 64 && t.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn value_at<'a>(arguments: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut node = arguments;
    for k in path {
        node = node.as_object()?.get(k)?;
    }
    Some(node).filter(|v| !v.is_null())
}

/// How an argument is written in its header: booleans as `true`/`false`, numbers and strings
/// as text; anything else has no header form.
fn render(v: &Value) -> Option<String> {
    match v {
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// A header value for `v`: as is when it is visible ASCII without surrounding space, else in
/// the `=?base64?...?=` form.
pub fn encode(v: &str) -> String {
    let plain = !v.is_empty() && v.bytes().all(|b| (0x20..0x7f).contains(&b)) && v.trim() == v;
    if plain {
        return v.to_string();
    }
    use base64::Engine;
    format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(v))
}

/// The `Mcp-Param-*` headers a call with `arguments` to a tool with `schema` carries.
pub fn headers_for(schema: &Value, arguments: &Value) -> Vec<(String, String)> {
    headers_from(&annotations(schema), arguments)
}

/// [`headers_for`] from a schema's [`annotations`], found once.
pub fn headers_from(marked: &Marked, arguments: &Value) -> Vec<(String, String)> {
    marked
        .iter()
        .filter_map(|(path, token)| {
            let v = render(value_at(arguments, path)?)?;
            Some((format!("Mcp-Param-{token}"), encode(&v)))
        })
        .collect()
}

/// Checks a call's `Mcp-Param-*` headers (`header` looks one up by lowercase name) against its
/// arguments: for every marked argument, header and argument are present together and equal.
pub fn check(schema: &Value, arguments: &Value, header: impl Fn(&str) -> Option<String>) -> Result<(), Refusal> {
    for (path, token) in annotations(schema) {
        let name = format!("Mcp-Param-{token}");
        let sent = header(&name.to_ascii_lowercase());
        let expected = value_at(arguments, &path).and_then(render);
        let argument = path.join(".");
        match (sent, expected) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(Refusal::header(format!("the {name} header is sent, but the argument {argument} it repeats is not")));
            }
            (None, Some(v)) => {
                return Err(Refusal::header(format!("the {name} header is required: it repeats the argument {argument} ({})", encode(&v))));
            }
            (Some(h), Some(v)) => {
                let decoded = revision_2026::header_text(&h)?;
                if decoded != v {
                    return Err(Refusal::header(format!("the {name} header ({decoded:?}) does not match the argument {argument} ({v:?})")));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::revision_2026::errors;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "fast": {"type": "boolean", "x-mcp-header": "Fast"},
            "opts": {"type": "object", "properties": {"tenant": {"type": "integer", "x-mcp-header": "Tenant"}}},
            "other": {"anyOf": [{"x-mcp-header": "Ignored"}]},
            "bad": {"type": "string", "x-mcp-header": "no spaces allowed"}
        }})
    }

    #[test]
    fn annotations_follow_properties_chains_only() {
        let a = annotations(&schema());
        let tokens: Vec<&str> = a.iter().map(|(_, t)| t.as_str()).collect();
        let mut sorted = tokens.clone();
        sorted.sort();
        assert_eq!(sorted, vec!["Fast", "Region", "Tenant"]);
        assert!(a.iter().any(|(p, t)| p == &vec!["opts".to_string(), "tenant".to_string()] && t == "Tenant"));
        assert!(!tokens.contains(&"Ignored") && !tokens.contains(&"no spaces allowed"));
    }

    #[test]
    fn a_call_carries_its_marked_arguments() {
        let h = headers_for(&schema(), &json!({"region": "eu west", "fast": true, "opts": {"tenant": 7}}));
        assert!(h.contains(&("Mcp-Param-Region".into(), "eu west".into())));
        assert!(h.contains(&("Mcp-Param-Fast".into(), "true".into())));
        assert!(h.contains(&("Mcp-Param-Tenant".into(), "7".into())));
        let h = headers_for(&schema(), &json!({"region": " padded"}));
        assert_eq!(h, vec![("Mcp-Param-Region".to_string(), "=?base64?IHBhZGRlZA==?=".to_string())]);
    }

    #[test]
    fn headers_must_agree_with_their_arguments() {
        let s = json!({"type": "object", "properties": {"p": {"type": "string", "x-mcp-header": "P"}}});
        let with = |v: Option<&str>| {
            let v = v.map(str::to_string);
            move |name: &str| (name == "mcp-param-p").then(|| v.clone()).flatten()
        };
        assert!(check(&s, &json!({"p": "Hello"}), with(Some("Hello"))).is_ok());
        assert!(check(&s, &json!({"p": "Hello"}), with(Some("=?base64?SGVsbG8=?="))).is_ok());
        assert!(check(&s, &json!({"p": "SGVsbG8="}), with(Some("SGVsbG8="))).is_ok(), "no sentinel: a literal");
        assert!(check(&s, &json!({"p": "=?base64?SGVsbG8="}), with(Some("=?base64?SGVsbG8="))).is_ok(), "half a sentinel: a literal");
        assert_eq!(check(&s, &json!({"p": "Hello"}), with(Some("=?base64?SGVsbG8?="))).unwrap_err().code, errors::HEADER_MISMATCH);
        assert!(check(&s, &json!({"p": "Hello"}), with(Some("=?base64?SGVs!!!bG8=?="))).is_err());
        assert!(check(&s, &json!({"p": "x"}), with(None)).is_err(), "missing");
        assert!(check(&s, &json!({}), with(Some("x"))).is_err(), "a header without its argument");
        assert!(check(&s, &json!({}), with(None)).is_ok());
    }
}
