//! Renders the pages served for `ui://` resources: the template UI (Handlebars, with the View
//! runtime inlined) and the emergency page. Templates are compiled into the binary so that a
//! deployed service cannot lose them.

use handlebars::Handlebars;
use serde_json::{json, Value};

use crate::template_form;

pub const TEMPLATE_VERSION: &str = "1";
pub const RUNTIME_JS: &str = include_str!("../../templates/runtime.js");
const MINIMAL: &str = include_str!("../../templates/minimal.hbs");
const EMERGENCY: &str = include_str!("../../templates/emergency.html");

pub struct UiPages {
    hb: Handlebars<'static>,
}

/// JSON safe inside a `<script>` element: `</script>` and `<!--` cannot appear.
pub fn script_safe_json(v: &Value) -> String {
    serde_json::to_string(v).expect("a Value serializes").replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026")
}

impl UiPages {
    pub fn new() -> Self {
        let mut hb = Handlebars::new();
        hb.set_strict_mode(false);
        hb.register_template_string("minimal", MINIMAL).expect("templates/minimal.hbs is valid Handlebars");
        UiPages { hb }
    }

    /// The template UI, or why it could not be rendered.
    pub fn try_template_page(&self, tool: &Value) -> Result<String, String> {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("tool");
        let title = tool
            .get("title")
            .and_then(Value::as_str)
            .or_else(|| tool.pointer("/annotations/title").and_then(Value::as_str))
            .map(str::to_string)
            .unwrap_or_else(|| template_form::humanize(name));
        let schema = tool.get("inputSchema").cloned().unwrap_or(json!({}));
        let meta = json!({"name": name, "templateVersion": TEMPLATE_VERSION, "inputSchema": schema});
        let data = json!({
            "tool_name": name,
            "title": title,
            "description": tool.get("description").and_then(Value::as_str).unwrap_or(""),
            "fields": template_form::fields(&schema),
            "runtime": RUNTIME_JS,
            "tool_meta_json": script_safe_json(&meta),
            "template_version": TEMPLATE_VERSION,
        });
        self.hb.render("minimal", &data).map_err(|e| e.to_string())
    }

    /// The last resort: a static page that still connects and can call the tool with JSON.
    pub fn emergency_page(&self, tool_name: &str) -> String {
        EMERGENCY.replace("__TOOL_NAME_JSON__", &script_safe_json(&json!(tool_name))).replace("__RUNTIME__", RUNTIME_JS)
    }
}

impl Default for UiPages {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo_tool() -> Value {
        json!({"name": "get_forecast", "description": "Forecast <b>days</b>", "inputSchema": {"type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14, "default": 7},
            "units": {"type": "string", "enum": ["metric", "imperial"]}}, "required": ["city"]}})
    }

    #[test]
    fn template_has_a_control_per_property_and_the_runtime() {
        let html = UiPages::new().try_template_page(&demo_tool()).unwrap();
        for id in ["f-city", "f-days", "f-units"] {
            assert!(html.contains(&format!("id=\"{id}\"")), "missing control {id}");
        }
        assert!(html.contains("McpGenUiRuntime"));
        assert!(!html.contains("@modelcontextprotocol/ext-apps"));
        assert!(html.contains("Forecast &lt;b&gt;days&lt;/b&gt;"), "descriptions are escaped");
    }

    #[test]
    fn hostile_names_cannot_break_out_of_the_meta_script() {
        let tool = json!({"name": "x</script><script>alert(1)</script>", "inputSchema": {}});
        let html = UiPages::new().try_template_page(&tool).unwrap();
        assert!(!html.contains("</script><script>alert(1)"));
    }

    #[test]
    fn emergency_page_names_the_tool() {
        let html = UiPages::new().emergency_page("t");
        assert!(html.contains("\"t\"") && html.contains("McpGenUiRuntime"));
    }
}
