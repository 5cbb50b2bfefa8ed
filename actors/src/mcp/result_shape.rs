//! Pure: what a tool's results look like, for the page and for the model.
//!
//! - [`shape_of`]: the shape of a result (keys and JSON types, never values), bounded, and
//!   [`merge`] to grow one shape from many results. Given to the generation prompt
//!   (`generation.learnResultShape`) so pages are written for the results they will show.
//! - [`shape_artifacts`]: results of the `{results, meta_data, returned_file_names,
//!   returned_file_contents}` kind, split so that the model sees results, metadata and file
//!   names, and the page (through `structuredContent`) gets the files too (`results.shaping`).

use serde_json::{json, Map, Value};

/// How deep a shape goes, and how many keys of one object it keeps.
const MAX_DEPTH: usize = 6;
const MAX_KEYS: usize = 64;

/// The object a result carries: its `structuredContent` (unwrapped when it is FastMCP's
/// `{"result": X}`), else a text item that is a JSON object.
pub fn result_object(result: &Value) -> Option<Value> {
    if let Some(s) = result.get("structuredContent").filter(|s| s.is_object()) {
        return Some(fastmcp_unwrapped(s).unwrap_or_else(|| s.clone()));
    }
    let items = result.get("content")?.as_array()?;
    items.iter().filter(|c| c.get("type").and_then(Value::as_str) == Some("text")).find_map(|c| {
        let text = c.get("text")?.as_str()?;
        let t = text.trim_start();
        // Cheap test first: most text results are not JSON objects.
        if !t.starts_with('{') {
            return None;
        }
        serde_json::from_str::<Value>(t).ok().filter(Value::is_object)
    })
}

/// FastMCP (the Python `mcp` package) returns a tool's non-object value as
/// `structuredContent: {"result": X}`: the object inside, when X is one or is a string holding
/// one (a tool that returns `json.dumps(...)`).
fn fastmcp_unwrapped(s: &Value) -> Option<Value> {
    let o = s.as_object().filter(|o| o.len() == 1)?;
    match o.get("result")? {
        Value::Object(_) => o.get("result").cloned(),
        Value::String(text) if text.trim_start().starts_with('{') => serde_json::from_str::<Value>(text).ok().filter(Value::is_object),
        _ => None,
    }
}

/// Keys and JSON types of `v`, never its values.
pub fn shape_of(v: &Value) -> Value {
    shape_at(v, 0)
}

fn shape_at(v: &Value, depth: usize) -> Value {
    match v {
        Value::Null => json!("null"),
        Value::Bool(_) => json!("boolean"),
        Value::Number(_) => json!("number"),
        Value::String(_) => json!("string"),
        Value::Array(items) if depth >= MAX_DEPTH || items.is_empty() => json!(["array"]),
        // Arrays are described by their first item: results are usually lists of one kind.
        Value::Array(items) => json!([shape_at(&items[0], depth + 1)]),
        Value::Object(_) if depth >= MAX_DEPTH => json!("object"),
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m.iter().take(MAX_KEYS) {
                out.insert(k.chars().take(100).collect(), shape_at(v, depth + 1));
            }
            Value::Object(out)
        }
    }
}

/// One shape covering both: keys of either, and where types differ, both named.
pub fn merge(a: &Value, b: &Value) -> Value {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut out = x.clone();
            for (k, v) in y {
                if out.len() >= MAX_KEYS && !out.contains_key(k) {
                    continue;
                }
                let merged = match x.get(k) {
                    Some(old) => merge(old, v),
                    None => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Value::Array(x), Value::Array(y)) => match (x.first(), y.first()) {
            (Some(p), Some(q)) if p != &json!("array") && q != &json!("array") => json!([merge(p, q)]),
            (Some(p), _) if p != &json!("array") => json!([p]),
            (_, Some(q)) => json!([q]),
            _ => json!(["array"]),
        },
        (x, y) if x == y => x.clone(),
        (Value::String(x), Value::String(y)) => {
            let mut kinds: Vec<&str> = x.split(" | ").chain(y.split(" | ")).collect();
            kinds.sort();
            kinds.dedup();
            json!(kinds.join(" | "))
        }
        // An object one time and a scalar another: keep the richer description.
        (x @ Value::Object(_), _) | (_, x @ Value::Object(_)) => x.clone(),
        (x, _) => x.clone(),
    }
}

/// A result with file artifacts, split for model and page; None when it is not of that kind.
pub fn shape_artifacts(result: &Value) -> Option<Value> {
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let obj = result_object(result)?;
    let has_files = obj.get("returned_file_contents").is_some() || obj.get("returned_file_names").is_some();
    if !has_files || obj.get("results").is_none() {
        return None;
    }
    // The model gets what it can reason about; file bytes stay for the page.
    let mut for_model = Map::new();
    for k in ["results", "meta_data", "returned_file_names"] {
        if let Some(v) = obj.get(k) {
            for_model.insert(k.into(), v.clone());
        }
    }
    let mut out = result.as_object().cloned().unwrap_or_default();
    out.insert("content".into(), json!([{"type": "text", "text": Value::Object(for_model).to_string()}]));
    // FastMCP's wrapper stays as it is: the tool's outputSchema declares it, and clients check
    // results against it. The View runtime unwraps it for the page.
    let wrapped = result.get("structuredContent").is_some_and(|s| fastmcp_unwrapped(s).is_some());
    if !wrapped {
        out.insert("structuredContent".into(), obj);
    }
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_keep_keys_and_types_never_values() {
        let r = json!({"city": "Zanzibar-secret", "days": [{"high": 31.5, "rain": true}], "note": null});
        let s = shape_of(&r);
        assert_eq!(s, json!({"city": "string", "days": [{"high": "number", "rain": "boolean"}], "note": "null"}));
        assert!(!s.to_string().contains("Zanzibar"), "no value leaks into a shape");
    }

    #[test]
    fn shapes_are_bounded() {
        let mut deep = json!(1);
        for _ in 0..50 {
            deep = json!({"x": deep});
        }
        assert!(shape_of(&deep).to_string().len() < 200);
        let wide: Map<String, Value> = (0..500).map(|i| (format!("k{i}"), json!(i))).collect();
        assert_eq!(shape_of(&Value::Object(wide)).as_object().unwrap().len(), MAX_KEYS);
    }

    #[test]
    fn merging_grows_one_shape() {
        let a = shape_of(&json!({"a": 1, "list": [], "opt": "x"}));
        let b = shape_of(&json!({"a": "one", "b": true, "list": [{"k": 1}]}));
        let m = merge(&a, &b);
        assert_eq!(m, json!({"a": "number | string", "b": "boolean", "list": [{"k": "number"}], "opt": "string"}));
        assert_eq!(merge(&m, &b), m, "merging what is already known changes nothing");
    }

    #[test]
    fn the_object_comes_from_structured_content_or_a_json_text() {
        assert_eq!(result_object(&json!({"structuredContent": {"a": 1}})), Some(json!({"a": 1})));
        assert_eq!(result_object(&json!({"content": [{"type": "text", "text": " {\"a\": 2}"}]})), Some(json!({"a": 2})));
        assert_eq!(result_object(&json!({"content": [{"type": "text", "text": "plain words"}]})), None);
    }

    #[test]
    fn fastmcp_wrapped_results_are_unwrapped() {
        let inner = json!({"results": [1], "returned_file_names": ["a.csv"]});
        assert_eq!(
            result_object(&json!({"structuredContent": {"result": inner.to_string()}})),
            Some(inner.clone()),
            "a JSON string, parsed"
        );
        assert_eq!(result_object(&json!({"structuredContent": {"result": inner}})), Some(inner.clone()));
        assert_eq!(
            result_object(&json!({"structuredContent": {"result": "plain"}})),
            Some(json!({"result": "plain"})),
            "not JSON: as it is"
        );
        let two = json!({"result": 1, "other": 2});
        assert_eq!(result_object(&json!({"structuredContent": two})), Some(two), "not the wrapper: as it is");
        let wrapper = json!({"result": inner.to_string()});
        let shaped =
            shape_artifacts(&json!({"content": [{"type": "text", "text": inner.to_string()}], "structuredContent": wrapper})).unwrap();
        assert_eq!(shaped["structuredContent"], wrapper, "the wrapper its outputSchema declares stays");
        assert!(shaped["content"][0]["text"].as_str().unwrap().contains("a.csv"), "the model's text is shaped");
    }

    #[test]
    fn artifacts_keep_file_bytes_away_from_the_model() {
        let obj = json!({"results": [1, 2], "meta_data": {"rows": 2}, "returned_file_names": ["a.csv"], "returned_file_contents": ["YSxiCjEsMgo="]});
        let r = json!({"content": [{"type": "text", "text": obj.to_string()}], "_meta": {"k": "v"}});
        let shaped = shape_artifacts(&r).unwrap();
        let text = shaped["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("a.csv") && text.contains("rows") && !text.contains("YSxiCjEsMgo="));
        assert_eq!(shaped["structuredContent"], obj, "the page gets everything");
        assert_eq!(shaped["_meta"], json!({"k": "v"}), "the rest of the result is kept");
        assert!(shape_artifacts(&json!({"content": [{"type": "text", "text": "{\"results\": 1}"}]})).is_none(), "no files: unchanged");
        assert!(shape_artifacts(&json!({"isError": true, "content": [{"type": "text", "text": obj.to_string()}]})).is_none());
    }
}
