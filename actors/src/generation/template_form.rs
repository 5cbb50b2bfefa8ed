//! Pure: what the template page needs to know about a tool besides the page itself: its title,
//! whether a call must be confirmed first, and the input schema to embed. The form is built in
//! the page from that schema (`templates/page/`): a recursive form with rows, fieldsets,
//! variant pickers and lazily expanded `$ref` cycles is far simpler to build, validate and keep
//! in sync with a JSON view in the browser than as a Handlebars view model.

use serde_json::Value;

/// Input schemas larger than this are not embedded: the page offers a JSON editor instead of a
/// form, so that the page stays well under the cache's per-page weight.
pub const MAX_SCHEMA_BYTES: usize = 128 * 1024;

pub fn humanize(name: &str) -> String {
    let spaced: String = name
        .chars()
        .enumerate()
        .flat_map(|(i, c)| {
            if c == '_' || c == '-' {
                vec![' ']
            } else if c.is_uppercase() && i > 0 {
                vec![' ', c.to_ascii_lowercase()]
            } else {
                vec![c]
            }
        })
        .collect();
    let mut chars = spaced.trim().chars();
    match chars.next() {
        Some(f) => f.to_uppercase().collect::<String>() + chars.as_str(),
        None => name.to_string(),
    }
}

/// The tool's `title`, else `annotations.title`, else its name made readable.
pub fn title(tool: &Value) -> String {
    tool.get("title")
        .and_then(Value::as_str)
        .or_else(|| tool.pointer("/annotations/title").and_then(Value::as_str))
        .filter(|t| !t.trim().is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| humanize(tool.get("name").and_then(Value::as_str).unwrap_or("tool")))
}

/// Whether the page asks before calling: the tool may destroy data. MCP's defaults apply to
/// missing hints (`readOnlyHint` false, `destructiveHint` true), so a tool with no annotations
/// asks, and `destructiveHint` only counts when the tool is not read-only.
pub fn needs_confirmation(tool: &Value) -> bool {
    let hint = |name: &str| tool.get("annotations").and_then(|a| a.get(name)).and_then(Value::as_bool);
    !hint("readOnlyHint").unwrap_or(false) && hint("destructiveHint").unwrap_or(true)
}

/// The input schema to embed in the page, or `None` when it is too large for a form.
pub fn form_schema(tool: &Value) -> Option<Value> {
    let schema = tool.get("inputSchema").cloned().unwrap_or_else(|| Value::Object(Default::default()));
    let size = serde_json::to_string(&schema).map(|s| s.len()).unwrap_or(usize::MAX);
    (size <= MAX_SCHEMA_BYTES).then_some(schema)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn confirmation_follows_the_mcp_annotation_defaults() {
        let with = |a: Value| json!({"name": "t", "annotations": a});
        assert!(needs_confirmation(&json!({"name": "t"})), "no annotations: destructive by default");
        assert!(needs_confirmation(&with(json!({}))), "no hints: destructive by default");
        assert!(needs_confirmation(&with(json!({"destructiveHint": true}))));
        assert!(needs_confirmation(&with(json!({"readOnlyHint": false, "destructiveHint": true}))));
        assert!(!needs_confirmation(&with(json!({"readOnlyHint": true}))));
        assert!(!needs_confirmation(&with(json!({"readOnlyHint": true, "destructiveHint": true}))), "read-only wins");
        assert!(!needs_confirmation(&with(json!({"readOnlyHint": false, "destructiveHint": false}))));
        assert!(!needs_confirmation(&with(json!({"destructiveHint": false}))));
    }

    #[test]
    fn titles_prefer_the_declared_ones() {
        assert_eq!(title(&json!({"name": "get_forecast"})), "Get forecast");
        assert_eq!(title(&json!({"name": "x", "title": "Forecast"})), "Forecast");
        assert_eq!(title(&json!({"name": "x", "annotations": {"title": "From annotations"}})), "From annotations");
        assert_eq!(title(&json!({"name": "x_y", "title": "  "})), "X y");
    }

    #[test]
    fn schemas_are_embedded_unless_too_large() {
        let small = json!({"name": "t", "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}}});
        assert_eq!(form_schema(&small), Some(small["inputSchema"].clone()));
        assert_eq!(form_schema(&json!({"name": "t"})), Some(json!({})));
        let big = json!({"name": "t", "inputSchema": {"type": "object", "description": "x".repeat(MAX_SCHEMA_BYTES)}});
        assert_eq!(form_schema(&big), None);
    }

    #[test]
    fn labels_are_humanized() {
        assert_eq!(humanize("max_results"), "Max results");
        assert_eq!(humanize("pageSize"), "Page size");
    }
}
