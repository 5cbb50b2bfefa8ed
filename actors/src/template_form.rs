//! Pure: turns a tool's JSON Schema into the view model the template UI renders, one form
//! field per top-level input property (seed design sections 8.3 and 8.4).

use serde::Serialize;
use serde_json::{Map, Value};

/// Schemas nested deeper than this are edited as JSON rather than as controls.
pub const MAX_DEPTH: usize = 5;

#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct Field {
    pub name: String,
    pub label: String,
    pub description: String,
    /// text | number | checkbox | select | textarea
    pub control: &'static str,
    /// The `<input type>` for text and number controls.
    pub input_type: &'static str,
    /// How the page turns the control's value into an argument: string, integer, number,
    /// boolean, enum (JSON-encoded option values) or json.
    pub data_type: &'static str,
    pub required: bool,
    pub default_value: String,
    pub checked: bool,
    pub min: Option<String>,
    pub max: Option<String>,
    pub step: Option<&'static str>,
    pub minlength: Option<u64>,
    pub maxlength: Option<u64>,
    pub pattern: Option<String>,
    pub placeholder: String,
    pub options: Vec<OptionItem>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OptionItem {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

/// `oneOf`/`anyOf`: the first alternative stands for the property.
fn effective(schema: &Value) -> &Value {
    for key in ["oneOf", "anyOf"] {
        if let Some(first) = schema.get(key).and_then(Value::as_array).and_then(|a| a.first()) {
            if schema.get("type").is_none() {
                return effective(first);
            }
        }
    }
    schema
}

/// The schema's type, ignoring "null" in a type array (`["string","null"]` is a string).
fn type_of(schema: &Value) -> Option<&str> {
    match schema.get("type") {
        Some(Value::String(s)) => Some(s),
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).find(|t| *t != "null"),
        _ => None,
    }
}

fn depth(schema: &Value) -> usize {
    let children = schema.get("properties").and_then(Value::as_object).map(|p| p.values().map(depth).max().unwrap_or(0)).unwrap_or(0);
    let items = schema.get("items").map(depth).unwrap_or(0);
    1 + children.max(items)
}

fn num(v: Option<&Value>) -> Option<String> {
    v.filter(|v| v.is_number()).map(Value::to_string)
}

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

pub fn fields(input_schema: &Value) -> Vec<Field> {
    let empty = Map::new();
    let props = input_schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
    let required: Vec<&str> =
        input_schema.get("required").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    props.iter().map(|(name, schema)| field(name, schema, required.contains(&name.as_str()))).collect()
}

fn field(name: &str, raw: &Value, required: bool) -> Field {
    let s = effective(raw);
    let mut f = Field {
        name: name.to_string(),
        label: s.get("title").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| humanize(name)),
        description: raw.get("description").or_else(|| s.get("description")).and_then(Value::as_str).unwrap_or_default().to_string(),
        required,
        ..Field::default()
    };
    let default = s.get("default").or_else(|| raw.get("default"));
    if let Some(options) = s.get("enum").and_then(Value::as_array) {
        f.control = "select";
        f.data_type = "enum";
        f.options = options
            .iter()
            .map(|o| OptionItem {
                value: o.to_string(),
                label: o.as_str().map(str::to_string).unwrap_or_else(|| o.to_string()),
                selected: default == Some(o),
            })
            .collect();
        return f;
    }
    if let Some(c) = s.get("const") {
        f.control = "select";
        f.data_type = "enum";
        f.options = vec![OptionItem {
            value: c.to_string(),
            label: c.as_str().map(str::to_string).unwrap_or_else(|| c.to_string()),
            selected: true,
        }];
        return f;
    }
    let as_json = |f: &mut Field| {
        f.control = "textarea";
        f.data_type = "json";
        f.placeholder = "JSON".into();
        if let Some(d) = default {
            f.default_value = serde_json::to_string_pretty(d).unwrap_or_default();
        }
    };
    if depth(s) > MAX_DEPTH {
        as_json(&mut f);
        return f;
    }
    match type_of(s) {
        Some("boolean") => {
            f.control = "checkbox";
            f.data_type = "boolean";
            f.checked = default.and_then(Value::as_bool).unwrap_or(false);
        }
        Some(t @ ("integer" | "number")) => {
            f.control = "text";
            f.input_type = "number";
            f.data_type = if t == "integer" { "integer" } else { "number" };
            f.step = Some(if t == "integer" { "1" } else { "any" });
            f.min = num(s.get("minimum")).or_else(|| num(s.get("exclusiveMinimum")));
            f.max = num(s.get("maximum")).or_else(|| num(s.get("exclusiveMaximum")));
            f.default_value = default.filter(|d| d.is_number()).map(Value::to_string).unwrap_or_default();
        }
        Some("string") => {
            let max_len = s.get("maxLength").and_then(Value::as_u64);
            f.minlength = s.get("minLength").and_then(Value::as_u64);
            f.maxlength = max_len;
            f.pattern = s.get("pattern").and_then(Value::as_str).map(str::to_string);
            f.data_type = "string";
            f.default_value = default.and_then(Value::as_str).unwrap_or_default().to_string();
            let format = s.get("format").and_then(Value::as_str).unwrap_or("");
            let long = max_len.is_none_or(|m| m > 500) && (format.is_empty() && looks_long(name, &f.description));
            f.input_type = match format {
                "email" => "email",
                "uri" | "url" | "uri-reference" => "url",
                "date" => "date",
                "date-time" => "datetime-local",
                "time" => "time",
                _ => "text",
            };
            f.control = if long { "textarea" } else { "text" };
        }
        _ => as_json(&mut f),
    }
    f
}

/// Free text (content, body, query, code...) gets a textarea; short values a one-line input.
fn looks_long(name: &str, description: &str) -> bool {
    const WORDS: &[&str] = &["content", "body", "text", "message", "code", "query", "prompt", "script", "markdown", "thought"];
    let n = name.to_ascii_lowercase();
    WORDS.iter().any(|w| n.contains(w)) || description.to_ascii_lowercase().contains("multi-line")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_type_gets_its_control() {
        let schema = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 1, "maxLength": 80},
                "days": {"type": "integer", "minimum": 1, "maximum": 14, "default": 7},
                "ratio": {"type": "number"},
                "metric": {"type": "boolean", "default": true},
                "units": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
                "when": {"type": "string", "format": "date"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "opts": {"type": "object", "properties": {"a": {"type": "string"}}},
                "either": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
                "content": {"type": "string"}
            },
            "required": ["city"]
        });
        let fs = fields(&schema);
        let by = |n: &str| fs.iter().find(|f| f.name == n).unwrap().clone();
        assert_eq!((by("city").control, by("city").required, by("city").maxlength), ("text", true, Some(80)));
        let days = by("days");
        assert_eq!(
            (days.input_type, days.data_type, days.min.as_deref(), days.max.as_deref(), days.default_value.as_str()),
            ("number", "integer", Some("1"), Some("14"), "7")
        );
        assert_eq!(by("ratio").data_type, "number");
        assert!(by("metric").checked);
        let units = by("units");
        assert_eq!(units.control, "select");
        assert_eq!(units.options[0].value, "\"celsius\"");
        assert!(units.options[0].selected);
        assert_eq!(by("when").input_type, "date");
        assert_eq!(by("tags").data_type, "json");
        assert_eq!(by("opts").data_type, "json");
        assert_eq!(by("either").data_type, "integer");
        assert_eq!(by("content").control, "textarea");
    }

    #[test]
    fn deep_schemas_become_json() {
        let mut s = json!({"type": "string"});
        for _ in 0..6 {
            s = json!({"type": "object", "properties": {"x": s}});
        }
        let fs = fields(&json!({"type": "object", "properties": {"deep": s}}));
        assert_eq!(fs[0].data_type, "json");
    }

    #[test]
    fn nullable_type_arrays_use_the_other_type() {
        let fs = fields(&json!({"properties": {"n": {"type": ["integer", "null"]}}}));
        assert_eq!(fs[0].data_type, "integer");
    }

    #[test]
    fn labels_are_humanized() {
        assert_eq!(humanize("max_results"), "Max results");
        assert_eq!(humanize("pageSize"), "Page size");
    }
}
